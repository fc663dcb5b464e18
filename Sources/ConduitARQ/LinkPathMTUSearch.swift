public import ConduitCore

/// Datagram Packetization Layer Path MTU Discovery (DPLPMTUD, RFC 8899) for the reliable link:
/// which packet size the link may use (the PLPMTU), and when to send a padded probe of which size.
///
/// Sans-IO, like the engine that owns it: `now` is passed in, the engine sends the probes it asks
/// for (a PING padded to the size, ack-eliciting, never retransmitted) and reports what became of
/// them and of the link's other packets. The states are RFC 8899 section 5.2's:
/// - **Base**: the link sends at `BASE_PLPMTU` and confirms it with a probe of that size.
/// - **Search**: probes of growing size; an acknowledged probe raises the PLPMTU to its size at
///   once, `MAX_PROBES` lost probes of one size lower the ceiling below it (section 5.3; here a
///   binary search that tries the configured maximum first).
/// - **Search Complete**: the PLPMTU holds until `PMTU_RAISE_TIMER` (section 5.1.1), then the
///   search resumes above it.
/// - **Error**: even base-size probes were lost `MAX_PROBES` times; the link keeps the base size
///   (it has nothing smaller) and confirms again after the raise timer.
///
/// A lost probe is not congestion (section 3, "Probing and congestion control"): the engine
/// keeps probes out of its loss detection and congestion controller. Black hole detection
/// (section 4.3): a run of packets larger than the base size declared lost with none acknowledged
/// is confirmed with probes of the PLPMTU (a burst lost to congestion is not a black hole); if
/// `MAX_PROBES` of them are lost too, or the engine's loss recovery times out repeatedly with
/// nothing acknowledged, the PLPMTU falls back to the base size and the search starts again from
/// Base (section 5.2, "Search Complete" to "Base").
public struct LinkPathMTUSearch: Sendable, Hashable {
    /// RFC 8899 section 5.2's states.
    public enum State: Sendable, Hashable {
        /// Confirming the base size.
        case base
        /// Probing for a larger size.
        case search
        /// Done until the raise timer fires or a black hole is detected.
        case searchComplete
        /// Base-size probes were lost: the base size stays, confirmed again later.
        case error
    }

    /// The search's constants (RFC 8899 section 5.1).
    public struct Settings: Sendable, Hashable {
        /// `BASE_PLPMTU`: the link packet size every path is assumed to carry, and where the
        /// search starts. 1,220 bytes: a 1,232-byte UDP payload (IPv6's 1,280-byte minimum MTU
        /// less its IP and UDP headers) less the 12-byte RTP header.
        public var basePacketSize = 1_220
        /// `MAX_PROBES`: probes of one size lost in a row before the size is given up (section 5.1.2).
        public var maxProbes = 3
        /// `PMTU_RAISE_TIMER`: how long a completed search holds before probing above again (section 5.1.1).
        public var raiseInterval = Duration.seconds(600)
        /// The search ends once the largest size that worked is within this many bytes of the
        /// smallest that failed (or of the maximum).
        public var resolution = 8
        /// Packets above the base size declared lost in a row, with none acknowledged in
        /// between, that make the search confirm the PLPMTU with probes of its size.
        public var blackHoleLossThreshold = 6
        /// Probe timeouts of the engine's loss recovery in a row that mean a black hole while
        /// the PLPMTU is above the base size (a path that drops every full-size packet leaves
        /// nothing to acknowledge, so nothing is ever declared lost).
        public var blackHoleProbeTimeouts = 2

        /// The defaults above.
        public init() {}

        /// Traps on settings the search cannot honour (a programming error).
        func check() {
            precondition(basePacketSize >= 64, "basePacketSize must be at least 64")
            precondition(maxProbes >= 1 && resolution >= 1 && blackHoleLossThreshold >= 1 && blackHoleProbeTimeouts >= 1,
                         "maxProbes, resolution and the black hole thresholds must be positive")
            precondition(raiseInterval > .zero, "raiseInterval must be positive")
        }
    }

    /// What the search counted since it was made.
    public struct Counters: Sendable, Hashable {
        /// Probe packets sent.
        public var probesSent = 0
        /// Probes acknowledged by the peer.
        public var probesAcknowledged = 0
        /// Probes whose timer ran out unacknowledged.
        public var probesLost = 0
        /// Black holes detected (the PLPMTU fell back to the base size).
        public var blackHoles = 0
    }

    struct Probe: Sendable, Hashable {
        let number: UInt64
        let size: Int
        let deadline: ConduitInstant
    }

    /// The constants.
    public let settings: Settings
    /// `MAX_PLPMTU`: the largest packet the link may send.
    public let maxPacketSize: Int
    /// The state (RFC 8899 section 5.2).
    public private(set) var state = State.base
    /// The PLPMTU: the largest packet the link sends now.
    public private(set) var packetSize: Int
    /// What happened so far.
    public private(set) var counters = Counters()
    /// The smallest size known to fail, less one: where the search stops looking.
    private var ceiling: Int
    /// The probe in flight, if any.
    private(set) var probe: Probe?
    /// Probes of the current candidate lost in a row.
    private var lostAtSize = 0
    /// Whether the maximum was tried in this search (it is tried first).
    private var triedMaximum = false
    /// When the raise timer (Search Complete) or the retry (Error) fires.
    private var raiseAt: ConduitInstant?
    private var largeLossesInARow = 0
    private var confirmationsLost = 0
    /// A black hole is suspected: probes of the PLPMTU confirm it or clear it.
    private(set) var isConfirming = false

    /// A search between `settings.basePacketSize` (lowered to `maxPacketSize` if above it) and
    /// `maxPacketSize`. With nothing between them it is complete from the start.
    public init(settings: Settings = .init(), maxPacketSize: Int) {
        settings.check()
        self.settings = settings
        self.maxPacketSize = maxPacketSize
        packetSize = min(settings.basePacketSize, maxPacketSize)
        ceiling = maxPacketSize
        if packetSize >= maxPacketSize { state = .searchComplete }
    }

    /// The base size in force: `BASE_PLPMTU`, or the maximum when that is smaller.
    public var basePacketSize: Int { min(settings.basePacketSize, maxPacketSize) }

    /// The size of the probe to send now, if one is due: none while one is in flight.
    public var probeSizeDue: Int? {
        guard probe == nil else { return nil }
        if isConfirming { return packetSize }
        switch state {
        case .base: return basePacketSize
        case .search: return candidate
        case .searchComplete, .error: return nil
        }
    }

    /// The next size the search tries: the maximum first (the common path carries it), then
    /// halfway between what worked and what failed.
    private var candidate: Int {
        triedMaximum ? (packetSize + ceiling + 1) / 2 : ceiling
    }

    /// The engine sent probe `number` of `size` bytes; it is lost unless acknowledged within
    /// `timeout` nanoseconds (the `PROBE_TIMER`, the engine's probe timeout).
    public mutating func probeSent(number: UInt64, size: Int, timeout: Int64, now: ConduitInstant) {
        probe = Probe(number: number, size: size, deadline: LinkTime.add(now, timeout))
        counters.probesSent += 1
    }

    /// When ``handleTimeout(now:)`` has something to do: a probe's timer or the raise timer.
    public var nextDeadline: ConduitInstant? { LinkTime.earliest(probe?.deadline, raiseAt) }

    /// Lets time pass: a probe unacknowledged by its deadline is lost; the raise timer restarts
    /// the search.
    public mutating func handleTimeout(now: ConduitInstant) {
        if let probe, probe.deadline <= now {
            self.probe = nil
            counters.probesLost += 1
            probeLost(size: probe.size, now: now)
        }
        if let raiseAt, raiseAt <= now {
            self.raiseAt = nil
            switch state {
            case .searchComplete where packetSize < maxPacketSize:
                startSearch()
            case .error:
                state = .base
                lostAtSize = 0
            default:
                break
            }
        }
    }

    private mutating func probeLost(size: Int, now: ConduitInstant) {
        if isConfirming, size == packetSize {
            confirmationsLost += 1
            if confirmationsLost >= settings.maxProbes { fallBack() }
            return
        }
        lostAtSize += 1
        guard lostAtSize >= settings.maxProbes else { return }
        lostAtSize = 0
        switch state {
        case .base:
            state = .error
            raiseAt = LinkTime.add(now, LinkTime.nanoseconds(settings.raiseInterval))
        case .search:
            ceiling = size - 1
            if size >= maxPacketSize { triedMaximum = true }
            finishIfNarrow(now: now)
        case .searchComplete, .error:
            break
        }
    }

    /// The peer acknowledged `range` of packet numbers: a probe among them confirmed its size.
    public mutating func acknowledged(_ range: ClosedRange<UInt64>, now: ConduitInstant) {
        guard let probe, range.contains(probe.number) else { return }
        self.probe = nil
        counters.probesAcknowledged += 1
        largeLossesInARow = 0
        if isConfirming, probe.size == packetSize {
            // The PLPMTU still gets through: the losses were something else.
            isConfirming = false
            confirmationsLost = 0
            return
        }
        lostAtSize = 0
        switch state {
        case .base:
            startSearch()
        case .search:
            packetSize = max(packetSize, probe.size)
            finishIfNarrow(now: now)
        case .searchComplete, .error:
            break
        }
    }

    private mutating func startSearch() {
        ceiling = maxPacketSize
        triedMaximum = false
        lostAtSize = 0
        state = .search
        if packetSize >= ceiling { state = .searchComplete }
    }

    private mutating func finishIfNarrow(now: ConduitInstant) {
        guard ceiling - packetSize < settings.resolution || packetSize >= ceiling else { return }
        state = .searchComplete
        raiseAt = packetSize < maxPacketSize ? LinkTime.add(now, LinkTime.nanoseconds(settings.raiseInterval)) : nil
    }

    // MARK: Black hole detection (RFC 8899 section 4.3)

    /// A packet of the link's (not a probe) of `size` bytes was acknowledged.
    public mutating func dataPacketAcknowledged(size: Int) {
        if size > basePacketSize { largeLossesInARow = 0 }
    }

    /// A packet of the link's (not a probe) of `size` bytes was declared lost. Only sizes above
    /// the base and within the PLPMTU in force count: a larger one was sent under an earlier,
    /// larger PLPMTU and says nothing about this one.
    public mutating func dataPacketLost(size: Int) {
        guard size > basePacketSize, size <= packetSize else { return }
        largeLossesInARow += 1
        if largeLossesInARow >= settings.blackHoleLossThreshold, !isConfirming {
            isConfirming = true
            confirmationsLost = 0
        }
    }

    /// The engine's loss recovery fired its `count`-th probe timeout in a row.
    public mutating func probeTimeoutFired(count: Int) {
        if count >= settings.blackHoleProbeTimeouts, packetSize > basePacketSize { fallBack() }
    }

    /// Back to the base size, and the search starts again from Base (section 5.2).
    private mutating func fallBack() {
        counters.blackHoles += 1
        packetSize = basePacketSize
        state = .base
        probe = nil
        raiseAt = nil
        lostAtSize = 0
        largeLossesInARow = 0
        isConfirming = false
        confirmationsLost = 0
    }
}

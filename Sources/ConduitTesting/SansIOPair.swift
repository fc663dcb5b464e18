public import ConduitCore
public import ConduitImpairment

/// Two sans-IO machines connected back to back by a seeded, impaired path in each direction, on
/// virtual time: what a test needs to run a protocol between two endpoints deterministically.
///
/// Each side is any `SansIOMachine` (two `CallMachine`s for a call, or your own machine). What a
/// side transmits crosses an `ImpairmentModel` (loss, duplication, reordering, corruption, delay,
/// jitter, rate and partition, from an `ImpairmentConfiguration` and its seed) and reaches the
/// other side when the model says. Nothing reads a clock: ``now`` moves only when the pair is
/// stepped, from one event (a delivery, a machine's transmit or timeout deadline) to the next, so
/// the same seeds and the same calls give the same run, datagram for datagram.
///
/// ```swift
/// var aToB = ImpairmentConfiguration()
/// (aToB.loss, aToB.delay, aToB.seed) = (0.1, .milliseconds(20), 7)
/// var pair = SansIOPair(a: CallMachine(localPeer: "alice"), b: CallMachine(localPeer: "bob"),
///                       aToB: aToB, bToA: aToB)
/// pair.run(until: { $0.a.isConnected && $0.b.isConnected }, limit: .seconds(5))
/// ```
///
/// Every datagram is accounted for in ``Path/Statistics``: submitted = delivered + dropped by loss
/// + dropped by partition + still in flight (a duplicate counts as one more delivery). Events are
/// drained from the machines after every step into ``eventsA`` and ``eventsB``.
///
/// The relay (`RelayMachine`) serves many connections and is driven per connection ID, so it does
/// not fit the two-endpoint shape: a conference against a relay is tested with a harness that
/// hosts the relay's connections (as `RoomHarness` does in Conduit's own tests), or end to end
/// with a `ConduitRuntime` on a ``VirtualClock``.
public struct SansIOPair<A: SansIOMachine, B: SansIOMachine> {
    /// One of the two endpoints.
    public enum Side: Sendable, Hashable {
        /// The endpoint ``SansIOPair/a``.
        case a
        /// The endpoint ``SansIOPair/b``.
        case b
    }

    /// One direction of the path: its impairment and what it did.
    public struct Path: Sendable {
        /// What crossed (or failed to cross) one direction.
        public struct Statistics: Sendable, Hashable {
            /// Datagrams the sending machine transmitted.
            public var submitted = 0
            /// Deliveries made to the receiving machine (a duplicated datagram is delivered twice).
            public var delivered = 0
            /// Datagrams lost to the `loss` probability.
            public var droppedByLoss = 0
            /// Datagrams lost while the path was partitioned.
            public var droppedByPartition = 0
            /// Datagrams lost for being larger than the path's `maxDatagramSize`.
            public var droppedOverSize = 0
            /// Datagrams lost because the bottleneck's buffer was full (`queueLimit`).
            public var droppedAtBottleneck = 0
            /// Extra copies the path made.
            public var duplicated = 0
            /// Datagrams held back so later ones overtook them.
            public var reordered = 0
            /// Datagrams delivered with a bit flipped.
            public var corrupted = 0
            /// Bytes the sending machine transmitted.
            public var submittedBytes = 0
            /// Every datagram lost on the way, whatever the cause.
            public var dropped: Int { droppedByLoss + droppedByPartition + droppedOverSize + droppedAtBottleneck }
            /// All counters at zero.
            public init() {}
        }

        /// The seeded model that decides each datagram's fate.
        public var model: ImpairmentModel
        /// What this direction carried and dropped.
        public internal(set) var statistics = Statistics()

        init(_ configuration: ImpairmentConfiguration) { model = ImpairmentModel(configuration: configuration) }
    }

    private struct InFlight {
        var at: ConduitInstant
        var order: UInt64
        var toB: Bool
        var bytes: [UInt8]
    }

    /// The first endpoint.
    public var a: A
    /// The second endpoint.
    public var b: B
    /// The path from ``a`` to ``b``.
    public var aToB: Path
    /// The path from ``b`` to ``a``.
    public var bToA: Path
    /// Virtual time: moves only when the pair is stepped.
    public private(set) var now: ConduitInstant
    /// Events ``a`` reported, in order, not yet taken.
    public var eventsA: [A.Event] = []
    /// Events ``b`` reported, in order, not yet taken.
    public var eventsB: [B.Event] = []
    /// The most bytes one `pollTransmit` is asked for.
    public var transmitBytes = 64 * 1_024
    /// Steps taken so far (each one instant's deliveries, timeouts and transmits).
    public private(set) var steps = 0

    /// Datagrams on their way, ordered by arrival, then by when they were sent.
    private var inFlight: [InFlight] = []
    private var nextOrder: UInt64 = 0
    private var batch = DatagramBatch()

    /// Two endpoints at `start`, with a path each way (transparent by default).
    public init(a: A, b: B, aToB: ImpairmentConfiguration = .init(), bToA: ImpairmentConfiguration = .init(), start: ConduitInstant = .zero) {
        self.a = a
        self.b = b
        self.aToB = Path(aToB)
        self.bToA = Path(bToA)
        self.now = start
    }

    /// Whether both directions drop everything (a network blackout).
    public var isPartitioned: Bool {
        get { aToB.model.isPartitioned && bToA.model.isPartitioned }
        set {
            aToB.model.isPartitioned = newValue
            bToA.model.isPartitioned = newValue
        }
    }

    /// Datagrams sent but not yet delivered, both ways.
    public var inFlightCount: Int { inFlight.count }

    /// The events of ``a`` reported so far, taken (the list is emptied).
    public mutating func takeEventsA() -> [A.Event] {
        defer { eventsA.removeAll() }
        return eventsA
    }

    /// The events of ``b`` reported so far, taken (the list is emptied).
    public mutating func takeEventsB() -> [B.Event] {
        defer { eventsB.removeAll() }
        return eventsB
    }

    /// When anything next happens (a delivery, a transmit or a timeout deadline of either side),
    /// or nil when the pair is idle for good.
    public mutating func nextEventTime() -> ConduitInstant? {
        let (transmitA, timeoutA) = a.deadlines(now: now)
        let (transmitB, timeoutB) = b.deadlines(now: now)
        return [inFlight.first?.at, transmitA, timeoutA, transmitB, timeoutB].compactMap { $0 }.min()
    }

    /// Runs everything due at ``now``: deliveries, timeouts, then each side's transmits, until
    /// nothing more is due at this instant. Call it after changing a machine from outside (a send,
    /// a hang-up) so what that queued goes out.
    public mutating func flush() {
        var rounds = 0
        while true {
            rounds += 1
            // A machine that never stops sending at one instant is a bug: stop instead of looping.
            precondition(rounds <= 100_000, "the machines kept sending at \(now) without end")
            deliverDue()
            let (_, timeoutA) = a.deadlines(now: now)
            if let timeoutA, timeoutA <= now { a.handleTimeout(now: now) }
            let (_, timeoutB) = b.deadlines(now: now)
            if let timeoutB, timeoutB <= now { b.handleTimeout(now: now) }
            let sent = transmit(from: .a) + transmit(from: .b)
            collectEvents()
            if sent == 0 && inFlight.first.map({ $0.at > now }) ?? true { break }
        }
    }

    /// Moves to the next event (if any, and not past `limit`) and runs what is due then. Returns
    /// false when nothing was left to do before `limit`.
    @discardableResult
    public mutating func step(limit: ConduitInstant? = nil) -> Bool {
        flush()
        guard let next = nextEventTime(), limit.map({ next <= $0 }) ?? true else { return false }
        now = max(now, next)
        steps += 1
        flush()
        return true
    }

    /// Runs every event up to `instant`, then leaves ``now`` at `instant`.
    public mutating func advance(to instant: ConduitInstant) {
        while step(limit: instant) {}
        now = max(now, instant)
        flush()
    }

    /// Runs every event in the next `duration` of virtual time.
    public mutating func advance(by duration: Duration) {
        advance(to: now + duration)
    }

    /// Steps until `condition` holds (checked before the first step and after each) or `limit`
    /// of virtual time has passed; returns whether it held.
    @discardableResult
    public mutating func run(until condition: (inout SansIOPair) -> Bool, limit: Duration) -> Bool {
        let end = now + limit
        flush()
        while true {
            if condition(&self) { return true }
            guard step(limit: end) else {
                now = max(now, end)
                flush()
                return condition(&self)
            }
        }
    }

    /// Steps until nothing is in flight and neither side has a deadline, or `limit` of virtual
    /// time has passed; returns whether the pair went idle. (A machine with a periodic timer, a
    /// keepalive, never goes idle: use ``run(until:limit:)`` or ``advance(by:)`` for it.)
    @discardableResult
    public mutating func runUntilIdle(limit: Duration) -> Bool {
        run(until: { $0.nextEventTime() == nil }, limit: limit)
    }

    // MARK: Moving datagrams

    /// Polls one side's transmit once and puts what it sent on the path; returns how many datagrams.
    private mutating func transmit(from side: Side) -> Int {
        batch.removeAll()
        let count = side == .a
            ? a.pollTransmit(now: now, into: &batch, maxBytes: transmitBytes)
            : b.pollTransmit(now: now, into: &batch, maxBytes: transmitBytes)
        guard count > 0 else { return 0 }
        for index in 0..<batch.count { submit(batch[index], toB: side == .a) }
        return count
    }

    private mutating func submit(_ datagram: [UInt8], toB: Bool) {
        var path = toB ? aToB : bToA
        let before = path.model.statistics
        let decision = path.model.submit(size: datagram.count, now: now)
        let after = path.model.statistics
        path.statistics.submitted += 1
        path.statistics.submittedBytes += datagram.count
        path.statistics.droppedByPartition += after.droppedByPartition - before.droppedByPartition
        path.statistics.droppedOverSize += after.droppedOverSize - before.droppedOverSize
        path.statistics.droppedAtBottleneck += after.droppedAtBottleneck - before.droppedAtBottleneck
        path.statistics.droppedByLoss += (after.dropped - before.dropped) - (after.droppedByPartition - before.droppedByPartition)
            - (after.droppedOverSize - before.droppedOverSize) - (after.droppedAtBottleneck - before.droppedAtBottleneck)
        path.statistics.duplicated += after.duplicated - before.duplicated
        path.statistics.reordered += after.reordered - before.reordered
        path.statistics.corrupted += after.corrupted - before.corrupted
        if toB { aToB = path } else { bToA = path }
        for delivery in decision.deliveries {
            var bytes = datagram
            delivery.apply(to: &bytes)
            nextOrder += 1
            insert(InFlight(at: delivery.at, order: nextOrder, toB: toB, bytes: bytes))
        }
    }

    /// Keeps ``inFlight`` sorted by (arrival, order): a binary search for the place.
    private mutating func insert(_ entry: InFlight) {
        var low = 0, high = inFlight.count
        while low < high {
            let middle = (low + high) / 2
            let other = inFlight[middle]
            if (other.at, other.order) < (entry.at, entry.order) { low = middle + 1 } else { high = middle }
        }
        inFlight.insert(entry, at: low)
    }

    /// Hands each side, in one batch, what reaches it by ``now``.
    private mutating func deliverDue() {
        var toA = DatagramBatch(), toB = DatagramBatch()
        var due = 0
        while due < inFlight.count, inFlight[due].at <= now {
            let entry = inFlight[due]
            if entry.toB {
                toB.append(entry.bytes)
                aToB.statistics.delivered += 1
            } else {
                toA.append(entry.bytes)
                bToA.statistics.delivered += 1
            }
            due += 1
        }
        guard due > 0 else { return }
        inFlight.removeFirst(due)
        if !toB.isEmpty { b.handle(batch: toB, now: now) }
        if !toA.isEmpty { a.handle(batch: toA, now: now) }
    }

    private mutating func collectEvents() {
        while let event = a.pollEvent() { eventsA.append(event) }
        while let event = b.pollEvent() { eventsB.append(event) }
    }
}

public import ConduitCore

/// NewReno congestion control as RFC 9002 section 7 and appendix B specify it for QUIC: slow start,
/// congestion avoidance, one window reduction per recovery period, persistent congestion. Windows
/// and bytes in flight count whole packets on the wire (header, frames and checksum).
public struct NewRenoCongestionControl: Sendable, Hashable {
    /// `max_datagram_size`: the packet size in use (path MTU discovery changes it).
    public private(set) var maxDatagramSize: Int
    /// `congestion_window`, in bytes.
    public private(set) var window: Int
    /// `ssthresh`: infinite (`Int.max`) until the first congestion event (section 7.3.1).
    public private(set) var slowStartThreshold = Int.max
    /// Ack-eliciting packets sent and neither acknowledged nor declared lost (section 7, "bytes in flight").
    public private(set) var bytesInFlight = 0
    /// Start of the current recovery period (section 7.3.2), if any.
    public private(set) var recoveryStartTime: ConduitInstant?
    /// Congestion events: losses that started a recovery period and shrank the window.
    public private(set) var congestionEvents = 0
    /// Persistent congestion events: the window fell to its minimum (section 7.6).
    public private(set) var persistentCongestionEvents = 0
    /// Congestion events reversed because every loss that caused them proved spurious.
    public private(set) var congestionEventsUndone = 0
    /// Bytes acknowledged since the window last grew in congestion avoidance (appendix B.5 counts
    /// acknowledged bytes, so no fraction of a packet is lost to integer division).
    private var avoidanceCredit = 0
    /// The state before the latest reduction, while it may still be undone.
    private var beforeReduction: Reduction?
    /// Losses of the latest congestion event not yet shown to be spurious.
    private var unrefutedLosses = 0

    /// What a congestion event changed, kept so that it can be undone.
    private struct Reduction: Sendable, Hashable {
        let window: Int
        let slowStartThreshold: Int
        let recoveryStartTime: ConduitInstant?
    }

    /// Makes a controller in slow start with the initial window for `maxDatagramSize`.
    public init(maxDatagramSize: Int) {
        precondition(maxDatagramSize > 0)
        self.maxDatagramSize = maxDatagramSize
        window = Self.initialWindow(maxDatagramSize: maxDatagramSize)
    }

    /// min(10 * max_datagram_size, max(14720, 2 * max_datagram_size)) (section 7.2).
    public static func initialWindow(maxDatagramSize: Int) -> Int {
        min(10 * maxDatagramSize, max(14_720, 2 * maxDatagramSize))
    }

    /// kMinimumWindow = 2 * max_datagram_size (section 7.2).
    public var minimumWindow: Int { 2 * maxDatagramSize }

    /// Section 7.2: the packet size changed (path MTU discovery). The window counts in the new
    /// size: never below its minimum, nor below its initial window before the first congestion
    /// event (a window smaller than one packet would never let one go).
    public mutating func maxDatagramSizeChanged(to size: Int) {
        precondition(size > 0)
        maxDatagramSize = size
        if congestionEvents == 0 { window = max(window, Self.initialWindow(maxDatagramSize: size)) }
        window = max(window, minimumWindow)
    }

    /// Whether the window is below the slow-start threshold (it doubles per round trip there).
    public var isInSlowStart: Bool { window < slowStartThreshold }

    /// Section 7: a sender must not send a packet that would take bytes in flight over the window.
    public func allows(bytes: Int) -> Bool { bytesInFlight + bytes <= window }

    /// Counts a packet's `bytes` as in flight.
    public mutating func onPacketSent(bytes: Int) { bytesInFlight += bytes }

    /// A packet that was lost, or whose frames were abandoned, leaves the flight.
    public mutating func onPacketRemovedFromFlight(bytes: Int) { bytesInFlight = max(0, bytesInFlight - bytes) }

    /// Whether a packet sent at `sentAt` belongs to the current recovery period (its loss does not shrink the window again).
    public func isInRecovery(sentAt: ConduitInstant) -> Bool {
        guard let recoveryStartTime else { return false }
        return sentAt <= recoveryStartTime
    }

    /// Appendix B.5, OnPacketsAcked.
    public mutating func onPacketAcked(bytes: Int, sentAt: ConduitInstant, isAppLimited: Bool) {
        bytesInFlight = max(0, bytesInFlight - bytes)
        // Section 7.8: do not grow a window the sender is not using.
        if isAppLimited { return }
        // Section 7.3.2: packets sent before recovery started do not grow the window.
        if isInRecovery(sentAt: sentAt) { return }
        if isInSlowStart {
            // Section 7.3.1: slow start grows the window by the bytes acknowledged.
            window += bytes
        } else {
            // Section 7.3.3: congestion avoidance adds one max_datagram_size per window acknowledged.
            avoidanceCredit += bytes
            if avoidanceCredit >= window {
                avoidanceCredit -= window
                window += maxDatagramSize
            }
        }
    }

    /// Appendix B.6, OnCongestionEvent: a loss of a packet sent after the current recovery period
    /// started halves the window (kLossReductionFactor = 0.5) and starts a new period. Returns
    /// whether it did; `lostPackets` (the losses of this call) count towards the period's undo.
    @discardableResult
    public mutating func onCongestionEvent(sentAt: ConduitInstant, now: ConduitInstant, lostPackets: Int = 1) -> Bool {
        if isInRecovery(sentAt: sentAt) {
            unrefutedLosses += lostPackets
            return false
        }
        beforeReduction = Reduction(window: window, slowStartThreshold: slowStartThreshold, recoveryStartTime: recoveryStartTime)
        unrefutedLosses = lostPackets
        recoveryStartTime = now
        slowStartThreshold = max(window / 2, minimumWindow)
        window = slowStartThreshold
        avoidanceCredit = 0
        congestionEvents += 1
        return true
    }

    /// A packet declared lost in congestion event number `event` (the value of
    /// ``congestionEvents`` after its loss) was acknowledged after all. Once every loss of the
    /// latest event has proved spurious, the reduction is undone: window, threshold and recovery
    /// period as they were before it (Eifel-style undo, RFC 4015; RFC 8985 section 9.3 leaves the
    /// response to spurious losses to the congestion controller). Returns whether it was undone.
    @discardableResult
    public mutating func onSpuriousLoss(event: Int) -> Bool {
        guard event == congestionEvents, let before = beforeReduction else { return false }
        unrefutedLosses -= 1
        guard unrefutedLosses <= 0 else { return false }
        window = max(window, before.window)
        slowStartThreshold = before.slowStartThreshold
        recoveryStartTime = before.recoveryStartTime
        beforeReduction = nil
        congestionEventsUndone += 1
        return true
    }

    /// Section 7.6.2: persistent congestion collapses the window to the minimum (never undone).
    public mutating func onPersistentCongestion() {
        window = minimumWindow
        recoveryStartTime = nil
        avoidanceCredit = 0
        beforeReduction = nil
        persistentCongestionEvents += 1
    }
}

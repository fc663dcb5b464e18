import DequeModule
import ConduitCore

/// A packet declared lost, remembered for a while: if the peer acknowledges it after all, the loss
/// was reordering and its frames' retransmission was spurious. TCP learns this from a DSACK (RFC
/// 8985 section 6.2 step 4); our packet numbers are never reused, so the acknowledgement of the
/// original packet number says it directly.
struct LinkLostPacket: Sendable {
    let number: UInt64
    let declaredAt: ConduitInstant
    /// The congestion controller's event count when the loss was declared: the reduction an
    /// undo would reverse.
    let congestionEpisode: Int
    /// What it carried, so that frames not yet sent again can be resolved when it turns up.
    var items: LinkSentItems
}

/// RACK (RFC 8985 section 6): time-based loss detection with an adaptive reordering window.
///
/// A packet is lost once a packet sent after it has been delivered and more than `RACK.rtt +
/// RACK.reo_wnd` has passed since it was sent (section 6.2 step 5). Packets are numbered in
/// sending order and never reused, so "sent after" is "has a larger packet number", and a
/// retransmission is never confused with its original.
///
/// The reordering window starts at a quarter of the minimum RTT, grows by that much per round
/// trip in which a spurious loss is found, is bounded by the smoothed RTT, and falls back to
/// one quarter after 16 loss recoveries without one (section 6.2 step 4).
struct LinkRACK: Sendable {
    /// `RACK.reo_wnd_persist`'s starting value: recoveries before the window falls back.
    static let windowPersistence = 16
    /// Largest `RACK.reo_wnd_mult`: the window is bounded by the smoothed RTT long before this.
    static let maxWindowMultiplier = 64
    /// Packets declared lost that are remembered for spurious-loss detection.
    static let maxRecentlyLost = 1_024

    /// `RACK.end_seq`: the most recently sent packet known to be delivered.
    private(set) var newestDelivered: UInt64?
    /// `RACK.rtt`: the RTT of that packet, ack delay included (section 6.2 step 2).
    private(set) var rttNanoseconds: Int64 = 0
    /// `RACK.reordering_seen`: a packet was acknowledged after one sent later.
    private(set) var reorderingSeen = false
    /// `RACK.reo_wnd_mult`.
    private(set) var windowMultiplier = 1
    /// `RACK.reo_wnd_persist`.
    private(set) var windowPersistenceLeft = 0
    /// `RACK.dsack_round`: the first packet number sent after the window last grew; it grows at
    /// most once per round trip.
    private var spuriousRound: UInt64?
    /// The first packet number sent after the current loss recovery started, while it lasts
    /// (acknowledging it ends the recovery, as RFC 9002 section 7.3.2 ends a recovery period).
    private var recoveryEnd: UInt64?
    /// Packets declared lost, in packet-number order.
    private(set) var recentlyLost = Deque<LinkLostPacket>()

    /// Whether a loss recovery is under way.
    var isInRecovery: Bool { recoveryEnd != nil }

    /// Section 6.2 steps 2 and 3, for one newly acknowledged packet: remembers the most recently
    /// sent packet delivered and its RTT, and notes reordering when the packet was sent before one
    /// acknowledged earlier (`previousLargestAcknowledged`).
    mutating func onDelivered(number: UInt64, timeSent: ConduitInstant, now: ConduitInstant, previousLargestAcknowledged: UInt64?) {
        if let previousLargestAcknowledged, number < previousLargestAcknowledged { reorderingSeen = true }
        guard newestDelivered.map({ number > $0 }) ?? true else { return }
        newestDelivered = number
        rttNanoseconds = max(LinkTime.elapsed(from: timeSent, to: now), 1)
    }

    /// `RACK.reo_wnd` (section 6.2 step 4): zero while no reordering was ever seen and either a
    /// recovery is under way or `packetThreshold` packets were acknowledged above the oldest
    /// outstanding one (TCP's DupThresh, so a path that never reorders recovers as fast as
    /// packet-count detection would); else min_RTT / 4 times the multiplier, at most the smoothed RTT.
    func reorderingWindow(minRttNanoseconds: Int64?, smoothedRttNanoseconds: Int64, acknowledgedAbove: Int, packetThreshold: Int) -> Int64 {
        if !reorderingSeen, isInRecovery || acknowledgedAbove >= packetThreshold { return 0 }
        let base = minRttNanoseconds ?? smoothedRttNanoseconds
        return min(base / 4 * Int64(windowMultiplier), smoothedRttNanoseconds)
    }

    /// Whether packet `number` was sent before the most recently sent packet delivered: only such
    /// a packet can be declared lost by RACK.
    func precedesNewestDelivered(_ number: UInt64) -> Bool {
        newestDelivered.map { number < $0 } ?? false
    }

    /// A loss recovery started; packets numbered `nextPacketNumber` and up were sent after it.
    mutating func onRecoveryStarted(nextPacketNumber: UInt64) {
        recoveryEnd = nextPacketNumber
    }

    /// Remembers a packet just declared lost. Losses are declared in packet-number order, so this
    /// is an append; the oldest record goes when the list is full.
    mutating func remember(_ lost: LinkLostPacket) {
        if recentlyLost.count >= Self.maxRecentlyLost { recentlyLost.removeFirst() }
        if let last = recentlyLost.last, last.number > lost.number {
            let index = recentlyLost.firstIndex { $0.number > lost.number } ?? recentlyLost.endIndex
            recentlyLost.insert(lost, at: index)
        } else {
            recentlyLost.append(lost)
        }
    }

    /// Hands to `body`, and forgets, every remembered lost packet in `range`: the peer has
    /// acknowledged it, so its loss was spurious.
    mutating func takeLost(in range: ClosedRange<UInt64>, _ body: (LinkLostPacket) -> Void) {
        guard let first = recentlyLost.first, let last = recentlyLost.last,
            range.upperBound >= first.number, range.lowerBound <= last.number
        else { return }
        var low = 0
        var high = recentlyLost.count
        while low < high {
            let mid = (low + high) / 2
            if recentlyLost[mid].number < range.lowerBound { low = mid + 1 } else { high = mid }
        }
        var end = low
        while end < recentlyLost.count, recentlyLost[end].number <= range.upperBound {
            body(recentlyLost[end])
            end += 1
        }
        if end > low { recentlyLost.removeSubrange(low..<end) }
    }

    /// Forgets the lost packets declared before `horizon`: an acknowledgement of one would come
    /// too late to tell anything about the current reordering.
    mutating func forgetLost(declaredBefore horizon: ConduitInstant) {
        while let first = recentlyLost.first, first.declaredAt < horizon { recentlyLost.removeFirst() }
    }

    /// Section 6.2 step 4, on a spurious loss: widen the window by one step, at most once per
    /// round trip, and keep it for the next 16 recoveries. A packet delivered after one sent
    /// later is reordering too.
    mutating func onSpuriousLoss(nextPacketNumber: UInt64) {
        reorderingSeen = true
        guard spuriousRound == nil else { return }
        spuriousRound = nextPacketNumber
        windowMultiplier = min(windowMultiplier + 1, Self.maxWindowMultiplier)
        windowPersistenceLeft = Self.windowPersistence
    }

    /// Section 6.2 step 4, at the end of each ACK: the round in which the window grew is over
    /// once everything sent before its end is acknowledged (`firstUnacknowledged`, TCP's
    /// SND.UNA), and a recovery ends once a packet sent after it started is acknowledged; after 16
    /// recoveries without a spurious loss the window falls back to its base.
    mutating func onAckProcessed(largestAcknowledged: UInt64, firstUnacknowledged: UInt64) {
        if let round = spuriousRound, firstUnacknowledged >= round { spuriousRound = nil }
        guard let end = recoveryEnd, largestAcknowledged >= end else { return }
        recoveryEnd = nil
        windowPersistenceLeft -= 1
        if windowPersistenceLeft <= 0 {
            windowPersistenceLeft = 0
            windowMultiplier = 1
        }
    }
}

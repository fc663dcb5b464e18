import DequeModule
import ConduitCore

/// Serial-number comparison of 32-bit sequences (RFC 1982 style): true if `a` is after `b` and
/// less than 2^31 ahead.
@inline(__always)
func linkSequence(_ a: UInt32, isAfter b: UInt32) -> Bool {
    let distance = a &- b
    return distance != 0 && distance < 1 << 31
}

/// The sender's state of one channel.
///
/// Every frame gets the channel's next sequence number at `send`. The channel remembers how each
/// sequence from `resolvedBelow` on ended (still open, acknowledged, abandoned), so it knows the
/// cumulative point below which the receiver has nothing left to wait for: the value a FORWARD
/// frame carries (PR-SCTP's "advanced peer ack point", RFC 3758 section 3.5).
struct LinkSendChannel: Sendable {
    enum Resolution: UInt8, Sendable { case open = 0, acknowledged = 1, abandoned = 2 }

    var nextSequence: UInt32 = 0
    /// Every sequence below this is acknowledged or abandoned.
    var resolvedBelow: UInt32 = 0
    /// How `resolvedBelow ..< nextSequence` ended so far.
    var resolutions = Deque<Resolution>()
    /// Handles of frames not transmitted yet, in sequence order. The head is always a live frame
    /// (the link pops abandoned ones); further in, abandoned handles are skipped when reached.
    var queue = Deque<UInt64>()
    /// A FORWARD frame is waiting to go out.
    var forwardQueued = false
    /// The value of the newest FORWARD sent, and of the newest acknowledged.
    var lastForwardSent: UInt32?
    var forwardAcknowledged: UInt32?

    mutating func assignSequence() -> UInt32 {
        let sequence = nextSequence
        nextSequence &+= 1
        resolutions.append(.open)
        return sequence
    }

    /// Records how `sequence` ended. Returns true if the cumulative point moved past an abandoned
    /// frame, so the receiver must be told with a FORWARD frame.
    mutating func resolve(_ sequence: UInt32, abandoned: Bool) -> Bool {
        let index = Int(sequence &- resolvedBelow)
        guard index < resolutions.count, resolutions[index] == .open else { return false }
        resolutions[index] = abandoned ? .abandoned : .acknowledged
        var skippedAbandoned = false
        while let first = resolutions.first, first != .open {
            if first == .abandoned { skippedAbandoned = true }
            resolutions.removeFirst()
            resolvedBelow &+= 1
        }
        return skippedAbandoned
    }

    /// How far `sequence` is ahead of the cumulative point (the receiver tracks a bounded window).
    func offset(of sequence: UInt32) -> Int { Int(sequence &- resolvedBelow) }
}

/// A frame received and not yet handed to the upper layer.
struct LinkPendingDelivery: Sendable {
    var channel: UInt32
    var sequence: UInt32
    var bytes: [UInt8]
    /// Receiver-clock deadline, for frames that carry a lifetime.
    var expiresAt: ConduitInstant?
}

/// The receiver's state of one channel: the cumulative point (every sequence below it was
/// delivered, dropped as expired, or skipped by a FORWARD), a ring bitmap of the sequences received
/// in the window above it, and the ordered frames waiting there for a gap to fill.
struct LinkReceiveChannel: Sendable {
    var cumulative: UInt32 = 0
    private var marks: [UInt64]
    private let mask: UInt32
    /// Ordered frames received above a gap, by sequence.
    var buffered: [UInt32: LinkPendingDelivery] = [:]

    /// `window` must be a power of two.
    init(window: Int) {
        mask = UInt32(window - 1)
        marks = [UInt64](repeating: 0, count: max(1, window / 64))
    }

    func isMarked(_ sequence: UInt32) -> Bool {
        let bit = Int(sequence & mask)
        return marks[bit >> 6] & (1 << UInt64(bit & 63)) != 0
    }

    mutating func mark(_ sequence: UInt32) {
        let bit = Int(sequence & mask)
        marks[bit >> 6] |= 1 << UInt64(bit & 63)
    }

    mutating func unmark(_ sequence: UInt32) {
        let bit = Int(sequence & mask)
        marks[bit >> 6] &= ~(1 << UInt64(bit & 63))
    }
}

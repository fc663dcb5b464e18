/// A frame the sender sends in parts (DATA with `LinkPacket.partFlag`), because its DATA frame
/// does not fit a packet of the size in use: after a fall back to the base size, or a frame larger
/// than the base (a relay forwarding what came from a link of larger packets).
///
/// The part size is fixed when the frame is split: the room of a base-size packet, the floor of
/// the path search, so a part never needs splitting again. Each part is sent, acknowledged, lost
/// and sent again on its own; the frame is resolved once every part is acknowledged (or once a
/// copy of the whole frame is, if one was in flight before the split).
struct LinkFrameParts: Sendable {
    struct Part: Sendable {
        /// The packet holding this part's newest copy, while that copy is in flight.
        var latestPacket: UInt64?
        var awaitingRetransmit = false
        var acknowledged = false
        var retransmissions = 0
    }

    let partSize: Int
    let frameLength: Int
    var parts: [Part]
    /// The first part never sent (`parts.count` once every part went at least once).
    var nextUnsent = 0
    var acknowledgedCount = 0

    init(frameLength: Int, partSize: Int) {
        precondition(partSize >= 1 && frameLength >= 1)
        self.partSize = partSize
        self.frameLength = frameLength
        parts = Array(repeating: Part(), count: (frameLength + partSize - 1) / partSize)
    }

    /// Where part `index` lies in the frame.
    func range(of index: Int) -> Range<Int> {
        index * partSize..<min(frameLength, (index + 1) * partSize)
    }

    var allSent: Bool { nextUnsent == parts.count }
    var allAcknowledged: Bool { acknowledgedCount == parts.count }

    /// Marks part `index` acknowledged; returns whether that completed the frame.
    mutating func acknowledge(_ index: Int) -> Bool {
        guard parts.indices.contains(index), !parts[index].acknowledged else { return false }
        parts[index].acknowledged = true
        parts[index].awaitingRetransmit = false
        acknowledgedCount += 1
        return allAcknowledged
    }
}

/// A frame lost and waiting in ``ARQEngine``'s retransmission queue: the whole frame, or one part.
struct LinkRetransmission: Sendable, Hashable {
    let handle: UInt64
    /// The part, or nil for the whole frame.
    let part: Int?
}

/// A frame the receiver gets in parts: its bytes as they arrive, and which ranges have come.
/// Its whole length is counted in the receive buffer from the first part on (so parts cannot
/// take more memory than the receive window), and once every byte has come it is taken as if it
/// had come whole.
struct LinkPartialFrame: Sendable {
    /// Ranges received, at most this many apart: a peer sending scattered slivers of a frame is
    /// refused past it (a conforming sender's parts are a base packet's room each).
    static let maxRanges = 256

    var bytes: [UInt8]
    /// Disjoint, not adjacent, in order.
    private(set) var received: [Range<Int>] = []
    private(set) var receivedCount = 0

    init(frameLength: Int) {
        bytes = Array(repeating: 0, count: frameLength)
    }

    var isComplete: Bool { receivedCount == bytes.count }

    enum AddOutcome: Equatable { case added, duplicate, tooScattered }

    /// Copies `payload` in at `offset` (the reader checked it lies within the frame).
    mutating func add(_ payload: UnsafeRawBufferPointer, at offset: Int) -> AddOutcome {
        let new = offset..<(offset + payload.count)
        // The first range that ends at or after the new one's start (touching counts: they merge).
        var low = 0, high = received.count
        while low < high {
            let middle = (low + high) / 2
            if received[middle].upperBound < new.lowerBound { low = middle + 1 } else { high = middle }
        }
        if low < received.count, received[low].lowerBound <= new.lowerBound, received[low].upperBound >= new.upperBound {
            return .duplicate
        }
        var end = low
        while end < received.count, received[end].lowerBound <= new.upperBound { end += 1 }
        let merged = (end > low ? min(received[low].lowerBound, new.lowerBound) : new.lowerBound)..<(end > low ? max(received[end - 1].upperBound, new.upperBound) : new.upperBound)
        guard received.count - (end - low) + 1 <= Self.maxRanges else { return .tooScattered }
        bytes.withUnsafeMutableBytes { UnsafeMutableRawBufferPointer(rebasing: $0[new]).copyMemory(from: payload) }
        for range in received[low..<end] { receivedCount -= range.count }
        received.replaceSubrange(low..<end, with: [merged])
        receivedCount += merged.count
        return .added
    }
}

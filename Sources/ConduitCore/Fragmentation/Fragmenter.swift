/// Cuts one message into data frames of at most `fragmentSize` payload bytes.
///
/// A value type with a cursor, so that a paced sender can emit a message a few fragments at a
/// time. It copies each payload byte exactly once, into the caller's ``DatagramBatch``.
public struct Fragmenter: Sendable {
    /// The header every fragment of this send carries; only the offset changes.
    public let header: DataFrameHeader
    /// Where the next fragment starts in the send, in bytes.
    public private(set) var nextOffset: Int = 0
    /// True once the final fragment was emitted (an empty message has one, empty, fragment).
    public private(set) var isFinished = false

    /// Prepares the fragments of one send.
    /// - Parameters:
    ///   - streamID: the session's stream ID.
    ///   - sessionType: the session's type, carried in every frame header.
    ///   - subgroupID: the subgroup's number on the link (0: none).
    ///   - messageID: the send's number within the session, shared by its fragments.
    ///   - totalLength: the send's length in bytes.
    ///   - fragmentSize: payload bytes per frame: the transport's datagram size less the 32-byte header.
    ///   - timestamp: the app's user-defined timestamp, carried in every fragment.
    public init(
        streamID: StreamID,
        sessionType: SessionType,
        subgroupID: UInt16 = 0,
        messageID: UInt32,
        totalLength: Int,
        fragmentSize: Int,
        timestamp: UInt64
    ) {
        precondition(fragmentSize > 0 && fragmentSize <= Int(UInt16.max), "fragment size must be 1...65535")
        precondition(totalLength >= 0 && totalLength <= sessionType.maxSendSize, "message exceeds the session type's limit")
        // Widen the fragments if the transport's size would need more than the maximum count.
        let minimumSize = (totalLength + Limits.maxFragmentsPerMessage - 1) / Limits.maxFragmentsPerMessage
        header = DataFrameHeader(
            streamID: streamID,
            sessionType: sessionType,
            subgroupID: subgroupID,
            messageID: messageID,
            fragmentOffset: 0,
            totalLength: UInt32(totalLength),
            fragmentSize: UInt16(max(fragmentSize, minimumSize)),
            timestamp: timestamp
        )
    }

    /// The send's length, in bytes.
    public var totalLength: Int { Int(header.totalLength) }
    /// How many fragments the send takes (at least one, for an empty send).
    public var fragmentCount: Int { header.fragmentCount }
    /// Bytes not yet handed out as fragments.
    public var remainingBytes: Int { isFinished ? 0 : totalLength - nextOffset }

    /// Size on the wire of the next frame, or 0 when finished.
    public var nextFrameSize: Int {
        isFinished ? 0 : DataFrameHeader.size + min(Int(header.fragmentSize), totalLength - nextOffset)
    }

    /// Appends the next fragment of `message` (the same bytes each call) to `batch`.
    /// Returns false if the message was already finished.
    @discardableResult
    public mutating func emitNext(of message: UnsafeRawBufferPointer, into batch: inout DatagramBatch) -> Bool {
        guard !isFinished else { return false }
        precondition(message.count == totalLength, "the message changed length while fragmenting")
        let length = min(Int(header.fragmentSize), totalLength - nextOffset)
        var frame = header
        frame.fragmentOffset = UInt32(nextOffset)
        batch.appendDataFrame(frame, payload: UnsafeRawBufferPointer(rebasing: message[nextOffset..<nextOffset + length]))
        PayloadCopies.countSend(length)
        nextOffset += length
        isFinished = nextOffset >= totalLength
        return true
    }

    /// Appends every remaining fragment of `message` to `batch`.
    public mutating func emitAll(of message: UnsafeRawBufferPointer, into batch: inout DatagramBatch) {
        while emitNext(of: message, into: &batch) {}
    }
}

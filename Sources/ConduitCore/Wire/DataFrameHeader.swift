/// The header of a data frame: one fragment of one message of one data session.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-------+-------+---------------+-------------------------------+
/// |Ver=1  |Kind=0 |  Flags (= 0)  |           Stream ID           |  0
/// +-------+-------+---------------+-------------------------------+
/// | Session Type  | Reserved (=0) |          Subgroup ID          |  4
/// +---------------+---------------+-------------------------------+
/// |                          Message ID                           |  8
/// +---------------------------------------------------------------+
/// |                        Fragment Offset                        | 12
/// +---------------------------------------------------------------+
/// |                         Total Length                          | 16
/// +-------------------------------+-------------------------------+
/// |         Fragment Size         |         Reserved (= 0)        | 20
/// +-------------------------------+-------------------------------+
/// |                   User Timestamp (64 bits)                    | 24
/// |                                                               |
/// +---------------------------------------------------------------+
/// |                     Payload (the rest) ...                    | 32
/// ```
///
/// Every fragment of a message but the last carries exactly `Fragment Size` payload bytes, at an
/// offset that is a multiple of it; the last carries the remainder. That rule makes overlapping
/// fragments impossible to express, lets the receiver track fragments with one bit each, and lets
/// the parser refuse a frame whose claims are out of bounds before anything is allocated.
public struct DataFrameHeader: Hashable, Sendable {
    /// Bytes of the header before every data fragment.
    public static let size = 32

    /// The session's stream ID.
    public var streamID: StreamID
    /// The session's type.
    public var sessionType: SessionType
    /// 0 is the main room (and the only value in 1:1 calls).
    public var subgroupID: UInt16
    /// The send's number within the session, shared by its fragments.
    public var messageID: UInt32
    /// Where this fragment's bytes start in the send, in bytes.
    public var fragmentOffset: UInt32
    /// The send's whole length, in bytes.
    public var totalLength: UInt32
    /// Payload bytes per fragment for this send (the last may be shorter).
    public var fragmentSize: UInt16
    /// The app's user-defined timestamp of the send.
    public var timestamp: UInt64

    /// Makes a header.
    public init(
        streamID: StreamID,
        sessionType: SessionType,
        subgroupID: UInt16 = 0,
        messageID: UInt32,
        fragmentOffset: UInt32,
        totalLength: UInt32,
        fragmentSize: UInt16,
        timestamp: UInt64
    ) {
        self.streamID = streamID
        self.sessionType = sessionType
        self.subgroupID = subgroupID
        self.messageID = messageID
        self.fragmentOffset = fragmentOffset
        self.totalLength = totalLength
        self.fragmentSize = fragmentSize
        self.timestamp = timestamp
    }

    /// How many fragments the message has (1 for an empty message).
    @inlinable public var fragmentCount: Int {
        totalLength == 0 ? 1 : (Int(totalLength) + Int(fragmentSize) - 1) / Int(fragmentSize)
    }

    /// The fragment's position in its send, counting from 0.
    @inlinable public var fragmentIndex: Int { Int(fragmentOffset) / Int(fragmentSize) }

    /// The payload length this fragment must carry.
    @inlinable public var expectedPayloadLength: Int {
        min(Int(fragmentSize), Int(totalLength) - Int(fragmentOffset))
    }

    /// Writes the 32 header bytes at the start of `buffer` (which must hold at least `size` bytes).
    @inlinable
    public func encode(into buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count >= Self.size)
        buffer.writeU8(WireVersion.current << 4 | FrameKind.data.rawValue, at: 0)
        buffer.writeU8(0, at: 1)
        buffer.writeU16(streamID.wireValue, at: 2)
        buffer.writeU8(sessionType.rawValue, at: 4)
        buffer.writeU8(0, at: 5)
        buffer.writeU16(subgroupID, at: 6)
        buffer.writeU32(messageID, at: 8)
        buffer.writeU32(fragmentOffset, at: 12)
        buffer.writeU32(totalLength, at: 16)
        buffer.writeU16(fragmentSize, at: 20)
        buffer.writeU16(0, at: 22)
        buffer.writeU64(timestamp, at: 24)
    }

    /// Parses and validates a whole data frame. Returns the header and where the payload lies in
    /// `datagram`. Allocation-free; every claim is checked against the limits of the session type
    /// before the caller could act on it.
    @inlinable
    public static func parse(_ datagram: UnsafeRawBufferPointer) throws(WireError) -> (header: DataFrameHeader, payload: Range<Int>) {
        guard datagram.count >= size else { throw .truncated(needed: size, got: datagram.count) }
        guard try FrameKind.peek(datagram) == .data else { throw .unknownFrameKind(datagram[0] & 0x0F) }
        guard datagram.readU8(1) == 0, datagram.readU8(5) == 0, datagram.readU16(22) == 0 else {
            throw .reservedBitsSet
        }
        let rawStream = datagram.readU16(2)
        let streamID = StreamID(Int(rawStream))
        guard streamID.isValid else { throw .invalidStreamID(rawStream) }
        let rawType = datagram.readU8(4)
        guard let sessionType = SessionType(rawValue: rawType) else { throw .invalidSessionType(rawType) }

        let total = datagram.readU32(16)
        guard Int(total) <= sessionType.maxSendSize else {
            throw .messageTooLarge(claimed: total, limit: sessionType.maxSendSize)
        }
        let fragmentSize = datagram.readU16(20)
        guard fragmentSize > 0 else { throw .invalidFragmentSize(fragmentSize: 0, totalLength: total) }
        let header = DataFrameHeader(
            streamID: streamID,
            sessionType: sessionType,
            subgroupID: datagram.readU16(6),
            messageID: datagram.readU32(8),
            fragmentOffset: datagram.readU32(12),
            totalLength: total,
            fragmentSize: fragmentSize,
            timestamp: datagram.readU64(24)
        )
        guard header.fragmentCount <= Limits.maxFragmentsPerMessage else {
            throw .invalidFragmentSize(fragmentSize: fragmentSize, totalLength: total)
        }
        let offset = header.fragmentOffset
        let offsetIsValid = total == 0 ? offset == 0 : (offset < total && offset % UInt32(fragmentSize) == 0)
        guard offsetIsValid else {
            throw .invalidOffset(offset: offset, fragmentSize: fragmentSize, totalLength: total)
        }
        let payloadLength = datagram.count - size
        guard payloadLength == header.expectedPayloadLength else {
            throw .payloadLengthMismatch(expected: header.expectedPayloadLength, got: payloadLength)
        }
        return (header, size..<datagram.count)
    }
}

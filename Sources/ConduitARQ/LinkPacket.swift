@_spi(Benchmarks) import ConduitCore

/// The packet of the reliable link: one per datagram, for transports without native reliability
/// (raw UDP, where it will ride inside an RTP packet). Layout and rules are in
/// `docs/wire-format.md`, "Reliable link packets"; all integers are big-endian.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-------+-------+-------------+-+-------------------------------+
/// |Ver=1  |Kind=2 | Reserved (0)|C|                               |  0
/// +-------+-------+-------------+-+                               +
/// |                  Packet Number (64 bits, < 2^62)              |  4
/// +                               +-------------------------------+
/// |                               |   Frames ... (at least one)   |  8
/// +-------------------------------+-------------------------------+
/// |          CRC32C of every preceding byte (only if C = 1)       |  end - 4
/// +---------------------------------------------------------------+
/// ```
///
/// Byte 0 shares the version/kind nibbles of the Conduit frames (`0x10` data, `0x11` control), so
/// a link packet (`0x12`) can never be mistaken for a bare frame. The packet number counts every
/// packet a side sends from 0 and is **never reused**: a retransmitted frame travels in a new
/// packet under a new number (RFC 9000 section 12.3), which is what a later SRTP layer needs (it
/// must never protect the same index twice).
public enum LinkPacket {
    /// Version 1, kind 2.
    public static let versionAndKind: UInt8 = 0x12
    /// The frame kind of a link packet (the low nibble of byte 0).
    public static let kind: UInt8 = 2
    /// Bytes of a packet's header: version and kind, flags, packet number.
    public static let headerSize = 10
    /// Bytes of the CRC32C trailer, when the checksum flag is set.
    public static let checksumSize = 4
    /// Flag bit 0 of byte 1: a CRC32C trailer follows the frames.
    public static let checksumFlag: UInt8 = 0x01
    /// Packet numbers stay below 2^62, as in QUIC.
    public static let maxPacketNumber: UInt64 = (1 << 62) - 1

    /// The type byte that starts each frame in a packet.
    public enum FrameType: UInt8, Sendable, Hashable {
        /// PADDING: zero bytes that make a path MTU probe its size (RFC 8899 section 4.1); a run
        /// of them reads as one frame.
        case padding = 0x00
        /// PING: asks for an acknowledgement.
        case ping = 0x01
        /// ACK: acknowledges ranges of packet numbers and advertises the receive window.
        case ack = 0x02
        /// DATA: one upper-layer frame on a channel.
        case data = 0x03
        /// FORWARD: the sender will not send anything below a sequence number on a channel.
        case forward = 0x04
    }

    /// Bytes of a PING frame.
    public static let pingFrameSize = 1
    /// ACK frame without its additional ranges.
    public static let ackFrameFixedSize = 24
    /// Bytes of each further (gap, length) pair of an ACK frame.
    public static let ackRangeSize = 8
    /// DATA frame header without the optional lifetime field.
    public static let dataFrameHeaderSize = 12
    /// Bytes of a DATA frame's optional remaining-lifetime field.
    public static let lifetimeFieldSize = 4
    /// Bytes of a FORWARD frame.
    public static let forwardFrameSize = 12
    /// DATA frame flag bits.
    public static let orderedFlag: UInt8 = 0x01
    /// DATA frame flag: a remaining-lifetime field follows the header.
    public static let lifetimeFlag: UInt8 = 0x02
    /// DATA frame flag: the payload is a part of the frame; its offset and the frame's length
    /// follow the header (and the lifetime field).
    public static let partFlag: UInt8 = 0x04
    /// Bytes of a DATA part's fields: offset and frame length.
    public static let partFieldsSize = 8
    /// The longest frame a DATA frame may carry, whole (its length is 16 bits) or in parts.
    public static let maxFrameLength = 65_535

    /// Header plus trailer bytes of every packet.
    public static func overhead(checksum: Bool) -> Int { headerSize + (checksum ? checksumSize : 0) }

    /// Checks the header and the checksum trailer, and returns the packet number and where the
    /// frames lie. Allocation-free. `expectChecksum` is the link's configuration: a packet whose
    /// flag disagrees is refused either way. `crc32c` computes the checksum.
    public static func open(_ datagram: UnsafeRawBufferPointer, expectChecksum: Bool, crc32c: CRC32CFunction = .portable) throws(LinkWireError) -> (packetNumber: UInt64, frames: Range<Int>) {
        guard let first = datagram.first else { throw .truncated(needed: 1, got: 0) }
        guard first >> 4 == WireVersion.current else { throw .unsupportedVersion(first >> 4) }
        guard first & 0x0F == kind else { throw .notALinkPacket(kind: first & 0x0F) }
        guard datagram.count >= headerSize else { throw .truncated(needed: headerSize, got: datagram.count) }
        let flags = datagram.readU8(1)
        guard flags & ~checksumFlag == 0 else { throw .reservedBitsSet }
        guard (flags & checksumFlag != 0) == expectChecksum else { throw .checksumPresenceMismatch(expected: expectChecksum) }
        var end = datagram.count
        if expectChecksum {
            guard datagram.count >= headerSize + checksumSize else {
                throw .truncated(needed: headerSize + checksumSize, got: datagram.count)
            }
            end -= checksumSize
            let stored = datagram.readU32(end)
            let computed = crc32c.checksum(UnsafeRawBufferPointer(rebasing: datagram[0..<end]), 0)
            guard stored == computed else { throw .checksumMismatch(stored: stored, computed: computed) }
        }
        let packetNumber = datagram.readU64(2)
        guard packetNumber <= maxPacketNumber else { throw .packetNumberTooLarge(packetNumber) }
        guard end > headerSize else { throw .emptyPacket }
        return (packetNumber, headerSize..<end)
    }
}

/// One frame of a link packet, as the reader returns it. Byte ranges point into the packet it was
/// read from, so reading allocates nothing.
public enum LinkFrame: Sendable, Hashable {
    /// `0x01`, one byte: asks for an acknowledgement (keepalive, flow-control probe, PTO probe).
    case ping
    /// `0x00` bytes, `length` of them in a row: fill, read and ignored (not ack-eliciting).
    case padding(length: Int)
    /// `0x02`: acknowledges packets and advertises the receive window.
    case ack(LinkAckFrame)
    /// `0x03`: one upper-layer frame on a channel.
    case data(LinkDataFrame)
    /// The sender will never send or resend anything below `cumulativeSequence` on `channel`
    /// (acknowledged or abandoned): the receiver stops waiting for it (PR-SCTP FORWARD-TSN, RFC 3758).
    case forward(channel: UInt32, cumulativeSequence: UInt32)
}

/// A selective acknowledgement (RFC 9000 section 19.3), plus the receiver's window.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +---------------+---------------+-------------------------------+
/// |  Type = 0x02  | Reserved (0)  |    Additional Range Count     |  0
/// +---------------+---------------+-------------------------------+
/// |                   ACK Delay (microseconds)                    |  4
/// +---------------------------------------------------------------+
/// |               Largest Acknowledged (64 bits)                  |  8
/// |                                                               |
/// +---------------------------------------------------------------+
/// |              Receive Window (bytes the receiver can take)     | 16
/// +---------------------------------------------------------------+
/// |                       First ACK Range                         | 20
/// +---------------------------------------------------------------+
/// |   Gap (32)   |   ACK Range Length (32)   |  ... Count times     | 24
/// +---------------------------------------------------------------+
/// ```
///
/// The first range acknowledges `Largest - First ACK Range ... Largest`; each further pair goes
/// down: the next range's largest is `previous smallest - Gap - 2`, its smallest that minus the
/// Range Length (RFC 9000 section 19.3.1).
public struct LinkAckFrame: Sendable, Hashable {
    /// The largest packet number acknowledged.
    public var largestAcknowledged: UInt64
    /// How long the peer held the acknowledgement back, in microseconds (for RTT samples).
    public var ackDelayMicroseconds: UInt32
    /// The peer's receive window, in bytes.
    public var receiveWindow: UInt32
    /// How many packets below the largest are acknowledged in the first range.
    public var firstRange: UInt32
    /// The number of further (gap, length) pairs.
    public var additionalRangeCount: Int
    /// Offset of the first (gap, length) pair in the packet.
    public var rangesOffset: Int

    /// Calls `body` with each acknowledged range, largest first. `packet` must be the packet this
    /// frame was read from (the reader has checked that no range runs below 0).
    public func forEachRange(in packet: UnsafeRawBufferPointer, _ body: (ClosedRange<UInt64>) -> Void) {
        var smallest = largestAcknowledged - UInt64(firstRange)
        body(smallest...largestAcknowledged)
        var offset = rangesOffset
        for _ in 0..<additionalRangeCount {
            let largest = smallest - UInt64(packet.readU32(offset)) - 2
            smallest = largest - UInt64(packet.readU32(offset + 4))
            body(smallest...largest)
            offset += LinkPacket.ackRangeSize
        }
    }

    /// Every range, largest first (allocates; for tools and tests).
    public func ranges(in packet: UnsafeRawBufferPointer) -> [ClosedRange<UInt64>] {
        var result: [ClosedRange<UInt64>] = []
        forEachRange(in: packet) { result.append($0) }
        return result
    }
}

/// One upper-layer frame (a Conduit data or control frame) on one channel.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +---------------+-----------+-+-+-------------------------------+
/// |  Type = 0x03  |Reserved(0)|L|O|            Length             |  0
/// +---------------+-----------+-+-+-------------------------------+
/// |                           Channel                             |  4
/// +---------------------------------------------------------------+
/// |                      Sequence (per channel)                   |  8
/// +---------------------------------------------------------------+
/// |          Remaining Lifetime (milliseconds, only if L)         | 12
/// +---------------------------------------------------------------+
/// |             Part Offset (only if P)                           |
/// +---------------------------------------------------------------+
/// |             Frame Length (only if P)                          |
/// +---------------------------------------------------------------+
/// |                      Payload (Length bytes) ...               |
/// ```
///
/// O: deliver in sequence order. L: the frame has a lifetime; the receiver drops it once the
/// remaining lifetime has passed since it arrived. P (flag `0x04`): the payload is bytes
/// [offset, offset + Length) of a frame of Frame Length bytes, sent in parts because it does not
/// fit a packet of the size in use (after a fall back to the base size, or a frame a relay
/// forwards from a link of larger packets); the receiver delivers the frame once it has every
/// byte, as if it had come whole.
public struct LinkDataFrame: Sendable, Hashable {
    /// The channel the frame belongs to (one per data session).
    public var channel: UInt32
    /// The frame's number on its channel, from 0.
    public var sequence: UInt32
    /// Whether the receiver delivers the channel's frames in sequence order.
    public var isOrdered: Bool
    /// How long, in milliseconds, the frame may still be delivered, if it has a lifetime.
    public var remainingLifetimeMilliseconds: UInt32?
    /// Where the payload lies in the packet.
    public var payload: Range<Int>
    /// Which part of its frame the payload is, nil when it is the whole frame.
    public var part: LinkFramePart?
}

/// Where a DATA frame's payload lies in its frame, when the frame goes in parts.
public struct LinkFramePart: Sendable, Hashable {
    /// The payload's first byte, as an offset into the frame.
    public var offset: UInt32
    /// The whole frame's length.
    public var frameLength: UInt32

    /// A part at `offset` of a frame of `frameLength` bytes.
    public init(offset: UInt32, frameLength: UInt32) {
        self.offset = offset
        self.frameLength = frameLength
    }
}

/// Reads the frames of a packet one by one, checking each claim against the bytes that remain
/// before reading further. Allocation-free.
public struct LinkFrameReader {
    let packet: UnsafeRawBufferPointer
    var position: Int
    package let end: Int

    /// `frames` is the range ``LinkPacket/open(_:expectChecksum:crc32c:)`` returned.
    public init(packet: UnsafeRawBufferPointer, frames: Range<Int>) {
        self.packet = packet
        position = frames.lowerBound
        end = frames.upperBound
    }

    /// The next frame, nil at the end of the packet, or the first rule it breaks.
    public mutating func next() throws(LinkWireError) -> LinkFrame? {
        guard position < end else { return nil }
        let at = position
        let available = end - at
        let rawType = packet.readU8(at)
        guard let type = LinkPacket.FrameType(rawValue: rawType) else { throw .unknownFrameType(rawType) }
        switch type {
        case .padding:
            while position < end, packet.readU8(position) == 0 { position += 1 }
            return .padding(length: position - at)
        case .ping:
            position += LinkPacket.pingFrameSize
            return .ping
        case .ack:
            guard available >= LinkPacket.ackFrameFixedSize else {
                throw .frameOverrun(frameType: rawType, claimed: LinkPacket.ackFrameFixedSize, available: available)
            }
            guard packet.readU8(at + 1) == 0 else { throw .reservedBitsSet }
            let count = Int(packet.readU16(at + 2))
            // The claim is checked before a single range is read (65,535 ranges need 512 KiB).
            let claimed = LinkPacket.ackFrameFixedSize + count * LinkPacket.ackRangeSize
            guard claimed <= available else { throw .frameOverrun(frameType: rawType, claimed: claimed, available: available) }
            let frame = LinkAckFrame(
                largestAcknowledged: packet.readU64(at + 8),
                ackDelayMicroseconds: packet.readU32(at + 4),
                receiveWindow: packet.readU32(at + 16),
                firstRange: packet.readU32(at + 20),
                additionalRangeCount: count,
                rangesOffset: at + LinkPacket.ackFrameFixedSize
            )
            guard frame.largestAcknowledged <= LinkPacket.maxPacketNumber else {
                throw .packetNumberTooLarge(frame.largestAcknowledged)
            }
            // No range may run below packet number 0 (RFC 9000 section 19.3.1).
            guard UInt64(frame.firstRange) <= frame.largestAcknowledged else { throw .invalidAckRange }
            var smallest = frame.largestAcknowledged - UInt64(frame.firstRange)
            var offset = frame.rangesOffset
            for _ in 0..<count {
                let gap = UInt64(packet.readU32(offset))
                let length = UInt64(packet.readU32(offset + 4))
                guard smallest >= gap + 2 else { throw .invalidAckRange }
                let largest = smallest - gap - 2
                guard largest >= length else { throw .invalidAckRange }
                smallest = largest - length
                offset += LinkPacket.ackRangeSize
            }
            position += claimed
            return .ack(frame)
        case .data:
            guard available >= LinkPacket.dataFrameHeaderSize else {
                throw .frameOverrun(frameType: rawType, claimed: LinkPacket.dataFrameHeaderSize, available: available)
            }
            let flags = packet.readU8(at + 1)
            guard flags & ~(LinkPacket.orderedFlag | LinkPacket.lifetimeFlag | LinkPacket.partFlag) == 0 else { throw .reservedBitsSet }
            let length = Int(packet.readU16(at + 2))
            var headerSize = LinkPacket.dataFrameHeaderSize
            var lifetime: UInt32?
            if flags & LinkPacket.lifetimeFlag != 0 {
                headerSize += LinkPacket.lifetimeFieldSize
                guard available >= headerSize else { throw .frameOverrun(frameType: rawType, claimed: headerSize, available: available) }
                lifetime = packet.readU32(at + LinkPacket.dataFrameHeaderSize)
            }
            var part: LinkFramePart?
            if flags & LinkPacket.partFlag != 0 {
                let fields = at + headerSize
                headerSize += LinkPacket.partFieldsSize
                guard available >= headerSize else { throw .frameOverrun(frameType: rawType, claimed: headerSize, available: available) }
                let offset = packet.readU32(fields), frameLength = packet.readU32(fields + 4)
                guard length > 0, frameLength <= LinkPacket.maxFrameLength, UInt64(offset) + UInt64(length) <= UInt64(frameLength) else {
                    throw .invalidPart(offset: offset, length: length, frameLength: frameLength)
                }
                part = LinkFramePart(offset: offset, frameLength: frameLength)
            }
            guard headerSize + length <= available else {
                throw .frameOverrun(frameType: rawType, claimed: headerSize + length, available: available)
            }
            position += headerSize + length
            return .data(LinkDataFrame(
                channel: packet.readU32(at + 4),
                sequence: packet.readU32(at + 8),
                isOrdered: flags & LinkPacket.orderedFlag != 0,
                remainingLifetimeMilliseconds: lifetime,
                payload: (at + headerSize)..<(at + headerSize + length),
                part: part
            ))
        case .forward:
            guard available >= LinkPacket.forwardFrameSize else {
                throw .frameOverrun(frameType: rawType, claimed: LinkPacket.forwardFrameSize, available: available)
            }
            guard packet.readU8(at + 1) == 0, packet.readU16(at + 2) == 0 else { throw .reservedBitsSet }
            position += LinkPacket.forwardFrameSize
            return .forward(channel: packet.readU32(at + 4), cumulativeSequence: packet.readU32(at + 8))
        }
    }
}

extension LinkPacket {
    /// Every frame of a packet, after checking the header and checksum (for tools and tests; the
    /// link itself reads frames in place).
    public static func frames(of datagram: [UInt8], expectChecksum: Bool) throws(LinkWireError) -> (packetNumber: UInt64, frames: [LinkFrame]) {
        let result: Result<(UInt64, [LinkFrame]), LinkWireError> = datagram.withUnsafeBytes { raw in
            Result { () throws(LinkWireError) in
                let (number, range) = try open(raw, expectChecksum: expectChecksum)
                var reader = LinkFrameReader(packet: raw, frames: range)
                var frames: [LinkFrame] = []
                while let frame = try reader.next() { frames.append(frame) }
                return (number, frames)
            }
        }
        return try result.get()
    }
}

/// Writes one packet at the end of a byte array (a batch's storage, lent while the packet is built).
package struct LinkPacketWriter {
    package var bytes: [UInt8] = []
    /// Where the packet being written starts in `bytes`.
    package var start = 0

    /// An empty writer.
    package init() {}

    package mutating func begin(packetNumber: UInt64, checksum: Bool, capacity: Int) {
        start = bytes.count
        // Doubling, not the exact size: reserving exactly would reallocate for every packet.
        if bytes.capacity < start + capacity { bytes.reserveCapacity(Swift.max(start + capacity, 2 * bytes.capacity)) }
        bytes.append(LinkPacket.versionAndKind)
        bytes.append(checksum ? LinkPacket.checksumFlag : 0)
        append64(packetNumber)
    }

    /// The packet's size so far.
    package var count: Int { bytes.count - start }

    package mutating func append16(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    package mutating func append32(_ value: UInt32) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 24))
        bytes.append(UInt8(truncatingIfNeeded: value >> 16))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    package mutating func append64(_ value: UInt64) {
        append32(UInt32(truncatingIfNeeded: value >> 32))
        append32(UInt32(truncatingIfNeeded: value))
    }

    package mutating func set16(_ value: UInt16, at offset: Int) {
        bytes[offset] = UInt8(truncatingIfNeeded: value >> 8)
        bytes[offset + 1] = UInt8(truncatingIfNeeded: value)
    }

    package mutating func appendPing() { bytes.append(LinkPacket.FrameType.ping.rawValue) }

    /// Appends `length` PADDING bytes.
    package mutating func appendPadding(_ length: Int) {
        bytes.append(contentsOf: repeatElement(LinkPacket.FrameType.padding.rawValue, count: length))
    }

    /// Writes the fixed part of an ACK frame; returns the offset in `bytes` at which to patch the range count.
    package mutating func appendAckHeader(largest: UInt64, ackDelayMicroseconds: UInt32, window: UInt32, firstRange: UInt32) -> Int {
        bytes.append(LinkPacket.FrameType.ack.rawValue)
        bytes.append(0)
        let countOffset = bytes.count
        append16(0)
        append32(ackDelayMicroseconds)
        append64(largest)
        append32(window)
        append32(firstRange)
        return countOffset
    }

    package mutating func appendAckRange(gap: UInt32, length: UInt32) {
        append32(gap)
        append32(length)
    }

    package mutating func appendData(
        channel: UInt32, sequence: UInt32, ordered: Bool, lifetimeMilliseconds: UInt32?, part: LinkFramePart? = nil, payload: ArraySlice<UInt8>
    ) {
        bytes.append(LinkPacket.FrameType.data.rawValue)
        bytes.append((ordered ? LinkPacket.orderedFlag : 0) | (lifetimeMilliseconds != nil ? LinkPacket.lifetimeFlag : 0) | (part != nil ? LinkPacket.partFlag : 0))
        append16(UInt16(payload.count))
        append32(channel)
        append32(sequence)
        if let lifetimeMilliseconds { append32(lifetimeMilliseconds) }
        if let part {
            append32(part.offset)
            append32(part.frameLength)
        }
        bytes.append(contentsOf: payload)
        PayloadCopies.countSend(payload.count)
    }

    package mutating func appendForward(channel: UInt32, cumulativeSequence: UInt32) {
        bytes.append(LinkPacket.FrameType.forward.rawValue)
        bytes.append(0)
        append16(0)
        append32(channel)
        append32(cumulativeSequence)
    }

    /// Appends the CRC32C trailer over the packet written so far.
    package mutating func appendChecksum(using crc32c: CRC32CFunction) {
        append32(bytes.withUnsafeBytes { crc32c.checksum(UnsafeRawBufferPointer(rebasing: $0[start...]), 0) })
    }
}

import ConduitCore

/// Bounds-checked reading of a room control body: every read states what it needed, so a short or
/// lying body is a typed error, and lengths are single bytes or 16-bit, so nothing a peer claims
/// can make the parser allocate more than the datagram it already holds.
struct RoomBodyReader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func u8(_ what: String) throws(WireError) -> UInt8 {
        guard offset + 1 <= bytes.count else { throw .malformedControlBody("\(what) is missing") }
        defer { offset += 1 }
        return bytes.readU8(offset)
    }

    mutating func u16(_ what: String) throws(WireError) -> UInt16 {
        guard offset + 2 <= bytes.count else { throw .malformedControlBody("\(what) is missing") }
        defer { offset += 2 }
        return bytes.readU16(offset)
    }

    mutating func u32(_ what: String) throws(WireError) -> UInt32 {
        guard offset + 4 <= bytes.count else { throw .malformedControlBody("\(what) is missing") }
        defer { offset += 4 }
        return bytes.readU32(offset)
    }

    mutating func raw(_ count: Int, _ what: String) throws(WireError) -> [UInt8] {
        guard count >= 0, offset + count <= bytes.count else {
            throw .malformedControlBody("\(what) claims \(count) bytes but \(bytes.count - offset) remain")
        }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// A UTF-8 string with a one-byte length. Strict: bytes that are not UTF-8 are refused, not
    /// replaced (a lossy decode would make different byte strings the same name).
    mutating func string8(_ what: String) throws(WireError) -> String {
        let count = Int(try u8("\(what) length"))
        guard let text = String(validating: try raw(count, what), as: UTF8.self) else {
            throw .malformedControlBody("\(what) is not UTF-8")
        }
        return text
    }

    mutating func identifier<ID: ValidatedIdentifier>(_ type: ID.Type) throws(WireError) -> ID {
        let text = try string8(ID.kind)
        guard let id = try? ID(text) else { throw .malformedControlBody("invalid \(ID.kind) '\(text.prefix(32))'") }
        return id
    }

    /// Reliability as a track frame spells it: flags (ordered, limit kind) and a 32-bit limit.
    mutating func reliability() throws(WireError) -> Reliability {
        let flags = try u8("reliability flags")
        let value = try u32("reliability limit")
        guard flags & 0x1F == 0 else { throw .reservedBitsSet }
        switch flags >> 5 & 3 {
        case 0:
            // No limit, no value: as in a track frame's header (found by fuzzing `room-control`).
            guard value == 0 else { throw .reservedBitsSet }
            return Reliability(ordered: flags & 0x80 != 0, limit: .none)
        case 1:
            guard value <= UInt32(UInt16.max) else { throw .malformedControlBody("maxRetransmits \(value) exceeds 65535") }
            return Reliability(ordered: flags & 0x80 != 0, limit: .maxRetransmits(UInt16(value)))
        case 2: return Reliability(ordered: flags & 0x80 != 0, limit: .maxPacketLifeTime(milliseconds: value))
        default: throw .reservedBitsSet
        }
    }

    mutating func declaration() throws(WireError) -> ChannelDeclaration {
        let label = try identifier(ChannelLabel.self)
        guard label.isApplicationLabel else { throw .malformedControlBody("channel label '\(label)' does not start with '#'") }
        let rawDirection = try u8("direction")
        guard let direction = ChannelDeclaration.Direction(rawValue: rawDirection) else { throw .malformedControlBody("unknown direction \(rawDirection)") }
        let reliability = try reliability()
        let protocolName = try string8("protocol")
        let flags = try u8("channel flags")
        guard flags & ~3 == 0 else { throw .reservedBitsSet }
        return ChannelDeclaration(unchecked: label, direction: direction, reliability: reliability, protocolName: protocolName,
                                  compress: flags & 1 != 0, senderHeader: flags & 2 != 0)
    }

    func finish(_ what: String) throws(WireError) {
        guard isAtEnd else { throw .malformedControlBody("\(bytes.count - offset) unexpected bytes after \(what)") }
    }
}

extension Array where Element == UInt8 {
    mutating func appendU16(_ value: UInt16) {
        append(UInt8(value >> 8))
        append(UInt8(value & 0xFF))
    }

    mutating func appendU32(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    mutating func appendReliability(_ reliability: Reliability) {
        let header = TrackFrameHeader(trackID: 0, reliability: reliability).bytes
        append(header[1])
        append(contentsOf: header[4..<8])
    }

    mutating func appendDeclaration(_ declaration: ChannelDeclaration) {
        appendString8(declaration.label.rawValue)
        append(declaration.direction.rawValue)
        appendReliability(declaration.reliability)
        appendString8(declaration.protocolName)
        append((declaration.compress ? 1 : 0) | (declaration.senderHeader ? 2 : 0))
    }

    /// A string with a one-byte length; callers pass validated identifiers (at most 255 bytes).
    mutating func appendString8(_ text: String) {
        let utf8 = Array(text.utf8.prefix(255))
        append(UInt8(utf8.count))
        append(contentsOf: utf8)
    }
}

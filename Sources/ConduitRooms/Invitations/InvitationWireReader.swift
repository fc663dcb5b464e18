import ConduitCore

/// A bounds-checked cursor over one message. Every read checks what is left first; lists are
/// appended as their entries are parsed, never reserved from a claimed count.
struct InvitationWireReader {
    let bytes: UnsafeRawBufferPointer
    private(set) var offset: Int

    init(_ bytes: UnsafeRawBufferPointer, offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    var remaining: Int { bytes.count - offset }

    func need(_ n: Int) throws(InvitationWireError) {
        guard remaining >= n else { throw .truncated(needed: offset + n, got: bytes.count) }
    }

    mutating func u8() throws(InvitationWireError) -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return bytes.readU8(offset)
    }

    mutating func u16() throws(InvitationWireError) -> UInt16 {
        try need(2)
        defer { offset += 2 }
        return bytes.readU16(offset)
    }

    mutating func u32() throws(InvitationWireError) -> UInt32 {
        try need(4)
        defer { offset += 4 }
        return bytes.readU32(offset)
    }

    mutating func u64() throws(InvitationWireError) -> UInt64 {
        try need(8)
        defer { offset += 8 }
        return bytes.readU64(offset)
    }

    mutating func slice(_ n: Int) throws(InvitationWireError) -> UnsafeRawBufferPointer {
        try need(n)
        defer { offset += n }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + n])
    }

    /// `u16 length, bytes`.
    mutating func data() throws(InvitationWireError) -> [UInt8] {
        let length = Int(try u16())
        return Array(try slice(length))
    }

    /// `u8 length (1...), UTF-8`.
    mutating func identifier<ID: ValidatedIdentifier>(_: ID.Type) throws(InvitationWireError) -> ID {
        let length = Int(try u8())
        // Strict UTF-8: a lossy decode would accept bytes that do not encode back the same.
        guard let text = String(validating: try slice(length), as: UTF8.self) else { throw .invalidIdentifier("not UTF-8") }
        do { return try ID(text) } catch { throw .invalidIdentifier(error.message) }
    }

    /// `u8 length (0 = none), UTF-8`.
    mutating func optionalRoom() throws(InvitationWireError) -> RoomID? {
        guard let length = bytes.count > offset ? bytes.readU8(offset) : nil else { throw .truncated(needed: offset + 1, got: bytes.count) }
        if length == 0 {
            offset += 1
            return nil
        }
        return try identifier(RoomID.self)
    }

    /// `u16 count, count × peer ID`. The count is checked against the limit and against the
    /// bytes left (each peer takes at least 2) before anything is parsed.
    mutating func peers(limit: Int) throws(InvitationWireError) -> [PeerID] {
        let count = Int(try u16())
        let fits = min(limit, remaining / 2)
        guard count <= fits else { throw .countTooLarge(claimed: count, limit: fits) }
        var out: [PeerID] = []
        out.reserveCapacity(count)  // safe: count ≤ remaining / 2
        for _ in 0..<count { out.append(try identifier(PeerID.self)) }
        return out
    }
}

/// The encoding side: appends big-endian fields, refusing what a length prefix cannot say.
struct InvitationWireWriter {
    var out: [UInt8] = []

    mutating func header(_ type: InvitationMessage.MessageType, flags: UInt8 = 0, tag: UInt32 = 0, id: InvitationID?) {
        u8(InvitationMessage.version)
        u8(type.rawValue)
        u8(flags)
        u8(0)
        u32(tag)
        u64(id?.rawValue ?? 0)
    }

    mutating func u8(_ v: UInt8) { out.append(v) }
    mutating func u16(_ v: UInt16) { out.append(UInt8(v >> 8)); out.append(UInt8(v & 0xFF)) }
    mutating func u32(_ v: UInt32) { for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt32(shift))) } }
    mutating func u64(_ v: UInt64) { for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) } }

    mutating func data(_ bytes: [UInt8], _ what: String) throws(InvitationWireError) {
        guard bytes.count <= Int(UInt16.max) else { throw .fieldTooLong(what) }
        u16(UInt16(bytes.count))
        out.append(contentsOf: bytes)
    }

    mutating func identifier(_ text: String) throws(InvitationWireError) {
        let count = text.utf8.count
        guard count <= Int(UInt8.max) else { throw .fieldTooLong("identifier") }
        u8(UInt8(count))
        out.append(contentsOf: text.utf8)
    }

    mutating func optionalRoom(_ room: RoomID?) throws(InvitationWireError) {
        if let room { try identifier(room.rawValue) } else { u8(0) }
    }

    mutating func peers(_ peers: [PeerID]) throws(InvitationWireError) {
        guard peers.count <= InvitationMessage.maxPeersPerList else { throw .fieldTooLong("peer list") }
        u16(UInt16(peers.count))
        for peer in peers { try identifier(peer.rawValue) }
    }
}

import ConduitCore

extension RoomControlFrame {
    /// Whether `datagram` is a room control frame of type join, whatever its body: a relay answers
    /// even a join that does not parse (a client waiting for `joined` is told why at once).
    public static func isJoin(_ datagram: UnsafeRawBufferPointer) -> Bool {
        datagram.count >= headerSize && datagram.readU8(0) == WireVersion.current << 4 | RelayFrameKind.room.rawValue
            && datagram.readU8(1) == FrameType.join.rawValue
    }

    /// The token length a join's body claims (room, peer and flags skipped), if the datagram gets
    /// that far; whether that many bytes follow is not checked.
    public static func claimedTokenLength(ofJoin datagram: UnsafeRawBufferPointer) -> Int? {
        guard isJoin(datagram) else { return nil }
        var offset = headerSize
        for _ in 0..<2 {  // room, then peer: a length byte and that many bytes each
            guard offset < datagram.count else { return nil }
            offset += 1 + Int(datagram.readU8(offset))
        }
        offset += 1  // flags
        guard offset + 2 <= datagram.count else { return nil }
        return Int(datagram.readU16(offset))
    }
}

/// Control frames set up calls and data sessions. They are rare, so they favour clarity over speed.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-------+-------+---------------+-------------------------------+
/// |Ver=1  |Kind=1 | Control Type  |     Stream ID (0 if none)     |  0
/// +-------+-------+---------------+-------------------------------+
/// | Session Type  |    Reason     |          Subgroup ID          |  4
/// +---------------+---------------+-------------------------------+
/// |          Body Length          |            Body ...           |  8
/// +-------------------------------+-------------------------------+
/// ```
public enum ControlFrame: Hashable, Sendable {
    /// First frame on a link, sent by both sides. Body: `flags(1) peerIDLength(1) peerID`.
    /// Flag bit 0: this side supports data sessions.
    case hello(peer: PeerID, dataSessionsSupported: Bool)
    /// A sender created an outbound session. Body: the subgroup name (empty for the main room).
    case sessionOpen(streamID: StreamID, subgroupID: UInt16, subgroup: SubgroupName?, type: SessionType)
    /// A receiver does not support this stream (LINE Planet `unsupportInboundDataSession`).
    case sessionUnsupported(streamID: StreamID, subgroupID: UInt16)
    /// A sender closed its outbound session.
    case sessionClose(streamID: StreamID, subgroupID: UInt16, reason: DataSessionCloseReason)
    /// The sender is hanging up.
    case goodbye

    /// Bytes of a control frame's fixed header.
    public static let headerSize = 10

    enum ControlType: UInt8 {
        case hello = 1, sessionOpen = 2, sessionUnsupported = 3, sessionClose = 4, goodbye = 5
    }

    /// Appends the encoded frame to `out`.
    public func encode(into out: inout [UInt8]) {
        var type: ControlType
        var stream: UInt16 = 0
        var sessionType: UInt8 = 0
        var reason: UInt8 = 0
        var subgroupID: UInt16 = 0
        var body: [UInt8] = []
        switch self {
        case .hello(let peer, let supported):
            type = .hello
            body.append(supported ? 1 : 0)
            body.append(UInt8(peer.rawValue.utf8.count))
            body.append(contentsOf: peer.rawValue.utf8)
        case .sessionOpen(let id, let sub, let name, let t):
            type = .sessionOpen
            (stream, subgroupID, sessionType) = (id.wireValue, sub, t.rawValue)
            body.append(contentsOf: name?.rawValue.utf8 ?? "".utf8)
        case .sessionUnsupported(let id, let sub):
            type = .sessionUnsupported
            (stream, subgroupID) = (id.wireValue, sub)
        case .sessionClose(let id, let sub, let why):
            type = .sessionClose
            (stream, subgroupID, reason) = (id.wireValue, sub, why.rawValue)
        case .goodbye:
            type = .goodbye
        }
        out.append(WireVersion.current << 4 | FrameKind.control.rawValue)
        out.append(type.rawValue)
        out.append(UInt8(stream >> 8))
        out.append(UInt8(stream & 0xFF))
        out.append(sessionType)
        out.append(reason)
        out.append(UInt8(subgroupID >> 8))
        out.append(UInt8(subgroupID & 0xFF))
        out.append(UInt8(body.count >> 8))
        out.append(UInt8(body.count & 0xFF))
        out.append(contentsOf: body)
    }

    /// The frame as sent on the wire.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    /// Parses a control frame, refusing unknown types, bad IDs and bodies that disagree with their length.
    public static func parse(_ datagram: UnsafeRawBufferPointer) throws(WireError) -> ControlFrame {
        guard datagram.count >= headerSize else { throw .truncated(needed: headerSize, got: datagram.count) }
        guard try FrameKind.peek(datagram) == .control else { throw .unknownFrameKind(datagram[0] & 0x0F) }
        let rawType = datagram.readU8(1)
        guard let type = ControlType(rawValue: rawType) else { throw .unknownControlType(rawType) }
        let bodyLength = Int(datagram.readU16(8))
        guard datagram.count == headerSize + bodyLength else {
            throw .malformedControlBody("body length \(bodyLength) but \(datagram.count - headerSize) bytes follow")
        }
        let body = UnsafeRawBufferPointer(rebasing: datagram[headerSize...])
        let rawStream = datagram.readU16(2)
        let subgroupID = datagram.readU16(6)
        // Header fields a control type does not use must be zero (strict, so they stay free for later versions).
        let usesStream = type == .sessionOpen || type == .sessionUnsupported || type == .sessionClose
        let usesType = type == .sessionOpen
        let usesReason = type == .sessionClose
        guard (usesStream || (rawStream == 0 && subgroupID == 0)),
            usesType || datagram.readU8(4) == 0,
            usesReason || datagram.readU8(5) == 0
        else { throw .reservedBitsSet }

        func streamID() throws(WireError) -> StreamID {
            let id = StreamID(Int(rawStream))
            guard id.isValid else { throw .invalidStreamID(rawStream) }
            return id
        }

        switch type {
        case .hello:
            guard body.count >= 2, body.count == 2 + Int(body[1]) else {
                throw .malformedControlBody("hello body does not match its peer ID length")
            }
            guard body[0] & ~1 == 0 else { throw .reservedBitsSet }
            // Strict UTF-8: a lossy decode would make different byte strings the same peer.
            guard let name = String(validating: body[2...], as: UTF8.self) else {
                throw .malformedControlBody("the peer ID in hello is not UTF-8")
            }
            guard let peer = try? PeerID(name) else { throw .malformedControlBody("invalid peer ID in hello") }
            return .hello(peer: peer, dataSessionsSupported: body[0] & 1 == 1)
        case .sessionOpen:
            let rawSessionType = datagram.readU8(4)
            guard let sessionType = SessionType(rawValue: rawSessionType) else {
                throw .invalidSessionType(rawSessionType)
            }
            var subgroup: SubgroupName?
            if body.count > 0 {
                guard let text = String(validating: body, as: UTF8.self) else {
                    throw .malformedControlBody("the subgroup name is not UTF-8")
                }
                guard let name = try? SubgroupName(text) else { throw .malformedControlBody("invalid subgroup name") }
                subgroup = name
            }
            return .sessionOpen(streamID: try streamID(), subgroupID: subgroupID, subgroup: subgroup, type: sessionType)
        case .sessionUnsupported:
            guard body.isEmpty else { throw .malformedControlBody("unsupported frame has a body") }
            return .sessionUnsupported(streamID: try streamID(), subgroupID: subgroupID)
        case .sessionClose:
            guard body.isEmpty else { throw .malformedControlBody("close frame has a body") }
            let rawReason = datagram.readU8(5)
            guard let reason = DataSessionCloseReason(rawValue: rawReason) else {
                throw .malformedControlBody("unknown close reason \(rawReason)")
            }
            return .sessionClose(streamID: try streamID(), subgroupID: subgroupID, reason: reason)
        case .goodbye:
            guard body.isEmpty else { throw .malformedControlBody("goodbye frame has a body") }
            return .goodbye
        }
    }

    /// Parses a control frame. Throws ``WireError`` for a truncated, unknown or malformed frame.
    public static func parse(_ bytes: [UInt8]) throws(WireError) -> ControlFrame {
        let result: Result<ControlFrame, WireError> = bytes.withUnsafeBytes { raw in
            Result { () throws(WireError) in try parse(raw) }
        }
        return try result.get()
    }
}

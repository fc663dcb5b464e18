import ConduitCore

/// Invitation messages between a peer and the relay. Foundation-free, big-endian. The relay
/// carries them in its own framing (which tells them apart from other traffic); a message is
/// self-describing from its first byte.
///
/// Every message starts with the same 16-byte header:
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +---------------+---------------+---------------+---------------+
/// |  Version = 1  | Message Type  |     Flags     | Reserved = 0  |  0
/// +---------------+---------------+---------------+---------------+
/// |                 Request Tag (0 in events)                     |  4
/// +---------------------------------------------------------------+
/// |                Invitation ID (0 = none)                       |  8
/// |                                                               |
/// +---------------------------------------------------------------+
/// |                      Body, by type ...                        | 16
/// ```
///
/// The request tag is chosen by the peer and echoed in the relay's reply (`invited`, `done` or
/// `refused`), so replies can be matched to requests. Body fields, in the order listed per type:
///
/// ```
/// peer   = u8 length (1...128) + UTF-8        room? = u8 length (0 = none) + UTF-8
/// peers  = u16 count + count × peer           data  = u16 length + bytes
/// ```
///
/// | Type | Message             | ID  | Flags                | Body                                    |
/// |------|---------------------|-----|----------------------|-----------------------------------------|
/// | 0x01 | invite              | 0   | bit 0 onlineUserOnly | u32 timeout, room?, peers, data         |
/// | 0x02 | accept              | yes | 0                    | data                                    |
/// | 0x03 | reject              | yes | 0                    | data                                    |
/// | 0x04 | cancel              | yes | 0                    | data                                    |
/// | 0x81 | invited (reply)     | yes | 0                    | peers (skipped, offline)                |
/// | 0x82 | done (reply)        | yes | 0                    | (empty)                                 |
/// | 0x83 | refused (reply)     | any | 0                    | u16 code, data (UTF-8 message)          |
/// | 0x90 | newInvitation       | yes | 0                    | peer inviter, room?, u32 timeout, peers, data |
/// | 0x91 | inviteeAccepted     | yes | 0                    | peer invitee, data                      |
/// | 0x92 | inviteeRejected     | yes | 0                    | peer invitee, data                      |
/// | 0x93 | invitationCancelled | yes | reason (0, 1)        | peer inviter, data                      |
/// | 0x94 | invitationTimeout   | yes | cause (0, 1)         | peers                                   |
///
/// The parser refuses unknown types, unknown flag values, a set reserved byte, a missing or
/// misplaced ID, bad identifiers, list counts that the remaining bytes could not hold, and
/// trailing bytes. Error codes it does not know are kept (``InvitationError/Code`` is open).
public enum InvitationMessage: Hashable, Sendable {
    /// Client → relay: invite, with the request tag the reply echoes.
    case invite(tag: UInt32, InvitationRequest)
    /// Client → relay: accept an invitation, with custom data.
    case accept(tag: UInt32, InvitationID, data: [UInt8])
    /// Client → relay: reject an invitation, with custom data.
    case reject(tag: UInt32, InvitationID, data: [UInt8])
    /// Client → relay: cancel an invitation, with custom data.
    case cancel(tag: UInt32, InvitationID, data: [UInt8])
    /// Relay → client: the invite was accepted; its ID and the invitees left out as offline.
    case invited(tag: UInt32, InvitationReceipt)
    /// Relay → client: the answer or cancel was applied.
    case done(tag: UInt32, InvitationID)
    /// Relay → client: the request was refused, with the code.
    case refused(tag: UInt32, InvitationID?, InvitationError)
    /// Relay → client: an event of an invitation the client is a party of.
    case event(InvitationEvent)

    /// The request tag (0 in events).
    public var tag: UInt32 {
        switch self {
        case .invite(let tag, _), .accept(let tag, _, _), .reject(let tag, _, _), .cancel(let tag, _, _),
             .invited(let tag, _), .done(let tag, _), .refused(let tag, _, _): tag
        case .event: 0
        }
    }

    /// The message format's version byte.
    public static let version: UInt8 = 1
    /// Bytes of the fixed header before the body.
    public static let headerSize = 16
    /// Longest peer list on the wire (the book's own cap is lower by default).
    public static let maxPeersPerList = 1_024

    enum MessageType: UInt8 {
        case invite = 0x01, accept = 0x02, reject = 0x03, cancel = 0x04
        case invited = 0x81, done = 0x82, refused = 0x83
        case newInvitation = 0x90, inviteeAccepted = 0x91, inviteeRejected = 0x92
        case invitationCancelled = 0x93, invitationTimeout = 0x94
    }

    // MARK: Encoding

    /// The message as sent inside the extension frame. Throws ``InvitationWireError`` if a field exceeds what the format can carry.
    public func encoded() throws(InvitationWireError) -> [UInt8] {
        var w = InvitationWireWriter()
        switch self {
        case .invite(let tag, let request):
            w.header(.invite, flags: request.onlineUserOnly ? 1 : 0, tag: tag, id: nil)
            w.u32(request.timeoutSeconds)
            try w.optionalRoom(request.groupID)
            try w.peers(request.invitees)
            try w.data(request.data, "custom data")
        case .accept(let tag, let id, let data), .reject(let tag, let id, let data), .cancel(let tag, let id, let data):
            let type: MessageType =
                switch self {
                case .accept: .accept
                case .reject: .reject
                default: .cancel
                }
            w.header(type, tag: tag, id: id)
            try w.data(data, "custom data")
        case .invited(let tag, let receipt):
            w.header(.invited, tag: tag, id: receipt.id)
            try w.peers(receipt.skippedOffline)
        case .done(let tag, let id):
            w.header(.done, tag: tag, id: id)
        case .refused(let tag, let id, let error):
            w.header(.refused, tag: tag, id: id)
            w.u16(error.code.rawValue)
            // A message too long for its prefix is cut, never refused: the code is what matters.
            try w.data(Array(error.message.utf8.prefix(Int(UInt16.max))), "error message")
        case .event(let event):
            try Self.encode(event, into: &w)
        }
        return w.out
    }

    private static func encode(_ event: InvitationEvent, into w: inout InvitationWireWriter) throws(InvitationWireError) {
        switch event {
        case .newInvitation(let new):
            w.header(.newInvitation, id: new.id)
            try w.identifier(new.inviter.rawValue)
            try w.optionalRoom(new.groupID)
            w.u32(new.timeoutSeconds)
            try w.peers(new.invitees)
            try w.data(new.data, "custom data")
        case .inviteeAccepted(let id, let invitee, let data), .inviteeRejected(let id, let invitee, let data):
            let type: MessageType = if case .inviteeAccepted = event { .inviteeAccepted } else { .inviteeRejected }
            w.header(type, id: id)
            try w.identifier(invitee.rawValue)
            try w.data(data, "custom data")
        case .invitationCancelled(let id, let inviter, let data, let reason):
            w.header(.invitationCancelled, flags: reason.rawValue, id: id)
            try w.identifier(inviter.rawValue)
            try w.data(data, "custom data")
        case .invitationTimeout(let id, let invitees, let cause):
            w.header(.invitationTimeout, flags: cause.rawValue, id: id)
            try w.peers(invitees)
        }
    }

    // MARK: Parsing

    /// Parses a message. Throws ``InvitationWireError`` for anything malformed.
    public static func parse(_ bytes: [UInt8]) throws(InvitationWireError) -> InvitationMessage {
        let result: Result<InvitationMessage, InvitationWireError> = bytes.withUnsafeBytes { raw in
            Result { () throws(InvitationWireError) in try parse(raw) }
        }
        return try result.get()
    }

    /// Parses a message from raw bytes. Throws ``InvitationWireError`` for anything malformed.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(InvitationWireError) -> InvitationMessage {
        var r = InvitationWireReader(bytes)
        try r.need(headerSize)
        let version = try r.u8()
        guard version == Self.version else { throw .unsupportedVersion(version) }
        let rawType = try r.u8()
        guard let type = MessageType(rawValue: rawType) else { throw .unknownMessageType(rawType) }
        let flags = try r.u8()
        guard try r.u8() == 0 else { throw .reservedBitsSet }
        let tag = try r.u32()
        let id = InvitationID(rawValue: try r.u64())

        // Which flag values each type allows, and whether it carries an ID.
        let maxFlags: UInt8 = [.invite, .invitationCancelled, .invitationTimeout].contains(type) ? 1 : 0
        guard flags <= maxFlags else { throw .reservedBitsSet }
        let needsID = type != .invite && type != .refused
        guard type == .refused || (id != nil) == needsID else { throw .invalidInvitationID }
        guard type.rawValue < 0x90 || tag == 0 else { throw .reservedBitsSet }

        let message: InvitationMessage
        switch type {
        case .invite:
            let timeout = try r.u32()
            let group = try r.optionalRoom()
            let invitees = try r.peers(limit: maxPeersPerList)
            let data = try r.data()
            message = .invite(
                tag: tag, InvitationRequest(invitees: invitees, groupID: group, data: data, timeoutSeconds: timeout, onlineUserOnly: flags == 1))
        case .accept: message = .accept(tag: tag, id!, data: try r.data())
        case .reject: message = .reject(tag: tag, id!, data: try r.data())
        case .cancel: message = .cancel(tag: tag, id!, data: try r.data())
        case .invited: message = .invited(tag: tag, InvitationReceipt(id: id!, skippedOffline: try r.peers(limit: maxPeersPerList)))
        case .done: message = .done(tag: tag, id!)
        case .refused:
            let code = InvitationError.Code(rawValue: try r.u16())
            let text = String(decoding: try r.data(), as: UTF8.self)
            message = .refused(tag: tag, id, InvitationError(code, text))
        case .newInvitation:
            let inviter = try r.identifier(PeerID.self)
            let group = try r.optionalRoom()
            let timeout = try r.u32()
            let invitees = try r.peers(limit: maxPeersPerList)
            let data = try r.data()
            message = .event(
                .newInvitation(NewInvitation(id: id!, inviter: inviter, groupID: group, invitees: invitees, data: data, timeoutSeconds: timeout)))
        case .inviteeAccepted, .inviteeRejected:
            let invitee = try r.identifier(PeerID.self)
            let data = try r.data()
            message = .event(
                type == .inviteeAccepted
                    ? .inviteeAccepted(id!, invitee: invitee, data: data) : .inviteeRejected(id!, invitee: invitee, data: data))
        case .invitationCancelled:
            let inviter = try r.identifier(PeerID.self)
            let data = try r.data()
            message = .event(.invitationCancelled(id!, inviter: inviter, data: data, reason: flags == 1 ? .inviterLeft : .cancelledByInviter))
        case .invitationTimeout:
            let invitees = try r.peers(limit: maxPeersPerList)
            message = .event(.invitationTimeout(id!, invitees: invitees, cause: flags == 1 ? .inviteeLeft : .deadline))
        }
        guard r.remaining == 0 else { throw .trailingBytes(r.remaining) }
        return message
    }
}

import ConduitCore

/// Why the relay refused a join, a subscription or a frame. Each kind has its own counter in
/// `RelayStatistics/refusals`; refused frames are never relayed.
public enum RelayRefusal: UInt8, Error, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The join carried no token.
    case tokenMissing = 1
    /// The token is not `ct1.PAYLOAD.MAC` in base64url, or its payload does not parse.
    case tokenMalformed = 2
    /// The token's expiry has passed.
    case tokenExpired = 3
    /// The signature does not match: the token was altered or signed with another secret.
    case tokenTampered = 4
    /// The token's ID was already used to join.
    case tokenReplayed = 5
    /// The token is for another room than the one asked for.
    case wrongRoom = 6
    /// The token is for another peer than the one the client claims to be.
    case wrongPeer = 7
    /// The room has `maxMembers` members already.
    case roomFull = 8
    /// A frame came before the join was accepted (or after the member left).
    case notJoined = 9
    /// A client sent a relayed (kind 3) frame, claiming to be a sender.
    case forgedSender = 10
    /// Data or a session frame for a subgroup the sender is not subscribed to.
    case unjoinedSubgroup = 11
    /// A peer without the publish right tried to send.
    case receiveOnly = 12
    /// A subscription to a subgroup the token does not allow, or without the subscribe right.
    case subgroupNotAllowed = 13
    /// Data in a subgroup whose `dataSession` attribute is false.
    case subgroupWithoutDataSessions = 14
    /// A destination that is not a member (of the room, or of the session's subgroup).
    case unknownDestination = 15
    /// A frame the relay could not parse.
    case malformed = 16
    /// A second join on a link that already joined.
    case alreadyJoined = 17
    /// Too many subgroups or sessions for one member or room.
    case overLimit = 18
    /// A labeled channel declared with options other than those the label already has.
    case channelMismatch = 19
    /// The join's token is longer than the relay accepts (its `maxTokenBytes`), or its length
    /// field claims more bytes than the protocol allows.
    case tokenTooLarge = 20
    /// The relay is taking more join attempts per second than it is configured for: try again.
    case joinRateLimited = 21
    /// The relay is in a cluster whose roster (the one order of joins and leaves) did not take
    /// the join in time, e.g. while its NATS server is down: try again.
    case clusterUnavailable = 22

    public var description: String {
        switch self {
        case .tokenMissing: "tokenMissing"
        case .tokenMalformed: "tokenMalformed"
        case .tokenExpired: "tokenExpired"
        case .tokenTampered: "tokenTampered"
        case .tokenReplayed: "tokenReplayed"
        case .wrongRoom: "wrongRoom"
        case .wrongPeer: "wrongPeer"
        case .roomFull: "roomFull"
        case .notJoined: "notJoined"
        case .forgedSender: "forgedSender"
        case .unjoinedSubgroup: "unjoinedSubgroup"
        case .receiveOnly: "receiveOnly"
        case .subgroupNotAllowed: "subgroupNotAllowed"
        case .subgroupWithoutDataSessions: "subgroupWithoutDataSessions"
        case .unknownDestination: "unknownDestination"
        case .malformed: "malformed"
        case .alreadyJoined: "alreadyJoined"
        case .overLimit: "overLimit"
        case .channelMismatch: "channelMismatch"
        case .tokenTooLarge: "tokenTooLarge"
        case .joinRateLimited: "joinRateLimited"
        case .clusterUnavailable: "clusterUnavailable"
        }
    }
}

/// Why a member's time in a room ended.
public enum RelayDisconnectReason: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// The member left (client side: this side left).
    case left = 0
    /// The join was refused (see the ``RelayRefusal`` that came with it).
    case refused = 1
    /// The member's queue of reliable data reached its cap: it could not keep up, and the relay
    /// let it go rather than slow the room down.
    case slowReceiver = 2
    /// Nothing was heard from the member within the vanish timeout.
    case vanished = 3
    /// The relay is shutting down.
    case relayShutdown = 4
    /// The link to the relay closed without a goodbye.
    case transportClosed = 5
    /// The other side broke the protocol.
    case protocolError = 6
    /// The relay's cluster took the relay for gone (it was cut off from the others for longer
    /// than their silence timeout) and removed its members from the room: join again.
    case removedByCluster = 7

    public var description: String {
        switch self {
        case .left: "left"
        case .refused: "refused"
        case .slowReceiver: "slowReceiver"
        case .vanished: "vanished"
        case .relayShutdown: "relayShutdown"
        case .transportClosed: "transportClosed"
        case .protocolError: "protocolError"
        case .removedByCluster: "removedByCluster"
        }
    }
}

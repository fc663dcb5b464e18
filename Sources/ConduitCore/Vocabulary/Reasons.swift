/// The result of creating a data session (LINE Planet `DataSessionFailReason`).
public enum DataSessionFailReason: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Created.
    case none = 0
    /// An unexpected internal error, or the call is not in a state to carry sessions.
    case `internal` = 1
    /// An inbound session was requested without a `dataSessionIncoming` event for it.
    case notIncoming = 2
    /// A session with this stream ID (and subgroup) already exists in that direction.
    case alreadyExist = 3
    /// The stream ID is outside 100...999.
    case invalidId = 4
    /// The session type is not one of the four, or does not match the announced type.
    case invalidType = 5

    public var description: String {
        switch self {
        case .none: "none"
        case .internal: "internal"
        case .notIncoming: "notIncoming"
        case .alreadyExist: "alreadyExist"
        case .invalidId: "invalidId"
        case .invalidType: "invalidType"
        }
    }
}

/// Why a data session closed (LINE Planet `DataSessionClosedReason`).
public enum DataSessionCloseReason: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Ended normally: the call ended or the session was closed.
    case sessionEnd = 0
    /// An unexpected internal error.
    case `internal` = 1
    /// The peer does not support this stream ID (1:1 calls).
    case unsupported = 2
    /// Group calls across clustered relays: messages of this sender's session were lost between
    /// relays (the relays' link delivers at most once). Reported to the receivers by their relay;
    /// the sender's session goes on, and what it sends next still arrives.
    case lostBetweenRelays = 3

    public var description: String {
        switch self {
        case .sessionEnd: "sessionEnd"
        case .internal: "internal"
        case .unsupported: "unsupported"
        case .lostBetweenRelays: "lostBetweenRelays"
        }
    }
}

/// Why a call ended.
public enum DisconnectReason: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// This side hung up.
    case localHangUp = 0
    /// The peer hung up.
    case remoteHangUp = 1
    /// The transport failed or closed without a goodbye.
    case transportClosed = 2
    /// The peer spoke an incompatible protocol version or broke the protocol.
    case protocolError = 3

    public var description: String {
        switch self {
        case .localHangUp: "localHangUp"
        case .remoteHangUp: "remoteHangUp"
        case .transportClosed: "transportClosed"
        case .protocolError: "protocolError"
        }
    }
}

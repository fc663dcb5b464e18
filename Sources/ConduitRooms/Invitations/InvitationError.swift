import ConduitCore

/// Why the relay refused an invitation request. A struct with an extensible numeric code (as
/// swift-nio-http2 and `ConduitError` do), so new codes can be added, and a code this version
/// does not know still travels on the wire and prints.
public struct InvitationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A refusal's code; codes this version does not know keep their number.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }

        /// No such invitation, or the caller is not one of its parties (the two are not told
        /// apart, so that IDs cannot be probed by outsiders), or it ended so long ago that it was
        /// forgotten.
        public static let unknownInvitation = Code(rawValue: 1)
        /// The invitation is over (every invitee answered or timed out, or it was cancelled), or
        /// the caller's own part of it is (it timed out, or it left the relay). The message says which.
        public static let invitationEnded = Code(rawValue: 2)
        /// Only invitees answer; the caller is the inviter.
        public static let notInvitee = Code(rawValue: 3)
        /// Only the inviter cancels; the caller is an invitee.
        public static let notInviter = Code(rawValue: 4)
        /// The invitee already gave the other answer (accept after reject, or reject after accept).
        public static let alreadyAnswered = Code(rawValue: 5)
        /// `onlineUserOnly` was set and none of the invitees is online.
        public static let inviteesOffline = Code(rawValue: 6)
        /// The invitee list is empty.
        public static let emptyInviteeList = Code(rawValue: 7)
        /// The invitee list is longer than the relay allows.
        public static let tooManyInvitees = Code(rawValue: 8)
        /// The invitee list names a peer twice, or names the inviter.
        public static let invalidInviteeList = Code(rawValue: 9)
        /// The inviter has as many open invitations as the relay allows one peer.
        public static let tooManyInvitations = Code(rawValue: 10)
        /// The relay holds as many open invitations as it allows in total.
        public static let tableFull = Code(rawValue: 11)
        /// The custom data is larger than the relay allows.
        public static let customDataTooLarge = Code(rawValue: 12)
        /// The request could not be decoded (used in wire replies).
        public static let malformedRequest = Code(rawValue: 13)
        /// The peer's link to the relay is gone (or never joined): the request was not sent, or
        /// its reply will never come. Local only; the relay never sends it.
        public static let notConnected = Code(rawValue: 14)
        /// The invitation's home is another relay of the cluster (the inviter's), and it did not
        /// answer the forwarded request in time: the request may or may not have been applied
        /// there; the invitation's events say which.
        public static let relayUnavailable = Code(rawValue: 15)

        public var description: String {
            switch self {
            case .unknownInvitation: "unknownInvitation"
            case .invitationEnded: "invitationEnded"
            case .notInvitee: "notInvitee"
            case .notInviter: "notInviter"
            case .alreadyAnswered: "alreadyAnswered"
            case .inviteesOffline: "inviteesOffline"
            case .emptyInviteeList: "emptyInviteeList"
            case .tooManyInvitees: "tooManyInvitees"
            case .invalidInviteeList: "invalidInviteeList"
            case .tooManyInvitations: "tooManyInvitations"
            case .tableFull: "tableFull"
            case .customDataTooLarge: "customDataTooLarge"
            case .malformedRequest: "malformedRequest"
            case .notConnected: "notConnected"
            case .relayUnavailable: "relayUnavailable"
            default: "code\(rawValue)"
            }
        }
    }

    /// Why the request was refused; switch on it.
    public var code: Code
    /// For people; not parsed.
    public var message: String

    /// Makes an error with its code and a description.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

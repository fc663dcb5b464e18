/// Conduit's error: a code that callers switch on, and a message for people.
///
/// Modelled on swift-nio-http2's errors: a struct with an extensible code rather than a closed enum,
/// so that new codes can be added without breaking anyone's exhaustive `switch`.
public struct ConduitError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, as a value to compare and switch on; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// A stream ID outside 100…999.
        public static let invalidStreamID = Code("invalidStreamID")
        /// A session type the peer or the API does not know.
        public static let invalidSessionType = Code("invalidSessionType")
        /// Reliability with both `maxRetransmits` and `maxPacketLifeTime`, or a value out of range.
        public static let invalidReliability = Code("invalidReliability")
        /// A peer ID, room ID, subgroup name or label that is empty, too long or has control characters.
        public static let invalidIdentifier = Code("invalidIdentifier")
        /// A `send` larger than the session type allows (128 KiB messages, 4 MiB bytes).
        public static let messageTooLarge = Code("messageTooLarge")
        /// The session is closed; ``ConduitError/closeReason`` says why.
        public static let sessionClosed = Code("sessionClosed")
        /// Creating a session failed; ``ConduitError/failReason`` says why.
        public static let sessionCreationFailed = Code("sessionCreationFailed")
        /// The call is not connected (yet, or any more).
        public static let callNotConnected = Code("callNotConnected")
        /// A configuration key, value or option that is unknown or out of range; the message names it.
        public static let invalidConfiguration = Code("invalidConfiguration")
        /// No transport is registered for the URL's scheme.
        public static let unknownTransport = Code("unknownTransport")
        /// A host or port that cannot be used.
        public static let invalidAddress = Code("invalidAddress")
        /// Connecting failed: refused, rejected by the peer, or the relay refused the join.
        public static let connectionFailed = Code("connectionFailed")
        /// The link or call is closed.
        public static let connectionClosed = Code("connectionClosed")
        /// Something already listens at the address.
        public static let addressInUse = Code("addressInUse")
        /// The peer sent something the protocol does not allow.
        public static let protocolViolation = Code("protocolViolation")
        /// This transport (or this build, without its package trait) cannot do what was asked.
        public static let unsupportedByTransport = Code("unsupportedByTransport")
        /// An operation did not finish within its limit.
        public static let timedOut = Code("timedOut")
        /// Reliable data the peer did not acknowledge: a flush, graceful close, hang-up or leave
        /// ended (its deadline passed, or the link ended) first. The message says how many
        /// messages and link frames.
        public static let notAcknowledged = Code("notAcknowledged")

        public var description: String { name }
    }

    /// What went wrong; switch on it.
    public var code: Code
    /// A description for people, naming the value or limit involved.
    public var message: String
    /// Set with ``Code/sessionCreationFailed``.
    public var failReason: DataSessionFailReason?
    /// Set with ``Code/sessionClosed``.
    public var closeReason: DataSessionCloseReason?

    /// Makes an error with its code, message, and for session errors the fail or close reason.
    public init(
        _ code: Code,
        _ message: String,
        failReason: DataSessionFailReason? = nil,
        closeReason: DataSessionCloseReason? = nil
    ) {
        self.code = code
        self.message = message
        self.failReason = failReason
        self.closeReason = closeReason
    }

    /// The error of a session that could not be made: `sessionCreationFailed` with `reason`.
    public static func creationFailed(_ reason: DataSessionFailReason, _ message: String) -> ConduitError {
        ConduitError(.sessionCreationFailed, message, failReason: reason)
    }

    /// The error of a send on a closed session: `sessionClosed` with `reason`.
    public static func closed(_ reason: DataSessionCloseReason) -> ConduitError {
        ConduitError(.sessionClosed, "the data session is closed (\(reason))", closeReason: reason)
    }

    public var description: String { "\(code): \(message)" }
}

/// Conduit's error: a code that callers switch on, and a message for people.
///
/// Modelled on swift-nio-http2's errors: a struct with an extensible code rather than a closed enum,
/// so that new codes can be added without breaking anyone's exhaustive `switch`.
public struct ConduitError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        public static let invalidStreamID = Code("invalidStreamID")
        public static let invalidSessionType = Code("invalidSessionType")
        public static let invalidReliability = Code("invalidReliability")
        public static let invalidIdentifier = Code("invalidIdentifier")
        /// A `send` larger than the session type allows (128 KiB messages, 4 MiB bytes).
        public static let messageTooLarge = Code("messageTooLarge")
        /// The session is closed; ``ConduitError/closeReason`` says why.
        public static let sessionClosed = Code("sessionClosed")
        /// Creating a session failed; ``ConduitError/failReason`` says why.
        public static let sessionCreationFailed = Code("sessionCreationFailed")
        public static let callNotConnected = Code("callNotConnected")
        public static let invalidConfiguration = Code("invalidConfiguration")
        public static let unknownTransport = Code("unknownTransport")
        public static let invalidAddress = Code("invalidAddress")
        public static let connectionFailed = Code("connectionFailed")
        public static let connectionClosed = Code("connectionClosed")
        public static let addressInUse = Code("addressInUse")
        public static let protocolViolation = Code("protocolViolation")
        public static let unsupportedByTransport = Code("unsupportedByTransport")
        public static let timedOut = Code("timedOut")

        public var description: String { name }
    }

    public var code: Code
    public var message: String
    /// Set with ``Code/sessionCreationFailed``.
    public var failReason: DataSessionFailReason?
    /// Set with ``Code/sessionClosed``.
    public var closeReason: DataSessionCloseReason?

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

    public static func creationFailed(_ reason: DataSessionFailReason, _ message: String) -> ConduitError {
        ConduitError(.sessionCreationFailed, message, failReason: reason)
    }

    public static func closed(_ reason: DataSessionCloseReason) -> ConduitError {
        ConduitError(.sessionClosed, "the data session is closed (\(reason))", closeReason: reason)
    }

    public var description: String { "\(code): \(message)" }
}

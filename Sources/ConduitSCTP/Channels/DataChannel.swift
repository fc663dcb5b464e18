#if SCTP
public import ConduitCore
import NIOCore
import Synchronization

/// One RFC 8831 data channel on an ``SCTPAssociation``: messages of text or bytes, with the
/// channel's ordering and partial reliability. Opened by either side; closed by either side
/// (which resets its SCTP stream, RFC 8831 section 6.7, so the stream ID can be used again).
public final class DataChannel: Sendable {
    /// The largest message `send` takes (and `receive` delivers; larger ones are dropped, counted).
    public static let maxMessageSize = 256 << 10

    /// The SCTP stream the channel uses in both directions: even if the connecting side opened it, odd otherwise.
    public let streamID: UInt16
    /// The label given when the channel was opened (DCEP `Label`).
    public let label: String
    /// The subprotocol given when the channel was opened (DCEP `Protocol`); empty if none.
    public let `protocol`: String
    /// Ordering and partial reliability, from the channel type.
    public let reliability: Reliability
    /// The relative priority from the DCEP open (256: normal).
    public let priority: UInt16
    let inbox: SCTPInbox<DataChannelMessage>
    private let connection: SCTPConnection
    /// Why this end closed the channel when the app did not (a refused OPEN on its stream, an
    /// unsupported PPID); set on the loop, read by `send`.
    let closedBecause = TSanVisibleMutex<String?>(nil)

    /// Created on the stack's loop.
    init(connection: SCTPConnection, streamID: UInt16, open: DataChannelOpen) {
        self.connection = connection
        self.streamID = streamID
        self.label = open.label
        self.protocol = open.protocol
        self.reliability = open.channelType.reliability
        self.priority = open.priority
        self.inbox = SCTPInbox(maxItems: 4096, maxBytes: 8 << 20, size: { $0.bytes.count })
        let loop = connection.stack.loop
        // A cycle until the channel or its association ends (then the closure is cleared).
        inbox.setOnSpace { [connection] in loop.execute { connection.scheduleService() } }
    }

    /// Sends one message; returns once usrsctp has taken it (suspends while the send buffer is full).
    public func send(_ message: DataChannelMessage) async throws(ConduitError) {
        guard message.bytes.count <= connection.limits.maxMessageSize else {
            throw ConduitError(.messageTooLarge, "a \(message.bytes.count)-byte message exceeds the \(connection.limits.maxMessageSize)-byte limit of data channels")
        }
        if let reason = closedBecause.withLock({ $0 }) {
            throw ConduitError(.sessionClosed, "data channel \(streamID) to \(connection.remoteDescription) is closed: \(reason)")
        }
        let connection = self.connection, id = streamID
        try await connection.stack.run(.connectionClosed, "sending on data channel \(id) failed") { () -> EventLoopFuture<Void> in
            let promise = connection.stack.loop.makePromise(of: Void.self)
            connection.sendOnChannel(id, message, promise: promise)
            return promise.futureResult
        }
    }

    /// The next message, or nil once the channel is closed (by either side) and drained.
    public func receive() async -> DataChannelMessage? { await inbox.next(max: 1)?.first }

    /// Closes the channel: resets our outgoing stream; the peer resets its own in answer.
    public func close() async {
        let connection = self.connection, id = streamID
        inbox.finish(discarding: true)
        try? await connection.stack.run { connection.closeChannel(id) }
    }
}

/// A data-channel message: text or bytes (the kind travels as the SCTP PPID, RFC 8831 section 8).
public struct DataChannelMessage: Sendable, Hashable {
    /// Text or bytes, as the PPID said.
    public var kind: DataChannelMessageKind
    /// The message's bytes (UTF-8 for text).
    public var bytes: [UInt8]

    /// Makes a message of `kind` with `bytes`.
    public init(kind: DataChannelMessageKind, bytes: [UInt8]) {
        self.kind = kind
        self.bytes = bytes
    }

    /// A text message of `text`'s UTF-8.
    public static func string(_ text: String) -> DataChannelMessage { DataChannelMessage(kind: .string, bytes: Array(text.utf8)) }
    /// A binary message of `bytes`.
    public static func binary(_ bytes: [UInt8]) -> DataChannelMessage { DataChannelMessage(kind: .binary, bytes: bytes) }

    /// The text of a string message (nil for binary, or bytes that are not UTF-8).
    public var text: String? { kind == .string ? String(validating: bytes, as: UTF8.self) : nil }
}
#endif

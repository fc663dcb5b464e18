#if NATS
import ConduitCore
import CNats
import Foundation

/// A failure the NATS C client reported: its status code and text.
public struct NATSError: Error, Sendable, CustomStringConvertible {
    /// The client's `natsStatus` value.
    public let status: Int32
    /// What the client says about it, with the call that failed.
    public let text: String

    init(_ status: natsStatus, during call: String) {
        self.status = Int32(bitPattern: status.rawValue)
        self.text = "\(call): \(String(cString: natsStatus_GetText(status)))"
    }

    /// The client's status text and the call that failed.
    public var description: String { text }
}

/// One message as it arrived: its subject and a copy of its payload (made inside the client's
/// callback, before the client frees the message).
public struct NATSMessage: Sendable, Equatable {
    /// The subject it was published on.
    public let subject: String
    /// Its bytes.
    public let payload: [UInt8]
    /// Its sequence in its JetStream stream (nil for a message of NATS core).
    public var streamSequence: UInt64? = nil
    /// Its sequence among the messages its JetStream consumer delivered: 1 for the first one of
    /// each consumer (nil for a message of NATS core).
    public var consumerSequence: UInt64? = nil
}

/// A libnats object pointer handed to a thread of our own. libnats' connections are thread-safe
/// (the client locks inside), so the pointer may cross threads; who frees it is decided by the
/// lock-protected state it comes from.
struct NATSHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// A connection to a NATS server through the official C client (libnats): publish, subscribe.
///
/// The C client is thread-safe and runs its own I/O and delivery threads; this type keeps the
/// connection pointer behind a lock so that `close()` cannot race a publish. Reconnection is the
/// client's (forever, every 250 ms): publishes made while disconnected are buffered by it.
public final class NATSClient: Sendable {
    private struct State: ~Copyable {
        var connection: NATSHandle?
        var subscriptions: [NATSSubscription] = []
        var flushesInFlight = 0
    }

    private let state: TSanVisibleMutex<State>
    /// The URL it connected to.
    public let url: String

    private init(connection: NATSHandle, url: String) {
        self.state = TSanVisibleMutex(State(connection: connection))
        self.url = url
    }

    /// Connects to `url` (`nats://HOST:PORT`), waiting at most `timeout` for the server. The
    /// blocking connect runs on a thread of its own, never on the cooperative pool.
    public static func connect(to url: String, name: String = "conduit", timeout: Duration = .seconds(2)) async throws(NATSError) -> NATSClient {
        let result: Result<NATSClient, NATSError> = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: connectBlocking(url: url, name: name, timeout: timeout))
            }
        }
        return try result.get()
    }

    private static func connectBlocking(url: String, name: String, timeout: Duration) -> Result<NATSClient, NATSError> {
        var options: OpaquePointer?
        var status = natsOptions_Create(&options)
        guard status == NATS_OK, let options else { return .failure(NATSError(status, during: "natsOptions_Create")) }
        defer { natsOptions_Destroy(options) }
        let milliseconds = Self.milliseconds(timeout)
        let settings: [(String, () -> natsStatus)] = [
            ("natsOptions_SetURL", { natsOptions_SetURL(options, url) }),
            ("natsOptions_SetName", { natsOptions_SetName(options, name) }),
            ("natsOptions_SetTimeout", { natsOptions_SetTimeout(options, milliseconds) }),
            ("natsOptions_SetMaxReconnect", { natsOptions_SetMaxReconnect(options, -1) }),
            ("natsOptions_SetReconnectWait", { natsOptions_SetReconnectWait(options, 250) }),
        ]
        for (call, apply) in settings {
            status = apply()
            guard status == NATS_OK else { return .failure(NATSError(status, during: call)) }
        }
        var connection: OpaquePointer?
        status = natsConnection_Connect(&connection, options)
        guard status == NATS_OK, let connection else {
            natsConnection_Destroy(connection)
            return .failure(NATSError(status, during: "natsConnection_Connect(\(url))"))
        }
        return .success(NATSClient(connection: NATSHandle(pointer: connection), url: url))
    }

    /// Publishes `payload` on `subject`. The client buffers it and writes it from its own thread;
    /// NATS core delivers at most once, in the order one connection published.
    public func publish(_ payload: [UInt8], on subject: String) throws(NATSError) {
        let status: natsStatus = state.withLock { state in
            guard let connection = state.connection else { return NATS_CONNECTION_CLOSED }
            return payload.withUnsafeBytes { bytes in
                natsConnection_Publish(connection.pointer, subject, bytes.baseAddress, Int32(bytes.count))
            }
        }
        guard status == NATS_OK else { throw NATSError(status, during: "natsConnection_Publish(\(subject))") }
    }

    /// Waits (at most `timeout`) until the server has processed everything published so far
    /// (and so every subscription made before it is registered there).
    public func flush(timeout: Duration = .seconds(2)) async throws(NATSError) {
        // Counted in flight so that close() frees the connection only once this returned
        // (natsConnection_Close releases a blocked flush; natsConnection_Destroy waits for nobody).
        guard let handle = state.withLock({ state -> NATSHandle? in
            if state.connection != nil { state.flushesInFlight += 1 }
            return state.connection
        }) else {
            throw NATSError(NATS_CONNECTION_CLOSED, during: "natsConnection_FlushTimeout")
        }
        let status: natsStatus = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let status = natsConnection_FlushTimeout(handle.pointer, Self.milliseconds(timeout))
                self.state.withLock { $0.flushesInFlight -= 1 }
                continuation.resume(returning: status)
            }
        }
        guard status == NATS_OK else { throw NATSError(status, during: "natsConnection_FlushTimeout") }
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    /// Subscribes to `subject` (wildcards allowed). Messages arrive in the order the server sent
    /// them on the returned subscription's `messages`; at most `bufferLimit` wait there, and
    /// those beyond are dropped and counted (`NATSSubscription.dropped`), never held without bound.
    public func subscribe(to subject: String, bufferLimit: Int = 65_536) throws(NATSError) -> NATSSubscription {
        let context = NATSSubscriptionContext(bufferLimit: bufferLimit)
        let result: Result<NATSSubscription, NATSError> = state.withLock { state in
            guard let connection = state.connection else {
                return .failure(NATSError(NATS_CONNECTION_CLOSED, during: "natsConnection_Subscribe(\(subject))"))
            }
            // The client holds one reference to the context until the subscription's completion
            // callback, after its last delivery: it never calls back into freed memory.
            let closure = Unmanaged.passRetained(context).toOpaque()
            var subscription: OpaquePointer?
            let status = natsConnection_Subscribe(&subscription, connection.pointer, subject, natsDeliver, closure)
            guard status == NATS_OK, let subscription else {
                Unmanaged<NATSSubscriptionContext>.fromOpaque(closure).release()
                return .failure(NATSError(status, during: "natsConnection_Subscribe(\(subject))"))
            }
            // Without the completion callback nobody could tell when the last delivery ended:
            // should setting it fail, the reference is kept (a few bytes) rather than risk a use
            // after free.
            _ = natsSubscription_SetOnCompleteCB(subscription, natsCompleted, closure)
            let handle = NATSSubscription(subscription: NATSHandle(pointer: subscription), context: context, subject: subject)
            state.subscriptions.append(handle)
            return .success(handle)
        }
        return try result.get()
    }

    /// Runs `body` with the connection (nil once closed), under the lock that `close()` takes:
    /// the connection cannot be freed meanwhile. A subscription `body` returns is cancelled by
    /// `close()` with the client's own.
    func withConnection<Result>(_ body: (NATSHandle?) -> (Result, NATSSubscription?)) -> Result {
        state.withLock { state in
            let (result, subscription) = body(state.connection)
            if let subscription { state.subscriptions.append(subscription) }
            return result
        }
    }

    /// Unsubscribes everything, closes the connection and frees it. Idempotent.
    public func close() async {
        let (connection, subscriptions) = state.withLock { state in
            defer { state.connection = nil; state.subscriptions = [] }
            return (state.connection, state.subscriptions)
        }
        for subscription in subscriptions { subscription.cancel() }
        guard let handle = connection else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                natsConnection_Close(handle.pointer)
                while self.state.withLock({ $0.flushesInFlight }) > 0 { usleep(1_000) }
                natsConnection_Destroy(handle.pointer)
                continuation.resume()
            }
        }
    }
}

/// What the C callback reaches through its closure pointer: where messages go, and whether the
/// subscription still wants them.
final class NATSSubscriptionContext: Sendable {
    private struct State: ~Copyable {
        var continuation: AsyncStream<NATSMessage>.Continuation?
        var dropped = 0
    }

    private let state: TSanVisibleMutex<State>
    let messages: AsyncStream<NATSMessage>

    init(bufferLimit: Int) {
        let (messages, continuation) = AsyncStream.makeStream(of: NATSMessage.self, bufferingPolicy: .bufferingOldest(bufferLimit))
        self.messages = messages
        self.state = TSanVisibleMutex(State(continuation: continuation))
    }

    /// Hands a message on, unless the subscription was cancelled; a full buffer counts a drop.
    func deliver(_ message: NATSMessage) {
        state.withLock { state in
            guard let continuation = state.continuation else { return }
            if case .dropped = continuation.yield(message) { state.dropped += 1 }
        }
    }

    var dropped: Int { state.withLock { $0.dropped } }

    /// A message without what the subscription needs (a stream message without its metadata):
    /// counted as dropped.
    func noteUnreadable() {
        state.withLock { $0.dropped += 1 }
    }

    func finish() {
        let continuation = state.withLock { state in
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.finish()
    }
}

/// Called on the client's delivery thread: copies the message out, frees it, hands the copy on.
/// Captures nothing (a C function pointer); its context comes through `closure`.
let natsDeliver: natsMsgHandler = { _, _, message, closure in
    defer { natsMsg_Destroy(message) }
    guard let message, let closure else { return }
    let context = Unmanaged<NATSSubscriptionContext>.fromOpaque(closure).takeUnretainedValue()
    let subject = natsMsg_GetSubject(message).map { String(cString: $0) } ?? ""
    let count = Int(natsMsg_GetDataLength(message))
    let payload: [UInt8] = count > 0 ? natsMsg_GetData(message).map {
        Array(UnsafeRawBufferPointer(start: UnsafeRawPointer($0), count: count))
    } ?? [] : []
    context.deliver(NATSMessage(subject: subject, payload: payload))
}

/// Called once the subscription closed and its last delivery returned: drops the client's reference.
let natsCompleted: natsOnCompleteCB = { closure in
    guard let closure else { return }
    Unmanaged<NATSSubscriptionContext>.fromOpaque(closure).release()
}

/// A subscription: its messages as an async sequence, and how many were dropped for a full buffer.
public final class NATSSubscription: Sendable {
    private let handle: TSanVisibleMutex<NATSHandle?>
    private let context: NATSSubscriptionContext
    /// The subject (or wildcard) subscribed to.
    public let subject: String

    init(subscription: NATSHandle, context: NATSSubscriptionContext, subject: String) {
        self.handle = TSanVisibleMutex(subscription)
        self.context = context
        self.subject = subject
    }

    /// The messages, in the order they arrived; finishes when the subscription is cancelled.
    public var messages: AsyncStream<NATSMessage> { context.messages }

    /// Messages dropped because `messages` held `bufferLimit` unread ones.
    public var dropped: Int { context.dropped }

    /// Unsubscribes and frees the subscription; `messages` finishes. Idempotent.
    public func cancel() {
        let subscription = handle.withLock { handle in
            defer { handle = nil }
            return handle
        }
        context.finish()
        guard let subscription else { return }
        _ = natsSubscription_Unsubscribe(subscription.pointer)
        natsSubscription_Destroy(subscription.pointer)
    }
}
#endif

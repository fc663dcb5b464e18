#if NATS
import ConduitCore
import CNats
import Foundation

/// JetStream on a ``NATSClient``'s connection (libnats' `jsCtx`): a stream that keeps what is
/// published on its subjects, publishing into it with an acknowledgement, and an ordered consumer
/// that reads it from the start in the stream's order. What the relay roster needs, nothing more.
///
/// Every call that waits for the server blocks its thread, so the async ones run on a thread of
/// their own, never on the cooperative pool.
public final class NATSJetStream: Sendable {
    private struct State: ~Copyable {
        var context: NATSHandle?
        /// Calls running on threads of their own: `close()` waits for them before freeing.
        var callsInFlight = 0
    }

    private let client: NATSClient
    private let state: TSanVisibleMutex<State>

    /// JetStream on `client`'s connection. Fails only if the client is closed or out of memory:
    /// whether the server has JetStream shows with the first request (``addStream(named:subjects:)``).
    public init(client: NATSClient) throws(NATSError) {
        let result: Result<NATSHandle, NATSError> = client.withConnection { connection in
            guard let connection else { return (.failure(NATSError(NATS_CONNECTION_CLOSED, during: "natsConnection_JetStream")), nil) }
            var context: OpaquePointer?
            let status = natsConnection_JetStream(&context, connection.pointer, nil)
            guard status == NATS_OK, let context else { return (.failure(NATSError(status, during: "natsConnection_JetStream")), nil) }
            return (.success(NATSHandle(pointer: context)), nil)
        }
        self.client = client
        self.state = TSanVisibleMutex(State(context: try result.get()))
    }

    /// Makes the stream `name` on `subjects` (file storage, kept until removed), or finds it made
    /// already (by another relay; its subjects are then made `subjects`, for a stream made by an
    /// earlier version). Fails if the server has no JetStream.
    public func addStream(named name: String, subjects: [String]) async throws(NATSError) {
        let wanted = subjects
        let status: natsStatus = await onThread { context -> natsStatus in
            var config = jsStreamConfig()
            jsStreamConfig_Init(&config)
            var errorCode = jsErrCode(rawValue: 0)
            return name.withCString { name in
                let subjectStrings = subjects.map { strdup($0) }
                defer { subjectStrings.forEach { free($0) } }
                var pointers: [UnsafePointer<CChar>?] = subjectStrings.map { UnsafePointer($0) }
                return pointers.withUnsafeMutableBufferPointer { subjects in
                    config.Name = name
                    config.Subjects = subjects.baseAddress
                    config.SubjectsLen = Int32(subjects.count)
                    config.Storage = js_FileStorage
                    let status = js_AddStream(nil, context.pointer, &config, nil, &errorCode)
                    guard errorCode == JSStreamNameExistErr else { return status }
                    // Made already: that is the stream. Only its subjects are made these (its
                    // other settings, an operator's included, stay).
                    var info: UnsafeMutablePointer<jsStreamInfo>?
                    let found = js_GetStreamInfo(&info, context.pointer, name, nil, &errorCode)
                    defer { jsStreamInfo_Destroy(info) }
                    guard found == NATS_OK, let existing = info?.pointee.Config else { return found == NATS_OK ? NATS_ERR : found }
                    let (ownSubjects, ownCount) = (existing.pointee.Subjects, existing.pointee.SubjectsLen)
                    let current = (0..<Int(ownCount)).compactMap { index in ownSubjects?[index].map { String(cString: $0) } }
                    guard current != wanted else { return NATS_OK }
                    // (The info's own list goes back before it is freed.)
                    defer { (existing.pointee.Subjects, existing.pointee.SubjectsLen) = (ownSubjects, ownCount) }
                    existing.pointee.Subjects = subjects.baseAddress
                    existing.pointee.SubjectsLen = Int32(subjects.count)
                    return js_UpdateStream(nil, context.pointer, existing, nil, &errorCode)
                }
            }
        } ?? NATS_CONNECTION_CLOSED
        guard status == NATS_OK else { throw NATSError(status, during: "js_AddStream(\(name))") }
    }

    /// Publishes `payload` on `subject` and waits (at most `timeout`) for the stream to store it;
    /// returns its sequence there. `messageID` makes a retry of the same message a duplicate the
    /// stream drops (within its duplicate window, 2 minutes by default).
    public func publish(_ payload: [UInt8], on subject: String, messageID: String, timeout: Duration = .seconds(2)) async throws(NATSError) -> UInt64 {
        let milliseconds = NATSClient.milliseconds(timeout)
        let (status, sequence) = await onThread { context -> (natsStatus, UInt64) in
            var options = jsPubOptions()
            jsPubOptions_Init(&options)
            options.MaxWait = milliseconds
            var acknowledgement: UnsafeMutablePointer<jsPubAck>?
            let status = messageID.withCString { id in
                options.MsgId = id
                return payload.withUnsafeBytes { bytes in
                    js_Publish(&acknowledgement, context.pointer, subject, bytes.baseAddress, Int32(bytes.count), &options, nil)
                }
            }
            defer { jsPubAck_Destroy(acknowledgement) }
            return (status, acknowledgement?.pointee.Sequence ?? 0)
        } ?? (NATS_CONNECTION_CLOSED, 0)
        guard status == NATS_OK else { throw NATSError(status, during: "js_Publish(\(subject))") }
        return sequence
    }

    /// Reads `subject`'s stream in the stream's order, from its first message or from
    /// `startSequence`, through an ordered consumer (the client recreates it past the last message
    /// taken after a reconnect, so nothing is skipped or repeated). Each message carries its
    /// stream sequence, and its consumer sequence: 1, 2, 3… for each consumer the client makes, so
    /// a jump in the stream sequence between consecutive ones is messages removed from the stream. At most `bufferLimit` wait unread; those beyond are dropped and counted
    /// (`NATSSubscription.dropped`). Waits for the server to make the consumer, on a thread of its own.
    public func subscribeOrdered(to subject: String, from startSequence: UInt64? = nil, bufferLimit: Int = 65_536) async throws(NATSError) -> NATSSubscription {
        let messageContext = NATSSubscriptionContext(bufferLimit: bufferLimit)
        let closure = UnsafeSendable(Unmanaged.passRetained(messageContext).toOpaque())
        let (status, handle) = await onThread { context -> (natsStatus, NATSHandle?) in
            var options = jsSubOptions()
            jsSubOptions_Init(&options)
            options.Ordered = true
            if let startSequence {
                options.Config.DeliverPolicy = js_DeliverByStartSequence
                options.Config.OptStartSeq = startSequence
            }
            var subscription: OpaquePointer?
            let status = js_Subscribe(&subscription, context.pointer, subject, natsDeliverFromStream, closure.value, nil, &options, nil)
            guard status == NATS_OK, let subscription else { return (status == NATS_OK ? NATS_ERR : status, nil) }
            _ = natsSubscription_SetOnCompleteCB(subscription, natsCompleted, closure.value)
            return (NATS_OK, NATSHandle(pointer: subscription))
        } ?? (NATS_CONNECTION_CLOSED, nil)
        guard let handle else {
            Unmanaged<NATSSubscriptionContext>.fromOpaque(closure.value).release()
            throw NATSError(status, during: "js_Subscribe(\(subject))")
        }
        let subscription = NATSSubscription(subscription: handle, context: messageContext, subject: subject)
        // Cancelled with the client's own subscriptions, before its connection goes.
        client.withConnection { _ in ((), subscription) }
        return subscription
    }

    /// Removes the messages on `subject` before the stream sequence `before` from the stream
    /// `stream`.
    public func purge(stream: String, subject: String, before: UInt64) async throws(NATSError) {
        let status: natsStatus = await onThread { context -> natsStatus in
            var options = jsOptions()
            jsOptions_Init(&options)
            options.Stream.Purge.Sequence = before
            var errorCode = jsErrCode(rawValue: 0)
            return subject.withCString { subject in
                options.Stream.Purge.Subject = subject
                return js_PurgeStream(context.pointer, stream, &options, &errorCode)
            }
        } ?? NATS_CONNECTION_CLOSED
        guard status == NATS_OK else { throw NATSError(status, during: "js_PurgeStream(\(stream), \(subject))") }
    }

    /// How many messages the stream `stream` holds, and its first and last sequences.
    public func state(ofStream stream: String) async throws(NATSError) -> (messages: UInt64, first: UInt64, last: UInt64) {
        let (status, state) = await onThread { context -> (natsStatus, (UInt64, UInt64, UInt64)) in
            var info: UnsafeMutablePointer<jsStreamInfo>?
            var errorCode = jsErrCode(rawValue: 0)
            let status = js_GetStreamInfo(&info, context.pointer, stream, nil, &errorCode)
            defer { jsStreamInfo_Destroy(info) }
            guard status == NATS_OK, let info else { return (status == NATS_OK ? NATS_ERR : status, (0, 0, 0)) }
            return (NATS_OK, (info.pointee.State.Msgs, info.pointee.State.FirstSeq, info.pointee.State.LastSeq))
        } ?? (NATS_CONNECTION_CLOSED, (0, 0, 0))
        guard status == NATS_OK else { throw NATSError(status, during: "js_GetStreamInfo(\(stream))") }
        return state
    }

    /// Frees the JetStream context (its subscriptions are cancelled by the client's `close()`),
    /// once the calls in flight returned. Call before closing the client. Idempotent.
    public func close() {
        let context = state.withLock { state in
            defer { state.context = nil }
            return state.context
        }
        guard let context else { return }
        while state.withLock({ $0.callsInFlight }) > 0 { usleep(1_000) }
        jsCtx_Destroy(context.pointer)
    }

    /// Runs `body` with the context on a thread of its own (it blocks on the server); nil once closed.
    private func onThread<Result: Sendable>(_ body: @escaping @Sendable (NATSHandle) -> Result) async -> Result? {
        guard let context = state.withLock({ state -> NATSHandle? in
            if state.context != nil { state.callsInFlight += 1 }
            return state.context
        }) else { return nil }
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let result = body(context)
                self.state.withLock { $0.callsInFlight -= 1 }
                continuation.resume(returning: result)
            }
        }
    }
}

/// A C pointer handed to a thread of our own (the subscription's context, retained for the client).
struct UnsafeSendable: @unchecked Sendable {
    let value: UnsafeMutableRawPointer
    init(_ value: UnsafeMutableRawPointer) { self.value = value }
}

/// Called on the client's delivery thread for a stream's message: copies it out with its stream
/// and consumer sequences, frees it, hands the copy on (flow-control and heartbeat messages of the ordered
/// consumer are the client's own and never reach here).
let natsDeliverFromStream: natsMsgHandler = { _, _, message, closure in
    defer { natsMsg_Destroy(message) }
    guard let message, let closure else { return }
    let context = Unmanaged<NATSSubscriptionContext>.fromOpaque(closure).takeUnretainedValue()
    var metadata: UnsafeMutablePointer<jsMsgMetaData>?
    guard natsMsg_GetMetaData(&metadata, message) == NATS_OK, let metadata else { return context.noteUnreadable() }
    let sequence = metadata.pointee.Sequence.Stream
    let delivered = metadata.pointee.Sequence.Consumer
    jsMsgMetaData_Destroy(metadata)
    let subject = natsMsg_GetSubject(message).map { String(cString: $0) } ?? ""
    let count = Int(natsMsg_GetDataLength(message))
    let payload: [UInt8] = count > 0 ? natsMsg_GetData(message).map {
        Array(UnsafeRawBufferPointer(start: UnsafeRawPointer($0), count: count))
    } ?? [] : []
    context.deliver(NATSMessage(subject: subject, payload: payload, streamSequence: sequence, consumerSequence: delivered))
}
#endif

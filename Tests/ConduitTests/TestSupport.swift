import Conduit
import ConduitTesting
import ConduitCore
import Testing
import ConduitLoopback
import ConduitImpairment

// MARK: - Deterministic payloads

/// Seeded payloads come from the core's generator, so every run sends the same bytes.
typealias SplitMix64 = SeededRandom

// MARK: - Bounded waiting

struct TimedOut: Error, CustomStringConvertible {
    let what: String
    let limit: Duration
    let sourceLocation: SourceLocation
    var description: String { "timed out after \(limit) waiting for \(what) (\(sourceLocation))" }
}

/// Resumes a continuation exactly once, from whichever side finishes first.
private final class Race<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var result: Result<T, any Error>?
        var onTimeout: (@Sendable () -> Void)?
    }

    private let state = TSanVisibleMutex(State())

    func install(_ continuation: CheckedContinuation<T, any Error>) {
        let ready: Result<T, any Error>? = state.withLock { state in
            if let result = state.result { return result }
            state.continuation = continuation
            return nil
        }
        if let ready { continuation.resume(with: ready) }
    }

    /// True if this call decided the race.
    @discardableResult
    func finish(_ result: Result<T, any Error>) -> Bool {
        let (won, continuation): (Bool, CheckedContinuation<T, any Error>?) = state.withLock { state in
            guard state.result == nil else { return (false, nil) }
            state.result = result
            defer { state.continuation = nil }
            return (true, state.continuation)
        }
        continuation?.resume(with: result)
        return won
    }
}

/// Runs `body`, throwing ``TimedOut`` if it has not finished within `limit`. The body runs in an
/// unstructured task, so even an operation that ignores cancellation cannot hang the test.
func within<T: Sendable>(
    _ what: String,
    limit: Duration = .seconds(10),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = Race<T>()
    let work = Task {
        let result: Result<T, any Error>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        race.finish(result)
    }
    let timer = Task {
        try? await Task.sleep(for: limit)
        guard !Task.isCancelled else { return }
        if race.finish(.failure(TimedOut(what: what, limit: limit, sourceLocation: sourceLocation))) { work.cancel() }
    }
    defer { timer.cancel() }
    return try await withCheckedThrowingContinuation { race.install($0) }
}

/// Polls `condition` (cheaply, every few milliseconds) until it holds, within `limit`.
func waitUntil(
    _ what: String,
    limit: Duration = .seconds(10),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: @escaping @Sendable () async -> Bool
) async throws {
    try await within(what, limit: limit, sourceLocation: sourceLocation) {
        while await !condition() { try await Task.sleep(for: .milliseconds(2)) }
    }
}

/// The next element of an event stream, or nil if it finished.
func next<Stream: AsyncSequence & Sendable>(
    _ stream: Stream,
    _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> Stream.Element? where Stream.Failure == Never, Stream.Element: Sendable {
    try await within(what, sourceLocation: sourceLocation) {
        var iterator = stream.makeAsyncIterator()
        return await iterator.next(isolation: nil)
    }
}

/// The next event of an inbound session, or nil once its channel finished.
func next(
    _ session: InboundDataSession,
    _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> InboundDataSession.Event? {
    try await next(session.events, what, sourceLocation: sourceLocation)
}

/// Every remaining element of a stream, until it finishes.
func drain<Stream: AsyncSequence & Sendable>(
    _ stream: Stream,
    _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [Stream.Element] where Stream.Failure == Never, Stream.Element: Sendable {
    try await within(what, sourceLocation: sourceLocation) {
        var all: [Stream.Element] = []
        for await element in stream { all.append(element) }
        return all
    }
}

/// Every remaining event of an inbound session, until its channel finishes.
func drain(
    _ session: InboundDataSession,
    _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [InboundDataSession.Event] {
    try await within(what, limit: .seconds(20), sourceLocation: sourceLocation) {
        var all: [InboundDataSession.Event] = []
        for await event in session.events { all.append(event) }
        return all
    }
}

/// Expects `body` to throw a ``ConduitError`` and returns it (nil, with an issue, if it did not).
func conduitError(
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws(ConduitError) -> Void
) async -> ConduitError? {
    do throws(ConduitError) {
        try await body()
        Issue.record("expected a ConduitError, but the operation succeeded", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

// MARK: - Calls

extension ConduitConfiguration {
    /// Defaults with the rate cap off, as every test uses except the flow-control ones.
    ///
    /// Two timers are also pushed out of reach, so that what a test observes cannot depend on how
    /// the scheduler treats it on a loaded machine: an incomplete unreliable message is never
    /// dropped for waiting (the loopback loses nothing, so every message completes), and a few
    /// queued bytes never raise `tooLongQueuedData` however long the pump is kept from running.
    static var testDefaults: ConduitConfiguration {
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        configuration.reassembly.incompleteTimeout = .seconds(3_600)
        configuration.queueDelayOn = .seconds(3_600)
        return configuration
    }
}

/// One call between "alice" (caller) and "bob" (callee) on a loopback hub of its own.
struct CallPair {
    let runtime: ConduitRuntime
    let listener: CallListener
    let caller: Call
    let callee: Call

    /// Listens on `loopback://NAME[?query]` and connects to it. `calleeConfiguration` defaults to
    /// `configuration`; both runtimes share one registry, hence one hub.
    static func connect(
        _ name: String,
        query: String = "",
        configuration: ConduitConfiguration = .testDefaults,
        calleeConfiguration: ConduitConfiguration? = nil,
        clock: VirtualClock? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> CallPair {
        let url = "loopback://\(name)\(query)"
        // On a virtual clock the loopback "network" runs on it too (an impaired path's delays).
        let registry = clock.map { TransportRegistry([LoopbackTransport(hub: LoopbackHub(clock: $0))]) } ?? .defaults
        var callerRuntime = ConduitRuntime(configuration: configuration, registry: registry)
        callerRuntime.clock = clock
        let runtime = callerRuntime
        var calleeRuntime = runtime
        calleeRuntime.configuration = calleeConfiguration ?? configuration
        let listener = try await calleeRuntime.listen(on: url, as: "bob")
        do {
            let (caller, callee) = try await within("the call to \(url) to connect", limit: .seconds(10), sourceLocation: sourceLocation) {
                async let accepted = listener.accept()
                let caller = try await runtime.connect(to: url, as: "alice")
                guard let callee = try await accepted else { throw ConduitError(.connectionFailed, "the listener closed") }
                return (caller, callee)
            }
            return CallPair(runtime: runtime, listener: listener, caller: caller, callee: callee)
        } catch {
            await listener.close()
            throw error
        }
    }

    /// Hangs up (if not already) and closes the listener.
    func finish(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let caller = caller, callee = callee, listener = listener
        try await within("the call to end", limit: .seconds(10), sourceLocation: sourceLocation) {
            await caller.hangUp()
            await callee.hangUp()
            await listener.close()
        }
    }

    /// Makes an outbound session on `from`, waits for the peer's `dataSessionIncoming` for it
    /// (skipping `.connected`), and makes the matching inbound session.
    func open(
        _ streamID: StreamID,
        _ type: SessionType,
        from sender: Call,
        to receiver: Call,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (OutboundDataSession, InboundDataSession) {
        let outbound = try await sender.makeOutboundDataSession(streamID: streamID, type: type)
        try await CallPair.awaitIncoming(streamID, type, on: receiver, sourceLocation: sourceLocation)
        let inbound = try await receiver.makeInboundDataSession(streamID: streamID, expecting: type)
        return (outbound, inbound)
    }

    func open(_ streamID: StreamID, _ type: SessionType, sourceLocation: SourceLocation = #_sourceLocation) async throws -> (OutboundDataSession, InboundDataSession) {
        try await open(streamID, type, from: caller, to: callee, sourceLocation: sourceLocation)
    }

    /// Reads `call`'s events until `dataSessionIncoming`, which must be for `streamID` and `type`.
    static func awaitIncoming(_ streamID: StreamID, _ type: SessionType, on call: Call, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        while true {
            let event = try #require(try await next(call.events, "dataSessionIncoming for \(streamID)", sourceLocation: sourceLocation), sourceLocation: sourceLocation)
            switch event {
            case .connected:
                continue
            case .dataSessionIncoming(let id, let subgroup, let announced):
                #expect(id == streamID, sourceLocation: sourceLocation)
                #expect(subgroup == nil, sourceLocation: sourceLocation)
                #expect(announced == type, sourceLocation: sourceLocation)
                return
            case .disconnected(let reason):
                Issue.record("the call ended (\(reason)) while waiting for stream \(streamID)", sourceLocation: sourceLocation)
                throw ConduitError(.connectionClosed, "call ended")
            case .eventsDropped(let count):
                Issue.record("\(count) call events were dropped while waiting for stream \(streamID)", sourceLocation: sourceLocation)
                throw ConduitError(.protocolViolation, "events dropped")
            }
        }
    }
}

extension InboundDataSession.Event {
    var message: InboundDataSession.Message? {
        if case .message(let message) = self { return message }
        return nil
    }

    var fragment: ReceivedFragment? {
        if case .fragment(let fragment) = self { return fragment }
        return nil
    }

    var closeReason: DataSessionCloseReason? {
        if case .closed(let reason) = self { return reason }
        return nil
    }
}

/// Reads `count` events that must all be messages.
func readMessages(
    _ count: Int,
    from session: InboundDataSession,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> [InboundDataSession.Message] {
    try await within("\(count) messages on stream \(session.streamID)", limit: .seconds(20), sourceLocation: sourceLocation) {
        var messages: [InboundDataSession.Message] = []
        while messages.count < count {
            guard let event = await session.events.next() else {
                Issue.record("stream \(session.streamID) finished after \(messages.count) of \(count) messages", sourceLocation: sourceLocation)
                break
            }
            guard let message = event.message else {
                Issue.record("expected a message on stream \(session.streamID), got \(event)", sourceLocation: sourceLocation)
                break
            }
            messages.append(message)
        }
        return messages
    }
}

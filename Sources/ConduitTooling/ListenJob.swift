package import Conduit
import ConduitCore

/// What `conduit listen` does: accept one call, receive and verify seeded messages on every data
/// session the caller opens, optionally echo them back, and report.
///
/// It answers every `dataSessionIncoming` with an inbound session and receives on all of them
/// concurrently. Message types are verified per message; bytes types are rebuilt with a
/// `FragmentAggregator` first. With ``Options/echo`` it opens an outbound session of the same
/// stream ID and type back to the caller when the first message of a stream arrives, and sends
/// every received message back with its timestamp (each echo is awaited, so the caller's pace
/// follows the echo path's backpressure).
///
/// It stops when ``Options/expect`` valid messages have arrived (then, echoing, it closes the echo
/// sessions gracefully and waits until they report `.closed`, so everything echoed was delivered),
/// when the caller hangs up (after draining what the sessions still hold), or at the timeout,
/// which bounds the whole job from the moment it listens. It then hangs up.
package struct ListenJob: Sendable {
    package struct Options: Sendable, Hashable {
        package var echo: Bool
        /// Stop once this many distinct valid messages arrived; `missing` counts the shortfall.
        package var expect: Int?
        /// Bounds the whole job, from listening to the report.
        package var timeout: Duration
        /// The name this side answers calls as.
        package var peer: PeerID

        package init(echo: Bool = false, expect: Int? = nil, timeout: Duration = .seconds(30), peer: PeerID = "listener") {
            self.echo = echo
            self.expect = expect
            self.timeout = timeout
            self.peer = peer
        }
    }

    package var runtime: ConduitRuntime
    package var url: String
    package var options: Options

    package init(runtime: ConduitRuntime, url: String, options: Options = .init()) {
        self.runtime = runtime
        self.url = url
        self.options = options
    }

    /// Listens, calls `onListening` with the bound URL (for example `udp://127.0.0.1:40123`) before
    /// accepting, and returns the report. Throws if it cannot listen (bad URL, address in use).
    package func run(onListening: @Sendable (String) -> Void = { _ in }) async throws(ConduitError) -> ListenReport {
        if let expect = options.expect, expect < 0 {
            throw ConduitError(.invalidConfiguration, "expect must not be negative (got \(expect))")
        }
        let deadline = ContinuousClock.now.advanced(by: options.timeout)
        let listener = try await runtime.listen(on: url, as: options.peer)
        let boundURL = listener.url.description
        onListening(boundURL)
        let tally = ListenTally(expect: options.expect)

        let acceptWatchdog = Watchdog(deadline: deadline) { await listener.close() }
        let call = try? await listener.accept()
        acceptWatchdog.cancel()
        await listener.close()  // one call per job
        guard let call else {
            return tally.report(url: boundURL, remotePeer: nil, ended: .timeout)
        }

        let watchdog = Watchdog(deadline: deadline) { await call.hangUp() }
        let ended = await receive(on: call, tally: tally, deadline: deadline)
        await call.hangUp()
        watchdog.cancel()
        return tally.report(url: boundURL, remotePeer: call.remotePeer, ended: watchdog.hasFired && ended != .expected ? .timeout : ended)
    }

    private enum Signal: Sendable {
        case incoming(StreamID, SessionType)
        case hungUp
        case sessionEnded
        case expected
        case timeout
    }

    /// Receives until the expected count, the caller's hang-up (and drained sessions), or the
    /// deadline. Child tasks end when the call is hung up (the caller's or ours), at the latest.
    private func receive(on call: Call, tally: ListenTally, deadline: ContinuousClock.Instant) async -> ListenReport.Ending {
        let (signals, signal) = AsyncStream.makeStream(of: Signal.self)
        let echo = options.echo
        if tally.expectationMet { return .expected }
        return await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in call.events {
                    switch event {
                    // At most 900 stream IDs announce themselves, fewer than the 1,024 events held.
                    case .connected, .eventsDropped: continue
                    case .dataSessionIncoming(let streamID, _, let type): signal.yield(.incoming(streamID, type))
                    case .disconnected: signal.yield(.hungUp)
                    }
                }
                signal.yield(.hungUp)
            }
            group.addTask {
                try? await Task.sleep(until: deadline, clock: .continuous)
                if !Task.isCancelled { signal.yield(.timeout) }
            }
            var active = 0
            var hungUp = false
            var ending = ListenReport.Ending.timeout
            loop: for await next in signals {
                switch next {
                case .incoming(let streamID, let type):
                    guard !hungUp, let inbound = try? await call.makeInboundDataSession(streamID: streamID, expecting: type) else {
                        tally.noteRefusedSession()
                        continue
                    }
                    active += 1
                    group.addTask {
                        await Self.receive(inbound, on: call, echo: echo, tally: tally) { signal.yield(.expected) }
                        signal.yield(.sessionEnded)
                    }
                case .sessionEnded:
                    active -= 1
                    if hungUp, active == 0 { ending = .hangUp; break loop }
                case .hungUp:
                    hungUp = true
                    if active == 0 { ending = .hangUp; break loop }
                case .expected:
                    ending = .expected
                    break loop
                case .timeout:
                    ending = .timeout
                    break loop
                }
            }
            signal.finish()
            group.cancelAll()
            if ending == .expected, echo {
                // Close gracefully: what was echoed still reaches the caller, then `.closed` comes.
                // Closing also wakes an echo `send` waiting for room, so every child can end.
                let sessions = tally.echoSessions
                for session in sessions { await session.close() }
                for session in sessions { _ = await closeReason(of: session, before: deadline) }
            }
            return ending
        }
    }

    /// One inbound session: verify each message, echo it, count it.
    private static func receive(
        _ inbound: InboundDataSession,
        on call: Call,
        echo: Bool,
        tally: ListenTally,
        expectationMet: @Sendable () -> Void
    ) async {
        let streamID = inbound.streamID
        let type = inbound.type
        var aggregator = type.isMessage ? nil : FragmentAggregator(streamID: streamID, sessionType: type)
        var echoSession: OutboundDataSession?
        var echoFailed = false
        tally.open(streamID, type: type)

        func handle(_ bytes: [UInt8], timestamp: UInt64) async {
            tally.received(on: streamID, bytes: bytes, timestamp: timestamp)
            if echo, !echoFailed {
                do throws(ConduitError) {
                    if echoSession == nil {
                        let session = try await call.makeOutboundDataSession(streamID: streamID, type: type)
                        tally.addEchoSession(session)
                        echoSession = session
                    }
                    try await echoSession?.send(bytes, timestamp: timestamp)
                    tally.echoed(on: streamID)
                } catch {
                    echoFailed = true
                    tally.echoFailed(on: streamID)
                }
            }
            // Counted as met only after its echo is queued, so closing the echo session delivers it.
            if tally.checkExpectation() { expectationMet() }
        }

        while let event = await inbound.events.next() {
            switch event {
            case .message(let message):
                await handle(message.bytes, timestamp: message.timestamp)
            case .fragment(let fragment):
                if let whole = aggregator?.add(fragment, now: .zero) {
                    await handle(whole.bytes, timestamp: whole.timestamp)
                }
            case .closed:
                return
            }
        }
    }
}

/// What `conduit listen` reports (`--json` prints it with sorted keys).
package struct ListenReport: Sendable, Codable, Hashable {
    /// Why the job ended.
    package enum Ending: String, Sendable, Codable, Hashable {
        /// `expect` valid messages arrived.
        case expected
        /// The caller hung up (and every session was drained).
        case hangUp
        /// The timeout passed first (with or without a caller).
        case timeout
    }

    /// Per stream ID.
    package struct Stream: Sendable, Codable, Hashable {
        package var type: String
        package var received: Int
        package var bytes: Int
        package var duplicates: Int
        package var outOfOrder: Int
        package var corrupted: Int
        package var echoed: Int
        package var echoFailed: Bool
    }

    /// The URL listened on, as bound (a port chosen by the system is filled in).
    package var url: String
    /// The transport's scheme, e.g. `loopback`, `udp`.
    package var transport: String
    /// Who called, if anyone did.
    package var peer: String?
    package var ended: Ending
    /// Messages received on every stream (bytes types: whole sends rebuilt), valid or not.
    package var received: Int
    /// Payload bytes of those messages.
    package var bytes: Int
    /// Distinct messages whose content verified (ok or out of order).
    package var valid: Int
    package var duplicates: Int
    package var outOfOrder: Int
    package var corrupted: Int
    /// `expect` minus `valid` (not below 0); 0 without `expect`.
    package var missing: Int
    /// The `expect` given, if any.
    package var expected: Int?
    /// From the first message received to the last.
    package var elapsedSeconds: Double
    /// `bytes` over `elapsedSeconds`.
    package var throughputBytesPerSecond: Double
    /// Payload bytes received in each 100 ms from the first message on (the first minute): how
    /// fast the rate ramps up and whether it holds.
    package var bytesPer100Milliseconds: [Int]
    /// Messages sent back (with `echo`).
    package var echoed: Int
    /// Incoming sessions that could not be made (for example announced after the caller hung up).
    package var refusedSessions: Int
    /// Keyed by stream ID.
    package var streams: [String: Stream]
}

/// The listen job's shared counters: every receiving task records here.
final class ListenTally: Sendable {
    private struct StreamState {
        var type: SessionType
        var verifier = PayloadVerifier()
        var echoed = 0
        var echoFailed = false
    }

    private struct State {
        var streams: [StreamID: StreamState] = [:]
        var first: ContinuousClock.Instant?
        var last: ContinuousClock.Instant?
        var timeline: [Int] = []
        var echoSessions: [OutboundDataSession] = []
        var refused = 0
        var signalled = false
    }

    private let state = TSanVisibleMutex(State())
    let expect: Int?

    init(expect: Int?) { self.expect = expect }

    /// The report's timeline: 100 ms steps over the first minute.
    static let timelineStep = Duration.milliseconds(100)
    static let timelineBuckets = 600

    func open(_ streamID: StreamID, type: SessionType) {
        state.withLock { $0.streams[streamID] = StreamState(type: type) }
    }

    func received(on streamID: StreamID, bytes: [UInt8], timestamp: UInt64) {
        let now = ContinuousClock.now
        state.withLock { state in
            if state.first == nil { state.first = now }
            state.last = now
            let bucket = Int(state.first!.duration(to: now) / Self.timelineStep)
            if bucket < Self.timelineBuckets {
                if state.timeline.count <= bucket { state.timeline.append(contentsOf: repeatElement(0, count: bucket + 1 - state.timeline.count)) }
                state.timeline[bucket] += bytes.count
            }
            _ = state.streams[streamID]?.verifier.classify(bytes, timestamp: timestamp)
        }
    }

    func echoed(on streamID: StreamID) { state.withLock { $0.streams[streamID]?.echoed += 1 } }
    func echoFailed(on streamID: StreamID) { state.withLock { $0.streams[streamID]?.echoFailed = true } }
    func addEchoSession(_ session: OutboundDataSession) { state.withLock { $0.echoSessions.append(session) } }
    func noteRefusedSession() { state.withLock { $0.refused += 1 } }
    var echoSessions: [OutboundDataSession] { state.withLock { $0.echoSessions } }

    var expectationMet: Bool {
        guard let expect else { return false }
        return state.withLock { state in state.streams.values.reduce(0) { $0 + $1.verifier.counts.valid } >= expect }
    }

    /// True exactly once: the first time the valid count reaches `expect`.
    func checkExpectation() -> Bool {
        guard let expect else { return false }
        return state.withLock { state in
            guard !state.signalled, state.streams.values.reduce(0, { $0 + $1.verifier.counts.valid }) >= expect else { return false }
            state.signalled = true
            return true
        }
    }

    func report(url: String, remotePeer: PeerID?, ended: ListenReport.Ending) -> ListenReport {
        state.withLock { state in
            var total = PayloadVerifier.Counts()
            var echoed = 0
            var streams: [String: ListenReport.Stream] = [:]
            for (id, stream) in state.streams {
                let counts = stream.verifier.counts
                total.received += counts.received
                total.bytes += counts.bytes
                total.ok += counts.ok
                total.duplicates += counts.duplicates
                total.outOfOrder += counts.outOfOrder
                total.corrupted += counts.corrupted
                echoed += stream.echoed
                streams[id.description] = ListenReport.Stream(
                    type: stream.type.name, received: counts.received, bytes: counts.bytes, duplicates: counts.duplicates,
                    outOfOrder: counts.outOfOrder, corrupted: counts.corrupted, echoed: stream.echoed, echoFailed: stream.echoFailed
                )
            }
            let elapsed = state.first.flatMap { first in state.last.map { (first.duration(to: $0)).inSeconds } } ?? 0
            return ListenReport(
                url: url,
                transport: JobArguments.scheme(of: url),
                peer: remotePeer?.rawValue,
                ended: ended,
                received: total.received,
                bytes: total.bytes,
                valid: total.valid,
                duplicates: total.duplicates,
                outOfOrder: total.outOfOrder,
                corrupted: total.corrupted,
                missing: expect.map { max(0, $0 - total.valid) } ?? 0,
                expected: expect,
                elapsedSeconds: elapsed,
                throughputBytesPerSecond: throughput(bytes: total.bytes, seconds: elapsed),
                bytesPer100Milliseconds: state.timeline,
                echoed: echoed,
                refusedSessions: state.refused,
                streams: streams
            )
        }
    }
}

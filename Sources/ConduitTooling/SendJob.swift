package import Conduit
import ConduitCore

/// What `conduit send` does: call a listener, open one outbound session, send `count` seeded
/// messages (see ``SeededPayload``), and report.
///
/// Each `send` is awaited, so the job runs at the pace the rate cap and the session's queue allow.
/// Without ``Options/verifyEcho`` it then closes the session gracefully and waits for
/// `.closed(.sessionEnd)`, which comes once the receiver has everything, and hangs up. With it, it
/// answers the peer's `dataSessionIncoming` for the same stream ID with an inbound session,
/// checks every echoed message against what was sent for its seq, and ends once every message
/// came back. The timeout bounds the whole job; when it passes, the job hangs up and reports what
/// it got (``SendReport/timedOut``).
package struct SendJob: Sendable {
    package struct Options: Sendable, Hashable {
        package var url: String
        package var streamID: StreamID
        package var type: SessionType
        package var count: Int
        /// Message lengths, drawn log-uniformly from this range per message.
        package var sizes: ClosedRange<Int>
        /// Becomes the runtime's `rateLimit` for this job.
        package var rate: RateLimit
        /// Kept in the report; transports that understand labels will use it later.
        package var label: String?
        /// Kept in the report; transports that understand subprotocols will use it later.
        package var protocolName: String?
        package var seed: UInt32
        package var verifyEcho: Bool
        /// Bounds the whole job, connecting included.
        package var timeout: Duration
        /// The name this side calls as.
        package var peer: PeerID

        package init(
            url: String,
            streamID: StreamID,
            type: SessionType,
            count: Int = 100,
            sizes: ClosedRange<Int> = 1...1024,
            rate: RateLimit = .unlimited,
            label: String? = nil,
            protocolName: String? = nil,
            seed: UInt32 = 1,
            verifyEcho: Bool = false,
            timeout: Duration = .seconds(30),
            peer: PeerID = "sender"
        ) {
            self.url = url
            self.streamID = streamID
            self.type = type
            self.count = count
            self.sizes = sizes
            self.rate = rate
            self.label = label
            self.protocolName = protocolName
            self.seed = seed
            self.verifyEcho = verifyEcho
            self.timeout = timeout
            self.peer = peer
        }

        /// Refuses what the contract refuses, with the error `send` itself would give.
        package func validate() throws(ConduitError) {
            _ = try StreamID.validated(streamID.rawValue)
            guard count >= 0, count <= Int(UInt32.max) else {
                throw ConduitError(.invalidConfiguration, "count must be in 0...\(UInt32.max) (got \(count))")
            }
            guard sizes.lowerBound >= 0 else {
                throw ConduitError(.invalidConfiguration, "sizes must not be negative")
            }
            guard sizes.upperBound <= type.maxSendSize else {
                throw ConduitError(.messageTooLarge, "size \(sizes.upperBound) exceeds the \(type.maxSendSize)-byte limit of one \(type) send")
            }
            guard timeout > .zero else { throw ConduitError(.invalidConfiguration, "timeout must be positive") }
        }
    }

    package var runtime: ConduitRuntime
    package var options: Options

    /// `runtime`'s rate limit is replaced by ``Options/rate``.
    package init(runtime: ConduitRuntime, options: Options) {
        self.runtime = runtime
        self.options = options
    }

    /// Sends and returns the report. Throws on bad options, an unreachable peer
    /// (`connectionFailed` or `timedOut`, naming the URL), a refused session, or a session that
    /// closed under it (for example `unsupported` by the peer).
    package func run() async throws(ConduitError) -> SendReport {
        try options.validate()
        let options = options
        let deadline = ContinuousClock.now.advanced(by: options.timeout)
        var runtime = runtime
        runtime.configuration.rateLimit = options.rate
        runtime.configuration.connectTimeout = min(runtime.configuration.connectTimeout, options.timeout)

        let call: Call
        do throws(ConduitError) {
            call = try await runtime.connect(to: options.url, as: options.peer)
        } catch where error.code == .connectionFailed || error.code == .timedOut || error.code == .connectionClosed {
            throw ConduitError(error.code, "cannot reach \(options.url): \(error.message)")
        }
        let watchdog = Watchdog(deadline: deadline) { await call.hangUp() }
        defer { watchdog.cancel() }
        let echoes = EchoTally(options: options)

        let outcome: Result<(sent: Int, bytes: Int, start: ContinuousClock.Instant?), ConduitError> = await withTaskGroup(of: Void.self) { group in
            if options.verifyEcho {
                group.addTask { await Self.collectEchoes(on: call, options: options, tally: echoes) }
            }
            defer { group.cancelAll() }
            do throws(ConduitError) {
                let session = try await call.makeOutboundDataSession(streamID: options.streamID, type: options.type)
                var sent = 0
                var bytes = 0
                var start: ContinuousClock.Instant?
                for index in 0..<options.count {
                    let message = SeededPayload.message(seed: options.seed, seq: UInt32(index), sizes: options.sizes)
                    if start == nil { start = .now }
                    do throws(ConduitError) {
                        try await session.send(message.bytes, timestamp: message.timestamp)
                    } catch {
                        if watchdog.hasFired { break }  // the timeout hung up: report what went out
                        if error.code == .sessionClosed, error.closeReason == .sessionEnd, await call.isEnded {
                            throw ConduitError(.connectionClosed, "the peer ended the call after \(sent) of \(options.count) messages")
                        }
                        throw error
                    }
                    sent += 1
                    bytes += message.bytes.count
                }
                if options.verifyEcho {
                    await echoes.waitForAll(sent)
                    await session.close()
                } else if options.type.isReliable, !watchdog.hasFired {
                    // Done only when the peer has acknowledged every message: else exit non-zero.
                    try await session.close(timeout: max(ContinuousClock.now.duration(to: deadline), .zero))
                } else {
                    await session.close()
                    let reason = await closeReason(of: session, before: deadline)
                    if let reason, reason != .sessionEnd, !watchdog.hasFired {
                        throw ConduitError.closed(reason)
                    }
                }
                return .success((sent, bytes, start))
            } catch {
                return .failure(error)
            }
        }
        let end = ContinuousClock.now
        let linkMTU = await call.linkStatistics?.mtu
        // The goodbye waits for what is unacknowledged only until the job's deadline.
        var ending: ConduitError?
        do throws(ConduitError) { try await call.hangUp(timeout: max(ContinuousClock.now.duration(to: deadline), .zero)) } catch { ending = error }
        let (sent, bytes, start) = try outcome.get()
        if let ending, options.type.isReliable, !watchdog.hasFired { throw ending }
        let elapsed = start.map { $0.duration(to: end).inSeconds } ?? 0
        let counts = echoes.counts
        return SendReport(
            url: options.url,
            transport: JobArguments.scheme(of: options.url),
            stream: options.streamID.rawValue,
            type: options.type.name,
            label: options.label,
            protocol: options.protocolName,
            seed: options.seed,
            rate: options.rate.description,
            count: options.count,
            sent: sent,
            bytes: bytes,
            elapsedSeconds: elapsed,
            throughputBytesPerSecond: throughput(bytes: bytes, seconds: elapsed),
            verifyEcho: options.verifyEcho,
            echoed: counts.echoed,
            echoMismatches: counts.mismatches,
            echoDuplicates: counts.duplicates,
            timedOut: watchdog.hasFired,
            linkMTU: linkMTU
        )
    }

    /// Answers the echo stream's `dataSessionIncoming` and checks what comes back on it.
    private static func collectEchoes(on call: Call, options: Options, tally: EchoTally) async {
        events: for await event in call.events {
            guard case .dataSessionIncoming(let streamID, _, let type) = event else {
                if case .disconnected = event { break events }
                continue
            }
            guard streamID == options.streamID, type == options.type,
                let inbound = try? await call.makeInboundDataSession(streamID: streamID, expecting: type)
            else {
                await call.unsupportInboundDataSession(streamID: streamID)
                continue
            }
            var aggregator = type.isMessage ? nil : FragmentAggregator(streamID: streamID, sessionType: type)
            receiving: while let event = await inbound.events.next() {
                switch event {
                case .message(let message): tally.check(message.bytes, timestamp: message.timestamp)
                case .fragment(let fragment):
                    if let whole = aggregator?.add(fragment) { tally.check(whole.bytes, timestamp: whole.timestamp) }
                case .closed: break receiving
                }
            }
            // The echo session ended (the listener closed it once done): no more echoes come.
            break events
        }
        tally.finish()
    }
}

/// What `conduit send` reports (`--json` prints it with sorted keys).
package struct SendReport: Sendable, Codable, Hashable {
    package var url: String
    /// The transport's scheme, e.g. `loopback`, `udp`.
    package var transport: String
    package var stream: Int
    package var type: String
    package var label: String?
    package var `protocol`: String?
    package var seed: UInt32
    /// The rate cap the session ran under.
    package var rate: String
    /// Messages asked for.
    package var count: Int
    /// Messages accepted by `send`.
    package var sent: Int
    /// Payload bytes of those.
    package var bytes: Int
    /// From the first send until the receiver had everything: the session's graceful close
    /// completed, or (with verify-echo) the last echo arrived.
    package var elapsedSeconds: Double
    package var throughputBytesPerSecond: Double
    package var verifyEcho: Bool
    /// Distinct messages echoed back byte for byte.
    package var echoed: Int
    /// Echoes that differ from what was sent for their seq, or name a seq or seed never sent.
    package var echoMismatches: Int
    /// Echoes of a seq already echoed.
    package var echoDuplicates: Int
    /// The timeout passed before the job finished.
    package var timedOut: Bool
    /// The link's datagram size when the job ended (path MTU discovery moves it); nil for a
    /// transport without one.
    package var linkMTU: Int?
}

/// Echo verification state, shared by the echo reader and the sender.
final class EchoTally: Sendable {
    struct Counts {
        var echoed = 0
        var mismatches = 0
        var duplicates = 0
    }

    private struct State {
        var counts = Counts()
        var seen: Set<UInt32> = []
        var finished = false
        var target: Int?
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = TSanVisibleMutex(State())
    private let seed: UInt32
    private let count: Int
    private let sizes: ClosedRange<Int>

    init(options: SendJob.Options) {
        seed = options.seed
        count = options.count
        sizes = options.sizes
    }

    var counts: Counts { state.withLock { $0.counts } }

    /// An echo must be exactly message `seq` of this run, as ``SeededPayload`` builds it.
    func check(_ bytes: [UInt8], timestamp: UInt64) {
        let (seed, seq) = SeededPayload.decode(timestamp: timestamp)
        let intact = seed == self.seed && Int(seq) < count
            && bytes.count == SeededPayload.size(seed: seed, seq: seq, in: sizes)
            && SeededPayload.matches(bytes, timestamp: timestamp)
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if !intact {
                state.counts.mismatches += 1
            } else if !state.seen.insert(seq).inserted {
                state.counts.duplicates += 1
            } else {
                state.counts.echoed += 1
            }
            return Self.takeWaiterIfDone(&state)
        }
        waiter?.resume()
    }

    /// No more echoes will come (the call ended).
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.finished = true
            return Self.takeWaiterIfDone(&state)
        }
        waiter?.resume()
    }

    /// Returns once `target` messages were echoed, or no more echoes can come. The job's watchdog
    /// hangs the call up at the deadline, which ends the echo reader and so this wait.
    func waitForAll(_ target: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                state.target = target
                if state.finished || state.counts.echoed >= target { return true }
                state.waiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    private static func takeWaiterIfDone(_ state: inout State) -> CheckedContinuation<Void, Never>? {
        guard let waiter = state.waiter, let target = state.target, state.finished || state.counts.echoed >= target else { return nil }
        state.waiter = nil
        return waiter
    }
}

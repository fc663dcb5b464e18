package import Conduit
import ConduitCore

/// One-way latency of one bench cell at a fixed, moderate rate (not flat out, where latency is
/// only queueing): a listener and a sender in this process on the cell's transport, messages of
/// the cell's size sent on an absolute schedule, each carrying its send instant (nanoseconds on
/// the process's continuous clock since the run began) as its message timestamp. The receiver
/// reads the same clock when the whole message is delivered to it, so each sample is the true
/// send-to-delivery time through the API, transport and back, with no clock offset to estimate.
///
/// Under load (`--latency-under-load`), a bulk transfer runs on the same call for the whole
/// measurement: a `reliableBytes` session at low priority, uncapped, kept full, while the timed
/// messages go on a high-priority session. The figures then show how long a small message waits
/// behind bulk data (head-of-line blocking between sessions), beside the bulk's own throughput.
package struct BenchLatency: Sendable {
    package struct Options: Sendable, Hashable {
        /// Messages per cell; 0 turns the measurement off.
        package var messages: Int
        /// Messages per second.
        package var rate: Int
        /// Runs a bulk transfer on the same call meanwhile (see the type's comment).
        package var underLoad: Bool

        package init(messages: Int = 200, rate: Int = 200, underLoad: Bool = false) {
            self.messages = messages
            self.rate = rate
            self.underLoad = underLoad
        }
    }

    /// Percentiles of the delivered messages, in microseconds (nearest rank).
    package struct Figures: Sendable, Hashable {
        package var samples: Int
        package var p50Micros: Double
        package var p99Micros: Double
        /// Under load: the bulk transfer's payload MB/s (10^6 bytes) delivered meanwhile.
        package var bulkMegabytesPerSecond: Double?

        /// Nil when there are no samples.
        package init?(microseconds values: [Double]) {
            guard !values.isEmpty else { return nil }
            let sorted = values.sorted()
            func rank(_ p: Double) -> Double { sorted[max(0, min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1))] }
            samples = sorted.count
            p50Micros = rank(0.50)
            p99Micros = rank(0.99)
        }
    }

    package var runtime: ConduitRuntime
    package var options: Options

    package init(runtime: ConduitRuntime, options: Options) {
        self.runtime = runtime
        self.options = options
    }

    /// Measures one cell. Reliable types must deliver every message; unreliable ones may lose some
    /// (the figures cover what arrived).
    package func run(transport: String, type: SessionType, size: Int, timeout: Duration) async throws(ConduitError) -> Figures? {
        guard options.messages > 0 else { return nil }
        guard options.rate > 0 else { throw ConduitError(.invalidConfiguration, "latency rate must be positive (got \(options.rate))") }
        let count = options.messages
        let deadline = ContinuousClock.now.advanced(by: timeout)
        let origin = ContinuousClock.now
        let samples = Samples(expected: count)

        let listener = try await runtime.listen(on: transport, as: "bench-latency-listener")
        let receiving = Task {
            guard let call = try? await listener.accept() else { return }
            await listener.close()
            await Self.receive(on: call, samples: samples, origin: origin)
            await call.hangUp()
        }
        let watchdog = Watchdog(deadline: deadline) {
            receiving.cancel()
            await listener.close()
            samples.finish()
        }
        defer { watchdog.cancel() }

        let call: Call
        do throws(ConduitError) {
            call = try await runtime.connect(to: listener.url.description, as: "bench-latency-sender")
        } catch {
            receiving.cancel()
            await listener.close()
            throw error
        }
        do throws(ConduitError) {
            let session = try await call.makeOutboundDataSession(
                streamID: Self.pingStream, type: type, options: .init(priority: options.underLoad ? .high : .low))
            let bulk = options.underLoad ? try await Self.startBulk(on: call) : nil
            defer { bulk?.cancel() }
            let payload = [UInt8](repeating: 0xA5, count: size)
            let interval = Duration.nanoseconds(1_000_000_000 / Int64(options.rate))
            let start = ContinuousClock.now
            for index in 0..<count where !watchdog.hasFired {
                try? await Task.sleep(until: start + interval * index, clock: .continuous)
                let sentAt = UInt64(origin.duration(to: .now).benchNanoseconds)
                try await session.send(payload, timestamp: sentAt)
            }
            // Reliable types deliver everything; unreliable ones get a short grace for stragglers.
            await samples.waitForAll(until: type.isReliable ? deadline : min(deadline, .now + .seconds(1)))
            samples.endBulk()
            await session.close()
        } catch {
            await call.hangUp()
            receiving.cancel()
            throw error
        }
        await call.hangUp()
        receiving.cancel()
        let values = samples.values
        if type.isReliable, values.count < count, !watchdog.hasFired {
            throw ConduitError(.protocolViolation, "latency run on \(transport): \(values.count) of \(count) reliable messages arrived")
        }
        var figures = Figures(microseconds: values)
        if options.underLoad { figures?.bulkMegabytesPerSecond = samples.bulkMegabytesPerSecond }
        return figures
    }

    static let pingStream: StreamID = 101
    static let bulkStream: StreamID = 102

    /// Keeps a low-priority, uncapped bulk session full until cancelled (then closes it, which
    /// also wakes a send waiting for room).
    private static func startBulk(on call: Call) async throws(ConduitError) -> Task<Void, Never> {
        let bulk = try await call.makeOutboundDataSession(
            streamID: bulkStream, type: .reliableBytes, options: .init(priority: .low, rateLimit: .unlimited))
        let chunk = [UInt8](repeating: 0x5A, count: 64 * 1_024)
        let sending = Task {
            while !Task.isCancelled {
                do throws(ConduitError) { try await bulk.send(chunk) } catch { return }
            }
        }
        return Task {
            await withTaskCancellationHandler {
                await sending.value
            } onCancel: {
                sending.cancel()
                Task { await bulk.close() }
            }
        }
    }

    /// Reads the timed session (and, under load, counts the bulk one's bytes) until the call ends.
    private static func receive(on call: Call, samples: Samples, origin: ContinuousClock.Instant) async {
        await withTaskGroup(of: Void.self) { group in
            for await event in call.events {
                guard case .dataSessionIncoming(let streamID, _, let type) = event else {
                    if case .disconnected = event { break }
                    continue
                }
                guard let inbound = try? await call.makeInboundDataSession(streamID: streamID, expecting: type) else { continue }
                if streamID == bulkStream {
                    group.addTask { await countBulk(inbound, samples: samples) }
                } else {
                    group.addTask { await receivePings(inbound, type: type, samples: samples, origin: origin) }
                }
            }
        }
    }

    private static func countBulk(_ inbound: InboundDataSession, samples: Samples) async {
        while let event = await inbound.events.next() {
            guard case .fragment(let fragment) = event else { return }
            samples.addBulk(bytes: fragment.bytes.count)
        }
    }

    private static func receivePings(_ inbound: InboundDataSession, type: SessionType, samples: Samples, origin: ContinuousClock.Instant) async {
        var aggregator = type.isMessage ? nil : FragmentAggregator(streamID: inbound.streamID, sessionType: type)
        while let event = await inbound.events.next() {
            let timestamp: UInt64
            switch event {
            case .message(let message): timestamp = message.timestamp
            case .fragment(let fragment):
                guard let whole = aggregator?.add(fragment, now: .zero) else { continue }
                timestamp = whole.timestamp
            case .closed: return
            }
            let now = UInt64(origin.duration(to: .now).benchNanoseconds)
            samples.add(microseconds: Double(now &- timestamp) / 1_000)
        }
    }

    /// The receiver's samples, bounded by the number of messages sent, and the bulk's bytes.
    private final class Samples: Sendable {
        private struct State {
            var values: [Double] = []
            var finished = false
            var bulkBytes = 0
            var bulkStart: ContinuousClock.Instant?
            var bulkEnd: ContinuousClock.Instant?
        }
        private let state = TSanVisibleMutex(State())
        private let expected: Int

        init(expected: Int) {
            self.expected = expected
        }

        func add(microseconds: Double) {
            state.withLock { if $0.values.count < expected { $0.values.append(microseconds) } }
        }

        /// Counts bulk bytes delivered until ``endBulk()`` (the measurement's window).
        func addBulk(bytes: Int) {
            state.withLock { state in
                guard state.bulkEnd == nil else { return }
                if state.bulkStart == nil { state.bulkStart = .now }
                state.bulkBytes += bytes
            }
        }

        func endBulk() { state.withLock { if $0.bulkEnd == nil { $0.bulkEnd = .now } } }

        var bulkMegabytesPerSecond: Double? {
            state.withLock { state in
                guard let start = state.bulkStart, let end = state.bulkEnd, end > start else { return nil }
                let (seconds, attoseconds) = (end - start).components
                return Double(state.bulkBytes) / 1e6 / (Double(seconds) + Double(attoseconds) / 1e18)
            }
        }

        func finish() { state.withLock { $0.finished = true } }

        var values: [Double] { state.withLock { $0.values } }

        func waitForAll(until deadline: ContinuousClock.Instant) async {
            while ContinuousClock.now < deadline {
                if state.withLock({ $0.values.count >= expected || $0.finished }) { return }
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
    }
}

package import Conduit
import ConduitCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The receiving end of a latency measurement: listens on the cell's transport, accepts one call,
/// and turns each timed message into a sample (delivery instant minus the send instant the
/// message carries as its timestamp); under load it also counts the bulk session's bytes.
/// `conduit bench` runs it in this process or, with `--latency-peer process`, in a child
/// process (`BenchLatencyPeer`), so the two ends of the call share no event loop.
package final class BenchLatencyReceiver: Sendable {
    /// The URL the listener bound (port 0 resolved).
    package let url: String
    private let listener: CallListener
    private let samples: Samples
    private let receiving: Task<Void, Never>

    /// Starts listening; the call is accepted in the background.
    package init(runtime: ConduitRuntime, transport: String, expected: Int) async throws(ConduitError) {
        let listener = try await runtime.listen(on: transport, as: "bench-latency-listener")
        let samples = Samples(expected: expected)
        self.listener = listener
        self.samples = samples
        url = listener.url.description
        receiving = Task {
            guard let call = try? await listener.accept() else { return samples.finish() }
            await listener.close()
            await Self.receive(on: call, samples: samples)
            samples.finish()
            await call.hangUp()
        }
    }

    /// Waits until every expected sample arrived, the call ended, or `deadline`; then closes the
    /// bulk window (the bulk rate covers the pings' span) and returns what arrived.
    package func result(until deadline: ContinuousClock.Instant) async -> (values: [Double], bulkMegabytesPerSecond: Double?) {
        await samples.waitForAll(until: deadline)
        samples.endBulk()
        return (samples.values, samples.bulkMegabytesPerSecond)
    }

    /// Waits (until `deadline`) for the call to end, so the peer's goodbye is answered.
    package func waitForHangUp(until deadline: ContinuousClock.Instant) async {
        await samples.waitForFinish(until: deadline)
    }

    package func stop() async {
        receiving.cancel()
        await listener.close()
        samples.finish()
    }

    /// Nanoseconds on CLOCK_MONOTONIC: one clock for the whole host, so instants read in a child
    /// process compare with ours, and no clock offset needs estimating.
    package static func monotonicNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    /// Reads the timed session (and, under load, counts the bulk one's bytes) until the call ends.
    private static func receive(on call: Call, samples: Samples) async {
        await withTaskGroup(of: Void.self) { group in
            for await event in call.events {
                guard case .dataSessionIncoming(let streamID, _, let type) = event else {
                    if case .disconnected = event { break }
                    continue
                }
                guard let inbound = try? await call.makeInboundDataSession(streamID: streamID, expecting: type) else { continue }
                if streamID == BenchLatency.bulkStream {
                    group.addTask { await countBulk(inbound, samples: samples) }
                } else {
                    group.addTask { await receivePings(inbound, type: type, samples: samples) }
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

    private static func receivePings(_ inbound: InboundDataSession, type: SessionType, samples: Samples) async {
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
            samples.add(microseconds: Double(monotonicNanoseconds() &- timestamp) / 1_000)
        }
    }

    /// The samples, bounded by the number of messages sent, and the bulk's bytes.
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

        func waitForFinish(until deadline: ContinuousClock.Instant) async {
            while ContinuousClock.now < deadline, !state.withLock({ $0.finished }) {
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
    }
}

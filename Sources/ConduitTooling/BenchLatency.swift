package import Conduit
import ConduitCore

/// One-way latency of one bench cell at a fixed, moderate rate (not flat out, where latency is
/// only queueing): a listener (``BenchLatencyReceiver``, in this process or a child one, see
/// ``Peer``) and a sender on the cell's transport, messages of the cell's size sent on an
/// absolute schedule, each carrying its send instant (nanoseconds on the host's monotonic clock)
/// as its message timestamp. The receiver reads the same clock when the whole message is
/// delivered to it, so each sample is the true send-to-delivery time through the API, transport
/// and back, with no clock offset to estimate.
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
        /// Where the receiving end runs.
        package var peer: Peer

        package init(messages: Int = 200, rate: Int = 200, underLoad: Bool = false, peer: Peer = .inProcess) {
            self.messages = messages
            self.rate = rate
            self.underLoad = underLoad
            self.peer = peer
        }
    }

    /// Percentiles of the delivered messages, in microseconds (nearest rank).
    package struct Figures: Sendable, Hashable, Codable {
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

    /// Where the receiving end of the call runs.
    package enum Peer: Sendable, Hashable {
        /// In this process, on the same runtime: on `sctp+udp://` both ends then share the
        /// process's one usrsctp stack and its event loop thread.
        case inProcess
        /// In a child process, `executable bench-latency-peer` (see ``BenchLatencyPeer``), as the
        /// two ends of a call are in practice: each has its own stack, loop and thread pool.
        case process(executable: String)
    }

    /// What the receiving end reports: how many timed messages arrived, and their figures.
    package struct Outcome: Sendable, Hashable, Codable {
        package var received: Int
        package var figures: Figures?

        package init(values: [Double], bulkMegabytesPerSecond: Double?) {
            received = values.count
            figures = Figures(microseconds: values)
            figures?.bulkMegabytesPerSecond = bulkMegabytesPerSecond
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
        let receiver: any BenchLatencyEnd
        switch options.peer {
        case .inProcess: receiver = try await InProcessEnd(BenchLatencyReceiver(runtime: runtime, transport: transport, expected: count))
        case .process(let executable): receiver = try await BenchLatencyPeer(executable: executable, transport: transport, expected: count, timeout: timeout)
        }
        let watchdog = Watchdog(deadline: deadline, expire: receiver.abandon())
        defer { watchdog.cancel() }

        let call: Call
        do throws(ConduitError) {
            call = try await runtime.connect(to: receiver.url, as: "bench-latency-sender")
        } catch {
            await receiver.stop()
            throw error
        }
        var outcome: Outcome?
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
                try await session.send(payload, timestamp: BenchLatencyReceiver.monotonicNanoseconds())
            }
            // Reliable types deliver everything; unreliable ones get a short grace for stragglers.
            outcome = await receiver.outcome(until: type.isReliable ? deadline : min(deadline, .now + .seconds(1)))
            bulk?.cancel()
            await session.close()
        } catch {
            await call.hangUp()
            await receiver.stop()
            throw error
        }
        await call.hangUp()
        // A child that was still waiting for lost unreliable messages reports once the call ends.
        if outcome == nil { outcome = await receiver.outcome(until: .now + .seconds(5)) }
        await receiver.stop()
        guard let outcome else {
            throw ConduitError(.protocolViolation, "latency run on \(transport): the receiving end reported nothing")
        }
        if type.isReliable, outcome.received < count, !watchdog.hasFired {
            throw ConduitError(.protocolViolation, "latency run on \(transport): \(outcome.received) of \(count) reliable messages arrived")
        }
        return outcome.figures
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
}

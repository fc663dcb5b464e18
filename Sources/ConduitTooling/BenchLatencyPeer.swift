package import Conduit
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The receiving end of a latency run, as the sender sees it.
protocol BenchLatencyEnd: AnyObject {
    var url: String { get }
    /// The outcome once every timed message arrived or the call ended; nil if not by `deadline`.
    func outcome(until deadline: ContinuousClock.Instant) async -> BenchLatency.Outcome?
    /// What the run's watchdog does when time is up: end the receiving side, so waits return.
    func abandon() -> @Sendable () async -> Void
    func stop() async
}

final class InProcessEnd: BenchLatencyEnd {
    private let receiver: BenchLatencyReceiver

    init(_ receiver: BenchLatencyReceiver) { self.receiver = receiver }

    var url: String { receiver.url }

    func outcome(until deadline: ContinuousClock.Instant) async -> BenchLatency.Outcome? {
        let result = await receiver.result(until: deadline)
        return BenchLatency.Outcome(values: result.values, bulkMegabytesPerSecond: result.bulkMegabytesPerSecond)
    }

    func abandon() -> @Sendable () async -> Void { { [receiver] in await receiver.stop() } }

    func stop() async { await receiver.stop() }
}

/// The receiving end in a child process: `conduit bench-latency-peer --listen URL --messages N
/// --seconds S`, which prints `latency peer listening on URL` once bound and, once every timed
/// message arrived or the call ended, `latency peer result JSON` (a ``BenchLatency/Outcome``);
/// then it waits for the call's end and exits, unless the sender, done with it, kills it first.
package final class BenchLatencyPeer: BenchLatencyEnd {
    private let process: ChildProcess
    let url: String
    private static let listening = "latency peer listening on "
    private static let result = "latency peer result "

    init(executable: String, transport: String, expected: Int, timeout: Duration) async throws(ConduitError) {
        let seconds = max(1, timeout.components.seconds)
        process = try ChildProcess(path: executable, arguments: [
            "bench-latency-peer", "--listen", transport, "--messages", "\(expected)", "--seconds", "\(seconds)",
        ])
        guard let url = await process.waitForLine(until: .now + .seconds(30), { line in
            line.hasPrefix(Self.listening) ? String(line.dropFirst(Self.listening.count)) : nil
        }) else {
            let output = process.text().suffix(500)
            process.kill()
            throw ConduitError(.connectionFailed, "the latency peer (\(executable) bench-latency-peer) did not start: \(output)")
        }
        self.url = url
    }

    func outcome(until deadline: ContinuousClock.Instant) async -> BenchLatency.Outcome? {
        await process.waitForLine(until: deadline) { line in
            guard line.hasPrefix(Self.result) else { return nil }
            return try? JSONDecoder().decode(BenchLatency.Outcome.self, from: Data(line.dropFirst(Self.result.count).utf8))
        }
    }

    func abandon() -> @Sendable () async -> Void {
        let pid = process.pid
        return { _ = kill(pid, SIGKILL) }
    }

    /// Ends the child (SIGKILL, reaped): called once the call is hung up, when it has reported
    /// all it will, so there is nothing to wait for.
    func stop() async {
        process.kill()
    }

    /// The child's side: receives one call on `transport`, calls `report` with the
    /// ``BenchLatency/Outcome`` once every timed message arrived or the call ended, then waits for
    /// the call to end (or `timeout`).
    package static func serve(
        runtime: ConduitRuntime, transport: String, expected: Int, timeout: Duration,
        announce: (String) -> Void, report: (String) -> Void
    ) async throws(ConduitError) {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        let receiver = try await BenchLatencyReceiver(runtime: runtime, transport: transport, expected: expected)
        announce(listening + receiver.url)
        let result = await receiver.result(until: deadline)
        let outcome = BenchLatency.Outcome(values: result.values, bulkMegabytesPerSecond: result.bulkMegabytesPerSecond)
        guard let json = try? JSONEncoder().encode(outcome) else {
            await receiver.stop()
            throw ConduitError(.protocolViolation, "the latency outcome could not be encoded")
        }
        report(Self.result + String(decoding: json, as: UTF8.self))
        await receiver.waitForHangUp(until: deadline)
        await receiver.stop()
    }
}

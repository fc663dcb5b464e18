import ArgumentParser
import ConduitCore
import ConduitTooling
import Foundation

/// `conduit bench --join-storm URL`: join attempts with a bad token against a running relay's
/// `udp://` listener, each a real new link from a source port of its own (see `JoinStorm`).
struct BenchJoinStormOptions: ParsableArguments {
    @Option(name: .customLong("join-storm"), help: "Storm a relay instead: join attempts with a bad token against this udp://IPv4:PORT, each a new link (cookie handshake, join, refusal, BYE) from a pool of sockets on this host; prints the achieved rate and what came back. Run the relay with --max-links-per-address and --handshakes-per-address raised, or its listener limits refuse most attempts from one host (as they should).")
    var url: String?

    @Option(name: .customLong("storm-rate"), help: "Join storm: attempts started per second.")
    var rate = 5_000

    @Option(name: .customLong("storm-seconds"), help: "Join storm: how long it runs.")
    var seconds = 10.0

    @Option(name: .customLong("storm-junk"), help: "Join storm: junk datagrams (random bytes) sent beside the attempts, spread over the storm.")
    var junk = 0

    @Option(name: .customLong("storm-sockets"), help: "Join storm: sockets (source ports) in the pool, bounding attempts in flight.")
    var sockets = 2_048

    @Flag(name: .customLong("storm-yields-cpu"), help: "Join storm: run at the lowest CPU priority (SCHED_IDLE), so the storm takes only CPU time the relay and its members leave, as attackers on other machines would.")
    var yieldsCPU = false

    func run(json: Bool) async throws {
        guard let url else { return }
        let parsed = try ReportOutput.checked { () throws(ConduitError) in try TransportURL(parsing: url) }
        guard parsed.scheme == "udp", let port = parsed.port else { throw ValidationError("--join-storm takes udp://IPv4:PORT") }
        guard rate > 0, seconds > 0, seconds <= 3_600, (1...16_384).contains(sockets), (0...100_000_000).contains(junk) else {
            throw ValidationError("--storm-rate must be above 0, --storm-seconds in (0, 3600], --storm-sockets 1...16384, --storm-junk 0...100000000")
        }
        var options = JoinStorm.Options(port: port)
        options.host = parsed.host
        options.attemptsPerSecond = rate
        options.duration = .milliseconds(Int64(seconds * 1_000))
        options.sockets = sockets
        options.junkDatagrams = junk
        options.yieldsCPU = yieldsCPU
        let report: JoinStorm.Report
        do throws(ConduitError) { report = try await JoinStorm.run(options) } catch { throw ValidationError(error.message) }
        if json { try ReportOutput.printJSON(report) } else { print("join storm: \(report.summary)") }
    }
}

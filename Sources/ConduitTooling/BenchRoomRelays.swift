import Conduit
import ConduitCore
import Foundation

/// The processes a room bench runs: one `conduit relay`, or several in a cluster with the
/// `nats-server` they share (a server of the bench's own on a port it picks, 127.0.0.1 only, with
/// JetStream in a temporary directory, so the relays share a roster as a cluster would).
/// Every process is killed, and that directory removed, when the value is dropped or `stop()` is called.
final class BenchRoomRelays {
    private(set) var relays: [ChildProcess] = []
    private(set) var urls: [String] = []
    private var nats: ChildProcess?
    private var jetStreamStorage: URL?

    init(options: BenchRoom.Options, until deadline: ContinuousClock.Instant) async throws(ConduitError) {
        var cluster: [String] = []
        if options.relays > 1 {
            let storage = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-bench-jetstream-\(UUID().uuidString)")
            jetStreamStorage = storage
            let server = try ChildProcess(path: options.natsServer, arguments: ["-a", "127.0.0.1", "-p", "-1", "-js", "-sd", storage.path])
            nats = server
            let marker = "Listening for client connections on "
            guard let address = await server.waitForLine(until: min(deadline, .now + .seconds(20)), { line in
                line.range(of: marker).map { String(line[$0.upperBound...]) }
            }) else {
                stop()
                throw ConduitError(.connectionFailed, "nats-server did not start: \(server.text().suffix(500))")
            }
            cluster = ["--cluster", "nats://\(address)"]
        }
        let prefix = "relay listening on "
        for _ in 0..<options.relays {
            let relay: ChildProcess
            do throws(ConduitError) {
                relay = try ChildProcess(
                    path: options.relayExecutable,
                    arguments: ["relay", options.transport, "--secret-file", options.secretFile, "--stats-interval", "86400", "--log-level", "warning"]
                        + cluster + options.relayArguments
                )
            } catch {
                stop()
                throw error
            }
            relays.append(relay)
            guard let url = await relay.waitForLine(until: min(deadline, .now + .seconds(30)), { $0.hasPrefix(prefix) ? String($0.dropFirst(prefix.count)) : nil }) else {
                let output = relay.text().suffix(500)
                stop()
                throw ConduitError(.connectionFailed, "conduit relay did not start: \(output)")
            }
            urls.append(url)
        }
    }

    /// Each relay's user plus system CPU seconds so far.
    func cpuSeconds() throws(ConduitError) -> [Double] {
        var seconds: [Double] = []
        for relay in relays { seconds.append(try ProcessCPU.seconds(of: relay.pid)) }
        return seconds
    }

    func stop() {
        for relay in relays { relay.kill() }
        nats?.kill()
        if let jetStreamStorage { try? FileManager.default.removeItem(at: jetStreamStorage) }
        jetStreamStorage = nil
    }

    deinit { stop() }
}

package import ConduitCore

/// A `conduit relay` child process, for figures that must be the relay's alone (its resident
/// memory under a join storm): started with the arguments given, its URL read from the line it
/// prints once bound, killed by ``stop()`` or when dropped.
package final class RelayChild {
    private let process: ChildProcess
    /// The URL the relay printed (`relay listening on URL`).
    package let url: String

    /// Starts `executable relay ARGUMENTS` and waits (up to 30 s) until it listens.
    package init(executable: String, arguments: [String]) async throws(ConduitError) {
        process = try ChildProcess(path: executable, arguments: ["relay"] + arguments)
        let prefix = "relay listening on "
        guard let url = await process.waitForLine(until: .now + .seconds(30), { $0.hasPrefix(prefix) ? String($0.dropFirst(prefix.count)) : nil }) else {
            let output = process.text().suffix(500)
            process.kill()
            throw ConduitError(.connectionFailed, "conduit relay did not start: \(output)")
        }
        self.url = url
    }

    /// The child's process ID.
    package var pid: Int32 { process.pid }

    /// What it printed so far (reading it also keeps the pipe from filling).
    package func output() -> String { process.text() }

    /// SIGKILL and reap; safe to call more than once.
    package func stop() { process.kill() }

    deinit { process.kill() }
}

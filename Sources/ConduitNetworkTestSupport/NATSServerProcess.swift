import Foundation
import NIOCore
import NIOPosix

/// A `nats-server` of the test's own, on a free 127.0.0.1 port: started, waited for until it
/// accepts connections, and stopped (SIGTERM, then SIGKILL) and reaped.
public final class NATSServerProcess: Sendable {
    /// Why a server could not be had.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        public let description: String
    }

    /// The client port, on 127.0.0.1.
    public let port: Int
    /// `nats://127.0.0.1:PORT`.
    public var url: String { "nats://127.0.0.1:\(port)" }
    private let process: Process

    private init(process: Process, port: Int) {
        self.process = process
        self.port = port
    }

    /// The `nats-server` binary: on the PATH, or where Debian's package puts it; nil when absent
    /// (the tests that need it are then skipped, saying so).
    public static let executable: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let candidates = path.split(separator: ":").map { "\($0)/nats-server" } + ["/usr/sbin/nats-server", "/usr/bin/nats-server"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// Whether tests can start a server here.
    public static var isInstalled: Bool { executable != nil }

    /// Starts a server on a free loopback port and returns once it accepts TCP connections
    /// (within `limit`); kills it and throws otherwise.
    public static func start(limit: Duration = .seconds(10)) async throws -> NATSServerProcess {
        guard let executable else { throw Failure(description: "nats-server is not installed (Debian: apt-get install nats-server)") }
        let port = try await unusedTCPPort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-a", "127.0.0.1", "-p", String(port)]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = NATSServerProcess(process: process, port: port)
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline, process.isRunning {
            if await accepts(port: port) { return server }
            try? await Task.sleep(for: .milliseconds(20))
        }
        await server.stop()
        throw Failure(description: "nats-server on 127.0.0.1:\(port) did not accept connections within \(limit)")
    }

    /// Stops the server (SIGTERM; SIGKILL after 5 s) and waits for it to exit. Idempotent.
    public func stop() async {
        guard process.isRunning else {
            _ = await process.exitStatus()
            return
        }
        process.terminate()
        let pid = process.processIdentifier
        let killer = Task {
            try await Task.sleep(for: .seconds(5))
            kill(pid, SIGKILL)
        }
        _ = await process.exitStatus()
        killer.cancel()
    }

    /// Whether the server still runs.
    public var isRunning: Bool { process.isRunning }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    private static func accepts(port: Int) async -> Bool {
        guard let channel = try? await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.milliseconds(200))
            .connect(host: "127.0.0.1", port: port).get()
        else { return false }
        try? await channel.close()
        return true
    }

    private static func unusedTCPPort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress!.port!
        try await channel.close()
        return port
    }
}

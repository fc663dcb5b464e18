public import Foundation
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
    /// Where JetStream keeps its streams, when the server has JetStream: kept across a restart
    /// (``restarted(limit:)``), removed by ``removeStorage()``.
    public let storage: URL?
    private let process: Process

    private init(process: Process, port: Int, storage: URL?) {
        self.process = process
        self.port = port
        self.storage = storage
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

    /// Starts a server on a loopback port it picks itself and returns once it is ready (within
    /// `limit`); kills it and throws otherwise. The server binds port 0 and reports the port in a
    /// ports file: a port picked here and released first could be bound by a test running beside
    /// this one (in a full parallel run, connects failed with an I/O error that way). `port`: the
    /// port of a server stopped before, to start it again where its clients reconnect.
    /// `jetStream`: with JetStream, its streams kept in `storage` (a new temporary directory if nil).
    public static func start(port: Int? = nil, jetStream: Bool = false, storage: URL? = nil, limit: Duration = .seconds(10)) async throws -> NATSServerProcess {
        guard let executable else { throw Failure(description: "nats-server is not installed (Debian: apt-get install nats-server)") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-nats-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-a", "127.0.0.1", "-p", port.map(String.init) ?? "-1", "--ports_file_dir", directory.path]
        let storage = jetStream ? storage ?? FileManager.default.temporaryDirectory.appendingPathComponent("conduit-jetstream-\(UUID().uuidString)") : nil
        if let storage { process.arguments! += ["-js", "-sd", storage.path] }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + limit
        let portsFile = directory.appendingPathComponent("nats-server_\(process.processIdentifier).ports").path
        while ContinuousClock.now < deadline, process.isRunning {
            // {"nats":["nats://127.0.0.1:PORT"]}, written once the server listens.
            if let contents = FileManager.default.contents(atPath: portsFile).map({ String(decoding: $0, as: UTF8.self) }),
                let range = contents.range(of: "127.0.0.1:"),
                let port = Int(contents[range.upperBound...].prefix(while: \.isNumber)),
                await accepts(port: port)
            {
                return NATSServerProcess(process: process, port: port, storage: storage)
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning { process.terminate() }
        _ = await process.exitStatus()
        throw Failure(description: "nats-server did not report a listening port within \(limit)")
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

    /// Kills the server (SIGKILL: a crash, no goodbye to its clients) and waits for it to exit.
    public func crash() async {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        _ = await process.exitStatus()
    }

    /// A new server on this one's port (stopped before), once it accepts connections.
    public func restarted(limit: Duration = .seconds(10)) async throws -> NATSServerProcess {
        try await Self.start(port: port, jetStream: storage != nil, storage: storage, limit: limit)
    }

    /// Removes JetStream's storage (stop the server, and any restart of it, first).
    public func removeStorage() {
        if let storage { try? FileManager.default.removeItem(at: storage) }
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
}

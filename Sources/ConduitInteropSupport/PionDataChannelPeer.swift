import Foundation
import ConduitCore

#if canImport(Glibc)
import Glibc
#endif

/// An independent RFC 8831/8832 data-channel peer for interoperability tests: pion/sctp and
/// pion/datachannel (Go, Debian's golang-github-pion-sctp-dev and golang-github-pion-datachannel-dev)
/// over plain UDP, no DTLS, SCTP port 5000 on both ends. The program is
/// `Tests/Interop/sctp-pion` (main.go, whose header documents the flags and the JSON report, and
/// support.go).
///
/// The program is compiled once per source version (`go build`, GOPATH mode) into the temporary
/// directory, so the process started is the peer itself and killing it kills the peer.
///
///     let server = try await PionDataChannelPeer.start(.init(role: .server, echo: true))
///     // ... connect Conduit to 127.0.0.1:server.port, exchange messages ...
///     let outcome = try await server.finish(within: .seconds(10))
///     #expect(outcome.report.channels == [.init(label: "chat", protocol: "p")])
public final class PionDataChannelPeer: Sendable {
    public enum Role: String, Sendable { case server, client }

    /// The program's flags (see the header of main.go).
    public struct Options: Sendable {
        public var role: Role
        public var remote: String?
        public var label: String?
        public var `protocol`: String?
        public var ordered = true
        public var maxRetransmits: Int?
        public var maxLifetimeMilliseconds: Int?
        public var count = 10
        public var size = 64
        public var echo = false
        public var expectEcho = true
        /// The stream ID this side opens its channel on (nil: by role, even for the client, odd for the server).
        public var streamID: Int?
        /// Right after this side's OPEN, one message data channels do not define on its stream:
        /// `dcep-unknown` (DCEP type 0x09) or `ppid-unknown` (PPID 99); nil: none.
        public var inject: String?
        /// Open this side's channel only once the peer has opened one.
        public var openAfterAccept = false
        /// Abort the association (an SCTP ABORT) after sending this many messages, once an echo
        /// came back (nil: never).
        public var abortAfter: Int?
        /// The program's own hard limit; the harness kills it a little after that.
        public var timeoutSeconds = 20

        public init(
            role: Role, remote: String? = nil, label: String? = nil, protocol: String? = nil,
            ordered: Bool = true, maxRetransmits: Int? = nil, maxLifetimeMilliseconds: Int? = nil,
            count: Int = 10, size: Int = 64, echo: Bool = false, expectEcho: Bool = true, timeoutSeconds: Int = 20,
            streamID: Int? = nil, abortAfter: Int? = nil
        ) {
            self.streamID = streamID
            self.abortAfter = abortAfter
            self.role = role
            self.remote = remote
            self.label = label
            self.protocol = `protocol`
            self.ordered = ordered
            self.maxRetransmits = maxRetransmits
            self.maxLifetimeMilliseconds = maxLifetimeMilliseconds
            self.count = count
            self.size = size
            self.echo = echo
            self.expectEcho = expectEcho
            self.timeoutSeconds = timeoutSeconds
        }

        /// The channel this side opens drops messages by a partial-reliability policy (RFC 8831
        /// section 6.1: a retransmission or lifetime limit) rather than delivering every one.
        public var isPartiallyReliable: Bool { maxRetransmits != nil || maxLifetimeMilliseconds != nil }

        var arguments: [String] {
            var out = ["-role", role.rawValue, "-timeout", String(timeoutSeconds)]
            if role == .server { out += ["-local", "127.0.0.1:0"] }
            if let remote { out += ["-remote", remote] }
            if let label { out += ["-label", label] }
            if let `protocol` { out += ["-protocol", `protocol`] }
            out.append("-ordered=\(ordered)")
            if let maxRetransmits { out += ["-max-retransmits", String(maxRetransmits)] }
            if let maxLifetimeMilliseconds { out += ["-max-lifetime-ms", String(maxLifetimeMilliseconds)] }
            out += ["-count", String(count), "-size", String(size)]
            if echo { out.append("-echo") }
            out.append("-expect-echo=\(expectEcho)")
            if let streamID { out += ["-stream", String(streamID)] }
            if let abortAfter { out += ["-abort-after", String(abortAfter)] }
            if openAfterAccept { out.append("-open-after-accept") }
            if let inject { out += ["-inject", inject] }
            return out
        }
    }

    /// The program's last line on standard output.
    public struct Report: Decodable, Sendable, Equatable {
        public struct Channel: Decodable, Sendable, Equatable {
            public var label: String
            public var `protocol`: String
            public init(label: String, protocol: String) {
                self.label = label
                self.protocol = `protocol`
            }
        }
        public var channels: [Channel]
        public var sent: Int
        public var received: Int
        public var echoed: Int
        public var echoedBack: Int
        public var verified: Int
        public var mismatches: Int
        public var strings: Int
        public var binaries: Int
        /// The program aborted the association itself (`-abort-after`).
        public var aborted: Bool?
        public var error: String?
    }

    /// How a run ended.
    public struct Outcome: Sendable {
        public var exitStatus: Int32
        /// False when the harness had to kill the program (it overran its own timeout).
        public var exitedByItself: Bool
        public var report: Report
        public var standardError: String
        public var succeeded: Bool { exitedByItself && exitStatus == 0 && report.error == nil }
    }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    public static let gopath = "/usr/share/gocode"
    /// The program's directory (one Go package, built as a whole).
    static let sourceDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tests/Interop/sctp-pion").path
    static let source = "\(sourceDirectory)/main.go"

    /// Go and the two pion packages are installed (what `.enabled(if:)` should check).
    public static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/go")
            && FileManager.default.fileExists(atPath: "\(gopath)/src/github.com/pion/sctp/association.go")
            && FileManager.default.fileExists(atPath: "\(gopath)/src/github.com/pion/datachannel/datachannel.go")
            && FileManager.default.fileExists(atPath: source)
    }

    /// The listening address once a server is bound (the port of `READY 127.0.0.1:PORT`).
    public let port: Int
    public var address: String { "127.0.0.1:\(port)" }
    private let process: Process
    private let output: OutputCollector
    private let killAfter: Duration

    private init(process: Process, output: OutputCollector, port: Int, killAfter: Duration) {
        self.process = process
        self.output = output
        self.port = port
        self.killAfter = killAfter
    }

    /// Starts the program; for a server, returns once it has printed READY (within 30 s, which
    /// includes compiling it the first time).
    public static func start(_ options: Options) async throws -> PionDataChannelPeer {
        let binary = try await compiled()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = options.arguments
        let output = OutputCollector()
        process.standardOutput = output.stdout
        process.standardError = output.stderr
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let killAfter = Duration.seconds(options.timeoutSeconds + 5)
        guard options.role == .server else {
            return PionDataChannelPeer(process: process, output: output, port: 0, killAfter: killAfter)
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let line = output.lines().first(where: { $0.hasPrefix("READY ") }),
                let port = line.split(separator: ":").last.flatMap({ Int($0) })
            {
                return PionDataChannelPeer(process: process, output: output, port: port, killAfter: killAfter)
            }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        killHard(process)
        throw Failure("sctp-pion server did not print READY: \(output.standardError())")
    }

    /// Runs a client to completion.
    public static func run(_ options: Options) async throws -> Outcome {
        try await start(options).finish()
    }

    /// Waits for the program to end by itself (at most its own timeout plus 5 s, or `within`),
    /// kills it with SIGKILL otherwise, and returns its report.
    public func finish(within limit: Duration? = nil) async throws -> Outcome {
        let deadline = ContinuousClock.now + (limit ?? killAfter)
        while process.isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        let exitedByItself = !process.isRunning
        if !exitedByItself { killHard(process) }
        process.waitUntilExit()
        await output.waitForEndOfOutput(within: .seconds(2))
        let problems = output.standardError()
        guard let last = output.lines().last(where: { $0.hasPrefix("{") }),
            let report = try? JSONDecoder().decode(Report.self, from: Data(last.utf8))
        else {
            throw Failure("sctp-pion printed no report (status \(process.terminationStatus)): \(problems)")
        }
        return Outcome(
            exitStatus: process.terminationStatus, exitedByItself: exitedByItself, report: report,
            standardError: problems)
    }

    /// Kills the program now if it still runs (for cleanup paths).
    public func kill() {
        killHard(process)
    }

    deinit {
        if process.isRunning { signalKill(process.processIdentifier) }
    }

    // MARK: - Compiling once

    private static let build = TSanVisibleMutex<Task<String, any Error>?>(nil)

    /// The compiled program, built on first use into a path named by the source's content, so
    /// parallel tests and later runs share it and an edited source is rebuilt.
    static func compiled() async throws -> String {
        let task = build.withLock { task in
            if let task { return task }
            // `go build` blocks for seconds: on a Dispatch thread, not one of the cooperative
            // pool's (two on two cores), which would stall every other test meanwhile.
            let new = Task<String, any Error> {
                try await withCheckedThrowingContinuation { continuation in
                    DispatchQueue.global().async { continuation.resume(with: Result { try compile() }) }
                }
            }
            task = new
            return new
        }
        return try await task.value
    }

    private static func compile() throws -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a over every .go file, only to name the build
        let files = try FileManager.default.contentsOfDirectory(atPath: sourceDirectory).filter { $0.hasSuffix(".go") }.sorted()
        for file in files {
            for byte in Array(file.utf8) + Array(try Data(contentsOf: URL(fileURLWithPath: "\(sourceDirectory)/\(file)"))) {
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-interop")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let binary = directory.appendingPathComponent("sctp-pion-\(String(hash, radix: 16))").path
        if FileManager.default.isExecutableFile(atPath: binary) { return binary }

        let partial = "\(binary).\(ProcessInfo.processInfo.processIdentifier).tmp"
        let go = Process()
        // At the lowest CPU priority: on a fresh machine this compiles pion (both cores for tens of
        // seconds), which starved the tests beside it in the first pass of Scripts/test.sh until
        // their wall-clock limits ran out (an echo job's 15 s, relay joins' 10 s).
        go.executableURL = URL(fileURLWithPath: "/usr/bin/nice")
        // The files, not the directory: GOPATH mode cannot import a directory by absolute path.
        go.arguments = ["-n", "19", "/usr/bin/go", "build", "-o", partial] + files.map { "\(sourceDirectory)/\($0)" }
        var environment = ProcessInfo.processInfo.environment
        environment["GO111MODULE"] = "off"
        environment["GOPATH"] = gopath
        environment["GOFLAGS"] = ""
        environment["GOCACHE"] = directory.appendingPathComponent("go-cache").path
        go.environment = environment
        let errors = Pipe()
        go.standardError = errors
        go.standardOutput = FileHandle.nullDevice
        try go.run()
        let problems = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        go.waitUntilExit()
        guard go.terminationStatus == 0 else { throw Failure("go build of sctp-pion failed: \(problems)") }
        // rename(2) is atomic: a concurrent build of the same source just replaces it.
        guard rename(partial, binary) == 0 else { throw Failure("could not install \(binary)") }
        return binary
    }
}

/// SIGKILL, not SIGTERM: the program must not get a chance to linger.
private func killHard(_ process: Process) {
    if process.isRunning { signalKill(process.processIdentifier) }
    process.waitUntilExit()
}

private func signalKill(_ pid: Int32) {
    _ = kill(pid, SIGKILL)
}

/// Collects a child's standard output and error as they arrive, bounded (the program prints a
/// few lines; anything past 1 MiB is dropped).
final class OutputCollector: Sendable {
    let stdout = Pipe()
    let stderr = Pipe()
    private struct State {
        var out = Data()
        var err = Data()
        var outEnded = false
    }
    private let state = TSanVisibleMutex(State())
    private static let limit = 1 << 20

    init() {
        stdout.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil }
            self?.state.withLock { state in
                if data.isEmpty { state.outEnded = true } else if state.out.count < Self.limit { state.out.append(data) }
            }
        }
        stderr.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil; return }
            self?.state.withLock { state in if state.err.count < Self.limit { state.err.append(data) } }
        }
    }

    /// After the child exits, its last lines may still be in the pipe: wait (bounded) for EOF.
    func waitForEndOfOutput(within limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        while !state.withLock({ $0.outEnded }) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    func lines() -> [String] {
        let text = state.withLock { String(decoding: $0.out, as: UTF8.self) }
        return text.split(separator: "\n").map(String.init)
    }

    func standardError() -> String { state.withLock { String(decoding: $0.err, as: UTF8.self) } }
}

/// The flags, so that parameterised tests name each case by what the program runs.
extension PionDataChannelPeer.Options: CustomStringConvertible {
    public var description: String { arguments.joined(separator: " ") }
}

import Foundation
import Synchronization

/// The pion data-channel peer of `Tests/Interop/sctp-pion` (pion/sctp + pion/datachannel from
/// Debian's golang-github-pion-sctp-dev and golang-github-pion-datachannel-dev), built once per test
/// process with `go build` in GOPATH mode and run as a child process.
final class PionSCTPPeer: Sendable {
    static let gopath = "/usr/share/gocode"
    static let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Interop/sctp-pion").path

    static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/go")
            && FileManager.default.fileExists(atPath: "\(gopath)/src/github.com/pion/sctp")
            && FileManager.default.fileExists(atPath: "\(gopath)/src/github.com/pion/datachannel")
    }

    /// The built program (one build per test process, into one file per user so runs leave no litter).
    static let binary: Result<String, PionError> = {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-sctp-pion-\(getuid())").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/go")
        process.arguments = ["build", "-o", output, "."]
        process.currentDirectoryURL = URL(fileURLWithPath: source)
        var environment = ProcessInfo.processInfo.environment
        environment["GO111MODULE"] = "off"
        environment["GOPATH"] = gopath
        environment["GOCACHE"] = environment["GOCACHE"] ?? FileManager.default.temporaryDirectory.appendingPathComponent("conduit-go-cache").path
        process.environment = environment
        do {
            try process.run()
            process.waitUntilExit()
        } catch {
            return .failure(PionError("cannot run go build: \(error)"))
        }
        return process.terminationStatus == 0 ? .success(output) : .failure(PionError("go build of \(source) failed"))
    }()

    struct PionError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// The JSON report the program prints last.
    struct Report: Decodable {
        struct Channel: Decodable, Equatable {
            let label: String
            let `protocol`: String
        }
        let channels: [Channel]
        let sent: Int
        let received: Int
        let echoed: Int
        let verified: Int?
        let mismatches: Int
        let strings: Int
        let binaries: Int
        let error: String?
    }

    private let process: Process
    /// What the reader thread shares with the test.
    private final class Output: Sendable {
        let lines = Mutex<[String]>([])
        let done = Mutex(false)
    }
    private let output = Output()

    init(_ arguments: [String]) throws {
        let binary = try Self.binary.get()
        process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        let handle = pipe.fileHandleForReading
        let output = self.output
        let reader: @Sendable () -> Void = {
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    output.lines.withLock { $0.append(line) }
                }
            }
            output.done.withLock { $0 = true }
        }
        try process.run()
        Thread.detachNewThread(reader)
    }

    /// A server's UDP port, from its `READY 127.0.0.1:PORT` line.
    func readyPort(within seconds: Double = 20) async throws -> Int {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if let line = output.lines.withLock({ $0.first { $0.hasPrefix("READY ") } }), let port = line.split(separator: ":").last.flatMap({ Int($0) }) {
                return port
            }
            guard process.isRunning else { throw PionError("the pion peer exited before it was ready") }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw PionError("the pion peer printed no READY line")
    }

    /// Waits for the program to exit (killing it after `seconds`) and parses its report.
    func finish(within seconds: Double = 30) async throws -> (status: Int32, report: Report) {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        for _ in 0..<100 where !output.done.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        guard let last = output.lines.withLock({ $0.last { $0.hasPrefix("{") } }) else { throw PionError("the pion peer printed no report") }
        return (process.terminationStatus, try JSONDecoder().decode(Report.self, from: Data(last.utf8)))
    }

    func kill() {
        if process.isRunning { process.terminate() }
    }
}

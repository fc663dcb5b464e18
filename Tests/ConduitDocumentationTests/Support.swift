import Foundation
import ConduitCore
import ConduitNetworkTestSupport

/// What a documented program printed: the programs run here with a local `print` that writes to
/// one of these, so the tests can check their output.
final class Transcript: Sendable {
    private let storage = TSanVisibleMutex<[String]>([])

    func record(_ items: [Any]) {
        let line = items.map { "\($0)" }.joined(separator: " ")
        storage.withLock { $0.append(line) }
    }

    var lines: [String] { storage.withLock { $0 } }
}

struct TimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out: \(what)" }
}

/// Runs `body` with a deadline (the body must honour cancellation).
func within<T: Sendable>(_ what: String, _ limit: Duration = .seconds(30), _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try? await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw TimedOut(what: what) }
        return value
    }
}

/// A finished child process: its exit status and what it wrote to standard output and error.
struct ProcessResult: Sendable {
    let status: Int32
    let output: String
}

/// Runs a program to its end without blocking a thread of the cooperative pool; output goes
/// through a file (no pipe to fill up).
func runProcess(_ executable: String, _ arguments: [String], in directory: URL, environment: [String: String]? = nil) async throws -> ProcessResult {
    let outputFile = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-doc-\(UUID().uuidString).out")
    _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: outputFile) }
    let output = try FileHandle(forWritingTo: outputFile)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.currentDirectoryURL = directory
    if let environment { process.environment = environment }
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let status = await process.exitStatus()
    try output.close()
    return ProcessResult(status: status, output: try String(contentsOf: outputFile, encoding: .utf8))
}

/// A fresh temporary directory, removed by `body`'s caller through the returned URL.
func makeTemporaryDirectory() throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-doc-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

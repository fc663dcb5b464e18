import ArgumentParser
import Conduit
import Foundation

/// Printing shared by `listen` and `send`.
enum ReportOutput {
    /// One JSON object on one line, keys sorted: the last line a `--json` run prints.
    static func printJSON(_ report: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        print(String(decoding: try encoder.encode(report), as: UTF8.self))
    }

    /// A line written at once, even when standard output is a pipe (a script waits for it).
    static func printNow(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func bytes(_ count: Int) -> String {
        let value = Double(count)
        if value >= 1_048_576 { return String(format: "%.2f MiB", value / 1_048_576) }
        if value >= 1_024 { return String(format: "%.1f KiB", value / 1_024) }
        return "\(count) B"
    }

    static func rate(_ bytesPerSecond: Double) -> String {
        String(format: "%.2f MB/s (%.1f Mbit/s)", bytesPerSecond / 1e6, bytesPerSecond * 8 / 1e6)
    }

    static func seconds(_ value: Double) -> String { String(format: "%.3f s", value) }

    /// `--timeout S`: positive seconds, as a Duration.
    static func timeout(_ seconds: Double) throws -> Duration {
        guard seconds.isFinite, seconds > 0, seconds <= 86_400 * 365 else {
            throw ValidationError("--timeout must be a positive number of seconds")
        }
        return .nanoseconds(Int64(seconds * 1e9))
    }

    /// Runs `body`, turning a ConduitError about the user's input into a one-line usage error.
    static func checked<T>(_ body: () throws(ConduitError) -> T) throws -> T {
        do throws(ConduitError) { return try body() } catch { throw ValidationError(error.message) }
    }
}

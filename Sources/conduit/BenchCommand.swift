import ArgumentParser
import Conduit
import ConduitTooling
import Foundation

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure throughput over a matrix of transports, session types and message sizes.",
        discussion: """
            Every run is in process: a listener on the transport URL (port 0: the system picks one) and a \
            sender to it, rate cap off, max(50, --count-bytes / size) fixed-size seeded messages, every \
            payload verified. Per cell it prints the median and spread (min-max) over --runs runs of MB/s \
            and messages/s, the CPU seconds of the process per run, and its peak resident memory. A \
            progress line per run goes to standard error. With --json the last line \
            is one JSON object: cells (transport, type, size, runs, count, megabytesPerSecond, \
            messagesPerSecond, cpuSeconds, peakResidentBytes).
            """
    )

    @Option(name: .customLong("transport"), help: "Transport URL to measure (repeatable).")
    var transports: [String] = []

    @Option(name: .customLong("type"), help: "Session type (repeatable).")
    var types: [String] = []

    @Option(name: .customLong("size"), help: "Message size in bytes (repeatable).")
    var sizes: [Int] = []

    @Option(help: "Runs per cell; the figures are their median and spread.")
    var runs: Int = 3

    @Option(name: .customLong("count-bytes"), help: "Bytes per run: max(50, B / size) messages.")
    var countBytes: Int = 64 * 1_048_576

    @Flag(help: "Print the report as one JSON object (the last line).")
    var json = false

    func run() async throws {
        let sessionTypes = try ReportOutput.checked { () throws(ConduitError) in
            try (types.isEmpty ? ["reliable-message"] : types).map { name throws(ConduitError) in try SessionType(name: name) }
        }
        let options = BenchJob.Options(
            transports: transports.isEmpty ? ["udp://127.0.0.1:0"] : transports,
            types: sessionTypes,
            sizes: sizes.isEmpty ? [1_024, 16_384, 65_536] : sizes,
            runs: runs,
            countBytes: countBytes
        )
        try ReportOutput.checked { () throws(ConduitError) in try options.validate() }
        let registry = CommandRegistry.make()
        for url in options.transports {
            let scheme = try ReportOutput.checked { () throws(ConduitError) in try TransportURL(parsing: url).scheme }
            guard registry.schemes.contains(scheme) else {
                throw ValidationError("no transport for '\(scheme)://' in this build (known: \(registry.schemes.joined(separator: ", ")))")
            }
        }

        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        let job = BenchJob(runtime: ConduitRuntime(configuration: configuration, registry: registry), options: options)
        let cells = try await job.run { index, total, cell, run, figures in
            let scheme = (try? TransportURL(parsing: cell.transport).scheme) ?? cell.transport
            let line = String(
                format: "[%d/%d] %@ %@ %d B run %d/%d: %.1f MB/s\n",
                index, total, scheme, cell.type.name, cell.size, run, options.runs, figures.megabytesPerSecond
            )
            FileHandle.standardError.write(Data(line.utf8))
        }

        if json {
            try ReportOutput.printJSON(BenchReport(cells: cells))
        } else {
            printTable(cells)
        }
    }

    private func printTable(_ cells: [BenchCellReport]) {
        func spread(_ value: BenchSpread, _ format: String) -> String {
            "\(String(format: format, value.median)) (\(String(format: format, value.min))–\(String(format: format, value.max)))"
        }
        let header = ["transport", "type", "size", "runs", "MB/s median (min–max)", "messages/s median (min–max)", "CPU s median", "peak RSS"]
        var rows = [header]
        for cell in cells {
            let row = [
                cell.transport, cell.type, "\(cell.size) B", "\(cell.runs)",
                spread(cell.megabytesPerSecond, "%.1f"), spread(cell.messagesPerSecond, "%.0f"),
                String(format: "%.2f", cell.cpuSeconds.median), ReportOutput.bytes(cell.peakResidentBytes),
            ]
            rows.append(row)
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            print(row.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ")
                .trimmingCharacters(in: .whitespaces))
        }
    }
}

/// `--json`: the whole report.
struct BenchReport: Encodable {
    var cells: [BenchCellReport]
}

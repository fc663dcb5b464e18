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
            payload verified. Then --latency-messages messages at --latency-rate per second measure \
            one-way latency (send to delivery, one monotonic clock): p50 and p99. The receiving end of \
            those runs is in this process by default; --latency-peer process puts it in a child process \
            (each end with its own stack, event loop and threads, as the two ends of a call have). With \
            --latency-under-load, while a bulk transfer runs on the same call (latency session at high \
            priority, bulk at low), also reporting the bulk's MB/s (JSON: bulkMegabytesPerSecondUnderLoad). Per cell it prints the median and spread (min-max) over --runs runs of MB/s \
            and messages/s, the CPU seconds of the process per run, and its peak resident memory. A \
            progress line per run goes to standard error. With --json the last line \
            is one JSON object: cells (transport, type, size, runs, count, megabytesPerSecond, \
            messagesPerSecond, cpuSeconds, peakResidentBytes, latencyP50Micros, latencyP99Micros, \
            latencySamples, copiesPerMessageSend, copiesPerMessageReceive: payload bytes copied between the app and \
            the socket on each side, counted where the code copies, over the bytes delivered). --chart FILE writes an SVG bar chart of MB/s per size. With --reference it then runs, in the \
            same invocation, usrsctp's tsctp (debug output off: a one-function library, built with cc on first use, preloaded) at \
            every size, iperf3 (kernel TCP over 127.0.0.1, the write size of each cell) \
            at every size and the plain UDP blast (conduit-udp-blast, 1,200-byte datagrams), --runs times \
            each for --reference-seconds (iperf3: rounded up to whole seconds), prints them as rows and each cell's ratio to them (JSON: \
            references, and ratioToTsctp / ratioToTCP / ratioToBlast per cell).
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
    var countBytes: Int = 256 * 1_048_576

    @Flag(help: "Print the report as one JSON object (the last line).")
    var json = false

    @Flag(help: "Also run usrsctp's tsctp, iperf3 (kernel TCP) and a plain UDP blast in this run, and print the ratios.")
    var reference = false

    @Option(name: .customLong("reference-seconds"), help: "How long each reference run sends.")
    var referenceSeconds: Double = 3

    @Option(help: "usrsctp's tsctp (Debian: libusrsctp-examples).")
    var tsctp: String = "/usr/lib/usrsctp/tsctp"

    @Option(help: "iperf3, the kernel TCP reference (Debian: iperf3).")
    var iperf3: String = "/usr/bin/iperf3"

    @Option(name: .customLong("latency-messages"), help: "Messages per cell for the one-way latency figures (0: off).")
    var latencyMessages: Int = 200

    @Option(name: .customLong("latency-rate"), help: "Messages per second while measuring latency.")
    var latencyRate: Int = 200

    @Flag(name: .customLong("latency-under-load"), help: "Measure latency while a bulk transfer runs on the same call (ping under load): the latency session at high priority, the bulk at low; reports the bulk's MB/s too.")
    var latencyUnderLoad = false

    @Option(name: .customLong("latency-peer"), help: "Where the latency runs' receiving end runs: in-process (the default) or process (a child conduit).")
    var latencyPeer: String = "in-process"

    @Option(help: "Write an SVG bar chart of throughput per message size to this file.")
    var chart: String?

    @OptionGroup(title: "Group room")
    var room: BenchRoomOptions

    @OptionGroup(title: "Join storm")
    var joinStorm: BenchJoinStormOptions

    func run() async throws {
        if room.enabled { return try await room.run(transport: transports.first, size: sizes.first, runs: runs, json: json) }
        if joinStorm.url != nil { return try await joinStorm.run(json: json) }
        let sessionTypes = try ReportOutput.checked { () throws(ConduitError) in
            try (types.isEmpty ? ["reliable-message"] : types).map { name throws(ConduitError) in try SessionType(name: name) }
        }
        var options = BenchJob.Options(
            transports: transports.isEmpty ? ["udp://127.0.0.1:0"] : transports,
            types: sessionTypes,
            sizes: sizes.isEmpty ? [1_024, 16_384, 65_536] : sizes,
            runs: runs,
            countBytes: countBytes
        )
        let peer: BenchLatency.Peer
        switch latencyPeer {
        case "process": peer = .process(executable: BenchReferenceOptions.besideExecutable("conduit"))
        case "in-process": peer = .inProcess
        default: throw ValidationError("--latency-peer must be process or in-process (got '\(latencyPeer)')")
        }
        options.latency = BenchLatency.Options(messages: latencyMessages, rate: latencyRate, underLoad: latencyUnderLoad, peer: peer)
        if reference {
            options.reference = BenchReferenceOptions(tsctpPath: tsctp, iperf3Path: iperf3, seconds: referenceSeconds)
        }
        try ReportOutput.checked { () throws(ConduitError) in try options.validate() }
        let runsPerCell = options.runs
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
        let report = try await job.runReport(progress: { index, total, cell, run, figures in
            let scheme = (try? TransportURL(parsing: cell.transport).scheme) ?? cell.transport
            let line = String(
                format: "[%d/%d] %@ %@ %d B run %d/%d: %.1f MB/s\n",
                index, total, scheme, cell.type.name, cell.size, run, runsPerCell, figures.megabytesPerSecond
            )
            FileHandle.standardError.write(Data(line.utf8))
        }, referenceProgress: { name, size, run, runs, rate in
            let line = String(format: "[reference] %@ %d B run %d/%d: %.1f MB/s\n", name, size, run, runs, rate)
            FileHandle.standardError.write(Data(line.utf8))
        })

        if let chart {
            do {
                try BenchChart.svg(report).write(toFile: chart, atomically: true, encoding: .utf8)
            } catch {
                throw ValidationError("cannot write the chart to \(chart): \(error)")
            }
        }
        if json {
            try ReportOutput.printJSON(BenchReport(cells: report.cells, references: report.references))
        } else {
            printTable(report.cells, references: report.references)
        }
    }

    private func printTable(_ cells: [BenchCellReport], references: [BenchReferenceReport] = []) {
        func spread(_ value: BenchSpread, _ format: String) -> String {
            "\(String(format: format, value.median)) (\(String(format: format, value.min))–\(String(format: format, value.max)))"
        }
        var header = ["transport", "type", "size", "runs", "MB/s median (min–max)", "messages/s median (min–max)", "latency p50/p99 µs", "CPU s median", "peak RSS", "copies send/recv"]
        let withReferences = !references.isEmpty
        let underLoad = cells.contains { $0.bulkMegabytesPerSecondUnderLoad != nil }
        if underLoad { header.insert("bulk MB/s under ping", at: 7) }
        if withReferences { header += ["× tsctp", "× TCP", "× blast"] }
        var rows = [header]
        for cell in cells {
            var row = [
                cell.transport, cell.type, "\(cell.size) B", "\(cell.runs)",
                spread(cell.megabytesPerSecond, "%.1f"), spread(cell.messagesPerSecond, "%.0f"),
                cell.latencyP50Micros.flatMap { p50 in cell.latencyP99Micros.map { String(format: "%.0f / %.0f", p50, $0) } } ?? "–",
                String(format: "%.2f", cell.cpuSeconds.median), ReportOutput.bytes(cell.peakResidentBytes),
                String(format: "%.2f / %.2f", cell.copiesPerMessageSend, cell.copiesPerMessageReceive),
            ]
            if underLoad { row.insert(cell.bulkMegabytesPerSecondUnderLoad.map { String(format: "%.1f", $0) } ?? "–", at: 7) }
            if withReferences {
                row += [cell.ratioToTsctp, cell.ratioToTCP, cell.ratioToBlast].map { $0.map { String(format: "%.2f", $0) } ?? "–" }
            }
            rows.append(row)
        }
        for reference in references {
            let what = switch reference.name {
            case "tsctp": "usrsctp tsctp (debug off)"
            case "iperf3": "iperf3 (kernel TCP, 127.0.0.1)"
            default: "UDP blast (sendmmsg/recvmmsg)"
            }
            var row = [what, "reference", "\(reference.size) B", "\(reference.runs)", spread(reference.megabytesPerSecond, "%.1f"), "", "", "", "", ""]
            if underLoad { row.append("") }
            row += ["", "", ""]
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
    /// `--reference`: tsctp and iperf3 per size and the UDP blast (empty without it).
    var references: [BenchReferenceReport] = []
}

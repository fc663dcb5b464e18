import ArgumentParser
import Conduit
#if SCTP
import ConduitSCTP
#endif
import ConduitTooling

struct ListenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listen",
        abstract: "Accept one peer, receive and verify its seeded messages (and echo them), then report.",
        discussion: """
            Prints 'listening on URL' once bound, then accepts one call and receives on every data session the \
            peer opens, checking each message against the seeded payload that 'conduit send' generated. With \
            --echo, every message goes back on a session of the same stream ID and type. Ends when --expect \
            valid messages arrived, when the peer hangs up, or after --timeout seconds, and prints a report; \
            with --json the last line is one JSON object: received, valid, bytes, duplicates, outOfOrder, \
            corrupted, missing, expected, elapsedSeconds, throughputBytesPerSecond, bytesPer100Milliseconds (the \
            payload bytes of each 100 ms from the first message, over the first minute), echoed, ended, peer, \
            transport, url, refusedSessions and streams (per stream ID). Exits non-zero if any message was \
            corrupted or missing.
            """
    )

    @Argument(help: "Transport URL to listen on (loopback://NAME, or a transport this build registers).")
    var url: String

    @Flag(help: "Send every received message back on the same stream ID and type.")
    var echo = false

    @Option(help: "Stop after N valid messages; fewer by the end count as missing.")
    var expect: Int?

    @Option(help: "Give up after S seconds, counted from listening.")
    var timeout: Double = 30

    @OptionGroup var common: CommonOptions

    func run() async throws {
        if let expect, expect < 0 { throw ValidationError("--expect must not be negative") }
        let limit = try ReportOutput.timeout(timeout)
        let job = ListenJob(
            // sctp+udp: a peer whose first channel is not Conduit's is a standard data-channel peer;
            // with --echo its channels are echoed too (DataChannelEcho).
            runtime: try common.runtime(url: url, standardPeers: echo ? Self.echoStandardPeer : nil),
            url: url,
            options: .init(echo: echo, expect: expect, timeout: limit)
        )
        let report = try await job.run { ReportOutput.printNow("listening on \($0)") }
        if common.json {
            try ReportOutput.printJSON(report)
        } else {
            printSummary(report)
        }
        if report.corrupted > 0 || report.missing > 0 { throw ExitCode.failure }
    }

    #if SCTP
    private static let echoStandardPeer: StandardPeerHandler? = { association in
        await DataChannelEcho.serve(association) { ReportOutput.printNow($0) }
    }
    #else
    private static let echoStandardPeer: StandardPeerHandler? = nil
    #endif

    private func printSummary(_ report: ListenReport) {
        let ending = switch report.ended {
        case .expected: "all \(report.expected ?? report.valid) expected messages arrived"
        case .hangUp: "the peer hung up"
        case .timeout: report.peer == nil ? "timed out with no caller" : "timed out"
        }
        print("listen: \(ending)\(report.peer.map { " (peer \($0))" } ?? "")")
        print("  received \(report.received) messages, \(ReportOutput.bytes(report.bytes)) in \(ReportOutput.seconds(report.elapsedSeconds)): \(ReportOutput.rate(report.throughputBytesPerSecond))")
        print("  valid \(report.valid), duplicates \(report.duplicates), out of order \(report.outOfOrder), corrupted \(report.corrupted), missing \(report.missing)\(echo ? ", echoed \(report.echoed)" : "")")
        for (id, stream) in report.streams.sorted(by: { $0.key < $1.key }) {
            print("  stream \(id) \(stream.type): \(stream.received) messages, \(ReportOutput.bytes(stream.bytes))\(stream.echoFailed ? ", echo failed" : "")")
        }
    }
}

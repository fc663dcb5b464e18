import ArgumentParser
import Conduit
import ConduitTooling

struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Call a listener and send N seeded, verifiable messages on one data session.",
        discussion: """
            Message sizes are log-uniform in --size MIN-MAX and, like the bytes, fixed by --seed, so a run \
            replays exactly; each message's timestamp carries its sequence number and the seed, which lets \
            'conduit listen' verify every byte. Without --verify-echo the session is closed gracefully once \
            everything is queued, and the command returns when the peer has received it all. With \
            --verify-echo it waits until every message came back intact on the peer's echo session. With \
            --json the last line is one JSON object: sent, bytes, elapsedSeconds, throughputBytesPerSecond, \
            echoed, echoMismatches, echoDuplicates, count, stream, type, seed, rate, label, protocol, \
            transport, url, verifyEcho, timedOut, linkMTU (the link's datagram size at the end). Exits non-zero on an echo mismatch, on echoes missing \
            with --verify-echo, or when the timeout passed first.
            """
    )

    @Argument(help: "Transport URL of the listener (loopback://NAME, or a transport this build registers).")
    var url: String

    @Option(help: "Stream ID, 100...999.")
    var stream: Int

    @Option(help: "reliable-message, unreliable-message, reliable-bytes or unreliable-bytes.")
    var type: String

    @Option(help: "How many messages to send.")
    var count: Int = 100

    @Option(help: "Message size in bytes, MIN or MIN-MAX (log-uniform); at most 131072 for message types, 4194304 for bytes types.")
    var size: String = "1-1024"

    @Option(help: "Rate cap for the session: bits/s, 500kbps, 2mbps, or unlimited.")
    var rate: String = "unlimited"

    @Option(help: "Channel label (kept in the report). On sctp+udp://, --label or --protocol opens a standard data channel instead of a Conduit call.")
    var label: String?

    @Option(name: .customLong("protocol"), help: "Channel subprotocol (kept in the report; for transports that use it).")
    var protocolName: String?

    @Option(help: "Seed for sizes and payloads, 0...4294967295.")
    var seed: UInt32 = 1

    @Flag(name: .customLong("verify-echo"), help: "Expect every message back (conduit listen --echo) and check it.")
    var verifyEcho = false

    @Option(help: "Give up after S seconds, connecting included.")
    var timeout: Double = 30

    @OptionGroup var common: CommonOptions

    func run() async throws {
        let streamID = try ReportOutput.checked { () throws(ConduitError) in try StreamID.validated(stream) }
        let sessionType = try ReportOutput.checked { () throws(ConduitError) in try SessionType(name: type) }
        guard count >= 0, count <= Int(UInt32.max) else { throw ValidationError("--count must be in 0...\(UInt32.max)") }
        let sizes = try ReportOutput.checked { () throws(ConduitError) in try JobArguments.sizeRange(size, for: sessionType) }
        let rateLimit = try ReportOutput.checked { () throws(ConduitError) in try RateLimit(parsing: rate) }
        if let label { _ = try ReportOutput.checked { () throws(ConduitError) in try ChannelLabel(label) } }
        let limit = try ReportOutput.timeout(timeout)

        let options = SendJob.Options(
            url: url, streamID: streamID, type: sessionType, count: count, sizes: sizes, rate: rateLimit,
            label: label, protocolName: protocolName, seed: seed, verifyEcho: verifyEcho, timeout: limit
        )
        let report: SendReport
        if url.lowercased().hasPrefix("sctp+udp://"), label != nil || protocolName != nil {
            // A label or protocol on sctp+udp:// means a standard data-channel peer (not a Conduit call).
            #if SCTP
            report = try await DataChannelSendJob(options: options).run()
            #else
            throw TransportLeftOut(scheme: "sctp+udp", trait: "SCTP", library: "usrsctp (Debian: libusrsctp-dev)").error
            #endif
        } else {
            report = try await SendJob(runtime: try common.runtime(url: url), options: options).run()
        }
        if common.json {
            try ReportOutput.printJSON(report)
        } else {
            printSummary(report)
        }
        if report.timedOut || report.echoMismatches > 0 || (report.verifyEcho && report.echoed < report.sent) {
            throw ExitCode.failure
        }
    }

    private func printSummary(_ report: SendReport) {
        print("send: \(report.sent) of \(report.count) \(report.type) messages on stream \(report.stream) to \(report.url)\(report.timedOut ? " (timed out)" : "")")
        print("  \(ReportOutput.bytes(report.bytes)) in \(ReportOutput.seconds(report.elapsedSeconds)): \(ReportOutput.rate(report.throughputBytesPerSecond)), rate cap \(report.rate), seed \(report.seed)")
        if report.verifyEcho {
            print("  echoed \(report.echoed), mismatches \(report.echoMismatches), duplicates \(report.echoDuplicates)")
        }
    }
}

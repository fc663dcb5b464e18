import ArgumentParser
import Conduit
import ConduitTooling

struct JoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Join a room through a relay; send seeded messages, receive and verify them, or both.",
        discussion: """
            Sending (--stream and --type): waits until --peers others are in the room (or --to is), opens the \
            session (in --subgroup if given), sends --count seeded messages to everyone or to --to, closes the \
            session gracefully and leaves. Receiving (--expect N): accepts every session other peers open in \
            the room (or --subgroup) and verifies each message per sender until N valid ones arrived or the \
            timeout. With --json the last line is one JSON object: room, peer, peers, sent, sentBytes, received, \
            valid, bytes, duplicates, outOfOrder, corrupted, missing, bySender, elapsedSeconds, \
            throughputBytesPerSecond, ended. Exits non-zero if the join is refused (the reason is printed), or \
            if any message was corrupted or missing.
            """
    )

    @Argument(help: "Transport URL of the relay.")
    var relay: String

    @Option(help: "Room ID.")
    var room: String

    @Option(name: .customLong("as"), help: "This peer's ID (the one the token is for).")
    var peer: String

    @Option(help: "Join token from 'conduit token'.")
    var token: String

    @Option(help: "Subgroup to subscribe to; sessions are then made and accepted in it.")
    var subgroup: String?

    @Option(help: "Send to this peer only (default: everyone in the room or subgroup).")
    var to: String?

    @Option(help: "Stream ID to send on, 100...999.")
    var stream: Int?

    @Option(help: "reliable-message, unreliable-message, reliable-bytes or unreliable-bytes.")
    var type: String = "reliable-message"

    @Option(help: "How many messages to send.")
    var count: Int = 100

    @Option(help: "Message size in bytes, MIN or MIN-MAX (log-uniform).")
    var size: String = "1-1024"

    @Option(help: "Seed for sizes and payloads.")
    var seed: UInt32 = 1

    @Option(help: "Before sending, wait until this many other peers are in the room.")
    var peers: Int = 1

    @Option(help: "Receive until N valid messages arrived.")
    var expect: Int?

    @Option(help: "Give up after S seconds.")
    var timeout: Double = 30

    @OptionGroup var common: CommonOptions

    func run() async throws {
        let roomID = try ReportOutput.checked { () throws(ConduitError) in try RoomID(room) }
        let peerID = try ReportOutput.checked { () throws(ConduitError) in try PeerID(peer) }
        let subgroupName = try subgroup.map { name in try ReportOutput.checked { () throws(ConduitError) in try SubgroupName(name) } }
        let target = try to.map { name in try ReportOutput.checked { () throws(ConduitError) in try PeerID(name) } }
        var send: (streamID: StreamID, type: SessionType, count: Int, sizes: ClosedRange<Int>, seed: UInt32)?
        if let stream {
            let streamID = try ReportOutput.checked { () throws(ConduitError) in try StreamID.validated(stream) }
            let sessionType = try ReportOutput.checked { () throws(ConduitError) in try SessionType(name: type) }
            let sizes = try ReportOutput.checked { () throws(ConduitError) in try JobArguments.sizeRange(size, for: sessionType) }
            guard count >= 0, count <= Int(UInt32.max) else { throw ValidationError("--count must be in 0...\(UInt32.max)") }
            send = (streamID, sessionType, count, sizes, seed)
        }
        guard send != nil || expect != nil else { throw ValidationError("give --stream (to send) or --expect (to receive), or both") }
        if let expect, expect < 0 { throw ValidationError("--expect must not be negative") }
        guard peers >= 0 else { throw ValidationError("--peers must not be negative") }
        let job = JoinJob(runtime: try common.runtime(url: relay), options: .init(
            relay: relay, room: roomID, peer: peerID, token: token, subgroup: subgroupName, send: send, to: target,
            waitForPeers: peers, expect: expect, timeout: try ReportOutput.timeout(timeout)
        ))
        let report = try await job.run { ReportOutput.printNow($0) }
        if common.json {
            try ReportOutput.printJSON(report)
        } else {
            print("join: \(report.peer) in \(report.room), ended: \(report.ended); peers at the end: \(report.peers.joined(separator: ", "))")
            if send != nil { print("  sent \(report.sent) messages, \(ReportOutput.bytes(report.sentBytes))") }
            if expect != nil {
                print("  received \(report.received), valid \(report.valid), duplicates \(report.duplicates), out of order \(report.outOfOrder), corrupted \(report.corrupted), missing \(report.missing)")
                for (sender, valid) in report.bySender.sorted(by: { $0.key < $1.key }) { print("    from \(sender): \(valid)") }
            }
        }
        if report.corrupted > 0 || report.missing > 0 { throw ExitCode.failure }
    }
}

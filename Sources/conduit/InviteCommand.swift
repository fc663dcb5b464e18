import ArgumentParser
import Conduit
import ConduitTooling
import ConduitRooms

struct InviteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invite",
        abstract: "Invite peers through a relay and wait until the invitation ends (a call: --to one peer, --data the call's room).",
        discussion: """
            Joins --room on the relay as --as (with --token), invites every --to peer (addressed by peer ID; they \
            may be in any room on that relay), prints each event as it comes (inviteeAccepted, inviteeRejected, \
            invitationTimeout, invitationCancelled) and leaves once every invitee settled. Exits 0 when at least \
            one invitee accepted; otherwise prints one line with the reason (rejected by bob (busy), bob did not \
            answer in time, bob left the relay, cancelled) and exits 1. A refused invite (inviteesOffline with \
            --online-only, tooManyInvitees, ...) exits 1 with the relay's reason. With --json the last line is \
            one JSON object: invitation, invitees, skippedOffline, states, answers, events, result.
            """
    )

    @Argument(help: "Transport URL of the relay.")
    var relay: String

    @Option(help: "Room to join on the relay (a lobby); invitations reach peers in any room.")
    var room: String

    @Option(name: .customLong("as"), help: "This peer's ID (the one the token is for).")
    var peer: String

    @Option(help: "Join token from 'conduit token'.")
    var token: String

    @Option(parsing: .upToNextOption, help: "The peers to invite.")
    var to: [String]

    @Option(help: "Custom data sent with the invitation (for a call: the room ID to meet in).")
    var data: String = ""

    @Option(help: "Seconds before unanswered invitees time out (0: never).")
    var timeout: UInt32 = 30

    @Flag(help: "Invite only the peers online now; fail if none is.")
    var onlineOnly = false

    @OptionGroup var common: CommonOptions

    func run() async throws {
        let roomID = try ReportOutput.checked { () throws(ConduitError) in try RoomID(room) }
        let peerID = try ReportOutput.checked { () throws(ConduitError) in try PeerID(peer) }
        let invitees = try to.map { name in try ReportOutput.checked { () throws(ConduitError) in try PeerID(name) } }
        guard !invitees.isEmpty else { throw ValidationError("give at least one --to peer") }
        let job = InviteJob(runtime: try common.runtime(url: relay), options: .init(
            relay: relay, room: roomID, peer: peerID, token: token, invitees: invitees, data: Array(data.utf8),
            timeout: .seconds(timeout), onlineOnly: onlineOnly))
        let report: InviteJob.Report
        do {
            report = try await job.run { ReportOutput.printNow($0) }
        } catch let error as InvitationError {
            print("invite refused: \(error)")
            throw ExitCode.failure
        }
        if common.json { try ReportOutput.printJSON(report) } else { print("result: \(report.result)") }
        if !report.accepted { throw ExitCode.failure }
    }
}

struct AnswerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "answer",
        abstract: "Wait for the next invitation through a relay and accept or reject it.",
        discussion: """
            Joins --room on the relay as --as (with --token), waits up to --wait seconds for an invitation, \
            prints it (inviter, invitees, data), answers it with --accept or --reject (and --data, for example \
            busy), then leaves. Exits 0 once the relay took the answer; 1 if no invitation came in time or the \
            relay refused the answer (invitationEnded: it was cancelled or timed out first). With --json the \
            last line is one JSON object: invitation, inviter, invitees, group, data, timeoutSeconds, answer.
            """
    )

    @Argument(help: "Transport URL of the relay.")
    var relay: String

    @Option(help: "Room to join on the relay while waiting (a lobby).")
    var room: String

    @Option(name: .customLong("as"), help: "This peer's ID (the one the token is for).")
    var peer: String

    @Option(help: "Join token from 'conduit token'.")
    var token: String

    @Flag(help: "Accept the invitation.")
    var accept = false

    @Flag(help: "Reject the invitation.")
    var reject = false

    @Option(help: "Custom data sent with the answer (e.g. busy).")
    var data: String = ""

    @Option(help: "Seconds to wait for an invitation.")
    var wait: Double = 30

    @OptionGroup var common: CommonOptions

    func run() async throws {
        guard accept != reject else { throw ValidationError("give exactly one of --accept and --reject") }
        let roomID = try ReportOutput.checked { () throws(ConduitError) in try RoomID(room) }
        let peerID = try ReportOutput.checked { () throws(ConduitError) in try PeerID(peer) }
        let job = AnswerJob(runtime: try common.runtime(url: relay), options: .init(
            relay: relay, room: roomID, peer: peerID, token: token, accept: accept, data: Array(data.utf8),
            wait: try ReportOutput.timeout(wait)))
        let report: AnswerJob.Report
        do {
            report = try await job.run { ReportOutput.printNow($0) }
        } catch let error as InvitationError {
            print("answer refused: \(error)")
            throw ExitCode.failure
        } catch let error as ConduitError {
            print("answer: \(error.message)")
            throw ExitCode.failure
        }
        if common.json { try ReportOutput.printJSON(report) }
    }
}

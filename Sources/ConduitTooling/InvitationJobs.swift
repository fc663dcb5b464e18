package import Conduit
import ConduitCore
import ConduitRooms

/// `conduit invite`: join a room on a relay, invite peers, print each event until the invitation
/// ends, and report how. A library so tests run it in process.
package struct InviteJob: Sendable {
    package struct Options: Sendable {
        package var relay: String
        package var room: RoomID
        package var peer: PeerID
        package var token: String
        package var invitees: [PeerID]
        package var data: [UInt8]
        /// The invitation's own timeout (whole seconds on the wire); the job waits a little longer.
        package var timeout: Duration
        package var onlineOnly: Bool

        package init(relay: String, room: RoomID, peer: PeerID, token: String, invitees: [PeerID], data: [UInt8] = [], timeout: Duration = .seconds(30), onlineOnly: Bool = false) {
            self.relay = relay
            self.room = room
            self.peer = peer
            self.token = token
            self.invitees = invitees
            self.data = data
            self.timeout = timeout
            self.onlineOnly = onlineOnly
        }
    }

    /// What `conduit invite --json` prints (its last line).
    package struct Report: Sendable, Codable, Hashable {
        package var invitation = ""
        package var invitees: [String] = []
        /// Left out because offline (`--online-only`).
        package var skippedOffline: [String] = []
        /// Each invitee's final state: accepted, rejected, timedOut, left, cancelled.
        package var states: [String: String] = [:]
        /// Each answering invitee's data, as UTF-8 text.
        package var answers: [String: String] = [:]
        /// The events, one line each, in order.
        package var events: [String] = []
        /// "accepted" when at least one invitee accepted; else why not ("rejected by bob (busy)", ...).
        package var result = ""
        package var accepted: Bool { result == "accepted" }
    }

    package let runtime: ConduitRuntime
    package let options: Options

    package init(runtime: ConduitRuntime, options: Options) {
        self.runtime = runtime
        self.options = options
    }

    /// Runs the job; `progress` gets one line per event. Throws the relay's refusal of the invite
    /// (`InvitationError`) or the join's `ConduitError`.
    package func run(progress: @escaping @Sendable (String) -> Void = { _ in }) async throws -> Report {
        let lobby = try await runtime.join(relay: options.relay, room: options.room, as: options.peer, token: options.token)
        let events = lobby.invitationEvents
        let receipt: InvitationReceipt
        do {
            receipt = try await lobby.invite(options.invitees, data: options.data, timeout: options.timeout, onlineOnly: options.onlineOnly)
        } catch {
            await lobby.leave()
            throw error
        }
        var report = Report(invitation: receipt.id.description, invitees: options.invitees.map(\.rawValue), skippedOffline: receipt.skippedOffline.map(\.rawValue))
        progress("invited \(options.invitees.map(\.rawValue).joined(separator: ", ")) as \(options.peer): invitation \(receipt.id)")
        if !receipt.skippedOffline.isEmpty { progress("skipped (offline): \(report.skippedOffline.joined(separator: ", "))") }

        // Events are printed as they come; the outcome says when the invitation ended.
        let printer = Task {
            var lines: [String] = []
            for await event in events where event.invitationID == receipt.id {
                let line = InvitationText.describe(event)
                progress(line)
                lines.append(line)
            }
            return lines
        }
        let limit = options.timeout == .zero ? Duration.seconds(86_400) : options.timeout + .seconds(5)
        let outcome = await withTaskGroup(of: InvitationOutcome?.self) { group in
            group.addTask { await lobby.outcome(of: receipt.id) }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        await lobby.leave()
        report.events = await printer.value
        guard let outcome else {
            report.result = "no outcome: the relay did not end the invitation"
            return report
        }
        for (peer, state) in zip(outcome.view.invitees, outcome.view.states) { report.states[peer.rawValue] = "\(state)" }
        for (peer, data) in outcome.answerData { report.answers[peer.rawValue] = String(decoding: data, as: UTF8.self) }
        report.result = InvitationText.result(outcome)
        return report
    }
}

/// `conduit answer`: join a room on a relay, wait for the next invitation, accept or reject it.
package struct AnswerJob: Sendable {
    package struct Options: Sendable {
        package var relay: String
        package var room: RoomID
        package var peer: PeerID
        package var token: String
        package var accept: Bool
        package var data: [UInt8]
        /// How long to wait for an invitation.
        package var wait: Duration

        package init(relay: String, room: RoomID, peer: PeerID, token: String, accept: Bool, data: [UInt8] = [], wait: Duration = .seconds(30)) {
            self.relay = relay
            self.room = room
            self.peer = peer
            self.token = token
            self.accept = accept
            self.data = data
            self.wait = wait
        }
    }

    /// What `conduit answer --json` prints (its last line).
    package struct Report: Sendable, Codable, Hashable {
        package var invitation = ""
        package var inviter = ""
        package var invitees: [String] = []
        package var group: String?
        /// The invitation's custom data as UTF-8 text (for a call: the room to join).
        package var data = ""
        package var timeoutSeconds: UInt32 = 0
        /// "accepted" or "rejected".
        package var answer = ""
    }

    package let runtime: ConduitRuntime
    package let options: Options

    package init(runtime: ConduitRuntime, options: Options) {
        self.runtime = runtime
        self.options = options
    }

    /// Runs the job; `progress` gets one-line updates. Throws `timedOut` if no invitation came,
    /// or the relay's refusal of the answer (`InvitationError`).
    package func run(progress: @escaping @Sendable (String) -> Void = { _ in }) async throws -> Report {
        let lobby = try await runtime.join(relay: options.relay, room: options.room, as: options.peer, token: options.token)
        let events = lobby.invitationEvents
        progress("joined \(options.room) as \(options.peer); waiting for an invitation")
        let wait = options.wait, clock = runtime.clock
        let ring = await withTaskGroup(of: NewInvitation?.self) { group in
            group.addTask {
                for await event in events { if case .newInvitation(let new) = event { return new } }
                return nil
            }
            group.addTask {
                // On the runtime's clock when it has one, so a test on virtual time waits virtually.
                if let clock {
                    try? await clock.sleep(until: clock.now() + wait)
                } else {
                    try? await Task.sleep(for: wait)
                }
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let ring else {
            await lobby.leave()
            throw ConduitError(.timedOut, "no invitation within \(options.wait)")
        }
        progress(InvitationText.describe(.newInvitation(ring)))
        var report = Report(
            invitation: ring.id.description, inviter: ring.inviter.rawValue, invitees: ring.invitees.map(\.rawValue),
            group: ring.groupID?.rawValue, data: String(decoding: ring.data, as: UTF8.self), timeoutSeconds: ring.timeoutSeconds)
        do {
            if options.accept {
                try await lobby.accept(ring.id, data: options.data)
            } else {
                try await lobby.reject(ring.id, data: options.data)
            }
        } catch {
            await lobby.leave()
            throw error
        }
        report.answer = options.accept ? "accepted" : "rejected"
        progress("\(report.answer) \(ring.id)")
        await lobby.leave()
        return report
    }
}

/// One-line descriptions shared by the jobs.
package enum InvitationText {
    static func text(_ data: [UInt8]) -> String { data.isEmpty ? "" : " (\(String(decoding: data, as: UTF8.self)))" }

    package static func describe(_ event: InvitationEvent) -> String {
        switch event {
        case .newInvitation(let new):
            "newInvitation \(new.id) from \(new.inviter) to \(new.invitees.map(\.rawValue).joined(separator: ", "))\(text(new.data))"
        case .inviteeAccepted(let id, let invitee, let data): "inviteeAccepted \(id) by \(invitee)\(text(data))"
        case .inviteeRejected(let id, let invitee, let data): "inviteeRejected \(id) by \(invitee)\(text(data))"
        case .invitationCancelled(let id, let inviter, let data, let reason): "invitationCancelled \(id) by \(inviter) (\(reason))\(text(data))"
        case .invitationTimeout(let id, let invitees, let cause):
            "invitationTimeout \(id) for \(invitees.map(\.rawValue).joined(separator: ", ")) (\(cause))"
        }
    }

    /// "accepted" when at least one invitee accepted; otherwise the reasons, invitee by invitee.
    package static func result(_ outcome: InvitationOutcome) -> String {
        if !outcome.accepted.isEmpty { return "accepted" }
        if case .cancelled(let reason)? = outcome.view.end { return "cancelled (\(reason))" }
        let reasons = zip(outcome.view.invitees, outcome.view.states).map { peer, state in
            switch state {
            case .rejected: "rejected by \(peer)\(text(outcome.answerData[peer] ?? []))"
            case .timedOut: "\(peer) did not answer in time"
            case .left: "\(peer) left the relay"
            default: "\(peer): \(state)"
            }
        }
        return reasons.joined(separator: "; ")
    }
}

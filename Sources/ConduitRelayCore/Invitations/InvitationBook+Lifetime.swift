public import ConduitCore
import ConduitRooms

// Deadlines, peers leaving the relay, and how an ended invitation leaves every index.

extension InvitationBook {
    /// Times out every open invitation whose deadline is at or before `now`, and forgets
    /// tombstones whose window has passed. Call it at ``nextTimeout``.
    public mutating func handleTimeouts(now: ConduitInstant) {
        var due: [Invitation] = []
        while let top = deadlines.first, top.deadline <= now {
            _ = deadlines.popFirst()
            // Stale entries (invitations that ended before their deadline) are skipped here.
            if let id = InvitationID(rawValue: top.handle), let invitation = open[id] { due.append(invitation) }
        }
        // Several invitations can share a deadline: tell them in the order they were made.
        due.sort { $0.sequence < $1.sequence }
        for invitation in due { timeOut(invitation.id, now: now) }
        forgetTombstones(now: now)
    }

    /// `peer` left the relay. Invitations it made are cancelled (`inviterLeft`); in invitations it
    /// was invited to and had not answered, it counts as timed out (cause `inviteeLeft`); it is
    /// sent nothing more about any of them. Call it once the peer is gone. (If an invitation's
    /// deadline has come at that very `now`, the deadline is settled first and its timeout event
    /// names the leaving peer too, as at any deadline; the relay drops what it cannot deliver.)
    public mutating func peerLeft(_ peer: PeerID, now: ConduitInstant) {
        guard let mine = byPeer[peer] else { return }
        let ordered = mine.compactMap { open[$0] }.sorted { $0.sequence < $1.sequence }
        for invitation in ordered {
            let id = invitation.id
            settleDeadline(of: id, now: now)
            guard let invitation = open[id] else { continue }  // its deadline had come: timed out just now
            if invitation.inviter == peer {
                cancelOpen(id, data: [], reason: .inviterLeft, now: now)
                continue
            }
            guard let index = invitation.index(of: peer) else { continue }
            open[id]!.gone[index] = true
            guard invitation.states[index] == .pending else { continue }
            open[id]!.states[index] = .left
            open[id]!.pendingCount -= 1
            let event = InvitationEvent.invitationTimeout(id, invitees: [peer], cause: .inviteeLeft)
            open[id]!.forEachAudience(except: peer) { outbox.append(InvitationDelivery(to: $0, event: event)) }
            if open[id]!.pendingCount == 0 { end(id, .settled, now: now) }
        }
        byPeer[peer] = nil
    }

    /// Times `id` out now if its deadline has come, so that whatever the caller does next sees
    /// the state at `now` whether or not ``handleTimeouts(now:)`` ran first.
    mutating func settleDeadline(of id: InvitationID, now: ConduitInstant) {
        guard let deadline = open[id]?.deadline, deadline <= now else { return }
        timeOut(id, now: now)
    }

    mutating func timeOut(_ id: InvitationID, now: ConduitInstant) {
        guard var invitation = open[id] else { return }
        var late: [PeerID] = []
        for i in invitation.states.indices where invitation.states[i] == .pending {
            invitation.states[i] = .timedOut
            late.append(invitation.invitees[i])
        }
        invitation.pendingCount = 0
        open[id] = invitation
        let event = InvitationEvent.invitationTimeout(id, invitees: late, cause: .deadline)
        invitation.forEachAudience(except: nil) { outbox.append(InvitationDelivery(to: $0, event: event)) }
        end(id, .settled, now: now)
    }

    /// Moves an open invitation to the tombstones and out of every index.
    mutating func end(_ id: InvitationID, _ how: InvitationEnd, now: ConduitInstant) {
        guard var invitation = open.removeValue(forKey: id) else { return }
        invitation.end = how
        invitation.data = []
        endedSinceTaken.append(id)
        if endedSinceTaken.count > max(1, configuration.maxOpenInvitations) { endedSinceTaken.removeFirst() }
        unindex(id, from: invitation.inviter)
        for peer in invitation.invitees { unindex(id, from: peer) }
        let remaining = openCountByInviter[invitation.inviter, default: 1] - 1
        openCountByInviter[invitation.inviter] = remaining > 0 ? remaining : nil

        if configuration.maxTombstones > 0 {
            tombstones[id] = invitation
            tombstoneOrder.append((id, now + configuration.tombstoneLifetime))
            while tombstones.count > configuration.maxTombstones, let oldest = tombstoneOrder.popFirst() {
                tombstones[oldest.id] = nil
            }
        }
        compactDeadlinesIfStale()
    }


    mutating func unindex(_ id: InvitationID, from peer: PeerID) {
        guard var set = byPeer.removeValue(forKey: peer) else { return }
        set.remove(id)
        if !set.isEmpty { byPeer[peer] = set }
    }

    mutating func forgetTombstones(now: ConduitInstant) {
        while let oldest = tombstoneOrder.first, oldest.expires <= now {
            tombstoneOrder.removeFirst()
            tombstones[oldest.id] = nil
        }
    }

    /// Invitations that end before their deadline leave an entry in the heap; rebuild it when
    /// those outnumber the open invitations, so a stream of cancelled invitations with long
    /// timeouts cannot grow it without bound.
    mutating func compactDeadlinesIfStale() {
        guard deadlines.count > 1_024, deadlines.count > 2 * open.count else { return }
        var rebuilt = LinkDeadlineHeap()
        for invitation in open.values.sorted(by: { $0.sequence < $1.sequence }) {
            if let deadline = invitation.deadline { rebuilt.push(deadline, invitation.id.rawValue) }
        }
        deadlines = rebuilt
    }
}

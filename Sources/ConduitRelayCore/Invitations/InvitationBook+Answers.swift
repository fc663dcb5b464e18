public import ConduitCore
public import ConduitRooms

// Accept, reject and cancel: the rules are listed on ``InvitationBook``.

extension InvitationBook {
    /// An invitee's answer (the rooms client's vocabulary, where the answer is written).
    public typealias Answer = InvitationAnswer

    /// `invitee` accepts: `inviteeAccepted` goes to everyone else involved.
    public mutating func accept(_ id: InvitationID, by invitee: PeerID, data: [UInt8] = [], now: ConduitInstant) throws(InvitationError) {
        try answer(.accept, id, by: invitee, data: data, now: now)
    }

    /// `invitee` rejects (data such as "busy"): `inviteeRejected` goes to everyone else involved.
    public mutating func reject(_ id: InvitationID, by invitee: PeerID, data: [UInt8] = [], now: ConduitInstant) throws(InvitationError) {
        try answer(.reject, id, by: invitee, data: data, now: now)
    }

    /// Applies `invitee`'s answer to `id`. Answering the same way twice is idempotent; throws `InvitationError` (`unknownInvitation`, `invitationEnded`, `notInvitee`, `alreadyAnswered`) otherwise.
    public mutating func answer(_ answer: Answer, _ id: InvitationID, by invitee: PeerID, data: [UInt8], now: ConduitInstant) throws(InvitationError) {
        try checkData(data)
        settleDeadline(of: id, now: now)
        guard let invitation = invitation(id), let index = try partyIndex(invitation, invitee, wantsInviter: false) else {
            throw Self.unknown(id)
        }
        switch invitation.states[index] {
        case .pending:
            break
        case answer.state:
            return  // the same answer again: already done, nothing new to tell
        case .accepted, .rejected:
            throw InvitationError(.alreadyAnswered, "\(invitee) already \(invitation.states[index]) invitation \(id)")
        case .timedOut, .left, .cancelled:
            throw InvitationError(.invitationEnded, "\(invitee)'s part of invitation \(id) ended: \(invitation.states[index])")
        }
        // Pending implies open: an ended invitation has no pending invitee.
        open[id]!.states[index] = answer.state
        open[id]!.pendingCount -= 1
        let event: InvitationEvent =
            answer == .accept
            ? .inviteeAccepted(id, invitee: invitee, data: data) : .inviteeRejected(id, invitee: invitee, data: data)
        invitation.forEachAudience(except: invitee) { outbox.append(InvitationDelivery(to: $0, event: event)) }
        if open[id]!.pendingCount == 0 { end(id, .settled, now: now) }
    }

    /// The inviter cancels: pending invitees become `cancelled`, every invitee still on the relay
    /// gets `invitationCancelled`, and the invitation ends.
    public mutating func cancel(_ id: InvitationID, by inviter: PeerID, data: [UInt8] = [], now: ConduitInstant) throws(InvitationError) {
        try checkData(data)
        settleDeadline(of: id, now: now)
        guard let invitation = invitation(id), try partyIndex(invitation, inviter, wantsInviter: true) != nil else {
            throw Self.unknown(id)
        }
        if let end = invitation.end {
            if end == .cancelled(.cancelledByInviter) { return }  // cancelled already: idempotent
            throw InvitationError(.invitationEnded, "invitation \(id) already ended (\(end))")
        }
        cancelOpen(id, data: data, reason: .cancelledByInviter, now: now)
    }

    /// The index of `peer` among the invitees (or `-1` standing for the inviter) when `peer` may
    /// act as asked; `nil` when it is no party at all (reported as unknown, so IDs cannot be probed).
    func partyIndex(_ invitation: Invitation, _ peer: PeerID, wantsInviter: Bool) throws(InvitationError) -> Int? {
        let index = invitation.index(of: peer)
        if wantsInviter {
            if peer == invitation.inviter { return -1 }
            if index != nil { throw InvitationError(.notInviter, "only the inviter can cancel invitation \(invitation.id)") }
            return nil
        }
        if let index { return index }
        if peer == invitation.inviter { throw InvitationError(.notInvitee, "the inviter cannot answer its own invitation \(invitation.id)") }
        return nil
    }

    static func unknown(_ id: InvitationID) -> InvitationError {
        InvitationError(.unknownInvitation, "no invitation \(id) for this peer")
    }

    mutating func cancelOpen(_ id: InvitationID, data: [UInt8], reason: InvitationEvent.CancelReason, now: ConduitInstant) {
        guard var invitation = open[id] else { return }
        for i in invitation.states.indices where invitation.states[i] == .pending { invitation.states[i] = .cancelled }
        invitation.pendingCount = 0
        open[id] = invitation
        let event = InvitationEvent.invitationCancelled(id, inviter: invitation.inviter, data: data, reason: reason)
        for (i, peer) in invitation.invitees.enumerated() where !invitation.gone[i] {
            outbox.append(InvitationDelivery(to: peer, event: event))
        }
        end(id, .cancelled(reason), now: now)
    }
}

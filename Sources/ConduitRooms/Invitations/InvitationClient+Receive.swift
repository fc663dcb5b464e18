import ConduitCore

// What the relay sends: replies (matched by tag) and events (applied to the views).

extension InvitationClient {
    /// Applies one message from the relay and returns what the app should hear, in order.
    public mutating func receive(_ message: InvitationMessage) -> [Update] {
        switch message {
        case .invite, .accept, .reject, .cancel:
            droppedMessages += 1  // requests go to the relay, never from it
            return []
        case .invited(let tag, let receipt):
            guard case .invite(let request)? = inFlight.removeValue(forKey: tag) else { return drop() }
            if views.count < configuration.maxTrackedInvitations {
                let invitees = request.invitees.filter { !receipt.skippedOffline.contains($0) }
                views[receipt.id] = InvitationView(
                    id: receipt.id, role: .inviter, inviter: me, groupID: request.groupID, invitees: invitees, data: request.data,
                    timeoutSeconds: request.timeoutSeconds)
            }
            return [.inviteSent(tag: tag, receipt)]
        case .done(let tag, let id):
            guard let pending = inFlight.removeValue(forKey: tag) else { return drop() }
            var updates: [Update] = [.requestDone(tag: tag, id)]
            switch pending {
            case .answer(let answered, let answer) where answered == id:
                if views[id]?.settle(me, answer.state) == true { updates += endIfSettled(id) }
            case .cancel(let cancelled) where cancelled == id:
                updates += cancelView(id, reason: .cancelledByInviter)
            default:
                break
            }
            return updates
        case .refused(let tag, _, let error):
            guard inFlight.removeValue(forKey: tag) != nil else { return drop() }
            return [.requestRefused(tag: tag, error)]
        case .event(let event):
            return apply(event)
        }
    }

    mutating func apply(_ event: InvitationEvent) -> [Update] {
        switch event {
        case .newInvitation(let new):
            guard views[new.id] == nil, new.invitees.contains(me), views.count < configuration.maxTrackedInvitations else {
                return drop()
            }
            views[new.id] = InvitationView(
                id: new.id, role: .invitee, inviter: new.inviter, groupID: new.groupID, invitees: new.invitees, data: new.data,
                timeoutSeconds: new.timeoutSeconds)
            return [.event(event)]
        case .inviteeAccepted(let id, let invitee, _), .inviteeRejected(let id, let invitee, _):
            guard views[id] != nil else { return drop() }
            let state: InviteeState = if case .inviteeAccepted = event { .accepted } else { .rejected }
            _ = views[id]!.settle(invitee, state)
            return [.event(event)] + endIfSettled(id)
        case .invitationTimeout(let id, let invitees, let cause):
            guard views[id] != nil else { return drop() }
            for invitee in invitees { _ = views[id]!.settle(invitee, cause == .deadline ? .timedOut : .left) }
            return [.event(event)] + endIfSettled(id)
        case .invitationCancelled(let id, _, _, let reason):
            guard views[id] != nil else { return drop() }
            return [.event(event)] + cancelView(id, reason: reason)
        }
    }

    mutating func endIfSettled(_ id: InvitationID) -> [Update] {
        guard views[id]?.endIfSettled() == true, let view = views.removeValue(forKey: id) else { return [] }
        return [.ended(id, view)]
    }

    mutating func cancelView(_ id: InvitationID, reason: InvitationEvent.CancelReason) -> [Update] {
        guard var view = views.removeValue(forKey: id) else { return [] }
        for i in view.states.indices where view.states[i] == .pending { view.states[i] = .cancelled }
        view.end = .cancelled(reason)
        return [.ended(id, view)]
    }

    mutating func drop() -> [Update] {
        droppedMessages += 1
        return []
    }
}

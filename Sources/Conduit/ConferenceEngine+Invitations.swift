import ConduitCore
import ConduitRooms
import DequeModule

/// The invitation half of a `ConferenceEngine`: an `InvitationClient` for the bookkeeping,
/// the callers waiting for the relay's replies (by tag), and the outcomes of ended invitations.
/// Every table is bounded: waiters by the client's requests in flight, answers by the
/// invitations it tracks, outcomes by ``maxRecentOutcomes``.
struct ConferenceInvitationState: Sendable {
    static let maxRecentOutcomes = 1_024

    var client: InvitationClient?
    var waiters: [UInt32: CheckedContinuation<InvitationClient.Update, Never>] = [:]
    /// Answer data of each open invitation, by invitee, for its outcome.
    var answers: [InvitationID: [PeerID: [UInt8]]] = [:]
    var outcomeWaiters: [InvitationID: [CheckedContinuation<InvitationOutcome?, Never>]] = [:]
    var recentOutcomes: [InvitationID: InvitationOutcome] = [:]
    var recentOrder = Deque<InvitationID>()
    /// Relay messages that did not parse (the client counts the ones that parsed but matched nothing).
    var malformedMessages = 0
    /// Events not queued because the app left 8,192 (the capacity of ``Conference/InvitationEvents``) unread.
    var droppedEvents = 0
    var isEnded = false
}

extension ConferenceEngine {
    /// Sends the request `make` builds and waits for the relay's reply to it.
    func invitationRequest(
        _ make: (inout InvitationClient) throws(InvitationError) -> InvitationMessage
    ) async throws(InvitationError) -> InvitationClient.Update {
        guard !invitationState.isEnded, !isEnded else { throw InvitationError(.notConnected, "the conference has ended") }
        // No suspension from here to the send: the client is updated in place, and replies
        // (which arrive on this actor) find the request in flight.
        if invitationState.client == nil { invitationState.client = InvitationClient(me: localPeer) }
        let message = try make(&invitationState.client!)
        let tag = message.tag
        let body: [UInt8]
        do { body = try message.encoded() } catch {
            invitationState.client!.abandonRequest(tag: tag)
            throw InvitationError(.customDataTooLarge, "the request cannot be encoded: \(error)")
        }
        guard body.count <= RoomControlFrame.maxExtensionBytes else {
            invitationState.client!.abandonRequest(tag: tag)
            throw InvitationError(.customDataTooLarge, "the request is \(body.count) bytes; one frame carries \(RoomControlFrame.maxExtensionBytes)")
        }
        guard sendRelayExtension(InvitationExtension.id, body: body) else {
            invitationState.client!.abandonRequest(tag: tag)
            throw InvitationError(.notConnected, "not connected to the relay")
        }
        return await withCheckedContinuation { invitationState.waiters[tag] = $0 }
    }

    /// An extension frame from the relay: invitation replies and events.
    func receiveRelayExtension(_ id: UInt8, body: [UInt8]) {
        guard id == InvitationExtension.id, !invitationState.isEnded else { return }
        let message: InvitationMessage
        do { message = try InvitationMessage.parse(body) } catch {
            invitationState.malformedMessages += 1
            return
        }
        if invitationState.client == nil { invitationState.client = InvitationClient(me: localPeer) }
        for update in invitationState.client!.receive(message) {
            switch update {
            case .inviteSent(let tag, _), .requestDone(let tag, _), .requestRefused(let tag, _):
                invitationState.waiters.removeValue(forKey: tag)?.resume(returning: update)
            case .event(let event):
                noteAnswer(event)
                if !invitationEvents.yield(event) {
                    // Bounded like every notification stream: the loss is counted and said.
                    invitationState.droppedEvents += 1
                    eventSink.yield(.invitationEventsDropped(count: 1))
                }
            case .ended(let id, let view):
                let outcome = InvitationOutcome(view: view, answerData: invitationState.answers.removeValue(forKey: id) ?? [:])
                remember(outcome)
                for waiter in invitationState.outcomeWaiters.removeValue(forKey: id) ?? [] { waiter.resume(returning: outcome) }
            }
        }
    }

    private func noteAnswer(_ event: InvitationEvent) {
        switch event {
        case .inviteeAccepted(let id, let invitee, let data), .inviteeRejected(let id, let invitee, let data):
            invitationState.answers[id, default: [:]][invitee] = data
        default:
            break
        }
    }

    private func remember(_ outcome: InvitationOutcome) {
        let id = outcome.view.id
        if invitationState.recentOutcomes.updateValue(outcome, forKey: id) == nil { invitationState.recentOrder.append(id) }
        while invitationState.recentOrder.count > ConferenceInvitationState.maxRecentOutcomes, let oldest = invitationState.recentOrder.popFirst() {
            invitationState.recentOutcomes[oldest] = nil
        }
    }

    /// Waits until invitation `id` (made or received here) ends; nil if this side does not know
    /// it, or the conference ended first.
    func invitationOutcome(_ id: InvitationID) async -> InvitationOutcome? {
        if let done = invitationState.recentOutcomes[id] { return done }
        guard !invitationState.isEnded, invitationState.client?.view(id) != nil else { return nil }
        return await withCheckedContinuation { invitationState.outcomeWaiters[id, default: []].append($0) }
    }

    func invitationView(_ id: InvitationID) -> InvitationView? { invitationState.client?.view(id) }
    var openInvitations: [InvitationView] { invitationState.client?.openInvitations ?? [] }
    var invitationDrops: Int {
        invitationState.malformedMessages + invitationState.droppedEvents + (invitationState.client?.droppedMessages ?? 0)
    }

    /// The link is gone: every waiting caller hears `notConnected`, the event stream ends.
    func endInvitations() {
        guard !invitationState.isEnded else { return }
        invitationState.isEnded = true
        let gone = InvitationError(.notConnected, "the conference ended before the relay answered")
        for (tag, waiter) in invitationState.waiters { waiter.resume(returning: .requestRefused(tag: tag, gone)) }
        invitationState.waiters.removeAll()
        for waiters in invitationState.outcomeWaiters.values { for waiter in waiters { waiter.resume(returning: nil) } }
        invitationState.outcomeWaiters.removeAll()
        invitationEvents.finish()
    }
}

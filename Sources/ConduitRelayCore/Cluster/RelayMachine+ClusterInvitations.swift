import DequeModule
import ConduitCore
import ConduitRooms

// Invitations across the relays of a cluster (and the shards of one relay). An invitation lives
// in the book of the relay its inviter asked (its home), which decides everything as on one relay:
//
//   invite at home ──► events for peers online elsewhere ──► invitationEvents to each of their relays
//        │                (one message per relay, on the home's node stream)
//        │            there: handed to the peers' connections; the relay remembers the invitation's
//        │            home (a proxy), so that answers can go back
//   accept / reject / cancel at another relay ──► invitationRequest(handle) to the home
//        ──► the home's book decides ──► invitationReply(handle) ──► the peer, with its own tag
//        (no reply within remoteRequestTimeout: refused `relayUnavailable`)
//   the invitation ends at home ──► invitationsEnded ──► proxies kept as ended for the book's
//        tombstone lifetime (late answers still reach the home's tombstone)
//   the home dies ──► its open invitations are cancelled (`inviterLeft`) for the invitees here;
//   an invitee's relay dies ──► its peers go offline at home ──► `inviteeLeft`, as on one relay.

/// An invitation another relay is home to, whose events reached peers here.
struct InvitationProxy: Sendable {
    let home: RelayNodeID
    /// From its `newInvitation` (nil when only later events reached this relay).
    var inviter: PeerID?
    var invitees: [PeerID] = []
    var ended = false
}

/// An answer or cancel forwarded to the invitation's home, waiting for the reply.
struct RemoteInvitationRequest: Sendable {
    let connection: RelayConnectionID
    let home: RelayNodeID
    let tag: UInt32
    let invitation: InvitationID
    let deadline: ConduitInstant
}

extension RelayMachine {
    // MARK: The home's side

    /// Sends the events for peers online at other relays, one message per relay (cut at
    /// `maxEventsPerMessage`), and remembers which invitations crossed.
    mutating func forwardInvitationEvents(_ byNode: [RelayNodeID: [InvitationDelivery]], now: ConduitInstant) {
        for (node, deliveries) in byNode.sorted(by: { $0.key < $1.key }) {
            let carried = deliveries.filter { RelayClusterNodeMessage.canCarry(.event($0.event)) }
            var start = 0
            while start < carried.count {
                let end = min(carried.count, start + RelayClusterNodeMessage.maxEventsPerMessage)
                publishNode(.invitationEvents(Array(carried[start..<end])), target: node, now: now)
                start = end
            }
            statistics.cluster.invitationEventsForwarded += carried.count
            invitations.undeliverableEvents += deliveries.count - carried.count
            for delivery in carried { invitations.crossed.insert(delivery.event.invitationID) }
        }
    }

    /// Tells every relay which of the invitations that crossed have ended.
    mutating func announceEndedInvitations(now: ConduitInstant) {
        let ended = invitations.book.takeEnded().filter { invitations.crossed.remove($0) != nil }
        var start = 0
        while start < ended.count {
            let end = min(ended.count, start + Int(UInt16.max))
            publishNode(.invitationsEnded(Array(ended[start..<end])), now: now)
            start = end
        }
    }

    /// Another relay's peer answers or cancels an invitation of this relay's book: decided as for
    /// a peer here; the reply goes back to that relay, then the events go out.
    mutating func serveRemoteRequest(_ request: InvitationMessage, handle: UInt64, from requester: PeerID, at node: RelayNodeID, now: ConduitInstant) {
        statistics.cluster.invitationRequestsServed += 1
        var reply = invitationReply(to: request, from: requester, now: now)
        if !RelayClusterNodeMessage.canCarry(reply) {
            reply = .refused(tag: request.tag, nil, InvitationError(.malformedRequest, "the reply could not be encoded"))
        }
        publishNode(.invitationReply(handle: handle, reply: reply), target: node, now: now)
        deliverInvitationEvents(now: now)
    }

    // MARK: The other relays' side

    /// An answer or cancel for an invitation another relay is home to: forwarded there (true), or
    /// left to this relay's book (false: its own invitations, and IDs it has not heard of).
    mutating func forwardToHome(_ message: InvitationMessage, from peer: PeerID, connection: RelayConnectionID, now: ConduitInstant) -> Bool {
        let id: InvitationID
        switch message {
        case .accept(_, let invitation, _), .reject(_, let invitation, _), .cancel(_, let invitation, _): id = invitation
        default: return false
        }
        guard cluster != nil, invitations.book.invitation(id) == nil, let proxy = invitations.proxies[id] else { return false }
        invitations.requestsHandled += 1
        guard cluster!.nodes.peers[proxy.home] != nil else {
            // Its home died (its open invitation was cancelled here): nothing can change it now.
            sendInvitation(.refused(tag: message.tag, id, InvitationError(.invitationEnded, "invitation \(id) ended: its relay is gone")), to: connection)
            return true
        }
        guard invitations.remoteRequests.count < configuration.cluster.maxRemoteRequests, RelayClusterNodeMessage.canCarry(message) else {
            statistics.cluster.invitationRequestsUnanswered += 1
            sendInvitation(.refused(tag: message.tag, id, InvitationError(.relayUnavailable, "too many requests wait for other relays")), to: connection)
            return true
        }
        let handle = invitations.nextRemoteHandle
        invitations.nextRemoteHandle &+= 1
        invitations.remoteRequests[handle] = RemoteInvitationRequest(
            connection: connection, home: proxy.home, tag: message.tag, invitation: id, deadline: now + configuration.cluster.remoteRequestTimeout)
        invitations.remoteRequestOrder.append(handle)
        statistics.cluster.invitationRequestsForwarded += 1
        publishNode(.invitationRequest(handle: handle, requester: peer, request: message), target: proxy.home, now: now)
        return true
    }

    /// The home's reply: to the connection that asked (the tag is the one it chose).
    mutating func receiveRemoteReply(_ reply: InvitationMessage, handle: UInt64) {
        guard let request = invitations.remoteRequests.removeValue(forKey: handle) else {
            statistics.cluster.invitationRepliesUnmatched += 1
            return
        }
        sendInvitation(reply, to: request.connection)
    }

    /// Events from an invitation's home for peers here: to every joined connection of each; the
    /// invitation's home is remembered for their answers.
    mutating func receiveInvitationEvents(_ deliveries: [InvitationDelivery], from home: RelayNodeID, now: ConduitInstant) {
        for delivery in deliveries {
            noteProxy(of: delivery.event, home: home)
            statistics.cluster.invitationEventsReceived += 1
            guard let targets = invitations.connectionsByPeer[delivery.to], let frame = Self.invitationFrame(.event(delivery.event)) else {
                invitations.undeliverableEvents += 1
                continue
            }
            for target in targets {
                sendControl(target, frame)
                invitations.eventsDelivered += 1
            }
        }
    }

    /// Remembers (or completes) the proxy of the event's invitation, within the table's cap.
    mutating func noteProxy(of event: InvitationEvent, home: RelayNodeID) {
        let id = event.invitationID
        if invitations.proxies[id] == nil {
            if invitations.proxies.count >= configuration.cluster.maxInvitationProxies {
                evictOldestProxy()
                guard invitations.proxies.count < configuration.cluster.maxInvitationProxies else { return }
            }
            invitations.proxies[id] = InvitationProxy(home: home)
            invitations.proxyOrder.append(id)
        }
        if case .newInvitation(let new) = event, invitations.proxies[id]!.home == home {
            invitations.proxies[id]!.inviter = new.inviter
            invitations.proxies[id]!.invitees = new.invitees
        }
    }

    /// Forgets the oldest proxy to make room (counted when it was still open).
    mutating func evictOldestProxy() {
        while let oldest = invitations.proxyOrder.popFirst() {
            guard let proxy = invitations.proxies.removeValue(forKey: oldest) else { continue }
            if !proxy.ended { statistics.cluster.invitationProxiesEvicted += 1 }
            return
        }
    }

    /// The home says these invitations ended: their proxies are kept as ended for the book's
    /// tombstone lifetime, then forgotten.
    mutating func noteInvitationsEnded(_ ids: [InvitationID], home: RelayNodeID, now: ConduitInstant) {
        let expires = now + configuration.invitations.tombstoneLifetime
        for id in ids where invitations.proxies[id]?.home == home && invitations.proxies[id]?.ended == false {
            invitations.proxies[id]!.ended = true
            invitations.proxyExpiries.append((expires, id))
        }
    }

    /// The home relay died: its open invitations are cancelled for their invitees here
    /// (`inviterLeft`, as when an inviter leaves one relay), and requests waiting for it refused.
    mutating func invitationHomeDied(_ home: RelayNodeID, now: ConduitInstant) {
        let expires = now + configuration.invitations.tombstoneLifetime
        for (id, proxy) in invitations.proxies.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where proxy.home == home && !proxy.ended {
            invitations.proxies[id]!.ended = true
            invitations.proxyExpiries.append((expires, id))
            statistics.cluster.invitationsLostWithRelay += 1
            guard let inviter = proxy.inviter, let frame = Self.invitationFrame(.event(.invitationCancelled(id, inviter: inviter, data: [], reason: .inviterLeft))) else { continue }
            for invitee in proxy.invitees {
                for target in invitations.connectionsByPeer[invitee] ?? [] {
                    sendControl(target, frame)
                    invitations.eventsDelivered += 1
                }
            }
        }
        for handle in invitations.remoteRequestOrder where invitations.remoteRequests[handle]?.home == home {
            let request = invitations.remoteRequests.removeValue(forKey: handle)!
            statistics.cluster.invitationRequestsUnanswered += 1
            sendInvitation(.refused(tag: request.tag, request.invitation, InvitationError(.invitationEnded, "the invitation's relay is gone: the invitation was cancelled")), to: request.connection)
        }
    }

    // MARK: Time

    /// Forwarded requests past their deadline: the peer is refused `relayUnavailable`.
    mutating func expireRemoteRequests(now: ConduitInstant) {
        while let handle = invitations.remoteRequestOrder.first {
            guard let request = invitations.remoteRequests[handle] else {
                invitations.remoteRequestOrder.removeFirst()
                continue
            }
            guard request.deadline <= now else { break }
            invitations.remoteRequestOrder.removeFirst()
            invitations.remoteRequests[handle] = nil
            statistics.cluster.invitationRequestsUnanswered += 1
            sendInvitation(.refused(tag: request.tag, request.invitation, InvitationError(.relayUnavailable, "the invitation's relay did not answer in time")), to: request.connection)
        }
    }

    /// Ended proxies past the tombstone lifetime are forgotten; the order deque is compacted when
    /// mostly stale.
    mutating func expireInvitationProxies(now: ConduitInstant) {
        while let first = invitations.proxyExpiries.first, first.expires <= now {
            invitations.proxyExpiries.removeFirst()
            if invitations.proxies[first.id]?.ended == true { invitations.proxies[first.id] = nil }
        }
        if invitations.proxyOrder.count > 1_024, invitations.proxyOrder.count > 2 * invitations.proxies.count {
            let live = invitations.proxies
            invitations.proxyOrder = Deque(invitations.proxyOrder.filter { live[$0] != nil })
        }
    }
}

import DequeModule
public import ConduitCore
import ConduitRooms

// The node stream: what a relay says about itself rather than about one room (online status,
// invitations), numbered so that what NATS core loses (at most once) is found and sent again.
//
//   sender: numbered message ──► outbox, and a copy in the resend ring (count, bytes and age capped)
//   receiver: next in line ──► applied; ahead of a gap ──► held (capped), resendRequest(from, through)
//             the resent messages fill the gap ──► the held ones applied in order (repaired)
//             resendGone, or no answer within silenceTimeout ──► skipped and counted lost; online
//             status asked for whole again (lost requests and replies end in relayUnavailable)
//   heartbeat (every heartbeatInterval, unnumbered): liveness, and the last sequence sent, so a
//             lost last message is noticed too; a relay silent for silenceTimeout is dead.

extension RelayMachine {
    /// This relay's node stream, and where every other relay's stands.
    struct NodeStreamState: Sendable {
        /// The last numbered message sent.
        var sequence: UInt64 = 0
        var ring = Deque<NodeRingEntry>()
        var ringBytes = 0
        var peers: [RelayNodeID: RemoteNode] = [:]
        var outbox = Deque<RelayClusterNodeMessage>()
    }

    struct NodeRingEntry: Sendable {
        let message: RelayClusterNodeMessage
        let size: Int
        let sentAt: ConduitInstant
    }

    /// Another relay, as its node stream shows it.
    struct RemoteNode: Sendable {
        var lastHeard: ConduitInstant
        /// The last of its numbered messages applied here (everything before it was applied or counted lost).
        var taken: UInt64
        /// The highest of its sequence numbers known to exist.
        var known: UInt64
        /// Messages after a gap, waiting for it to be filled.
        var held: [UInt64: RelayClusterNodeMessage] = [:]
        /// Since when a gap is open, and when its messages were last asked for.
        var gapSince: ConduitInstant?
        var askedAt: ConduitInstant?
        /// Peers online there.
        var online: Set<PeerID> = []
        /// The parts of a whole online set heard so far, while more parts follow.
        var partialWhole: Set<PeerID>?
        /// Its whole online set was heard since it was first heard (or since a loss); else asked for.
        var synced = false
        var syncAskedAt: ConduitInstant?
    }

    // MARK: Driver interface

    /// The next node message to publish on ``RelayClusterNodeMessage/subject``, in order; nil
    /// when there is none.
    public mutating func pollClusterNodeMessage() -> RelayClusterNodeMessage? { cluster?.nodes.outbox.popFirst() }

    /// A node message from another relay (its own echoes are ignored).
    public mutating func handleClusterNode(_ message: RelayClusterNodeMessage, now: ConduitInstant) {
        guard let cluster, message.node != cluster.node else { return }
        latestNow = max(latestNow, now)
        if cluster.nodes.peers[message.node] == nil {
            guard cluster.nodes.peers.count < configuration.cluster.maxNodes else {
                statistics.cluster.nodesOverLimit += 1
                return
            }
            let start = message.isNumbered ? message.sequence &- 1 : message.sequence
            self.cluster!.nodes.peers[message.node] = RemoteNode(lastHeard: now, taken: start, known: start)
            // A relay first heard: what is online there is asked for (unless this is that list).
            if case .online(let online) = message.body, online.isFull {} else { askWholeOnline(of: message.node, now: now) }
        }
        self.cluster!.nodes.peers[message.node]!.lastHeard = now
        let forMe = message.target == cluster.node.rawValue
        switch message.body {
        case .heartbeat:
            noteKnown(message.sequence, of: message.node, now: now)
        case .resendRequest(let from, let through):
            if forMe { resend(from: from, through: through, to: message.node, now: now) }
        case .resendGone(let from, let through):
            if forMe { skipLost(from: from, through: through, of: message.node, now: now) }
        case .online, .invitationEvents, .invitationRequest, .invitationReply, .invitationsEnded:
            receiveNumbered(message, now: now)
        }
    }

    // MARK: Sending

    /// Publishes a node message (to every relay, or to `target`); a numbered one is kept in the
    /// resend ring.
    mutating func publishNode(_ body: RelayClusterNodeMessage.Body, target: RelayNodeID? = nil, now: ConduitInstant) {
        guard let node = cluster?.node else { return }
        var message = RelayClusterNodeMessage(node: node, sequence: cluster!.nodes.sequence, target: target?.rawValue ?? 0, body: body)
        if message.isNumbered {
            cluster!.nodes.sequence += 1
            message.sequence = cluster!.nodes.sequence
            let size = message.encoded.count
            cluster!.nodes.ring.append(NodeRingEntry(message: message, size: size, sentAt: now))
            cluster!.nodes.ringBytes += size
            trimResendRing(now: now)
        }
        cluster!.nodes.outbox.append(message)
        statistics.cluster.nodeMessagesPublished += 1
    }

    /// Drops the ring's oldest messages past its caps (count, bytes, age).
    mutating func trimResendRing(now: ConduitInstant) {
        let limits = configuration.cluster
        while let oldest = cluster!.nodes.ring.first,
            cluster!.nodes.ring.count > limits.resendRingMessages || cluster!.nodes.ringBytes > limits.resendRingBytes
                || now - oldest.sentAt > limits.resendRingAge
        {
            cluster!.nodes.ring.removeFirst()
            cluster!.nodes.ringBytes -= oldest.size
        }
    }

    /// Another relay missed `from…through`: what the ring holds goes out again (as it was, with
    /// its number), and what it no longer holds is said to be gone.
    mutating func resend(from: UInt64, through: UInt64, to requester: RelayNodeID, now: ConduitInstant) {
        trimResendRing(now: now)
        let last = min(through, cluster!.nodes.sequence)
        guard from <= last else { return }
        let firstHeld = cluster!.nodes.ring.first?.message.sequence ?? cluster!.nodes.sequence + 1
        if from < firstHeld {
            publishNode(.resendGone(from: from, through: min(last, firstHeld - 1)), target: requester, now: now)
        }
        guard last >= firstHeld else { return }
        // The ring is in sequence order without holes: index by offset, no scan.
        let start = Int(max(from, firstHeld) - firstHeld)
        let end = Int(last - firstHeld)
        for index in start...end {
            cluster!.nodes.outbox.append(cluster!.nodes.ring[index].message)
            statistics.cluster.nodeMessagesPublished += 1
            statistics.cluster.nodeMessagesResent += 1
        }
    }

    // MARK: Receiving

    /// A numbered message: applied if it is next, held if a gap comes before it (and the gap asked
    /// for again), dropped if it was taken already.
    mutating func receiveNumbered(_ message: RelayClusterNodeMessage, now: ConduitInstant) {
        let node = message.node
        let peer = cluster!.nodes.peers[node]!
        guard message.sequence > peer.taken, peer.held[message.sequence] == nil else {
            statistics.cluster.nodeDuplicates += 1
            return
        }
        guard message.sequence == peer.taken &+ 1 else {
            if peer.held.count >= configuration.cluster.maxBufferedPerNode {
                // Too much waits behind the gap: give it up, then take this one in its place.
                giveUpGaps(of: node, through: peer.known, now: now)
                return receiveNumbered(message, now: now)
            }
            cluster!.nodes.peers[node]!.held[message.sequence] = message
            noteKnown(message.sequence, of: node, now: now)
            return
        }
        if peer.gapSince != nil { statistics.cluster.nodeMessagesRepaired += 1 }
        cluster!.nodes.peers[node]!.taken = message.sequence
        cluster!.nodes.peers[node]!.known = max(peer.known, message.sequence)
        applyNodeMessage(message, now: now)
        takeHeld(of: node, now: now)
    }

    /// Applies the held messages that are next in line; closes the gap when none is left, or asks
    /// for the next one.
    mutating func takeHeld(of node: RelayNodeID, now: ConduitInstant) {
        while let taken = cluster?.nodes.peers[node]?.taken, let next = cluster!.nodes.peers[node]!.held.removeValue(forKey: taken &+ 1) {
            cluster!.nodes.peers[node]!.taken = taken &+ 1
            applyNodeMessage(next, now: now)
        }
        guard let peer = cluster?.nodes.peers[node], peer.gapSince != nil else { return }
        if peer.taken >= peer.known {
            cluster!.nodes.peers[node]!.gapSince = nil
            cluster!.nodes.peers[node]!.askedAt = nil
        } else {
            askMissing(of: node, now: now)
        }
    }

    /// `sequence` exists in `node`'s stream: a gap before it is opened (and asked for) if there is one.
    mutating func noteKnown(_ sequence: UInt64, of node: RelayNodeID, now: ConduitInstant) {
        guard let peer = cluster!.nodes.peers[node], sequence > peer.known || (peer.gapSince == nil && sequence > peer.taken) else { return }
        cluster!.nodes.peers[node]!.known = max(peer.known, sequence)
        guard peer.gapSince == nil, cluster!.nodes.peers[node]!.known > peer.taken else { return }
        cluster!.nodes.peers[node]!.gapSince = now
        statistics.cluster.nodeGaps += 1
        askMissing(of: node, now: now)
    }

    /// Asks `node` for its messages from the first missing one to the next held one.
    mutating func askMissing(of node: RelayNodeID, now: ConduitInstant) {
        let peer = cluster!.nodes.peers[node]!
        guard peer.taken < peer.known else { return }
        let from = peer.taken + 1
        let through = (peer.held.keys.min() ?? peer.known &+ 1) &- 1
        guard from <= through else { return }
        cluster!.nodes.peers[node]!.askedAt = now
        publishNode(.resendRequest(from: from, through: through), target: node, now: now)
    }

    /// `node` no longer holds `from…through`: those not held here are lost (counted); the held
    /// ones after them are applied.
    mutating func skipLost(from: UInt64, through: UInt64, of node: RelayNodeID, now: ConduitInstant) {
        guard let peer = cluster!.nodes.peers[node], through > peer.taken, from <= peer.taken &+ 1 else { return }
        giveUpGaps(of: node, through: min(through, peer.known), now: now)
    }

    /// Skips every missing message of `node` up to `limit` (counted lost), applying the held ones
    /// in order; its online set is asked for whole again, as the lost messages may have changed it.
    mutating func giveUpGaps(of node: RelayNodeID, through limit: UInt64, now: ConduitInstant) {
        var lost: UInt64 = 0
        for sequence in cluster!.nodes.peers[node]!.held.keys.sorted() where sequence <= limit {
            guard let taken = cluster?.nodes.peers[node]?.taken, let message = cluster!.nodes.peers[node]!.held.removeValue(forKey: sequence) else { continue }
            lost += sequence > taken ? sequence - taken - 1 : 0
            cluster!.nodes.peers[node]!.taken = sequence
            applyNodeMessage(message, now: now)
        }
        guard let peer = cluster?.nodes.peers[node] else { return }
        if limit > peer.taken {
            lost += limit - peer.taken
            cluster!.nodes.peers[node]!.taken = limit
        }
        statistics.cluster.nodeMessagesLost += Int(clamping: lost)
        cluster!.nodes.peers[node]!.gapSince = nil
        cluster!.nodes.peers[node]!.askedAt = nil
        cluster!.nodes.peers[node]!.synced = false
        cluster!.nodes.peers[node]!.partialWhole = nil
        askWholeOnline(of: node, now: now)
        takeHeld(of: node, now: now)
        // A later gap (after the part given up) is a gap of its own.
        if let known = cluster?.nodes.peers[node]?.known { noteKnown(known, of: node, now: now) }
    }

    /// A numbered message in its place: what it says is done (the parts meant for this relay).
    mutating func applyNodeMessage(_ message: RelayClusterNodeMessage, now: ConduitInstant) {
        statistics.cluster.nodeMessagesReceived += 1
        let forMe = message.target == cluster!.node.rawValue
        switch message.body {
        case .online(let online):
            applyOnline(online, of: message.node, forMe: forMe || message.target == 0, now: now)
        case .invitationEvents(let deliveries):
            if forMe { receiveInvitationEvents(deliveries, from: message.node, now: now) }
        case .invitationRequest(let handle, let requester, let request):
            if forMe { serveRemoteRequest(request, handle: handle, from: requester, at: message.node, now: now) }
        case .invitationReply(let handle, let reply):
            if forMe { receiveRemoteReply(reply, handle: handle) }
        case .invitationsEnded(let ids):
            noteInvitationsEnded(ids, home: message.node, now: now)
        case .heartbeat, .resendRequest, .resendGone:
            break
        }
    }

    // MARK: Time

    /// At every heartbeat: says this relay is alive, asks again for what is still missing or
    /// unsynced, gives up gaps and takes relays silent for `silenceTimeout` for dead, and expires
    /// forwarded requests and forgotten invitations.
    mutating func handleNodeTimeouts(now: ConduitInstant) {
        guard let liveness = cluster?.liveness else { return }
        publishNode(.heartbeat, now: now)
        trimResendRing(now: now)
        for node in cluster!.nodes.peers.keys.sorted() {
            guard let peer = cluster?.nodes.peers[node] else { continue }
            if now - peer.lastHeard >= liveness.silenceTimeout {
                nodeDied(node, now: now)
                continue
            }
            if let since = peer.gapSince {
                if now - since >= liveness.silenceTimeout {
                    giveUpGaps(of: node, through: peer.known, now: now)
                } else if peer.askedAt.map({ now - $0 >= liveness.heartbeatInterval }) ?? true {
                    askMissing(of: node, now: now)
                }
            }
            if let peer = cluster?.nodes.peers[node], !peer.synced, peer.syncAskedAt.map({ now - $0 >= liveness.heartbeatInterval }) ?? true {
                askWholeOnline(of: node, now: now)
            }
        }
        expireRemoteRequests(now: now)
        expireInvitationProxies(now: now)
    }

    /// A relay fell silent: its peers are offline here, the invitations it was home to end for
    /// the peers here, and its stream is forgotten (a relay that comes back is a new node).
    mutating func nodeDied(_ node: RelayNodeID, now: ConduitInstant) {
        guard let peer = cluster?.nodes.peers.removeValue(forKey: node) else { return }
        statistics.cluster.nodesTimedOut += 1
        rosterNodeGone(node)
        invitationHomeDied(node, now: now)
        for offline in peer.online.sorted() { removeRemoteOnline(offline, at: node, now: now) }
        deliverInvitationEvents(now: now)
    }
}

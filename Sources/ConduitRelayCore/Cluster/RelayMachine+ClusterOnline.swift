import ConduitCore
import ConduitRooms

// Online status across the cluster. A peer is online at a relay while it has a joined connection
// there; each relay says so on its node stream when a peer's first connection joins and when its
// last one goes (`online` changes), and sends its whole set when a relay asks (a relay that is
// new, that lost messages, or that first heard of it). A peer online at no relay of the cluster
// leaves every relay's invitation book: the invitations it was invited to time out for it
// (`inviteeLeft`), those it made are cancelled (`inviterLeft`), as on one relay.

extension RelayMachine {
    /// Tells the cluster a change in who is online here.
    mutating func publishOnline(_ online: RelayClusterOnline, now: ConduitInstant) {
        guard cluster != nil else { return }
        publishNode(.online(online), now: now)
    }

    /// Everyone online here, as one whole set (in parts of `maxPeersPerOnline`), to every relay;
    /// `wantsFull` asks every relay for its own.
    mutating func publishWholeOnline(wantsFull: Bool, now: ConduitInstant) {
        guard cluster != nil else { return }
        let peers = invitations.connectionsByPeer.keys.sorted()
        let size = RelayClusterNodeMessage.maxPeersPerOnline
        var start = 0
        repeat {
            let end = min(peers.count, start + size)
            let part = RelayClusterOnline(isFull: true, wantsFull: wantsFull && start == 0, hasMore: end < peers.count, joined: Array(peers[start..<end]))
            publishNode(.online(part), now: now)
            start = end
        } while start < peers.count
    }

    /// Asks `node` for its whole online set.
    mutating func askWholeOnline(of node: RelayNodeID, now: ConduitInstant) {
        guard cluster?.nodes.peers[node] != nil else { return }
        cluster!.nodes.peers[node]!.syncAskedAt = now
        publishNode(.online(RelayClusterOnline(wantsFull: true)), target: node, now: now)
    }

    /// `node`'s change of its online set, or a part of its whole set (which replaces what this
    /// relay knew once the last part arrived); and its request for this relay's whole set.
    mutating func applyOnline(_ online: RelayClusterOnline, of node: RelayNodeID, forMe: Bool, now: ConduitInstant) {
        guard cluster?.nodes.peers[node] != nil else { return }
        if online.isFull {
            var whole = cluster!.nodes.peers[node]!.partialWhole ?? []
            for peer in online.joined where whole.count < configuration.cluster.maxRemoteOnline { whole.insert(peer) }
            if online.hasMore {
                cluster!.nodes.peers[node]!.partialWhole = whole
            } else {
                cluster!.nodes.peers[node]!.partialWhole = nil
                cluster!.nodes.peers[node]!.synced = true
                // Those in the whole set are added before the others are removed, so a peer
                // online in both is never taken for offline in between.
                for peer in whole.sorted() { addRemoteOnline(peer, at: node) }
                for peer in cluster!.nodes.peers[node]!.online.subtracting(whole).sorted() { removeRemoteOnline(peer, at: node, now: now) }
            }
        } else {
            for peer in online.joined { addRemoteOnline(peer, at: node) }
            for peer in online.left { removeRemoteOnline(peer, at: node, now: now) }
        }
        if online.wantsFull, forMe { publishWholeOnline(wantsFull: false, now: now) }
        deliverInvitationEvents(now: now)
    }

    /// `peer` is online at `node` (within the table's cap; beyond it, counted).
    mutating func addRemoteOnline(_ peer: PeerID, at node: RelayNodeID) {
        guard cluster?.nodes.peers[node]?.online.contains(peer) == false else { return }
        guard invitations.remoteOnlineCount < configuration.cluster.maxRemoteOnline else {
            statistics.cluster.onlineOverLimit += 1
            return
        }
        cluster!.nodes.peers[node]!.online.insert(peer)
        invitations.remoteOnline[peer, default: []].append(node)
        invitations.remoteOnlineCount += 1
    }

    /// `peer` is no longer online at `node` (gone from its set, or the relay died); online nowhere
    /// any more, it leaves the book (the caller delivers what that caused).
    mutating func removeRemoteOnline(_ peer: PeerID, at node: RelayNodeID, now: ConduitInstant) {
        cluster?.nodes.peers[node]?.online.remove(peer)
        guard var nodes = invitations.remoteOnline[peer], let index = nodes.firstIndex(of: node) else { return }
        nodes.remove(at: index)
        invitations.remoteOnline[peer] = nodes.isEmpty ? nil : nodes
        invitations.remoteOnlineCount -= 1
        guard !invitations.isOnline(peer) else { return }
        invitations.book.peerLeft(peer, now: now)
    }
}

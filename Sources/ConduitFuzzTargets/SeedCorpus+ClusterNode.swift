import ConduitCore
import ConduitRelayCore
import ConduitRooms

extension SeedCorpus {
    /// One node message of each kind from relay `node`, numbered as a stream would be: every
    /// relay's heartbeat, its online set (whole, a change, a request), an invitation's events for
    /// the fuzzed relay's members, a request for the fuzzed relay as home, a reply, ends, and the
    /// resend pair.
    static func clusterNodeMessages(from node: RelayNodeID) -> [RelayClusterNodeMessage] {
        let home = FuzzTargets.clusterNode.rawValue
        let id = InvitationID(rawValue: 0x0123_4567_89AB_CDEF)!
        let ring = NewInvitation(id: id, inviter: "carol", groupID: "standup", invitees: ["alice", "bob"], data: Array("call-9".utf8), timeoutSeconds: 30)
        let bodies: [(UInt64, RelayClusterNodeMessage.Body)] = [
            (0, .online(RelayClusterOnline(isFull: true, wantsFull: true, hasMore: true, joined: ["carol", "dave"]))),
            (0, .online(RelayClusterOnline(isFull: true, joined: ["erin"]))),
            (0, .online(RelayClusterOnline(joined: ["frank"], left: ["dave"]))),
            (home, .invitationEvents([
                InvitationDelivery(to: "alice", event: .newInvitation(ring)),
                InvitationDelivery(to: "bob", event: .inviteeAccepted(id, invitee: "alice", data: Array("ok".utf8))),
            ])),
            (home, .invitationRequest(handle: 7, requester: "carol", request: .accept(tag: 3, id, data: []))),
            (home, .invitationReply(handle: 1, reply: .refused(tag: 3, id, InvitationError(.alreadyAnswered, "already answered")))),
            (0, .invitationsEnded([id])),
        ]
        var messages = bodies.enumerated().map { index, entry in
            RelayClusterNodeMessage(node: node, sequence: UInt64(index + 1), target: entry.0, body: entry.1)
        }
        let last = UInt64(messages.count)
        messages.append(RelayClusterNodeMessage(node: node, sequence: last, body: .heartbeat))
        messages.append(RelayClusterNodeMessage(node: node, sequence: last, target: home, body: .resendRequest(from: 1, through: 3)))
        messages.append(RelayClusterNodeMessage(node: node, sequence: last, target: home, body: .resendGone(from: 1, through: 2)))
        return messages
    }
}

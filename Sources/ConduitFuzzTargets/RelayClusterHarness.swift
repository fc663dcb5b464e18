import ConduitCore
import ConduitRelay
import ConduitRelayCore
import ConduitRooms

extension FuzzTargets {
    /// What relays of a cluster tell each other through NATS (`docs/wire-format.md`, "Relay
    /// cluster"): room messages (presence, routed data, subgroups, channels, tracks, extensions,
    /// pressure), node messages (heartbeat, online status, invitation events, requests, replies
    /// and ends, resend requests and answers) and token uses. A message that parses encodes to
    /// bytes that parse back equal; a relay in the cluster, hosting the room with two members,
    /// takes the input as a message from another relay: counted as malformed or applied, its
    /// tables never past their caps, and what it would publish parses again.
    static let relayCluster = FuzzTarget(
        name: "relay-cluster",
        summary: "RelayClusterMessage (presence, data, subgroups, channels, tracks, extension, pressure), RelayClusterNodeMessage (heartbeat, online, invitation events/request/reply/ended, resend) and RelayClusterTokenUse parse/encode round trips; RelayMachine.handleCluster with a hosted room: caps, republished messages parse"
    ) { (input) throws(FuzzFailure) in
        let check = Invariants(target: "relay-cluster")
        let bytes = Array(input)
        var accepted = false
        if let message = try? RelayClusterMessage.parse(bytes) {
            try check.require((try? RelayClusterMessage.parse(message.encoded)) == message, "message \(message) does not parse back from its encoding")
            accepted = true
        }
        let node = try? RelayClusterNodeMessage.parse(bytes)
        if let node {
            try check.require((try? RelayClusterNodeMessage.parse(node.encoded)) == node, "node message \(node) does not parse back from its encoding")
            accepted = true
        }
        if let use = RelayClusterTokenUse.parse(bytes) {
            try check.require(RelayClusterTokenUse.parse(use.encoded) == use, "token use \(use) does not parse back from its encoding")
            accepted = true
        }
        var relay = clusterRelay
        let now = ConduitInstant(nanoseconds: 2_000_000_000)
        relay.handleCluster(bytes, now: now)
        if let message = try? RelayClusterMessage.parse(bytes) {
            // The same message again, as if it came twice: a replay is refused by its sequence.
            relay.handleCluster(message, now: now + .milliseconds(10))
        }
        if let node {
            // Again (a duplicate), then a heartbeat past it (a gap, asked for), then the node
            // stream's timeouts (resend asked again, the gap given up, the node taken for dead).
            relay.handleClusterNode(node, now: now + .milliseconds(10))
            relay.handleClusterNode(RelayClusterNodeMessage(node: node.node, sequence: node.sequence &+ 3, body: .heartbeat), now: now + .milliseconds(20))
            relay.handleTimeout(now: now + .seconds(2))
            relay.handleTimeout(now: now + .seconds(12))
        }
        let limits = relay.configuration.cluster
        try check.require(relay.invitations.proxyCount <= limits.maxInvitationProxies, "\(relay.invitations.proxyCount) invitation proxies, capped at \(limits.maxInvitationProxies)")
        try check.require(relay.invitations.pendingRemoteRequests <= limits.maxRemoteRequests, "\(relay.invitations.pendingRemoteRequests) forwarded requests, capped at \(limits.maxRemoteRequests)")
        try check.require(relay.invitations.remoteOnlinePeerCount <= limits.maxRemoteOnline, "\(relay.invitations.remoteOnlinePeerCount) remote online peers, capped at \(limits.maxRemoteOnline)")
        let members = relay.members(of: clusterRoom).count
        try check.require(members <= relay.configuration.maxMembersPerRoom, "\(members) members in a room capped at \(relay.configuration.maxMembersPerRoom)")
        while let published = relay.pollClusterMessage() {
            try check.require((try? RelayClusterMessage.parse(published.encoded)) == published, "the relay would publish \(published), which does not parse back")
        }
        while let published = relay.pollClusterNodeMessage() {
            try check.require((try? RelayClusterNodeMessage.parse(published.encoded)) == published, "the relay would publish \(published), which does not parse back")
        }
        return accepted
    }

    static let clusterRoom = RoomProgramRun.room
    static let clusterNode = RelayNodeID(0x1111)

    /// A relay in a cluster, hosting the room programs' room with both their members joined (real
    /// traffic), its outbox drained. Built once; each input works on a copy.
    private static let clusterRelay: RelayMachine = {
        guard let run = try? RoomProgramRun(check: Invariants(target: "relay-cluster"), start: 2) else {
            fatalError("relay-cluster: the room programs' joined state could not be reached")
        }
        var relay = run.relay
        relay.joinCluster(as: clusterNode, now: run.now)
        while relay.pollClusterMessage() != nil {}
        while relay.pollClusterNodeMessage() != nil {}
        return relay
    }()
}

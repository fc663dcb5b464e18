import ConduitCore
import ConduitRelay
import ConduitRelayCore
import ConduitRooms

extension FuzzTargets {
    /// What relays of a cluster tell each other through NATS (`docs/wire-format.md`, "Relay
    /// cluster"): room messages (presence, routed data, subgroups, channels, tracks) and token uses. A message that parses
    /// encodes to bytes that parse back equal; a relay in the cluster, hosting the room with one
    /// member, takes the input as a message from another relay: counted as malformed or applied,
    /// its room never past its member cap, and what it would publish parses again.
    static let relayCluster = FuzzTarget(
        name: "relay-cluster",
        summary: "RelayClusterMessage (presence, data, subgroups, channels, tracks) and RelayClusterTokenUse parse/encode round trips; RelayMachine.handleCluster with a hosted room: caps, republished messages parse"
    ) { (input) throws(FuzzFailure) in
        let check = Invariants(target: "relay-cluster")
        let bytes = Array(input)
        var accepted = false
        if let message = try? RelayClusterMessage.parse(bytes) {
            try check.require((try? RelayClusterMessage.parse(message.encoded)) == message, "message \(message) does not parse back from its encoding")
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
        let members = relay.members(of: clusterRoom).count
        try check.require(members <= relay.configuration.maxMembersPerRoom, "\(members) members in a room capped at \(relay.configuration.maxMembersPerRoom)")
        while let published = relay.pollClusterMessage() {
            try check.require((try? RelayClusterMessage.parse(published.encoded)) == published, "the relay would publish \(published), which does not parse back")
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
        return relay
    }()
}

package import ConduitRelayCore

/// "This relay admitted a join with this token" (`docs/wire-format.md`, "Relay cluster"): every
/// relay of the cluster remembers the token ID and refuses a replay of it.
package struct RelayClusterTokenUse: Hashable, Sendable {
    /// The subject every relay publishes its token uses on.
    static let subject = "conduit.relay.tokens"
    static let kind: UInt8 = 3

    var node: RelayNodeID
    /// 1, 2, 3… over the node's token uses (a gap: uses lost on the way, counted).
    var sequence: UInt64
    var expiresAt: UInt64
    var tokenID: [UInt8]

    package init(node: RelayNodeID, sequence: UInt64, expiresAt: UInt64, tokenID: [UInt8]) {
        self.node = node
        self.sequence = sequence
        self.expiresAt = expiresAt
        self.tokenID = tokenID
    }

    package var encoded: [UInt8] {
        var bytes: [UInt8] = [RelayClusterMessage.version, Self.kind]
        for value in [node.rawValue, sequence, expiresAt] {
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        bytes.append(UInt8(tokenID.count))
        return bytes + tokenID
    }

    /// The message, or nil if `bytes` is not one.
    package static func parse(_ bytes: [UInt8]) -> RelayClusterTokenUse? {
        guard bytes.count >= 27, bytes[0] == RelayClusterMessage.version, bytes[1] == kind,
            Int(bytes[26]) == bytes.count - 27, bytes[26] > 0
        else { return nil }
        func number(at offset: Int) -> UInt64 { bytes[offset..<offset + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        return RelayClusterTokenUse(node: RelayNodeID(number(at: 2)), sequence: number(at: 10), expiresAt: number(at: 18), tokenID: Array(bytes[27...]))
    }
}

/// What a relay knows of the cluster's token uses: its own count, where each other relay's
/// stream stands, and what was lost.
struct RelayClusterTokenLedger: Sendable {
    var published: UInt64 = 0
    var positions: [RelayNodeID: UInt64] = [:]
    /// Token uses heard from other relays.
    var received = 0
    /// Token uses lost on the way (gaps in a relay's numbering) or not remembered (table full).
    var lost = 0

    /// Takes `use`'s place in its sender's stream; false for an old or repeated one.
    mutating func take(_ use: RelayClusterTokenUse) -> Bool {
        let previous = positions[use.node]
        if let previous, use.sequence <= previous { return false }
        // (A relay first heard mid-stream started before this one listened: nothing to count.)
        if let previous { lost += Int(clamping: use.sequence - previous - 1) }
        positions[use.node] = use.sequence
        received += 1
        return true
    }
}

extension RelayServer {
    /// Token uses heard from the other relays of the cluster (each remembered against replays here).
    public var clusterTokenUsesReceived: Int { clusterTokens.received }

    /// Token uses of other relays that did not arrive (a gap in their numbering) or could not be
    /// remembered: a replay of those tokens here would not be refused. Never silent: counted.
    public var clusterTokenUsesLost: Int { clusterTokens.lost }

    /// Tells the cluster a join with `token` was admitted here.
    func announceTokenUse(_ token: RelayToken) {
        guard let cluster, let node = machine.clusterNode else { return }
        clusterTokens.published += 1
        let use = RelayClusterTokenUse(node: node, sequence: clusterTokens.published, expiresAt: token.expiresAt, tokenID: token.id)
        clusterPublishFailures += cluster.publish([.tokenUse(use)])
    }

    /// Another relay's token use, as NATS delivered it.
    func ingestTokenUse(_ payload: [UInt8]) {
        guard let use = RelayClusterTokenUse.parse(payload) else { return }
        ingestTokenUse(use)
    }

    /// Another relay's (or shard's) token use: remembered, so that a replay here is refused.
    func ingestTokenUse(_ use: RelayClusterTokenUse) {
        guard use.node != machine.clusterNode, clusterTokens.take(use) else { return }
        if !authority.noteUsedElsewhere(id: use.tokenID, expiresAt: use.expiresAt, unixTime: wallClock()) { clusterTokens.lost += 1 }
    }
}

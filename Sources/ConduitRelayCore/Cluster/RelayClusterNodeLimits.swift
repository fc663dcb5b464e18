/// Caps and timings of a clustered relay's relay-wide tables (RelayMachine+ClusterNodeStream.swift,
/// +ClusterOnline.swift, +ClusterInvitations.swift). Every table has its cap; what a cap leaves
/// out is counted in `RelayClusterStatistics`.
public struct RelayClusterNodeLimits: Sendable, Hashable {
    /// The most other relays whose node streams are followed (messages of more: dropped, counted
    /// as `nodesOverLimit`).
    public var maxNodes = 1_024
    /// The most of its own node messages a relay keeps to send again, by count, bytes and age:
    /// a relay that missed older ones is told they are gone (`resendGone`).
    public var resendRingMessages = 1_024
    /// Bytes of the resend ring.
    public var resendRingBytes = 1 << 20
    /// How long a message stays in the resend ring.
    public var resendRingAge: Duration = .seconds(10)
    /// Messages of one other relay held while a gap before them is being repaired; one more and
    /// the gap is given up (counted lost).
    public var maxBufferedPerNode = 1_024
    /// Peers online at other relays, counted once per (peer, relay).
    public var maxRemoteOnline = 262_144
    /// Invitations of other relays (their home) whose events reached peers here, open or ended.
    public var maxInvitationProxies = 100_000
    /// Answers and cancels forwarded to home relays and waiting for the reply.
    public var maxRemoteRequests = 4_096
    /// How long a forwarded answer or cancel waits for the home's reply before the peer is
    /// refused `relayUnavailable`.
    public var remoteRequestTimeout: Duration = .seconds(5)

    /// The defaults.
    public init() {}
}

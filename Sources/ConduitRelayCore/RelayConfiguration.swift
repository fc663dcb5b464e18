public import ConduitCore
public import ConduitRooms

/// The relay's knobs. Every table and queue it keeps has its cap here.
public struct RelayConfiguration: Sendable, Hashable {
    /// The most rooms the relay hosts at once.
    public var maxRooms: Int
    /// The most members one room holds; more joins are refused (`roomFull`).
    public var maxMembersPerRoom: Int
    /// The most subgroups one room holds.
    public var maxSubgroupsPerRoom: Int
    /// The most subgroups one member may be subscribed to.
    public var maxSubscriptionsPerMember: Int
    /// Sessions (stream × subgroup) one member may have open.
    public var maxSessionsPerMember: Int
    /// Links that have not joined yet. When the table is full a new link takes the place of the
    /// oldest one still waiting (``RelayStatistics/pendingEvicted``): a flood of links that never
    /// join cannot keep a legitimate joiner out.
    public var maxPendingConnections: Int
    /// A link must send its join within this long of opening, or it is refused (`notJoined`) and
    /// closed (``RelayStatistics/joinDeadlinesMissed``). Pings do not extend it.
    public var joinTimeout: Duration
    /// Join attempts the relay authorizes per second (bursts up to one second's worth); more are
    /// refused (`joinRateLimited`) without verifying their tokens.
    public var maxJoinAttemptsPerSecond: Int
    /// The longest token a join may carry (at most `RoomControlFrame.maxTokenBytes`, the
    /// protocol's limit); a longer one is refused (`tokenTooLarge`) at once.
    public var maxTokenBytes: Int
    /// A receiver's queue of reliable frames may grow to this many bytes; one more and the
    /// receiver is isolated: disconnected as a `slowReceiver` (the room never waits for it).
    public var maxQueuedBytesPerReceiver: Int
    /// Backpressure: while a receiver's queue holds more than this many bytes, the relay stops
    /// reading from the links of its room's senders (their `send` suspends; nothing is dropped)
    /// until the queue is down to half of it.
    public var receiverHighWater: Int
    /// A receiver that stays above ``receiverHighWater`` this long, while most of its room's
    /// other receivers here were not above it meanwhile, stops holding its room back: it is
    /// lagging (counted), and its queue grows alone toward ``maxQueuedBytesPerReceiver``. (When
    /// most of them were, the room as a whole is slow: nobody lags, the clock starts again.)
    public var laggingAfter: Duration
    /// A receiver above ``receiverHighWater`` whose link took nothing from its queue this long
    /// (counted from when it crossed the mark, or from the last frame taken) is isolated:
    /// disconnected as a `slowReceiver`, however few bytes it holds, lagging or not. A room whose
    /// receivers all stopped reading (apps sent to the background) so lets its senders go on
    /// with those that still read, rather than holding them for good. (With ``laggingAfter`` at
    /// or above this, a receiver above the mark this long is isolated even if it takes.)
    public var isolateAfter: Duration
    /// Unreliable frames are queued for a receiver only while its queue is below this; above it
    /// they are dropped and counted (they would be stale by the time they went out).
    public var maxUnreliableQueuedBytesPerReceiver: Int
    /// Peer-list changes are coalesced for `base × (1 + members / membersPerStep)`, at most `max`:
    /// the interval grows with the room, as LINE Planet's scheduler does.
    public var peerListBaseInterval: Duration
    /// The longest coalescing interval, however large the room.
    public var peerListMaxInterval: Duration
    /// Members per step of the interval's growth.
    public var peerListMembersPerStep: Int
    /// A member that sends nothing (clients ping when idle) for this long is removed as vanished.
    public var vanishTimeout: Duration
    /// Caps of the relay's invitation table (open invitations, invitees, custom data, tombstones).
    public var invitations = InvitationBook.Configuration()
    /// Caps and timings of what a clustered relay keeps about the other relays (online peers,
    /// invitations they are home to, its node stream's resend ring).
    public var cluster = RelayClusterNodeLimits()

    /// Makes a configuration; the defaults suit a relay on one machine.
    public init(
        maxRooms: Int = 1_024,
        maxMembersPerRoom: Int = 256,
        maxSubgroupsPerRoom: Int = 256,
        maxSubscriptionsPerMember: Int = 64,
        maxSessionsPerMember: Int = 512,
        maxPendingConnections: Int = 1_024,
        joinTimeout: Duration = .seconds(5),
        maxJoinAttemptsPerSecond: Int = 1_000,
        maxTokenBytes: Int = RoomControlFrame.maxTokenBytes,
        maxQueuedBytesPerReceiver: Int = 8 * 1024 * 1024,
        receiverHighWater: Int = 1024 * 1024,
        laggingAfter: Duration = .seconds(1),
        isolateAfter: Duration = .seconds(10),
        maxUnreliableQueuedBytesPerReceiver: Int = 1024 * 1024,
        peerListBaseInterval: Duration = .milliseconds(50),
        peerListMaxInterval: Duration = .seconds(2),
        peerListMembersPerStep: Int = 10,
        vanishTimeout: Duration = .seconds(15)
    ) {
        self.maxRooms = maxRooms
        self.maxMembersPerRoom = maxMembersPerRoom
        self.maxSubgroupsPerRoom = maxSubgroupsPerRoom
        self.maxSubscriptionsPerMember = maxSubscriptionsPerMember
        self.maxSessionsPerMember = maxSessionsPerMember
        self.maxPendingConnections = maxPendingConnections
        self.joinTimeout = joinTimeout
        self.maxJoinAttemptsPerSecond = maxJoinAttemptsPerSecond
        self.maxTokenBytes = min(maxTokenBytes, RoomControlFrame.maxTokenBytes)
        self.maxQueuedBytesPerReceiver = maxQueuedBytesPerReceiver
        self.receiverHighWater = receiverHighWater
        self.laggingAfter = laggingAfter
        self.isolateAfter = isolateAfter
        self.maxUnreliableQueuedBytesPerReceiver = maxUnreliableQueuedBytesPerReceiver
        self.peerListBaseInterval = peerListBaseInterval
        self.peerListMaxInterval = peerListMaxInterval
        self.peerListMembersPerStep = peerListMembersPerStep
        self.vanishTimeout = vanishTimeout
    }

    /// How long peer-list changes wait to be coalesced in a room of `members`.
    public func peerListInterval(members: Int) -> Duration {
        let steps = 1 + members / max(1, peerListMembersPerStep)
        return min(peerListMaxInterval, peerListBaseInterval * steps)
    }
}

/// What a verified token lets a peer do.
public struct RelayGrant: Sendable, Hashable {
    /// The room the token joins.
    public var room: RoomID
    /// The peer ID the token binds.
    public var peer: PeerID
    /// Whether the peer may send.
    public var canPublish: Bool
    /// Whether the peer may receive and subscribe to subgroups.
    public var canSubscribe: Bool
    /// Subgroups the peer may subscribe to; nil means any.
    public var allowedSubgroups: Set<SubgroupName>?

    /// Makes a grant.
    public init(room: RoomID, peer: PeerID, canPublish: Bool, canSubscribe: Bool, allowedSubgroups: Set<SubgroupName>? = nil) {
        self.room = room
        self.peer = peer
        self.canPublish = canPublish
        self.canSubscribe = canSubscribe
        self.allowedSubgroups = allowedSubgroups
    }
}

/// A join the driver must authorize (verify the token) before the machine admits it.
public struct RelayJoinRequest: Sendable, Hashable {
    /// The room asked for.
    public var room: RoomID
    /// The peer ID the client claims.
    public var peer: PeerID
    /// Whether the client supports data sessions.
    public var dataSessionsSupported: Bool
    /// The token as the client sent it, for the driver to verify.
    public var token: [UInt8]
}

/// A link to the relay, numbered by the driver.
public struct RelayConnectionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The number the driver gave the link.
    public var rawValue: UInt64
    /// Wraps a link number.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "#\(rawValue)" }

    /// Feeds the link number to `hasher` (what `hashValue` and other hashing code use).
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }

    /// What a `Dictionary` or `Set` hashes: a multiplicative hash, not SipHash. A relay looks a
    /// connection up for every receiver of every frame, and SipHash was a tenth of its CPU. The
    /// numbers come from the driver, never from the network, so there is no flooding to resist;
    /// the high half folded into the low one spreads consecutive numbers and strides alike.
    public func _rawHashValue(seed: Int) -> Int {
        let product = (rawValue ^ UInt64(UInt(bitPattern: seed))) &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: product ^ (product >> 32))
    }
}

/// What the relay machine asks its driver to do.
public enum RelayAction: Sendable, Hashable {
    /// Verify this join's token and answer with ``RelayMachine/admit(_:grant:now:)`` or
    /// ``RelayMachine/refuse(_:_:now:)``.
    case authorize(RelayConnectionID, RelayJoinRequest)
    /// The connection's outbox has frames: write them (``RelayMachine/pollTransmit(_:into:maxBytes:now:)``).
    case transmit(RelayConnectionID)
    /// Write what is left in the outbox, then close the link.
    case close(RelayConnectionID)
    /// Read this connection's link again: ``RelayMachine/mayRead(_:now:)`` said to stop, and the
    /// receivers that held it back have drained, lag or left.
    case resumeReading(RelayConnectionID)
}

/// Counters of what the relay forwarded, refused and dropped.
public struct RelayStatistics: Sendable, Hashable {
    /// Refusals by kind; a refused frame is never relayed.
    public var refusals: [RelayRefusal: Int] = [:]
    /// Frames and bytes accepted from senders for relaying.
    public var framesAccepted = 0
    /// Copies handed to receivers' queues, and their bytes.
    public var framesRelayed = 0
    /// Bytes of those copies.
    public var bytesRelayed = 0
    /// Unreliable frames dropped because a receiver's queue was over its unreliable cap.
    public var unreliableDropped = 0
    /// Frames not relayed to a receiver that declared the stream unsupported.
    public var droppedUnsupported = 0
    /// Receivers isolated (disconnected as `slowReceiver`): their reliable queue reached its cap,
    /// or they took nothing from it for `isolateAfter` while it was above the high-water mark.
    public var slowReceiversDisconnected = 0
    /// Frames an isolated receiver's link handed in after its isolation (what it sent before,
    /// held unread by backpressure): forwarded as any member's, not refused.
    public var framesAfterIsolation = 0
    /// Isolated members whose link was ended before it was read to its end: held back by their
    /// room for `isolateAfter` after it was closed. What the link still held was not forwarded.
    public var isolatedReadsCutShort = 0
    /// Times a sender's link was left unread because a receiver of its room was above the
    /// high-water mark (backpressure instead of loss).
    public var sendersPaused = 0
    /// Receivers that stayed above the high-water mark for `laggingAfter` (while most of their
    /// room did not) and stopped holding their room back.
    public var laggingReceivers = 0
    /// Members removed because they sent nothing for `vanishTimeout`.
    public var vanished = 0
    /// Links closed because no join came within `joinTimeout` of opening (pings do not count).
    public var joinDeadlinesMissed = 0
    /// Links that had not joined, closed to make room for a new link when the pending table was full.
    public var pendingEvicted = 0
    /// Join attempts refused over `maxJoinAttemptsPerSecond` (also counted as `joinRateLimited` refusals).
    public var joinsRateLimited = 0
    /// Joins accepted.
    public var joins = 0
    /// Members that left the room (by leaving or losing their link).
    public var leaves = 0
    /// Peer-list updates sent to members.
    public var peerListUpdatesSent = 0
    /// Extension messages relayed between members.
    public var extensionsRelayed = 0
    /// Track frames whose remaining lifetime ran out while the relay held them.
    public var expiredInRelay = 0
    /// Data tracks published.
    public var tracksPublished = 0
    /// Traffic with the other relays of a cluster (issue 16).
    public var cluster = RelayClusterStatistics()
    /// All counters at zero.
    public init() {}

    /// Refusals of `kind` so far.
    public func refusals(_ kind: RelayRefusal) -> Int { refusals[kind, default: 0] }
}

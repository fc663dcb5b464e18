import ConduitRelayCore

/// What a relay hands its cluster: a room's message, a message of its node stream (online
/// status, invitations), or a token use.
enum RelayClusterPost: Sendable {
    case room(RelayClusterMessage)
    case node(RelayClusterNodeMessage)
    case tokenUse(RelayClusterTokenUse)
}

/// A message from the cluster.
enum RelayClusterInbound: Sendable {
    /// As NATS delivered it: the subject says what it is, and the relay parses the bytes (a
    /// malformed message is counted there).
    case encoded(subject: String, payload: [UInt8])
    /// From another shard of this process: the message itself. Nothing crosses a wire between
    /// shards, so nothing is encoded or parsed (that cost each frame crossing shards more than
    /// the fan-out it was crossing for).
    case posted(RelayClusterPost)
    /// A record of the roster, with its sequence in the roster's stream, and its consumer's count
    /// of the records it delivered (nil where records are never removed: between shards).
    case roster(payload: [UInt8], sequence: UInt64, delivered: UInt64?)
}

/// What carries a relay's `RelayClusterMessage`s and token uses to the other members of its
/// cluster, and theirs to it: NATS between relay processes (``RelayClusterBridge``), or a bus in
/// memory between the shards of one process (``RelayInProcessBus``). The machine's cluster rules
/// (numbered room streams, presence, liveness) are the same over either, so what holds across
/// relays holds across shards.
///
/// Like NATS core, a bus delivers at most once, in the order each publisher published; a message
/// it had to drop leaves a gap in its sender's numbering, which the receiving machine counts.
protocol RelayClusterBus: Sendable {
    /// Publishes `posts` in order (a room message on its room's subject, a node message on the
    /// node stream's, a token use on the tokens'); returns how many the bus refused (closed).
    func publish(_ posts: [RelayClusterPost]) -> Int

    /// The other members' messages, in batches (one actor hop per batch, not per message), in the
    /// order they were published; finishes when the bus closes. Called once.
    func deliveries() -> AsyncStream<[RelayClusterInbound]>

    /// Messages dropped on arrival because this member did not read them fast enough.
    var dropped: Int { get }

    /// Returns once the bus can take more from this member: the relay waits here before reading
    /// a link, so that what it publishes cannot run ahead of the others' reading without bound.
    /// True if it had to wait.
    func waitForRoom() async -> Bool

    /// Whether ``waitForRoom()`` would return at once (checked first: no hop off the relay's
    /// actor per read when there is room, as there mostly is).
    var hasRoom: Bool { get }

    /// Lets what was published go out (bounded), then stops delivering.
    func close() async

    /// Whether the bus carries a roster (one ordered log of joins and leaves, read back by every
    /// member in order: RelayMachine+Roster.swift).
    var hasRoster: Bool { get }

    /// Appends `records` to the roster, in order (retrying each until stored, or the bus closes).
    func publishRoster(_ records: [RelayRosterRecord])

    /// Reads the roster again from `sequence` on (a record did not reach this member).
    func resumeRoster(from sequence: UInt64)

    /// Removes an emptied room's records from the roster (where it keeps them).
    func purgeRoster(_ purge: RelayRosterPurge)
}

extension RelayClusterBus {
    /// No roster: each member numbers its rooms and versions its peer lists itself.
    var hasRoster: Bool { false }
    func publishRoster(_ records: [RelayRosterRecord]) {}
    func resumeRoster(from sequence: UInt64) {}
    func purgeRoster(_ purge: RelayRosterPurge) {}

    /// NATS buffers and drops (counted) on its own: nothing to wait for.
    func waitForRoom() async -> Bool { false }
    var hasRoom: Bool { true }
}

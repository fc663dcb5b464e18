import ConduitCore
import ConduitRooms

/// The token IDs admitted by any shard of one relay process, against replays across shards.
///
/// Each shard's own authority checks signature, expiry, room and peer; this ledger makes the
/// replay check one decision for the process: the first shard to claim an ID wins, a second
/// claim (on any shard, however close in time) is refused. A lock per join, not per message.
final class RelaySharedTokenLedger: Sendable {
    private let authority: TSanVisibleMutex<RelayTokenAuthority>

    /// A ledger remembering as many IDs as `authority` does (its table is the ledger's).
    init(_ authority: RelayTokenAuthority) { self.authority = TSanVisibleMutex(authority) }

    /// Claims token `id` for one join: `.tokenReplayed` if a shard claimed it already,
    /// `.overLimit` if the table is full of unexpired IDs.
    func claim(_ id: [UInt8], expiresAt: UInt64, unixTime: UInt64) -> Result<Void, RelayRefusal> {
        authority.withLock { $0.claim(id, expiresAt: expiresAt, unixTime: unixTime) }
    }
}

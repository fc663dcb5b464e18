import ConduitCore
import Synchronization

/// How far each receiver of the in-process room bench has got with each sender's messages, so a
/// sender can stay within a window of the slowest receiver.
///
/// Why a window: a relay on several shards does not yet push back across shards (a sender is
/// slowed by the full receivers of its own shard only, see the README), so a sender on shard 0
/// could run ahead of the receivers on shard 1 until the in-process bus drops messages or their
/// queues at the relay pass the hard cap. A member of a real room is slowed by its transport and
/// its own send queue; here the window plays that part, the same for one shard and for two, and
/// is wide enough (megabytes per receiver) that the relay always has work waiting.
///
/// One atomic per receiver and sender: a receiver stores its counts once per batch it reads, a
/// sender loads them once per batch it writes. No lock, no hop.
package final class SyntheticRoomProgress: Sendable {
    private final class Count: Sendable {
        let value = Atomic<Int>(0)
    }

    private let counts: [Count]
    private let senders: Int
    private let receivers: Int

    package init(senders: Int, receivers: Int) {
        self.senders = senders
        self.receivers = receivers
        counts = (0..<(senders * receivers)).map { _ in Count() }
    }

    /// Receiver `receiver` has taken `messages` messages of sender `sender` (in order).
    func store(receiver: Int, sender: Int, messages: Int) {
        counts[receiver * senders + sender].value.store(messages, ordering: .relaxed)
    }

    /// The fewest of sender `sender`'s messages any receiver has taken.
    package func slowest(sender: Int) -> Int {
        var slowest = Int.max
        for receiver in 0..<receivers {
            slowest = min(slowest, counts[receiver * senders + sender].value.load(ordering: .relaxed))
        }
        return slowest
    }
}

/// What the bench needs to know of one synthetic member from outside its reader task: its member
/// number once joined, how many others it has heard of, and why its link ended (refused,
/// disconnected). Written by the reader on control frames only (rare), so a lock is cheap here.
package final class SyntheticMemberStatus: Sendable {
    private struct State {
        var member: UInt16?
        var othersKnown = 0
        var ended: String?
    }

    private let state = TSanVisibleMutex(State())

    package init() {}

    package var member: UInt16? { state.withLock { $0.member } }
    package var othersKnown: Int { state.withLock { $0.othersKnown } }
    package var ended: String? { state.withLock { $0.ended } }

    func joined(as member: UInt16) { state.withLock { $0.member = member } }
    func know(others: Int) { state.withLock { $0.othersKnown = others } }
    func end(_ reason: String) { state.withLock { $0.ended = $0.ended ?? reason } }
}

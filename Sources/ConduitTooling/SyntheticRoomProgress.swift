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
/// sender loads them once per batch it writes. A sender that must wait parks on its gate and the
/// receiver whose progress opens it resumes it: no polling (a sender that slept and looked again
/// cost the process a timer and a wake-up each time, several per cent of its CPU).
package final class SyntheticRoomProgress: Sendable {
    private final class Count: Sendable {
        let value = Atomic<Int>(0)
    }

    /// Where a waiting sender parks: the count its slowest receiver must reach (`Int.max` while
    /// nobody waits) and the continuation to resume then.
    private final class Gate: Sendable {
        let target = Atomic<Int>(.max)
        let waiter = TSanVisibleMutex<CheckedContinuation<Void, Never>?>(nil)

        /// Resumes the parked sender, if any (whoever takes the continuation resumes it, once).
        func open() {
            guard let waiter = waiter.withLock({ waiter in defer { waiter = nil }; return waiter }) else { return }
            target.store(.max, ordering: .sequentiallyConsistent)
            waiter.resume()
        }
    }

    private let counts: [Count]
    private let gates: [Gate]
    /// The run is over (``release()``): no sender waits any more.
    private let isReleased = Atomic<Bool>(false)
    private let senders: Int
    private let receivers: Int

    package init(senders: Int, receivers: Int) {
        self.senders = senders
        self.receivers = receivers
        counts = (0..<(senders * receivers)).map { _ in Count() }
        gates = (0..<senders).map { _ in Gate() }
    }

    /// Receiver `receiver` has taken `messages` messages of sender `sender` (in order); resumes
    /// the sender if it waits for this.
    func store(receiver: Int, sender: Int, messages: Int) {
        // Sequentially consistent with the gate's target (a Dekker pair): either this receiver
        // sees the target the sender set, or the sender sees this count when it checks again.
        counts[receiver * senders + sender].value.store(messages, ordering: .sequentiallyConsistent)
        let target = gates[sender].target.load(ordering: .sequentiallyConsistent)
        if target != .max, slowest(sender: sender) >= target { gates[sender].open() }
    }

    /// The fewest of sender `sender`'s messages any receiver has taken.
    package func slowest(sender: Int) -> Int {
        var slowest = Int.max
        for receiver in 0..<receivers {
            slowest = min(slowest, counts[receiver * senders + sender].value.load(ordering: .sequentiallyConsistent))
        }
        return slowest
    }

    /// Returns once every receiver has taken at least `messages` of sender `sender`'s messages.
    func wait(sender: Int, untilSlowestReaches messages: Int) async {
        guard slowest(sender: sender) < messages else { return }
        let gate = gates[sender]
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            gate.waiter.withLock { $0 = continuation }
            gate.target.store(messages, ordering: .sequentiallyConsistent)
            if slowest(sender: sender) >= messages || isReleased.load(ordering: .sequentiallyConsistent) { gate.open() }
        }
    }

    /// Resumes every waiting sender, and any that would wait from now on (the run is over: its
    /// links are closing).
    func release() {
        isReleased.store(true, ordering: .sequentiallyConsistent)
        for gate in gates { gate.open() }
    }
}

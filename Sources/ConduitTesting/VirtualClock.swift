public import ConduitCore
public import ConduitDriver

/// A clock that moves only when told to: give it to a `ConduitRuntime` (its `clock`) and a call or
/// conference runs on virtual time, so a test of anything time-dependent (queueing delay,
/// reassembly expiry, pacing) is deterministic and never sleeps on the wall clock.
///
/// ```swift
/// let clock = VirtualClock()
/// var runtime = ConduitRuntime(configuration: configuration)
/// runtime.clock = clock
/// // ... start a call, send ...
/// await clock.advance(by: .milliseconds(600))   // timers due by then have fired
/// ```
///
/// Sleepers wake in deadline order (ties in the order they went to sleep), each at its own
/// deadline: ``advance(to:)`` moves time from one deadline to the next, lets the woken tasks run,
/// and only then goes on, so a timer re-armed by a woken task for a time within the advance fires
/// within it too.
public final class VirtualClock: ConduitClock {
    private struct Sleeper {
        let deadline: ConduitInstant
        let order: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: ConduitInstant
        var sleepers: [UInt64: Sleeper] = [:]
        var nextOrder: UInt64 = 0
    }

    private let state: TSanVisibleMutex<State>

    /// A clock at `start` (default: zero).
    public init(start: ConduitInstant = .zero) {
        state = TSanVisibleMutex(State(now: start))
    }

    public func now() -> ConduitInstant { state.withLock { $0.now } }

    /// How many tasks sleep on this clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The earliest deadline anyone sleeps until, or nil.
    public var nextDeadline: ConduitInstant? { state.withLock { $0.sleepers.values.map(\.deadline).min() } }

    public func sleep(until deadline: ConduitInstant) async throws {
        let order = state.withLock { state -> UInt64 in
            state.nextOrder += 1
            return state.nextOrder
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow: Bool = state.withLock { state in
                    if deadline <= state.now || Task.isCancelled { return true }
                    state.sleepers[order] = Sleeper(deadline: deadline, order: order, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: order) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// Moves time forward by `duration` (see ``advance(to:)``).
    public func advance(by duration: Duration) async {
        await advance(to: now() + duration)
    }

    /// Moves time forward to `instant`, stopping at each sleeper's deadline on the way: the
    /// sleepers due then wake, and the tasks they resume get to run (and to go back to sleep)
    /// before time moves on. Time never goes back: an earlier `instant` changes nothing.
    public func advance(to instant: ConduitInstant) async {
        while true {
            let (woken, remaining): ([Sleeper], Int) = state.withLock { state in
                guard let next = state.sleepers.values.map(\.deadline).min(), next <= instant else { return ([], state.sleepers.count) }
                state.now = max(state.now, next)
                let due = state.sleepers.values.filter { $0.deadline <= next }.sorted { $0.order < $1.order }
                for sleeper in due { state.sleepers[sleeper.order] = nil }
                return (due, state.sleepers.count)
            }
            if woken.isEmpty { break }
            for sleeper in woken { sleeper.continuation.resume() }
            await settle(untilMoreSleepersThan: remaining)
        }
        state.withLock { $0.now = max($0.now, instant) }
        await settle()
    }

    /// Moves time forward in steps of `step` until `condition` holds (checked before the first
    /// step and after each) or `limit` of virtual time has passed; returns whether it held. What a
    /// test of time-dependent behaviour waits with, instead of sleeping on the wall clock.
    public func advance(by step: Duration, until condition: @Sendable () async -> Bool, limit: Duration) async -> Bool {
        let end = now() + limit
        while true {
            if await condition() { return true }
            if now() >= end { return false }
            await advance(to: min(now() + step, end))
        }
    }

    /// Lets tasks made runnable by a wake-up run to their next suspension. Other executors (a
    /// transport's) are not ours to wait for, so this yields a bounded number of times.
    public func settle() async {
        for _ in 0..<Self.settleYields { await Task.yield() }
    }

    /// Yields until a woken task went back to sleep on this clock (a driver re-arming its timer:
    /// the sign that what the wake-up set off has run), or a bounded number of times.
    private func settle(untilMoreSleepersThan remaining: Int) async {
        for _ in 0..<Self.maxSettleYields {
            if sleeperCount > remaining { break }
            await Task.yield()
        }
        await settle()
    }

    /// How many times ``settle()`` yields: enough for the hops of a wake-up (timer → actor →
    /// pump → link → peer's reader) on the cooperative pool.
    static let settleYields = 64
    /// The most a wake-up waits for its task to sleep again (one that does not re-arm, or that
    /// waits on something else, is let go after this many yields).
    static let maxSettleYields = 10_000
}

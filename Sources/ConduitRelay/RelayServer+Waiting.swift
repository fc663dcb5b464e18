/// A wait on the relay's state, for tests and tools: ``RelayServer/waitUntil(_:)``.
struct RelayConditionWaiter {
    let condition: @Sendable (isolated RelayServer) -> Bool
    let continuation: CheckedContinuation<Void, Never>
}

extension RelayServer {
    /// Returns once `condition` holds for the relay: at once, or after the first change of its
    /// machine (a frame taken, a join, a cluster message, a timeout) that makes it hold. For tests
    /// and tools that wait for the relay to have seen something (a frame accepted, a peer online
    /// on every shard) without polling it on the wall clock. Shutdown lets every waiter go.
    package func waitUntil(_ condition: @escaping @Sendable (isolated RelayServer) -> Bool) async {
        guard !isShutDown, !condition(self) else { return }
        await withCheckedContinuation { conditionWaiters.append(RelayConditionWaiter(condition: condition, continuation: $0)) }
    }

    /// After a change of the machine: the waiters whose condition now holds (all of them once the
    /// relay is shut down) go on.
    func resumeConditionWaiters() {
        var waiting: [RelayConditionWaiter] = []
        for waiter in conditionWaiters {
            if isShutDown || waiter.condition(self) { waiter.continuation.resume() } else { waiting.append(waiter) }
        }
        conditionWaiters = waiting
    }
}

import ConduitCore

extension VirtualClock {
    /// The operation given to ``run(advancingBy:limit:_:)`` had not finished when its limit of
    /// virtual time ran out (it was cancelled).
    public struct StillRunning: Error, CustomStringConvertible {
        /// The virtual time it was given.
        public let limit: Duration
        public var description: String { "the operation was still running after \(limit) of virtual time" }
    }

    /// Runs `operation` while moving time forward in steps of `step`, until it returns or `limit`
    /// of virtual time has passed (then it is cancelled and ``StillRunning`` is thrown). For an
    /// operation that waits on this clock's timers, a call that must time out, say:
    ///
    /// ```swift
    /// let error = try await clock.run(advancingBy: .milliseconds(100), limit: .seconds(5)) {
    ///     try await conference.placeCall(...)   // gives up after its 1 s timeout, virtually
    /// }
    /// ```
    public func run<T: Sendable>(
        advancingBy step: Duration, limit: Duration, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let finished = FinishedFlag()
        let task = Task {
            defer { finished.set() }
            return try await operation()
        }
        guard await advance(by: step, until: { finished.isSet }, limit: limit) else {
            task.cancel()
            throw StillRunning(limit: limit)
        }
        return try await task.value
    }
}

/// Set once an operation returned; read from the advancing loop.
private final class FinishedFlag: Sendable {
    private let value = TSanVisibleMutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

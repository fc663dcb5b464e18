public import Synchronization

/// Synchronization's `Mutex` with its hand-offs visible to ThreadSanitizer: the lock every module
/// of this package uses in place of `Mutex`.
///
/// Why: on Linux `Mutex` locks through a futex inside the Swift runtime's own (uninstrumented)
/// library, so ThreadSanitizer never sees one critical section happen before the next and reports
/// every `withLock` as a race (Swift 6.3.1; `Scripts/sanitizers/mutex-probe.swift` shows it, and
/// `Scripts/sanitizers.sh thread` runs that probe first). Here each critical section begins with
/// an acquiring load and ends with a releasing store of one atomic: Synchronization's atomics are
/// inlined into our (instrumented) code, so ThreadSanitizer sees that pair as the edge the futex
/// hides, and still reports any access made outside the lock (the probe checks that too).
///
/// Why here and not over `pthread_mutex` or NIO's lock: ConduitCore is sans-IO and takes no C
/// library, and `AsyncBoundedChannel` lives here; pure Swift keeps one lock for every module. The
/// price outside sanitizers is one load and one store per critical section (plain moves on x86),
/// no allocation (the benchmarks count mallocs). ThreadSanitizer's lock-order (deadlock) checks do
/// not apply to it: it sees atomics, not a mutex.
@usableFromInline
package struct TSanVisibleMutex<Value: ~Copyable>: ~Copyable {
    @usableFromInline let mutex: Mutex<Value>
    /// Its value means nothing: only the release at the end and the acquire at the start of each
    /// critical section do.
    @usableFromInline let handoff = Atomic<UInt8>(0)

    /// A lock over `initialValue`.
    @inlinable
    package init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with exclusive access to the value, as `Mutex.withLock` does.
    @inlinable
    package borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            _ = handoff.load(ordering: .acquiring)
            defer { handoff.store(0, ordering: .releasing) }
            return try body(&value)
        }
    }
}

extension TSanVisibleMutex: Sendable where Value: ~Copyable {}

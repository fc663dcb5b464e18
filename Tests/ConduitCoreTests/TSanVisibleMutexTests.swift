import ConduitCore
import Testing

// TSanVisibleMutex: what Mutex.withLock gives, kept (that ThreadSanitizer sees it is checked by
// Scripts/sanitizers/mutex-probe.swift, and by the whole suite under `Scripts/sanitizers.sh thread`).

@Suite("TSanVisibleMutex")
struct TSanVisibleMutexTests {
    struct Refused: Error, Equatable { let value: Int }
    /// Shares the lock between tasks (a noncopyable value cannot be captured by them).
    final class Shared: Sendable { let values = TSanVisibleMutex<[Int]>([]) }

    @Test("8 tasks x 2,000 read-modify-writes under the lock: none lost")
    func mutualExclusion() async {
        let shared = Shared()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<2_000 {
                        shared.values.withLock { values in
                            // A read, then a write that depends on it: unprotected, two tasks
                            // would append the same number.
                            let next = (values.last ?? 0) + 1
                            values.append(next)
                        }
                    }
                }
            }
        }
        let values = shared.values.withLock { $0 }
        #expect(values == Array(1...16_000))
    }

    @Test("a typed error thrown inside comes out as that error, and the lock is free again")
    func typedThrowReleases() {
        let lock = TSanVisibleMutex(41)
        #expect(throws: Refused(value: 42)) {
            try lock.withLock { (value: inout Int) throws(Refused) -> Void in
                value += 1
                throw Refused(value: value)
            }
        }
        #expect(lock.withLock { $0 } == 42)
    }
}

// ThreadSanitizer's view of our lock, checked on the toolchain at hand (Scripts/sanitizers.sh runs
// it before the suite). Two threads add 1 to a counter 100,000 times each under a lock:
//   mutex      Synchronization's Mutex: correct, yet on Swift 6.3.1 for Linux TSan reports a race
//              (the futex is in the uninstrumented runtime), the reason TSanVisibleMutex exists;
//   visible    TSanVisibleMutex (Sources/ConduitCore/Concurrency): no report expected;
//   unguarded  TSanVisibleMutex plus one access outside it: a report expected (the lock's atomic
//              edge must not hide a real race).
import Glibc
import Synchronization

final class Counter: @unchecked Sendable {
    var guarded = 0
    var unguarded = 0
}

/// A joinable pthread running `body`: no Dispatch, no tasks, nothing TSan has to take on trust.
func spawn(_ body: @escaping () -> Void) -> pthread_t {
    final class Box { let body: () -> Void; init(_ body: @escaping () -> Void) { self.body = body } }
    var thread = pthread_t()
    let context = Unmanaged.passRetained(Box(body)).toOpaque()
    let created = pthread_create(&thread, nil, { Unmanaged<Box>.fromOpaque($0!).takeRetainedValue().body(); return nil }, context)
    precondition(created == 0)
    return thread
}

let mode = CommandLine.arguments.dropFirst().first ?? "visible"
let counter = Counter()
let mutex = Mutex(())
let visible = TSanVisibleMutex(())
let rounds = 100_000
/// Both threads pass it before their loops, so the loops overlap (TSan reports only accesses that
/// actually ran unordered); its edge orders nothing after it.
let arrived = Atomic<Int>(0)

func work() {
    arrived.add(1, ordering: .relaxed)
    while arrived.load(ordering: .relaxed) < 2 {}
    for _ in 0..<rounds {
        if mode == "mutex" {
            mutex.withLock { _ in counter.guarded += 1 }
        } else {
            visible.withLock { _ in counter.guarded += 1 }
        }
        if mode == "unguarded" { counter.unguarded += 1 }
    }
}

@main
enum MutexProbe {
    static func main() {
        let other = spawn(work)
        work()
        pthread_join(other, nil)
        precondition(counter.guarded == 2 * rounds, "the lock lost an increment")
        print("\(mode): \(counter.guarded)")
    }
}

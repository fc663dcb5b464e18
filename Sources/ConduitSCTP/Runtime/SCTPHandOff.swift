#if SCTP
import ConduitCore
import NIOCore
import Synchronization

/// Hands what the stack's loop made (a new `DataChannel`, an error, statistics) to the task that
/// awaits it, in a way ThreadSanitizer sees.
///
/// Why: when the loop resumes the task's continuation before the task has suspended on it, the
/// Swift runtime's fast path (`swift_continuation_await` finds it resumed and carries on) orders
/// the two with an atomic of its own, uninstrumented, and tells ThreadSanitizer nothing. The
/// loop's writes before the resume, a `DataChannel`'s initialization, then look unordered with the
/// task's first reads of them: a fresh CI run (stop 48, the issues tool's stop 43) failed on that
/// report, and a continuation resumed while its task still spins before awaiting reproduces it
/// every time (Swift 6.3.1). So the loop `publish`es just before it resumes, and the task
/// `observe`s as soon as it has the value: a release and an acquire in our own (instrumented)
/// code. That covers what the loop made before publishing, not the continuation's own result
/// slot, which `resume` writes after it; reports on that slot name `resume` and are suppressed
/// (Scripts/sanitizers/tsan.supp, as for NIO's own `get()`). Outside sanitizers this is one
/// atomic add on the loop and one load in the task per hand-off, and no allocation.
final class SCTPHandOff: Sendable {
    /// Its value means nothing; a read-modify-write keeps every release in the chain an acquire
    /// sees (a plain store would replace the loop's with the last storer's).
    private let epoch = Atomic<UInt64>(0)

    /// On the loop, after the value is made and before the task is resumed.
    func publish() { epoch.wrappingAdd(1, ordering: .releasing) }

    /// In the task, once resumed and before it reads the value.
    func observe() { _ = epoch.load(ordering: .acquiring) }

    /// `future.get()`, with the hand-off published and observed. `future` is completed on the loop.
    func value<T: Sendable>(of future: EventLoopFuture<T>) async throws -> T {
        defer { observe() }
        return try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<T, any Error>) in
            future.whenComplete { result in
                self.publish()
                continuation.resume(with: result)
            }
        }
    }

    /// ``value(of:)`` with NIO's own errors (a closed channel) turned into `code`, described as
    /// "`context`: error"; the `ConduitError`s the loop fails these futures with pass through.
    func value<T: Sendable>(of future: EventLoopFuture<T>, orFailWith code: ConduitError.Code, _ context: @autoclosure () -> String) async throws(ConduitError) -> T {
        do {
            return try await value(of: future)
        } catch let error as ConduitError {
            throw error
        } catch {
            throw ConduitError(code, "\(context()): \(error)")
        }
    }
}

extension SCTPStack {
    /// Runs `body` on the loop and hands its result to the awaiting task (``SCTPHandOff``).
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await handOff.value(of: loop.submit(body))
    }

    /// Runs `body` on the loop and hands the value of the future it returns to the awaiting task.
    func run<T: Sendable>(_ code: ConduitError.Code, _ context: @autoclosure () -> String, _ body: @escaping @Sendable () -> EventLoopFuture<T>) async throws(ConduitError) -> T {
        try await handOff.value(of: loop.flatSubmit(body), orFailWith: code, context())
    }
}
#endif

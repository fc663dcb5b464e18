import ConduitCore

/// Records what an async sequence yields (a call's or a conference's events, a session's
/// deliveries), so a test can look at everything so far and wait for a condition without polling.
///
/// A waiter is resumed by the element that makes its condition hold, not by a timer: on a
/// ``VirtualClock`` check ``all`` after ``VirtualClock/advance(by:until:limit:)``; on real
/// transports bound the wait with your own deadline (the wait ends on task cancellation).
///
/// ```swift
/// let events = EventRecorder(call.events)
/// try await events.wait { $0.contains { if case .disconnected = $0 { true } else { false } } }
/// ```
public final class EventRecorder<Element: Sendable>: Sendable {
    /// The sequence finished (or the recorder was cancelled) before the condition held.
    public struct Finished: Error, CustomStringConvertible {
        /// How many elements were recorded.
        public let recorded: Int
        public var description: String { "the sequence finished after \(recorded) elements without the condition holding" }
    }

    private struct Waiter {
        let condition: @Sendable ([Element]) -> Bool
        let continuation: CheckedContinuation<[Element], any Error>
    }

    private struct State {
        var elements: [Element] = []
        var finished = false
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 0
        var task: Task<Void, Never>?
    }

    private let state = TSanVisibleMutex(State())

    /// Starts recording `sequence` on a task of its own (ended by ``cancel()`` or deinit).
    public init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Element {
        let task = Task { [weak self] in
            do {
                for try await element in sequence { self?.record(element) }
            } catch {}
            self?.finish()
        }
        state.withLock { $0.task = task }
    }

    deinit { state.withLock { $0.task?.cancel() } }

    /// Everything recorded so far, in order.
    public var all: [Element] { state.withLock { $0.elements } }

    /// Whether the sequence finished (or the recorder was cancelled).
    public var isFinished: Bool { state.withLock { $0.finished } }

    /// Stops recording; pending waits end with ``Finished``.
    public func cancel() {
        state.withLock { $0.task?.cancel() }
        finish()
    }

    /// Waits until `condition` holds for the elements recorded so far; returns them. Throws
    /// ``Finished`` if the sequence ends first, `CancellationError` if the task is cancelled.
    @discardableResult
    public func wait(until condition: @escaping @Sendable ([Element]) -> Bool) async throws -> [Element] {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[Element], any Error>) in
                let outcome: Result<[Element], any Error>? = state.withLock { state in
                    if condition(state.elements) { return .success(state.elements) }
                    if state.finished { return .failure(Finished(recorded: state.elements.count)) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters[id] = Waiter(condition: condition, continuation: continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Waits until the sequence finishes; returns everything it yielded. Throws
    /// `CancellationError` if the task is cancelled first.
    @discardableResult
    public func waitUntilFinished() async throws -> [Element] {
        do {
            return try await wait { _ in false }
        } catch is Finished {
            return all
        }
    }

    /// Waits for the first element that satisfies `predicate` (one already recorded counts).
    @discardableResult
    public func first(where predicate: @escaping @Sendable (Element) -> Bool) async throws -> Element {
        let elements = try await wait { $0.contains(where: predicate) }
        // The condition held for `elements`, so the search finds it.
        return elements.first(where: predicate)!
    }

    private func record(_ element: Element) {
        let ready: [(Waiter, [Element])] = state.withLock { state in
            state.elements.append(element)
            let snapshot = state.elements
            let due = state.waiters.filter { $0.value.condition(snapshot) }
            for id in due.keys { state.waiters[id] = nil }
            return due.sorted { $0.key < $1.key }.map { ($0.value, snapshot) }
        }
        for (waiter, snapshot) in ready { waiter.continuation.resume(returning: snapshot) }
    }

    private func finish() {
        let waiters: ([Waiter], Int) = state.withLock { state in
            state.finished = true
            defer { state.waiters.removeAll() }
            return (Array(state.waiters.values), state.elements.count)
        }
        for waiter in waiters.0 { waiter.continuation.resume(throwing: Finished(recorded: waiters.1)) }
    }
}

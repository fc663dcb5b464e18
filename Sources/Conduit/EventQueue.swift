import ConduitCore

/// The bounded queue behind every ``NotificationStream``: nothing is dropped silently.
///
/// It holds at most `capacity` events for a reader that falls behind. An event that finds it full
/// is counted instead, and the reader gets one overflow event (`makeDropped(count)`) at the point
/// of the loss, once it has read the events before it; later events follow it in order. A queue
/// whose element has no overflow event (`makeDropped` nil) only counts; its owner reports the
/// loss elsewhere. Essential events (`isEssential`, such as `.disconnected` or `.closed`) are
/// never dropped. ``droppedCount`` is the total.
///
/// The queue is pull-based: it knows when the reader takes an event, which an `AsyncStream`
/// continuation's buffer does not say.
final class EventQueue<Event: Sendable>: Sendable {
    private enum Entry {
        case event(Event)
        case dropped(Int)
    }

    private struct State {
        var entries: [Entry] = []
        /// Events in `entries` (overflow markers do not count against the capacity).
        var events = 0
        var dropped = 0
        var finished = false
        var waiters: [CheckedContinuation<Event?, Never>] = []
    }

    let capacity: Int
    private let makeDropped: (@Sendable (Int) -> Event)?
    private let isEssential: @Sendable (Event) -> Bool
    private let state = TSanVisibleMutex(State())

    init(capacity: Int, makeDropped: (@Sendable (Int) -> Event)?, isEssential: @escaping @Sendable (Event) -> Bool = { _ in false }) {
        precondition(capacity > 0)
        self.capacity = capacity
        self.makeDropped = makeDropped
        self.isEssential = isEssential
    }

    /// Events that found the queue full, in total.
    var droppedCount: Int { state.withLock { $0.dropped } }

    /// Entries waiting for the reader (events and overflow reports).
    var pending: Int { state.withLock { $0.entries.count } }

    /// Queues `event`; if the queue is full, counts it as dropped (unless `essential`, or
    /// essential by the queue's rule). False when it was dropped (or the queue is finished).
    @discardableResult
    func yield(_ event: Event, essential: Bool = false) -> Bool {
        let keep = essential || isEssential(event)
        let (waiter, queued): (CheckedContinuation<Event?, Never>?, Bool) = state.withLock { state in
            guard !state.finished else { return (nil, false) }
            if !state.waiters.isEmpty {
                return (state.waiters.removeFirst(), true)
            }
            if state.events >= capacity && !keep {
                state.dropped += 1
                guard makeDropped != nil else { return (nil, false) }
                if case .dropped(let count) = state.entries.last {
                    state.entries[state.entries.count - 1] = .dropped(count + 1)
                } else {
                    state.entries.append(.dropped(1))
                }
                return (nil, false)
            }
            state.entries.append(.event(event))
            state.events += 1
            return (nil, true)
        }
        waiter?.resume(returning: event)
        return queued
    }

    /// Ends the stream after the events already queued.
    func finish() {
        let waiters = state.withLock { state in
            state.finished = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: nil) }
    }

    /// The next event (or overflow report); nil once finished and read to the end, or if the
    /// reading task is cancelled.
    func next() async -> Event? {
        if let entry = takeFirst() { return entry }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Event?, Never>) in
                let ready: Event?? = state.withLock { state in
                    if let entry = Self.pop(&state, makeDropped) { return .some(entry) }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.waiters.append(continuation)
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            // A cancelled reader stops waiting (the stream ends for it).
            let waiters = state.withLock { state in
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: nil) }
        }
    }

    private func takeFirst() -> Event? {
        state.withLock { Self.pop(&$0, makeDropped) }
    }

    private static func pop(_ state: inout State, _ makeDropped: ((Int) -> Event)?) -> Event? {
        switch state.entries.isEmpty ? nil : state.entries.removeFirst() {
        case .event(let event):
            state.events -= 1
            return event
        case .dropped(let count):
            return makeDropped?(count)
        case nil:
            return nil
        }
    }
}

extension EventQueue {
    /// The reader's side: ends after ``finish()`` once every queued event has been read.
    var stream: NotificationStream<Event> { NotificationStream(self) }
}

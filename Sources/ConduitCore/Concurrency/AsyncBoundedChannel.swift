public import DequeModule

/// A multi-producer, single-consumer async channel with backpressure by weight.
///
/// `send` enqueues at once and then suspends while the buffered weight exceeds `capacity`, so no
/// element is ever dropped and memory stays within one element of the cap. `next` suspends while
/// the buffer is empty. `finish` ends the stream: buffered elements are still delivered, then nil.
/// It is a plain synchronisation primitive: no I/O, no clock.
///
/// Its methods are `@inlinable` so that each client module specializes them for its element
/// type: unspecialized, every send and receive looked up generic metadata at run time.
public final class AsyncBoundedChannel<Element: Sendable>: Sendable, AsyncSequence {
    public typealias Failure = Never

    @usableFromInline
    struct Waiter {
        @usableFromInline let id: UInt64
        @usableFromInline let continuation: CheckedContinuation<Void, Never>

        @inlinable
        init(id: UInt64, continuation: CheckedContinuation<Void, Never>) {
            self.id = id
            self.continuation = continuation
        }
    }

    @usableFromInline
    struct State {
        @usableFromInline var buffer = Deque<(element: Element, weight: Int)>()
        @usableFromInline var weight = 0
        @usableFromInline var finished = false
        @usableFromInline var consumer: CheckedContinuation<Element?, Never>?
        @usableFromInline var producers: [Waiter] = []
        /// Who waits for a producer to wait (``waitUntilProducerWaits()``).
        @usableFromInline var pushbackWatchers: [Waiter] = []
        @usableFromInline var nextID: UInt64 = 0

        @inlinable
        init() {}
    }

    @usableFromInline let state = TSanVisibleMutex(State())
    /// The most weight buffered before `send` suspends (each element weighs what the channel's weigh function says, in bytes for sessions).
    public let capacity: Int
    @usableFromInline let weigh: @Sendable (Element) -> Int

    /// - Parameters:
    ///   - capacity: total weight buffered before producers wait.
    ///   - weigh: an element's weight; 1 per element by default.
    public init(capacity: Int, weigh: @escaping @Sendable (Element) -> Int = { _ in 1 }) {
        precondition(capacity > 0)
        self.capacity = capacity
        self.weigh = weigh
    }

    /// How many elements are buffered, not yet taken (what a test checks a flood left behind).
    package var bufferedCount: Int { state.withLock { $0.buffer.count } }

    /// What `element` weighs here (what it counts against `capacity`).
    package func weight(of element: Element) -> Int { weigh(element) }

    /// Enqueues `element`; returns false (dropping it) if the channel is finished. Suspends while
    /// the channel is over capacity.
    @inlinable @discardableResult
    public func send(_ element: Element) async -> Bool {
        let w = weigh(element)
        let (accepted, mustWait, consumer): (Bool, Bool, CheckedContinuation<Element?, Never>?) = state.withLock { state in
            guard !state.finished else { return (false, false, nil) }
            if let consumer = state.consumer {
                state.consumer = nil
                return (true, false, consumer)
            }
            state.buffer.append((element, w))
            state.weight += w
            return (true, state.weight > capacity, nil)
        }
        consumer?.resume(returning: element)
        guard accepted else { return false }
        if mustWait { await waitForRoom() }
        return true
    }

    /// Enqueues without waiting; false if finished or over capacity.
    @inlinable
    public func trySend(_ element: Element) -> Bool {
        let w = weigh(element)
        let (accepted, consumer): (Bool, CheckedContinuation<Element?, Never>?) = state.withLock { state in
            guard !state.finished else { return (false, nil) }
            if let consumer = state.consumer {
                state.consumer = nil
                return (true, consumer)
            }
            guard state.weight < capacity else { return (false, nil) }
            state.buffer.append((element, w))
            state.weight += w
            return (true, nil)
        }
        consumer?.resume(returning: element)
        return accepted
    }

    @inlinable
    func waitForRoom() async {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (resumeNow, watchers) = state.withLock { state -> (Bool, [Waiter]) in
                    if state.finished || state.weight <= capacity || Task.isCancelled { return (true, []) }
                    state.producers.append(Waiter(id: id, continuation: continuation))
                    defer { state.pushbackWatchers.removeAll() }
                    return (false, state.pushbackWatchers)
                }
                if resumeNow { continuation.resume() }
                for watcher in watchers { watcher.continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.producers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.producers.remove(at: index)
            }
            waiter?.continuation.resume()
        }
    }

    /// The next element, or nil once finished and drained (or if the consumer is cancelled).
    @inlinable
    public func next() async -> Element? {
        let (ready, released) = state.withLock { Self.pop(&$0, capacity: capacity) }
        for waiter in released { waiter.continuation.resume() }
        if let ready { return ready }
        let handedOver = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
                let (element, released, done): (Element?, [Waiter], Bool) = state.withLock { state in
                    let (element, released) = Self.pop(&state, capacity: capacity)
                    if element != nil { return (element, released, true) }
                    if state.finished || Task.isCancelled { return (nil, [], true) }
                    precondition(state.consumer == nil, "AsyncBoundedChannel has a single consumer")
                    state.consumer = continuation
                    return (nil, [], false)
                }
                for waiter in released { waiter.continuation.resume() }
                if done { continuation.resume(returning: element) }
            }
        } onCancel: {
            let consumer = state.withLock { state -> CheckedContinuation<Element?, Never>? in
                defer { state.consumer = nil }
                return state.consumer
            }
            consumer?.resume(returning: nil)
        }
        // A producer hands an element to a waiting consumer by resuming its continuation after
        // it released the lock, and ThreadSanitizer does not see a resume as synchronisation: it
        // reported the consumer's first read of a handed-over object (a loopback link's
        // capabilities, accepted on another thread than the one that made it) as a race. Taking
        // the lock once here orders that read after the producer's release, as TSan can see.
        state.withLock { _ in }
        return handedOver
    }

    /// Takes the first buffered element; once the weight is back within capacity, hands back the
    /// producers to wake (every path that removes an element must wake them, or they hang).
    @inlinable
    static func pop(_ state: inout State, capacity: Int) -> (Element?, [Waiter]) {
        guard let first = state.buffer.popFirst() else { return (nil, []) }
        state.weight -= first.weight
        guard state.weight <= capacity, !state.producers.isEmpty else { return (first.element, []) }
        defer { state.producers.removeAll() }
        return (first.element, state.producers)
    }

    /// Ends the channel. Waiting producers resume; the consumer drains what is buffered, then nil.
    @inlinable
    public func finish() {
        let (consumer, producers) = state.withLock { state -> (CheckedContinuation<Element?, Never>?, [Waiter]) in
            state.finished = true
            defer {
                state.consumer = nil
                state.producers.removeAll()
                state.pushbackWatchers.removeAll()
            }
            return (state.buffer.isEmpty ? state.consumer : nil, state.producers + state.pushbackWatchers)
        }
        consumer?.resume(returning: nil)
        for waiter in producers { waiter.continuation.resume() }
    }

    /// Ends the channel and discards what is buffered.
    /// Finishes and drops what is buffered, returning it (to be released by the caller): an
    /// element the consumer already took is the consumer's; one still here was never handed over.
    @discardableResult
    public func finishAndDiscard() -> [Element] {
        let discarded = state.withLock { state in
            defer {
                state.buffer.removeAll()
                state.weight = 0
            }
            return state.buffer.map(\.element)
        }
        finish()
        return discarded
    }

    /// Returns once a producer waits for room (the buffer went over its capacity, and whoever
    /// feeds it is held back), or once the channel is finished: what a test of backpressure waits
    /// for, instead of polling the fill level on the wall clock.
    package func waitUntilProducerWaits() async {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.finished || !state.producers.isEmpty || Task.isCancelled { return true }
                    state.pushbackWatchers.append(Waiter(id: id, continuation: continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let watcher = state.withLock { state -> Waiter? in
                guard let index = state.pushbackWatchers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.pushbackWatchers.remove(at: index)
            }
            watcher?.continuation.resume()
        }
    }

    /// Whether the channel was finished; the consumer reads what is buffered, then nil.
    public var isFinished: Bool { state.withLock { $0.finished } }
    /// The weight buffered now.
    public var bufferedWeight: Int { state.withLock { $0.weight } }

    public struct AsyncIterator: AsyncIteratorProtocol {
        @usableFromInline let channel: AsyncBoundedChannel

        @inlinable
        init(channel: AsyncBoundedChannel) { self.channel = channel }

        @inlinable
        public mutating func next() async -> Element? { await channel.next() }
        @inlinable
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? { await channel.next() }
    }

    @inlinable
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(channel: self) }
}

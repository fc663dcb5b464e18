#if SCTP
import DequeModule
import ConduitCore

/// Received items waiting for one reader, bounded by count and bytes. When an item does not fit,
/// `deliver` refuses it and the event loop stops reading the usrsctp socket: SCTP's receive window
/// then fills and the peer slows down (backpressure instead of loss). Once the reader has taken
/// items, `onSpace` runs so the loop resumes reading.
final class SCTPInbox<Element: Sendable>: Sendable {
    private struct State {
        var items = Deque<Element>()
        var bytes = 0
        var finished = false
        var refused = false
        var consumer: CheckedContinuation<[Element]?, Never>?
        var consumerID: UInt64 = 0
        var consumerMax = Int.max
        var onSpace: (@Sendable () -> Void)?
    }

    private let state = TSanVisibleMutex(State())
    private let maxItems: Int
    private let maxBytes: Int
    private let size: @Sendable (Element) -> Int

    init(maxItems: Int, maxBytes: Int, size: @escaping @Sendable (Element) -> Int) {
        self.maxItems = maxItems
        self.maxBytes = maxBytes
        self.size = size
    }

    func setOnSpace(_ body: @escaping @Sendable () -> Void) { state.withLock { $0.onSpace = body } }

    /// Whether the loop may read another message: false once the inbox is at its bounds (then the
    /// reader's next take calls `onSpace`). A message read after a true answer is always accepted,
    /// so the bounds are exceeded by at most one message.
    func hasRoom() -> Bool {
        state.withLock { state in
            guard !state.finished else { return true }
            let room = state.items.count < maxItems && state.bytes < maxBytes
            if !room { state.refused = true }
            return room
        }
    }

    /// Queues `item` (dropped if the inbox is finished: nobody reads any more). With `wake`
    /// false a waiting reader is not resumed yet: the caller queues a burst and then calls
    /// ``wake()`` once, so the reader takes the burst in one hop instead of one per item.
    func deliver(_ item: Element, wake: Bool = true) {
        let count = size(item)
        let (consumer, handOff) = state.withLock { state -> (CheckedContinuation<[Element]?, Never>?, [Element]?) in
            guard !state.finished else { return (nil, nil) }
            state.items.append(item)
            state.bytes += count
            guard wake, let consumer = state.consumer else { return (nil, nil) }
            state.consumer = nil
            return (consumer, take(&state, max: state.consumerMax))
        }
        consumer?.resume(returning: handOff)
    }

    /// Resumes a waiting reader with what is queued (after deliveries with `wake: false`).
    func wake() {
        let (consumer, handOff) = state.withLock { state -> (CheckedContinuation<[Element]?, Never>?, [Element]?) in
            guard let consumer = state.consumer, !state.items.isEmpty else { return (nil, nil) }
            state.consumer = nil
            return (consumer, take(&state, max: state.consumerMax))
        }
        consumer?.resume(returning: handOff)
    }

    private func take(_ state: inout State, max: Int) -> [Element] {
        var out: [Element] = []
        while out.count < max, let item = state.items.popFirst() {
            state.bytes -= size(item)
            out.append(item)
        }
        return out
    }

    /// Up to `max` queued items; suspends while there are none; nil once finished and drained,
    /// or if the reading task is cancelled.
    func next(max: Int = Int.max) async -> [Element]? {
        let id = state.withLock { state -> UInt64 in
            state.consumerID &+= 1
            return state.consumerID
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[Element]?, Never>) in
                let (done, value): (Bool, [Element]?) = state.withLock { state in
                    if !state.items.isEmpty { return (true, take(&state, max: max)) }
                    if state.finished || Task.isCancelled { return (true, nil) }
                    precondition(state.consumer == nil, "an SCTP inbox has a single reader")
                    state.consumer = continuation
                    state.consumerMax = max
                    return (false, nil)
                }
                if done { continuation.resume(returning: value) }
            }
        } onCancel: {
            let consumer = state.withLock { state -> CheckedContinuation<[Element]?, Never>? in
                guard state.consumerID == id else { return nil }
                defer { state.consumer = nil }
                return state.consumer
            }
            consumer?.resume(returning: nil)
        }
        let wake = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.refused else { return nil }
            state.refused = false
            return state.onSpace
        }
        wake?()
        return result
    }

    /// Ends reads: what is queued is still read (unless `discarding`), then nil.
    func finish(discarding: Bool) {
        let consumer = state.withLock { state -> CheckedContinuation<[Element]?, Never>? in
            state.finished = true
            if discarding {
                state.items.removeAll()
                state.bytes = 0
            }
            guard state.items.isEmpty else { return nil }
            defer { state.consumer = nil }
            return state.consumer
        }
        consumer?.resume(returning: nil)
    }

    var isFinished: Bool { state.withLock { $0.finished } }

    /// Ends reads and returns what was still queued (for the caller to dispose of).
    func finishTakingAll() -> [Element] {
        let (items, consumer) = state.withLock { state -> ([Element], CheckedContinuation<[Element]?, Never>?) in
            state.finished = true
            let items = take(&state, max: Int.max)
            defer { state.consumer = nil }
            return (items, state.consumer)
        }
        consumer?.resume(returning: nil)
        return items
    }
}
#endif

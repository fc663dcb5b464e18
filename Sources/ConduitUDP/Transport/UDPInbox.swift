import ConduitCore

/// Received datagrams waiting for the link's reader: one `DatagramBatch` that the event loop
/// appends to once per read burst and that `read` takes whole. Bounded by datagrams and bytes;
/// what does not fit is refused (the caller counts it: the link is unreliable).
final class UDPInbox: Sendable {
    private struct State {
        var batch = DatagramBatch()
        var finished = false
        var consumer: CheckedContinuation<DatagramBatch?, Never>?
        var consumerID: UInt64 = 0
    }

    private let state = TSanVisibleMutex(State())
    let maxDatagrams: Int
    let maxBytes: Int

    init(maxDatagrams: Int = 4096, maxBytes: Int = 4 << 20) {
        self.maxDatagrams = maxDatagrams
        self.maxBytes = maxBytes
    }

    /// Queues what fits of `incoming`; returns how many datagrams were accepted.
    func deliver(_ incoming: DatagramBatch) -> Int {
        let (accepted, consumer, handOff): (Int, CheckedContinuation<DatagramBatch?, Never>?, DatagramBatch?) = state.withLock { state in
            guard !state.finished else { return (0, nil, nil) }
            var accepted = 0
            if state.batch.isEmpty && incoming.count <= maxDatagrams && incoming.byteCount <= maxBytes {
                state.batch = incoming
                accepted = incoming.count
            } else {
                for index in 0..<incoming.count {
                    let range = incoming.range(of: index)
                    guard state.batch.count < maxDatagrams, state.batch.byteCount + range.count <= maxBytes else { break }
                    incoming.withDatagram(index) { state.batch.append($0) }
                    accepted += 1
                }
            }
            guard let consumer = state.consumer, !state.batch.isEmpty else { return (accepted, nil, nil) }
            state.consumer = nil
            defer { state.batch = DatagramBatch() }
            return (accepted, consumer, state.batch)
        }
        consumer?.resume(returning: handOff)
        return accepted
    }

    /// Everything queued since the last read; suspends while there is nothing; nil once finished
    /// and drained, or if the reading task is cancelled.
    nonisolated(nonsending) func read() async -> DatagramBatch? {
        if let ready = takeIfReady() { return ready }
        let id = state.withLock { state -> UInt64 in
            state.consumerID &+= 1
            return state.consumerID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<DatagramBatch?, Never>) in
                let (done, value): (Bool, DatagramBatch?) = state.withLock { state in
                    if !state.batch.isEmpty {
                        defer { state.batch = DatagramBatch() }
                        return (true, state.batch)
                    }
                    if state.finished || Task.isCancelled { return (true, nil) }
                    precondition(state.consumer == nil, "a UDP link has a single reader")
                    state.consumer = continuation
                    return (false, nil)
                }
                if done { continuation.resume(returning: value) }
            }
        } onCancel: {
            let consumer = state.withLock { state -> CheckedContinuation<DatagramBatch?, Never>? in
                guard state.consumerID == id else { return nil }
                defer { state.consumer = nil }
                return state.consumer
            }
            consumer?.resume(returning: nil)
        }
    }

    private func takeIfReady() -> DatagramBatch?? {
        state.withLock { state -> DatagramBatch?? in
            if !state.batch.isEmpty {
                defer { state.batch = DatagramBatch() }
                return .some(state.batch)
            }
            return state.finished ? .some(nil) : nil
        }
    }

    /// Ends reads: what is queued is still read (unless `discarding`), then nil.
    func finish(discarding: Bool) {
        let consumer = state.withLock { state -> CheckedContinuation<DatagramBatch?, Never>? in
            state.finished = true
            if discarding { state.batch = DatagramBatch() }
            guard state.batch.isEmpty else { return nil }
            defer { state.consumer = nil }
            return state.consumer
        }
        consumer?.resume(returning: nil)
    }
}

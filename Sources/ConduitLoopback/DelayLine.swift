import ConduitCore
import ConduitDriver
import ConduitImpairment
import DequeModule

/// One direction of an impaired loopback link: decides each datagram's fate with an
/// `ImpairmentModel` and releases survivors into the receiver's inbox when they are due.
///
/// Like a router queue, it is bounded: datagrams that would push more than `capacity` bytes into
/// flight are dropped and counted (tail drop), so an impaired link never buffers without limit.
final class DelayLine: Sendable {
    private struct Pending: Comparable {
        var due: ConduitInstant
        var sequence: UInt64
        var datagram: [UInt8]
        static func < (lhs: Pending, rhs: Pending) -> Bool { (lhs.due, lhs.sequence) < (rhs.due, rhs.sequence) }
        static func == (lhs: Pending, rhs: Pending) -> Bool { lhs.due == rhs.due && lhs.sequence == rhs.sequence }
    }

    private struct State {
        var model: ImpairmentModel
        /// Sorted by due time (inserts are nearly always at the end).
        var pending = Deque<Pending>()
        var pendingBytes = 0
        var sequence: UInt64 = 0
        var droppedOverCapacity = 0
        /// In flight when the receiving end closed: nowhere left to land.
        var droppedAtReceiverClose = 0
        var wakeup: CheckedContinuation<Void, Never>?
        var closed = false
    }

    private let state: TSanVisibleMutex<State>
    private let partition: PartitionSwitch
    private let capacity: Int
    private let inbox: AsyncBoundedChannel<DatagramBatch>
    private let clock: any ConduitClock

    init(configuration: ImpairmentConfiguration, capacity: Int, inbox: AsyncBoundedChannel<DatagramBatch>, partition: PartitionSwitch, clock: any ConduitClock) {
        self.state = TSanVisibleMutex(State(model: ImpairmentModel(configuration: configuration)))
        self.partition = partition
        self.capacity = capacity
        self.inbox = inbox
        self.clock = clock
    }

    private func now() -> ConduitInstant { clock.now() }

    /// Runs until closed: moves due datagrams to the inbox.
    func run() async {
        while true {
            let (due, sleepUntil, closed): ([[UInt8]], ConduitInstant?, Bool) = state.withLock { state in
                let current = now()
                var due: [[UInt8]] = []
                while let first = state.pending.first, first.due <= current {
                    state.pending.removeFirst()
                    state.pendingBytes -= first.datagram.count
                    due.append(first.datagram)
                }
                return (due, state.pending.first?.due, state.closed)
            }
            if !due.isEmpty {
                var batch = DatagramBatch()
                for datagram in due { batch.append(datagram) }
                guard await inbox.send(batch) else { return }
            }
            if closed && sleepUntil == nil {
                inbox.finish()
                return
            }
            if due.isEmpty { await wait(until: sleepUntil) }
        }
    }

    /// Sleeps until `deadline` (or indefinitely), or until a submission puts a datagram at the
    /// head of the line or the line closes, whichever comes first.
    private func wait(until deadline: ConduitInstant?) async {
        var timer: Task<Void, Never>?
        await withCheckedContinuation { continuation in
            let resume = state.withLock { state -> Bool in
                // Closed with datagrams still in flight, the line sleeps until they are due like
                // an open one: resuming at once would spin (on a virtual clock, until time moves).
                if (state.closed && state.pending.isEmpty) || state.pending.first.map({ $0.due <= now() }) == true
                    || state.pending.first?.due != deadline
                {
                    return true
                }
                state.wakeup = continuation
                return false
            }
            if resume {
                continuation.resume()
            } else if let deadline {
                timer = Task { [clock] in
                    guard (try? await clock.sleep(until: deadline)) != nil else { return }
                    let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
                        defer { state.wakeup = nil }
                        return state.wakeup
                    }
                    waiter?.resume()
                }
            }
        }
        timer?.cancel()
    }

    /// Submits a batch: each datagram is dropped, delayed, duplicated or corrupted as the model says.
    func submit(_ batch: DatagramBatch) {
        let wakeup = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.closed else { return nil }
            let current = now()
            state.model.isPartitioned = partition.isOn
            let headBefore = state.pending.first?.due
            for index in 0..<batch.count {
                let decision = state.model.submit(size: batch.range(of: index).count, now: current)
                for delivery in decision.deliveries {
                    var datagram = batch[index]
                    guard state.pendingBytes + datagram.count <= capacity else {
                        state.droppedOverCapacity += 1
                        continue
                    }
                    delivery.apply(to: &datagram)
                    state.sequence += 1
                    let entry = Pending(due: delivery.at, sequence: state.sequence, datagram: datagram)
                    let position = state.pending.lastIndex(where: { $0 <= entry }).map { $0 + 1 } ?? 0
                    state.pending.insert(entry, at: position)
                    state.pendingBytes += datagram.count
                }
            }
            // Only a new head changes when the runner must wake.
            guard state.pending.first?.due != headBefore else { return nil }
            defer { state.wakeup = nil }
            return state.wakeup
        }
        wakeup?.resume()
    }

    /// The receiving end closed: what is in flight can land nowhere, so it is dropped (and counted)
    /// and the runner ends now instead of sleeping until those datagrams were due (forever, on a
    /// virtual clock that a finished test no longer moves).
    func receiverClosed() { close(droppingInFlight: true) }

    /// Stops accepting; what is in flight is still delivered (unless dropped), then the inbox ends.
    func close(droppingInFlight: Bool = false) {
        let wakeup = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.closed = true
            if droppingInFlight {
                state.droppedAtReceiverClose += state.pending.count
                state.pending.removeAll()
                state.pendingBytes = 0
            }
            defer { state.wakeup = nil }
            return state.wakeup
        }
        wakeup?.resume()
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    var statistics: (impairment: ImpairmentModel.Statistics, droppedOverCapacity: Int, droppedAtReceiverClose: Int) {
        state.withLock { ($0.model.statistics, $0.droppedOverCapacity, $0.droppedAtReceiverClose) }
    }
}

/// A blackout switch shared by every link to one loopback name (see ``LoopbackHub/setPartitioned(_:_:)``).
final class PartitionSwitch: Sendable {
    private let value = TSanVisibleMutex(false)
    var isOn: Bool {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

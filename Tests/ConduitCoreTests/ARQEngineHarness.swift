import ConduitCore
import ConduitARQ
import ConduitImpairment
import Testing

// A two-endpoint harness on virtual time for the reliable link, in the manner of quinn-proto's
// tests: two links, one seeded ImpairmentModel per direction, a queue of datagrams in flight
// ordered by arrival, and a loop that jumps `now` to the earliest of the next arrival and either
// side's deadline. Nothing here reads a clock: every figure is virtual time.

/// A binary min-heap for the harness's event queue.
struct TestHeap<Element> {
    private var items: [Element] = []
    let areInIncreasingOrder: (Element, Element) -> Bool

    init(by areInIncreasingOrder: @escaping (Element, Element) -> Bool) { self.areInIncreasingOrder = areInIncreasingOrder }

    var first: Element? { items.first }
    var count: Int { items.count }
    var isEmpty: Bool { items.isEmpty }

    mutating func push(_ element: Element) {
        items.append(element)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard areInIncreasingOrder(items[child], items[parent]) else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> Element? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < items.count, areInIncreasingOrder(items[left], items[smallest]) { smallest = left }
            if right < items.count, areInIncreasingOrder(items[right], items[smallest]) { smallest = right }
            if smallest == parent { break }
            items.swapAt(parent, smallest)
            parent = smallest
        }
        return top
    }
}

struct ARQEngineHarness {
    struct InFlight {
        var at: ConduitInstant
        var order: Int
        var toB: Bool
        var bytes: [UInt8]
    }

    /// A drop-tail queue in front of the A→B bottleneck: a datagram that would wait longer than
    /// `buffer` is dropped before it reaches the impairment model (which itself queues without bound).
    struct DropTail {
        var bitsPerSecond: Int
        var buffer: Duration
        var linkFreeAt = ConduitInstant.zero
        var dropped = 0
    }

    var a: ARQEngine
    var b: ARQEngine
    var aToB: ImpairmentModel
    var bToA: ImpairmentModel
    var now = ConduitInstant.zero
    var inFlight = TestHeap<InFlight>(by: { ($0.at, $0.order) < ($1.at, $1.order) })
    var order = 0
    var batch = DatagramBatch(reservingBytes: 64 * 1_232, datagrams: 64)
    var dropTail: DropTail?
    /// Extra instants the loop must stop at (partition start and end, say).
    var alarms: [ConduitInstant] = []
    /// Sees every datagram a side sends, before impairment.
    var inspect: ((_ fromA: Bool, _ datagram: [UInt8], _ now: ConduitInstant) -> Void)?
    /// Drops the datagrams it returns true for, before impairment (a test's own loss pattern).
    var drop: ((_ fromA: Bool, _ datagram: [UInt8]) -> Bool)?
    /// Extra delay drawn per datagram, uniformly from 0...`reorderingJitter.jitter`, on top of the
    /// impairment models' in-order delay: unlike the models' jitter it reorders datagrams, as
    /// `tc netem` jitter does (and as the `conduit impair` proxy's timers do with equal deadlines).
    var reorderingJitter: (jitter: Duration, random: SeededRandom)?
    var datagramsAtoB = 0
    var datagramsBtoA = 0
    var bytesAtoB = 0
    var steps = 0

    init(
        a configurationA: ARQEngine.Configuration = .init(),
        b configurationB: ARQEngine.Configuration? = nil,
        aToB: ImpairmentConfiguration = .init(),
        bToA: ImpairmentConfiguration = .init()
    ) {
        a = ARQEngine(configuration: configurationA, now: .zero)
        b = ARQEngine(configuration: configurationB ?? configurationA, now: .zero)
        self.aToB = ImpairmentModel(configuration: aToB)
        self.bToA = ImpairmentModel(configuration: bToA)
    }

    static func impairment(loss: Double = 0, reorder: Double = 0, duplicate: Double = 0, corrupt: Double = 0,
                           delayMs: Int64 = 20, jitterMs: Int64 = 5, rate: RateLimit = .unlimited, seed: UInt64) -> ImpairmentConfiguration {
        var configuration = ImpairmentConfiguration()
        configuration.loss = loss
        configuration.reorder = reorder
        configuration.duplicate = duplicate
        configuration.corrupt = corrupt
        configuration.delay = .milliseconds(delayMs)
        configuration.jitter = .milliseconds(jitterMs)
        configuration.rate = rate
        configuration.seed = seed
        return configuration
    }

    var isPartitioned: Bool {
        get { aToB.isPartitioned }
        set {
            aToB.isPartitioned = newValue
            bToA.isPartitioned = newValue
        }
    }

    /// Drains both sides' output into the network.
    mutating func flush() {
        for fromA in [true, false] {
            var rounds = 0
            while true {
                rounds += 1
                // A side that never stops sending at one instant is a bug (it once ran the machine
                // out of memory): fail instead of queueing datagrams without end.
                if rounds > 1_000 {
                    Issue.record("\(fromA ? "A" : "B") sent more than 64,000 packets at \(now) without pause")
                    return
                }
                batch.removeAll()
                let count = fromA ? a.pollTransmit(now: now, into: &batch) : b.pollTransmit(now: now, into: &batch)
                guard count > 0 else { break }
                for index in 0..<batch.count { submit(batch[index], fromA: fromA) }
            }
        }
    }

    mutating func submit(_ datagram: [UInt8], fromA: Bool) {
        inspect?(fromA, datagram, now)
        if let drop, drop(fromA, datagram) { return }
        if fromA {
            datagramsAtoB += 1
            bytesAtoB += datagram.count
            if var queue = dropTail {
                let start = max(now, queue.linkFreeAt)
                guard start - now <= queue.buffer else {
                    queue.dropped += 1
                    dropTail = queue
                    return
                }
                let decision = aToB.submit(size: datagram.count, now: now)
                if !decision.isDropped {
                    // Mirrors the model's own serialisation, so both agree on the queue.
                    queue.linkFreeAt = start + .nanoseconds(Int64(Double(datagram.count) * 8 / Double(queue.bitsPerSecond) * 1e9))
                }
                dropTail = queue
                schedule(datagram, decision, toB: true)
                return
            }
            schedule(datagram, aToB.submit(size: datagram.count, now: now), toB: true)
        } else {
            datagramsBtoA += 1
            schedule(datagram, bToA.submit(size: datagram.count, now: now), toB: false)
        }
    }

    mutating func schedule(_ datagram: [UInt8], _ decision: ImpairmentModel.Decision, toB: Bool) {
        for delivery in decision.deliveries {
            var bytes = datagram
            delivery.apply(to: &bytes)
            order += 1
            var at = delivery.at
            if var jitter = reorderingJitter {
                at = at + .nanoseconds(Int64(Double(jitter.jitter.nanosecondsClamped) * jitter.random.unit()))
                reorderingJitter = jitter
            }
            inFlight.push(InFlight(at: at, order: order, toB: toB, bytes: bytes))
        }
    }

    /// The next instant anything happens, if anything will.
    func nextEvent() -> ConduitInstant? {
        var next = inFlight.first?.at
        for candidate in [a.nextDeadline(now: now), b.nextDeadline(now: now), alarms.filter { $0 > now }.min()] {
            if let candidate { next = next.map { min($0, candidate) } ?? candidate }
        }
        return next
    }

    /// Moves to `instant`: delivers what arrives by then and fires due timers.
    mutating func advance(to instant: ConduitInstant) {
        now = max(now, instant)
        while let head = inFlight.first, head.at <= now {
            _ = inFlight.pop()
            if head.toB { b.handle(datagram: head.bytes, now: now) } else { a.handle(datagram: head.bytes, now: now) }
        }
        if let deadline = a.nextDeadline(now: now), deadline <= now { a.handleTimeout(now: now) }
        if let deadline = b.nextDeadline(now: now), deadline <= now { b.handleTimeout(now: now) }
    }

    /// Runs until `tick` (called after every step, where it may send and poll) returns true, or
    /// `limit` of virtual time has passed. Returns whether `tick` finished.
    mutating func run(for limit: Duration, _ tick: (inout ARQEngineHarness) -> Bool) -> Bool {
        let end = now + limit
        var stepsAtThisInstant = 0
        var lastInstant = now
        while true {
            if tick(&self) { return true }
            flush()
            guard let next = nextEvent(), next <= end else { return false }
            advance(to: next)
            steps += 1
            if now == lastInstant {
                stepsAtThisInstant += 1
                if stepsAtThisInstant > 10_000 {
                    Issue.record("the harness is spinning at \(now)")
                    return false
                }
            } else {
                lastInstant = now
                stepsAtThisInstant = 0
            }
        }
    }

    /// Goes on for `duration` with nothing new sent, polling `b` (and `a`) into the given sinks.
    mutating func settle(for duration: Duration, deliveredToB: inout [ARQEngine.ReceivedFrame], deliveredToA: inout [ARQEngine.ReceivedFrame]) {
        var toB: [ARQEngine.ReceivedFrame] = []
        var toA: [ARQEngine.ReceivedFrame] = []
        _ = run(for: duration) { harness in
            while let frame = harness.b.pollDelivery(now: harness.now) { toB.append(frame) }
            while let frame = harness.a.pollDelivery(now: harness.now) { toA.append(frame) }
            return false
        }
        deliveredToB += toB
        deliveredToA += toA
    }
}

extension Duration {
    var seconds: Double { Double(nanosecondsClamped) / 1e9 }
}

extension ConduitInstant {
    var seconds: Double { Double(nanoseconds) / 1e9 }
}

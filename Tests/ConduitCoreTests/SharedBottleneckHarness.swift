import ConduitCore
import ConduitARQ
import Testing

// Several reliable links through one bottleneck, on virtual time: each flow's sender writes as
// fast as its link takes frames; its packets cross one shared drop-tail FIFO served at a fixed
// rate, then a fixed one-way delay; acknowledgements come back over the same delay with no
// bottleneck. What it measures: each flow's goodput over an interval, and how long packets waited
// in the shared queue (the queueing delay the flows' congestion control causes).

struct SharedBottleneckHarness {
    struct Flow {
        var sender: ARQEngine
        var receiver: ARQEngine
        /// When the flow starts writing.
        var start: ConduitInstant
        /// Payload bytes delivered in order, and in the measured interval.
        var delivered = 0
        var deliveredInWindow = 0
        var nextSequence: UInt32 = 0
        var outOfOrder = 0
    }

    struct Arrival {
        var at: ConduitInstant
        var order: Int
        var flow: Int
        var toReceiver: Bool
        var bytes: [UInt8]
    }

    var flows: [Flow]
    let bitsPerSecond: Int
    /// Packets that would wait longer than this in the queue are dropped.
    let buffer: Duration
    let oneWayDelay: Duration
    /// The goodput and queueing delay are measured from this instant on.
    let measureFrom: ConduitInstant
    var now = ConduitInstant.zero
    var linkFreeAt = ConduitInstant.zero
    var arrivals = TestHeap<Arrival>(by: { ($0.at, $0.order) < ($1.at, $1.order) })
    var order = 0
    var batch = DatagramBatch(reservingBytes: 64 * 1_232, datagrams: 64)
    var dropped = 0
    /// Queueing delay of the packets enqueued in the measured interval, in nanoseconds.
    var maxQueueDelay: Int64 = 0
    var queueDelaySum: Int64 = 0
    var queuedPackets = 0
    let payload: [UInt8]

    init(configurations: [ARQEngine.Configuration], starts: [Duration], bitsPerSecond: Int, buffer: Duration, oneWayDelay: Duration, measureFrom: Duration) {
        flows = zip(configurations, starts).map { configuration, start in
            Flow(sender: ARQEngine(configuration: configuration, now: .zero), receiver: ARQEngine(configuration: configuration, now: .zero), start: .zero + start)
        }
        self.bitsPerSecond = bitsPerSecond
        self.buffer = buffer
        self.oneWayDelay = oneWayDelay
        self.measureFrom = .zero + measureFrom
        payload = Array(repeating: 0xA5, count: configurations[0].maxFramePayload)
    }

    /// Keeps every started sender's queue topped up and drains every receiver.
    mutating func writeAndRead() {
        for index in flows.indices {
            if now >= flows[index].start {
                while flows[index].sender.queuedBytes < 256 * 1_024 {
                    guard case .queued = flows[index].sender.send(payload, channel: 1, now: now) else { break }
                }
            }
            while let frame = flows[index].receiver.pollDelivery(now: now) {
                if frame.sequence != flows[index].nextSequence { flows[index].outOfOrder += 1 }
                flows[index].nextSequence = frame.sequence &+ 1
                flows[index].delivered += frame.bytes.count
                if now >= measureFrom { flows[index].deliveredInWindow += frame.bytes.count }
            }
        }
    }

    mutating func flush() {
        for index in flows.indices {
            for toReceiver in [true, false] {
                while true {
                    batch.removeAll()
                    let count = toReceiver
                        ? flows[index].sender.pollTransmit(now: now, into: &batch)
                        : flows[index].receiver.pollTransmit(now: now, into: &batch)
                    guard count > 0 else { break }
                    for datagram in 0..<count { submit(batch[datagram], flow: index, toReceiver: toReceiver) }
                }
            }
        }
    }

    mutating func submit(_ bytes: [UInt8], flow: Int, toReceiver: Bool) {
        var at = now + oneWayDelay
        if toReceiver {
            let start = max(now, linkFreeAt)
            let wait = start - now
            guard wait <= buffer else {
                dropped += 1
                return
            }
            if now >= measureFrom {
                maxQueueDelay = max(maxQueueDelay, wait.nanosecondsClamped)
                queueDelaySum += wait.nanosecondsClamped
                queuedPackets += 1
            }
            linkFreeAt = start + .nanoseconds(Int64(Double(bytes.count) * 8 / Double(bitsPerSecond) * 1e9))
            at = linkFreeAt + oneWayDelay
        }
        order += 1
        arrivals.push(Arrival(at: at, order: order, flow: flow, toReceiver: toReceiver, bytes: bytes))
    }

    /// The earliest of the next arrival, any engine's deadline and a flow's start.
    func nextEvent() -> ConduitInstant? {
        let deadlines = flows.flatMap { flow in
            [flow.sender.nextDeadline(now: now), flow.receiver.nextDeadline(now: now), flow.start > now ? flow.start : nil]
        }
        return ([arrivals.first?.at] + deadlines).compactMap { $0 }.min()
    }

    /// Delivers what arrives by `instant` and fires the timers due then.
    mutating func advance(to instant: ConduitInstant) {
        now = max(now, instant)
        while let arrival = arrivals.pop() {
            guard arrival.at <= now else {
                arrivals.push(arrival)
                break
            }
            let flow = arrival.flow
            arrival.toReceiver
                ? flows[flow].receiver.handle(datagram: arrival.bytes, now: now)
                : flows[flow].sender.handle(datagram: arrival.bytes, now: now)
        }
        for index in flows.indices {
            if let deadline = flows[index].sender.nextDeadline(now: now), deadline <= now { flows[index].sender.handleTimeout(now: now) }
            if let deadline = flows[index].receiver.nextDeadline(now: now), deadline <= now { flows[index].receiver.handleTimeout(now: now) }
        }
    }

    /// Runs until `end` of virtual time.
    mutating func run(until end: Duration) {
        let limit = ConduitInstant.zero + end
        while true {
            writeAndRead()
            flush()
            guard let next = nextEvent(), next <= limit else { return }
            advance(to: next)
        }
    }

    /// Goodput of flow `index` over the measured interval, in bits per second.
    func goodput(_ index: Int, until end: Duration) -> Double {
        Double(flows[index].deliveredInWindow) * 8 / (end - (measureFrom - .zero)).seconds
    }
}

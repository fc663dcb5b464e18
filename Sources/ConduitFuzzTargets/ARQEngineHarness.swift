import ConduitARQ
import ConduitCore

extension FuzzTargets {
    /// Two reliability engines, A sending to B, driven by a program the fuzzer writes: sends on
    /// four channels (reliable ordered, reliable unordered, ordered with a lifetime, unreliable),
    /// transmits, a network that delivers, duplicates, drops and reorders as told, time steps, and
    /// junk datagrams fed to A (the side that reads acknowledgements). B must deliver every frame
    /// at most once, byte-identical, in order on ordered channels; and, when no junk was fed and
    /// neither side idled out, every reliable frame exactly once after the path clears.
    static let arqEngine = FuzzTarget(
        name: "arq-engine",
        summary: "ARQEngine pair under a fuzzed program of sends, losses, duplicates, reordering, time and junk: at most once, in order, then exactly once"
    ) { (input) throws(FuzzFailure) in
        var run = ARQProgramRun(check: Invariants(target: "arq-engine"))
        var program = ProgramReader(input)
        while let op = program.byte(), run.operations < 512 {
            run.operations += 1
            switch op % 6 {
            case 0: run.send(channel: Int(program.byte() ?? 0) % 4, size: Int(program.byte() ?? 0) * 5)
            case 1: run.transmit(from: 0)
            case 2: run.transmit(from: 1)
            case 3: try run.network(Int(program.byte() ?? 0))
            case 4: try run.advance(milliseconds: Int(program.byte() ?? 0) * 4)
            default: run.junk(program.bytes(Int(program.byte() ?? 0)))
            }
            try run.collect()
        }
        try run.finish()
        return true
    }
}

/// Consumes a fuzz input as a program: one byte at a time, or a run of bytes.
struct ProgramReader {
    let input: UnsafeRawBufferPointer
    var offset = 0

    init(_ input: UnsafeRawBufferPointer) { self.input = input }

    mutating func byte() -> UInt8? {
        guard offset < input.count else { return nil }
        defer { offset += 1 }
        return input[offset]
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        let end = min(input.count, offset + count)
        defer { offset = end }
        return Array(input[offset..<end])
    }
}

/// The state of one `arq-engine` program: the engines, the path A → B and back, what A sent and B got.
struct ARQProgramRun {
    static let deliveries: [Reliability] = [
        .reliableOrdered, Reliability(ordered: false), Reliability(ordered: true, limit: .maxPacketLifeTime(milliseconds: 100)),
        Reliability(ordered: false, limit: .maxRetransmits(0)),
    ]
    let check: Invariants
    var now = ConduitInstant.zero
    var engines: [ARQEngine]
    /// Datagrams in flight: (to side, bytes).
    var inFlight: [(to: Int, bytes: [UInt8])] = []
    /// Per channel, the payloads A queued, in order.
    var sent: [[[UInt8]]] = Array(repeating: [], count: 4)
    /// Per channel, the indexes (into `sent`) B delivered, in delivery order.
    var delivered: [[Int]] = Array(repeating: [], count: 4)
    var fedJunk = false
    var operations = 0

    init(check: Invariants) {
        self.check = check
        var configuration = ARQEngine.Configuration()
        configuration.maxSendQueueBytes = 256 * 1024
        engines = [ARQEngine(configuration: configuration, now: .zero), ARQEngine(configuration: configuration, now: .zero)]
    }

    mutating func send(channel: Int, size: Int) {
        guard sent[channel].count < 64 else { return }
        // The payload names its channel and index, so B's deliveries can be traced to A's sends.
        let index = sent[channel].count
        let payload = [UInt8(channel), UInt8(index)] + Array(repeating: UInt8(truncatingIfNeeded: index &* 7 &+ channel), count: size)
        if case .queued = engines[0].send(payload, channel: UInt32(channel), delivery: Self.deliveries[channel], now: now) {
            sent[channel].append(payload)
        }
    }

    mutating func transmit(from side: Int) {
        var batch = DatagramBatch()
        _ = engines[side].pollTransmit(now: now, into: &batch)
        batch.forEachDatagram { inFlight.append((1 - side, Array($0))) }
        if inFlight.count > 256 { inFlight.removeFirst(inFlight.count - 256) }  // a bounded path drops the oldest
    }

    /// One network action on the datagram the byte picks: deliver it, deliver a copy and keep it, or drop it.
    mutating func network(_ choice: Int) throws(FuzzFailure) {
        guard !inFlight.isEmpty else { return }
        let index = (choice >> 2) % inFlight.count
        let (to, bytes) = inFlight[index]
        switch choice & 3 {
        case 0, 1: inFlight.remove(at: index); engines[to].handle(datagram: bytes, now: now)
        case 2: engines[to].handle(datagram: bytes, now: now)
        default: inFlight.remove(at: index)
        }
    }

    mutating func advance(milliseconds: Int) throws(FuzzFailure) {
        now = now + .milliseconds(milliseconds)
        for side in 0..<2 { engines[side].handleTimeout(now: now) }
    }

    mutating func junk(_ bytes: [UInt8]) {
        fedJunk = true
        engines[0].handle(datagram: bytes, now: now)
    }

    /// Takes B's deliveries and checks them against A's sends.
    mutating func collect() throws(FuzzFailure) {
        while let frame = engines[1].pollDelivery(now: now) {
            let channel = Int(frame.channel)
            try check.require(channel < 4 && frame.bytes.count >= 2 && Int(frame.bytes[0]) == channel, "B delivered a frame A never sent: \(hex(frame.bytes))")
            let index = Int(frame.bytes[1])
            try check.require(index < sent[channel].count && sent[channel][index] == frame.bytes, "B delivered channel \(channel) frame \(index) altered")
            try check.require(!delivered[channel].contains(index), "B delivered channel \(channel) frame \(index) twice")
            if Self.deliveries[channel].ordered, let last = delivered[channel].last {
                try check.require(index > last, "ordered channel \(channel) delivered \(index) after \(last)")
            }
            delivered[channel].append(index)
        }
    }

    /// Clears the path and lets the engines finish: every reliable frame arrives exactly once.
    mutating func finish() throws(FuzzFailure) {
        let idled = engines[0].isIdleTimedOut(now: now) || engines[1].isIdleTimedOut(now: now)
        guard !fedJunk, !idled else { return }
        inFlight.removeAll()
        for _ in 0..<1_000 {
            transmit(from: 0)
            transmit(from: 1)
            while !inFlight.isEmpty { try network(0) }
            try collect()
            if delivered[0].count == sent[0].count && delivered[1].count == sent[1].count { break }
            // To the next deadline (a retransmission timer backed off by the program may be far).
            let next = [engines[0].nextDeadline(now: now), engines[1].nextDeadline(now: now)].compactMap { $0 }.min() ?? now + .milliseconds(50)
            now = max(next, now + .milliseconds(1))
            for side in 0..<2 { engines[side].handleTimeout(now: now) }
        }
        try check.require(delivered[0] == Array(sent[0].indices), "reliable ordered channel: delivered \(delivered[0]) of \(sent[0].count)")
        try check.require(delivered[1].sorted() == Array(sent[1].indices), "reliable unordered channel: delivered \(delivered[1].sorted()) of \(sent[1].count)")
    }
}

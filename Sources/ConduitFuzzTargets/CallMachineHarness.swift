import ConduitCore

extension FuzzTargets {
    /// Two call machines, A under attack and B its honest peer, started in the state the first
    /// byte picks (fresh, mid-handshake, connected, with sessions open both ways, after either
    /// side hung up; with the default caps or small ones), then driven by a fuzzed program: junk
    /// datagrams and mutated real frames for A, B's real frames delivered in order, time steps,
    /// and what an app may do on either side. A's events must follow the session rules, its
    /// queues stay within their caps, its timeout deadline move on; and while A got nothing but
    /// B's frames, B's reliable messages arrive at most once and in order, then all of them.
    static let callMachine = FuzzTarget(
        name: "call-machine",
        summary: "CallMachine from every starting state under fuzzed datagrams, mutated frames, time and app calls: event rules, caps, at most once in order"
    ) { (input) throws(FuzzFailure) in
        var program = ProgramReader(input)
        var run = try CallProgramRun.starting(program.byte() ?? 0)
        try program.forEachOperation(limit: 256) { op, program throws(FuzzFailure) in
            switch op % 8 {
            case 0: run.feedA(program.bytes(Int(program.byte() ?? 0)))
            case 1: run.feedA(mutatedFrame(run.recorded, program.byte() ?? 0, at: program.byte() ?? 0, xor: program.byte() ?? 0))
            case 2: try run.deliver(toA: true, count: Int(program.byte() ?? 0) % 4 + 1)
            case 3: try run.deliver(toA: false, count: Int(program.byte() ?? 0) % 4 + 1)
            case 4: try run.advance(fuzzedStep(program.byte() ?? 0))
            case 5: try run.appA(program.byte() ?? 0, program.byte() ?? 0)
            case 6: try run.appB(program.byte() ?? 0, program.byte() ?? 0)
            default: try run.transmit()
            }
            try run.collect()
        }
        try run.finish()
        return true
    }
}

/// One `call-machine` program: the two machines, the datagrams in flight each way (a reliable,
/// ordered path), the real frames B sent (what mutations start from), and what B's app sent.
struct CallProgramRun {
    static let streams: [SessionKey] = [
        SessionKey(streamID: 100), SessionKey(streamID: 101), SessionKey(streamID: 200, subgroup: "breakout"), SessionKey(streamID: 300),
    ]
    static let types: [SessionType] = [.reliableMessage, .unreliableMessage, .reliableBytes, .unreliableBytes]

    let check: Invariants
    var now = ConduitInstant.zero
    var a: CallMachine
    var b: CallMachine
    var toA: [[UInt8]] = []
    var toB: [[UInt8]] = []
    var recorded: [[UInt8]] = []
    var ledgerA: SessionEventLedger
    var ledgerB: SessionEventLedger
    /// Per stream, the payloads B's app queued on a message-type session (each with a traced
    /// index), in order; which of them went on a reliable one; and the indexes A delivered.
    var sentByB: [SessionKey: [[UInt8]]] = [:]
    var reliableByB: [SessionKey: Set<Int>] = [:]
    var deliveredToA: [SessionKey: [Int]] = [:]
    /// A got something B did not send (junk, a mutated or replayed frame).
    var attacked = false
    /// Streams A's app declined (so the app at the end declines each at most once).
    var declinedByA: Set<SessionKey> = []

    /// The run for start byte `start`: each of the 24 starting states is reached once per process
    /// and copied (the machines are values), so an input pays only for its own program.
    static func starting(_ start: UInt8) throws(FuzzFailure) -> CallProgramRun {
        let canonical = start & 0xC0 | (start & 0x3F) % 6
        if let run = startingStates[Int(canonical)] { return run }
        return try CallProgramRun(check: Invariants(target: "call-machine"), start: canonical)  // throws what setting up broke
    }

    private static let startingStates: [CallProgramRun?] = (0...255).map { start in
        let canonical = UInt8(start) & 0xC0 | (UInt8(start) & 0x3F) % 6
        guard canonical == UInt8(start) else { return nil }
        return try? CallProgramRun(check: Invariants(target: "call-machine"), start: canonical)
    }

    init(check: Invariants, start: UInt8) throws(FuzzFailure) {
        self.check = check
        // Paced at the default rate when the start byte says so, so sends wait for their pacer.
        var configuration = CallConfiguration(rateLimit: start & 0x40 != 0 ? .default : .unlimited)
        if start & 0x80 != 0 {
            // Small caps, so a short program reaches them: fragmentation, held data, reassembly, queues.
            configuration = CallConfiguration(
                fragmentSize: 200, rateLimit: configuration.rateLimit, maxQueuedBytesPerSession: 2_000, maxPendingInboundBytes: 1_000,
                reassembly: .init(maxIncompleteMessages: 3, maxBufferedBytes: 4_000, incompleteTimeout: .milliseconds(300))
            )
        }
        a = CallMachine(localPeer: "alice", configuration: configuration)
        b = CallMachine(localPeer: "bob", configuration: configuration)
        ledgerA = SessionEventLedger(check: check, side: "A")
        ledgerB = SessionEventLedger(check: check, side: "B")
        try reach(state: Int(start & 0x3F) % 6)
    }

    /// Drives real traffic between A and B to a starting state.
    mutating func reach(state: Int) throws(FuzzFailure) {
        guard state > 0 else { return }  // fresh: both hellos queued, nothing exchanged
        try transmit()
        try deliver(toA: false, count: 1)  // B heard A's hello; A's copy of B's hello stays in flight
        guard state > 1 else { return }
        try settle()
        guard state > 2 else { return }
        try appA(0, 0x00)  // A opens 100 (reliable message)
        try appA(0, 0x21)  // A opens 200 in "breakout" (unreliable message)
        try appB(0, 0x10)  // B opens 101 (reliable message)
        try appB(0, 0x32)  // B opens 300 (reliable bytes)
        try settle()
        try appA(2, 0x10)  // A accepts 101
        try appA(2, 0x30)  // A accepts 300
        try appB(2, 0x00)  // B accepts 100
        for size: UInt8 in [0, 1, 5, 15] {
            try appA(1, size)  // on 100
            try appB(1, 0x10 | size)  // on 101
        }
        try settle()
        switch state {
        case 4: try appB(5, 0)  // B hangs up; its goodbye reaches A
        case 5: try appA(5, 0)  // A hangs up
        default: break
        }
        try settle()
    }

    /// Passes frames both ways until neither side has anything to say.
    mutating func settle() throws(FuzzFailure) {
        for _ in 0..<20 {
            try transmit()
            guard !toA.isEmpty || !toB.isEmpty else { return }
            try deliver(toA: true, count: toA.count)
            try deliver(toA: false, count: toB.count)
            try collect()
        }
    }

    /// Both machines write what they have; B's frames are kept for mutation.
    mutating func transmit() throws(FuzzFailure) {
        var fromA = DatagramBatch(), fromB = DatagramBatch()
        let maxBytes = 64 * 1_024
        a.pollTransmit(now: now, into: &fromA, maxBytes: maxBytes)
        b.pollTransmit(now: now, into: &fromB, maxBytes: maxBytes)
        fromA.forEachDatagram { toB.append(Array($0)) }
        fromB.forEachDatagram { datagram in
            toA.append(Array(datagram))
            if recorded.count < 64 { recorded.append(Array(datagram)) }
        }
        // A paced session may be due again only if the batch filled; otherwise A is done for now.
        if fromA.byteCount < maxBytes, let next = a.nextTransmit(now: now) {
            try check.require(next > now || a.isEnded, "A: nextTransmit \(next) is not after now \(now) right after a transmit that did not fill its batch")
        }
    }

    mutating func deliver(toA: Bool, count: Int) throws(FuzzFailure) {
        for _ in 0..<count {
            if toA {
                // As a driver: A's link is not read while A holds a reliable stream's limit.
                guard !self.toA.isEmpty, !a.isHoldingBeyondLimit else { return }
                self.toA.removeFirst().withUnsafeBytes { a.handle(datagram: $0, now: now) }
            } else {
                guard !toB.isEmpty else { return }
                toB.removeFirst().withUnsafeBytes { b.handle(datagram: $0, now: now) }
            }
        }
    }

    mutating func feedA(_ bytes: [UInt8]) {
        attacked = true
        // The attacker shares A's link: not read either while A holds a reliable stream's limit.
        guard !a.isHoldingBeyondLimit else { return }
        bytes.withUnsafeBytes { a.handle(datagram: $0, now: now) }
    }

    mutating func advance(_ step: Duration) throws(FuzzFailure) {
        now = now + step
        a.handleTimeout(now: now)
        b.handleTimeout(now: now)
        try checkTimeoutMovedOn(a.nextTimeout(), now: now, check, "A")
        try checkTimeoutMovedOn(b.nextTimeout(), now: now, check, "B")
    }

    /// What A's app may do: open (0), send (1), accept (2), decline (3), close (4), hang up (5), lose the link (6).
    mutating func appA(_ action: UInt8, _ argument: UInt8) throws(FuzzFailure) {
        let key = Self.streams[Int(argument >> 4) % Self.streams.count]
        switch action % 8 {
        case 0:
            try Self.open(&a, key, argument, now: now, &ledgerA)
        case 1:
            _ = a.enqueue(key, bytes: Array(repeating: argument, count: Int(argument & 0x0F) * 60), timestamp: 1, now: now)
        case 2: if a.makeInbound(key) == .none { try ledgerA.madeInbound(key) }
        case 3:
            a.unsupportInbound(key)
            declinedByA.insert(key)
        case 4: a.closeOutbound(key)
        case 5: a.hangUp()
        case 6: a.linkClosed()
        default: break
        }
        try collect()
        if a.isEnded { try ledgerA.expectDisconnected() }
    }

    /// What B's app may do: the same, its sends traced so A's deliveries can be checked.
    mutating func appB(_ action: UInt8, _ argument: UInt8) throws(FuzzFailure) {
        let key = Self.streams[Int(argument >> 4) % Self.streams.count]
        if action % 8 == 1 {
            let index = sentByB[key, default: []].count
            let payload = tracedPayload(stream: key.streamID, index: index, size: Int(argument & 0x3F) * 20)
            // Every message-type send is traced (A checks each one it delivers against it,
            // whatever its reliability); the reliable ones must all arrive.
            if case .queued = b.enqueue(key, bytes: payload, timestamp: UInt64(index), now: now), let type = b.outboundType(key), type.isMessage {
                sentByB[key, default: []].append(payload)
                if type == .reliableMessage { reliableByB[key, default: []].insert(index) }
            }
            return try collect()
        }
        switch action % 8 {
        case 0: try Self.open(&b, key, argument, now: now, &ledgerB)
        case 2:
            if b.makeInbound(key) == .none { try ledgerB.madeInbound(key) }
        case 4:
            b.closeOutbound(key)
        case 5:
            b.hangUp()
        default:
            break
        }
        try collect()
    }

    /// The app opens outbound session `key`, of the type `argument` picks.
    static func open(_ machine: inout CallMachine, _ key: SessionKey, _ argument: UInt8, now: ConduitInstant, _ ledger: inout SessionEventLedger) throws(FuzzFailure) {
        if machine.makeOutbound(key, type: types[Int(argument) % 4], now: now) == .none { try ledger.madeOutbound(key) }
    }

    /// Drains both machines' events through their ledgers, checks A's deliveries and caps.
    mutating func collect() throws(FuzzFailure) {
        while let event = a.pollEvent() {
            try ledgerA.see(Self.kind(event))
            if case .received(let key, .message(let bytes, _)) = event, !attacked, let sent = sentByB[key] {
                guard let index = tracedIndex(bytes, stream: key.streamID) else {
                    throw FuzzFailure(target: check.target, message: "A delivered on \(key) a message B never sent: \(hex(bytes))")
                }
                try check.require(index < sent.count && sent[index] == bytes, "A delivered message \(index) of \(key) altered")
                if let last = deliveredToA[key]?.last {
                    try check.require(index > last, "A delivered message \(index) of \(key) after \(last): twice or out of order")
                }
                deliveredToA[key, default: []].append(index)
            }
        }
        while let event = b.pollEvent() { try ledgerB.see(Self.kind(event)) }
        try checkFootprint(a.footprint, a.configuration, maxSenders: 1, check, "A")
        try check.require(a.remoteSubgroupCount <= CallMachine.maxRemoteSubgroups, "A: \(a.remoteSubgroupCount) remote subgroups")
    }

    /// A's app declines every stream announced to it that it has not made: until an app answers,
    /// A holds what the stream brings and, at its limit, stops reading its link (so a stream
    /// nobody answers stalls the others: that is the app's to resolve, not a loss).
    mutating func declineUnanswered() throws(FuzzFailure) -> Bool {
        var declined = false
        for key in ledgerA.announced.subtracting(ledgerA.accepted).subtracting(declinedByA) {
            a.unsupportInbound(key)
            declinedByA.insert(key)
            declined = true
        }
        try collect()
        return declined
    }

    static func kind(_ event: CallEvent) -> SessionEventKind {
        switch event {
        case .connected: .connected
        case .disconnected: .disconnected
        case .dataSessionIncoming(let key, _): .incoming(key)
        case .received(let key, _): .received(key)
        case .outboundClosed(let key, _): .outboundClosed(key)
        case .inboundClosed(let key, _): .inboundClosed(key)
        case .tooLongQueuedData(let key, let enabled): .tooLongQueuedData(key, enabled: enabled)
        case .sendQueueHasRoom(let key): .sendQueueHasRoom(key)
        }
    }

    /// Lets the honest exchange finish: every reliable message B queued on a session A accepted
    /// arrives, unless A was attacked, dropped held data at its cap, or either side ended. A's
    /// app answers every stream announced to it meanwhile, as an app must sooner or later.
    mutating func finish() throws(FuzzFailure) {
        for _ in 0..<200 {
            try settle()
            if try declineUnanswered() { continue }
            guard let next = LinkTime.earliest(a.nextDeadline(now: now), b.nextDeadline(now: now)) else { break }
            try advance(max(.milliseconds(1), next - now))
        }
        try settle()
        let statistics = a.statistics
        guard !attacked, !a.isEnded, !b.isEnded, statistics.droppedPendingOverflow == 0,
              statistics.reassembly.messagesDroppedOverCapacity == 0, statistics.reassembly.messagesEvicted == 0 else { return }
        for (key, sent) in sentByB where a.isInboundAccepted(key) && [nil, .sessionEnd].contains(b.outboundCloseReason(key)) {
            let reliable = reliableByB[key, default: []]
            let expected = sent.indices.filter { reliable.contains($0) }
            try check.require(deliveredToA[key, default: []].filter { reliable.contains($0) } == expected,
                              "A delivered \(deliveredToA[key, default: []]) of the \(expected.count) reliable messages B sent on \(key) (\(expected))")
        }
    }
}

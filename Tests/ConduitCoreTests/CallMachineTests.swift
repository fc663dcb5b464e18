import ConduitCore
import Testing

// The 1:1 call state machine, driven by a two-endpoint harness on virtual time.

/// Two call machines wired back to back by a lossless, ordered, instantaneous link.
struct CallHarness {
    var a: CallMachine
    var b: CallMachine
    var now = ConduitInstant.zero
    /// Events drained from each side so far.
    var eventsA: [CallEvent] = []
    var eventsB: [CallEvent] = []
    /// Datagrams carried each way.
    var sentAtoB = 0
    var sentBtoA = 0

    init(a configA: CallConfiguration = .init(), b configB: CallConfiguration = .init()) {
        a = CallMachine(localPeer: "alice", configuration: configA)
        b = CallMachine(localPeer: "bob", configuration: configB)
    }

    /// Both sides connected, events drained.
    /// `a` sends uncapped; `b` holds at most `bytes` per stream before its app accepts it.
    static func unlimitedSender(receiverHolding bytes: Int) -> CallHarness {
        connected(a: CallConfiguration(rateLimit: .unlimited), b: CallConfiguration(maxPendingInboundBytes: bytes))
    }

    static func connected(a configA: CallConfiguration = .init(), b configB: CallConfiguration = .init()) -> CallHarness {
        var harness = CallHarness(a: configA, b: configB)
        harness.pump()
        harness.clearEvents()
        return harness
    }

    /// Moves datagrams both ways at the current instant until neither side has anything to send.
    mutating func pump() {
        var rounds = 0
        var outA = DatagramBatch()
        var outB = DatagramBatch()
        while rounds < 100_000 {
            rounds += 1
            outA.removeAll()
            outB.removeAll()
            a.pollTransmit(now: now, into: &outA)
            b.pollTransmit(now: now, into: &outB)
            if outA.isEmpty, outB.isEmpty { break }
            sentAtoB += outA.count
            sentBtoA += outB.count
            b.handle(batch: outA, now: now)
            a.handle(batch: outB, now: now)
        }
        collect()
    }

    mutating func collect() {
        while let event = a.pollEvent() { eventsA.append(event) }
        while let event = b.pollEvent() { eventsB.append(event) }
    }

    mutating func clearEvents() {
        collect()
        eventsA.removeAll()
        eventsB.removeAll()
    }

    mutating func takeEventsA() -> [CallEvent] {
        collect()
        defer { eventsA.removeAll() }
        return eventsA
    }

    mutating func takeEventsB() -> [CallEvent] {
        collect()
        defer { eventsB.removeAll() }
        return eventsB
    }

    /// Lets virtual time pass from deadline to deadline until both sides are idle.
    /// Returns the number of steps taken (bounded, so a stuck machine fails instead of hanging).
    @discardableResult
    mutating func runUntilIdle(maxSteps: Int = 100_000) -> Int {
        var steps = 0
        pump()
        while steps < maxSteps {
            let deadlines = [a.nextDeadline(now: now), b.nextDeadline(now: now)].compactMap { $0 }
            guard let deadline = deadlines.min() else { break }
            steps += 1
            now = max(now, deadline)
            a.handleTimeout(now: now)
            b.handleTimeout(now: now)
            pump()
        }
        return steps
    }

    /// Opens `key` from A to B and accepts it on B.
    mutating func open(_ key: SessionKey, _ type: SessionType) {
        #expect(a.makeOutbound(key, type: type, now: now) == DataSessionFailReason.none)
        pump()
        #expect(takeEventsB() == [.dataSessionIncoming(key, type)])
        #expect(b.makeInbound(key, expectedType: type) == DataSessionFailReason.none)
        #expect(takeEventsA() == [])
    }

    /// Enqueues on A and expects it to be queued.
    @discardableResult
    mutating func send(_ key: SessionKey, _ bytes: [UInt8], timestamp: UInt64) -> UInt32? {
        let result = a.enqueue(key, bytes: bytes, timestamp: timestamp, now: now)
        guard case .queued(let id) = result else {
            Issue.record("enqueue of \(bytes.count) bytes was not queued: \(result)")
            return nil
        }
        return id
    }
}

extension CallEvent {
    var delivery: (key: SessionKey, delivery: InboundDelivery)? {
        if case .received(let key, let delivery) = self { return (key, delivery) }
        return nil
    }
}

extension Array where Element == CallEvent {
    var deliveries: [InboundDelivery] { compactMap { $0.delivery?.delivery } }

    func fragments(of key: SessionKey) -> [ReceivedFragment] {
        compactMap {
            guard let received = $0.delivery, received.key == key, case .fragment(let fragment) = received.delivery else { return nil }
            return fragment
        }
    }
}

let mainStream = SessionKey(streamID: 100)

@Suite("Call machine: handshake and session creation")
struct CallMachineSessionTests {
    @Test("the handshake connects both sides with the peer's ID and support flag")
    func handshake() {
        var harness = CallHarness()
        #expect(harness.a.phase == .handshaking)
        #expect(!harness.a.isConnected)
        #expect(harness.a.hasPendingControl())
        harness.pump()
        #expect(harness.eventsA == [.connected(peer: "bob", peerSupportsDataSessions: true)])
        #expect(harness.eventsB == [.connected(peer: "alice", peerSupportsDataSessions: true)])
        #expect(harness.a.phase == .connected(peer: "bob", peerSupportsDataSessions: true))
        #expect(harness.b.phase == .connected(peer: "alice", peerSupportsDataSessions: true))
        #expect(harness.sentAtoB == 1)
        #expect(harness.sentBtoA == 1)
        #expect(harness.a.statistics.datagramsReceived == 1)
        #expect(!harness.a.hasPendingControl())
        // Idle: no deadline.
        #expect(harness.a.nextDeadline(now: harness.now) == nil)
        // A repeated hello changes nothing.
        harness.a.handle(datagram: ControlFrame.hello(peer: "mallory", dataSessionsSupported: false).encoded, now: harness.now)
        harness.collect()
        #expect(harness.eventsA.count == 1)
        #expect(harness.a.phase == .connected(peer: "bob", peerSupportsDataSessions: true))
    }

    @Test("a peer without data sessions is reported, and sessions fail with internal")
    func peerWithoutDataSessions() {
        var harness = CallHarness(b: CallConfiguration(dataSessionsSupported: false))
        harness.pump()
        #expect(harness.eventsA == [.connected(peer: "bob", peerSupportsDataSessions: false)])
        #expect(harness.eventsB == [.connected(peer: "alice", peerSupportsDataSessions: true)])
        #expect(harness.a.makeOutbound(mainStream, type: .reliableMessage, now: harness.now) == .internal)
        // The side that does not support them cannot create any either.
        #expect(harness.b.makeOutbound(mainStream, type: .reliableMessage, now: harness.now) == .internal)
    }

    @Test("every DataSessionFailReason is reached")
    func everyFailReason() {
        var reasons: Set<DataSessionFailReason> = []
        func note(_ reason: DataSessionFailReason, _ expected: DataSessionFailReason, _ comment: Comment) {
            #expect(reason == expected, comment)
            reasons.insert(reason)
        }
        var harness = CallHarness()
        // Before the handshake.
        note(harness.a.makeOutbound(mainStream, type: .reliableMessage, now: harness.now), .internal, "outbound before connected")
        note(harness.b.makeInbound(mainStream), .internal, "inbound before connected")
        note(harness.a.makeOutbound(SessionKey(streamID: 99), type: .reliableMessage, now: harness.now), .invalidId, "invalid ID wins over state")
        harness.pump()
        harness.clearEvents()

        for bad in [0, 99, 1_000, -1, 65_535] {
            note(harness.a.makeOutbound(SessionKey(streamID: StreamID(bad)), type: .reliableBytes, now: harness.now), .invalidId, "outbound \(bad)")
            note(harness.b.makeInbound(SessionKey(streamID: StreamID(bad))), .invalidId, "inbound \(bad)")
        }
        note(harness.a.makeOutbound(mainStream, type: .reliableMessage, now: harness.now), .none, "first outbound")
        note(harness.a.makeOutbound(mainStream, type: .reliableMessage, now: harness.now), .alreadyExist, "outbound twice")
        note(harness.a.makeOutbound(mainStream, type: .unreliableBytes, now: harness.now), .alreadyExist, "outbound twice, other type")
        note(harness.b.makeInbound(mainStream), .notIncoming, "inbound before the announcement arrived")
        harness.pump()
        #expect(harness.takeEventsB() == [.dataSessionIncoming(mainStream, .reliableMessage)])
        note(harness.b.makeInbound(SessionKey(streamID: 555)), .notIncoming, "inbound never announced")
        note(harness.b.makeInbound(mainStream, expectedType: .unreliableMessage), .invalidType, "type mismatch")
        note(harness.b.makeInbound(mainStream, expectedType: .reliableBytes), .invalidType, "type mismatch")
        #expect(!harness.b.isInboundAccepted(mainStream))
        note(harness.b.makeInbound(mainStream, expectedType: .reliableMessage), .none, "first inbound")
        #expect(harness.b.isInboundAccepted(mainStream))
        #expect(harness.b.inboundType(mainStream) == .reliableMessage)
        #expect(harness.a.outboundType(mainStream) == .reliableMessage)
        note(harness.b.makeInbound(mainStream), .alreadyExist, "inbound twice")
        // The same stream ID in the other direction is another session.
        note(harness.b.makeOutbound(mainStream, type: .unreliableBytes, now: harness.now), .none, "reverse direction")
        harness.pump()
        note(harness.a.makeInbound(mainStream, expectedType: .unreliableBytes), .none, "reverse inbound")
        // After the call ends.
        harness.a.hangUp()
        note(harness.a.makeOutbound(SessionKey(streamID: 200), type: .reliableMessage, now: harness.now), .internal, "outbound after hang-up")

        #expect(reasons == Set(DataSessionFailReason.allCases))
    }

    @Test("dataSessionIncoming carries the stream and type", arguments: SessionType.allCases)
    func incoming(type: SessionType) {
        var harness = CallHarness.connected()
        let key = SessionKey(streamID: 987)
        #expect(harness.a.makeOutbound(key, type: type, now: harness.now) == .none)
        harness.pump()
        #expect(harness.eventsB == [.dataSessionIncoming(key, type)])
        #expect(harness.eventsA == [])
        #expect(harness.b.inboundType(key) == type)
        #expect(!harness.b.isInboundAccepted(key))
    }

    @Test("the same stream in two subgroups is two sessions")
    func subgroups() throws {
        var harness = CallHarness.connected(a: CallConfiguration(rateLimit: .unlimited))
        let main = SessionKey(streamID: 100)
        let team = SessionKey(streamID: 100, subgroup: "team")
        harness.open(main, .reliableMessage)
        harness.open(team, .reliableMessage)
        harness.send(main, [1], timestamp: 1)
        harness.send(team, [2, 2], timestamp: 2)
        harness.send(main, Array(repeating: 3, count: 3_000), timestamp: 3)
        harness.pump()
        #expect(harness.takeEventsB() == [
            .received(main, .message(bytes: [1], timestamp: 1)),
            .received(team, .message(bytes: [2, 2], timestamp: 2)),
            .received(main, .message(bytes: Array(repeating: 3, count: 3_000), timestamp: 3)),
        ])
        // Refusing the subgroup's stream closes only that session.
        harness.b.unsupportInbound(team)
        harness.pump()
        #expect(harness.takeEventsA() == [.outboundClosed(team, .unsupported)])
        #expect(harness.takeEventsB() == [.inboundClosed(team, .unsupported)])
        #expect(harness.a.outboundCloseReason(main) == nil)
        harness.send(main, [4], timestamp: 4)
        harness.pump()
        #expect(harness.takeEventsB() == [.received(main, .message(bytes: [4], timestamp: 4))])
    }
}

@Suite("Call machine: data")
struct CallMachineDataTests {
    static let messageSizes = [0, 1, 1_200, 5_000, 128 * 1024]
    static let bytesSizes = [0, 1, 1_200, 5_000, 128 * 1024, 1024 * 1024]

    @Test("messages arrive whole, byte-identical, in order, with their timestamps", arguments: [SessionType.reliableMessage, .unreliableMessage])
    func messages(type: SessionType) {
        var harness = CallHarness.connected(a: CallConfiguration(rateLimit: .unlimited))
        let key = SessionKey(streamID: 321)
        harness.open(key, type)
        var generator = SplitMix64(seed: 0x3E55 + UInt64(type.rawValue))
        let sends = Self.messageSizes.map { generator.bytes($0) }
        for (index, bytes) in sends.enumerated() {
            #expect(harness.send(key, bytes, timestamp: 10_000 + UInt64(index)) == UInt32(index))
        }
        harness.pump()
        let events = harness.takeEventsB()
        #expect(events.count == sends.count)
        for (index, event) in events.enumerated() where index < sends.count {
            guard let received = event.delivery, case .message(let bytes, let timestamp) = received.delivery else {
                Issue.record("event \(index) is not a message: \(event)")
                continue
            }
            #expect(received.key == key)
            let identical = bytes == sends[index]
            #expect(identical, "message \(index) (\(sends[index].count) bytes) arrives byte-identical")
            #expect(timestamp == 10_000 + UInt64(index))
        }
        #expect(harness.b.statistics.messagesDelivered == sends.count)
        #expect(harness.a.statistics.messagesSent == sends.count)
        #expect(harness.b.statistics.dataFramesReceived == 1 + 1 + 1 + 5 + 110)
        #expect(harness.b.statistics.malformedDatagrams == 0)
        #expect(harness.b.statistics.reassembly.completedMessages == sends.count)
        #expect(harness.eventsA == [])
    }

    @Test("bytes sends arrive as fragments that reassemble to the original", arguments: [SessionType.reliableBytes, .unreliableBytes])
    func bytes(type: SessionType) {
        var harness = CallHarness.connected(a: CallConfiguration(rateLimit: .unlimited))
        let key = SessionKey(streamID: 654)
        harness.open(key, type)
        var generator = SplitMix64(seed: 0xB17E + UInt64(type.rawValue))
        let sends = Self.bytesSizes.map { generator.bytes($0) }
        for (index, bytes) in sends.enumerated() {
            #expect(harness.send(key, bytes, timestamp: 20_000 + UInt64(index)) == UInt32(index))
        }
        harness.pump()
        let events = harness.takeEventsB()
        let fragments = events.fragments(of: key)
        #expect(fragments.count == events.count)
        #expect(fragments.count == 1 + 1 + 1 + 5 + 110 + 874)
        let expectedIDs: [UInt32] = sends.indices.flatMap { (index: Int) -> [UInt32] in
            Array(repeating: UInt32(index), count: max(1, (sends[index].count + 1_199) / 1_200))
        }
        #expect(fragments.map(\.messageID) == expectedIDs)
        for (index, original) in sends.enumerated() {
            let parts = fragments.filter { $0.messageID == UInt32(index) }
            #expect(parts.map(\.offset) == Array(stride(from: 0, to: max(1, original.count), by: 1_200)))
            #expect(parts.allSatisfy { $0.totalLength == original.count && $0.fragmentSize == 1_200 })
            #expect(parts.allSatisfy { $0.timestamp == 20_000 + UInt64(index) })
            #expect(parts.last?.isLast == true)
            let joined = parts.flatMap(\.bytes)
            let identical = joined == original
            #expect(identical, "send \(index) (\(original.count) bytes) reassembles byte-identical")
        }
        #expect(harness.b.statistics.fragmentsDelivered == fragments.count)
        #expect(harness.b.statistics.messagesDelivered == 0)
        #expect(harness.a.statistics.messagesSent == sends.count)
    }

    @Test("sessions of all four types share the link round robin, each in order")
    func interleaved() {
        var harness = CallHarness.connected(a: CallConfiguration(rateLimit: .unlimited))
        let keys = SessionType.allCases.map { SessionKey(streamID: StreamID(500 + Int($0.rawValue))) }
        for (key, type) in zip(keys, SessionType.allCases) { harness.open(key, type) }
        var generator = SplitMix64(seed: 44)
        var sent: [SessionKey: [[UInt8]]] = [:]
        for round in 0..<3 {
            for key in keys {
                let bytes = generator.bytes(2_000 + 1_000 * round)
                sent[key, default: []].append(bytes)
                harness.send(key, bytes, timestamp: UInt64(round))
            }
        }
        // Round robin: each pass gives every session one fragment.
        var batch = DatagramBatch()
        harness.a.pollTransmit(now: harness.now, into: &batch)
        let streams = (0..<min(8, batch.count)).map { index in
            (try? Frames.parse(batch[index]).get())?.header.streamID.rawValue ?? -1
        }
        #expect(streams == [500, 501, 502, 503, 500, 501, 502, 503])
        harness.b.handle(batch: batch, now: harness.now)
        harness.pump()
        let events = harness.takeEventsB()
        for (key, type) in zip(keys, SessionType.allCases) {
            let deliveries = events.compactMap { $0.delivery?.key == key ? $0.delivery?.delivery : nil }
            if type.isMessage {
                #expect(deliveries.map(\.bytes) == sent[key]!)
                #expect(deliveries.map(\.timestamp) == [0, 1, 2])
            } else {
                #expect(deliveries.flatMap(\.bytes) == sent[key]!.flatMap { $0 })
            }
        }
    }

    @Test("data held before makeInbound is delivered after it, in order", arguments: SessionType.allCases)
    func heldUntilAccepted(type: SessionType) {
        var harness = CallHarness.connected(a: CallConfiguration(rateLimit: .unlimited))
        let key = SessionKey(streamID: 777)
        #expect(harness.a.makeOutbound(key, type: type, now: harness.now) == .none)
        let sends: [[UInt8]] = [[1], Array(repeating: 2, count: 2_500), [], [4, 4, 4]]
        for (index, bytes) in sends.enumerated() { harness.send(key, bytes, timestamp: 50 + UInt64(index)) }
        harness.pump()
        #expect(harness.takeEventsB() == [.dataSessionIncoming(key, type)])
        #expect(harness.b.statistics.messagesDelivered == 0)
        #expect(harness.b.statistics.fragmentsDelivered == 0)

        #expect(harness.b.makeInbound(key) == .none)
        let deliveries = harness.takeEventsB().deliveries
        if type.isMessage {
            #expect(deliveries == sends.enumerated().map { .message(bytes: $0.element, timestamp: 50 + UInt64($0.offset)) })
        } else {
            #expect(deliveries.count == 6)  // the 2,500-byte send is three fragments
            #expect(deliveries.flatMap(\.bytes) == sends.flatMap { $0 })
            #expect(deliveries.map(\.timestamp) == [50, 51, 51, 51, 52, 53])
        }
        // Later data flows straight through.
        harness.send(key, [9], timestamp: 99)
        harness.pump()
        #expect(harness.takeEventsB().deliveries.map(\.bytes) == [[9]])
    }

    @Test("unreliable data held beyond maxPendingInboundBytes is dropped and counted")
    func pendingOverflow() {
        var harness = CallHarness.unlimitedSender(receiverHolding: 10_000)
        let key = SessionKey(streamID: 300)
        #expect(harness.a.makeOutbound(key, type: .unreliableMessage, now: harness.now) == .none)
        for index in 0..<5 { harness.send(key, Array(repeating: UInt8(index), count: 3_000), timestamp: UInt64(index)) }
        harness.send(key, Array(repeating: 9, count: 1_000), timestamp: 9)
        harness.pump()
        // 3 x 3,000 fit; the 4th and 5th would exceed 10,000; the last 1,000 bytes fit exactly.
        #expect(harness.b.statistics.droppedPendingOverflow == 2)
        #expect(!harness.b.isHoldingBeyondLimit)
        #expect(harness.b.makeInbound(key) == .none)
        #expect(harness.takeEventsB().deliveries.map(\.timestamp) == [0, 1, 2, 9])
        // Once accepted nothing is held, so nothing more is dropped.
        for index in 0..<5 { harness.send(key, Array(repeating: 7, count: 3_000), timestamp: 100 + UInt64(index)) }
        harness.pump()
        #expect(harness.takeEventsB().deliveries.count == 5)
        #expect(harness.b.statistics.droppedPendingOverflow == 2)

        // Bytes sessions hold and drop by fragment.
        let bytesKey = SessionKey(streamID: 301)
        #expect(harness.a.makeOutbound(bytesKey, type: .unreliableBytes, now: harness.now) == .none)
        harness.send(bytesKey, Array(repeating: 1, count: 12_000), timestamp: 1)  // ten 1,200-byte fragments
        harness.pump()
        #expect(harness.b.statistics.droppedPendingOverflow == 2 + 2)
        #expect(harness.b.makeInbound(bytesKey) == .none)
        #expect(harness.takeEventsB().fragments(of: bytesKey).map(\.offset) == Array(stride(from: 0, to: 9_600, by: 1_200)))
    }

    @Test("reliable data beyond maxPendingInboundBytes is held, never dropped, and asks the host to stop reading", arguments: [SessionType.reliableMessage, .reliableBytes])
    func reliablePendingIsHeld(type: SessionType) {
        var harness = CallHarness.unlimitedSender(receiverHolding: 10_000)
        let key = SessionKey(streamID: 302)
        #expect(harness.a.makeOutbound(key, type: type, now: harness.now) == .none)
        harness.send(key, Array(repeating: 1, count: 3_000), timestamp: 1)
        harness.pump()
        #expect(!harness.b.isHoldingBeyondLimit, "3,000 of 10,000 bytes held")
        for index in 2...5 { harness.send(key, Array(repeating: UInt8(index), count: 3_000), timestamp: UInt64(index)) }
        harness.pump()
        #expect(harness.b.isHoldingBeyondLimit)
        #expect(harness.b.statistics.droppedPendingOverflow == 0)

        #expect(harness.b.makeInbound(key) == .none)
        #expect(!harness.b.isHoldingBeyondLimit)
        let events = harness.takeEventsB()
        let received = type.isMessage ? events.deliveries.map(\.bytes).reduce([], +) : events.fragments(of: key).map(\.bytes).reduce([], +)
        let expected: [UInt8] = (1...5).flatMap { (number: UInt8) -> [UInt8] in Array(repeating: number, count: 3_000) }
        #expect(received == expected)

        // Declining a stream that holds its limit also lets the host read again.
        let other = SessionKey(streamID: 303)
        #expect(harness.a.makeOutbound(other, type: type, now: harness.now) == .none)
        harness.send(other, Array(repeating: 8, count: 12_000), timestamp: 8)
        harness.pump()
        #expect(harness.b.isHoldingBeyondLimit)
        harness.b.unsupportInbound(other)
        #expect(!harness.b.isHoldingBeyondLimit)
    }

    @Test("priorities share the link by weight while both sessions are backlogged: high 8, medium 4, low 2, very low 1 fragments a round")
    func prioritiesShareTheLinkByWeight() {
        var harness = CallHarness.connected(a: CallConfiguration(rateLimit: .unlimited))
        let priorities = OutboundSessionOptions.Priority.allCases
        let keys = priorities.indices.map { SessionKey(streamID: StreamID(rawValue: 400 + $0)) }
        for (key, priority) in zip(keys, priorities) {
            #expect(harness.a.makeOutbound(key, type: .reliableBytes, options: .init(priority: priority), now: harness.now) == .none)
        }
        harness.pump()  // the opens
        // A backlog of 300 fragments on each, more than the polls below take from any of them.
        let fragment = harness.a.configuration.fragmentSize
        for key in keys {
            for _ in 0..<3 { harness.send(key, Array(repeating: 1, count: 100 * fragment), timestamp: 0) }
        }

        // Polls of 30 fragments at a time: 15 rounds of 1 + 2 + 4 + 8 fragments fill 15 polls.
        var sent = [SessionKey: Int]()
        for _ in 0..<15 {
            var batch = DatagramBatch()
            _ = harness.a.pollTransmit(now: harness.now, into: &batch, maxBytes: 30 * (fragment + 64))
            for index in 0..<batch.count {
                let channel = batch.tag(at: index).channel
                if let key = keys.first(where: { FrameTag.sessionChannel(stream: UInt16($0.streamID.rawValue), subgroupID: 0) == channel }) {
                    sent[key, default: 0] += 1
                }
            }
        }
        let counts = keys.map { sent[$0, default: 0] }
        #expect(counts.reduce(0, +) >= 15 * 15)
        // Every round gives each its weight: the shares are 1 : 2 : 4 : 8 to within one round.
        for (count, priority) in zip(counts, priorities) {
            let expected = counts.reduce(0, +) * priority.weight / 15
            #expect(abs(count - expected) <= priority.weight, "\(priority): \(count) of \(counts)")
        }
    }

    @Test("a session's own rate cap paces it alone: the other session keeps the call's")
    func perSessionRateCap() {
        var harness = CallHarness.connected(a: CallConfiguration(rateLimit: .unlimited))
        let capped = SessionKey(streamID: 410), free = SessionKey(streamID: 411)
        #expect(harness.a.makeOutbound(capped, type: .reliableBytes, options: .init(rateLimit: .bitsPerSecond(80_000)), now: harness.now) == .none)
        #expect(harness.a.makeOutbound(free, type: .reliableBytes, now: harness.now) == .none)
        harness.pump()
        for key in [capped, free] { harness.send(key, Array(repeating: 2, count: 100_000), timestamp: 0) }
        harness.pump()
        let cappedStatistics = harness.a.outboundStatistics(capped, now: harness.now)
        let freeStatistics = harness.a.outboundStatistics(free, now: harness.now)
        // Unlimited: all of it at once. Capped at 10 kB/s: a burst's worth at most, the rest queued.
        #expect(freeStatistics?.bytesSent == 100_000)
        #expect((cappedStatistics?.bytesSent ?? 0) < 20_000)
        #expect((cappedStatistics?.queuedBytes ?? 0) > 80_000)
        #expect((cappedStatistics?.queueingDelay ?? .zero) > .seconds(5))
    }

    @Test("per-session statistics: queued, sent and held bytes, messages each way, and drops by reason")
    func perSessionStatistics() {
        var harness = CallHarness.unlimitedSender(receiverHolding: 500)
        let key = SessionKey(streamID: 320)
        #expect(harness.a.outboundStatistics(key, now: harness.now) == nil)
        #expect(harness.a.makeOutbound(key, type: .reliableMessage, now: harness.now) == .none)
        for size in [100, 200, 300] { harness.send(key, Array(repeating: 1, count: size), timestamp: 0) }
        let queued = harness.a.outboundStatistics(key, now: harness.now)
        #expect(queued?.messagesQueued == 3)
        #expect(queued?.queuedBytes == 600)
        #expect(queued?.messagesSent == 0)

        harness.pump()
        let sent = harness.a.outboundStatistics(key, now: harness.now)
        #expect(sent?.messagesSent == 3 && sent?.bytesSent == 600 && sent?.queuedBytes == 0)
        #expect(sent?.queueingDelay == .zero && sent?.messagesDiscarded == 0)
        // Held for the app (reliable: past the 500-byte limit, still held).
        var received = harness.b.inboundStatistics(key)
        #expect(received?.messagesReceived == 3 && received?.bytesReceived == 600 && received?.heldBytes == 600)
        #expect(harness.b.makeInbound(key) == .none)
        received = harness.b.inboundStatistics(key)
        #expect(received?.heldBytes == 0 && received?.messagesReceived == 3)

        // Unreliable data past the limit before the app answers: dropped, counted on its stream.
        let lossy = SessionKey(streamID: 321)
        #expect(harness.a.makeOutbound(lossy, type: .unreliableMessage, now: harness.now) == .none)
        for _ in 0..<3 { harness.send(lossy, Array(repeating: 2, count: 200), timestamp: 0) }
        harness.pump()
        let dropped = harness.b.inboundStatistics(lossy)
        #expect(dropped?.messagesReceived == 2 && dropped?.droppedPendingOverflow == 1 && dropped?.heldBytes == 400)

        // Closing abruptly (the call ends) counts what was still queued as discarded.
        harness.send(key, Array(repeating: 3, count: 50), timestamp: 0)
        harness.a.hangUp()
        #expect(harness.a.outboundStatistics(key, now: harness.now)?.messagesDiscarded == 1)
        #expect(harness.b.inboundStatistics(SessionKey(streamID: 322)) == nil)
    }

    @Test("held data is capped across streams too: unreliable dropped past the total, reliable stops the reading until the app answers")
    func pendingTotalCap() {
        var harness = CallHarness.connected(
            a: CallConfiguration(rateLimit: .unlimited),
            b: CallConfiguration(maxPendingInboundBytes: 10_000, maxPendingInboundBytesTotal: 15_000)
        )
        let lossy = [SessionKey(streamID: 330), SessionKey(streamID: 331)]
        for key in lossy {
            #expect(harness.a.makeOutbound(key, type: .unreliableMessage, now: harness.now) == .none)
            for _ in 0..<4 { harness.send(key, Array(repeating: 1, count: 2_000), timestamp: 0) }
        }
        harness.pump()
        // 8,000 held on the first stream, then only 7,000 more fit in 15,000: three of the four.
        #expect(harness.b.inboundStatistics(lossy[0])?.heldBytes == 8_000)
        #expect(harness.b.inboundStatistics(lossy[1])?.heldBytes == 6_000)
        #expect(harness.b.statistics.droppedPendingOverflow == 1)
        #expect(!harness.b.isHoldingBeyondLimit, "14,000 of 15,000 held")

        let reliable = SessionKey(streamID: 332)
        #expect(harness.a.makeOutbound(reliable, type: .reliableMessage, now: harness.now) == .none)
        harness.send(reliable, Array(repeating: 2, count: 2_000), timestamp: 0)
        harness.pump()
        #expect(harness.b.isHoldingBeyondLimit, "16,000 held in all, each stream under its own limit")
        #expect(harness.b.statistics.droppedPendingOverflow == 1)
        #expect(harness.b.makeInbound(lossy[0]) == .none)
        #expect(!harness.b.isHoldingBeyondLimit, "8,000 left held")
    }

    @Test("a stream announced before the peer hung up can still be made: it delivers what it held, then closes with sessionEnd")
    func heldDataIsReadableAfterHangUp() {
        var harness = CallHarness.connected()
        let key = SessionKey(streamID: 304)
        #expect(harness.a.makeOutbound(key, type: .reliableMessage, now: harness.now) == .none)
        for index in 0..<3 { harness.send(key, [UInt8(index), 1, 2], timestamp: UInt64(index)) }
        harness.pump()
        harness.a.hangUp()
        harness.pump()
        #expect(!harness.b.isConnected)
        _ = harness.takeEventsB()

        #expect(harness.b.makeInbound(key) == .none)
        let events = harness.takeEventsB()
        #expect(events.deliveries.map(\.timestamp) == [0, 1, 2])
        #expect(events.last == .inboundClosed(key, .sessionEnd))
        // Drained once: the stream is gone, and one never announced cannot be made.
        #expect(harness.b.makeInbound(key) == .internal)
        #expect(harness.b.makeInbound(SessionKey(streamID: 305)) == .internal)
    }

    @Test("sends over the type's limit fail with messageTooLarge", arguments: SessionType.allCases)
    func tooLarge(type: SessionType) {
        var harness = CallHarness.connected()
        #expect(harness.a.makeOutbound(mainStream, type: type, now: harness.now) == .none)
        let limit = type.isMessage ? 128 * 1024 : 4 * 1024 * 1024
        #expect(type.maxSendSize == limit)
        let result = harness.a.enqueue(mainStream, bytes: Array(repeating: 0, count: limit + 1), timestamp: 0, now: harness.now)
        guard case .failed(let error) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(error.code == .messageTooLarge)
        #expect(error.closeReason == nil)
        // Exactly the limit is fine, and the failure consumed no message ID.
        #expect(harness.a.enqueue(mainStream, bytes: Array(repeating: 0, count: limit), timestamp: 0, now: harness.now) == .queued(messageID: 0))
    }

    @Test("enqueue on a session that does not exist fails")
    func enqueueUnknownSession() {
        var harness = CallHarness.connected()
        let result = harness.a.enqueue(mainStream, bytes: [1], timestamp: 0, now: harness.now)
        guard case .failed(let error) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(error.code == .sessionClosed)
    }
}

@Suite("Call machine: closing")
struct CallMachineClosingTests {
    @Test("unsupportInbound closes the sender's session with unsupported and drops further data")
    func unsupportInbound() {
        var harness = CallHarness.connected(a: CallConfiguration(rateLimit: .unlimited))
        harness.open(mainStream, .reliableMessage)
        // Three 2,000-byte messages (six frames) are in flight when B refuses the stream.
        for index in 0..<3 { harness.send(mainStream, Array(repeating: UInt8(index), count: 2_000), timestamp: UInt64(index)) }
        var inFlight = DatagramBatch()
        harness.a.pollTransmit(now: harness.now, into: &inFlight)
        #expect(inFlight.count == 6)

        harness.b.unsupportInbound(mainStream)
        #expect(harness.takeEventsB() == [.inboundClosed(mainStream, .unsupported)])
        harness.b.handle(batch: inFlight, now: harness.now)
        #expect(harness.b.statistics.droppedUnsupported == 6)
        #expect(harness.takeEventsB() == [])

        harness.pump()
        #expect(harness.takeEventsA() == [.outboundClosed(mainStream, .unsupported)])
        #expect(harness.a.outboundCloseReason(mainStream) == .unsupported)
        let result = harness.a.enqueue(mainStream, bytes: [1], timestamp: 0, now: harness.now)
        guard case .failed(let error) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(error.code == .sessionClosed)
        #expect(error.closeReason == .unsupported)

        // Frames for the refused stream keep being dropped and counted.
        let stray = Frames.fragment(Array(repeating: 5, count: 3_000), streamID: 100, type: .reliableMessage, messageID: 99, timestamp: 0)
        harness.b.handle(batch: stray, now: harness.now)
        #expect(harness.b.statistics.droppedUnsupported == 6 + 3)
        #expect(harness.takeEventsB() == [])
        // Unsupporting twice sends nothing more.
        harness.b.unsupportInbound(mainStream)
        #expect(!harness.b.hasPendingControl())
    }

    @Test("unsupportInbound before the app accepted the stream")
    func unsupportBeforeAccept() {
        var harness = CallHarness.connected()
        #expect(harness.a.makeOutbound(mainStream, type: .unreliableBytes, now: harness.now) == .none)
        harness.pump()
        #expect(harness.takeEventsB() == [.dataSessionIncoming(mainStream, .unreliableBytes)])
        harness.b.unsupportInbound(mainStream)
        harness.pump()
        #expect(harness.takeEventsB() == [])
        #expect(harness.takeEventsA() == [.outboundClosed(mainStream, .unsupported)])
        #expect(harness.b.makeInbound(mainStream) == .notIncoming)
    }

    @Test("closeOutbound closes the receiver's session with sessionEnd after the data")
    func closeOutbound() {
        var harness = CallHarness.connected(a: CallConfiguration(rateLimit: .unlimited))
        harness.open(mainStream, .reliableBytes)
        harness.send(mainStream, Array(repeating: 1, count: 3_000), timestamp: 1)
        harness.pump()
        harness.a.closeOutbound(mainStream)
        harness.pump()
        #expect(harness.takeEventsA() == [.outboundClosed(mainStream, .sessionEnd)])
        let eventsB = harness.takeEventsB()
        #expect(eventsB.count == 4)
        #expect(eventsB.last == .inboundClosed(mainStream, .sessionEnd))
        #expect(eventsB.fragments(of: mainStream).flatMap(\.bytes) == Array(repeating: 1, count: 3_000))
        #expect(harness.a.outboundCloseReason(mainStream) == .sessionEnd)
        let result = harness.a.enqueue(mainStream, bytes: [1], timestamp: 0, now: harness.now)
        guard case .failed(let error) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(error.code == .sessionClosed)
        #expect(error.closeReason == .sessionEnd)
        // Closing twice does nothing.
        harness.a.closeOutbound(mainStream)
        harness.pump()
        #expect(harness.takeEventsA() == [])
        #expect(harness.takeEventsB() == [])
    }

    @Test("closeOutbound is graceful: queued messages go out first, then the close; new sends are refused")
    func closeDrainsQueue() {
        var harness = CallHarness.connected(a: CallConfiguration(rateLimit: .unlimited))
        harness.open(mainStream, .reliableMessage)
        harness.send(mainStream, [1, 2, 3], timestamp: 1)
        harness.send(mainStream, Array(repeating: 9, count: 5_000), timestamp: 2)
        harness.a.closeOutbound(mainStream)
        #expect(harness.a.enqueue(mainStream, bytes: [4], timestamp: 3, now: harness.now) == .failed(.closed(.sessionEnd)))
        #expect(harness.takeEventsA() == [])
        harness.pump()
        #expect(harness.takeEventsB() == [
            .received(mainStream, .message(bytes: [1, 2, 3], timestamp: 1)),
            .received(mainStream, .message(bytes: Array(repeating: 9, count: 5_000), timestamp: 2)),
            .inboundClosed(mainStream, .sessionEnd),
        ])
        #expect(harness.takeEventsA() == [.outboundClosed(mainStream, .sessionEnd)])
        #expect(harness.a.statistics.messagesSent == 2)
    }

    @Test("hanging up discards what is still queued")
    func hangUpDiscardsQueue() {
        var harness = CallHarness.connected()
        harness.open(mainStream, .reliableMessage)
        harness.send(mainStream, [1, 2, 3], timestamp: 1)
        harness.a.hangUp()
        harness.pump()
        #expect(harness.takeEventsB() == [.inboundClosed(mainStream, .sessionEnd), .disconnected(.remoteHangUp)])
        #expect(harness.a.statistics.messagesSent == 0)
    }

    @Test("a close announced before the app accepts is reported after the held data")
    func closeBeforeAccept() {
        var harness = CallHarness.connected()
        #expect(harness.a.makeOutbound(mainStream, type: .reliableMessage, now: harness.now) == .none)
        harness.send(mainStream, [7], timestamp: 7)
        harness.pump()
        harness.a.closeOutbound(mainStream)
        harness.pump()
        #expect(harness.takeEventsB() == [.dataSessionIncoming(mainStream, .reliableMessage)])
        #expect(harness.b.makeInbound(mainStream) == .none)
        #expect(harness.takeEventsB() == [
            .received(mainStream, .message(bytes: [7], timestamp: 7)),
            .inboundClosed(mainStream, .sessionEnd),
        ])
    }

    @Test("hangUp closes every open session on both sides and disconnects both")
    func hangUp() {
        var harness = CallHarness.connected()
        let s100 = SessionKey(streamID: 100)
        let s101 = SessionKey(streamID: 101)
        let s200 = SessionKey(streamID: 200)
        let s300 = SessionKey(streamID: 300)
        harness.open(s100, .reliableMessage)
        #expect(harness.a.makeOutbound(s101, type: .unreliableBytes, now: harness.now) == .none)  // never accepted by B
        #expect(harness.b.makeOutbound(s300, type: .reliableBytes, now: harness.now) == .none)
        #expect(harness.b.makeOutbound(s200, type: .unreliableMessage, now: harness.now) == .none)
        harness.pump()
        #expect(harness.a.makeInbound(s300) == .none)
        #expect(harness.a.makeInbound(s200) == .none)
        harness.clearEvents()

        harness.a.hangUp()
        #expect(harness.takeEventsA() == [
            .outboundClosed(s100, .sessionEnd),
            .outboundClosed(s101, .sessionEnd),
            .inboundClosed(s200, .sessionEnd),
            .inboundClosed(s300, .sessionEnd),
            .disconnected(.localHangUp),
        ])
        #expect(harness.a.phase == .ended(.localHangUp))
        harness.pump()
        #expect(harness.takeEventsB() == [
            .outboundClosed(s300, .sessionEnd),
            .outboundClosed(s200, .sessionEnd),
            .inboundClosed(s100, .sessionEnd),
            .disconnected(.remoteHangUp),
        ])
        #expect(harness.b.phase == .ended(.remoteHangUp))
        #expect(harness.takeEventsA() == [])

        // Everything after the end is refused or counted.
        let result = harness.a.enqueue(s100, bytes: [1], timestamp: 0, now: harness.now)
        #expect(result == .failed(.closed(.sessionEnd)))
        #expect(harness.a.makeInbound(s200) == .internal)
        let before = harness.b.statistics.droppedOutOfState
        harness.b.handle(datagram: ControlFrame.goodbye.encoded, now: harness.now)
        harness.b.handle(datagram: [], now: harness.now)
        #expect(harness.b.statistics.droppedOutOfState == before + 2)
        harness.a.hangUp()
        harness.a.linkClosed()
        harness.pump()
        #expect(harness.takeEventsA() == [])
        #expect(harness.takeEventsB() == [])
    }

    @Test("linkClosed disconnects with transportClosed, closes sessions with internal, and sends nothing")
    func linkClosed() {
        var harness = CallHarness.connected()
        harness.open(mainStream, .reliableMessage)
        harness.a.linkClosed()
        #expect(harness.takeEventsA() == [.outboundClosed(mainStream, .internal), .disconnected(.transportClosed)])
        #expect(!harness.a.hasPendingControl())
        harness.pump()
        #expect(harness.takeEventsB() == [])
        #expect(harness.b.isConnected)
        harness.b.linkClosed()
        #expect(harness.takeEventsB() == [.inboundClosed(mainStream, .internal), .disconnected(.transportClosed)])
        #expect(harness.b.phase == .ended(.transportClosed))
    }

    @Test("linkClosed during the handshake")
    func linkClosedWhileHandshaking() {
        var machine = CallMachine(localPeer: "solo")
        machine.linkClosed()
        #expect(machine.pollEvent() == .disconnected(.transportClosed))
        #expect(machine.pollEvent() == nil)
        var batch = DatagramBatch()
        #expect(machine.pollTransmit(now: .zero, into: &batch) == 0)
    }
}

@Suite("Call machine: pacing and queues")
struct CallMachinePacingTests {
    @Test("at 2 Mbit/s, 1 MiB queued at once reports tooLongQueuedData on, then off once drained")
    func tooLongQueuedData() {
        var harness = CallHarness.connected()
        let key = SessionKey(streamID: 400)
        harness.open(key, .reliableBytes)
        let original = SplitMix64(seed: 0x1A1B).bytesOf(count: 1024 * 1024)
        let start = harness.now
        harness.send(key, original, timestamp: 77)
        #expect(harness.takeEventsA() == [.tooLongQueuedData(key, enabled: true)])

        let steps = harness.runUntilIdle()
        #expect(steps < 100_000)
        #expect(harness.eventsA == [.tooLongQueuedData(key, enabled: false)])
        let fragments = harness.eventsB.fragments(of: key)
        #expect(fragments.count == 874)
        let identical = fragments.flatMap(\.bytes) == original
        #expect(identical, "all 1 MiB arrives")
        #expect(fragments.allSatisfy { $0.timestamp == 77 && $0.totalLength == original.count })

        // Virtual time: 1,076,544 bytes on the wire at 250,000 bytes/s, less the 6,000-byte burst.
        let elapsed = harness.now - start
        #expect(elapsed >= .milliseconds(4_250))
        #expect(elapsed <= .milliseconds(4_320))
        #expect(harness.a.nextDeadline(now: harness.now) == nil)
    }

    @Test("the pacer holds back data until virtual time passes")
    func pacedRelease() {
        var harness = CallHarness.connected()
        harness.open(mainStream, .reliableBytes)
        harness.send(mainStream, Array(repeating: 1, count: 60_000), timestamp: 0)
        harness.pump()
        // Only the 6,000-byte burst goes out at once: five 1,232-byte frames.
        #expect(harness.eventsB.fragments(of: mainStream).count == 5)
        let deadline = harness.a.nextDeadline(now: harness.now)
        #expect(deadline != nil && deadline! > harness.now)
        // Time does not move by itself.
        harness.pump()
        #expect(harness.eventsB.fragments(of: mainStream).count == 5)
        harness.runUntilIdle()
        #expect(harness.eventsB.fragments(of: mainStream).count == 50)
    }

    @Test("a full queue answers queueFull, then sendQueueHasRoom once it drains")
    func queueFull() {
        var harness = CallHarness.connected(a: CallConfiguration(rateLimit: .unlimited, maxQueuedBytesPerSession: 4_000))
        harness.open(mainStream, .reliableMessage)
        #expect(harness.a.enqueue(mainStream, bytes: Array(repeating: 1, count: 3_000), timestamp: 1, now: harness.now) == .queued(messageID: 0))
        #expect(harness.a.enqueue(mainStream, bytes: Array(repeating: 2, count: 1_000), timestamp: 2, now: harness.now) == .queued(messageID: 1))
        #expect(harness.a.enqueue(mainStream, bytes: [3], timestamp: 3, now: harness.now) == .queueFull)
        #expect(harness.a.enqueue(mainStream, bytes: [3], timestamp: 3, now: harness.now) == .queueFull)
        #expect(harness.takeEventsA() == [])
        harness.pump()
        #expect(harness.takeEventsA() == [.sendQueueHasRoom(mainStream)])
        #expect(harness.a.enqueue(mainStream, bytes: [3], timestamp: 3, now: harness.now) == .queued(messageID: 2))
        harness.pump()
        #expect(harness.takeEventsA() == [])
        #expect(harness.takeEventsB().deliveries.map(\.timestamp) == [1, 2, 3])

        // One send is always admitted into an empty queue, however large.
        #expect(harness.a.enqueue(mainStream, bytes: Array(repeating: 4, count: 100_000), timestamp: 4, now: harness.now) == .queued(messageID: 3))
        #expect(harness.a.enqueue(mainStream, bytes: [5], timestamp: 5, now: harness.now) == .queueFull)
        // Closing wakes the waiting sender at once (its retry is refused), and completes after the drain.
        harness.a.closeOutbound(mainStream)
        #expect(harness.takeEventsA() == [.sendQueueHasRoom(mainStream)])
        #expect(harness.a.enqueue(mainStream, bytes: [5], timestamp: 5, now: harness.now) == .failed(.closed(.sessionEnd)))
        harness.pump()
        #expect(harness.takeEventsA() == [.outboundClosed(mainStream, .sessionEnd)])
        #expect(harness.takeEventsB().deliveries.map(\.timestamp) == [4])
    }
}

@Suite("Call machine: hostile input")
struct CallMachineMalformedTests {
    @Test("malformed datagrams are counted, one each")
    func countedDrops() {
        var harness = CallHarness.connected()
        let valid = Frames.raw(total: 100, fragmentSize: 100, payloadLength: 100)
        var cases: [[UInt8]] = [
            [], [0x10], [0x11], [0x20], [0x12],
            Array(valid[..<31]),
            Frames.raw(stream: 99, total: 1, fragmentSize: 1, payloadLength: 1),
            Frames.raw(type: 4, total: 1, fragmentSize: 1, payloadLength: 1),
            Frames.raw(type: 0, total: 200_000, fragmentSize: 1_200, payloadLength: 1_200),
            Frames.raw(type: 2, total: 0xFFFF_FFFF, fragmentSize: 1_200, payloadLength: 1_200),
            Frames.raw(total: 100, fragmentSize: 0, payloadLength: 100),
            Frames.raw(type: 2, total: 4 * 1024 * 1024, fragmentSize: 1, payloadLength: 1),
            Frames.raw(offset: 50, total: 100, fragmentSize: 100, payloadLength: 50),
            Frames.raw(total: 100, fragmentSize: 100, payloadLength: 99),
            Array(ControlFrame.goodbye.encoded[..<9]),
            [0x11, 0x09, 0, 0, 0, 0, 0, 0, 0, 0],
            ControlFrame.goodbye.encoded + [0],
        ]
        var reservedSet = valid
        reservedSet[23] = 1
        cases.append(reservedSet)
        for (index, datagram) in cases.enumerated() {
            harness.b.handle(datagram: datagram, now: harness.now)
            #expect(harness.b.statistics.malformedDatagrams == index + 1, "case \(index)")
        }
        #expect(harness.b.statistics.datagramsReceived == 1 + cases.count)
        #expect(harness.b.isConnected)
        #expect(harness.takeEventsB() == [])
    }

    @Test("20,000 seeded random datagrams are counted and change nothing")
    func randomDatagrams() {
        var harness = CallHarness.connected(a: CallConfiguration(rateLimit: .unlimited))
        harness.open(mainStream, .reliableMessage)
        var generator = SplitMix64(seed: 0xF022)
        var expectedMalformed = 0
        for index in 0..<20_000 {
            var datagram = generator.bytes(generator.below(index % 10 == 0 ? 1_400 : 80))
            if !datagram.isEmpty {
                switch index % 4 {
                case 0: datagram[0] = 0x10
                case 1: datagram[0] = 0x11
                case 2 where datagram.count >= 32:
                    // Nearly valid data frames: version, kind, reserved bytes and stream ID right.
                    datagram[0] = 0x10
                    datagram[1] = 0
                    datagram[5] = 0
                    datagram[22] = 0
                    datagram[23] = 0
                    datagram.setBigEndian(UInt16(100 + generator.below(900)), at: 2)
                    datagram[4] = UInt8(generator.below(5))
                default: break
                }
            }
            if !Frames.isWellFormed(datagram) { expectedMalformed += 1 }
            harness.b.handle(datagram: datagram, now: harness.now)
            datagram.withUnsafeBytes { harness.a.handle(datagram: $0, now: harness.now) }
        }
        #expect(expectedMalformed > 19_900)
        #expect(harness.b.statistics.malformedDatagrams == expectedMalformed)
        #expect(harness.a.statistics.malformedDatagrams == expectedMalformed)
        #expect(harness.b.statistics.datagramsReceived == 2 + 20_000)  // hello and sessionOpen first
        #expect(harness.a.isConnected)
        #expect(harness.b.isConnected)

        // The call still works.
        harness.clearEvents()
        harness.send(mainStream, [1, 2, 3], timestamp: 3)
        harness.pump()
        #expect(harness.takeEventsB() == [.received(mainStream, .message(bytes: [1, 2, 3], timestamp: 3))])
    }

    @Test("frames before the handshake are dropped as out of state")
    func beforeHandshake() {
        var machine = CallMachine(localPeer: "solo")
        machine.handle(batch: Frames.fragment([1], type: .reliableMessage, messageID: 0, timestamp: 0), now: .zero)
        machine.handle(datagram: ControlFrame.sessionOpen(streamID: 100, subgroupID: 0, subgroup: nil, type: .reliableMessage).encoded, now: .zero)
        #expect(machine.statistics.droppedOutOfState == 2)
        #expect(machine.statistics.dataFramesReceived == 1)
        #expect(machine.pollEvent() == nil)
    }

    @Test("data whose type contradicts the announced one is dropped, counted as of the wrong type")
    func typeMismatch() {
        var harness = CallHarness.connected()
        harness.open(mainStream, .reliableMessage)
        harness.b.handle(batch: Frames.fragment([1, 2], type: .unreliableBytes, messageID: 0, timestamp: 0), now: harness.now)
        #expect(harness.b.statistics.droppedWrongType == 1)
        #expect(harness.b.statistics.droppedClosedSession == 0)
        #expect(harness.takeEventsB() == [])
    }
}

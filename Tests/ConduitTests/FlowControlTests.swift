import Conduit
import ConduitCore
import ConduitTesting
import Testing

/// The per-session rate cap with its `tooLongQueuedData` hysteresis, and receive backpressure.
@Suite("Flow control")
struct FlowControlTests {
    @Test("rate cap on virtual time: 1 MiB queued at 8 Mbit/s raises tooLongQueuedData once, clears it once, and all of it arrives", arguments: [SessionType.reliableBytes, .unreliableBytes])
    func rateCapHysteresis(type: SessionType) async throws {
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .bitsPerSecond(8_000_000)
        configuration.queueDelayOn = .milliseconds(100)
        configuration.queueDelayOff = .milliseconds(20)
        let clock = VirtualClock()
        let pair = try await CallPair.connect("flow-rate-cap-\(type.name)", configuration: configuration, clock: clock)
        let (outbound, inbound) = try await pair.open(400, type)
        let outboundEvents = EventRecorder(outbound.events)
        let received = EventRecorder(inbound.events)

        var generator = SplitMix64(seed: 0x8_000_000 + UInt64(type.rawValue))
        let payload = generator.bytes(1024 * 1024)
        // One send queues the whole mebibyte: 1.05 s of data at the cap, far over the 100 ms threshold.
        try await outbound.send(payload, timestamp: 8_000)
        let start = clock.now()
        let fragmentCount = (payload.count + 1_199) / 1_200

        let raised = await clock.advance(by: .milliseconds(10), until: { !outboundEvents.all.isEmpty }, limit: .seconds(1))
        #expect(raised)
        #expect(outboundEvents.all == [.tooLongQueuedData(enabled: true)])
        #expect(received.all.count < fragmentCount)
        let delivered = await clock.advance(by: .milliseconds(10), until: {
            received.all.count == fragmentCount && outboundEvents.all.count == 2
        }, limit: .seconds(60))
        #expect(delivered)
        #expect(outboundEvents.all == [.tooLongQueuedData(enabled: true), .tooLongQueuedData(enabled: false)])
        // Paced, not bursted: the last fragment cannot leave before 1 MiB's worth of time.
        #expect(clock.now() - start >= .milliseconds(1_000))

        let fragments = received.all.compactMap(\.fragment)
        #expect(fragments.count == fragmentCount)
        #expect(fragments.map(\.offset) == Array(stride(from: 0, to: payload.count, by: 1_200)))
        #expect(fragments.allSatisfy { $0.timestamp == 8_000 && $0.totalLength == payload.count })
        var aggregator = FragmentAggregator(streamID: 400, sessionType: type)
        let whole = fragments.compactMap { aggregator.add($0) }
        #expect(whole.count == 1)
        #expect(whole.first?.bytes == payload)
        #expect(whole.first?.timestamp == 8_000)

        // No further tooLongQueuedData: after the two toggles, the next event is the close.
        let caller = pair.caller
        try await within("hang up") { await caller.hangUp() }
        let all = try await within("the rest of the outbound events") { try await outboundEvents.waitUntilFinished() }
        #expect(all == [.tooLongQueuedData(enabled: true), .tooLongQueuedData(enabled: false), .closed(.sessionEnd)])
        try await pair.finish()
    }

    @Test("receiver backpressure on virtual time: a receiver that does not read fills the sender's queue; reading drains it in order")
    func receiverBackpressure() async throws {
        var configuration = ConduitConfiguration.testDefaults
        configuration.inboundBufferBytes = 65_536
        configuration.maxQueuedBytesPerSession = 262_144
        configuration.queueDelayOn = .milliseconds(50)
        configuration.queueDelayOff = .milliseconds(10)
        let clock = VirtualClock()
        let pair = try await CallPair.connect("flow-backpressure", query: "?window=65536", configuration: configuration, clock: clock)
        let (outbound, inbound) = try await pair.open(410, .reliableMessage)
        let outboundEvents = EventRecorder(outbound.events)

        // The receiver made its inbound session but does not read. Fill until the sender's queue
        // stays full: trySend refused 50 times in a row (a yield between tries lets the pipeline
        // between the two sides fill up as far as it can). No time passes meanwhile.
        var generator = SplitMix64(seed: 410)
        var accepted: [[UInt8]] = []
        var pending = generator.bytes(16 * 1024)
        var refusals = 0
        var sawRefusal = false
        for _ in 0..<10_000 {
            if try await outbound.trySend(pending, timestamp: UInt64(accepted.count)) {
                accepted.append(pending)
                pending = generator.bytes(16 * 1024)
                refusals = 0
            } else {
                sawRefusal = true
                refusals += 1
                if refusals == 50 { break }
                await clock.settle()
            }
        }
        #expect(sawRefusal, "trySend returned false at some point")
        #expect(refusals == 50, "the queue stayed full while the receiver did not read")
        // The queue (256 KiB) and the bounded buffers behind it hold far less than 10,000 messages.
        #expect(accepted.count < 1_000)
        #expect(await outbound.closeReason == nil)
        #expect(outboundEvents.all.isEmpty, "nothing is too long before any time passed")
        // The app hears that its data is queueing while the receiver is not reading: once the
        // head has waited 50 ms of virtual time, though the pump is blocked in a write.
        let raised = await clock.advance(by: .milliseconds(10), until: { !outboundEvents.all.isEmpty }, limit: .seconds(1))
        #expect(raised)
        #expect(outboundEvents.all == [.tooLongQueuedData(enabled: true)])

        // A suspending send, started while the queue is full, completes once the receiver reads.
        let last = pending
        let lastTimestamp = UInt64(accepted.count)
        let suspended = Task { try await outbound.send(last, timestamp: lastTimestamp) }
        let expected = accepted + [last]
        let received = try await readMessages(expected.count, from: inbound)
        try await within("the suspended send to complete") { try await suspended.value }

        #expect(received.count == expected.count)
        #expect(received.map(\.timestamp) == (0..<UInt64(expected.count)).map { $0 })
        for (index, (got, want)) in zip(received, expected).enumerated() where got.bytes != want {
            Issue.record("message \(index) differs")
        }
        // The queue drained: the delay falls back under 10 ms, checked on the monitor's next tick.
        let cleared = await clock.advance(by: .milliseconds(10), until: { outboundEvents.all.count >= 2 }, limit: .seconds(1))
        #expect(cleared)

        // Exactly once: nothing else is buffered behind the last message.
        let caller = pair.caller
        try await within("hang up") { await caller.hangUp() }
        #expect(try await drain(inbound, "the inbound session to close") == [.closed(.sessionEnd)])

        // The toggles alternate, starting on and ending off (the queue drained), and the close is last.
        let events = try await within("the outbound events") { try await outboundEvents.waitUntilFinished() }
        #expect(events.last == .closed(.sessionEnd))
        let toggles = events.dropLast().map { event -> Bool? in
            if case .tooLongQueuedData(let enabled) = event { return enabled }
            return nil
        }
        #expect(toggles.allSatisfy { $0 != nil })
        #expect(toggles.first == true)
        for (index, enabled) in toggles.enumerated() { #expect(enabled == (index % 2 == 0)) }
        #expect(toggles.count % 2 == 0)
        try await pair.finish()
    }

    @Test("a full queue: trySend returns false without queueing, send waits, and both work again once it drains")
    func fullQueueRefusesThenAccepts() async throws {
        var configuration = ConduitConfiguration.testDefaults
        configuration.inboundBufferBytes = 16 * 1024
        configuration.maxQueuedBytesPerSession = 64 * 1024
        let pair = try await CallPair.connect("flow-full-queue", query: "?window=16384", configuration: configuration)
        let (outbound, inbound) = try await pair.open(420, .reliableBytes)

        var generator = SplitMix64(seed: 420)
        var accepted: [[UInt8]] = []
        var pending = generator.bytes(8 * 1024)
        var refusals = 0
        for _ in 0..<10_000 where refusals < 50 {
            if try await outbound.trySend(pending, timestamp: 10_000 + UInt64(accepted.count)) {
                accepted.append(pending)
                pending = generator.bytes(8 * 1024)
                refusals = 0
            } else {
                refusals += 1
                await Task.yield()
            }
        }
        #expect(refusals == 50)

        let extra = pending
        let extraTimestamp = 10_000 + UInt64(accepted.count)
        let sender = Task { try await outbound.send(extra, timestamp: extraTimestamp) }
        let expected = accepted + [extra]
        let fragments = try await within("every fragment", limit: .seconds(20)) { () -> [ReceivedFragment] in
            var fragments: [ReceivedFragment] = []
            var complete = 0
            while complete < expected.count, let event = await inbound.events.next(), let fragment = event.fragment {
                fragments.append(fragment)
                if fragment.isLast { complete += 1 }
            }
            return fragments
        }
        try await within("the waiting send to complete") { try await sender.value }
        var aggregator = FragmentAggregator(streamID: 420)
        let wholes = fragments.compactMap { aggregator.add($0) }
        let expectedTimestamps: [UInt64] = (0..<UInt64(expected.count)).map { 10_000 + $0 }
        #expect(wholes.map(\.timestamp) == expectedTimestamps)
        #expect(wholes.map(\.bytes) == expected)

        // And the session is still usable afterwards.
        #expect(try await outbound.trySend([42], timestamp: 1))
        let after = try #require(try await next(inbound, "a send after the queue drained"))
        #expect(after.fragment?.bytes == [42])
        try await pair.finish()
    }
}

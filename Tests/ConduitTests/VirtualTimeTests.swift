import Conduit
import ConduitCore
import ConduitTesting
import Testing

/// A call over `loopback://` on a ``VirtualClock``: time-dependent behaviour checked on virtual
/// time, with no wall-clock sleep (time moves only when the test moves it).
@Suite("Virtual time")
struct VirtualTimeTests {
    /// Collects what an async sequence yields, so a test can look without waiting.
    final class Collected<Element: Sendable>: Sendable {
        private let items = TSanVisibleMutex<[Element]>([])
        private let task = TSanVisibleMutex<Task<Void, Never>?>(nil)

        init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Element {
            let handle = Task { [weak self] in
                do { for try await item in sequence { self?.items.withLock { $0.append(item) } } } catch {}
            }
            task.withLock { $0 = handle }
        }

        var all: [Element] { items.withLock { $0 } }

        deinit { task.withLock { $0?.cancel() } }
    }

    @Test("rate cap on virtual time: 1 MiB at 8 Mbit/s raises tooLongQueuedData once, clears it once, and all of it arrives")
    func rateCapOnVirtualTime() async throws {
        var configuration = ConduitConfiguration.testDefaults
        (configuration.queueDelayOn, configuration.queueDelayOff) = (.milliseconds(100), .milliseconds(20))
        configuration.rateLimit = .bitsPerSecond(8_000_000)
        let clock = VirtualClock()
        let pair = try await CallPair.connect("virtual-rate-cap", configuration: configuration, clock: clock)
        let (outbound, inbound) = try await pair.open(400, .reliableBytes)
        let outboundEvents = Collected(outbound.events)
        let received = Collected(inbound.events)

        var generator = SplitMix64(seed: 400)
        let payload = generator.bytes(1024 * 1024)
        try await outbound.send(payload, timestamp: 400)
        let fragmentCount = (payload.count + 1_199) / 1_200

        // 1 MiB at 8 Mbit/s is 1.05 s of virtual time; no wall-clock time has to pass for it.
        let raised = await clock.advance(by: .milliseconds(10), until: { !outboundEvents.all.isEmpty }, limit: .seconds(1))
        #expect(raised)
        #expect(outboundEvents.all == [.tooLongQueuedData(enabled: true)])
        // Raised once the head waited 100 ms, long before the data could all have gone out.
        #expect(received.all.count < fragmentCount)

        let delivered = await clock.advance(by: .milliseconds(10), until: { received.all.count == fragmentCount && outboundEvents.all.count == 2 }, limit: .seconds(60))
        #expect(delivered)
        #expect(outboundEvents.all == [.tooLongQueuedData(enabled: true), .tooLongQueuedData(enabled: false)])
        let fragments = received.all.compactMap(\.fragment)
        #expect(fragments.map(\.offset) == Array(stride(from: 0, to: payload.count, by: 1_200)))
        var aggregator = FragmentAggregator(streamID: 400, sessionType: .reliableBytes)
        #expect(fragments.compactMap { aggregator.add($0) }.map(\.bytes) == [payload])
        // Paced, not bursted: the last fragment cannot go out before 1 MiB's worth of time.
        #expect(clock.now() >= .zero + .milliseconds(1_000))
        try await pair.finish()
    }

    @Test("blocked link on virtual time: a sender whose link is full hears tooLongQueuedData while its pump waits in a write, and the all-clear once the receiver reads")
    func blockedLinkOnVirtualTime() async throws {
        let clock = VirtualClock()
        var configuration = ConduitConfiguration.testDefaults
        configuration.inboundBufferBytes = 65_536
        configuration.maxQueuedBytesPerSession = 262_144
        configuration.queueDelayOn = .milliseconds(50)
        configuration.queueDelayOff = .milliseconds(10)
        let pair = try await CallPair.connect("virtual-blocked", query: "?window=65536", configuration: configuration, clock: clock)
        let (outbound, inbound) = try await pair.open(410, .reliableMessage)
        let outboundEvents = Collected(outbound.events)

        // The receiver does not read: fill until the sender's queue refuses (the link is full,
        // the pump blocked in a write). No time passes meanwhile, so nothing is "too long" yet.
        var generator = SplitMix64(seed: 410)
        var accepted: [[UInt8]] = []
        var pending = generator.bytes(16 * 1024)
        var refusals = 0
        while refusals < 50, accepted.count < 1_000 {
            if try await outbound.trySend(pending, timestamp: UInt64(accepted.count)) {
                accepted.append(pending)
                pending = generator.bytes(16 * 1024)
                refusals = 0
            } else {
                refusals += 1
                await Task.yield()
            }
        }
        #expect(refusals == 50)
        #expect(outboundEvents.all.isEmpty)
        let sent = accepted

        // The head has waited 50 ms of virtual time: the timer fires although the pump is blocked.
        #expect(await clock.advance(by: .milliseconds(10), until: { !outboundEvents.all.isEmpty }, limit: .seconds(1)))
        #expect(outboundEvents.all == [.tooLongQueuedData(enabled: true)])

        // Reading drains it all, in order, and the delay falls back under the threshold.
        let received = Collected(inbound.events)
        let drained = await clock.advance(
            by: .milliseconds(10), until: { received.all.count == sent.count && outboundEvents.all.count == 2 }, limit: .seconds(5)
        )
        #expect(drained)
        #expect(received.all.compactMap(\.message).map(\.bytes) == sent)
        #expect(outboundEvents.all == [.tooLongQueuedData(enabled: true), .tooLongQueuedData(enabled: false)])
        try await pair.finish()
    }
}

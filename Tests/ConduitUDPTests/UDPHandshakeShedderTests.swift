import ConduitCore
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import ConduitUDP

/// The listener's adaptive rate of new links (UDPHandshakeShedder.swift), on virtual time, and
/// its wiring into the listener's receive path on an embedded channel.
@Suite("UDP handshake shedding")
struct UDPHandshakeShedderTests {
    static let start = ConduitInstant(nanoseconds: 10_000_000_000)

    /// Links `shedder` admits in `duration`, one attempt every millisecond from `from`.
    static func admitted(_ shedder: inout UDPHandshakeShedder, from: ConduitInstant, for duration: Duration) -> Int {
        var count = 0
        var now = from
        while now < from + duration {
            if shedder.admitLink(now: now) { count += 1 }
            now = now + .milliseconds(1)
        }
        return count
    }

    @Test func aQuietListenerTakesLinksAtItsCeiling() {
        var shedder = UDPHandshakeShedder(overloadBurst: 32, ceiling: 1_000)
        // A tenth of a second's worth at once, then the ceiling's pace.
        #expect(Self.admitted(&shedder, from: Self.start, for: .milliseconds(1)) == 1)
        var burst = UDPHandshakeShedder(overloadBurst: 32, ceiling: 1_000)
        var taken = 0
        while burst.admitLink(now: Self.start) { taken += 1 }
        #expect(taken == 100)
        #expect(Self.admitted(&shedder, from: Self.start + .seconds(1), for: .seconds(1)) == 1_000)
        // Bursts below the threshold are no overload.
        shedder.noteBurst(datagrams: 31, now: Self.start + .seconds(2))
        #expect(shedder.rate == 1_000)
        let answered = shedder.answerHello(now: Self.start + .seconds(2))
        #expect(answered)
        #expect(shedder.overloadedBursts == 0)
    }

    @Test func anOverloadedBurstHalvesTheRateOncePerStepAndLimitsHellosForAStep() {
        var shedder = UDPHandshakeShedder(overloadBurst: 32, ceiling: 1_000)
        shedder.noteBurst(datagrams: 32, now: Self.start)
        #expect(shedder.rate == 500)
        // HELLOs for a step: four per link allowed, a tenth of a second's worth at once.
        var answered = 0
        while shedder.answerHello(now: Self.start) { answered += 1 }
        #expect(answered == 200)
        let oneMore = shedder.answerHello(now: Self.start + .milliseconds(1))
        #expect(oneMore, "2,000 a second: two more a millisecond later")
        // A step after the burst, every HELLO is answered again.
        var later = 0
        for _ in 0..<1_000 where shedder.answerHello(now: Self.start + .milliseconds(100)) { later += 1 }
        #expect(later == 1_000)
        // Within the step: counted, not halved again.
        shedder.noteBurst(datagrams: 128, now: Self.start + .milliseconds(50))
        #expect(shedder.rate == 500)
        #expect(shedder.overloadedBursts == 2)
        // The bucket shrank with the rate: at most a tenth of a second's worth at once.
        var taken = 0
        while shedder.admitLink(now: Self.start + .milliseconds(50)) { taken += 1 }
        #expect(taken == 50)
    }

    @Test func sustainedOverloadHoldsTheFloorAndQuietRaisesTheRateBack() {
        var shedder = UDPHandshakeShedder(overloadBurst: 32, ceiling: 1_000)
        var now = Self.start
        for _ in 0..<20 {
            shedder.noteBurst(datagrams: 64, now: now)
            now = now + .milliseconds(100)
        }
        // Never below the floor (a twentieth): joins still get in while the listener is behind.
        #expect(shedder.rate == 50)
        #expect(shedder.floor == 50)
        // Quiet since the last halving (100 ms before `now`): a tenth more per 100 ms.
        _ = shedder.admitLink(now: now)
        #expect(shedder.rate == 55)
        _ = shedder.admitLink(now: now + .milliseconds(150))
        #expect(shedder.rate == 60)
        // Back to the ceiling, and no further (50 → 1,000 takes about 3.3 s).
        _ = shedder.admitLink(now: now + .seconds(6))
        #expect(shedder.rate == 1_000)
    }

    @Test func aRaiseBetweenTwoOverloadsDoesNotDelayTheSecondHalving() {
        var shedder = UDPHandshakeShedder(overloadBurst: 32, ceiling: 1_000)
        shedder.noteBurst(datagrams: 32, now: Self.start)
        _ = shedder.admitLink(now: Self.start + .milliseconds(230))  // raised twice: 500 → 550 → 605
        #expect(shedder.rate == 605)
        shedder.noteBurst(datagrams: 32, now: Self.start + .milliseconds(250))
        #expect(shedder.rate == 302)
    }

    /// A listener core on an embedded channel with a clock the test moves.
    final class Harness {
        final class Clock: Sendable {
            let now = Mutex(UDPHandshakeShedderTests.start)
        }
        let channel = EmbeddedChannel()
        let clock = Clock()
        let core: UDPListenerCore
        let client = try! SocketAddress(ipAddress: "127.0.0.1", port: 40_000)

        init() {
            let clock = self.clock
            core = UDPListenerCore(
                loop: channel.embeddedEventLoop, mtu: 1_200, limits: .init(handshakesPerSecond: 1_000, overloadBurst: 32),
                clock: { clock.now.withLock { $0 } })
        }

        func hello(nonce: UInt64) -> UDPControlMessage? {
            var buffer = ByteBuffer()
            UDPControlMessage.hello(ssrc: 7, nonce: nonce, version: UDPControlMessage.protocolVersion, mtu: 1_200).write(into: &buffer)
            core.receive(AddressedEnvelope(remoteAddress: client, data: buffer), via: channel)
            guard let answer = try? channel.readOutbound(as: AddressedEnvelope<ByteBuffer>.self) else { return nil }
            return UDPControlMessage(parsing: answer.data)
        }
    }

    @Test func aListenerBehindItsSocketLimitsHellosAndCountsWhatItLeavesUnanswered() throws {
        let harness = Harness()
        guard case .cookie? = harness.hello(nonce: 1) else { Issue.record("a quiet listener must answer a HELLO"); return }
        harness.core.endBurst(reads: 31)
        guard case .cookie? = harness.hello(nonce: 2) else { Issue.record("31 reads in a burst is no overload"); return }
        harness.core.endBurst(reads: 32)
        // The rate of links halved to 500 a second: 200 HELLOs at once (4 per link, a tenth of a
        // second's worth), then none until time passes.
        var answered = 0
        for nonce in UInt64(3)...202 { if case .cookie? = harness.hello(nonce: nonce) { answered += 1 } }
        #expect(answered == 200)
        #expect(harness.hello(nonce: 203) == nil)
        #expect(harness.core.currentStatistics().shedUnderLoad == 1)
        #expect(harness.core.currentStatistics().hellosAnswered == 202)
        harness.clock.now.withLock { $0 = $0 + .milliseconds(100) }
        guard case .cookie? = harness.hello(nonce: 204) else { Issue.record("a step after the burst, HELLOs are answered again"); return }
        let statistics = harness.core.currentStatistics()
        #expect(statistics.datagramsAccountedFor == 204)
        _ = try harness.channel.finish()
    }
}

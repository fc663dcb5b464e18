import ConduitCore
import ConduitImpairment
import ConduitTesting
import Testing

/// `SansIOPair`: two call machines over a seeded impaired path, on virtual time.
@Suite("SansIOPair")
struct SansIOPairTests {
    typealias CallPairMachines = SansIOPair<CallMachine, CallMachine>

    static func path(loss: Double = 0, duplicate: Double = 0, reorder: Double = 0, delay: Duration = .milliseconds(20), seed: UInt64) -> ImpairmentConfiguration {
        var configuration = ImpairmentConfiguration()
        (configuration.loss, configuration.duplicate, configuration.reorder) = (loss, duplicate, reorder)
        (configuration.delay, configuration.jitter, configuration.seed) = (delay, .milliseconds(5), seed)
        return configuration
    }

    static func connected(_ configuration: CallConfiguration = .init(rateLimit: .unlimited), aToB: ImpairmentConfiguration = .init(), bToA: ImpairmentConfiguration = .init()) -> CallPairMachines {
        var pair = SansIOPair(a: CallMachine(localPeer: "alice", configuration: configuration), b: CallMachine(localPeer: "bob", configuration: configuration), aToB: aToB, bToA: bToA)
        let connected = pair.run(until: { $0.a.isConnected && $0.b.isConnected }, limit: .seconds(1))
        #expect(connected)
        _ = pair.takeEventsA()
        _ = pair.takeEventsB()
        return pair
    }

    /// Opens `key` from alice to bob and accepts it on bob.
    static func open(_ key: SessionKey, _ type: SessionType, on pair: inout CallPairMachines) {
        let opened = pair.a.makeOutbound(key, type: type, now: pair.now)
        #expect(opened == DataSessionFailReason.none)
        let heard = pair.run(until: { !$0.eventsB.isEmpty }, limit: .seconds(1))
        #expect(heard)
        let announced = pair.takeEventsB()
        #expect(announced == [.dataSessionIncoming(key, type)])
        let accepted = pair.b.makeInbound(key, expectedType: type)
        #expect(accepted == DataSessionFailReason.none)
    }

    /// Sends 200 unreliable messages through 20 % loss, 5 % duplication and 10 % reordering;
    /// returns the path's statistics and what bob received.
    static func lossyRun(seed: UInt64) -> (CallPairMachines.Path.Statistics, [[UInt8]], ConduitInstant) {
        let lossy = path(loss: 0.2, duplicate: 0.05, reorder: 0.1, seed: seed)
        var pair = connected(aToB: lossy, bToA: path(seed: seed + 1))
        let key = SessionKey(streamID: 300)
        open(key, .unreliableMessage, on: &pair)
        var generator = SeededRandom(seed: seed)
        for index in 0..<200 {
            _ = pair.a.enqueue(key, bytes: generator.bytes(1 + generator.below(3_000)), timestamp: UInt64(index), now: pair.now)
            pair.advance(by: .milliseconds(1))
        }
        let idle = pair.runUntilIdle(limit: .seconds(10))
        #expect(idle)
        let received = pair.takeEventsB().compactMap { event -> [UInt8]? in
            guard case .received(_, .message(let bytes, _)) = event else { return nil }
            return bytes
        }
        return (pair.aToB.statistics, received, pair.now)
    }

    @Test("the same seeds give the same run, datagram for datagram, and every datagram is accounted for")
    func sameSeedSameRun() {
        let (statistics, received, end) = Self.lossyRun(seed: 42)
        let (again, receivedAgain, endAgain) = Self.lossyRun(seed: 42)
        #expect(statistics == again)
        #expect(received == receivedAgain)
        #expect(end == endAgain)
        // Loss, duplication and reordering all happened, and every datagram is counted.
        #expect(statistics.droppedByLoss > 0)
        #expect(statistics.duplicated > 0)
        #expect(statistics.reordered > 0)
        #expect(statistics.submitted + statistics.duplicated == statistics.delivered + statistics.dropped)
        // A lost fragment loses its message; none arrives twice.
        #expect(received.count < 200)
        #expect(Set(received.map { $0 }).count == received.count)
        let (other, _, _) = Self.lossyRun(seed: 43)
        #expect(other != statistics)
    }

    @Test("queue delay on virtual time: a rate-capped sender raises tooLongQueuedData once and clears it once, and all of it arrives in order over a delayed path")
    func queueDelayOnVirtualTime() throws {
        var configuration = CallConfiguration(rateLimit: .bitsPerSecond(8_000_000))
        (configuration.queueDelayOn, configuration.queueDelayOff) = (.milliseconds(100), .milliseconds(20))
        var pair = Self.connected(configuration, aToB: Self.path(seed: 1), bToA: Self.path(seed: 2))
        let key = SessionKey(streamID: 302)
        Self.open(key, .reliableMessage, on: &pair)
        var generator = SeededRandom(seed: 302)
        let sends = (0..<40).map { _ in generator.bytes(16 * 1_024) }
        for (index, bytes) in sends.enumerated() {
            guard case .queued = pair.a.enqueue(key, bytes: bytes, timestamp: UInt64(index), now: pair.now) else {
                Issue.record("send \(index) was refused")
                return
            }
        }
        let start = pair.now
        // 640 KiB at 8 Mbit/s takes 0.655 s to drain, over the 100 ms threshold from the start
        // (the queueing delay counts what is queued at the cap): raised at once.
        let raised = pair.run(until: { $0.eventsA.contains(.tooLongQueuedData(key, enabled: true)) }, limit: .seconds(1))
        #expect(raised)
        #expect(pair.now == start)
        // Cleared only once what is left drains in 20 ms: not before most of it went out.
        let cleared = pair.run(until: { $0.eventsA.contains(.tooLongQueuedData(key, enabled: false)) }, limit: .seconds(5))
        #expect(cleared)
        #expect(pair.now - start >= .milliseconds(550))
        let drained = pair.runUntilIdle(limit: .seconds(5))
        #expect(drained)
        let eventsAtAlice = pair.takeEventsA()
        #expect(eventsAtAlice.filter { if case .tooLongQueuedData = $0 { true } else { false } }
            == [.tooLongQueuedData(key, enabled: true), .tooLongQueuedData(key, enabled: false)])
        let received = pair.takeEventsB().compactMap { event -> [UInt8]? in
            guard case .received(_, .message(let bytes, _)) = event else { return nil }
            return bytes
        }
        #expect(received == sends)
        // Paced, then 20 ms on the wire: the last byte lands after 0.655 s at the cap (less the
        // pacer's first burst) plus the path's delay.
        #expect(pair.now - start >= .milliseconds(640))
        #expect(pair.aToB.statistics.dropped == 0)
    }

    @Test("a partition drops every datagram both ways, counted; lifted, the call goes on")
    func partitionIsCounted() {
        var pair = Self.connected(aToB: Self.path(seed: 5), bToA: Self.path(seed: 6))
        let key = SessionKey(streamID: 304)
        Self.open(key, .unreliableMessage, on: &pair)
        pair.isPartitioned = true
        for index in 0..<10 { _ = pair.a.enqueue(key, bytes: [UInt8(index)], timestamp: UInt64(index), now: pair.now) }
        pair.advance(by: .milliseconds(500))
        #expect(pair.aToB.statistics.droppedByPartition == 10)
        let whilePartitioned = pair.takeEventsB()
        #expect(whilePartitioned.isEmpty)
        pair.isPartitioned = false
        _ = pair.a.enqueue(key, bytes: [42], timestamp: 42, now: pair.now)
        let delivered = pair.run(until: { !$0.eventsB.isEmpty }, limit: .seconds(1))
        #expect(delivered)
        let afterwards = pair.takeEventsB()
        #expect(afterwards == [.received(key, .message(bytes: [42], timestamp: 42))])
    }

    @Test("a hang-up reaches the peer after the path's delay: the goodbye is the last thing bob hears")
    func hangUpCrossesThePath() {
        var pair = Self.connected(aToB: Self.path(delay: .milliseconds(50), seed: 8), bToA: Self.path(seed: 9))
        let sentAt = pair.now
        pair.a.hangUp()
        let ended = pair.run(until: { $0.b.isEnded }, limit: .seconds(1))
        #expect(ended)
        #expect(pair.now - sentAt >= .milliseconds(50))
        let atAlice = pair.takeEventsA()
        #expect(atAlice == [.disconnected(.localHangUp)])
        let atBob = pair.takeEventsB()
        #expect(atBob == [.disconnected(.remoteHangUp)])
    }
}

import Conduit
import ConduitCore
import ConduitImpairment
import ConduitRelay
import ConduitTesting
import Testing
import ConduitRelayCore

/// A conference through a loopback relay on a ``VirtualClock``: the call's time-dependent
/// behaviour holds for conferences too (they share the driver), checked on virtual time.
@Suite("Conference on virtual time")
struct ConferenceVirtualTimeTests {
    @Test("rate cap on virtual time: 1 MiB at 8 Mbit/s to the room raises tooLongQueuedData once, clears it once, and all of it arrives")
    func rateCapOnVirtualTime() async throws {
        let clock = VirtualClock()
        let room = try await LoopbackRoom.start(name: "relay-virtual-rate-cap") {
            $0.rateLimit = .bitsPerSecond(8_000_000)
            $0.queueDelayOn = .milliseconds(100)
            $0.queueDelayOff = .milliseconds(20)
            $0.reassembly.incompleteTimeout = .seconds(3_600)
        }
        var runtime = room.runtime
        runtime.clock = clock
        let (alice, _) = try await room.join("alice", runtime: runtime)
        let (bob, bobLog) = try await room.join("bob", runtime: runtime)

        let outbound = try await alice.makeOutboundDataSession(streamID: 100, type: .reliableBytes)
        let outboundEvents = TSanVisibleMutex<[OutboundDataSession.Event]>([])
        let watcher = Task { for await event in outbound.events { outboundEvents.withLock { $0.append(event) } } }
        defer { watcher.cancel() }
        let announced = await clock.advance(by: .milliseconds(10), until: {
            bobLog.all.contains(.dataSessionIncoming(streamID: 100, subgroup: nil, type: .reliableBytes, from: "alice"))
        }, limit: .seconds(1))
        try #require(announced)
        let inbound = try await bob.makeInboundDataSession(streamID: 100)
        let fragments = TSanVisibleMutex<[ReceivedFragment]>([])
        let reader = Task {
            for await event in inbound.events { if case .fragment(let fragment) = event { fragments.withLock { $0.append(fragment) } } }
        }
        defer { reader.cancel() }

        var generator = SeededRandom(seed: 100)
        let payload = generator.bytes(1024 * 1024)
        try await outbound.send(payload, timestamp: 100)

        #expect(await clock.advance(by: .milliseconds(10), until: { !outboundEvents.withLock { $0.isEmpty } }, limit: .seconds(1)))
        #expect(outboundEvents.withLock { $0 } == [.tooLongQueuedData(enabled: true)])
        let total: @Sendable () -> Int = { fragments.withLock { $0.reduce(0) { $0 + $1.bytes.count } } }
        #expect(total() < payload.count)

        let delivered = await clock.advance(
            by: .milliseconds(10), until: { total() == payload.count && outboundEvents.withLock { $0.count } == 2 }, limit: .seconds(60)
        )
        #expect(delivered, "\(total()) of \(payload.count) bytes arrived by \(clock.now()); alice's events \(outboundEvents.withLock { $0 }); bob's \(bobLog.all)")
        #expect(outboundEvents.withLock { $0 } == [.tooLongQueuedData(enabled: true), .tooLongQueuedData(enabled: false)])
        var aggregator = FragmentAggregator(streamID: 100, sessionType: .reliableBytes)
        #expect(fragments.withLock { $0 }.compactMap { aggregator.add($0) }.map(\.bytes) == [payload])
        await alice.leave()
        await bob.leave()
        await room.server.shutdown()
    }

    @Test("the relay's peer-list coalescing runs on its injected clock: a join reaches the room once the interval passed on it")
    func peerListOnVirtualTime() async throws {
        let clock = VirtualClock()
        var relay = RelayConfiguration()
        relay.peerListBaseInterval = .milliseconds(500)
        relay.peerListMaxInterval = .milliseconds(500)
        relay.vanishTimeout = .seconds(3_600)
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        let runtime = ConduitRuntime(configuration: configuration)
        let server = RelayServer(authority: RelayTokenAuthority(secret: LoopbackRoom.secret), configuration: relay, registry: runtime.registry, clock: clock)
        let bound = try await server.listen(on: "loopback://relay-virtual-peer-list")
        let room = LoopbackRoom(runtime: runtime, server: server, url: bound.description)
        let (alice, aliceLog) = try await room.join("alice")
        let (bob, _) = try await room.join("bob")

        // No relay time has passed: bob's join is still being coalesced.
        await clock.settle()
        #expect(!aliceLog.all.contains { $0.joinedPeers == ["bob"] })
        let heard = await clock.advance(by: .milliseconds(50), until: { aliceLog.all.contains { $0.joinedPeers == ["bob"] } }, limit: .seconds(2))
        #expect(heard)
        #expect(clock.now() >= .zero + .milliseconds(500))
        await alice.leave()
        await bob.leave()
        await server.shutdown()
    }
}

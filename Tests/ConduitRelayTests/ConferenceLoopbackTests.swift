import Conduit
import ConduitCore
import ConduitRelay
import ConduitTesting
import Testing
import ConduitRooms
import ConduitRelayCore

/// The relay server and the `Conference` client end to end over the in-process loopback
/// transport: every test starts its own relay on its own name.
@Suite struct ConferenceLoopbackTests {
    @Test func joinPeerListAndLeave() async throws {
        let room = try await LoopbackRoom.start(name: "relay-join")
        let (alice, aliceLog) = try await room.join("alice")
        let (bob, bobLog) = try await room.join("bob")
        #expect(await bob.peers == ["alice"])
        try await aliceLog.wait(for: "alice hears bob joined") { $0.joinedPeers == ["bob"] }
        let (carol, _) = try await room.join("carol")
        try await aliceLog.wait(for: "alice hears carol joined") { $0.joinedPeers == ["carol"] }
        #expect(await alice.peers.sorted() == ["bob", "carol"])

        await bob.leave()
        #expect(await bob.isEnded)
        try await bobLog.wait(for: "bob's disconnected event") { $0 == .disconnected(.left, "left the room") }
        try await aliceLog.wait(for: "alice hears bob left") { $0.leftPeers == ["bob"] }
        #expect(await alice.peers == ["carol"])
        await alice.leave()
        await carol.leave()
        await room.server.shutdown()
    }

    @Test func aRefusedJoinThrowsWithTheReason() async throws {
        let room = try await LoopbackRoom.start(name: "relay-refuse")
        let expired = RelayToken(room: "room", peer: "eve", canPublish: true, canSubscribe: true, expiresAt: RelayServer.unixTime() - 10).signed(with: LoopbackRoom.secret)
        await #expect(throws: ConduitError.self) {
            _ = try await room.runtime.join(relay: room.url, room: "room", as: "eve", token: expired)
        }
        do {
            _ = try await room.runtime.join(relay: room.url, room: "room", as: "eve", token: room.token("eve", room: "elsewhere"))
            Issue.record("a token for another room was accepted")
        } catch {
            #expect(error.message.contains("wrongRoom"))
        }
        let statistics = await room.server.statistics
        #expect(statistics.refusals(.tokenExpired) == 1)
        #expect(statistics.refusals(.wrongRoom) == 1)
        #expect(statistics.bytesRelayed == 0)
        await room.server.shutdown()
    }

    @Test func dataToEveryoneToOnePeerAndToASubgroup() async throws {
        let room = try await LoopbackRoom.start(name: "relay-data")
        let (alice, _) = try await room.join("alice")
        let (bob, bobLog) = try await room.join("bob")
        let (carol, carolLog) = try await room.join("carol")
        try await bobLog.wait(for: "bob knows carol") { $0.joinedPeers == ["carol"] }

        let chat = try await alice.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        try await bobLog.wait(for: "incoming at bob") { $0 == .dataSessionIncoming(streamID: 100, subgroup: nil, type: .reliableMessage, from: "alice") }
        try await carolLog.wait(for: "incoming at carol") { $0 == .dataSessionIncoming(streamID: 100, subgroup: nil, type: .reliableMessage, from: "alice") }
        let bobChat = try await bob.makeInboundDataSession(streamID: 100)
        let carolChat = try await carol.makeInboundDataSession(streamID: 100)

        try await chat.send(Array("hello all".utf8))
        #expect(await chat.changeDestination("carol"))
        try await chat.send(Array("psst carol".utf8))
        #expect(await chat.changeDestination(nil))
        try await chat.send(Array("bye all".utf8))
        let atBob = try await read(bobChat, count: 2)
        let atCarol = try await read(carolChat, count: 3)
        #expect(atBob.map(\.1) == ["hello all", "bye all"])
        #expect(atCarol.map(\.1) == ["hello all", "psst carol", "bye all"])
        #expect((atBob + atCarol).allSatisfy { $0.0 == "alice" })

        // A subgroup: alice and carol only; same stream ID, another session.
        #expect(await alice.subscribe("pair"))
        #expect(await carol.subscribe("pair"))
        let pair = try await alice.makeOutboundDataSession(streamID: 100, type: .reliableMessage, subgroup: "pair")
        try await carolLog.wait(for: "subgroup incoming at carol") { $0 == .dataSessionIncoming(streamID: 100, subgroup: "pair", type: .reliableMessage, from: "alice") }
        let carolPair = try await carol.makeInboundDataSession(streamID: 100, subgroup: "pair")
        try await pair.send(Array("just us".utf8))
        #expect(try await read(carolPair, count: 1).map(\.1) == ["just us"])
        try await chat.send(Array("main again".utf8))
        #expect(try await read(bobChat, count: 1).map(\.1) == ["main again"])
        #expect(!bobLog.all.contains { if case .dataSessionIncoming(_, "pair"?, _, _) = $0 { true } else { false } })

        // Leaving the subgroup ends alice's subgroup session for carol too.
        await alice.unsubscribe("pair")
        try await carolLog.wait(for: "carol hears the subgroup session ended") {
            $0 == .dataSessionEnded(streamID: 100, subgroup: "pair", from: "alice", reason: .sessionEnd)
        }
        #expect(await pair.closeReason == .sessionEnd)
        for peer in [alice, bob, carol] { await peer.leave() }
        await room.server.shutdown()
    }

    @Test func aLateJoinerIsToldOnceDataFlowsAndUnsupportStopsOnlyThatReceiver() async throws {
        let room = try await LoopbackRoom.start(name: "relay-late")
        let (alice, _) = try await room.join("alice")
        let (bob, bobLog) = try await room.join("bob")
        let ticker = try await alice.makeOutboundDataSession(streamID: 300, type: .reliableMessage)
        try await bobLog.wait(for: "incoming at bob") { if case .dataSessionIncoming = $0 { true } else { false } }
        let bobTicker = try await bob.makeInboundDataSession(streamID: 300)
        try await ticker.send(Array("1".utf8))
        #expect(try await read(bobTicker, count: 1).map(\.1) == ["1"])

        let (carol, carolLog) = try await room.join("carol")
        let (dave, daveLog) = try await room.join("dave")
        try await ticker.send(Array("2".utf8))
        try await carolLog.wait(for: "late incoming at carol") { $0 == .dataSessionIncoming(streamID: 300, subgroup: nil, type: .reliableMessage, from: "alice") }
        try await daveLog.wait(for: "late incoming at dave") { if case .dataSessionIncoming = $0 { true } else { false } }
        let carolTicker = try await carol.makeInboundDataSession(streamID: 300)
        await dave.unsupportInboundDataSession(streamID: 300)
        // Let dave's refusal reach the relay before more data flows, without polling: dave's
        // session layer sends everything in one order (the refusal, then this subscribe), the
        // loopback link keeps it, and the relay confirms the subscribe only after handling both.
        #expect(await dave.subscribe("dave-barrier", dataSession: false))
        try await ticker.send(Array("3".utf8))
        // carol saw "2" (held until she made her session), never "1".
        let atCarol = try await read(carolTicker, count: 1)
        #expect(atCarol.map(\.1) == ["2"])
        // The sender carries on; bob still gets everything in order.
        #expect(await ticker.closeReason == nil)
        let atBob = try await read(bobTicker, count: 2)
        #expect(atBob.map(\.1) == ["2", "3"])
        // The relay dropped "3" for dave, once, as it fanned it out to bob: dave's refusal had
        // reached it first.
        #expect(await room.server.statistics.droppedUnsupported == 1)
        #expect(await dave.inboundDataSession(streamID: 300) == nil)
        for peer in [alice, bob, carol, dave] { await peer.leave() }
        await room.server.shutdown()
    }

    @Test func aSlowReceiverIsDisconnectedAndTheOthersCarryOn() async throws {
        let room = try await LoopbackRoom.start(
            // Small link windows and buffers, so that a receiver that stops reading backs up to the
            // relay quickly; a paced sender, so that a receiver that does read keeps up.
            name: "relay-slow?window=65536",
            relay: RelayConfiguration(maxQueuedBytesPerReceiver: 512 * 1024, maxUnreliableQueuedBytesPerReceiver: 64 * 1024)
        ) {
            $0.inboundBufferBytes = 64 * 1024
            $0.rateLimit = .bitsPerSecond(16_000_000)
        }
        let (alice, _) = try await room.join("alice")
        let (bob, bobLog) = try await room.join("bob")
        let (carol, carolLog) = try await room.join("carol")
        let bulk = try await alice.makeOutboundDataSession(streamID: 500, type: .reliableMessage)
        try await bobLog.wait(for: "incoming at bob") { if case .dataSessionIncoming = $0 { true } else { false } }
        try await carolLog.wait(for: "incoming at carol") { if case .dataSessionIncoming = $0 { true } else { false } }
        let bobBulk = try await bob.makeInboundDataSession(streamID: 500)
        let carolBulk = try await carol.makeInboundDataSession(streamID: 500)  // and never read

        let count = 150
        let reader = Task { try await read(bobBulk, count: count, limit: .seconds(30)) }
        for index in 0..<count {
            try await bulk.send(Array("\(index):".utf8) + [UInt8](repeating: 0x2A, count: 8 * 1024))
        }
        let atBob = try await reader.value
        #expect(atBob.count == count)
        let order: [String] = atBob.map { String($0.1.prefix(while: { $0 != ":" })) }
        let expected: [String] = (0..<count).map { String($0) }
        #expect(order == expected)
        #expect(await room.server.statistics.slowReceiversDisconnected == 1)
        // carol learns why once she reads again (within the writer's grace: 2 s).
        let drain = Task { for await _ in carolBulk.events {} }
        try await carolLog.wait(for: "carol told she was too slow") {
            if case .disconnected(.slowReceiver, _) = $0 { true } else { false }
        }
        drain.cancel()
        // Isolated, carol was a member until her link ended: the relay closed it once the reason
        // was written, and read what it still held from her first.
        try await within("carol leaves the room", limit: .seconds(30)) { await room.server.waitUntil { $0.members(of: "room").count == 2 } }
        #expect(await room.server.members(of: "room").values.sorted() == ["alice", "bob"])
        await alice.leave()
        await bob.leave()
        await room.server.shutdown()
    }

    @Test func extensionMessagesCarryTheSender() async throws {
        let room = try await LoopbackRoom.start(name: "relay-ext")
        let (alice, aliceLog) = try await room.join("alice")
        let (bob, bobLog) = try await room.join("bob")
        try await aliceLog.waitForPeers(["bob"], of: alice)
        #expect(await alice.sendExtension(2, to: "bob", body: Array("join me".utf8)))
        try await bobLog.wait(for: "the extension") { $0 == .extensionReceived(id: 2, from: "alice", body: Array("join me".utf8)) }
        await alice.leave()
        await bob.leave()
        await room.server.shutdown()
    }

    @Test func shutdownDisconnectsEveryMember() async throws {
        let room = try await LoopbackRoom.start(name: "relay-shutdown")
        let (alice, aliceLog) = try await room.join("alice")
        await room.server.shutdown()
        try await aliceLog.wait(for: "alice told the relay is going") { $0 == .disconnected(.relayShutdown, "the relay is shutting down") }
        #expect(await alice.isEnded)
    }
}

extension Conference.Event {
    var joinedPeers: [PeerID]? {
        if case .peersChanged(let joined, _, _) = self, !joined.isEmpty { return joined }
        return nil
    }

    var leftPeers: [PeerID]? {
        if case .peersChanged(_, let left, _) = self, !left.isEmpty { return left }
        return nil
    }
}

extension ConferenceLoopbackTests {
    @Test func aVanishedPeerIsTimedOutAndReportedLeft() async throws {
        // The relay and alice share a virtual clock: alice pings every 5 s of it, the relay times
        // out whoever it has not heard for 6 s of it, and no wall-clock time has to pass.
        let clock = VirtualClock()
        // Longer than the clients' 5 s ping interval, so that only the silent peer vanishes.
        let room = try await LoopbackRoom.start(name: "relay-vanish", relay: RelayConfiguration(vanishTimeout: .seconds(6)), clock: clock)
        let (alice, aliceLog) = try await room.join("alice")
        // "ghost" joins by hand on a raw link and then says nothing, not even a ping.
        let (transport, url) = try room.runtime.registry.resolve(room.url)
        let link = try await transport.connect(to: url)
        var join = DatagramBatch()
        join.append(RoomControlFrame.join(room: "room", peer: "ghost", dataSessionsSupported: true, token: Array(room.token("ghost").utf8)).encoded)
        try await link.write(join)
        let joined = await clock.advance(by: .milliseconds(50), until: { aliceLog.all.contains { $0.joinedPeers == ["ghost"] } }, limit: .seconds(2))
        try #require(joined, "alice sees ghost join")
        let joinedAt = clock.now()
        let left = await clock.advance(by: .milliseconds(100), until: { aliceLog.all.contains { $0.leftPeers == ["ghost"] } }, limit: .seconds(20))
        try #require(left, "alice hears ghost left")
        // Not before the relay had heard nothing from ghost for 6 s; alice, pinging, stays.
        #expect(clock.now() >= joinedAt + .seconds(5))
        #expect(await room.server.statistics.vanished == 1)
        #expect(await room.server.members(of: "room").values.sorted() == ["alice"])
        await link.close()
        await alice.leave()
        await room.server.shutdown()
    }

    @Test func unreliableDataToASlowReceiverIsDroppedAndCountedWithoutDisconnectingIt() async throws {
        let room = try await LoopbackRoom.start(
            name: "relay-slow-unreliable?window=65536",
            relay: RelayConfiguration(maxQueuedBytesPerReceiver: 4 * 1024 * 1024, maxUnreliableQueuedBytesPerReceiver: 64 * 1024)
        ) { $0.inboundBufferBytes = 64 * 1024 }
        let (alice, _) = try await room.join("alice")
        let (carol, carolLog) = try await room.join("carol")
        let cursor = try await alice.makeOutboundDataSession(streamID: 600, type: .unreliableMessage)
        try await carolLog.wait(for: "incoming at carol") { if case .dataSessionIncoming = $0 { true } else { false } }
        let carolCursor = try await carol.makeInboundDataSession(streamID: 600)  // never read while alice sends
        for index in 0..<300 {
            try await cursor.send(Array("\(index):".utf8) + [UInt8](repeating: 0x2E, count: 4 * 1024))
        }
        try await within("drops at the relay") { await room.server.waitUntil { $0.statistics.unreliableDropped > 0 } }
        #expect(await room.server.statistics.slowReceiversDisconnected == 0)
        #expect(await room.server.members(of: "room").count == 2)
        // carol, reading again, gets what was kept: fewer than sent, in order, none twice.
        let (firstArrived, arrived) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let reader = Task { () -> [Int] in
            var indices: [Int] = []
            for await event in carolCursor.events {
                guard case .message(let message) = event else { continue }
                indices.append(Int(String(decoding: message.bytes.prefix(while: { $0 != UInt8(ascii: ":") }), as: UTF8.self)) ?? -1)
                arrived.yield()
            }
            return indices
        }
        // Once something the relay kept has arrived, carol leaves, which ends the session.
        try await within("the first message kept") { for await _ in firstArrived { break } }
        await carol.leave()
        let kept = try await within("carol's session to end") { await reader.value }
        #expect(kept.count < 300)
        #expect(kept.count > 0)
        #expect(kept == kept.sorted() && Set(kept).count == kept.count)
        await alice.leave()
        await room.server.shutdown()
    }
}

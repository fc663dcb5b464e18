import Conduit
import ConduitCore
import ConduitRooms
import ConduitRelay
import Testing

/// Twilio-style data tracks: publish, subscribe, only what is sent after subscribing, the
/// reliability on the wire, and the lifetime carried end to end with the relay's holding time taken off.
@Suite struct DataTrackTests {
    func room(_ names: [String]) -> RoomHarness {
        var h = RoomHarness()
        for name in names { h.join(name) }
        h.advance(by: .seconds(1))
        for name in names { _ = h.take(name) }
        return h
    }

    func trackMessages(_ h: RoomHarness, _ name: String) -> [String] {
        h.clients[name]!.events.compactMap {
            guard case .trackMessage(_, _, let bytes) = $0 else { return nil }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    mutating func send(_ h: inout RoomHarness, _ text: String, on track: ChannelLabel = "whiteboard", from name: String = "alice") {
        let result = h.clients[name]!.machine.sendTrack(track, bytes: Array(text.utf8), now: h.now)
        #expect({ if case .queued = result { true } else { false } }())
        h.pump()
    }

    @Test func wireRoundTrip() throws {
        for reliability in [Reliability.reliableOrdered, Reliability(ordered: false, limit: .maxRetransmits(3)),
                            Reliability(ordered: true, limit: .maxPacketLifeTime(milliseconds: 1_500))] {
            let header = TrackFrameHeader(trackID: 7, reliability: reliability)
            let bytes = header.bytes + [0]
            let parsed = try bytes.withUnsafeBytes { raw in try TrackFrameHeader.parse(raw) }
            #expect(parsed == header)
            let control = RoomControlFrame.trackPublished(TrackInfo(trackID: 7, publisher: 2, name: "t", reliability: reliability))
            #expect(try RoomControlFrame.parse(control.encoded) == control)
        }
        // Both limits at once cannot even be expressed (Reliability refuses it).
        #expect(throws: ConduitError.self) { try Reliability(ordered: true, maxRetransmits: 1, maxPacketLifeTime: 100) }
        #expect(throws: WireError.self) { try ([0x15, 0x60, 0, 1, 0, 0, 0, 0, 0] as [UInt8]).withUnsafeBytes { try TrackFrameHeader.parse($0) } }
    }

    @Test func aSubscriberGetsOnlyWhatIsSentAfterItSubscribed() {
        var test = self
        var h = room(["alice", "bob", "carol"])
        #expect(h.clients["alice"]!.machine.publishTrack("whiteboard", reliability: .reliableOrdered) == true)
        h.pump()
        #expect(h.clients["alice"]!.machine.isTrackPublished("whiteboard"))
        #expect(h.clients["bob"]!.events.contains(.trackPublished("whiteboard", by: "alice", .reliableOrdered)))
        #expect(h.clients["bob"]!.machine.subscribeTrack("whiteboard", of: "alice") == true)
        h.pump()
        for number in 1...5 { test.send(&h, "\(number)") }
        #expect(h.clients["carol"]!.machine.subscribeTrack("whiteboard", of: "alice") == true)
        h.pump()
        for number in 6...10 { test.send(&h, "\(number)") }
        // A late joiner learns of the track when it joins.
        h.join("dave")
        #expect(h.clients["dave"]!.events.contains(.trackPublished("whiteboard", by: "alice", .reliableOrdered)))
        #expect(test.trackMessages(h, "bob") == (1...10).map(\.description))
        #expect(test.trackMessages(h, "carol") == (6...10).map(\.description))
        #expect(test.trackMessages(h, "dave").isEmpty)
        // Unpublishing tells everyone; sends are refused after.
        h.clients["alice"]!.machine.unpublishTrack("whiteboard")
        h.pump()
        #expect(h.clients["carol"]!.events.contains(.trackUnpublished("whiteboard", by: "alice")))
        let after = h.clients["alice"]!.machine.sendTrack("whiteboard", bytes: [1], now: h.now)
        #expect({ if case .failed = after { true } else { false } }())
    }

    @Test("the queue tracks and channels share: full, room again at half, and nothing queued once the conference ended")
    func theSharedQueueRefusesThenHasRoomAndRefusesAfterTheEnd() {
        var session = CallConfiguration(rateLimit: .unlimited)
        session.maxQueuedBytesPerSession = 4_096
        var h = RoomHarness()
        for name in ["alice", "bob"] { h.join(name, session: session) }
        h.advance(by: .seconds(1))
        _ = h.clients["alice"]!.machine.publishTrack("whiteboard", reliability: .reliableOrdered)
        h.pump()
        // Not pumped: the queue fills; the first message past the cap is refused.
        var queued = 0
        while case .queued = h.clients["alice"]!.machine.sendTrack("whiteboard", bytes: Array(repeating: 7, count: 1_000), now: h.now) { queued += 1 }
        // Each message is one frame: its 1,000 bytes behind a track header and a data frame header.
        #expect(queued == 4_096 / (1_000 + TrackFrameHeader.size + DataFrameHeader.size))
        #expect(!h.clients["alice"]!.machine.trackQueueHasRoom)
        h.pump()
        #expect(h.clients["alice"]!.machine.trackQueueHasRoom)
        #expect({ if case .queued = h.clients["alice"]!.machine.sendTrack("whiteboard", bytes: [1], now: h.now) { true } else { false } }())
        // Ended, its queue is gone: a send fails saying so (it used to be queued where nothing
        // would ever send it), and a sender waiting for room is let go to find that out.
        h.clients["alice"]!.machine.leave()
        #expect(h.clients["alice"]!.machine.trackQueueHasRoom)
        let track = h.clients["alice"]!.machine.sendTrack("whiteboard", bytes: [2], now: h.now)
        #expect({ if case .failed(let error) = track { error.code == .connectionClosed } else { false } }())
        let channel = h.clients["alice"]!.machine.sendChannel("#any", bytes: [3], compressed: false, now: h.now)
        #expect({ if case .failed(let error) = channel { error.code == .connectionClosed } else { false } }())
    }

    @Test func aTrackAnnouncedBeforeItsPublisherIsListedComesWithThePeer() {
        var h = room(["alice", "bob"])
        h.join("carol")
        h.pump()
        #expect(h.clients["carol"]!.machine.publishTrack("whiteboard", reliability: .reliableOrdered) == true)
        h.pump()
        // The relay coalesces peer lists, so bob hears of carol's track before he knows carol.
        let isPeersChanged: (ConferenceEvent) -> Bool = { if case .peersChanged = $0 { true } else { false } }
        #expect(!h.clients["bob"]!.events.contains(where: isPeersChanged))
        h.advance(by: .seconds(1))
        let events = h.take("bob")
        let announcement = ConferenceEvent.trackPublished("whiteboard", by: "carol", .reliableOrdered)
        let joined = events.firstIndex(where: isPeersChanged)
        let published = events.firstIndex(of: announcement)
        #expect(joined != nil && published != nil && joined! < published!, "\(events)")
        #expect(events.filter { $0 == announcement }.count == 1)
        #expect(h.clients["bob"]!.machine.subscribeTrack("whiteboard", of: "carol") == true)
    }

    @Test func largeMessagesAreFragmentedAndReassembled() {
        var h = room(["alice", "bob"])
        _ = h.clients["alice"]!.machine.publishTrack("files", reliability: .reliableOrdered)
        h.pump()
        _ = h.clients["bob"]!.machine.subscribeTrack("files", of: "alice")
        h.pump()
        let big = (0..<16_384).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        _ = h.clients["alice"]!.machine.sendTrack("files", bytes: big, now: h.now)
        h.pump()
        #expect(h.clients["bob"]!.events.contains(.trackMessage("files", from: "alice", big)))
    }

    @Test func onlyThePublisherSendsOnItsTrack() {
        var h = room(["alice", "bob", "carol"])
        _ = h.clients["alice"]!.machine.publishTrack("whiteboard", reliability: .reliableOrdered)
        h.pump()
        _ = h.clients["carol"]!.machine.subscribeTrack("whiteboard", of: "alice")
        h.pump()
        let id = h.clients["bob"]!.events.compactMap { event -> UInt16? in
            if case .trackPublished = event { return h.relayTrackID("whiteboard") }
            return nil
        }.first ?? 0
        // bob forges a frame on alice's track.
        var batch = DatagramBatch()
        var fragmenter = Fragmenter(streamID: 100, sessionType: .reliableMessage, subgroupID: id, messageID: 0, totalLength: 4, fragmentSize: 1_000, timestamp: 0)
        Array("fake".utf8).withUnsafeBytes { fragmenter.emitAll(of: $0, into: &batch) }
        h.inject("bob", TrackFrameHeader(trackID: id, reliability: .reliableOrdered).bytes + batch[0])
        #expect(h.relay.statistics.refusals(.forgedSender) == 1)
        #expect(h.relay.statistics.bytesRelayed == 0)
        #expect(DataTrackTests().trackMessages(h, "carol").isEmpty)
    }

    @Test func theLifetimeIsEndToEndAndTheRelaySubtractsItsHoldingTime() throws {
        var h = room(["alice", "bob", "carol"])
        let lifetime = Reliability(ordered: false, limit: .maxPacketLifeTime(milliseconds: 1_000))
        _ = h.clients["alice"]!.machine.publishTrack("cursor", reliability: lifetime)
        h.pump()
        for name in ["bob", "carol"] { _ = h.clients[name]!.machine.subscribeTrack("cursor", of: "alice") }
        h.pump()
        // carol's link stalls: the relay holds her copies.
        h.clients["carol"]!.stalled = true
        _ = h.clients["alice"]!.machine.sendTrack("cursor", bytes: Array("x=1".utf8), now: h.now)
        // 300 ms pass at alice before the frame leaves her queue.
        h.now = h.now + .milliseconds(300)
        var out = DatagramBatch()
        h.clients["alice"]!.machine.pollTransmit(now: h.now, into: &out)
        #expect(TrackFrameHeader.remainingLifetime(out[0]) == 700)
        #expect(out.tag(at: 0).delivery == Reliability(ordered: false, limit: .maxPacketLifeTime(milliseconds: 700)))
        h.relay.handle(h.clients["alice"]!.connection, batch: out, now: h.now)
        // 400 ms more at the relay before carol's copy is written out; bob's goes at once.
        var toBob = DatagramBatch()
        h.relay.pollTransmit(h.clients["bob"]!.connection, into: &toBob, now: h.now)
        #expect(TrackFrameHeader.remainingLifetime(toBob[0]) == 700)
        var toCarol = DatagramBatch()
        h.relay.pollTransmit(h.clients["carol"]!.connection, into: &toCarol, now: h.now + .milliseconds(400))
        #expect(TrackFrameHeader.remainingLifetime(toCarol[0]) == 300)
        // A second message held past its lifetime is dropped at the relay and counted.
        _ = h.clients["alice"]!.machine.sendTrack("cursor", bytes: Array("x=2".utf8), now: h.now)
        out.removeAll()
        h.clients["alice"]!.machine.pollTransmit(now: h.now, into: &out)
        h.relay.handle(h.clients["alice"]!.connection, batch: out, now: h.now)
        var late = DatagramBatch()
        h.relay.pollTransmit(h.clients["carol"]!.connection, into: &late, now: h.now + .milliseconds(1_000))
        #expect(late.isEmpty)
        #expect(h.relay.statistics.expiredInRelay == 1)
        // And the link under each leg gives up by what is left: the relay tags the frame with the
        // track's channel and the remaining lifetime for the reliability engine.
        let trackID = try #require(h.clients["alice"]!.machine.announcedTrackID("cursor"))
        #expect(toCarol.tag(at: 0) == FrameTag(
            channel: FrameTag.trackChannel(trackID),
            delivery: Reliability(ordered: false, limit: .maxPacketLifeTime(milliseconds: 300))
        ))
    }

    @Test func tracksEndToEndOnLoopback() async throws {
        let room = try await LoopbackRoom.start(name: "relay-tracks")
        let (alice, _) = try await room.join("alice")
        let (bob, bobLog) = try await room.join("bob")
        let reliability = try Reliability(ordered: true, maxRetransmits: nil, maxPacketLifeTime: 5_000)
        let board = try #require(await alice.publishDataTrack("whiteboard", reliability: reliability))
        try await bobLog.wait(for: "the track announced") { $0 == .dataTrackPublished("whiteboard", by: "alice", reliability: reliability) }
        let accepted = await room.server.statistics.framesAccepted
        #expect(try await board.send(Array("before".utf8)))
        // "before" has reached the relay (and gone nowhere) before bob subscribes.
        try await within("the relay took 'before'") { await room.server.waitUntil { $0.statistics.framesAccepted > accepted } }
        let remote = try #require(await bob.subscribeDataTrack("whiteboard", of: "alice"))
        for text in ["one", "two", "three"] { #expect(try await board.send(Array(text.utf8))) }
        let got = try await within("three track messages") {
            var texts: [String] = []
            for await message in remote.messages {
                texts.append(String(decoding: message, as: UTF8.self))
                if texts.count == 3 { break }
            }
            return texts
        }
        #expect(got == ["one", "two", "three"])
        await board.unpublish()
        try await bobLog.wait(for: "the track unpublished") { $0 == .dataTrackUnpublished("whiteboard", by: "alice") }
        await alice.leave()
        await bob.leave()
        await room.server.shutdown()
    }
}

extension RoomHarness {
    /// The relay's ID of a track, as announced to the members.
    func relayTrackID(_ name: ChannelLabel) -> UInt16? {
        for client in clients.values {
            if let id = client.machine.announcedTrackID(name) { return id }
        }
        return nil
    }
}

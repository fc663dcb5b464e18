import ConduitCore
import ConduitRooms
import Testing

/// The tags the conference and the relay write with their frames, read by the link below instead
/// of parsing them: a session's channel and delivery on both legs, a labeled channel's reliability,
/// the leave a barrier.
@Suite struct RoomFrameTagTests {
    func room(_ names: [String]) -> RoomHarness {
        var h = RoomHarness()
        for name in names { h.join(name, channels: [Self.chat]) }
        h.advance(by: .seconds(1))
        for name in names { _ = h.take(name) }
        return h
    }

    static let chat = try! ChannelDeclaration(label: "#chat", direction: .sendrecv, reliability: Reliability(ordered: false, limit: .maxRetransmits(2)))

    /// What `name` writes to the relay now.
    func sent(_ h: inout RoomHarness, _ name: String) -> DatagramBatch {
        var batch = DatagramBatch()
        h.clients[name]!.machine.pollTransmit(now: h.now, into: &batch)
        return batch
    }

    /// What the relay writes to `name` now.
    func relayed(_ h: inout RoomHarness, to name: String) -> DatagramBatch {
        var batch = DatagramBatch()
        h.relay.pollTransmit(h.clients[name]!.connection, into: &batch, maxBytes: .max, now: h.now)
        return batch
    }

    @Test func aSessionKeepsItsChannelAndDeliveryOnBothLegs() {
        var h = room(["alice", "bob"])
        let key = SessionKey(streamID: 150)
        #expect(h.clients["alice"]!.machine.makeOutbound(key, type: .unreliableBytes, now: h.now) == DataSessionFailReason.none)
        _ = h.clients["alice"]!.machine.enqueue(key, bytes: [1, 2, 3], timestamp: 0, now: h.now)
        let up = sent(&h, "alice")
        let session = FrameTag.session(stream: 150, subgroupID: 0, type: nil)
        let data = FrameTag(channel: 150, delivery: Reliability(ordered: false, limit: .maxRetransmits(0)))
        #expect((0..<up.count).map { up.tag(at: $0) } == [session, data], "the open reliably on the session's channel, then the data as its type says")
        h.relay.handle(h.clients["alice"]!.connection, batch: up, now: h.now)
        let down = relayed(&h, to: "bob")
        #expect((0..<down.count).map { down.tag(at: $0) } == [session, data], "the relay tags what it forwards the same way")
    }

    @Test func labeledChannelFramesCarryTheirReliability() {
        var h = room(["alice", "bob"])
        let channelID = h.clients["alice"]!.machine.channels["#chat"]!.channelID
        _ = h.clients["alice"]!.machine.sendChannel("#chat", bytes: [7], compressed: false, now: h.now)
        let up = sent(&h, "alice")
        let tag = FrameTag(channel: FrameTag.labeledChannel(channelID), delivery: Self.chat.reliability)
        #expect(up.count == 1)
        #expect(up.tag(at: 0) == tag)
        h.relay.handle(h.clients["alice"]!.connection, batch: up, now: h.now)
        let down = relayed(&h, to: "bob")
        #expect(down.count == 1)
        #expect(down.tag(at: 0) == tag)
    }

    @Test func leavingIsABarrierAndRoomControlIsNeutral() {
        var h = room(["alice", "bob"])
        h.clients["alice"]!.machine.subscribe("team", dataSession: true)
        let subscribe = sent(&h, "alice")
        #expect(subscribe.count == 1)
        #expect(subscribe.tag(at: 0) == .neutral)
        h.clients["alice"]!.machine.leave()
        let leave = sent(&h, "alice")
        #expect(leave.count == 1)
        #expect(leave.tag(at: 0) == .farewell)
    }
}

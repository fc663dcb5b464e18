import Conduit
import ConduitCore
import ConduitRooms
import ConduitRelay
import ConduitTesting
import Testing

/// Subgroups, data tracks and labeled channels in a room whose members sit on the two shards of
/// one relay (loopback: alice and carol on shard 0, bob on shard 1). A shard forwards a subgroup's,
/// track's or channel's frames once it has heard that a member of the other shard receives them;
/// a barrier (a main-room message from bob, which crosses on the same numbered room stream after
/// what bob's shard announced) tells the test that alice's shard has heard, without waiting on time.
@Suite("Room rules across the shards of one relay", .timeLimit(.minutes(2)))
struct ShardRoomRulesTests {
    /// A main-room message from `from` reaches `to`: everything `from`'s shard announced about
    /// the room before it has reached `to`'s shard.
    static func barrier(from: Lobbyist, to: Lobbyist, stream: StreamID = 300) async throws {
        let sync = try await from.conference.makeOutboundDataSession(streamID: stream, type: .reliableMessage)
        let sender = from.conference.localPeer
        try await to.room.wait(for: "the barrier's session at \(to.conference.localPeer)") {
            $0 == .dataSessionIncoming(streamID: stream, subgroup: nil, type: .reliableMessage, from: sender)
        }
        let inbound = try await to.conference.makeInboundDataSession(streamID: stream)
        try await sync.send(bytes("sync"))
        #expect(try await read(inbound, count: 1).map(\.1) == ["sync"])
    }

    @Test("a subgroup spans shards: its session reaches the subscriber on the other shard only, in order, and ends there when its creator unsubscribes")
    func subgroupAcrossShards() async throws {
        let relay = try await ShardedLobby.start(name: "shard-subgroup")
        let alice = try await relay.join("alice", room: "room")  // shard 0
        let bob = try await relay.join("bob", room: "room")  // shard 1
        let carol = try await relay.join("carol", room: "room")  // shard 0
        try await bob.room.waitUntilKnown(["alice", "carol"], by: "bob")
        #expect(await alice.conference.subscribe("pair"))
        #expect(await bob.conference.subscribe("pair"))
        try await Self.barrier(from: bob, to: alice)
        let pair = try await alice.conference.makeOutboundDataSession(streamID: 100, type: .reliableMessage, subgroup: "pair")
        try await bob.room.wait(for: "bob hears of alice's subgroup session") {
            $0 == .dataSessionIncoming(streamID: 100, subgroup: "pair", type: .reliableMessage, from: "alice")
        }
        let atBob = try await bob.conference.makeInboundDataSession(streamID: 100, subgroup: "pair")
        for text in ["one", "two", "three"] { try await pair.send(bytes(text)) }
        let got = try await read(atBob, count: 3)
        #expect(got.map(\.1) == ["one", "two", "three"])
        #expect(got.allSatisfy { $0.0 == "alice" })
        #expect(!carol.room.all.contains { if case .dataSessionIncoming(_, "pair"?, _, _) = $0 { true } else { false } })
        await alice.conference.unsubscribe("pair")
        try await bob.room.wait(for: "bob hears the subgroup session ended") {
            $0 == .dataSessionEnded(streamID: 100, subgroup: "pair", from: "alice", reason: .sessionEnd)
        }
        for member in [alice, bob, carol] { await member.conference.leave() }
        await relay.group.shutdown()
    }

    @Test("a data track spans shards: the subscriber on the other shard gets what is sent once its subscription crossed, in order")
    func dataTrackAcrossShards() async throws {
        let relay = try await ShardedLobby.start(name: "shard-track")
        let alice = try await relay.join("alice", room: "room")  // shard 0
        let bob = try await relay.join("bob", room: "room")  // shard 1
        let board = try #require(await alice.conference.publishDataTrack("whiteboard"))
        try await bob.room.wait(for: "the track announced on the other shard") { $0 == .dataTrackPublished("whiteboard", by: "alice", reliability: .reliableOrdered) }
        let remote = try #require(await bob.conference.subscribeDataTrack("whiteboard", of: "alice"))
        try await Self.barrier(from: bob, to: alice)
        for text in ["one", "two", "three"] { #expect(try await board.send(bytes(text))) }
        let got = try await within("bob's track messages") {
            var texts: [String] = []
            for await message in remote.messages {
                texts.append(String(decoding: message, as: UTF8.self))
                if texts.count == 3 { break }
            }
            return texts
        }
        #expect(got == ["one", "two", "three"])
        await board.unpublish()
        try await bob.room.wait(for: "the track unpublished on the other shard") { $0 == .dataTrackUnpublished("whiteboard", by: "alice") }
        for member in [alice, bob] { await member.conference.leave() }
        await relay.group.shutdown()
    }

    @Test("a labeled channel spans shards: the receiver on the other shard gets the messages in order, the sender header naming the sender")
    func labeledChannelAcrossShards() async throws {
        let relay = try await ShardedLobby.start(name: "shard-channel")
        let chat = try ChannelDeclaration(label: "#chat", direction: .sendrecv, protocolName: "chat-v1", senderHeader: true)
        let listening = try ChannelDeclaration(label: "#chat", direction: .recvonly, protocolName: "chat-v1", senderHeader: true)
        let alice = try await relay.join("alice", room: "room", channels: [chat])  // shard 0
        let bob = try await relay.join("bob", room: "room", channels: [listening])  // shard 1
        try await alice.room.waitForChannel("#chat")
        try await bob.room.waitForChannel("#chat")
        try await bob.room.waitUntilKnown(["alice"], by: "bob")
        try await Self.barrier(from: bob, to: alice)
        for text in ["one", "two", "three"] { #expect(try await alice.conference.sendChannelMessage("#chat", bytes(text))) }
        let bobConference = bob.conference
        let got = try await within("bob's channel messages") {
            var got: [Conference.ChannelMessage] = []
            for await message in bobConference.channelMessages {
                got.append(message)
                if got.count == 3 { break }
            }
            return got
        }
        #expect(got.map { String(decoding: Array($0.message), as: UTF8.self) } == ["one", "two", "three"])
        #expect(got.allSatisfy { $0.sender == "alice" && $0.headerLength == 2 && $0.header.count == 2 })
        for member in [alice, bob] { await member.conference.leave() }
        await relay.group.shutdown()
    }
}

import Conduit
import ConduitCore
import ConduitRooms
import ConduitRelay
import Testing

/// Data tracks and labeled channels are data streams: a consumer that does not read holds the
/// link (backpressure) and loses nothing, where they used to drop silently past 8,192 buffered.
@Suite struct DataStreamBackpressureTests {
    /// More messages than the 8,192 the old streams kept.
    static let count = 10_000
    /// Each receiver's stream holds this many bytes before its link stops being read.
    static let bufferBytes = 2_048

    /// Sends `count` numbered messages through `send`, which waits while the sender's queue is
    /// full (`waitForRoom`), in a task of its own: once every queue on the way is full, it waits
    /// for the reader. It must return true for every message.
    static func sendNumbers(_ send: @escaping @Sendable (Int) async throws -> Bool) -> Task<Int, any Error> {
        Task {
            var queued = 0
            for number in 0..<count where try await send(number) { queued += 1 }
            return queued
        }
    }

    /// Waits until `stream` holds its capacity unread and holds back what follows (the receiver
    /// then reads no more from its link), checks it went no further, then reads `count` messages
    /// and checks their order.
    static func expectHeldThenComplete<Element: Sendable>(_ stream: DataStream<Element>, _ text: @escaping @Sendable (Element) -> String) async throws {
        try await within("the unread stream to fill") { await stream.waitUntilFull() }
        // Bounded by its capacity (plus the one message that crossed it), whatever is still coming.
        #expect(stream.bufferedBytes >= stream.capacity)
        #expect(stream.bufferedBytes <= stream.capacity + 8)
        let got = try await within("\(count) messages", limit: .seconds(60)) {
            var got: [String] = []
            for await element in stream {
                got.append(text(element))
                if got.count == count { break }
            }
            return got
        }
        #expect(got.count == count)
        #expect(got == (0..<count).map { "\($0)" })
    }

    @Test func anUnreadTrackHoldsTheLinkAndLosesNothing() async throws {
        let room = try await LoopbackRoom.start(name: "relay-track-backpressure") { $0.inboundBufferBytes = Self.bufferBytes }
        let (alice, _) = try await room.join("alice")
        let (bob, bobLog) = try await room.join("bob")
        let board = try #require(await alice.publishDataTrack("whiteboard"))
        try await bobLog.wait(for: "the track announced") { if case .dataTrackPublished("whiteboard", by: "alice", _) = $0 { true } else { false } }
        let remote = try #require(await bob.subscribeDataTrack("whiteboard", of: "alice"))
        #expect(remote.messages.capacity == Self.bufferBytes)
        let sending = Self.sendNumbers { number in try await board.send(Array("\(number)".utf8), waitForRoom: true) }
        let messages: RemoteDataTrack.Messages = remote.messages
        try await Self.expectHeldThenComplete(messages) { String(decoding: $0, as: UTF8.self) }
        #expect(try await sending.value == Self.count)
        #expect(await room.server.statistics.slowReceiversDisconnected == 0)
        await alice.leave()
        await bob.leave()
        await room.server.shutdown()
    }

    @Test("a track send waiting for room throws once the conference ends, and does not hang")
    func aWaitingTrackSendEndsWithTheConference() async throws {
        let room = try await LoopbackRoom.start(name: "relay-track-wait-end") { $0.inboundBufferBytes = Self.bufferBytes }
        let (alice, _) = try await room.join("alice")
        let (bob, bobLog) = try await room.join("bob")
        let board = try #require(await alice.publishDataTrack("whiteboard"))
        try await bobLog.wait(for: "the track announced") { if case .dataTrackPublished("whiteboard", by: "alice", _) = $0 { true } else { false } }
        let remote = try #require(await bob.subscribeDataTrack("whiteboard", of: "alice"))
        // Bob reads the first message, then no more: every queue on the way fills, and the
        // sender waits for room until alice leaves.
        let sending = Self.sendNumbers { number in try await board.send(Array(repeating: UInt8(number & 0xFF), count: 1_024), waitForRoom: true) }
        var reader = remote.messages.makeAsyncIterator()
        #expect(await reader.next() != nil)
        await alice.leave()
        let result = await sending.result
        #expect(throws: ConduitError.self) { try result.get() }
        if case .failure(let error as ConduitError) = result { #expect(error.code == .connectionClosed) }
        await bob.leave()
        await room.server.shutdown()
    }

    @Test func unreadChannelMessagesHoldTheLinkAndLoseNothing() async throws {
        let room = try await LoopbackRoom.start(name: "relay-channel-backpressure") { $0.inboundBufferBytes = Self.bufferBytes }
        let declaration = try ChannelDeclaration(label: "#log", direction: .sendrecv, protocolName: "log-v1")
        let alice = try await room.runtime.join(relay: room.url, room: "room", as: "alice", token: room.token("alice"), channels: [declaration])
        let bob = try await room.runtime.join(relay: room.url, room: "room", as: "bob", token: room.token("bob"), channels: [declaration])
        let aliceLog = EventLog(alice), bobLog = EventLog(bob)
        try await aliceLog.waitForChannel("#log")
        try await bobLog.waitForChannel("#log")
        #expect(await alice.channels["#log"] != nil)
        #expect(await bob.channels["#log"] != nil)
        try await aliceLog.waitForPeers(["bob"], of: alice)
        let sending = Self.sendNumbers { number in try await alice.sendChannelMessage("#log", Array("\(number)".utf8), waitForRoom: true) }
        let messages: Conference.ChannelMessages = bob.channelMessages
        try await Self.expectHeldThenComplete(messages) { String(decoding: $0.message, as: UTF8.self) }
        #expect(try await sending.value == Self.count)
        #expect(await room.server.statistics.slowReceiversDisconnected == 0)
        await alice.leave()
        await bob.leave()
        await room.server.shutdown()
    }
}

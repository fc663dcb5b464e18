import Conduit
import ConduitCore
import ConduitRooms
import ConduitRelay
import Testing

/// Sora-style labeled channels: declared when joining by a `#` label with direction, reliability,
/// protocol, compression and an optional sender header whose length receivers are told.
@Suite struct LabeledChannelTests {
    static func declaration(_ direction: ChannelDeclaration.Direction, label: ChannelLabel = "#chat", header: Bool = true) -> ChannelDeclaration {
        try! ChannelDeclaration(label: label, direction: direction, protocolName: "chat-v1", senderHeader: header)
    }

    func messages(_ h: RoomHarness, _ name: String) -> [(PeerID, [UInt8], String)] {
        h.clients[name]!.events.compactMap {
            guard case .channelMessage(_, let from, let header, let bytes, _) = $0 else { return nil }
            return (from, header, String(decoding: bytes, as: UTF8.self))
        }
    }

    @Test func labelsMustStartWithAHash() throws {
        #expect(throws: ConduitError.self) { try ChannelDeclaration(label: "chat") }
        let bad = RoomControlFrame.declareChannels([try! ChannelDeclaration(label: "#ok")]).encoded
        var forged = bad
        // Rewrite the label's '#' to 'x' on the wire: the parser refuses it.
        if let index = forged.firstIndex(of: UInt8(ascii: "#")) { forged[index] = UInt8(ascii: "x") }
        #expect(throws: WireError.self) { try RoomControlFrame.parse(forged) }
        let frame = RoomControlFrame.channels([ChannelInfo(channelID: 3, declaration: Self.declaration(.recvonly))])
        #expect(try RoomControlFrame.parse(frame.encoded) == frame)
    }

    @Test func directionsHeadersAndRefusals() {
        var h = RoomHarness()
        h.join("alice", channels: [Self.declaration(.sendrecv)])
        h.join("bob", channels: [Self.declaration(.recvonly)])
        h.join("carol", channels: [Self.declaration(.sendonly)])
        // dave declares #chat with other options: refused, the label is not his.
        h.join("dave", channels: [try! ChannelDeclaration(label: "#chat", direction: .sendrecv, compress: true)])
        h.advance(by: .milliseconds(300))
        #expect(h.relay.statistics.refusals(.channelMismatch) == 1)
        #expect(h.clients["dave"]!.machine.channels.isEmpty)
        #expect(h.clients["bob"]!.events.contains { if case .channelsReady(let infos) = $0 { infos.map(\.headerLength) == [2] } else { false } })

        for (name, text) in [("alice", "from alice"), ("carol", "from carol")] {
            let result = h.clients[name]!.machine.sendChannel("#chat", bytes: Array(text.utf8), compressed: false, now: h.now)
            #expect({ if case .queued = result { true } else { false } }())
            h.pump()
        }
        let alice = h.member("alice")
        let carol = h.member("carol")
        // bob receives both, each with the sender's connection ID as a 2-byte header.
        let atBob = messages(h, "bob")
        #expect(atBob.map(\.2) == ["from alice", "from carol"])
        let senderHeaders: [[UInt8]] = [alice, carol].map { (member: UInt16) -> [UInt8] in [UInt8(member >> 8), UInt8(member & 0xFF)] }
        #expect(atBob.map(\.1) == senderHeaders)
        // alice (sendrecv) hears carol; carol (sendonly) hears nobody; dave is not on the channel.
        #expect(messages(h, "alice").map(\.2) == ["from carol"])
        #expect(messages(h, "carol").isEmpty)
        #expect(messages(h, "dave").isEmpty)
        // bob (recvonly) cannot send: refused by his client, and by the relay if forced.
        let refused = h.clients["bob"]!.machine.sendChannel("#chat", bytes: [1], compressed: false, now: h.now)
        #expect({ if case .failed = refused { true } else { false } }())
        let channelID = h.clients["bob"]!.machine.channels["#chat"]!.channelID
        h.inject("bob", Self.rawFrame(channel: channelID, sender: 0))
        #expect(h.relay.statistics.refusals(.receiveOnly) == 1)
        // A client that fills in the sender itself is forging.
        h.inject("alice", Self.rawFrame(channel: channelID, sender: carol))
        #expect(h.relay.statistics.refusals(.forgedSender) == 1)
        #expect(messages(h, "bob").count == 2)
    }

    static func rawFrame(channel: UInt16, sender: UInt16) -> [UInt8] {
        var batch = DatagramBatch()
        var fragmenter = Fragmenter(streamID: 100, sessionType: .reliableMessage, subgroupID: channel, messageID: 99, totalLength: 3, fragmentSize: 1_000, timestamp: 0)
        ([1, 2, 3] as [UInt8]).withUnsafeBytes { fragmenter.emitAll(of: $0, into: &batch) }
        return ChannelFrameHeader(channelID: channel, reliability: .reliableOrdered, compressed: false, sender: sender).bytes + batch[0]
    }

    @Test func compressedChannelEndToEndOnLoopback() async throws {
        let room = try await LoopbackRoom.start(name: "relay-channels")
        let declaration = try ChannelDeclaration(label: "#spam", direction: .sendrecv, reliability: try Reliability(ordered: false, maxRetransmits: 0),
                                                 protocolName: "abc", compress: true, senderHeader: true)
        let alice = try await room.runtime.join(relay: room.url, room: "room", as: "alice", token: room.token("alice"), channels: [declaration])
        let bob = try await room.runtime.join(relay: room.url, room: "room", as: "bob", token: room.token("bob"), channels: [declaration])
        let aliceLog = EventLog(alice)
        let bobLog = EventLog(bob)
        try await bobLog.wait(for: "channels ready") { if case .channelsReady(let infos) = $0 { infos.first?.headerLength == 2 } else { false } }
        try await aliceLog.waitForChannel("#spam")
        #expect(await alice.channels["#spam"] != nil)
        try await aliceLog.waitForPeers(["bob"], of: alice)
        let big = Array(String(repeating: "egg and spam ", count: 1_500).utf8)  // ~19 KiB, compresses well
        for payload in [Array("egg".utf8), big] { #expect(try await alice.sendChannelMessage("#spam", payload)) }
        let got = try await within("two channel messages") {
            var got: [Conference.ChannelMessage] = []
            for await message in bob.channelMessages {
                got.append(message)
                if got.count == 2 { break }
            }
            return got
        }
        #expect(got.map { Array($0.message) } == [Array("egg".utf8), big])
        #expect(got.allSatisfy { $0.sender == "alice" && $0.headerLength == 2 && $0.header.count == 2 })
        // Compressed on the wire: far fewer bytes crossed the relay than were sent.
        #expect(await room.server.statistics.bytesRelayed < big.count / 4)
        await alice.leave()
        await bob.leave()
        await room.server.shutdown()
    }
}

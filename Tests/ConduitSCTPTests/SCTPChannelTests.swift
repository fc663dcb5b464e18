#if SCTP
import ConduitCore
import ConduitSCTP
import Testing

/// Data channels between two of our own associations over real UDP sockets on 127.0.0.1.
@Suite("SCTP data channels", .timeLimit(.minutes(1)))
struct SCTPChannelTests {
    static func pair() async throws -> (listener: SCTPAssociationListener, client: SCTPAssociation, firstChannel: DataChannel, server: SCTPAssociation, accepted: DataChannel) {
        let listener = try await SCTPAssociation.listen(on: TransportURL(parsing: "sctp+udp://127.0.0.1:0"))
        let client = try await SCTPAssociation.connect(to: listener.localURL)
        let channel = try await client.openChannel(label: "first", protocol: "test/1")
        let server = try #require(await listener.accept())
        let accepted = try #require(await server.acceptChannel())
        return (listener, client, channel, server, accepted)
    }

    @Test("strings and binaries both ways, label, protocol and stream parity preserved")
    func messagesBothWays() async throws {
        let (listener, client, channel, server, accepted) = try await Self.pair()
        #expect(accepted.label == "first" && accepted.protocol == "test/1")
        #expect(channel.streamID % 2 == 0 && accepted.streamID == channel.streamID)
        let messages: [DataChannelMessage] = [.string("hello"), .binary([1, 2, 3]), .string(""), .binary([]), .binary(Array(repeating: 7, count: 100_000))]
        for message in messages { try await channel.send(message) }
        for message in messages { #expect(await accepted.receive() == message) }
        for message in messages { try await accepted.send(message) }
        for message in messages { #expect(await channel.receive() == message) }
        // The server opens one too: odd stream ID.
        let back = try await server.openChannel(label: "back", protocol: "", reliability: Reliability(ordered: false, limit: .maxRetransmits(0)))
        #expect(back.streamID % 2 == 1)
        let seen = try #require(await client.acceptChannel())
        #expect(seen.label == "back" && seen.reliability == Reliability(ordered: false, limit: .maxRetransmits(0)))
        try await back.send(.string("odd"))
        #expect(await seen.receive() == .string("odd"))
        await client.close()
        await server.close()
        await listener.close()
    }

    @Test("closing a channel ends the peer's reads and frees its stream for reuse")
    func closeAndReuse() async throws {
        let (listener, client, channel, server, accepted) = try await Self.pair()
        let firstID = channel.streamID
        await channel.close()
        #expect(await accepted.receive() == nil)
        // 250 more channels opened and closed one after another: stream IDs come back.
        var ids = Set<UInt16>()
        for index in 0..<250 {
            let next = try await client.openChannel(label: "c\(index)", protocol: "")
            ids.insert(next.streamID)
            try await next.send(.string("\(index)"))
            let peer = try #require(await server.acceptChannel())
            #expect(await peer.receive() == .string("\(index)"))
            await next.close()
            #expect(await peer.receive() == nil)
        }
        // A closed stream is free once the peer's answering reset arrives, so a few IDs take turns.
        #expect(ids.count < 10 && ids.contains(firstID))
        // Resets finish shortly after the last close: nothing stays open or held.
        var clientStats = await client.statistics()
        var serverStats = await server.statistics()
        for _ in 0..<250 where clientStats.streamsInUse > 0 || serverStats.streamsInUse > 0 {
            try await Task.sleep(for: .milliseconds(20))
            clientStats = await client.statistics()
            serverStats = await server.statistics()
        }
        #expect(clientStats.openChannels == 0 && clientStats.streamsInUse == 0)
        #expect(serverStats.openChannels == 0 && serverStats.streamsInUse == 0)
        #expect(clientStats.channelsOpened == 251 && clientStats.channelsClosed == 251)
        await client.close()
        await server.close()
        await listener.close()
    }

    @Test("one association per peer: 20 clients at once on one listener, each with its own channel")
    func manyPeers() async throws {
        let listener = try await SCTPAssociation.listen(on: TransportURL(parsing: "sctp+udp://127.0.0.1:0"))
        let server = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<20 {
                    guard let association = await listener.accept() else { return }
                    group.addTask {
                        guard let channel = await association.acceptChannel() else { return }
                        while let message = await channel.receive() { try? await channel.send(message) }
                    }
                }
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask {
                    let client = try await SCTPAssociation.connect(to: listener.localURL)
                    let channel = try await client.openChannel(label: "peer-\(index)", protocol: "")
                    for round in 0..<5 {
                        let message = DataChannelMessage.string("\(index)/\(round)")
                        try await channel.send(message)
                        #expect(await channel.receive() == message)
                    }
                    await client.close()
                }
            }
            try await group.waitForAll()
        }
        await server.value
        #expect(await listener.statistics().associations == 20)
        await listener.close()
    }
}
#endif

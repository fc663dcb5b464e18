import Conduit
import ConduitRelay
import ConduitRooms

/// The demo's group room: three peers through an in-process relay on loopback, showing joins and
/// the peer list, a refused token, data to everyone, to one peer and to a subgroup with the
/// sender stamped by the relay, a per-receiver `unsupportInboundDataSession`, and a leave.
struct DemoRoom {
    let runtime: ConduitRuntime
    let transcript: Transcript

    func run() async throws -> [String] {
        var failures: [String] = []
        func check(_ condition: Bool, _ what: String) { if !condition { failures.append("room: " + what) } }

        var generator = SystemRandomNumberGenerator()
        let secret = try RelaySecret(bytes: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let server = RelayServer(authority: RelayTokenAuthority(secret: secret), registry: runtime.registry)
        let url = try await server.listen(on: "loopback://demo-relay").description
        await transcript.say("relay", "listening on \(url)")
        func token(_ peer: PeerID, ttl: Int64 = 60) -> String {
            RelayToken(room: "demo-room", peer: peer, canPublish: true, canSubscribe: true, allowedSubgroups: nil,
                       expiresAt: UInt64(Int64(RelayServer.unixTime()) + ttl)).signed(with: secret)
        }

        var logs: [PeerID: RoomLog] = [:]
        var rooms: [PeerID: Conference] = [:]
        // Sora-style labeled channel #notes: alice sends and receives, bob only receives (with a
        // header naming the sender), carol is not on it.
        let notes: [PeerID: [ChannelDeclaration]] = [
            "alice": [try ChannelDeclaration(label: "#notes", direction: .sendrecv, protocolName: "notes-v1", compress: true, senderHeader: true)],
            "bob": [try ChannelDeclaration(label: "#notes", direction: .recvonly, protocolName: "notes-v1", compress: true, senderHeader: true)],
        ]
        for peer: PeerID in ["alice", "bob", "carol"] {
            let conference = try await runtime.join(relay: url, room: "demo-room", as: peer, token: token(peer), channels: notes[peer] ?? [])
            rooms[peer] = conference
            logs[peer] = RoomLog(conference)
            await transcript.say(peer.rawValue, "joined demo-room; already there: \(await conference.peers.map(\.rawValue).joined(separator: ", ").orNone)")
        }
        let (alice, bob, carol) = (rooms["alice"]!, rooms["bob"]!, rooms["carol"]!)
        do {
            _ = try await runtime.join(relay: url, room: "demo-room", as: "mallory", token: token("mallory", ttl: -5))
            check(false, "an expired token was accepted")
        } catch {
            await transcript.say("mallory", "refused: \(error.message)")
            check(error.message.contains("tokenExpired"), "the refusal did not say tokenExpired")
        }
        check(await eventually { await alice.peers.count == 2 }, "alice never saw bob and carol join")
        await transcript.say("alice", "peer list now: \(await alice.peers.map(\.rawValue).joined(separator: ", "))")

        // Everyone, then one peer.
        let chat = try await alice.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        check(await logs["bob"]!.waitIncoming(100, nil), "bob was not told of alice's chat")
        check(await logs["carol"]!.waitIncoming(100, nil), "carol was not told of alice's chat")
        let bobChat = try await bob.makeInboundDataSession(streamID: 100)
        let carolChat = try await carol.makeInboundDataSession(streamID: 100)
        try await chat.send(Array("hello room".utf8))
        _ = await chat.changeDestination("bob")
        try await chat.send(Array("just for bob".utf8))
        _ = await chat.changeDestination(nil)
        try await chat.send(Array("bye room".utf8))
        let atBob = await receive(bobChat, count: 3, who: "bob")
        let atCarol = await receive(carolChat, count: 2, who: "carol")
        check(atBob == ["alice: hello room", "alice: just for bob", "alice: bye room"], "bob got \(atBob)")
        check(atCarol == ["alice: hello room", "alice: bye room"], "carol got \(atCarol)")

        // A subgroup: alice and carol.
        check(await alice.subscribe("pair"), "alice could not subscribe to pair")
        check(await carol.subscribe("pair"), "carol could not subscribe to pair")
        await transcript.say("alice", "subscribed to subgroup pair with carol (dataSession: true)")
        let pair = try await alice.makeOutboundDataSession(streamID: 100, type: .reliableMessage, subgroup: "pair")
        check(await logs["carol"]!.waitIncoming(100, "pair"), "carol was not told of the pair session")
        let carolPair = try await carol.makeInboundDataSession(streamID: 100, subgroup: "pair")
        try await pair.send(Array("only carol and I see this".utf8))
        check(await receive(carolPair, count: 1, who: "carol [pair]") == ["alice: only carol and I see this"], "the subgroup message did not arrive")

        // Per-receiver unsupport: bob declines carol's cursor stream; alice still gets it.
        let cursor = try await carol.makeOutboundDataSession(streamID: 200, type: .unreliableMessage)
        check(await logs["bob"]!.waitIncoming(200, nil), "bob was not told of carol's cursor")
        check(await logs["alice"]!.waitIncoming(200, nil), "alice was not told of carol's cursor")
        await bob.unsupportInboundDataSession(streamID: 200)
        await transcript.say("bob", "unsupportInboundDataSession(200): only bob stops getting it")
        let aliceCursor = try await alice.makeInboundDataSession(streamID: 200)
        check(await eventually {
            try? await cursor.send(Array("x=1,y=2".utf8))
            return await server.statistics.droppedUnsupported > 0
        }, "the relay kept sending stream 200 to bob")
        check(await receive(aliceCursor, count: 1, who: "alice").first?.hasPrefix("carol: x=") == true, "alice got no cursor position")
        check(await cursor.closeReason == nil, "carol's session closed although only bob declined it")

        // A data track (Twilio style): carol subscribes to alice's whiteboard; a stroke sent before
        // she subscribed never reaches her.
        let lifetime = try Reliability(ordered: true, maxRetransmits: nil, maxPacketLifeTime: 2_000)
        if let board = await alice.publishDataTrack("whiteboard", reliability: lifetime) {
            await transcript.say("alice", "published data track whiteboard (\(lifetime))")
            let accepted = await server.statistics.framesAccepted
            try await board.send(Array("stroke 0 (before carol subscribed)".utf8))
            check(await eventually { await server.statistics.framesAccepted > accepted }, "the relay never got stroke 0")
            if let remote = await carol.subscribeDataTrack("whiteboard", of: "alice") {
                try await board.send(Array("stroke 1".utf8))
                let first = await bounded(.seconds(5), default: nil) { () -> String? in
                    for await message in remote.messages { return String(decoding: message, as: UTF8.self) }
                    return nil
                }
                await transcript.say("carol", "whiteboard track: \(first ?? "nothing")")
                check(first == "stroke 1", "carol's first whiteboard message was \(first ?? "nothing")")
            } else {
                check(false, "carol could not subscribe to the whiteboard track")
            }
        } else {
            check(false, "alice could not publish a data track")
        }

        // The labeled channel: zlib on the wire, the sender's connection ID in front at bob.
        check(await eventually { await alice.channels["#notes"] != nil }, "#notes was not confirmed for alice")
        try await alice.sendChannelMessage("#notes", Array("minutes: ship it".utf8))
        let note = await bounded(.seconds(5), default: nil) { () -> Conference.ChannelMessage? in
            for await message in bob.channelMessages { return message }
            return nil
        }
        if let note {
            await transcript.say("bob", "#notes from \(note.sender): header \(Array(note.header)) (\(note.headerLength) bytes), \"\(String(decoding: note.message, as: UTF8.self))\"")
        }
        check(note.map { String(decoding: $0.message, as: UTF8.self) } == "minutes: ship it" && note?.headerLength == 2, "bob did not get the #notes message with its header")

        // Leaving.
        await bob.leave()
        await transcript.say("bob", "left")
        check(await logs["alice"]!.waitLeft("bob"), "alice did not hear that bob left")
        await transcript.say("alice", "peer list now: \(await alice.peers.map(\.rawValue).joined(separator: ", "))")
        await alice.leave()
        await carol.leave()
        let statistics = await server.statistics
        await transcript.say("relay", "joins \(statistics.joins), refused \(statistics.refusals.values.reduce(0, +)), frames relayed \(statistics.framesRelayed), dropped for unsupporting receivers \(statistics.droppedUnsupported)")
        await server.shutdown()
        return failures
    }

    func receive(_ session: InboundDataSession, count: Int, who: String) async -> [String] {
        let lines = await bounded(.seconds(5), default: []) { () -> [String] in
            var lines: [String] = []
            for await event in session.events {
                guard case .message(let message) = event else { continue }
                lines.append("\(message.sender?.rawValue ?? "?"): \(String(decoding: message.bytes, as: UTF8.self))")
                if lines.count == count { break }
            }
            return lines
        }
        for line in lines { await transcript.say(who, "received from \(line)") }
        return lines
    }
}

/// Runs `body` for at most `limit`, returning `fallback` if it took longer.
func bounded<T: Sendable>(_ limit: Duration, default fallback: T, _ body: @escaping @Sendable () async -> T) async -> T {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try? await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        return (await group.next() ?? nil) ?? fallback
    }
}

/// True once `condition` holds, polling for at most five seconds.
func eventually(_ condition: @escaping @Sendable () async -> Bool) async -> Bool {
    await bounded(.seconds(5), default: false) {
        while !Task.isCancelled {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return false
    }
}

/// Keeps a conference's events for the demo to wait on.
actor RoomLog {
    private var events: [Conference.Event] = []
    private var task: Task<Void, Never>?

    init(_ conference: Conference) {
        let stream = conference.events
        task = nil
        Task { await self.start(stream) }
    }

    private func start(_ stream: Conference.Events) {
        task = Task { for await event in stream { self.append(event) } }
    }

    private func append(_ event: Conference.Event) { events.append(event) }

    private func contains(_ predicate: (Conference.Event) -> Bool) -> Bool { events.contains(where: predicate) }

    func waitIncoming(_ stream: StreamID, _ subgroup: SubgroupName?) async -> Bool {
        await eventually {
            await self.contains {
                if case .dataSessionIncoming(stream, subgroup, _, _) = $0 { true } else { false }
            }
        }
    }

    func waitLeft(_ peer: PeerID) async -> Bool {
        await eventually {
            await self.contains { if case .peersChanged(_, let left, _) = $0 { left.contains(peer) } else { false } }
        }
    }
}

extension String {
    var orNone: String { isEmpty ? "nobody" : self }
}

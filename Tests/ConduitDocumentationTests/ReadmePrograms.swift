import Conduit
import ConduitConformance
import ConduitCore
import ConduitLoopback
import ConduitRelay
import ConduitUDP
import Foundation
import Testing

// The README's Swift programs, each verbatim (DocumentationBlockTests checks it) inside a function
// that a test below runs on loopback. Their `print` is a local one that records what they print.

@Suite struct ReadmeProgramTests {
    /// README "Embedding": a call on loopback, and a receive loop that serves every incoming
    /// session and ends with the call.
    @Test func embedding() async throws {
        let transcript = Transcript()
        try await within("the embedding program") { try await Self.embedding(transcript) }
        #expect(transcript.lines == ["100 hello 42"])
    }

    static func embedding(_ transcript: Transcript) async throws {
        @Sendable func print(_ items: Any...) { transcript.record(items) }
        let runtime = ConduitRuntime()                             // loopback://conduit, 2 Mbit/s per session
        let listener = try await runtime.listen(as: "bob")
        async let answered = listener.accept()
        let alice = try await runtime.connect(as: "alice")         // returns once both sides said hello
        let bob = try await answered!

        // Sender: a session per stream ID (100...999) and type.
        let chat = try await alice.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        try await chat.send(Array("hello".utf8), timestamp: 42)

        // Receiver: answer every dataSessionIncoming with makeInbound (or unsupportInbound) and serve
        // each session in a child task of its own; the loop ends when the call does.
        await withDiscardingTaskGroup { group in
            for await event in bob.events {                        // finishes when the call ends
                guard case .dataSessionIncoming(let streamID, _, let type) = event,
                      let inbound = try? await bob.makeInboundDataSession(streamID: streamID, expecting: type)
                else { continue }
                group.addTask {
                    for await event in inbound.events {            // ends with .closed(reason)
                        guard case .message(let message) = event else { continue }
                        print(streamID, String(decoding: message.bytes, as: UTF8.self), message.timestamp)
                        await bob.hangUp()                         // here: one message is all we wait for
                    }
                }
            }
        }                                                          // returns once every session is served
    }

    /// README "Choosing a transport by configuration": a registry with udp://, a configuration
    /// from a JSON file (in the working directory, as the README has it) and a URL.
    @Test func configuration() async throws {
        let file = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("conduit.json")
        guard !FileManager.default.fileExists(atPath: file.path) else {
            Issue.record("\(file.path) exists already; the test writes its own")
            return
        }
        // A generous limit: the test checks that the file is read, and on 2 cores the full suite
        // can hold a loopback handshake up for seconds.
        try Data(#"{ "rateLimit": "500kbps", "connectTimeoutMs": 30000 }"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let runtime = try Self.configuration()
        #expect(try runtime.configuration.rateLimit == RateLimit(parsing: "500kbps"))
        #expect(runtime.configuration.connectTimeout == .milliseconds(30_000))
        #expect(runtime.registry.schemes.contains("udp"))
        // The runtime works on the URL it was given: a call on loopback://room-7.
        let listener = try await runtime.listen(as: "bob")
        #expect(listener.url.description.hasPrefix("loopback://room-7"))
        async let answered = listener.accept()
        let alice = try await runtime.connect(as: "alice")
        let bob = try #require(try await answered)
        #expect(bob.remotePeer == "alice")
        await alice.hangUp()
        await listener.close()
    }

    static func configuration() throws -> ConduitRuntime {
        var registry = TransportRegistry.defaults        // loopback
        registry.register(UDPTransport())                // import ConduitUDP: udp://host:port
        var configuration = try ConduitConfiguration.resolved(jsonFile: "conduit.json", registry: registry) // file, then CONDUIT_* env; scheme checked
        configuration.transport = "loopback://room-7?mtu=1232&window=4194304"
        let runtime = ConduitRuntime(configuration: configuration, registry: registry)
        return runtime
    }

    /// README "Group rooms", in code: a relay in process, a token, a room joined, a session sent to
    /// everyone, then to bob only, a subgroup, and a leave that ends the events.
    @Test func rooms() async throws {
        let transcript = Transcript()
        let secret = try RelaySecret(bytes: Array("the relay secret of the README test".utf8))
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        let runtime = ConduitRuntime(configuration: configuration)
        let relay = try await within("the rooms program") { try await Self.rooms(transcript, runtime: runtime, secret: secret) }
        let printed = transcript.lines
        #expect(printed.first?.hasPrefix("connected(") == true)
        #expect(printed.contains { $0.hasPrefix("subscribed(") && $0.contains("design") && $0.contains("dataSession: true") })
        #expect(printed.last?.hasPrefix("disconnected(") == true)
        // The relay took the join, the session and its message, and the subscription.
        let statistics = await relay.statistics
        #expect(statistics.framesAccepted > 0)
        await relay.shutdown()
    }

    static func rooms(_ transcript: Transcript, runtime: ConduitRuntime, secret: RelaySecret) async throws -> RelayServer {
        @Sendable func print(_ items: Any...) { transcript.record(items) }
        let relay = RelayServer(authority: RelayTokenAuthority(secret: secret), registry: runtime.registry)
        let url = try await relay.listen(on: "loopback://relay")       // in process, next to the peers; or udp://…
        let token = RelayToken(room: "standup", peer: "alice", canPublish: true, canSubscribe: true,
                               allowedSubgroups: ["design"], expiresAt: RelayServer.unixTime() + 600).signed(with: secret)

        let room = try await runtime.join(relay: url.description, room: "standup", as: "alice", token: token)
        let events = Task { for await event in room.events { print(event) } } // .peersChanged, .dataSessionIncoming(…, from:), …
        let chat = try await room.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        try await chat.send(Array("hello everyone".utf8))
        await chat.changeDestination("bob")                            // later sends: bob only
        await room.subscribe("design")                                 // subgroup, dataSession: true
        await room.leave()
        await events.value                                             // the events end after .disconnected
        return relay
    }

    /// README "Calling a peer": bob answers alice's call, and a group invitation to three students
    /// of whom the first to accept is invited to speak and the rest are cancelled.
    @Test func invitations() async throws {
        let secret = try RelaySecret(bytes: Array("the relay secret of the README test".utf8))
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        let runtime = ConduitRuntime(configuration: configuration)
        let relay = RelayServer(authority: RelayTokenAuthority(secret: secret), registry: runtime.registry)
        let url = try await relay.listen(on: "loopback://relay").description
        @Sendable func token(_ peer: PeerID, _ room: RoomID) -> String {
            RelayToken(room: room, peer: peer, canPublish: true, canSubscribe: true, expiresAt: RelayServer.unixTime() + 600).signed(with: secret)
        }
        let aliceLobby = try await runtime.join(relay: url, room: "lobby", as: "alice", token: token("alice", "lobby"))
        let bobLobby = try await runtime.join(relay: url, room: "lobby", as: "bob", token: token("bob", "lobby"))
        // Three students in a classroom lobby; s1 puts its hand up (accepts), s2 and s3 do not answer.
        var students: [Conference] = []
        for name in ["s1", "s2", "s3"] as [PeerID] {
            students.append(try await runtime.join(relay: url, room: "class", as: name, token: token(name, "class")))
        }
        let handUp = Task { [s1 = students[0]] () async throws -> [String] in
            var rings: [String] = []
            for await case .newInvitation(let ring) in s1.invitationEvents {
                rings.append(String(decoding: ring.data, as: UTF8.self))
                if rings.count == 1 { try await s1.accept(ring.id) }
                if rings.count == 2 { return rings }
            }
            return rings
        }
        let (call, answered, outcome) = try await within("the invitations program") {
            try await Self.invitations(runtime: runtime, url: url, aliceLobby: aliceLobby, bobLobby: bobLobby,
                                       aliceCallToken: token("alice", "call-42"), bobCallToken: token("bob", "call-42"))
        }
        #expect(call.room == "call-42" && call.localPeer == "alice")
        #expect(answered?.room == "call-42" && answered?.localPeer == "bob")
        #expect(outcome?.accepted == ["s1"])
        #expect(outcome?.state(of: "s2") == .cancelled)
        #expect(try await within("s1 hears both invitations") { try await handUp.value } == ["raise hands", "speak"])
        for conference in [call, answered, aliceLobby, bobLobby].compactMap({ $0 }) + students { await conference.leave() }
        await relay.shutdown()
    }

    static func invitations(runtime: ConduitRuntime, url: String, aliceLobby: Conference, bobLobby: Conference,
                            aliceCallToken: String, bobCallToken: String) async throws -> (Conference, Conference?, InvitationOutcome?) {
        // Caller (alice) and callee (bob) each wait in a lobby room on the relay.
        // Callee: ring, then answer (joins the room named in the data, then accepts) or reject.
        let ringing = Task { () async throws -> Conference? in
            for await event in bobLobby.invitationEvents {
                guard case .newInvitation(let ring) = event else { continue }
                return try await runtime.answerCall(ring, on: bobLobby, relay: url, token: bobCallToken)
                // or: try await bobLobby.reject(ring.id, data: Array("busy".utf8))
            }
            return nil
        }

        // Caller: the call room's Conference once bob accepted; throws CallNotAnswered(.rejected, data: "busy"),
        // .timedOut, .calleeLeft or .cancelled (cancel the task to hang up before the answer), or
        // InvitationError(.inviteesOffline) if bob is not on the relay.
        let call = try await runtime.placeCall(on: aliceLobby, to: "bob", room: "call-42",
                                               relay: url, token: aliceCallToken, timeout: .seconds(30))
        let answered = try await ringing.value                 // bob's side of the call room

        // The general API (groups, classrooms): every request waits for the relay and throws its refusal.
        let receipt = try await aliceLobby.invite(["s1", "s2", "s3"], group: "class", data: Array("raise hands".utf8),
                                                  timeout: .seconds(20), onlineOnly: true)   // receipt.skippedOffline
        for await case .inviteeAccepted(receipt.id, let student, _) in aliceLobby.invitationEvents {
            try await aliceLobby.invite([student], data: Array("speak".utf8), timeout: .seconds(30))
            break                                              // the first hand up speaks
        }
        try await aliceLobby.cancel(receipt.id)                // the others stop ringing; also accept(_:data:), reject(_:data:)
        let outcome = await aliceLobby.outcome(of: receipt.id) // once everyone settled: view.states, answerData
        return (call, answered, outcome)
    }
}
/// README "Tests": a transport of one's own joins the conformance suite. `MyTransport` here is
/// the loopback transport under another scheme.
struct MyTransport: Transport {
    let base = LoopbackTransport(hub: LoopbackHub())
    var schemes: [String] { ["my"] }

    func connect(to url: TransportURL) async throws(ConduitError) -> any TransportLink {
        try await base.connect(to: loopback(url))
    }

    func listen(on url: TransportURL) async throws(ConduitError) -> any TransportListener {
        try await base.listen(on: loopback(url))
    }

    private func loopback(_ url: TransportURL) -> TransportURL {
        var url = url
        url.scheme = "loopback"
        return url
    }
}

@Test(arguments: ConformanceSuite.Case.allCases)
func conforms(_ testCase: ConformanceSuite.Case) async throws {
    let suite = ConformanceSuite(
        transport: MyTransport(),
        address: { TransportURL(scheme: "my", host: "conformance-\($0)") },   // a fresh address per test listener
        deadAddress: TransportURL(scheme: "my", host: "nobody-listens-here")
    )
    try await suite.run(testCase)
}

import Conduit
import ConduitARQ
import ConduitCore
import ConduitRelay
import ConduitRelayCore
import ConduitReliableTransport
import ConduitRooms
import ConduitUDP
import Testing

/// The relay's limits against abuse over real UDP sockets on 127.0.0.1: links that ping but never
/// join neither keep a member out nor stay past their join deadline, and bad tokens get a typed
/// refusal at once. Bounded: a few hundred links, seconds.
@Suite("Relay abuse limits over UDP", .timeLimit(.minutes(2)))
struct RelayAbuseUDPTests {
    static let secretBytes = Array("abuse-room-secret-0123456789abcd".utf8)
    static let secret = try! RelaySecret(bytes: secretBytes)

    /// A transport whose listener lets one address (the tests' 127.0.0.1) hold many links.
    static func transport() -> UDPTransport {
        var configuration = UDPTransport.Configuration()
        configuration.listenerLimits = .init(maxLinks: 4_096, maxLinksPerAddress: 4_096, handshakesPerSecondPerAddress: 100_000, maxAwaitingAccept: 1_024)
        return UDPTransport(configuration: configuration)
    }

    static func token(_ peer: PeerID) -> String {
        RelayToken(room: "room", peer: peer, canPublish: true, canSubscribe: true, expiresAt: RelayServer.unixTime() + 600).signed(with: secret)
    }

    /// A link to the relay that pings and never joins (the lockout of issue 18), reliable as a
    /// client's would be.
    static func unjoinedLink(to url: TransportURL, via transport: UDPTransport) async throws -> any TransportLink {
        let raw = try await transport.connect(to: url, timeout: .seconds(10))
        let link = await ReliableTransportLink.wrapIfNeeded(raw, configuration: ARQEngine.Configuration())
        try await link.write(batch(RoomControlFrame.ping.encoded))
        return link
    }

    static func batch(_ frame: [UInt8]) -> DatagramBatch {
        var batch = DatagramBatch()
        batch.append(frame)
        return batch
    }

    /// The first refusal `link` reads from the relay.
    static func refusal(on link: any TransportLink) async throws -> RelayRefusal? {
        while let batch = try await link.read() {
            var found: RelayRefusal?
            batch.forEachDatagram {
                if found == nil, case .refused(let refusal, _)? = try? RoomControlFrame.parse($0) { found = refusal }
            }
            if let found { return found }
        }
        return nil
    }

    /// A relay on 127.0.0.1 with its transport and a runtime for members.
    struct Rig {
        let transport: UDPTransport
        let runtime: ConduitRuntime
        let server: RelayServer
        let url: TransportURL

        static func start(_ configuration: RelayConfiguration = .init()) async throws -> Rig {
            let transport = RelayAbuseUDPTests.transport()
            let runtime = ConduitRuntime(registry: TransportRegistry.defaults.registering(transport))
            let server = RelayServer(authority: RelayTokenAuthority(secret: RelayAbuseUDPTests.secret), configuration: configuration, registry: runtime.registry)
            return Rig(transport: transport, runtime: runtime, server: server, url: try await server.listen(on: "udp://127.0.0.1:0"))
        }

        func unjoinedLinks(_ count: Int) async throws -> [any TransportLink] {
            var links: [any TransportLink] = []
            for _ in 0..<count { links.append(try await RelayAbuseUDPTests.unjoinedLink(to: url, via: transport)) }
            return links
        }

        func join(_ peer: PeerID) async throws(ConduitError) -> Conference {
            try await runtime.join(relay: url.description, room: "room", as: peer, token: RelayAbuseUDPTests.token(peer))
        }

        func stop(closing links: [any TransportLink]) async {
            for link in links { await link.close() }
            await server.shutdown()
        }
    }

    @Test("a few hundred links that ping but never join fill the pending table; a member still joins, and the oldest of them make way")
    func pingingLinksDoNotLockAMemberOut() async throws {
        let rig = try await Rig.start(RelayConfiguration(maxPendingConnections: 128, joinTimeout: .seconds(60)))
        let pingers = try await rig.unjoinedLinks(200)
        let alice = try await rig.join("alice")
        #expect(await rig.server.members(of: "room").values.contains("alice"))
        // 200 pingers and alice opened links into 128 slots: the 73 oldest pingers were evicted.
        #expect(await rig.server.statistics.pendingEvicted == 200 + 1 - 128)
        #expect(try await Self.refusal(on: pingers[0]) == .notJoined)
        await alice.leave()
        await rig.stop(closing: pingers)
    }

    @Test("links that keep pinging are refused at their join deadline, each told notJoined")
    func pingsDoNotExtendTheJoinDeadline() async throws {
        let rig = try await Rig.start(RelayConfiguration(joinTimeout: .milliseconds(600)))
        let pingers = try await rig.unjoinedLinks(20)
        let pinging = Task {
            while !Task.isCancelled {
                for link in pingers { try? await link.write(Self.batch(RoomControlFrame.ping.encoded)) }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        for link in pingers { #expect(try await Self.refusal(on: link) == .notJoined) }
        pinging.cancel()
        #expect(await rig.server.statistics.joinDeadlinesMissed == 20)
        await rig.stop(closing: pingers)
    }

    @Test("a token over the relay's limit, and a join whose token length field lies, are refused at once with a typed reason")
    func badTokensGetATypedRefusal() async throws {
        let rig = try await Rig.start(RelayConfiguration(maxTokenBytes: 64))
        do {
            _ = try await rig.join("alice")
            Issue.record("a token over maxTokenBytes was admitted")
        } catch {
            #expect(error.code == .connectionFailed)
            #expect(error.message.contains("tokenTooLarge"))
        }
        // A join whose length field claims 60,000 bytes: answered, not left to a timeout.
        var lying = RoomControlFrame.join(room: "room", peer: "bob", dataSessionsSupported: true, token: Array("ct1.a.b".utf8)).encoded
        let field = RoomControlFrame.headerSize + 1 + 4 + 1 + 3 + 1
        lying[field] = 0xEA
        lying[field + 1] = 0x60
        let link = try await Self.unjoinedLink(to: rig.url, via: rig.transport)
        try await link.write(Self.batch(lying))
        #expect(try await Self.refusal(on: link) == .tokenTooLarge)
        #expect(await rig.server.statistics.refusals(.tokenTooLarge) == 2)
        await rig.stop(closing: [link])
    }
}

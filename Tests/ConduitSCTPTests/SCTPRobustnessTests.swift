#if SCTP
import ConduitCore
import ConduitImpairment
import ConduitNetworkTestSupport
import ConduitSCTP
import ConduitUDP
import NIOCore
import NIOPosix
import Testing

/// Bad input at the UDP socket and unreachable peers: dropped or reported, never fatal.
@Suite("SCTP over UDP robustness", .timeLimit(.minutes(1)))
struct SCTPRobustnessTests {
    static func udpSocket() async throws -> any Channel {
        try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
    }

    @Test("junk datagrams and corrupted INITs at a listener are dropped; a real association still works")
    func junkIsDropped() async throws {
        let listener = try await SCTPAssociation.listen(on: TransportURL(parsing: "sctp+udp://127.0.0.1:0"))
        let target = try SocketAddress(ipAddress: "127.0.0.1", port: listener.localURL.port!)
        let junk = try await Self.udpSocket()
        var random = SeededRandom(seed: 99)
        // 200 random datagrams (1 to 1500 bytes), then 20 INIT look-alikes whose CRC32c is wrong.
        for index in 0..<220 {
            var bytes = random.bytes(1 + random.below(1_500))
            if index >= 200 {
                bytes = [0x13, 0x88, 0x13, 0x88, 0, 0, 0, 0] + random.bytes(4) + [1, 0, 0, 20] + random.bytes(16 + random.below(100))
            }
            var buffer = junk.allocator.buffer(capacity: bytes.count)
            buffer.writeBytes(bytes)
            try await junk.writeAndFlush(AddressedEnvelope(remoteAddress: target, data: buffer))
        }
        // Now a real client: its channel works as if nothing happened.
        let client = try await SCTPAssociation.connect(to: listener.localURL)
        let channel = try await client.openChannel(label: "after-junk", protocol: "")
        let server = try #require(await listener.accept())
        let accepted = try #require(await server.acceptChannel())
        try await channel.send(.binary([1, 2, 3]))
        #expect(await accepted.receive() == .binary([1, 2, 3]))
        let stats = await listener.statistics()
        #expect(stats.droppedJunk >= 190, "random bytes are not an INIT (a few may look like one by chance)")
        #expect(stats.associations <= 1 + 30)
        try await junk.close()
        await client.close()
        await server.close()
        await listener.close()
    }

    @Test("corrupted packets inside an association are dropped by the CRC32c check; messages arrive intact")
    func corruptedPacketsAreDropped() async throws {
        let listener = try await SCTPAssociation.listen(on: TransportURL(parsing: "sctp+udp://127.0.0.1:0"))
        var impairment = ImpairmentConfiguration()
        impairment.corrupt = 0.2
        impairment.seed = 5
        let proxy = try await ImpairmentProxy.start(.init(
            listen: UDPEndpoint(host: "127.0.0.1", port: 0),
            upstream: UDPEndpoint(host: "127.0.0.1", port: listener.localURL.port!),
            impairment: impairment
        ))
        let client = try await SCTPAssociation.connect(to: TransportURL(parsing: "sctp+udp://127.0.0.1:\(proxy.localAddress.port!)?connect-timeout-ms=20000"))
        let channel = try await client.openChannel(label: "through-corruption", protocol: "")
        let server = try #require(await listener.accept())
        let accepted = try #require(await server.acceptChannel())
        var random = SeededRandom(seed: 6)
        let sent = (0..<100).map { _ in DataChannelMessage.binary(random.bytes(1 + random.below(3_000))) }
        for message in sent { try await channel.send(message) }
        var received: [DataChannelMessage] = []
        while received.count < sent.count, let message = await accepted.receive() { received.append(message) }
        #expect(received == sent)
        let stats = await proxy.statistics()
        #expect(stats.clientToUpstream.corrupted > 0 && stats.upstreamToClient.corrupted > 0)
        // Our CRC32c check (usrsctp leaves it to us) is what dropped them, on both ends.
        #expect(await server.statistics().droppedChecksum > 0)
        #expect(await client.statistics().droppedChecksum > 0)
        await client.close()
        await server.close()
        await listener.close()
        await proxy.stop()
    }

    @Test("connecting to a closed port: ICMP port-unreachable is not fatal, INIT is retried until the limit")
    func closedPort() async throws {
        let port = try await unusedUDPPort()
        // The INIT limit (usrsctp gives up): connectionFailed, naming the attempts.
        do {
            _ = try await SCTPAssociation.connect(to: TransportURL(parsing: "sctp+udp://127.0.0.1:\(port)?init-attempts=2&connect-timeout-ms=30000"))
            Issue.record("connecting to a closed port succeeded")
        } catch {
            #expect(error.code == .connectionFailed)
            #expect(error.message.contains("INIT went unanswered 2 times"), "\(error.message)")
        }
        // The connect timeout first: timedOut, naming the address.
        do {
            _ = try await SCTPAssociation.connect(to: TransportURL(parsing: "sctp+udp://127.0.0.1:\(port)?connect-timeout-ms=1500"))
            Issue.record("connecting to a closed port succeeded")
        } catch {
            #expect(error.code == .timedOut)
            #expect(error.message.contains("127.0.0.1:\(port)"))
        }
        // And a listener that appears on a port after a failed attempt is reached by a new one.
        // (A fresh port: over the 15 s above, a test running in parallel may have bound this one.)
        let listener = try await listenAfterAFailedAttempt()
        let client = try await SCTPAssociation.connect(to: listener.localURL)
        _ = try await client.openChannel(label: "late", protocol: "")
        let server = try #require(await listener.accept())
        #expect(try #require(await server.acceptChannel()).label == "late")
        await client.close()
        await server.close()
        await listener.close()
    }

    /// A listener on a port that a connect attempt just failed to reach (timed out), retrying
    /// with another port if a parallel test takes the free one first.
    private func listenAfterAFailedAttempt() async throws -> SCTPAssociationListener {
        var attempt = 0
        while true {
            attempt += 1
            let port = try await unusedUDPPort()
            do {
                _ = try await SCTPAssociation.connect(to: TransportURL(parsing: "sctp+udp://127.0.0.1:\(port)?connect-timeout-ms=300"))
                Issue.record("connecting to a closed port succeeded")
            } catch {
                #expect(error.code == .timedOut || error.code == .connectionFailed, "\(error)")
            }
            let listened: Result<SCTPAssociationListener, ConduitError>
            do {
                listened = .success(try await SCTPAssociation.listen(on: TransportURL(parsing: "sctp+udp://127.0.0.1:\(port)")))
            } catch {
                listened = .failure(error)
            }
            switch listened {
            case .success(let listener): return listener
            case .failure(let error) where error.code == .addressInUse && attempt < 5: continue
            case .failure(let error): throw error
            }
        }
    }
}
#endif

import ConduitARQ
import ConduitCore
import ConduitReliableTransport
import NIOCore
import NIOPosix
import Testing

@testable import ConduitUDP

#if SRTP
import ConduitNetworkTestSupport
import ConduitSRTP
#endif

extension UDPTransportTests {
    /// A link whose client address changes mid-call (issue 17 item 5), over real sockets on
    /// 127.0.0.1: the listener moves it only after the new address answers a path challenge,
    /// and a datagram replayed or forged from a third socket neither moves nor ends it.
    @Suite("UDP address migration", .timeLimit(.minutes(2)))
    struct UDPMigrationTests {
        static let messageSize = 800

        /// Message `index`: its number, then bytes derived from it.
        static func message(_ index: Int) -> [UInt8] {
            withUnsafeBytes(of: UInt32(index).bigEndian, Array.init) + (0..<messageSize - 4).map { UInt8(truncatingIfNeeded: index &* 31 &+ $0) }
        }

        static func send(_ range: Range<Int>, on link: any TransportLink) async throws {
            for start in stride(from: range.lowerBound, to: range.upperBound, by: 25) {
                var batch = DatagramBatch()
                for index in start..<min(start + 25, range.upperBound) { batch.append(message(index)) }
                try await link.write(batch)
            }
        }

        /// Reliable messages `0..<count` on `transport` (with `query` on both ends) in both
        /// directions; the client moves to a new socket after the first half is written.
        static func transferAcrossAMove(_ transport: UDPTransport, host: String = "127.0.0.1", query: String = "", count: Int) async throws {
            let literal = host.contains(":") ? "[\(host)]" : host
            let listener = try await transport.listenUDP(on: UDPTestSupport.url("udp://\(literal):0\(query)"))
            async let accepted = listener.acceptUDP()
            let clientRaw = try await transport.connectUDP(to: UDPTestSupport.url("udp://\(literal):\(listener.localURL.port!)\(query)"))
            let serverRaw = try #require(await accepted)
            let client = ReliableTransportLink(wrapping: clientRaw, configuration: ARQEngine.Configuration())
            let server = ReliableTransportLink(wrapping: serverRaw, configuration: ARQEngine.Configuration())
            await client.start()
            await server.start()

            async let toClient = UDPTestSupport.read(client, count: count, quiet: .seconds(10))
            async let toServer = UDPTestSupport.read(server, count: count, quiet: .seconds(10))
            try await send(0..<count / 2, on: server)
            try await send(0..<count / 2, on: client)
            // Mid-transfer: frames of the first half are in flight both ways.
            let before = try #require(await clientRaw.localAddress()?.port)
            let moved = ContinuousClock.now
            try await clientRaw.moveToNewSocket()
            // For the report only (never asserted): how long until the listener moved the link.
            let validated = Task {
                _ = await UDPTestSupport.eventually(within: .seconds(10)) { await listener.statistics().pathMigrations == 1 }
                return moved.duration(to: .now)
            }
            let after = try #require(await clientRaw.localAddress()?.port)
            #expect(after != before)
            try await send(count / 2..<count, on: server)
            try await send(count / 2..<count, on: client)

            let atClient = try await toClient
            let atServer = try await toServer
            #expect(atClient.count == count && atServer.count == count)
            #expect(atClient == (0..<count).map(message), "every message exactly once, in order, byte-identical")
            #expect(atServer == (0..<count).map(message), "every message exactly once, in order, byte-identical")
            let statistics = await listener.statistics()
            let retransmitted = (await server.statistics.packetsRetransmitted, await client.statistics.packetsRetransmitted)
            print(
                "[udp migration] \(host)\(query.isEmpty ? "" : " srtp"): \(count) messages each way; moved after \(await validated.value), "
                    + "\(statistics.pathChallengesSent) challenge(s), packets retransmitted server \(retransmitted.0) client \(retransmitted.1)")
            #expect(statistics.pathMigrations == 1)
            #expect(statistics.pathChallengesSent >= 1)
            #expect(statistics.pathResponsesRejected == 0)
            // The call stays up after the move: one more message each way, then a clean close.
            try await send(count..<count + 1, on: server)
            try await send(count..<count + 1, on: client)
            #expect(try await UDPTestSupport.read(client, count: 1) == [message(count)])
            #expect(try await UDPTestSupport.read(server, count: 1) == [message(count)])
            #expect(await listener.retainedState().links == 1)
            await client.close(drainTimeout: .seconds(2))
            await server.close(drainTimeout: .seconds(2))
            await listener.close()
            #expect(await client.framesUnacknowledgedAtEnd == 0)
            #expect(await server.framesUnacknowledgedAtEnd == 0)
            #expect(await listener.retainedState().links == 0)
        }

        @Test("the client moves to a new port mid-transfer: every reliable message arrives once, in order, and the call stays up")
        func callSurvivesTheClientMovingToANewPort() async throws {
            try await Self.transferAcrossAMove(UDPTransport(), count: 600)
        }

        @Test("the same over IPv6 loopback")
        func callSurvivesTheMoveOverIPv6() async throws {
            // Skip (pass) only where this machine cannot bind ::1 at all.
            guard let probe = try? await UDPTransport().listen(on: UDPTestSupport.url("udp://[::1]:0")) else { return }
            await probe.close()
            try await Self.transferAcrossAMove(UDPTransport(), host: "::1", count: 300)
        }

        #if SRTP
        @Test("the same with SRTP: the moved client's datagrams authenticate, its challenge and response are protected")
        func callSurvivesTheMoveWithSRTP() async throws {
            let path = try UDPSRTPTests.keyFile(.aesCM128HmacSha1_80, seed: 917)
            try await Self.transferAcrossAMove(UDPTransport(keyReader: .testFilesAndEnvironment), query: "?srtp-key-file=\(path)", count: 300)
        }
        #endif

        /// A socket on 127.0.0.1 that records what it receives.
        final class ThirdSocket: Sendable {
            let received = TSanVisibleMutex<[[UInt8]]>([])
            private let bound = TSanVisibleMutex<(any Channel)?>(nil)

            static func open() async throws -> ThirdSocket {
                let socket = ThirdSocket()
                let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(
                                UDPChannelHandler(onDatagram: { envelope, _ in socket.received.withLock { $0.append(Array(envelope.data.readableBytesView)) } }, onBurstEnd: { _ in }))
                        }
                    }
                    .bind(host: "127.0.0.1", port: 0).get()
                socket.bound.withLock { $0 = channel }
                return socket
            }

            func send(_ bytes: [UInt8], to address: SocketAddress) async throws {
                try await bound.withLock { $0 }?.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: bytes)))
            }

            func close() async { try? await bound.withLock { $0 }?.close() }
        }

        /// Ten datagrams each way between the raw links; true if all arrived.
        static func exchange(_ client: UDPLink, _ server: UDPLink, round: UInt8) async throws -> Bool {
            var batch = DatagramBatch()
            for index in 0..<10 { batch.append([round, UInt8(index)]) }
            try await client.write(batch)
            try await server.write(batch)
            let atServer = try await UDPTestSupport.read(server, count: 10)
            let atClient = try await UDPTestSupport.read(client, count: 10)
            return atServer.allSatisfy { $0.first == round } && atClient.allSatisfy { $0.first == round } && atServer.count == 10 && atClient.count == 10
        }

        @Test("a captured datagram replayed from a third port, a forged newer one and a forged BYE neither move nor end the call")
        func replayFromAnotherPortMovesNothing() async throws {
            let transport = UDPTransport()
            let listener = try await transport.listenUDP(on: UDPTestSupport.url("udp://127.0.0.1:0"))
            let listenerAddress = try SocketAddress(ipAddress: "127.0.0.1", port: listener.localURL.port!)
            let (tap, front) = try await UDPTap.start(upstream: listenerAddress)
            async let accepted = listener.acceptUDP()
            let client = try await transport.connectUDP(to: UDPTestSupport.url("udp://127.0.0.1:\(front.port!)"))
            let server = try #require(await accepted)
            #expect(try await Self.exchange(client, server, round: 1))

            // The last datagram the client sent, as an eavesdropper captured it.
            let captured = try #require(tap.records.withLock { $0 }.last { $0.toServer && RTPHeader(parsing: ByteBuffer(bytes: $0.bytes)) != nil }?.bytes)
            let third = try await ThirdSocket.open()
            try await third.send(captured, to: listenerAddress)
            // The same datagram with a newer sequence number (what a forger without the keys can do).
            var forged = captured
            let sequence = UInt16(forged[2]) << 8 | UInt16(forged[3])
            let newer = sequence &+ 1_000
            forged[2] = UInt8(newer >> 8)
            forged[3] = UInt8(newer & 0xFF)
            try await third.send(forged, to: listenerAddress)
            try await third.send(UDPTestSupport.rtcp(.bye(ssrc: client.localSSRC)), to: listenerAddress)

            // Until all three were handled: the BYE, sent last, too (under AddressSanitizer it once
            // was not yet when the counters were read).
            #expect(await UDPTestSupport.eventually {
                let statistics = await listener.statistics()
                return statistics.pathChallengesSent == 1 && statistics.strayDatagrams == 1 && third.received.withLock { $0.count } == 1
            })
            // The challenge went to the third socket only; it does not answer.
            let challenge = third.received.withLock { $0 }.first.map { UDPControlMessage(parsing: ByteBuffer(bytes: $0)) }
            guard case .pathChallenge(let serverSSRC, let clientSSRC, _)?? = challenge else {
                Issue.record("the third socket got \(String(describing: challenge)), not a path challenge")
                return
            }
            #expect(serverSSRC == server.localSSRC && clientSSRC == client.localSSRC)
            let statistics = await listener.statistics()
            #expect(statistics.pathProbesStale == 1, "the replay opened nothing")
            #expect(statistics.pathProbes == 1, "the forged newer datagram opened one validation")
            #expect(statistics.strayDatagrams == 1, "the BYE from another address")
            #expect(statistics.pathMigrations == 0)
            // The forged datagram reached the server link (like any unauthenticated datagram
            // without SRTP); drain it before checking the call.
            #expect(try await UDPTestSupport.read(server, count: 1, quiet: .seconds(1)).count == 1)

            // The call is neither moved nor ended: both ways still go through the tap.
            #expect(try await Self.exchange(client, server, round: 2))
            #expect(await listener.retainedState().links == 1)
            await client.close()
            await server.close()
            await listener.close()
            await tap.stop()
            await third.close()
        }

        @Test("forged datagrams of a link from twelve ports open four validations (the cap per link); the rest are refused and counted")
        func validationsFromManyAddressesAreCapped() async throws {
            try await UDPTestSupport.withPair { listener, client, server in
                let listenerAddress = try SocketAddress(ipAddress: "127.0.0.1", port: listener.localURL.port!)
                var sockets: [ThirdSocket] = []
                for index in 0..<12 {
                    let socket = try await ThirdSocket.open()
                    sockets.append(socket)
                    try await socket.send(UDPTestSupport.rtp(sequence: UInt16(index), ssrc: client.localSSRC, payload: [0xF0]), to: listenerAddress)
                }
                #expect(await UDPTestSupport.eventually { await listener.statistics().pathProbes + listener.statistics().pathProbesRefused == 12 })
                let statistics = await listener.statistics()
                #expect(statistics.pathProbes == 4 && statistics.pathProbesRefused == 8)
                #expect(statistics.pathChallengesSent == 4 && statistics.pathMigrations == 0)
                #expect(await listener.pendingPathValidations() == 4)
                #expect(await UDPTestSupport.eventually { sockets.filter { $0.received.withLock { !$0.isEmpty } }.count == 4 })
                // The four delivered forgeries, then the call as before, at its own address.
                #expect(try await UDPTestSupport.read(server, count: 4, quiet: .seconds(1)) == Array(repeating: [0xF0], count: 4))
                #expect(try await Self.exchange(client, server, round: 3))
                #expect(await listener.retainedState().links == 1)
                for socket in sockets { await socket.close() }
            }
        }
    }
}

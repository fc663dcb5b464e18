import ConduitCore
import ConduitImpairment
import ConduitNetworkTestSupport
import NIOCore
import Testing

@testable import ConduitUDP

extension UDPTransportTests {
    @Suite("UDP transport handshake", .timeLimit(.minutes(1)))
    struct UDPHandshakeTests {
        static func listenerAddress(_ listener: UDPListener) throws -> SocketAddress {
            try SocketAddress(ipAddress: "127.0.0.1", port: listener.localURL.port!)
        }

        @Test func aForgedCookieCreatesNoLink() async throws {
            let listener = try await UDPTransport().listenUDP(on: UDPTestSupport.url("udp://127.0.0.1:0"))
            let raw = try await TestSocket.bind()
            let target = try Self.listenerAddress(listener)
            // A HELLO is answered statelessly with a COOKIE...
            try await raw.send(UDPTestSupport.rtcp(.hello(ssrc: 77, nonce: 5, version: 1, mtu: 1232)), to: target)
            let answers = await raw.collect(upTo: 1)
            guard case .cookie(_, let nonce, let cookie)? = answers.first.flatMap({ UDPControlMessage(parsing: ByteBuffer(bytes: $0)) }) else {
                Issue.record("no COOKIE in answer to HELLO: \(answers)")
                return
            }
            #expect(nonce == 5)
            // ...and a wrong cookie, or the right cookie under another SSRC or nonce, makes no link.
            var forged = cookie
            forged.tagLow ^= 1
            try await raw.send(UDPTestSupport.rtcp(.helloWithCookie(ssrc: 77, nonce: 5, version: 1, mtu: 1232, cookie: forged)), to: target)
            try await raw.send(UDPTestSupport.rtcp(.helloWithCookie(ssrc: 78, nonce: 5, version: 1, mtu: 1232, cookie: cookie)), to: target)
            try await raw.send(UDPTestSupport.rtcp(.helloWithCookie(ssrc: 77, nonce: 6, version: 1, mtu: 1232, cookie: cookie)), to: target)
            #expect(await UDPTestSupport.eventually { await listener.statistics().badCookies == 3 })
            var statistics = await listener.statistics()
            #expect(statistics.linksEstablished == 0)
            #expect(statistics.hellosAnswered == 1)
            // The genuine cookie, echoed from the same address, does make one; a repeat gets ACCEPT again.
            try await raw.send(UDPTestSupport.rtcp(.helloWithCookie(ssrc: 77, nonce: 5, version: 1, mtu: 1232, cookie: cookie)), to: target)
            try await raw.send(UDPTestSupport.rtcp(.helloWithCookie(ssrc: 77, nonce: 5, version: 1, mtu: 1232, cookie: cookie)), to: target)
            let replies = await raw.collect(upTo: 3)
            let accepts = replies.compactMap { UDPControlMessage(parsing: ByteBuffer(bytes: $0)) }.filter {
                if case .accept(_, 77, 5, 1232) = $0 { return true } else { return false }
            }
            #expect(accepts.count == 2)
            statistics = await listener.statistics()
            #expect(statistics.linksEstablished == 1)
            #expect(statistics.acceptsRepeated == 1)
            let link = try #require(await listener.acceptUDP())
            #expect(link.remoteSSRC == 77)
            await link.close()
            await listener.close()
            try await raw.channel.close()
        }

        @Test func rtpFromAStrangerIsDroppedAndCounted() async throws {
            try await UDPTestSupport.withPair { listener, client, server in
                let raw = try await TestSocket.bind()
                let target = try Self.listenerAddress(listener)
                // From an address without a link, with an SSRC no link has: counted by the listener.
                // (With a link's SSRC it would be a path probe: UDPMigrationTests.)
                try await raw.send(UDPTestSupport.rtp(sequence: 1, ssrc: client.localSSRC &+ 1, payload: [1, 2, 3]), to: target)
                #expect(await UDPTestSupport.eventually { await listener.statistics().strayDatagrams == 1 })
                // A foreign SSRC at the client's address cannot be sent from here, but the client
                // drops RTP that does not come from the server.
                let clientPort = try #require(await client.localAddress()?.port)
                try await raw.send(UDPTestSupport.rtp(sequence: 1, ssrc: server.localSSRC, payload: [9]), to: try SocketAddress(ipAddress: "127.0.0.1", port: clientPort))
                #expect(await UDPTestSupport.eventually { await client.statistics().droppedStranger == 1 })
                var batch = DatagramBatch()
                batch.append([4, 5, 6])
                try await client.write(batch)
                #expect(try await UDPTestSupport.read(server, count: 1) == [[4, 5, 6]])
                #expect(await server.statistics().datagramsReceived == 1)
                try await raw.channel.close()
            }
        }

        @Test func junkBeforeTheHandshakeDoesNotBreakIt() async throws {
            let transport = UDPTransport()
            let listener = try await transport.listenUDP(on: UDPTestSupport.url("udp://127.0.0.1:0"))
            let raw = try await TestSocket.bind()
            let target = try Self.listenerAddress(listener)
            var random = SeededRandom(seed: 42)
            for _ in 0..<50 { try await raw.send(random.bytes(random.below(200)), to: target) }
            try await raw.send(UDPTestSupport.rtcp(.bye(ssrc: 1)), to: target)
            try await raw.send(UDPTestSupport.rtcp(.accept(ssrc: 1, clientSSRC: 2, nonce: 3, mtu: 1232)), to: target)
            async let accepted = listener.acceptUDP()
            let client = try await transport.connectUDP(to: listener.localURL)
            let server = try #require(await accepted)
            var batch = DatagramBatch()
            batch.append([42])
            try await server.write(batch)
            #expect(try await UDPTestSupport.read(client, count: 1) == [[42]])
            let statistics = await listener.statistics()
            #expect(statistics.linksEstablished == 1)
            #expect(statistics.malformed + statistics.strayDatagrams == 52)
            await client.close()
            await server.close()
            await listener.close()
            try await raw.channel.close()
        }

        @Test func connectingToNothingTimesOut() async throws {
            let silent = try await SilentUDPPort.bind()
            let port = silent.port
            let start = ContinuousClock.now
            do {
                let link = try await UDPTransport().connect(to: UDPTestSupport.url("udp://127.0.0.1:\(port)?connect-timeout-ms=700"))
                await link.close()
                Issue.record("connected to a port where nothing listens")
            } catch let error as ConduitError {
                #expect(error.code == .timedOut)
                #expect(error.message.contains("no answer from udp://127.0.0.1:\(port) within 700 ms"))
            }
            let elapsed = ContinuousClock.now - start
            await silent.close()
            #expect(elapsed >= .milliseconds(650) && elapsed < .seconds(3))
        }

        @Test func cancellingAConnectEndsItPromptly() async throws {
            let silent = try await SilentUDPPort.bind()
            let url = try UDPTestSupport.url("udp://127.0.0.1:\(silent.port)?connect-timeout-ms=5000")
            let start = ContinuousClock.now
            let attempt = Task { () async throws -> Bool in
                let link = try await UDPTransport().connect(to: url)
                await link.close()
                return true
            }
            try await Task.sleep(for: .milliseconds(100))
            attempt.cancel()
            let result = await attempt.result
            await silent.close()
            guard case .failure(let failure) = result else {
                Issue.record("connected to nothing")
                return
            }
            #expect((failure as? ConduitError)?.code == .connectionFailed)
            #expect(ContinuousClock.now - start < .seconds(2))
        }

        @Test(arguments: ["udp://127.0.0.1:0?mtu=100", "udp://127.0.0.1:0?mtu=x", "udp://127.0.0.1:0?colour=red", "udp://127.0.0.1", "udp://127.0.0.1:0/path", "udp://not a host:0"])
        func badURLsAreTypedErrors(_ text: String) async throws {
            await #expect(throws: ConduitError.self) {
                let listener = try await UDPTransport().listen(on: UDPTestSupport.url(text))
                await listener.close()
            }
        }
    }
}

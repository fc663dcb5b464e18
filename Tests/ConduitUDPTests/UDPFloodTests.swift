import ConduitCore
import ConduitImpairment
import NIOCore
import Testing

@testable import ConduitUDP

extension UDPTransportTests {
    @Suite("UDP transport under malformed floods", .timeLimit(.minutes(1)))
    struct UDPFloodTests {
        /// One seeded junk datagram: mostly random bytes, some shaped like our RTP or RTCP.
        static func junk(_ random: inout SeededRandom) -> [UInt8] {
            switch random.below(10) {
            case 0:  // RTP from a stranger
                return UDPTestSupport.rtp(sequence: UInt16(truncatingIfNeeded: random.next()), ssrc: UInt32(truncatingIfNeeded: random.next()), payload: random.bytes(random.below(64)))
            case 1:  // forged HELLO-WITH-COOKIE
                let cookie = UDPCookie(time: UInt32(random.below(20)), tagHigh: random.next(), tagLow: random.next())
                return UDPTestSupport.rtcp(.helloWithCookie(ssrc: 1, nonce: random.next(), version: 1, mtu: 1232, cookie: cookie))
            case 2:  // RTCP-looking garbage (V=2, PT in 192...223)
                var bytes = random.bytes(4 + random.below(60))
                bytes[0] = 0x80 | bytes[0] & 0x3F
                bytes[1] = UInt8(192 + random.below(32))
                return bytes
            default:
                return random.bytes(random.below(300))
            }
        }

        /// Fires 20,000 seeded junk datagrams at `listener` in paced chunks, each accounted for
        /// before the next.
        static func flood(_ listener: UDPListener, from raw: TestSocket, seed: UInt64) async throws {
            let target = try SocketAddress(ipAddress: "127.0.0.1", port: listener.localURL.port!)
            var random = SeededRandom(seed: seed)
            var sent = 0
            for _ in 0..<40 {
                for index in 0..<500 {
                    let envelope = AddressedEnvelope(remoteAddress: target, data: ByteBuffer(bytes: Self.junk(&random)))
                    if index == 499 {
                        try await raw.channel.writeAndFlush(envelope)
                    } else {
                        raw.channel.write(envelope, promise: nil)
                    }
                }
                sent += 500
                // Paced: the listener accounts for each chunk before the next (no kernel drops).
                let expected = sent
                let caughtUp = await UDPTestSupport.eventually(within: .seconds(10)) { await listener.statistics().datagramsAccountedFor >= expected }
                let accounted = await listener.statistics().datagramsAccountedFor
                #expect(caughtUp, "after \(sent) datagrams the listener accounted for \(accounted)")
                if !caughtUp { break }
            }
            #expect(sent == 20_000)
        }

        @Test func twentyThousandMalformedDatagramsBreakNothing() async throws {
            let transport = UDPTransport()
            let listener = try await transport.listenUDP(on: UDPTestSupport.url("udp://127.0.0.1:0"))
            let raw = try await TestSocket.bind()
            try await Self.flood(listener, from: raw, seed: 0xF1_00D)
            let statistics = await listener.statistics()
            #expect(statistics.datagramsAccountedFor == 20_000)
            #expect(statistics.linksEstablished == 0)
            #expect(statistics.badCookies > 0 && statistics.strayDatagrams > 0 && statistics.malformed > 0)
            // Bounded memory, checked where it would leak: junk leaves no per-address state behind
            // (the process's resident size is shared with every suite running beside this one).
            let retained = await listener.retainedState()
            #expect(retained == (links: 0, pendingOutput: 0, awaitingAccept: 0))

            // Afterwards a legitimate client connects and talks.
            async let accepted = listener.acceptUDP()
            let client = try await transport.connectUDP(to: listener.localURL)
            let server = try #require(await accepted)
            var batch = DatagramBatch()
            batch.append(Array("still here".utf8))
            try await client.write(batch)
            #expect(try await UDPTestSupport.read(server, count: 1) == [Array("still here".utf8)])
            try await server.write(batch)
            #expect(try await UDPTestSupport.read(client, count: 1) == [Array("still here".utf8)])
            #expect(await listener.statistics().linksEstablished == 1)
            await client.close()
            await server.close()
            await listener.close()
            try await raw.channel.close()
        }
    }
}

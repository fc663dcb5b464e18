import ConduitCore
import NIOCore
import Testing

@testable import ConduitUDP

extension UDPTransportTests {
    @Suite("UDP transport wire format")
    struct UDPWireTests {
        @Test func sipHash128MatchesTheReferenceVector() {
            // vectors_sip128[0] of the reference implementation: key 00...0f, empty message.
            let hasher = SipHash128(key: (0x0706_0504_0302_0100, 0x0F0E_0D0C_0B0A_0908))
            let (first, second) = hasher.hash([])
            #expect(first == 0xE6A8_25BA_047F_81A3)
            #expect(second == 0x9302_55C7_1472_F66D)
        }

        @Test func controlMessagesRoundTrip() {
            let cookie = UDPCookie(time: 7, tagHigh: 0x0102_0304_0506_0708, tagLow: 0x1112_1314_1516_1718)
            let messages: [UDPControlMessage] = [
                .hello(ssrc: 1, nonce: 2, version: 1, mtu: 1232),
                .cookie(ssrc: 3, nonce: 2, cookie: cookie),
                .helloWithCookie(ssrc: 1, nonce: 2, version: 1, mtu: 1232, cookie: cookie),
                .accept(ssrc: 4, clientSSRC: 1, nonce: 2, mtu: 1232),
                .bye(ssrc: 5),
                .reject(ssrc: 6, clientSSRC: 1, reason: 2),
                .pathChallenge(ssrc: 4, clientSSRC: 1, challenge: 0x0102_0304_0506_0708),
                .pathResponse(ssrc: 1, serverSSRC: 4, challenge: 0x0102_0304_0506_0708),
            ]
            for message in messages {
                let bytes = UDPTestSupport.rtcp(message)
                #expect(bytes.count % 4 == 0)
                #expect(bytes[0] >> 6 == 2, "RTP version 2")
                let buffer = ByteBuffer(bytes: bytes)
                #expect(RTPHeader.looksLikeRTCP(buffer))
                #expect(RTPHeader(parsing: buffer) == nil)
                #expect(UDPControlMessage(parsing: buffer) == message)
                if case .bye = message {
                    #expect(bytes[1] == 203)
                } else {
                    #expect(bytes[1] == 204)
                    #expect(Array(bytes[8..<12]) == Array("CNDT".utf8))
                }
                // Any truncation or extension is refused.
                #expect(UDPControlMessage(parsing: ByteBuffer(bytes: bytes.dropLast(4))) == nil)
                #expect(UDPControlMessage(parsing: ByteBuffer(bytes: bytes + [0, 0, 0, 0])) == nil)
            }
            // The listener never answers with more than it got.
            #expect(UDPTestSupport.rtcp(messages[1]).count <= UDPTestSupport.rtcp(messages[0]).count)
        }

        @Test func rtpHeaderIsVersionTwoPayloadType96() {
            let bytes = UDPTestSupport.rtp(sequence: 0xABCD, ssrc: 0xDEAD_BEEF, payload: [1, 2, 3])
            #expect(Array(bytes[0..<4]) == [0x80, 96, 0xAB, 0xCD])
            #expect(Array(bytes[8..<12]) == [0xDE, 0xAD, 0xBE, 0xEF])
            #expect(RTPHeader(parsing: ByteBuffer(bytes: bytes)) == RTPHeader(sequence: 0xABCD, timestamp: 0, ssrc: 0xDEAD_BEEF))
            var marked = bytes
            marked[1] |= 0x80
            #expect(RTPHeader(parsing: ByteBuffer(bytes: marked)) == nil)
            #expect(RTPHeader(parsing: ByteBuffer(bytes: Array(bytes[0..<11]))) == nil)
        }

        @Test func cookiesBindAddressSSRCAndNonce() throws {
            let jar = UDPCookieJar()
            let client = try SocketAddress(ipAddress: "127.0.0.1", port: 4000)
            let other = try SocketAddress(ipAddress: "127.0.0.1", port: 4001)
            let cookie = jar.mint(for: client, ssrc: 9, nonce: 10, mtu: 1232)
            #expect(jar.verify(cookie, from: client, ssrc: 9, nonce: 10, mtu: 1232))
            #expect(!jar.verify(cookie, from: other, ssrc: 9, nonce: 10, mtu: 1232))
            #expect(!jar.verify(cookie, from: client, ssrc: 8, nonce: 10, mtu: 1232))
            #expect(!jar.verify(cookie, from: client, ssrc: 9, nonce: 11, mtu: 1232))
            #expect(!jar.verify(cookie, from: client, ssrc: 9, nonce: 10, mtu: 1400))
            var stale = cookie
            stale.time &-= UDPCookieJar.lifetime + 1
            #expect(!jar.verify(stale, from: client, ssrc: 9, nonce: 10, mtu: 1232))
            #expect(!UDPCookieJar().verify(cookie, from: client, ssrc: 9, nonce: 10, mtu: 1232), "another listener's secret")
        }

        /// Every datagram on the wire, both ways, is RTP v2 PT 96 with a sequence number one above
        /// the sender's previous one, or an RTCP APP "CNDT" / BYE packet.
        @Test(.timeLimit(.minutes(1))) func everyDatagramOnTheWireIsRTPOrRTCP() async throws {
            let transport = UDPTransport()
            let listener = try await transport.listenUDP(on: UDPTestSupport.url("udp://127.0.0.1:0"))
            let (tap, front) = try await UDPTap.start(upstream: try SocketAddress(ipAddress: "127.0.0.1", port: listener.localURL.port!))
            async let accepted = listener.acceptUDP()
            let client = try await transport.connectUDP(to: UDPTestSupport.url("udp://127.0.0.1:\(front.port!)"))
            let server = try #require(await accepted)
            for round in 0..<5 {
                var batch = DatagramBatch()
                for index in 0..<10 { batch.append([UInt8](repeating: UInt8(round), count: 1 + index * 100)) }
                try await client.write(batch)
                try await server.write(batch)
            }
            #expect(try await UDPTestSupport.read(server, count: 50).count == 50)
            #expect(try await UDPTestSupport.read(client, count: 50).count == 50)
            await client.close()
            _ = try await server.read()  // nil after the client's BYE
            await server.close()  // the peer said BYE already: nothing more is sent
            #expect(await UDPTestSupport.eventually { tap.records.withLock { $0.count } >= 4 + 100 + 1 })
            await listener.close()
            await tap.stop()

            let records = tap.records.withLock { $0 }
            var lastSequence: [Bool: UInt16] = [:]
            var rtpCount = 0
            var names: [String] = []
            for record in records {
                let buffer = ByteBuffer(bytes: record.bytes)
                if let header = RTPHeader(parsing: buffer) {
                    rtpCount += 1
                    #expect(header.ssrc == (record.toServer ? client.localSSRC : server.localSSRC))
                    if let last = lastSequence[record.toServer] { #expect(header.sequence == last &+ 1) }
                    lastSequence[record.toServer] = header.sequence
                } else {
                    let message = try #require(UDPControlMessage(parsing: buffer), "neither RTP nor our RTCP: \(record.bytes.prefix(16))")
                    switch message {
                    case .hello: names.append("HELLO")
                    case .cookie: names.append("COOKIE")
                    case .helloWithCookie: names.append("HELLO-WITH-COOKIE")
                    case .accept: names.append("ACCEPT")
                    case .bye: names.append("BYE")
                    case .reject: names.append("REJECT")
                    case .pathChallenge: names.append("PATH-CHALLENGE")
                    case .pathResponse: names.append("PATH-RESPONSE")
                    }
                }
            }
            #expect(rtpCount == 100)
            #expect(Array(names.prefix(4)) == ["HELLO", "COOKIE", "HELLO-WITH-COOKIE", "ACCEPT"])
            #expect(names.filter { $0 == "BYE" }.count == 1)
        }
    }
}

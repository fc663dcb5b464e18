import ConduitCore
import ConduitImpairment
import ConduitUDP
import NIOCore
import Testing

extension UDPTransportTests {
    @Suite("UDP transport round trips", .timeLimit(.minutes(1)))
    struct UDPRoundTripTests {
        @Test(arguments: ["127.0.0.1", "::1"])
        func thousandDatagramsEachWay(host: String) async throws {
            if host == "::1" {
                // Skip (pass) only where this machine cannot bind ::1 at all.
                guard let probe = try? await UDPTransport().listen(on: UDPTestSupport.url("udp://[::1]:0")) else { return }
                await probe.close()
            }
            try await UDPTestSupport.withPair(host: host) { _, client, server in
                let maxSize = client.capabilities.maxDatagramSize
                var random = SeededRandom(seed: 0x5EED)
                var sent: [Bool: [[UInt8]]] = [true: [], false: []]
                var received: [Bool: [[UInt8]]] = [true: [], false: []]
                for _ in 0..<20 {
                    for toServer in [true, false] {
                        var batch = DatagramBatch()
                        for _ in 0..<50 {
                            let datagram = random.bytes(1 + random.below(maxSize))
                            batch.append(datagram)
                            sent[toServer]!.append(datagram)
                        }
                        try await (toServer ? client : server).write(batch)
                    }
                    // Read each batch before the next, so the kernel's buffers never overflow.
                    received[true]! += try await UDPTestSupport.read(server, count: 50)
                    received[false]! += try await UDPTestSupport.read(client, count: 50)
                }
                for direction in [true, false] {
                    #expect(received[direction]!.count == 1000)
                    #expect(received[direction]!.sorted(by: { $0.lexicographicallyPrecedes($1) }) == sent[direction]!.sorted(by: { $0.lexicographicallyPrecedes($1) }))
                }
                let clientStatistics = await client.statistics()
                #expect(clientStatistics.datagramsSent == 1000)
                #expect(clientStatistics.datagramsReceived == 1000)
                #expect(clientStatistics.bytesSent == sent[true]!.reduce(0) { $0 + $1.count })
                #expect(clientStatistics.droppedMalformed == 0 && clientStatistics.droppedStranger == 0)
            }
        }

        @Test func eitherEndClosingEndsThePeersReads() async throws {
            try await UDPTestSupport.withPair { _, client, server async throws in
                await server.close()
                #expect(try await client.read() == nil)
                var batch = DatagramBatch()
                batch.append([1])
                await #expect(throws: ConduitError.self) { try await client.write(batch) }
                await #expect(throws: ConduitError.self) { try await server.write(batch) }
            }
            try await UDPTestSupport.withPair { _, client, server async throws in
                await client.close()
                #expect(try await server.read() == nil)
            }
        }

        /// As with a listening TCP socket: closing the listener stops accepting, and the links
        /// already accepted keep working (the shared socket closes with the last of them).
        @Test func closingTheListenerLeavesAcceptedLinksWorking() async throws {
            let transport = UDPTransport()
            let listener = try await transport.listenUDP(on: UDPTestSupport.url("udp://127.0.0.1:0"))
            async let accepted = listener.acceptUDP()
            let client = try await transport.connectUDP(to: listener.localURL)
            let server = try #require(await accepted)
            await listener.close()
            #expect(await listener.acceptUDP() == nil)
            var batch = DatagramBatch()
            batch.append([1, 2, 3])
            try await client.write(batch)
            #expect(try await server.read()?[0] == [1, 2, 3])
            try await server.write(batch)
            #expect(try await client.read()?[0] == [1, 2, 3])
            await server.close()
            #expect(try await client.read() == nil)
            await client.close()
            // The socket went with the last link: a new listener can bind the port.
            let again = try await transport.listenUDP(on: listener.localURL)
            await again.close()
        }

        @Test func aLinkWhosePeerVanishedStillCloses() async throws {
            let transport = UDPTransport()
            let listener = try await transport.listenUDP(on: UDPTestSupport.url("udp://127.0.0.1:0"))
            let (tap, front) = try await UDPTap.start(upstream: try SocketAddress(ipAddress: "127.0.0.1", port: listener.localURL.port!))
            async let accepted = listener.acceptUDP()
            let client = try await transport.connectUDP(to: UDPTestSupport.url("udp://127.0.0.1:\(front.port!)"))
            let server = try #require(await accepted)
            // The path to the server vanishes without a BYE (the tap's sockets close).
            await tap.stop()
            var batch = DatagramBatch()
            batch.append([7])
            for _ in 0..<3 {
                // Each may draw an ICMP port-unreachable: a lost datagram, never an error.
                try await client.write(batch)
                try await Task.sleep(for: .milliseconds(20))
            }
            await client.close()
            #expect(try await client.read() == nil)
            await server.close()
            await listener.close()
        }

        @Test func mtuIsAgreedAndCapabilitiesFollowIt() async throws {
            let transport = UDPTransport()
            let listener = try await transport.listenUDP(on: UDPTestSupport.url("udp://127.0.0.1:0?mtu=600"))
            async let accepted = listener.acceptUDP()
            let client = try await transport.connectUDP(to: UDPTestSupport.url("udp://127.0.0.1:\(listener.localURL.port!)?mtu=1400"))
            let server = try #require(await accepted)
            #expect(client.capabilities == server.capabilities)
            #expect(client.capabilities.maxDatagramSize == 588 && client.capabilities.mtu == 588)
            #expect(!client.capabilities.isReliable && !client.capabilities.isOrdered && !client.capabilities.supportsPartialReliability)
            await client.close()
            await server.close()
            await listener.close()
        }
    }
}

import ConduitCore
import ConduitImpairment
import NIOCore
import NIOEmbedded
import Testing

@testable import ConduitUDP

extension UDPTransportTests {
    /// Segmentation offload (UDP_SEGMENT) on the way out and receive offload (UDP_GRO) on the
    /// way in: the bytes on the wire and the datagrams the peer reads are those of datagram-by-
    /// datagram writes.
    @Suite("UDP transport offload", .timeLimit(.minutes(1)))
    struct UDPOffloadTests {
        static func batch(_ sizes: [Int]) -> DatagramBatch {
            var batch = DatagramBatch()
            for (index, size) in sizes.enumerated() { batch.append([UInt8](repeating: UInt8(truncatingIfNeeded: index), count: size)) }
            return batch
        }

        @Test func aRunIsDatagramsOfTheFirstOnesSizeEndedByAShorterOne() {
            let sizes = [100, 100, 100, 40, 100, 100, 120, 120]
            let batch = Self.batch(sizes)
            #expect(UDPLink.endOfRun(in: batch, from: 0) == 4)  // the shorter one closes the run
            #expect(UDPLink.endOfRun(in: batch, from: 4) == 6)  // a larger one starts a new run
            #expect(UDPLink.endOfRun(in: batch, from: 6) == 8)
            #expect(UDPLink.endOfRun(in: batch, from: 7) == 8)
        }

        @Test func aRunStopsAtTheSegmentAndByteLimits() {
            let many = Self.batch([Int](repeating: 10, count: 150))
            #expect(UDPLink.endOfRun(in: many, from: 0) == UDPLink.maxSegments)
            let large = Self.batch([Int](repeating: 1_400, count: 100))
            let end = UDPLink.endOfRun(in: large, from: 0)
            #expect(end * (1_400 + RTPHeader.size) <= UDPLink.maxSegmentedBytes)
            #expect((end + 1) * (1_400 + RTPHeader.size) > UDPLink.maxSegmentedBytes)
        }

        @Test func aCoalescedReadIsSplitAtTheSegmentSizeWithinOneBurst() throws {
            final class Seen: Sendable {
                let datagrams = TSanVisibleMutex<[[UInt8]]>([])
                let bursts = TSanVisibleMutex(0)
            }
            let seen = Seen()
            let channel = EmbeddedChannel(handler: UDPChannelHandler(
                onDatagram: { envelope, _ in seen.datagrams.withLock { $0.append(Array(envelope.data.readableBytesView)) } },
                onBurstEnd: { _ in seen.bursts.withLock { $0 += 1 } }
            ))
            let from = try SocketAddress(ipAddress: "127.0.0.1", port: 4_000)
            var bytes: [UInt8] = []
            for index in 0..<5 { bytes += [UInt8](repeating: UInt8(index), count: index == 4 ? 7 : 30) }
            let metadata = AddressedEnvelope<ByteBuffer>.Metadata(ecnState: .transportNotCapable, packetInfo: nil, segmentSize: 30)
            channel.pipeline.syncOperations.fireChannelRead(NIOAny(AddressedEnvelope(remoteAddress: from, data: ByteBuffer(bytes: bytes), metadata: metadata)))
            // A lone datagram, and one that merely reports its own size, pass whole.
            channel.pipeline.syncOperations.fireChannelRead(NIOAny(AddressedEnvelope(remoteAddress: from, data: ByteBuffer(bytes: [9, 9, 9]))))
            let alone = AddressedEnvelope<ByteBuffer>.Metadata(ecnState: .transportNotCapable, packetInfo: nil, segmentSize: 4)
            channel.pipeline.syncOperations.fireChannelRead(NIOAny(AddressedEnvelope(remoteAddress: from, data: ByteBuffer(bytes: [8, 8, 8, 8]), metadata: alone)))
            channel.pipeline.syncOperations.fireChannelReadComplete()
            let expected: [[UInt8]] = (0..<4).map { [UInt8](repeating: UInt8($0), count: 30) } + [[4, 4, 4, 4, 4, 4, 4], [9, 9, 9], [8, 8, 8, 8]]
            #expect(seen.datagrams.withLock { $0 } == expected)
            #expect(seen.bursts.withLock { $0 } == 1)
            _ = try channel.finish()
        }

        @Test(arguments: ["127.0.0.1", "::1"], ["", "?offload=on", "?offload=off"])
        func fullSizedDatagramsArriveWholeInOrderWithOrWithoutOffload(host: String, query: String) async throws {
            if host == "::1" {
                // Skip (pass) only where this machine cannot bind ::1 at all.
                guard let probe = try? await UDPTransport().listen(on: UDPTestSupport.url("udp://[::1]:0")) else { return }
                await probe.close()
            }
            try await UDPTestSupport.withPair(host: host, query: query) { _, client, server in
                let size = client.capabilities.maxDatagramSize
                var random = SeededRandom(seed: 0x0FF1_0AD)
                var sent: [[UInt8]] = []
                for _ in 0..<4 {
                    var batch = DatagramBatch()
                    for index in 0..<40 {
                        let datagram = random.bytes(index == 39 ? 1 + random.below(size) : size)
                        batch.append(datagram)
                        sent.append(datagram)
                    }
                    try await client.write(batch)
                }
                let received = try await UDPTestSupport.read(server, count: sent.count)
                #expect(received == sent)
                let statistics = await client.statistics()
                #expect(statistics.datagramsSent == sent.count)
                #expect(statistics.segmentationOffloadFailures == 0)
                // `auto` (the default) segments to loopback peers, as this one is.
                if query != "?offload=off", UDPSocket.kernelSupportsOffload {
                    #expect(statistics.segmentedWrites >= 4)
                } else {
                    #expect(statistics.segmentedWrites == 0)
                }
                #expect(await server.statistics().droppedMalformed == 0)
            }
        }

        @Test func offloadIsAutoOnOrOff() async throws {
            await #expect(throws: ConduitError.self) {
                _ = try await UDPTransport().listen(on: UDPTestSupport.url("udp://127.0.0.1:0?offload=maybe"))
            }
            for mode in ["auto", "on", "off"] {
                let listener = try await UDPTransport().listen(on: UDPTestSupport.url("udp://127.0.0.1:0?offload=\(mode)"))
                await listener.close()
            }
        }

        /// A segmented write the route or device cannot take fails, and SwiftNIO closes the socket
        /// on such errors: by default only loopback peers get segmented writes.
        @Test func autoSegmentsOnlyToLoopbackPeers() throws {
            let loopback = [try SocketAddress(ipAddress: "127.0.0.1", port: 1), try SocketAddress(ipAddress: "127.9.8.7", port: 1),
                            try SocketAddress(ipAddress: "::1", port: 1), try SocketAddress(ipAddress: "::ffff:127.0.0.1", port: 1)]
            let elsewhere = [try SocketAddress(ipAddress: "10.0.0.1", port: 1), try SocketAddress(ipAddress: "128.0.0.1", port: 1),
                             try SocketAddress(ipAddress: "2001:db8::1", port: 1), try SocketAddress(ipAddress: "::ffff:10.0.0.1", port: 1)]
            let auto = UDPOffloadPolicy(mode: .auto, kernelSupports: true)
            #expect(loopback.allSatisfy { auto.segments(to: $0) })
            #expect(!elsewhere.contains { auto.segments(to: $0) })
            #expect((loopback + elsewhere).allSatisfy { UDPOffloadPolicy(mode: .on, kernelSupports: true).segments(to: $0) })
            #expect(!(loopback + elsewhere).contains { UDPOffloadPolicy(mode: .off, kernelSupports: true).segments(to: $0) })
            #expect(!loopback.contains { UDPOffloadPolicy(mode: .on, kernelSupports: false).segments(to: $0) })
            #expect(auto.receives && !UDPOffloadPolicy(mode: .off, kernelSupports: true).receives)
            #expect(!UDPOffloadPolicy(mode: .auto, kernelSupports: false).receives)
        }
    }
}

#if KernelSCTP && SCTP
import ConduitCore
import ConduitSCTP
import Testing

/// Linux's SCTP with UDP encapsulation (RFC 6951; `net.sctp.udp_port`, kernel 5.11 and later)
/// talking to our usrsctp-based `sctp+udp://`, which carries plain SCTP packets (CRC32c included)
/// as UDP payloads: a data channel opened each way, messages echoed exactly once, in order, with
/// their type. Needs a kernel with SCTP and the UDP port set, which only the qemu guest of
/// `Scripts/kernel-sctp-vm.sh` has (it sets CONDUIT_KERNEL_SCTP_UDP_PORT); elsewhere it skips.
@Suite(
    "kernel SCTP over UDP with sctp+udp://",
    .enabled(if: KernelSCTPAvailability.udpPort != nil, """
        SKIPPED: needs kernel SCTP with net.sctp.udp_port set (CONDUIT_KERNEL_SCTP_UDP_PORT); run \
        Scripts/kernel-sctp-vm.sh to run it in a qemu guest that has both
        """),
    .serialized,
    .timeLimit(.minutes(3))
)
struct KernelSCTPOverUDPInteropTests {
    /// The SCTP port sctp+udp:// uses at both ends unless told otherwise.
    static let sctpPort = 5_000

    static let messages: [DataChannelMessage] = (0..<200).map { index in
        index % 2 == 0
            ? .string("message \(index) ✓ " + String(repeating: "k", count: index * 7 % 1_100))
            : .binary((0..<(1 + index * 13 % 2_000)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) })
    }

    static func wire(_ message: DataChannelMessage, stream: UInt16) -> KernelDataChannelPeer.Message {
        KernelDataChannelPeer.Message(stream: stream, ppid: message.kind.ppid(count: message.bytes.count).rawValue, bytes: message.bytes)
    }

    @Test("the kernel opens a channel to sctp+udp://, which echoes every message exactly once")
    func kernelOpensToConduit() async throws {
        let listener = try await SCTPAssociation.listen(on: TransportURL(parsing: "sctp+udp://127.0.0.1:0"))
        let udpPort = try #require(listener.localURL.port)
        let sent = Self.messages.map { Self.wire($0, stream: 0) }
        async let kernelSide = onOwnThread { () throws -> (acknowledged: Bool, echoes: [KernelDataChannelPeer.Message]) in
            let peer = try KernelDataChannelPeer.connect(udpPort: udpPort, sctpPort: Self.sctpPort)
            defer { peer.close() }
            try peer.open(stream: 0, label: "from-kernel ✓", protocol: "kernel-interop/1")
            for message in sent { try peer.send(message) }
            var acknowledged = false, echoes: [KernelDataChannelPeer.Message] = []
            while echoes.count < sent.count, let message = try peer.receive() {
                if KernelDataChannelPeer.isAcknowledgement(message) { acknowledged = true } else { echoes.append(message) }
            }
            return (acknowledged, echoes)
        }
        let association = try #require(await listener.accept())
        let channel = try #require(await association.acceptChannel())
        #expect(channel.label == "from-kernel ✓" && channel.protocol == "kernel-interop/1" && channel.streamID == 0)
        var received: [DataChannelMessage] = []
        while received.count < Self.messages.count, let message = await channel.receive() {
            received.append(message)
            try await channel.send(message)
        }
        let (acknowledged, echoes) = try await kernelSide
        #expect(received == Self.messages)
        #expect(acknowledged, "the kernel peer got no DATA_CHANNEL_ACK")
        #expect(echoes == sent)
        let statistics = await association.statistics()
        #expect(statistics.droppedChecksum == 0)
        // Every SCTP message counts, the DCEP one (OPEN or ACK) too: nothing arrived twice.
        #expect(statistics.messagesReceived == Self.messages.count + 1)
        await association.close()
        await listener.close()
    }

    @Test("sctp+udp:// opens a channel to the kernel, which echoes every message exactly once")
    func conduitOpensToKernel() async throws {
        let udpPort = try #require(KernelSCTPAvailability.udpPort)
        let listening = try KernelDataChannelPeer.listen(sctpPort: Self.sctpPort)
        defer { listening.close() }
        let count = Self.messages.count
        async let kernelSide = onOwnThread { () throws -> (label: String, protocol: String, received: [KernelDataChannelPeer.Message]) in
            let peer = try listening.accept()
            defer { peer.close() }
            guard let first = try peer.receive() else { throw KernelDataChannelPeer.Failure(message: "closed before DATA_CHANNEL_OPEN") }
            let open = try KernelDataChannelPeer.parseOpen(first)
            try peer.acknowledge(stream: open.stream)
            var received: [KernelDataChannelPeer.Message] = []
            while received.count < count, let message = try peer.receive() {
                received.append(message)
                try peer.send(message)
            }
            return (open.label, open.protocol, received)
        }
        let association = try await SCTPAssociation.connect(to: TransportURL(parsing: "sctp+udp://127.0.0.1:\(udpPort)"))
        let channel = try await association.openChannel(label: "from-conduit ✓", protocol: "conduit-interop/1")
        for message in Self.messages { try await channel.send(message) }
        var echoes: [DataChannelMessage] = []
        while echoes.count < count, let message = await channel.receive() { echoes.append(message) }
        let kernel = try await kernelSide
        #expect(kernel.label == "from-conduit ✓" && kernel.protocol == "conduit-interop/1")
        #expect(kernel.received == Self.messages.map { Self.wire($0, stream: channel.streamID) })
        #expect(echoes == Self.messages)
        let statistics = await association.statistics()
        #expect(statistics.droppedChecksum == 0)
        // Every SCTP message counts, the DCEP one (OPEN or ACK) too: nothing arrived twice.
        #expect(statistics.messagesReceived == Self.messages.count + 1)
        await association.close()
    }
}
#endif

#if SCTP
import ConduitCore
import Testing

@testable import ConduitSCTP

/// What lies below the session scheduler on `sctp+udp://` (issue 17, item 3): I-DATA offered
/// and negotiated between two Conduit ends, and each session's priority carried to the peer in
/// its channel's DATA_CHANNEL_OPEN and to usrsctp's stream scheduler.
@Suite("SCTP over UDP: interleaving and stream priorities", .timeLimit(.minutes(1)))
struct SCTPSchedulingTests {
    /// A client link to a fresh listener with `listenQuery`, the listener's accepted link, and a
    /// way to close everything.
    struct Pair {
        let client: SCTPLink
        let server: SCTPLink
        let listener: SCTPListener

        static func connect(listenQuery: String = "", connectQuery: String = "") async throws -> Pair {
            let transport = SCTPTransport()
            let listener = try await transport.listenSCTP(on: TransportURL(parsing: "sctp+udp://127.0.0.1:0\(listenQuery)"))
            let port = try #require(listener.localURL.port)
            async let accepted = listener.accept()
            let client = try await transport.connectSCTP(to: TransportURL(parsing: "sctp+udp://127.0.0.1:\(port)\(connectQuery)"))
            let server = try #require(try await accepted as? SCTPLink)
            return Pair(client: client, server: server, listener: listener)
        }

        func close() async {
            await client.close()
            await server.close()
            await listener.close()
        }
    }

    @Test("two Conduit ends negotiate I-DATA (RFC 8260) unless one side turns it off")
    func interleavingNegotiated() async throws {
        let both = try await Pair.connect()
        #expect(await both.client.statistics().interleaving)
        #expect(await both.server.statistics().interleaving)
        await both.close()

        let refused = try await Pair.connect(listenQuery: "?interleaving=off")
        #expect(await refused.client.statistics().interleaving == false)
        #expect(await refused.server.statistics().interleaving == false)
        await refused.close()
    }

    @Test("each session's channel opens with WebRTC's priority value for the session's priority, and messages arrive")
    func prioritiesReachThePeer() async throws {
        let pair = try await Pair.connect()
        let priorities: [(UInt16, OutboundSessionOptions.Priority)] = [(100, .high), (101, .low), (102, .veryLow), (103, .medium)]
        var batch = DatagramBatch()
        for (stream, priority) in priorities {
            batch.append([UInt8(stream & 0xFF)], tag: FrameTag(channel: FrameTag.sessionChannel(stream: stream, subgroupID: 0), priority: priority))
        }
        try await pair.client.write(batch)
        var received: [[UInt8]] = []
        while received.count < priorities.count, let read = try await pair.server.read() {
            for index in 0..<read.count { received.append(read.withDatagram(index) { Array($0) }) }
        }
        #expect(Set(received) == Set(priorities.map { [UInt8($0.0 & 0xFF)] }))

        let opened = try await pair.server.connection.stack.loop.submit { () -> [String: UInt16] in
            var byLabel: [String: UInt16] = [:]
            for record in pair.server.connection.channels.values { byLabel[record.open.label] = record.open.priority }
            return byLabel
        }.get()
        #expect(opened["conduit/100"] == 1024)
        #expect(opened["conduit/101"] == 256)
        #expect(opened["conduit/102"] == 128)
        #expect(opened["conduit/103"] == 512)
        let sender = await pair.client.statistics()
        #expect(sender.priorityRefused == 0)
        await pair.close()
    }

    @Test("send-buffer, receive-buffer and interleaving parse, round-trip and are range-checked")
    func bufferOptions() throws {
        let url = try TransportURL(parsing: "sctp+udp://127.0.0.1:9?send-buffer=524288&receive-buffer=131072&interleaving=off")
        let options = try SCTPOptions(url, listening: false)
        #expect(options.sendBufferBytes == 524_288 && options.receiveBufferBytes == 131_072 && !options.interleaving)
        #expect(options.limits.settings.receive_buffer_bytes == 131_072 && options.limits.settings.interleaving == 0)
        let back = TransportURL(scheme: SCTPOptions.scheme, host: "127.0.0.1", port: 9, query: options.query)
        #expect(try SCTPOptions(back, listening: false) == options)
        let defaults = try SCTPOptions(TransportURL(parsing: "sctp+udp://127.0.0.1:9"), listening: false)
        #expect(defaults.sendBufferBytes == SCTPOptions.defaultBufferBytes && defaults.interleaving)
        // A send buffer smaller than the largest message could never take that message.
        for bad in ["send-buffer=65536", "receive-buffer=999999999", "receive-buffer=4096", "interleaving=maybe"] {
            let error = #expect(throws: ConduitError.self) { try SCTPOptions(TransportURL(parsing: "sctp+udp://127.0.0.1:9?\(bad)"), listening: false) }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains(String(bad.prefix { $0 != "=" })) == true)
        }
    }
}
#endif

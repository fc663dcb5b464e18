// Built with the SCTP trait only (swift build --enable-all-traits), as ConduitSCTP is.
#if SCTP
import ConduitCore
import ConduitSCTP
import Testing

/// README "SCTP over UDP and standard data channels": a channel to a standard peer and its echo.
@Suite struct ReadmeSCTPProgramTests {
    @Test func standardDataChannel() async throws {
        let (label, reply) = try await within("the data channel program") { try await Self.dataChannel() }
        #expect(label == "chat")
        #expect(reply == .string("hello"))
    }

    static func dataChannel() async throws -> (String?, DataChannelMessage?) {
        let listener = try await SCTPAssociation.listen(on: TransportURL(parsing: "sctp+udp://127.0.0.1:0"))
        let association = try await SCTPAssociation.connect(to: listener.localURL)  // e.g. sctp+udp://127.0.0.1:5000
        let channel = try await association.openChannel(label: "chat", protocol: "text/1",
                                                        reliability: Reliability(ordered: false, limit: .maxRetransmits(0)))
        try await channel.send(.string("hello"))
        let peer = await listener.accept()         // the other end: its association, then its channels
        let incoming = await peer?.acceptChannel() // label "chat", protocol "text/1"
        if let message = await incoming?.receive() { try await incoming?.send(message) }   // an echo
        let reply = await channel.receive()        // DataChannelMessage: .string or .binary, nil once closed
        await association.close()
        await peer?.close()
        await listener.close()
        return (incoming?.label, reply)
    }
}
#endif

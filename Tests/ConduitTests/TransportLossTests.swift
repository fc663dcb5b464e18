import Conduit
import ConduitCore
import Testing

/// A call whose transport dies without a goodbye: sessions close with `internal` (an unexpected
/// internal error, in the seed's words), the call with `transportClosed`; an orderly hang-up is
/// `sessionEnd` (see CloseTests). The peer here is a raw link driven by hand, so the test controls
/// exactly when the link vanishes.
@Suite("Transport loss")
struct TransportLossTests {
    /// Connects the runtime to a raw peer that says hello and returns its link.
    func connectToRawPeer(_ name: String) async throws -> (ConduitRuntime, Call, any TransportLink, any TransportListener) {
        let runtime = ConduitRuntime(configuration: .testDefaults, registry: .defaults)
        let transport = try #require(runtime.registry.transport(for: "loopback"))
        let raw = try await transport.listen(on: TransportURL(parsing: "loopback://\(name)"))
        let peerLink = Task { () async throws -> (any TransportLink)? in
            guard let link = try await raw.accept() else { return nil }
            var hello = DatagramBatch()
            hello.append(ControlFrame.hello(peer: "raw", dataSessionsSupported: true).encoded)
            try await link.write(hello)
            return link
        }
        let call = try await within("connect to the raw peer") { try await runtime.connect(to: "loopback://\(name)", as: "alice") }
        let link = try #require(try await within("the raw peer's link") { try await peerLink.value })
        return (runtime, call, link, raw)
    }

    @Test("outbound sessions close with internal when the link vanishes; sends are then refused")
    func outboundClosesWithInternal() async throws {
        let (_, call, link, raw) = try await connectToRawPeer("loss-outbound")
        #expect(call.remotePeer == "raw")
        let session = try await call.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        try await session.send([1, 2, 3], timestamp: 1)
        await link.close()  // no goodbye

        let events = try await drain(session.events, "the outbound session to close")
        #expect(events.last == .closed(.internal))
        #expect(await session.closeReason == .internal)
        let error = await conduitError { () throws(ConduitError) in try await session.send([4], timestamp: 2) }
        #expect(error?.code == .sessionClosed)
        #expect(error?.closeReason == .internal)
        let callEvents = try await drain(call.events, "the call to end")
        #expect(callEvents.last == .disconnected(.transportClosed))
        await raw.close()
    }

    @Test("inbound sessions deliver what arrived, then close with internal when the link vanishes")
    func inboundClosesWithInternal() async throws {
        let (_, call, link, raw) = try await connectToRawPeer("loss-inbound")
        var batch = DatagramBatch()
        batch.append(ControlFrame.sessionOpen(streamID: 300, subgroupID: 0, subgroup: nil, type: .reliableMessage).encoded)
        let header = DataFrameHeader(streamID: 300, sessionType: .reliableMessage, messageID: 0, fragmentOffset: 0, totalLength: 5, fragmentSize: 1_200, timestamp: 77)
        [UInt8]("hello".utf8).withUnsafeBytes { batch.appendDataFrame(header, payload: $0) }
        try await link.write(batch)

        var incoming: (StreamID, SessionType)?
        for await event in call.events {
            if case .dataSessionIncoming(let streamID, _, let type) = event {
                incoming = (streamID, type)
                break
            }
        }
        #expect(incoming?.0 == 300 && incoming?.1 == .reliableMessage)
        let session = try await call.makeInboundDataSession(streamID: 300, expecting: .reliableMessage)
        await link.close()  // no goodbye

        let events = try await drain(session, "the inbound session to close")
        #expect(events == [.message(.init(bytes: Array("hello".utf8), timestamp: 77)), .closed(.internal)])
        await raw.close()
    }
}

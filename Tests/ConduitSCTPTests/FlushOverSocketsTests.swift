#if SCTP
import Conduit
import ConduitCore
import ConduitImpairment
import ConduitNetworkTestSupport
import ConduitSCTP
import ConduitUDP
import Testing

/// `flush(timeout:)` and `close(timeout:)` over real sockets through the impairment proxy: on
/// `udp://` the reliability engine answers per session, on `sctp+udp://` usrsctp per association.
/// A cut path makes the flush throw `notAcknowledged`; healed, the close delivers everything.
@Suite("Flush over sockets", .timeLimit(.minutes(2)))
struct FlushOverSocketsTests {
    static let transports: [(scheme: String, transport: any Transport)] = [("udp", UDPTransport()), ("sctp+udp", SCTPTransport())]

    @Test("acknowledged, then cut (throws notAcknowledged), then healed (close returns, all arrive once, in order)", arguments: 0..<2)
    func flushOverSockets(_ which: Int) async throws {
        let (scheme, transport) = Self.transports[which]
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        var impairment = ImpairmentConfiguration()
        impairment.loss = 0.01
        impairment.seed = 11
        let call = try await ImpairedCall.connect(scheme: scheme, transport: transport, configuration: configuration, impairment: impairment)
        let outbound = try await call.caller.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        #expect(await call.nextIncomingSession()?.streamID == 100)
        let inbound = try await call.callee.makeInboundDataSession(streamID: 100, expecting: .reliableMessage)
        let reader = Task { () -> [InboundDataSession.Message] in
            var received: [InboundDataSession.Message] = []
            for await event in inbound.events {
                guard case .message(let message) = event else { continue }
                received.append(message)
                if received.count == 60 { break }
            }
            return received
        }
        let messages: [[UInt8]] = (0..<60).map { index in (0..<500).map { UInt8(truncatingIfNeeded: index &* 7 &+ $0) } }
        for index in 0..<50 { try await outbound.send(messages[index], timestamp: UInt64(index)) }
        try await outbound.flush(timeout: .seconds(30))
        // What the transport measured meanwhile: our engine all of it, usrsctp its packets.
        let path = try #require(await call.caller.linkStatistics)
        #expect(path.packetsSent > 0 && path.packetsReceived > 0 && path.mtu > 0)
        if scheme == "udp" {
            #expect(path.smoothedRTT.map { $0 > .zero } == true && path.rttVariation != nil)
            #expect(path.congestionWindow.map { $0 > 0 } == true && path.pacingRate.map { $0 > 0 } == true)
            #expect(path.packetsLost != nil && path.packetsRetransmitted != nil)
        }

        await call.proxy.setPartitioned(true)
        for index in 50..<60 { try await outbound.send(messages[index], timestamp: UInt64(index)) }
        var failure: ConduitError?
        do throws(ConduitError) { try await outbound.flush(timeout: .milliseconds(500)) } catch { failure = error }
        #expect(failure?.code == .notAcknowledged, "\(scheme): \(String(describing: failure))")

        await call.proxy.setPartitioned(false)
        try await outbound.close(timeout: .seconds(30))
        let received = await reader.value
        #expect(received.map(\.timestamp) == Array(UInt64(0)..<60))
        #expect(received.map(\.bytes) == messages)
        await call.end()
    }
}
#endif

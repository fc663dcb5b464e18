#if SCTP
import Conduit
import ConduitCore
import ConduitSCTP
import Testing

/// Over `sctp+udp://`, a receiver that hangs up the moment its last message arrives (as
/// `conduit listen --expect` and `conduit bench` do) has still received, and acknowledged,
/// everything: the sender's association is kept while usrsctp delivers what it owes after the
/// peer's SHUTDOWN (RFC 9260 section 9.2), so the sender's `close(timeout:)` returns instead of
/// counting the last messages as unacknowledged.
@Suite("A receiver hanging up at once over sctp+udp", .timeLimit(.minutes(2)))
struct ReceiverHangUpTests {
    @Test("the receiver hangs up right after its last read: the sender's close(timeout:) succeeds", arguments: 0..<3)
    func closeSucceedsWhenTheReceiverHangsUpAtOnce(_ round: Int) async throws {
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        let runtime = ConduitRuntime(configuration: configuration, registry: TransportRegistry([SCTPTransport()]))
        let listener = try await runtime.listen(on: "sctp+udp://127.0.0.1:0", as: "receiver")
        defer { Task { await listener.close() } }
        let count = 300
        let receiver = Task { () -> Int in
            guard let call = try await listener.accept() else { return 0 }
            var received = 0
            for await event in call.events {
                guard case .dataSessionIncoming(let streamID, _, let type) = event else { continue }
                let inbound = try await call.makeInboundDataSession(streamID: streamID, expecting: type)
                for await event in inbound.events {
                    guard case .message = event else { break }
                    received += 1
                    if received == count { break }
                }
                break
            }
            await call.hangUp()  // at once, as a listener that got what it expected
            return received
        }
        let call = try await runtime.connect(to: listener.url.description, as: "sender")
        let outbound = try await call.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        for index in 0..<count { try await outbound.send([UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 1_024)) }
        var failure: ConduitError?
        do throws(ConduitError) { try await outbound.close(timeout: .seconds(20)) } catch { failure = error }
        #expect(try await receiver.value == count)
        #expect(failure == nil, "round \(round): \(String(describing: failure))")
        await call.hangUp()
    }
}
#endif

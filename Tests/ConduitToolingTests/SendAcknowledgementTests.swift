import Conduit
import ConduitCore
import ConduitLoopback
import ConduitTooling
import Testing

/// `conduit send` is done only when the peer acknowledged every reliable message: when the path
/// to the peer is cut after the session opened, the job fails with `notAcknowledged` (the command
/// exits non-zero) instead of reporting everything sent.
@Suite("Send waits for acknowledgement")
struct SendAcknowledgementTests {
    @Test("the path cut once the session is announced: the send job throws notAcknowledged, naming how many")
    func cutPathFailsTheJob() async throws {
        let hub = LoopbackHub()
        var runtime = ConduitRuntime.forToolingTests()
        // Generous: in the suite's parallel first pass the in-process connect has taken 4.7 s of
        // the tooling tests' 5 s. The job's own timeout is what ends the wait for acknowledgements.
        runtime.configuration.connectTimeout = .seconds(20)
        runtime.registry = TransportRegistry([LoopbackTransport(hub: hub)])
        let name = "send-cut"
        let listener = try await runtime.listen(on: "loopback://\(name)", as: "bob")
        // The receiver takes the session and cuts the path once the first message arrived; the
        // rate cap spreads the other 19 over about 1.5 s, so they cannot all be acknowledged.
        let receiver = Task {
            guard let call = try await listener.accept() else { return }
            for await event in call.events {
                guard case .dataSessionIncoming(let streamID, _, let type) = event else { continue }
                let inbound = try await call.makeInboundDataSession(streamID: streamID, expecting: type)
                for await event in inbound.events where event.isMessage {
                    hub.setPartitioned(name, true)
                    break
                }
                break
            }
        }
        let job = SendJob(runtime: runtime, options: .init(
            url: "loopback://\(name)?loss=0.01&seed=9", streamID: 100, type: .reliableMessage, count: 20, sizes: 1_000...1_000, rate: .bitsPerSecond(50_000), timeout: .seconds(20)
        ))
        var failure: ConduitError?
        do throws(ConduitError) { _ = try await job.run() } catch { failure = error }
        #expect(failure?.code == .notAcknowledged, "\(String(describing: failure))")
        #expect(failure?.message.contains("reliable messages") == true)
        #expect(failure?.message.hasPrefix("0 ") == false, "\(String(describing: failure))")
        receiver.cancel()
        await listener.close()
    }
}

extension InboundDataSession.Event {
    fileprivate var isMessage: Bool {
        if case .message = self { return true }
        return false
    }
}

import Conduit
import ConduitCore
import ConduitLoopback
import ConduitRelay
import ConduitRelayCore
import ConduitTesting
import Testing

/// In a room, reliable data is done once the relay acknowledged it: `flush(timeout:)` returns
/// then, and `leave(timeout:)` throws `notAcknowledged`, counting the messages, when the path to
/// the relay is cut. On virtual time, over an impaired loopback path to a real relay.
@Suite("Conference flush and leave wait for the relay")
struct ConferenceFlushTests {
    @Test("flush returns once the relay has every message; cut off, leave(timeout:) leaves anyway and counts what it did not acknowledge")
    func leaveReportsWhatTheRelayDidNotAcknowledge() async throws {
        let clock = VirtualClock()
        let hub = LoopbackHub(clock: clock)
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        let runtime = ConduitRuntime(configuration: configuration, registry: TransportRegistry([LoopbackTransport(hub: hub)]))
        var virtual = runtime
        virtual.clock = clock
        var relay = RelayConfiguration()
        relay.vanishTimeout = .seconds(3_600)
        let server = RelayServer(authority: RelayTokenAuthority(secret: LoopbackRoom.secret), configuration: relay, registry: runtime.registry, clock: clock)
        let name = "relay-flush"
        let bound = try await server.listen(on: "loopback://\(name)")
        let room = LoopbackRoom(runtime: virtual, server: server, url: bound.description)
        let alice = try await virtual.join(relay: "\(bound)?loss=0.01&seed=4", room: "room", as: "alice", token: room.token("alice"))

        let outbound = try await alice.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        for index in 0..<10 { try await outbound.send(Array("message \(index)".utf8)) }
        try await clock.run(advancingBy: .milliseconds(5), limit: .seconds(10)) {
            try await outbound.flush(timeout: .seconds(5))
        }

        hub.setPartitioned(name, true)
        for index in 10..<14 { try await outbound.send(Array("message \(index)".utf8)) }
        let error = try await clock.run(advancingBy: .milliseconds(20), limit: .seconds(60)) { () async -> ConduitError? in
            do throws(ConduitError) {
                try await alice.leave(timeout: .seconds(1))
                return nil
            } catch {
                return error
            }
        }
        #expect(error?.code == .notAcknowledged)
        #expect(error?.message.hasPrefix("4 reliable messages of the room") == true, "\(String(describing: error))")
        #expect(await alice.isEnded)
        try await clock.run(advancingBy: .milliseconds(20), limit: .seconds(60)) { await server.shutdown() }
    }
}

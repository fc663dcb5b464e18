import Conduit
import ConduitCore
import ConduitRooms
import ConduitRelay
import ConduitUDP
import Testing

/// A token longer than one datagram still rides the join (in parts over udp://, whose reliable
/// link sends a frame too large for a packet in parts), and the relay judges it; a token over the
/// protocol's limit is a clear error before anything is sent, never a closed link or a silent
/// truncation.
@Suite struct JoinTokenSizeTests {
    /// udp:// carries 1,220-byte datagrams by default; these joins are larger.
    @Test func aTokenLongerThanADatagramRidesTheJoinInParts() async throws {
        let runtime = ConduitRuntime(registry: TransportRegistry.defaults.registering(UDPTransport()))
        let server = RelayServer(authority: RelayTokenAuthority(secret: LoopbackRoom.secret), registry: runtime.registry)
        let url = try await server.listen(on: "udp://127.0.0.1:0")
        let room = LoopbackRoom(runtime: runtime, server: server, url: url.description)
        // A real token made long by the subgroups it allows: the member gets in.
        let subgroups = Set((0..<60).map { SubgroupName(unchecked: "whiteboard-layer-\($0)") })
        let long = room.token("alice", subgroups: subgroups)
        #expect((1_300...RoomControlFrame.maxTokenBytes).contains(long.utf8.count), "\(long.utf8.count) bytes")
        let alice = try await runtime.join(relay: url.description, room: "room", as: "alice", token: long)
        #expect(await server.members(of: "room").values.contains("alice"))
        // A made-up one of 1,500 bytes arrives whole too, and is refused for what it is.
        do {
            _ = try await runtime.join(relay: url.description, room: "room", as: "bob", token: String(repeating: "t", count: 1_500))
            Issue.record("a join with a made-up 1,500-byte token succeeded")
        } catch {
            #expect(error.code == .connectionFailed)
            #expect(error.message.contains("tokenMalformed"))
        }
        #expect(await server.statistics.refusals == [.tokenMalformed: 1])
        await alice.leave()
        await server.shutdown()
    }

    @Test func aTokenOverTheProtocolLimitIsRefusedBeforeConnecting() async throws {
        let runtime = ConduitRuntime()
        let token = String(repeating: "t", count: RoomControlFrame.maxTokenBytes + 1)
        do {
            // Nothing listens at this name: the size is checked first.
            _ = try await runtime.join(relay: "loopback://nobody-here", room: "room", as: "alice", token: token)
            Issue.record("a join with an oversize token went ahead")
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.contains("at most \(RoomControlFrame.maxTokenBytes)"))
        }
    }
}

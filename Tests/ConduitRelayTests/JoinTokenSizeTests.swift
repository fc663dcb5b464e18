import Conduit
import ConduitCore
import ConduitRooms
import ConduitRelay
import ConduitUDP
import Testing

/// A token too long for the join is a clear error before anything is sent, not a closed link or a
/// silent truncation.
@Suite struct JoinTokenSizeTests {
    /// udp:// carries 1,220-byte datagrams by default: a 1,500-byte token cannot ride in a join.
    @Test func aTokenLongerThanADatagramIsRefusedWithItsSize() async throws {
        let runtime = ConduitRuntime(registry: TransportRegistry.defaults.registering(UDPTransport()))
        let server = RelayServer(authority: RelayTokenAuthority(secret: LoopbackRoom.secret), registry: runtime.registry)
        let url = try await server.listen(on: "udp://127.0.0.1:0")
        let token = String(repeating: "t", count: 1_500)   // under maxTokenBytes, over one datagram
        do {
            _ = try await runtime.join(relay: url.description, room: "room", as: "alice", token: token)
            Issue.record("a join with a 1,500-byte token over udp:// succeeded")
        } catch {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.contains("1500 bytes"))
            #expect(error.message.contains("one datagram"))
        }
        // The relay saw no join, and a member with a proper token still gets in.
        let room = LoopbackRoom(runtime: runtime, server: server, url: url.description)
        let (alice, _) = try await room.join("alice")
        await alice.leave()
        #expect(await server.statistics.refusals.isEmpty)
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

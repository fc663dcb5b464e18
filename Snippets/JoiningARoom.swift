// A group room through a relay running in process on loopback: three peers join with tokens,
// alice sends to everyone and then to bob only, and a subgroup carries its own session.
// snippet.hide
import Foundation

Task.detached {
    try? await Task.sleep(for: .seconds(30))
    print("FAILED: the snippet did not finish within 30 s")
    exit(1)
}
func check(_ condition: Bool, _ what: String) {
    if !condition { print("FAILED: \(what)"); exit(1) }
}
/// The text of the next message on the session.
func next(_ session: InboundDataSession) async -> (PeerID?, String)? {
    for await event in session.events {
        if case .message(let message) = event { return (message.sender, String(decoding: message.bytes, as: UTF8.self)) }
    }
    return nil
}
/// Waits for `dataSessionIncoming` of `streamID` and makes the inbound session.
func inbound(_ room: Conference, _ streamID: StreamID, subgroup: SubgroupName? = nil) async throws -> InboundDataSession? {
    for await event in room.events {
        if case .dataSessionIncoming(streamID, subgroup, let type, _) = event {
            return try await room.makeInboundDataSession(streamID: streamID, subgroup: subgroup, expecting: type)
        }
    }
    return nil
}
/// Waits until `room` has seen `count` other peers.
func waitForPeers(_ room: Conference, _ count: Int) async throws {
    while await room.peers.count < count { try await Task.sleep(for: .milliseconds(10)) }
}
// snippet.show
import Conduit
import ConduitRelay

// The relay, in process, on the runtime's registry (so loopback names are shared).
let runtime = ConduitRuntime()
let secret = try RelaySecret(bytes: Array("a relay secret of at least 16 bytes".utf8))
let relay = RelayServer(authority: RelayTokenAuthority(secret: secret), registry: runtime.registry)
let url = try await relay.listen(on: "loopback://relay").description

// Tokens are minted by the app's server: room, peer, rights, subgroups, expiry.
func token(_ peer: PeerID) -> String {
    RelayToken(room: "standup", peer: peer, canPublish: true, canSubscribe: true,
               allowedSubgroups: ["design"], expiresAt: RelayServer.unixTime() + 600).signed(with: secret)
}
let alice = try await runtime.join(relay: url, room: "standup", as: "alice", token: token("alice"))
let bob = try await runtime.join(relay: url, room: "standup", as: "bob", token: token("bob"))
let carol = try await runtime.join(relay: url, room: "standup", as: "carol", token: token("carol"))
// snippet.hide
try await waitForPeers(alice, 2)
// snippet.show

// To everyone in the room, then to bob only.
let chat = try await alice.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
try await chat.send(Array("hello everyone".utf8))
guard let bobChat = try await inbound(bob, 100), let carolChat = try await inbound(carol, 100) else { exit(1) }
let toBob = await next(bobChat), toCarol = await next(carolChat)
print(toBob as Any, toCarol as Any)                   // ("alice", "hello everyone") twice

_ = await chat.changeDestination("bob")               // later sends: bob only
try await chat.send(Array("just you".utf8))
let bobOnly = await next(bobChat)
print(bobOnly as Any)                                 // ("alice", "just you")

// A subgroup: its own sessions, for its subscribers only.
await alice.subscribe("design")                       // true once the relay confirmed
await bob.subscribe("design")
let sketches = try await alice.makeOutboundDataSession(streamID: 100, type: .reliableMessage, subgroup: "design")
try await sketches.send(Array("new sketch".utf8))
guard let bobSketches = try await inbound(bob, 100, subgroup: "design") else { exit(1) }
let sketch = await next(bobSketches)
print(sketch as Any)                                  // ("alice", "new sketch")

for member in [alice, bob, carol] { await member.leave() }
await relay.shutdown()
// snippet.hide
check(toBob?.0 == "alice" && toBob?.1 == "hello everyone", "bob got hello everyone from alice")
check(toCarol?.1 == "hello everyone", "carol got hello everyone")
check(bobOnly?.1 == "just you", "bob got the message sent to him only")
check(sketch?.1 == "new sketch", "bob got the subgroup's message")

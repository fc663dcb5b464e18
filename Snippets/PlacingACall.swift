// Invitations through an in-process relay: alice calls bob (an invitation carrying the call's
// room), bob answers, and both end up in the call room; then a group invitation that bob rejects.
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
import Conduit
import ConduitRelay

let runtime = ConduitRuntime()
let secret = try RelaySecret(bytes: Array("a relay secret of at least 16 bytes".utf8))
let relay = RelayServer(authority: RelayTokenAuthority(secret: secret), registry: runtime.registry)
let url = try await relay.listen(on: "loopback://relay").description
func token(_ peer: PeerID, room: RoomID) -> String {
    RelayToken(room: room, peer: peer, canPublish: true, canSubscribe: true, expiresAt: RelayServer.unixTime() + 600)
        .signed(with: secret)
}
// snippet.show
// Caller and callee each wait in a lobby room on the relay.
let aliceLobby = try await runtime.join(relay: url, room: "lobby-alice", as: "alice", token: token("alice", room: "lobby-alice"))
let bobLobby = try await runtime.join(relay: url, room: "lobby-bob", as: "bob", token: token("bob", room: "lobby-bob"))

// Callee: ring, then answer (joins the room named in the invitation, then accepts).
let callee = Task { () throws -> Conference? in
    for await event in bobLobby.invitationEvents {
        guard case .newInvitation(let ring) = event else { continue }
        print("ring from", ring.inviter)
        return try await runtime.answerCall(ring, on: bobLobby, relay: url, token: token("bob", room: "call-42"))
    }
    return nil
}
// Caller: returns the call room's Conference once bob accepted; throws CallNotAnswered otherwise.
let call = try await runtime.placeCall(on: aliceLobby, to: "bob", room: "call-42",
                                       relay: url, token: token("alice", room: "call-42"), timeout: .seconds(30))
let answered = try await callee.value
print(call.room, answered?.room as Any)                        // call-42 call-42

// A group invitation with custom data; bob rejects it with his own.
let receipt = try await aliceLobby.invite(["bob"], group: "class", data: Array("raise hands".utf8), timeout: .seconds(20))
for await event in bobLobby.invitationEvents {
    guard case .newInvitation(let invitation) = event else { continue }
    try await bobLobby.reject(invitation.id, data: Array("busy".utf8))
    break
}
var outcome: InvitationOutcome?
while outcome == nil {                                         // once every invitee settled
    outcome = await aliceLobby.outcome(of: receipt.id)
    // snippet.hide
    if outcome == nil { try await Task.sleep(for: .milliseconds(10)) }
    // snippet.show
}
print(outcome?.state(of: "bob") as Any, outcome.flatMap { $0.answerData["bob"] }.map { String(decoding: $0, as: UTF8.self) } as Any)

for conference in [call, aliceLobby, bobLobby] { await conference.leave() }
await answered?.leave()
await relay.shutdown()
// snippet.hide
check(call.room == "call-42" && answered?.room == "call-42", "both joined the call room")
check(outcome?.state(of: "bob") == .rejected, "bob rejected the group invitation")

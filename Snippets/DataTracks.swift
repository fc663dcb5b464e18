// Data tracks (Twilio style) and labeled channels (Sora style) in a room on an in-process relay:
// alice publishes a "whiteboard" track that bob subscribes to, and both declare a "#chat" channel
// whose messages arrive with the sender header the relay fills in.
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
func token(_ peer: PeerID) -> String {
    RelayToken(room: "board", peer: peer, canPublish: true, canSubscribe: true, expiresAt: RelayServer.unixTime() + 600)
        .signed(with: secret)
}
// snippet.show
// Labeled channels are declared when joining; the first declaration of a label sets its options.
let chatChannel = try ChannelDeclaration(label: "#chat", direction: .sendrecv, senderHeader: true)
let alice = try await runtime.join(relay: url, room: "board", as: "alice", token: token("alice"), channels: [chatChannel])
let bob = try await runtime.join(relay: url, room: "board", as: "bob", token: token("bob"), channels: [chatChannel])

// A track: named, one publisher; at most one of maxRetransmits and maxPacketLifeTime.
let strokes = try Reliability(ordered: false, maxPacketLifeTime: 500)      // milliseconds
guard let whiteboard = await alice.publishDataTrack("whiteboard", reliability: strokes) else { exit(1) }

// bob learns of it from an event (later joiners too), and subscribes.
var subscription: RemoteDataTrack?
var channelsReady = false
for await event in bob.events {
    switch event {
    case .dataTrackPublished(let name, let publisher, _):
        subscription = await bob.subscribeDataTrack(name, of: publisher)
    case .channelsReady(let channels):
        channelsReady = channels.contains { $0.declaration.label == "#chat" }
    default:
        break
    }
    if subscription != nil && channelsReady { break }
}
guard let subscription else { exit(1) }

// A subscriber gets what is sent after it subscribed.
try await whiteboard.send(Array("stroke 1".utf8))
var strokeReceived: String?
for await message in subscription.messages {
    strokeReceived = String(decoding: message, as: UTF8.self)
    break
}
print(strokeReceived as Any)                                   // "stroke 1"

// A channel message: header (the sender's member number, 2 bytes) + message, as Sora hands it over.
// snippet.hide
for await event in alice.events { if case .channelsReady = event { break } }
// snippet.show
try await alice.sendChannelMessage("#chat", Array("hi".utf8))
var chatReceived: Conference.ChannelMessage?
for await message in bob.channelMessages {
    chatReceived = message
    break
}
print(chatReceived.map { ($0.label, $0.sender, $0.header.count, String(decoding: $0.message, as: UTF8.self)) } as Any)
// ("#chat", "alice", 2, "hi")

await whiteboard.unpublish()
for member in [alice, bob] { await member.leave() }
await relay.shutdown()
// snippet.hide
check(strokeReceived == "stroke 1", "bob received the stroke on the track")
check(chatReceived?.sender == "alice" && chatReceived?.headerLength == 2 && Array(chatReceived?.message ?? []) == Array("hi".utf8),
      "bob received hi with a 2-byte sender header on #chat")

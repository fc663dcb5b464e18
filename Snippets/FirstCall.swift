// A 1:1 call on the in-process loopback transport: bob listens, alice connects, alice sends a
// message on stream 100 and bob receives it.
// snippet.hide
import Foundation

// Fails the snippet (exit status 1) if it has not finished within 20 seconds.
Task.detached {
    try? await Task.sleep(for: .seconds(20))
    print("FAILED: the snippet did not finish within 20 s")
    exit(1)
}
// snippet.show
import Conduit

let runtime = ConduitRuntime()                       // loopback://conduit, 2 Mbit/s per session
let listener = try await runtime.listen(as: "bob")
async let answered = listener.accept()
let alice = try await runtime.connect(as: "alice")   // returns once both sides said hello
guard let bob = try await answered else { fatalError("the listener closed") }

// Sender: a session per stream ID (100...999) and type.
let chat = try await alice.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
try await chat.send(Array("hello".utf8), timestamp: 42)

// Receiver: answer dataSessionIncoming with makeInboundDataSession.
var received: InboundDataSession.Message?
events: for await event in bob.events {
    guard case .dataSessionIncoming(let streamID, _, let type) = event else { continue }
    let inbound = try await bob.makeInboundDataSession(streamID: streamID, expecting: type)
    for await event in inbound.events {
        if case .message(let message) = event {
            print(String(decoding: message.bytes, as: UTF8.self), message.timestamp)   // hello 42
            received = message
            break events
        }
    }
}
await alice.hangUp()
// snippet.hide
await listener.close()
guard received?.bytes == Array("hello".utf8), received?.timestamp == 42 else {
    print("FAILED: bob did not receive hello with timestamp 42")
    exit(1)
}

// Data sessions in a 1:1 call: a bytes-type session whose fragments the receiver rebuilds with
// FragmentAggregator, a declined stream that closes the sender's session with `unsupported`, and
// the size limit that `send` enforces.
// snippet.hide
import Foundation

Task.detached {
    try? await Task.sleep(for: .seconds(20))
    print("FAILED: the snippet did not finish within 20 s")
    exit(1)
}
func check(_ condition: Bool, _ what: String) {
    if !condition { print("FAILED: \(what)"); exit(1) }
}
import Conduit

var configuration = ConduitConfiguration()
configuration.rateLimit = .unlimited
let runtime = ConduitRuntime(configuration: configuration)
let listener = try await runtime.listen(on: "loopback://data-sessions", as: "bob")
async let answered = listener.accept()
let alice = try await runtime.connect(to: "loopback://data-sessions", as: "alice")
guard let bob = try await answered else { fatalError("the listener closed") }
// snippet.show
// Sender: a 300 KiB file piece on a reliable bytes session (at most 4 MiB per send).
let piece = (0..<300 * 1024).map { UInt8(truncatingIfNeeded: $0) }
let files = try await alice.makeOutboundDataSession(streamID: 200, type: .reliableBytes)
try await files.send(piece, timestamp: 7)

// Sender: a message session the receiver does not handle.
let cursors = try await alice.makeOutboundDataSession(streamID: 300, type: .unreliableMessage)

// Receiver: rebuild the bytes session's sends, decline stream 300.
var rebuilt: [UInt8]?
var declined = false
events: for await event in bob.events {
    guard case .dataSessionIncoming(let streamID, _, let type) = event else { continue }
    if streamID == 300 {
        await bob.unsupportInboundDataSession(streamID: streamID)
        declined = true
    } else {
        let inbound = try await bob.makeInboundDataSession(streamID: streamID, expecting: type)
        var aggregator = FragmentAggregator(streamID: streamID, sessionType: type)
        for await event in inbound.events {
            guard case .fragment(let fragment) = event else { continue }
            if let whole = aggregator.add(fragment) {     // nil until the send's last fragment
                rebuilt = whole.bytes
                break
            }
        }
    }
    if declined && rebuilt != nil { break events }
}

// The declined session closes with `unsupported`; sending on it throws `sessionClosed`.
for await event in cursors.events {
    if case .closed(let reason) = event { print("stream 300 closed:", reason); break }
}
do {
    try await cursors.send([1, 2, 3])
} catch {
    print(error.code, error.closeReason as Any)       // sessionClosed, unsupported
}

// A message type takes at most 128 KiB per send: a larger one throws, the session stays usable.
let chat = try await alice.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
do {
    try await chat.send([UInt8](repeating: 0, count: 200 * 1024))
} catch {
    print(error.code)                                 // messageTooLarge
}
await alice.hangUp()
// snippet.hide
await listener.close()
check(rebuilt == piece, "bob rebuilt the 300 KiB piece")
check(await cursors.closeReason == .unsupported, "stream 300 closed as unsupported")

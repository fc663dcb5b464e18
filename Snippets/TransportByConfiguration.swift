// Choosing a transport by configuration: keys set as a file or the environment would set them,
// a registry value the host app builds, and an impaired loopback URL under which a reliable
// session still delivers every message, in order.
// snippet.hide
import Foundation

Task.detached {
    try? await Task.sleep(for: .seconds(30))
    print("FAILED: the snippet did not finish within 30 s")
    exit(1)
}
// snippet.show
import Conduit

// Keys and values as in conduit.json or CONDUIT_* variables; an unknown key or a bad value throws.
var configuration = ConduitConfiguration()
try configuration.set("rateLimit", to: "unlimited")
try configuration.set("connectTimeoutMs", to: "5000")
print(ConduitConfiguration.environmentName(for: "rateLimit"))   // CONDUIT_RATE_LIMIT

// A lossy, reordering network in process: 10 % loss, 5 % reordering, 20 ms delay, seeded.
configuration.transport = "loopback://lossy?loss=0.1&reorder=0.05&delay-ms=20&seed=7"

// The registry is a value: defaults hold loopback; register more (UDPTransport() from ConduitUDP).
let registry = TransportRegistry.defaults
let runtime = ConduitRuntime(configuration: configuration, registry: registry)

let listener = try await runtime.listen(as: "bob")            // on configuration.transport
async let answered = listener.accept()
let alice = try await runtime.connect(as: "alice")
guard let bob = try await answered else { fatalError("the listener closed") }

let numbers = try await alice.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
for number in 1...50 { try await numbers.send([UInt8(number)]) }

var received: [UInt8] = []
events: for await event in bob.events {
    guard case .dataSessionIncoming(let streamID, _, let type) = event else { continue }
    let inbound = try await bob.makeInboundDataSession(streamID: streamID, expecting: type)
    for await event in inbound.events {
        guard case .message(let message) = event else { continue }
        received += message.bytes
        if received.count == 50 { break events }
    }
}
print(received == Array(1...50) ? "all 50 arrived, in order" : "lost or reordered: \(received)")
await alice.hangUp()
// snippet.hide
await listener.close()
if received != Array(1...50) { exit(1) }

import Conduit
import ConduitUDP
import Foundation

/// A terminal chat between two processes over `udp://`.
///
///     swift run Chat listen udp://127.0.0.1:9000 --as bob      # prints: listening on udp://127.0.0.1:9000
///     swift run Chat connect udp://127.0.0.1:9000 --as alice
///
/// Every line typed on standard input goes to the peer as one reliable message on stream 100, and
/// what the peer sends is printed as `peer: text`. At the end of input (Ctrl-D, or the end of a
/// piped file) a side closes its session gracefully; once both sides have closed theirs and
/// everything arrived, the call is hung up and both exit 0.
@main
struct Chat {
    static let usage = "usage: Chat (listen | connect) udp://HOST:PORT [--as NAME]"

    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        var name: String?
        if let index = arguments.firstIndex(of: "--as"), index + 1 < arguments.count {
            name = arguments[index + 1]
            arguments.removeSubrange(index...index + 1)
        }
        guard arguments.count == 2, ["listen", "connect"].contains(arguments[0]) else { fail(usage) }
        let listening = arguments[0] == "listen"
        do {
            let peer = try PeerID(name ?? (listening ? "bob" : "alice"))
            let ended = try await chat(listening: listening, url: arguments[1], as: peer)
            exit(ended ? 0 : 1)
        } catch {
            fail("\(error)")
        }
    }

    /// Runs one call; true when it ended after both sides sent everything.
    static func chat(listening: Bool, url: String, as peer: PeerID) async throws -> Bool {
        var registry = TransportRegistry.defaults
        registry.register(UDPTransport())
        let runtime = ConduitRuntime(registry: registry)

        let call: Call
        if listening {
            let listener = try await runtime.listen(on: url, as: peer)
            say("listening on \(listener.url)")
            guard let accepted = try await listener.accept() else { return false }
            await listener.close()       // a chat is one call
            call = accepted
        } else {
            call = try await runtime.connect(to: url, as: peer)
        }
        say("connected to \(call.remotePeer)")

        // Opened at once, so the peer hears of it even if this side never types anything.
        let outbound = try await call.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        let progress = ChatProgress()
        let lines = standardInputLines()

        await withDiscardingTaskGroup { group in
            // Typing: one message per line, then a graceful close; `.closed(.sessionEnd)` comes once
            // the peer has received everything.
            group.addTask {
                for await line in lines {
                    do { try await outbound.send(Array(line.utf8)) } catch { break }
                }
                await outbound.close()
                for await case .closed in outbound.events {}
                if await progress.mark(sent: true) { await call.hangUp() }
            }
            // Receiving: every session the peer opens, until the call ends.
            for await event in call.events {
                guard case .dataSessionIncoming(let streamID, _, let type) = event,
                      let inbound = try? await call.makeInboundDataSession(streamID: streamID, expecting: type)
                else { continue }
                group.addTask {
                    for await event in inbound.events {
                        switch event {
                        case .message(let message):
                            say("\(call.remotePeer): \(String(decoding: message.bytes, as: UTF8.self))")
                        case .fragment:
                            continue
                        case .closed:
                            if await progress.mark(peerDone: true) { await call.hangUp() }
                        }
                    }
                }
            }
            // The call ended (either side hung up): stop typing.
            group.cancelAll()
        }
        let complete = await progress.complete
        say(complete ? "call ended" : "call ended before everything was exchanged")
        return complete
    }

    /// Lines of standard input, read on a thread of their own (reading blocks).
    static func standardInputLines() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let reader = Thread {
            while let line = readLine() { continuation.yield(line) }
            continuation.finish()
        }
        reader.start()
        return stream
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("Chat: \(message)\n".utf8))
        exit(2)
    }
}

/// Whether this side sent everything and the peer closed its session; the side that completes
/// both hangs up.
actor ChatProgress {
    private var sent = false
    private var peerDone = false

    var complete: Bool { sent && peerDone }

    /// Records a step; true for the call that completes both.
    func mark(sent: Bool = false, peerDone: Bool = false) -> Bool {
        let before = complete
        self.sent = self.sent || sent
        self.peerDone = self.peerDone || peerDone
        return !before && complete
    }
}

/// Writes a line to standard output at once (unbuffered, also into a pipe or a file).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

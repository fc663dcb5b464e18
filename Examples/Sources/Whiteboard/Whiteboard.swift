import Conduit
import ConduitRelay
import ConduitUDP
import Foundation

/// A shared whiteboard through a relay: cursor positions go as unreliable messages (a lost one is
/// replaced by the next), strokes on a reliable data track each peer publishes.
///
///     swift run Whiteboard                                  # relay on udp://127.0.0.1:0, 3 peers
///     swift run Whiteboard --relay loopback://board --peers 2
///
/// The relay runs in this process (`RelayServer`), tokens are minted here, and each peer joins as
/// a host app would. A data track delivers only what is sent after subscribing, so each peer draws
/// a stroke every 100 ms until every peer has seen three strokes from each of the others (exit 0),
/// or gives up after 20 s (exit 1).
@main
struct Whiteboard {
    static func main() async {
        var relayURL = "udp://127.0.0.1:0"
        var peerCount = 3
        var arguments = CommandLine.arguments.dropFirst()
        while let option = arguments.popFirst() {
            switch (option, arguments.popFirst()) {
            case ("--relay", let value?): relayURL = value
            case ("--peers", let value?) where Int(value).map({ (2...8).contains($0) }) == true: peerCount = Int(value)!
            default:
                FileHandle.standardError.write(Data("usage: Whiteboard [--relay URL] [--peers 2...8]\n".utf8))
                exit(2)
            }
        }
        do {
            exit(try await run(relay: relayURL, peers: Array(["ana", "ben", "cleo", "dan", "eve", "fay", "gus", "hal"].prefix(peerCount))) ? 0 : 1)
        } catch {
            FileHandle.standardError.write(Data("Whiteboard: \(error)\n".utf8))
            exit(1)
        }
    }

    static let strokes: ChannelLabel = "strokes"
    static let cursorStream: StreamID = 200

    static func run(relay relayURL: String, peers names: [String]) async throws -> Bool {
        var registry = TransportRegistry.defaults
        registry.register(UDPTransport())
        let runtime = ConduitRuntime(registry: registry)

        // The relay, in process, and a token per peer (room, peer, rights, expiry; signed).
        var generator = SystemRandomNumberGenerator()
        let secret = try RelaySecret(bytes: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let relay = RelayServer(authority: RelayTokenAuthority(secret: secret), registry: runtime.registry)
        let url = try await relay.listen(on: relayURL).description
        say("relay listening on \(url)")

        let peers = try names.map { try PeerID($0) }
        let board = Board(peers: peers)
        let deadline = ContinuousClock.now + .seconds(20)
        await withDiscardingTaskGroup { group in
            for peer in peers {
                let token = RelayToken(room: "board", peer: peer, canPublish: true, canSubscribe: true,
                                       expiresAt: RelayServer.unixTime() + 600).signed(with: secret)
                group.addTask {
                    do {
                        try await draw(as: peer, runtime: runtime, relay: url, token: token, board: board, until: deadline)
                    } catch {
                        say("\(peer): \(error)")
                    }
                }
            }
        }
        await relay.shutdown()

        for line in await board.summary() { say(line) }
        let complete = await board.isComplete
        say(complete ? "every peer saw every other peer's strokes" : "not every peer saw every other peer's strokes")
        return complete
    }

    /// One peer: joins, publishes its strokes track, subscribes to the others', shares its cursor,
    /// and draws until the board is complete.
    static func draw(as peer: PeerID, runtime: ConduitRuntime, relay url: String, token: String, board: Board,
                     until deadline: ContinuousClock.Instant) async throws {
        let room = try await runtime.join(relay: url, room: "board", as: peer, token: token)
        say("\(peer) joined")
        guard let track = await room.publishDataTrack(strokes, reliability: .reliableOrdered) else {
            throw WhiteboardError(description: "\(peer) could not publish its track")
        }
        let cursor = try await room.makeOutboundDataSession(streamID: cursorStream, type: .unreliableMessage)

        try await withThrowingDiscardingTaskGroup { group in
            // What the room tells this peer: tracks to subscribe to, cursor sessions to take.
            group.addTask {
                await withDiscardingTaskGroup { readers in
                    for await event in room.events {
                        switch event {
                        case .dataTrackPublished(let name, let publisher, _) where name == strokes:
                            guard let remote = await room.subscribeDataTrack(name, of: publisher) else { continue }
                            say("\(peer) subscribed to \(publisher)'s strokes")
                            readers.addTask {
                                for await bytes in remote.messages {
                                    let stroke = String(decoding: bytes, as: UTF8.self)
                                    if await board.saw(stroke: stroke, by: peer, from: publisher) {
                                        say("\(peer) sees \(publisher)'s \(stroke)")
                                    }
                                }
                            }
                        case .dataSessionIncoming(let streamID, nil, .unreliableMessage, _) where streamID == cursorStream:
                            // One inbound session per stream, shared by every sender; messages carry theirs.
                            guard let inbound = try? await room.makeInboundDataSession(streamID: streamID) else { continue }
                            readers.addTask {
                                for await case .message(let message) in inbound.events {
                                    guard let sender = message.sender else { continue }
                                    await board.saw(cursor: message.bytes, by: peer, from: sender)
                                }
                            }
                        default:
                            continue
                        }
                    }
                }
            }
            // Drawing: a cursor move every 50 ms and a stroke every 100 ms.
            var step = 0
            var position = (x: UInt16(100), y: UInt16(100))
            while !(await board.isComplete), ContinuousClock.now < deadline {
                step += 1
                position = (position.x &+ 7, position.y &+ 3)
                _ = try await cursor.trySend(bytes(position.x) + bytes(position.y))
                if step.isMultiple(of: 2) {
                    let number = step / 2
                    try await track.send(Array("stroke \(number): \(position.x),\(position.y) -> \(position.x + 40),\(position.y + 25)".utf8))
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            await room.leave()         // ends the room's events, and with them every reader above
        }
    }

    static func bytes(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
}

struct WhiteboardError: Error, CustomStringConvertible {
    let description: String
}

/// What each peer has seen of the others.
actor Board {
    let peers: [PeerID]
    private var strokesSeen: [PeerID: [PeerID: Int]] = [:]
    private var cursorsSeen: [PeerID: [PeerID: (count: Int, x: Int, y: Int)]] = [:]

    init(peers: [PeerID]) { self.peers = peers }

    /// Records a stroke; true for the first few from a sender, which are worth printing.
    func saw(stroke: String, by peer: PeerID, from sender: PeerID) -> Bool {
        strokesSeen[peer, default: [:]][sender, default: 0] += 1
        return strokesSeen[peer]![sender]! <= Self.strokesToSee
    }

    func saw(cursor bytes: [UInt8], by peer: PeerID, from sender: PeerID) {
        guard bytes.count == 4 else { return }
        let previous = cursorsSeen[peer, default: [:]][sender]?.count ?? 0
        cursorsSeen[peer, default: [:]][sender] = (previous + 1, Int(bytes[0]) << 8 | Int(bytes[1]), Int(bytes[2]) << 8 | Int(bytes[3]))
    }

    /// Strokes each peer must see from every other one.
    static let strokesToSee = 3

    /// Every peer has seen `strokesToSee` strokes from every other peer.
    var isComplete: Bool {
        peers.allSatisfy { peer in peers.allSatisfy { $0 == peer || (strokesSeen[peer]?[$0] ?? 0) >= Self.strokesToSee } }
    }

    func summary() -> [String] {
        peers.map { peer in
            let others = peers.filter { $0 != peer }.map { sender in
                let cursor = cursorsSeen[peer]?[sender]
                return "\(sender): \(strokesSeen[peer]?[sender] ?? 0) strokes, \(cursor?.count ?? 0) cursor moves"
                    + (cursor.map { " (last at \($0.x),\($0.y))" } ?? "")
            }
            return "\(peer) saw " + others.joined(separator: "; ")
        }
    }
}

/// Writes a line to standard output at once (unbuffered, also into a pipe or a file).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

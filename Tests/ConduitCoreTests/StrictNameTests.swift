import ConduitCore
import ConduitRooms
import Testing

/// Names that arrive from the network (peer IDs, room IDs, subgroup names) are strict UTF-8: bytes
/// that are not UTF-8 are refused with a typed error, never rewritten to U+FFFD (which would make
/// different byte strings the same peer or room).
@Suite("Strict names on the wire")
struct StrictNameTests {
    /// "alice" with its last byte replaced by each of two different invalid bytes: a lossy decode
    /// would read both as "alic\u{FFFD}", the same peer.
    static let invalidEndings: [UInt8] = [0xFF, 0xC3]

    @Test("a hello whose peer ID is not UTF-8 is a malformed body", arguments: invalidEndings)
    func helloPeer(ending: UInt8) throws {
        var bytes = ControlFrame.hello(peer: "alice", dataSessionsSupported: true).encoded
        bytes[bytes.count - 1] = ending
        guard case .malformedControlBody(let why) = Frames.controlError(bytes) else {
            Issue.record("a hello naming a non-UTF-8 peer was not refused as malformed")
            return
        }
        #expect(why.contains("UTF-8"))
    }

    @Test("a session open whose subgroup name is not UTF-8 is a malformed body", arguments: invalidEndings)
    func sessionOpenSubgroup(ending: UInt8) throws {
        let frame = ControlFrame.sessionOpen(streamID: 100, subgroupID: 1, subgroup: "design", type: .reliableMessage)
        var bytes = frame.encoded
        bytes[bytes.count - 1] = ending
        guard case .malformedControlBody(let why) = Frames.controlError(bytes) else {
            Issue.record("a session open naming a non-UTF-8 subgroup was not refused as malformed")
            return
        }
        #expect(why.contains("UTF-8"))
    }

    @Test("a room join whose room or peer is not UTF-8 is refused", arguments: invalidEndings)
    func roomJoin(ending: UInt8) throws {
        let good = RoomControlFrame.join(room: "standup", peer: "alice", dataSessionsSupported: true, token: [1, 2, 3]).encoded
        #expect(try RoomControlFrame.parse(good) == .join(room: "standup", peer: "alice", dataSessionsSupported: true, token: [1, 2, 3]))
        for name in [Array("standup".utf8), Array("alice".utf8)] {
            guard let at = good.firstRange(of: name) else {
                Issue.record("the join frame does not carry \(name) as it is")
                continue
            }
            var bytes = good
            bytes[at.upperBound - 1] = ending
            #expect(throws: WireError.self) { try RoomControlFrame.parse(bytes) }
        }
    }
}

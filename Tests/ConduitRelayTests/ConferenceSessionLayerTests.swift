import ConduitCore
import ConduitRooms
import Testing

/// A conference's sessions are the call's session layer: what the 1:1 call does with its queues,
/// the conference does too (these are the behaviours the two copies had drifted apart on).
@Suite struct ConferenceSessionLayerTests {
    func room(_ names: [String]) -> RoomHarness { DataTrackTests().room(names) }

    @Test func tooLongQueuedDataFiresWhileTheLinkTakesNothing() {
        var h = room(["alice", "bob"])
        let key = SessionKey(streamID: 110)
        #expect(h.clients["alice"]!.machine.makeOutbound(key, type: .reliableMessage, now: h.now) == DataSessionFailReason.none)
        #expect(h.clients["alice"]!.machine.enqueue(key, bytes: [1, 2, 3], timestamp: 0, now: h.now) == .queued(messageID: 0))
        // The link is blocked: nothing is polled for transmission, only time passes.
        let queuedAt = h.now
        let threshold = queuedAt + .milliseconds(500)
        #expect(h.clients["alice"]!.machine.nextTimeout().map { $0 <= threshold } == true)
        h.clients["alice"]!.machine.handleTimeout(now: threshold)
        var events: [ConferenceEvent] = []
        while let event = h.clients["alice"]!.machine.pollEvent() { events.append(event) }
        #expect(events == [.tooLongQueuedData(key, enabled: true)])
        // Once the link takes the message, the delay falls and the event turns off.
        var batch = DatagramBatch()
        h.clients["alice"]!.machine.pollTransmit(now: queuedAt + .seconds(1), into: &batch)
        #expect(h.clients["alice"]!.machine.pollEvent() == .tooLongQueuedData(key, enabled: false))
    }

    @Test func aGracefulCloseSendsWhatWasQueuedThenTheClose() {
        var h = room(["alice", "bob"])
        let key = SessionKey(streamID: 111)
        _ = h.clients["alice"]!.machine.makeOutbound(key, type: .reliableMessage, now: h.now)
        _ = h.clients["alice"]!.machine.enqueue(key, bytes: Array("last words".utf8), timestamp: 0, now: h.now)
        h.clients["alice"]!.machine.closeOutbound(key)
        #expect(h.clients["alice"]!.machine.enqueue(key, bytes: [1], timestamp: 0, now: h.now) == .failed(.closed(.sessionEnd)))
        h.pump()
        #expect(h.clients["alice"]!.machine.outboundCloseReason(key) == .sessionEnd)
        let alice: PeerID = "alice"
        let atBob = h.take("bob").filter {
            switch $0 {
            case .dataSessionIncoming, .senderSessionEnded: true
            default: false
            }
        }
        #expect(atBob == [.dataSessionIncoming(key, .reliableMessage, from: alice), .senderSessionEnded(key, from: alice, .sessionEnd)])
        #expect(h.clients["bob"]!.machine.makeInbound(key) == DataSessionFailReason.none)
        h.drainEvents("bob")
        #expect(h.take("bob").contains(.received(key, from: alice, .message(bytes: Array("last words".utf8), timestamp: 0))))
        #expect(h.clients["alice"]!.machine.statistics.bytesSent == 10)
        #expect(h.clients["bob"]!.machine.statistics.bytesDelivered == 10)
    }

    /// A closed session may be made again with its type, and its receivers' inbound session
    /// carries on; with another type it is refused at once (`invalidType`), never made only for
    /// its frames to be dropped at every receiver, and neither may a type other senders announced
    /// be changed.
    @Test func aStreamKeepsItsTypeWhenItIsMadeAgain() {
        var h = room(["alice", "bob", "carol"])
        let key = SessionKey(streamID: 101)
        let bob: PeerID = "bob"
        #expect(h.clients["bob"]!.machine.makeOutbound(key, type: .unreliableBytes, now: h.now) == DataSessionFailReason.none)
        h.pump()
        h.acceptAll("alice")
        h.clients["bob"]!.machine.closeOutbound(key)
        h.pump()
        #expect(h.clients["bob"]!.machine.makeOutbound(key, type: .reliableMessage, now: h.now) == .invalidType)
        #expect(h.clients["bob"]!.machine.enqueue(key, bytes: [1], timestamp: 0, now: h.now) == .failed(.closed(.sessionEnd)))
        // Carol heard of the stream too: she may not send on it with another type either.
        #expect(h.clients["carol"]!.machine.makeOutbound(key, type: .reliableMessage, now: h.now) == .invalidType)
        #expect(h.clients["bob"]!.machine.makeOutbound(key, type: .unreliableBytes, now: h.now) == DataSessionFailReason.none)
        _ = h.take("alice")
        h.send("bob", key, "again")
        h.drainEvents("alice")
        let received = h.take("alice").compactMap { event -> [UInt8]? in
            guard case .received(key, bob, .fragment(let fragment)) = event else { return nil }
            return fragment.bytes
        }
        #expect(received == [Array("again".utf8)])
        #expect(h.clients["alice"]!.machine.statistics.droppedClosedSession == 0)
    }

    /// Two members make the same stream at once with different types, neither hearing of the
    /// other's first: a receiver keeps one session per stream, of the type announced first, and
    /// drops the other sender's frames, counted as `droppedWrongType` (not as a closed session's).
    @Test func aSecondSendersOtherTypeIsDroppedAndCountedAsWrongType() throws {
        var h = room(["alice", "bob", "carol"])
        let key = SessionKey(streamID: 102)
        #expect(h.clients["carol"]!.machine.makeOutbound(key, type: .unreliableMessage, now: h.now) == DataSessionFailReason.none)
        #expect(h.clients["bob"]!.machine.makeOutbound(key, type: .reliableMessage, now: h.now) == DataSessionFailReason.none)
        h.pump()
        h.acceptAll("alice")
        let announced = try #require(h.clients["alice"]!.machine.inboundType(key))
        let (kept, other) = announced == .unreliableMessage ? ("carol", "bob") : ("bob", "carol")
        h.send(kept, key, "kept")
        h.send(other, key, "dropped")
        h.drainEvents("alice")
        #expect(h.messages("alice", key).map(\.1) == ["kept"])
        #expect(h.clients["alice"]!.machine.inboundStatistics(key)?.droppedWrongType == 1)
        #expect(h.clients["alice"]!.machine.statistics.droppedWrongType == 1)
        #expect(h.clients["alice"]!.machine.statistics.droppedClosedSession == 0)
    }
}

import ConduitCore
import ConduitRooms
import ConduitRelayCore
import Testing

/// Backpressure through the relay on the sans-IO machines: a full receiver holds its room's
/// senders back (their frames wait in their own queues), a lagging one stops holding them, one
/// far behind is isolated with a reason; nothing is dropped or refused on the way.
@Suite struct RelayBackpressureTests {
    let main = SessionKey(streamID: 100)
    let highWater = 16 * 1024

    func room(_ configuration: RelayConfiguration) -> RoomHarness {
        var h = RoomMachineTests().joined(["alice", "bob", "carol"], configuration: configuration)
        #expect(h.clients["alice"]!.machine.makeOutbound(main, type: .reliableMessage, now: h.now) == .none)
        h.pump()
        h.acceptAll("bob")
        h.acceptAll("carol")
        return h
    }

    func texts(_ count: Int) -> [String] { (0..<count).map { String(repeating: "r", count: 900) + "\($0)" } }

    func connection(_ h: RoomHarness, _ name: String) -> RelayConnectionID { h.clients[name]!.connection }

    @Test func aFullReceiverHoldsTheSenderBackAndEverythingArrivesOnceInOrder() {
        var h = room(RelayConfiguration(receiverHighWater: highWater, laggingAfter: .seconds(1), isolateAfter: .seconds(10)))
        h.clients["carol"]!.stalled = true
        for text in texts(150) { h.send("alice", main, text) }

        // The relay stopped reading alice once carol's queue passed the mark: the rest waits in
        // alice's own queue, not at the relay, and nobody was dropped or refused.
        #expect(h.relay.statistics.sendersPaused >= 1)
        #expect(h.relay.queuedBytes(connection(h, "carol")) > highWater)
        #expect(h.relay.queuedBytes(connection(h, "carol")) < 3 * highWater)
        #expect(h.messages("bob", main).count < 150)
        #expect(h.relay.statistics.refusals.isEmpty)
        #expect(h.relay.statistics.slowReceiversDisconnected == 0)

        h.clients["carol"]!.stalled = false
        h.pump()
        #expect(h.messages("bob", main).map(\.1) == texts(150))
        #expect(h.messages("carol", main).map(\.1) == texts(150))
        #expect(h.relay.members(of: "room").count == 3)
        #expect(h.relay.statistics.laggingReceivers == 0)
    }

    @Test func aStalledReceiverLagsAfterItsGraceThenIsIsolatedWithAReason() {
        var h = room(RelayConfiguration(receiverHighWater: highWater, laggingAfter: .seconds(1), isolateAfter: .seconds(10)))
        h.clients["carol"]!.stalled = true
        for text in texts(150) { h.send("alice", main, text) }
        #expect(h.messages("bob", main).count < 150)

        // After the grace carol holds nobody back: bob gets everything, carol is still a member.
        h.advance(by: .milliseconds(1_100))
        #expect(h.relay.statistics.laggingReceivers == 1)
        #expect(h.messages("bob", main).map(\.1) == texts(150))
        #expect(h.relay.members(of: "room").count == 3)

        // Still behind at isolateAfter: let go with the reason, the others carry on.
        h.advance(by: .seconds(9))
        #expect(h.relay.statistics.slowReceiversDisconnected == 1)
        #expect(h.relay.members(of: "room").values.sorted() == ["alice", "bob"])
        h.clients["carol"]!.stalled = false
        h.pump()
        let carol = h.take("carol")
        #expect(carol.last == .disconnected(.slowReceiver, "fell behind the room: over 16384 bytes queued and nothing taken for 10.0 seconds"))
        #expect(h.relay.statistics.refusals.isEmpty)
    }

    /// Issue 16: a member isolated as a slow receiver may also send, and what its link accepted
    /// (unread while backpressure held it) was refused as `notJoined` once it was isolated, though
    /// its sender had been told it was delivered. It now goes on, and the member leaves after it.
    @Test func anIsolatedReceiverThatAlsoSendsHasWhatItSentForwardedThenLeaves() {
        var h = room(RelayConfiguration(receiverHighWater: highWater, laggingAfter: .seconds(1), isolateAfter: .seconds(10), vanishTimeout: .seconds(60)))
        let carols = SessionKey(streamID: 200)
        #expect(h.clients["carol"]!.machine.makeOutbound(carols, type: .reliableMessage, now: h.now) == .none)
        h.pump()
        h.acceptAll("alice")
        h.acceptAll("bob")
        _ = h.take("alice")
        _ = h.take("bob")

        // carol stops reading and falls behind; what she sends meanwhile waits unread.
        h.clients["carol"]!.stalled = true
        for text in texts(150) { h.send("alice", main, text) }
        h.clients["carol"]!.silent = true
        for text in texts(40) {
            #expect({ if case .queued = h.clients["carol"]!.machine.enqueue(carols, bytes: Array(text.utf8), timestamp: 7, now: h.now) { true } else { false } }())
        }
        h.advance(by: .seconds(11))

        let statistics = h.relay.statistics
        #expect(statistics.slowReceiversDisconnected == 1)
        // Her 40 messages, one frame each, taken after she was isolated.
        #expect(statistics.framesAfterIsolation == 40)
        #expect(statistics.refusals.isEmpty, "refused: \(statistics.refusals)")
        for (name, key, count) in [("alice", carols, 40), ("bob", carols, 40), ("bob", main, 150)] {
            let received = h.messages(name, key).map(\.1)
            let allOnceInOrder = received == texts(count)
            #expect(allOnceInOrder, "\(name) got \(received.count) of \(count) on \(key)")
        }
        #expect(h.relay.members(of: "room").values.sorted() == ["alice", "bob"])
        // bob hears of carol's leave after her last message.
        let lastMessage = h.clients["bob"]!.events.lastIndex {
            if case .received(carols, _, .message) = $0 { true } else { false }
        }
        let left = h.clients["bob"]!.events.firstIndex {
            if case .peersChanged(_, let left, _) = $0 { left.map(\.peer) == ["carol"] } else { false }
        }
        #expect(lastMessage != nil && left != nil && lastMessage! < left!)
        #expect(h.take("carol").last == .disconnected(.slowReceiver, "fell behind the room: over 16384 bytes queued and nothing taken for 10.0 seconds"))
    }

    @Test func aLaggingReceiverThatKeepsTakingIsNotIsolatedUntilItStops() {
        var h = room(RelayConfiguration(receiverHighWater: highWater, laggingAfter: .seconds(1), isolateAfter: .seconds(10)))
        h.clients["carol"]!.stalled = true
        for text in texts(150) { h.send("alice", main, text) }
        h.advance(by: .milliseconds(1_100))
        #expect(h.relay.statistics.laggingReceivers == 1)

        // At 5 s carol's link takes one frame: still far above the mark, but moving.
        h.advance(by: .milliseconds(3_900))
        var batch = DatagramBatch()
        #expect(h.relay.pollTransmit(connection(h, "carol"), into: &batch, maxBytes: 1, now: h.now) == 1)
        #expect(h.relay.queuedBytes(connection(h, "carol")) > highWater)
        // 10 s after she went above the mark she is still a member: isolateAfter counts from 5 s.
        h.advance(by: .seconds(6))
        #expect(h.relay.statistics.slowReceiversDisconnected == 0)
        #expect(h.relay.members(of: "room").count == 3)
        // Nothing more taken for isolateAfter: isolated.
        h.advance(by: .seconds(4))
        #expect(h.relay.statistics.slowReceiversDisconnected == 1)
        #expect(h.relay.members(of: "room").values.sorted() == ["alice", "bob"])
    }

    @Test func aRoomWhoseReceiversAreAllBehindMovesAtTheirPaceAndNobodyLags() {
        // isolateAfter well past the test's end: receivers that take nothing for it are isolated
        // (see the next test); this one is about who lags.
        var h = room(RelayConfiguration(receiverHighWater: highWater, laggingAfter: .seconds(1), isolateAfter: .seconds(60)))
        h.clients["bob"]!.stalled = true
        h.clients["carol"]!.stalled = true
        for text in texts(150) { h.send("alice", main, text) }
        #expect(h.relay.queuedBytes(connection(h, "bob")) > highWater)
        #expect(h.relay.queuedBytes(connection(h, "carol")) > highWater)

        // Both are full for longer than the grace: neither is behind the other, so nobody lags
        // and the sender stays held.
        h.advance(by: .seconds(12))
        #expect(h.relay.statistics.laggingReceivers == 0)
        #expect(h.relay.statistics.slowReceiversDisconnected == 0)
        #expect(h.relay.isReadPaused(connection(h, "alice")))

        // bob catches up; carol, still stalled, is now behind the others: she lags once a grace
        // has passed with bob under the mark, and the room moves on without her.
        h.clients["bob"]!.stalled = false
        h.pump()
        h.advance(by: .milliseconds(2_100))
        #expect(h.relay.statistics.laggingReceivers == 1)
        #expect(h.messages("bob", main).map(\.1) == texts(150))
        #expect(h.relay.members(of: "room").count == 3)
        h.clients["carol"]!.stalled = false
        h.pump()
        #expect(h.messages("carol", main).map(\.1) == texts(150))
        #expect(h.relay.statistics.refusals.isEmpty)
    }

    /// Most of a room stops reading (apps sent to the background): none is behind the others, so
    /// none lags, but none takes anything either. After isolateAfter they are isolated and the
    /// sender goes on with the member that reads, instead of being held for good.
    @Test func receiversThatStopReadingAreIsolatedEvenWhenTheyAreMostOfTheRoom() {
        let configuration = RelayConfiguration(receiverHighWater: highWater, laggingAfter: .seconds(1), isolateAfter: .seconds(10))
        var h = RoomMachineTests().joined(["alice", "bob", "carol", "dave", "erin"], configuration: configuration)
        #expect(h.clients["alice"]!.machine.makeOutbound(main, type: .reliableMessage, now: h.now) == .none)
        h.pump()
        for name in ["bob", "carol", "dave", "erin"] { h.acceptAll(name) }
        for name in ["bob", "carol", "dave"] { h.clients[name]!.stalled = true }
        for text in texts(150) { h.send("alice", main, text) }
        #expect(h.messages("erin", main).count < 150)

        h.advance(by: .seconds(9))
        #expect(h.relay.statistics.laggingReceivers == 0)
        #expect(h.relay.statistics.slowReceiversDisconnected == 0)
        #expect(h.relay.isReadPaused(connection(h, "alice")))

        h.advance(by: .seconds(2))
        #expect(h.relay.statistics.slowReceiversDisconnected == 3)
        #expect(h.relay.members(of: "room").values.sorted() == ["alice", "erin"])
        let atErin = h.messages("erin", main).map(\.1)
        let allOnceInOrder = atErin == texts(150)
        #expect(allOnceInOrder, "erin got \(atErin.count) of 150")
        #expect(h.relay.statistics.refusals.isEmpty)
        // Each was told why, in its last frame.
        for name in ["bob", "carol", "dave"] {
            #expect(h.take(name).last == .disconnected(.slowReceiver, "fell behind the room: over 16384 bytes queued and nothing taken for 10.0 seconds"))
        }
    }

    @Test func aSenderTheRelayDoesNotReadIsNotTakenForVanished() {
        var h = room(RelayConfiguration(receiverHighWater: highWater, laggingAfter: .seconds(5), isolateAfter: .seconds(8), vanishTimeout: .seconds(2)))
        h.clients["carol"]!.stalled = true
        for text in texts(150) { h.send("alice", main, text) }
        #expect(h.relay.statistics.sendersPaused >= 1)
        // alice's pings wait unread with her data for longer than the vanish timeout.
        h.advance(by: .seconds(3))
        #expect(h.relay.statistics.vanished == 0)
        #expect(h.relay.members(of: "room").count == 3)
        h.clients["carol"]!.stalled = false
        h.pump()
        #expect(h.messages("carol", main).map(\.1) == texts(150))
    }

    @Test func aReceiverThatLeavesLetsTheSenderGo() {
        var h = room(RelayConfiguration(receiverHighWater: highWater, laggingAfter: .seconds(5), isolateAfter: .seconds(10)))
        h.clients["carol"]!.stalled = true
        for text in texts(150) { h.send("alice", main, text) }
        #expect(h.messages("bob", main).count < 150)
        // carol's link goes away: what she held back flows to bob at once, no timer needed.
        h.relay.connectionClosed(connection(h, "carol"), now: h.now)
        h.clients["carol"]!.closed = true
        h.pump()
        #expect(h.messages("bob", main).map(\.1) == texts(150))
        #expect(h.relay.statistics.refusals.isEmpty)
    }
}

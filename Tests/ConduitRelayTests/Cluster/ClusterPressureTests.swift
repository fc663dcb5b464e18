import ConduitCore
import ConduitRooms
import ConduitRelayCore
import Testing

/// Backpressure across relays on two sans-IO relay machines, on virtual time: a full receiver on
/// one relay holds the room's senders on the other back, exactly as a receiver of their own relay
/// would (their frames wait in their own queues); a lagging receiver stops holding them and is
/// isolated by its own relay only; a dead relay's pressure goes with it; a lost release is
/// repaired by the next presence.
@Suite struct ClusterPressureTests {
    let main = SessionKey(streamID: 100)
    let highWater = 16 * 1024

    /// alice (the sender) and bob on relay 0, carol on relay 1; carol has stopped reading.
    func room(laggingAfter: Duration = .seconds(1), isolateAfter: Duration = .seconds(10)) -> ClusterHarness {
        var h = ClusterHarness(configuration: RelayConfiguration(receiverHighWater: highWater, laggingAfter: laggingAfter, isolateAfter: isolateAfter))
        h.join("alice", at: 0)
        h.join("bob", at: 0)
        h.join("carol", at: 1)
        h.advance(by: .seconds(1))
        #expect(h.relays[0].clients["alice"]!.machine.makeOutbound(main, type: .reliableMessage, now: h.relays[0].now) == .none)
        h.relays[0].pump()
        h.carry()
        h.relays[0].acceptAll("bob")
        h.relays[1].acceptAll("carol")
        h.relays[1].clients["carol"]!.stalled = true
        return h
    }

    func texts(_ count: Int) -> [String] { (0..<count).map { String(repeating: "r", count: 900) + "\($0)" } }

    func send(_ h: inout ClusterHarness, _ count: Int) {
        for text in texts(count) {
            h.relays[0].send("alice", main, text)
            h.carry()
        }
    }

    func carolQueue(_ h: ClusterHarness) -> Int { h.relays[1].relay.queuedBytes(h.relays[1].clients["carol"]!.connection) }

    @Test func aFullReceiverOnAnotherRelayHoldsTheSenderBackAndEverythingArrivesOnceInOrder() {
        var h = room()
        send(&h, 150)
        // Relay 1 said carol holds the room back; relay 0 stopped reading alice: the rest waits in
        // alice's own queue, not at either relay, and nobody was dropped, refused or isolated.
        #expect(h.relays[1].relay.statistics.cluster.pressureAnnounced >= 1)
        #expect(h.relays[0].relay.statistics.cluster.remotePressureApplied >= 1)
        #expect(h.relays[0].relay.statistics.sendersPaused >= 1)
        #expect(carolQueue(h) > highWater)
        #expect(carolQueue(h) < 3 * highWater)
        #expect(h.relays[0].messages("bob", main).count < 150)
        for relay in 0...1 {
            #expect(h.relays[relay].relay.statistics.refusals.isEmpty)
            #expect(h.relays[relay].relay.statistics.slowReceiversDisconnected == 0)
        }

        h.relays[1].clients["carol"]!.stalled = false
        h.carry()
        #expect(h.relays[0].messages("bob", main).map(\.1) == texts(150))
        #expect(h.relays[1].messages("carol", main).map(\.1) == texts(150))
        #expect(Set(h.relays[0].relay.members(of: "room").values) == ["alice", "bob", "carol"])
        for relay in 0...1 { #expect(h.relays[relay].relay.statistics.laggingReceivers == 0) }
        #expect(h.relays[1].relay.statistics.cluster.messagesLost == 0)
    }

    @Test func aLaggingReceiverElsewhereStopsHoldingTheSenderAndIsIsolatedByItsOwnRelayOnly() {
        var h = room()
        send(&h, 150)
        #expect(h.relays[0].messages("bob", main).count < 150)

        // After its grace carol lags: relay 1 lets the room go, alice is read again, bob gets all.
        h.advance(by: .milliseconds(1_100))
        #expect(h.relays[1].relay.statistics.laggingReceivers == 1)
        #expect(h.relays[0].messages("bob", main).map(\.1) == texts(150))
        #expect(Set(h.relays[0].relay.members(of: "room").values) == ["alice", "bob", "carol"])

        // Still behind at isolateAfter: relay 1 lets her go with the reason; relay 0 isolates nobody.
        h.advance(by: .seconds(9))
        #expect(h.relays[1].relay.statistics.slowReceiversDisconnected == 1)
        #expect(h.relays[0].relay.statistics.slowReceiversDisconnected == 0)
        h.advance(by: .seconds(1))
        #expect(Set(h.relays[0].relay.members(of: "room").values) == ["alice", "bob"])
        h.relays[1].clients["carol"]!.stalled = false
        h.carry()
        #expect(h.relays[1].take("carol").last == .disconnected(.slowReceiver, "fell behind the room: over 16384 bytes queued and nothing taken for 10.0 seconds"))
    }

    @Test func aDeadRelayReleasesThePressureItHeld() {
        // Carol would hold the room for 30 s: only relay 1's death can let it go before.
        var h = room(laggingAfter: .seconds(30), isolateAfter: .seconds(60))
        send(&h, 150)
        #expect(h.relays[0].messages("bob", main).count < 150)
        h.deadRelays = [1]
        h.advance(by: .seconds(3))
        #expect(h.relays[0].messages("bob", main).count < 150, "relay 1 is not yet taken for dead")
        h.advance(by: .seconds(2))
        #expect(h.relays[0].relay.statistics.cluster.relaysTimedOut == 1)
        #expect(h.relays[0].messages("bob", main).map(\.1) == texts(150))
        #expect(h.relays[0].relay.statistics.slowReceiversDisconnected == 0)
    }

    @Test func aLostReleaseIsRepairedByTheNextPresence() {
        var h = room(laggingAfter: .seconds(30), isolateAfter: .seconds(60))
        send(&h, 150)
        #expect(h.relays[0].messages("bob", main).count < 150)
        // The next room message is relay 1's release, once carol drains: it is lost.
        h.lose = [h.published + 1]
        h.relays[1].clients["carol"]!.stalled = false
        h.carry()
        #expect(h.relays[1].messages("carol", main).count < 150)
        #expect(h.relays[0].messages("bob", main).count < 150, "relay 0 did not hear the release")
        // The next heartbeat's presence says the room is not held back any more.
        h.advance(by: .seconds(1))
        #expect(h.relays[0].messages("bob", main).map(\.1) == texts(150))
        #expect(h.relays[1].messages("carol", main).map(\.1) == texts(150))
        #expect(h.relays[0].relay.statistics.cluster.messagesLost == 1)
    }
}

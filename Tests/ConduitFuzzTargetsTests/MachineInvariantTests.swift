import ConduitCore
@testable import ConduitFuzzTargets
import Testing

/// The rules the machine targets check can fail: each broken rule, fed to the checker, is a
/// finding (so a target that finds nothing has checked something).
@Suite struct MachineInvariantTests {
    static let check = Invariants(target: "test")
    static let key = SessionKey(streamID: 100)

    @Test("data for an inbound session the app never made is a finding; after makeInbound it is not")
    func dataNeedsAnAcceptedSession() throws {
        var ledger = SessionEventLedger(check: Self.check, side: "A")
        try ledger.see(.incoming(Self.key))
        #expect(throws: FuzzFailure.self) { try ledger.see(.received(Self.key)) }
        try ledger.madeInbound(Self.key)
        try ledger.see(.received(Self.key))
        try ledger.see(.inboundClosed(Self.key))
        #expect(throws: FuzzFailure.self) { try ledger.see(.received(Self.key)) }
        #expect(throws: FuzzFailure.self) { try ledger.see(.inboundClosed(Self.key)) }
    }

    @Test("nothing may follow disconnected, and a stream is announced once")
    func disconnectedIsLast() throws {
        var ledger = SessionEventLedger(check: Self.check, side: "A")
        try ledger.see(.incoming(Self.key))
        #expect(throws: FuzzFailure.self) { try ledger.see(.incoming(Self.key)) }
        try ledger.see(.disconnected)
        #expect(throws: FuzzFailure.self) { try ledger.see(.other) }
        // Only a stream announced before the end and made after it may still deliver and close.
        #expect(throws: FuzzFailure.self) { try ledger.see(.received(Self.key)) }
        try ledger.madeInbound(Self.key)
        try ledger.see(.received(Self.key))
        try ledger.see(.inboundClosed(Self.key))
        #expect(throws: FuzzFailure.self) { try ledger.see(.outboundClosed(Self.key)) }
    }

    @Test("tooLongQueuedData alternates, and closes come once for a session that was opened")
    func outboundRules() throws {
        var ledger = SessionEventLedger(check: Self.check, side: "A")
        #expect(throws: FuzzFailure.self) { try ledger.see(.outboundClosed(Self.key)) }
        try ledger.madeOutbound(Self.key)
        try ledger.see(.tooLongQueuedData(Self.key, enabled: true))
        #expect(throws: FuzzFailure.self) { try ledger.see(.tooLongQueuedData(Self.key, enabled: true)) }
        try ledger.see(.outboundClosed(Self.key))
        #expect(throws: FuzzFailure.self) { try ledger.see(.outboundClosed(Self.key)) }
    }

    @Test("a timeout deadline still at now once handled is a busy loop; one later is not")
    func deadlinesMoveOn() throws {
        let now = ConduitInstant(nanoseconds: 5_000)
        #expect(throws: FuzzFailure.self) { try checkTimeoutMovedOn(now, now: now, Self.check, "A") }
        try checkTimeoutMovedOn(now + .nanoseconds(1), now: now, Self.check, "A")
        try checkTimeoutMovedOn(nil, now: now, Self.check, "A")
    }

    @Test("a reassembler over its byte cap, or held data over its cap, is a finding")
    func footprintCaps() throws {
        let configuration = CallConfiguration()
        var footprint = SessionFootprint()
        try checkFootprint(footprint, configuration, maxSenders: 1, Self.check, "A")
        // Reliable data may pass the limit by the one message that reached it, not more.
        footprint.largestPendingInboundBytes = configuration.maxPendingInboundBytes + SessionType.reliableMessage.maxSendSize
        try checkFootprint(footprint, configuration, maxSenders: 1, Self.check, "A")
        footprint.largestPendingInboundBytes += 1
        #expect(throws: FuzzFailure.self) { try checkFootprint(footprint, configuration, maxSenders: 1, Self.check, "A") }
        footprint = SessionFootprint()
        footprint.largestReassemblyBytes = configuration.reassembly.maxBufferedBytes + 1
        #expect(throws: FuzzFailure.self) { try checkFootprint(footprint, configuration, maxSenders: 1, Self.check, "A") }
    }
}

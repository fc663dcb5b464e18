import ConduitCore
@testable import ConduitUDP
import Testing

/// The listener-wide handshake rate (`handshakesPerSecond`) the join storm of issue 18 called
/// for, on the ledger the listener charges, at fixed instants.
@Suite("UDP address ledger")
struct UDPAddressLedgerTests {
    static let limits = UDPTransport.Configuration.ListenerLimits(maxLinksPerAddress: 2, handshakesPerSecondPerAddress: 100, handshakesPerSecond: 3)
    static let start = ConduitInstant(nanoseconds: 1_000_000_000)

    @Test("many addresses, each within its own rate: the listener's rate admits its burst, refuses the rest, and a second later admits again")
    func listenerRateCapsAllAddressesTogether() {
        var ledger = UDPAddressLedger(limits: Self.limits)
        let verdicts = (0..<5).map { ledger.admit("10.0.0.\($0)", now: Self.start) }
        #expect(verdicts == [.admitted, .admitted, .admitted, .tooManyHandshakesInAll, .tooManyHandshakesInAll])
        // A refused host got no link counted.
        #expect(ledger.entries["10.0.0.3"]?.links == 0)
        #expect(ledger.entries["10.0.0.0"]?.links == 1)
        #expect(ledger.admit("10.0.0.3", now: Self.start + .seconds(1)) == .admitted)
    }

    @Test("a host refused by its own limits charges nothing to the listener's rate, so it cannot use it up alone")
    func oneHostCannotUseUpTheListenerRate() {
        var ledger = UDPAddressLedger(limits: Self.limits)
        #expect(ledger.admit("10.0.0.1", now: Self.start) == .admitted)
        #expect(ledger.admit("10.0.0.1", now: Self.start) == .admitted)
        for _ in 0..<10 { #expect(ledger.admit("10.0.0.1", now: Self.start) == .tooManyLinks) }
        #expect(ledger.admit("10.0.0.2", now: Self.start) == .admitted)
        #expect(ledger.admit("10.0.0.3", now: Self.start) == .tooManyHandshakesInAll)
    }

    @Test func aListenerRateBelowOneIsRefusedNamingIt() {
        var limits = UDPTransport.Configuration.ListenerLimits()
        limits.handshakesPerSecond = 0
        #expect { try limits.validate() } throws: { ($0 as? ConduitError)?.message.contains("handshakesPerSecond=0") == true }
    }
}

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

    @Test("a host that closes its links keeps its spent handshake rate when the table is swept (the udp-listener fuzz finding)")
    func sweepingKeepsASpentRate() {
        let limits = UDPTransport.Configuration.ListenerLimits(maxLinks: 4, maxLinksPerAddress: 8, handshakesPerSecondPerAddress: 2, handshakesPerSecond: 1_000)
        var ledger = UDPAddressLedger(limits: limits)
        #expect(ledger.admit("10.0.0.1", now: Self.start) == .admitted)
        #expect(ledger.admit("10.0.0.1", now: Self.start) == .admitted)
        ledger.release("10.0.0.1")
        ledger.release("10.0.0.1")
        // Other hosts grow the table past its sweep size (2 x maxLinks), their links closed too.
        for host in 2..<12 {
            #expect(ledger.admit("10.0.0.\(host)", now: Self.start) == .admitted)
            ledger.release("10.0.0.\(host)")
        }
        // Swept, but within the second: the host's bucket is still empty.
        #expect(ledger.admit("10.0.0.1", now: Self.start + .milliseconds(100)) == .tooManyHandshakes)
        // A second later every bucket is full again, and the next sweep forgets those entries.
        #expect(ledger.admit("10.0.0.1", now: Self.start + .seconds(1)) == .admitted)
        #expect(ledger.entries.count <= 2 * 11)
        ledger.release("10.0.0.1")
        for host in 12..<30 {
            _ = ledger.admit("10.0.0.\(host)", now: Self.start + .seconds(3))
            ledger.release("10.0.0.\(host)")
        }
        #expect(ledger.entries.count < 30)
    }

    @Test func aListenerRateBelowOneIsRefusedNamingIt() {
        var limits = UDPTransport.Configuration.ListenerLimits()
        limits.handshakesPerSecond = 0
        #expect { try limits.validate() } throws: { ($0 as? ConduitError)?.message.contains("handshakesPerSecond=0") == true }
    }
}

import ConduitCore
import Testing

@testable import ConduitUDP

/// The listener's path validation (RFC 9000 §8.2, §9) on its own: addresses are strings, time is
/// passed in, challenges are chosen by the test.
@Suite("UDP path validation (sans-IO)")
struct UDPPathValidatorTests {
    typealias Validator = UDPPathValidator<String>
    static let link: UInt32 = 0xC11E_0001
    static func at(_ milliseconds: UInt64) -> ConduitInstant { ConduitInstant(nanoseconds: milliseconds * 1_000_000) }

    @Test("a datagram from a new address opens a challenge; only its echo from that address validates")
    func challengeThenResponseValidates() {
        var validator = Validator()
        #expect(validator.probe(link: Self.link, from: "10.0.0.2:4000", host: "10.0.0.2", now: Self.at(0), challenge: 0xABCD) == .sendChallenge(0xABCD))
        #expect(validator.pending.count == 1)
        #expect(validator.respond(link: Self.link, from: "10.0.0.2:4000", challenge: 0xABCD, now: Self.at(40)) == .validated)
        #expect(validator.pending.isEmpty, "validating closes the link's validations")
        // The same response again (a duplicate or a replay) moves nothing more.
        #expect(validator.respond(link: Self.link, from: "10.0.0.2:4000", challenge: 0xABCD, now: Self.at(50)) == .rejected)
    }

    /// Responses that differ from the challenge sent (link 1, to 10.0.0.2:4000, 0x1111) in one thing.
    static let mismatches: [(link: UInt32, address: String, challenge: UInt64)] = [
        (link, "10.0.0.2:4000", 0x1112),  // a wrong challenge
        (link + 1, "10.0.0.2:4000", 0x1111),  // the right one for another link
        (link, "10.0.0.3:4000", 0x1111),  // from a third address (spoofed or forwarded)
        (link, "10.0.0.2:4001", 0x1111),  // from another port of the right host
    ]

    @Test("a response that differs in challenge, link, address or port is rejected; the validation stays open", arguments: mismatches)
    func mismatchedResponseIsRejected(_ response: (link: UInt32, address: String, challenge: UInt64)) {
        var validator = Validator()
        _ = validator.probe(link: Self.link, from: "10.0.0.2:4000", host: "10.0.0.2", now: Self.at(0), challenge: 0x1111)
        #expect(validator.respond(link: response.link, from: response.address, challenge: response.challenge, now: Self.at(10)) == .rejected)
        #expect(validator.pending.count == 1)
        #expect(validator.respond(link: Self.link, from: "10.0.0.2:4000", challenge: 0x1111, now: Self.at(20)) == .validated)
    }

    @Test("a spoofer's validation does not block the real client's: each address has its own challenge")
    func spoofAndRealClientValidateIndependently() {
        var validator = Validator()
        #expect(validator.probe(link: Self.link, from: "10.9.9.9:1", host: "10.9.9.9", now: Self.at(0), challenge: 0x5150) == .sendChallenge(0x5150))
        #expect(validator.probe(link: Self.link, from: "10.0.0.2:4000", host: "10.0.0.2", now: Self.at(5), challenge: 0x7777) == .sendChallenge(0x7777))
        // The spoofer cannot answer for the real address, nor with its own challenge for it.
        #expect(validator.respond(link: Self.link, from: "10.0.0.2:4000", challenge: 0x5150, now: Self.at(10)) == .rejected)
        #expect(validator.respond(link: Self.link, from: "10.0.0.2:4000", challenge: 0x7777, now: Self.at(20)) == .validated)
        #expect(validator.pending.isEmpty)
    }

    @Test("an unanswered challenge times out and is counted; its late response is rejected")
    func unansweredChallengeTimesOut() {
        var validator = Validator(limits: .init(timeout: .seconds(3)))
        _ = validator.probe(link: Self.link, from: "10.0.0.2:4000", host: "10.0.0.2", now: Self.at(0), challenge: 0x3333)
        validator.expire(now: Self.at(2_999))
        #expect(validator.pending.count == 1 && validator.timedOut == 0)
        validator.expire(now: Self.at(3_000))
        #expect(validator.pending.isEmpty && validator.timedOut == 1)
        #expect(validator.respond(link: Self.link, from: "10.0.0.2:4000", challenge: 0x3333, now: Self.at(3_001)) == .rejected)
        // A later datagram from there opens a new validation with a new challenge.
        #expect(validator.probe(link: Self.link, from: "10.0.0.2:4000", host: "10.0.0.2", now: Self.at(3_100), challenge: 0x4444) == .sendChallenge(0x4444))
    }

    @Test("more datagrams from a challenged address resend its challenge at most every resend interval")
    func challengeIsResentAtAPace() {
        var validator = Validator(limits: .init(resendInterval: .milliseconds(200)))
        #expect(validator.probe(link: Self.link, from: "a:1", host: "a", now: Self.at(0), challenge: 9) == .sendChallenge(9))
        #expect(validator.probe(link: Self.link, from: "a:1", host: "a", now: Self.at(199), challenge: 10) == .pending)
        #expect(validator.probe(link: Self.link, from: "a:1", host: "a", now: Self.at(200), challenge: 11) == .sendChallenge(9), "the same challenge, not a new one")
        #expect(validator.pending.count == 1)
    }

    @Test("open validations are capped per link, per IP address and in total")
    func pendingValidationsAreCapped() {
        var validator = Validator(limits: .init(maxPending: 5, maxPendingPerHost: 3, maxPendingPerLink: 2))
        // Per link: two addresses, then refused.
        #expect(validator.probe(link: 1, from: "h1:1", host: "h1", now: Self.at(0), challenge: 1) == .sendChallenge(1))
        #expect(validator.probe(link: 1, from: "h2:1", host: "h2", now: Self.at(0), challenge: 2) == .sendChallenge(2))
        #expect(validator.probe(link: 1, from: "h3:1", host: "h3", now: Self.at(0), challenge: 3) == .refused)
        // Per host: h1 holds one (link 1); two more links may use it, a fourth may not.
        #expect(validator.probe(link: 2, from: "h1:2", host: "h1", now: Self.at(0), challenge: 4) == .sendChallenge(4))
        #expect(validator.probe(link: 3, from: "h1:3", host: "h1", now: Self.at(0), challenge: 5) == .sendChallenge(5))
        #expect(validator.probe(link: 4, from: "h1:4", host: "h1", now: Self.at(0), challenge: 6) == .refused)
        // In total: five open, the sixth refused whatever its link and host.
        #expect(validator.probe(link: 5, from: "h5:1", host: "h5", now: Self.at(0), challenge: 7) == .sendChallenge(7))
        #expect(validator.probe(link: 6, from: "h6:1", host: "h6", now: Self.at(0), challenge: 8) == .refused)
        #expect(validator.pending.count == 5)
        // A flood of new addresses leaves the table at its cap; expiry frees it.
        for port in 0..<1_000 { _ = validator.probe(link: UInt32(100 + port), from: "h9:\(port)", host: "h9", now: Self.at(1), challenge: 0) }
        #expect(validator.pending.count == 5)
        validator.expire(now: Self.at(10_000))
        #expect(validator.pending.isEmpty && validator.timedOut == 5)
    }

    @Test("a link that ends closes its validations")
    func forgettingALinkClosesItsValidations() {
        var validator = Validator()
        _ = validator.probe(link: 1, from: "a:1", host: "a", now: Self.at(0), challenge: 1)
        _ = validator.probe(link: 2, from: "b:1", host: "b", now: Self.at(0), challenge: 2)
        validator.forget(link: 1)
        #expect(validator.pending.map(\.link) == [2])
        #expect(validator.respond(link: 1, from: "a:1", challenge: 1, now: Self.at(1)) == .rejected)
    }

    @Test("a link moves to another IP address only if that address may hold another link; a move charges no handshake")
    func aMoveKeepsThePerAddressLimit() {
        var ledger = UDPAddressLedger(limits: .init(maxLinksPerAddress: 1, handshakesPerSecondPerAddress: 1))
        let now = ConduitInstant(nanoseconds: 5_000_000_000)
        #expect(ledger.admit("10.0.0.1", now: now) == .admitted)
        #expect(ledger.admit("10.0.0.2", now: now) == .admitted)
        // 10.0.0.2 is full: the link of 10.0.0.1 cannot move there, and nothing changes.
        let refused = ledger.move(from: "10.0.0.1", to: "10.0.0.2", now: now)
        #expect(!refused)
        #expect(ledger.entries["10.0.0.1"]?.links == 1 && ledger.entries["10.0.0.2"]?.links == 1)
        // Within one IP address (a new port) it always can.
        let withinHost = ledger.move(from: "10.0.0.1", to: "10.0.0.1", now: now)
        #expect(withinHost)
        // To an address without links it can, and the count moves with it.
        let toFreshHost = ledger.move(from: "10.0.0.1", to: "10.0.0.3", now: now)
        #expect(toFreshHost)
        #expect(ledger.entries["10.0.0.1"]?.links == 0 && ledger.entries["10.0.0.3"]?.links == 1)
        #expect(ledger.admit("10.0.0.3", now: now) == .tooManyLinks)
        // The move was not a handshake: 10.0.0.3's one handshake this second is still there.
        ledger.release("10.0.0.3")
        #expect(ledger.admit("10.0.0.3", now: now) == .admitted)
    }

    @Test("only a sequence number newer than every one received may move a path (serial arithmetic, wrapping)")
    func sequenceHighWater() {
        var highWater = RTPSequenceHighWater()
        #expect(highWater.isNewer(0))
        highWater.record(65_530)
        #expect(!highWater.isNewer(65_530), "a replay of the newest")
        #expect(!highWater.isNewer(65_000), "an older one")
        #expect(highWater.isNewer(65_531))
        #expect(highWater.isNewer(4), "across the wrap")
        highWater.record(4)
        highWater.record(65_535)
        #expect(highWater.highest == 4, "a late datagram does not move the high water back")
        #expect(!highWater.isNewer(65_535) && highWater.isNewer(5))
        #expect(!highWater.isNewer(4 &+ 0x8000), "half the space ahead counts as behind")
    }
}

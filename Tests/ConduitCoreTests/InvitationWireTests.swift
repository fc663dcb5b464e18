import ConduitCore
import ConduitImpairment
import ConduitRooms
import Testing

// The invitation wire codec: every message round-trips byte for byte, each kind of bad input gets
// its typed error, and seeded random and mutated input never crashes.

@Suite("Invitations: wire codec")
struct InvitationWireTests {
    typealias I = Inv
    static let id = InvitationID(rawValue: 0x0123_4567_89AB_CDEF)!

    static let samples: [InvitationMessage] = [
        .invite(tag: 7, InvitationRequest(invitees: [I.bob], data: I.bytes("room-1"), timeoutSeconds: 30)),
        .invite(tag: 8, InvitationRequest(invitees: [I.bob, I.carol], groupID: "class-1", data: [], timeoutSeconds: 0, onlineUserOnly: true)),
        .accept(tag: 9, id, data: I.bytes("ok")),
        .reject(tag: 10, id, data: I.bytes("busy")),
        .cancel(tag: 11, id, data: []),
        .invited(tag: 7, InvitationReceipt(id: id, skippedOffline: [I.dave])),
        .done(tag: 9, id),
        .refused(tag: 12, id, InvitationError(.alreadyAnswered, "bob already accepted")),
        .refused(tag: 13, nil, InvitationError(.malformedRequest, "")),
        .refused(tag: 14, nil, InvitationError(InvitationError.Code(rawValue: 999), "a code from a newer relay")),
        .event(.newInvitation(NewInvitation(id: id, inviter: I.alice, groupID: "g", invitees: [I.bob, I.carol], data: [0, 255], timeoutSeconds: 60))),
        .event(.newInvitation(NewInvitation(id: id, inviter: I.alice, groupID: nil, invitees: [I.bob], data: [], timeoutSeconds: 0))),
        .event(.inviteeAccepted(id, invitee: I.bob, data: I.bytes("a"))),
        .event(.inviteeRejected(id, invitee: I.bob, data: I.bytes("busy"))),
        .event(.invitationCancelled(id, inviter: I.alice, data: I.bytes("bye"), reason: .cancelledByInviter)),
        .event(.invitationCancelled(id, inviter: I.alice, data: [], reason: .inviterLeft)),
        .event(.invitationTimeout(id, invitees: [I.bob, I.carol], cause: .deadline)),
        .event(.invitationTimeout(id, invitees: [I.bob], cause: .inviteeLeft)),
    ]

    @Test("every message type round-trips, and re-encodes to the same bytes", arguments: samples)
    func roundTrip(_ message: InvitationMessage) throws {
        let bytes = try message.encoded()
        #expect(try InvitationMessage.parse(bytes) == message)
        #expect(try InvitationMessage.parse(bytes).encoded() == bytes)
    }

    @Test("the header is laid out as documented")
    func headerLayout() throws {
        let bytes = try InvitationMessage.accept(tag: 0x0A0B_0C0D, Self.id, data: [0xEE]).encoded()
        #expect(bytes == [1, 0x02, 0, 0, 0x0A, 0x0B, 0x0C, 0x0D, 0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, 0, 1, 0xEE])
    }

    static func parseError(_ bytes: [UInt8]) -> InvitationWireError? {
        do {
            _ = try InvitationMessage.parse(bytes)
            return nil
        } catch {
            return error
        }
    }

    @Test("bad input gets its typed error")
    func refusals() throws {
        let accept = try InvitationMessage.accept(tag: 1, Self.id, data: I.bytes("x")).encoded()
        #expect(Self.parseError([]) == .truncated(needed: 16, got: 0))
        #expect(Self.parseError(Array(accept.prefix(15))) == .truncated(needed: 16, got: 15))
        #expect(Self.parseError(Array(accept.dropLast())) == .truncated(needed: 19, got: 18))
        var bad = accept
        bad[0] = 2
        #expect(Self.parseError(bad) == .unsupportedVersion(2))
        bad = accept
        bad[1] = 0x55
        #expect(Self.parseError(bad) == .unknownMessageType(0x55))
        bad = accept
        bad[2] = 1  // accept has no flags
        #expect(Self.parseError(bad) == .reservedBitsSet)
        bad = accept
        bad[3] = 1
        #expect(Self.parseError(bad) == .reservedBitsSet)
        bad = accept
        for i in 8..<16 { bad[i] = 0 }
        #expect(Self.parseError(bad) == .invalidInvitationID)
        #expect(Self.parseError(accept + [0]) == .trailingBytes(1))

        let invite = try InvitationMessage.invite(tag: 1, InvitationRequest(invitees: [I.bob])).encoded()
        bad = invite
        bad[15] = 1  // an invite names no invitation yet
        #expect(Self.parseError(bad) == .invalidInvitationID)
        bad = invite
        bad[2] = 2  // only bit 0 is defined
        #expect(Self.parseError(bad) == .reservedBitsSet)

        let event = try InvitationMessage.event(.inviteeAccepted(Self.id, invitee: I.bob, data: [])).encoded()
        bad = event
        bad[7] = 1  // events carry no request tag
        #expect(Self.parseError(bad) == .reservedBitsSet)
        bad = event
        bad[16] = 0  // empty peer ID
        #expect(Self.parseError(Array(bad.prefix(17)) + [0, 0]) == .invalidIdentifier("peer ID must not be empty"))
        bad = event
        bad[17] = 0x07  // control character in "bob"
        #expect(Self.parseError(bad) == .invalidIdentifier("peer ID contains control characters"))
        bad = event
        bad[17] = 0xFF  // not UTF-8
        #expect(Self.parseError(bad) == .invalidIdentifier("not UTF-8"))
    }

    @Test("a list claiming more peers than the bytes could hold is refused before anything is allocated for it")
    func claimedCounts() throws {
        // invite header, timeout, no group, then a peer count of 65535 with 4 bytes behind it.
        var bytes = try InvitationMessage.invite(tag: 1, InvitationRequest(invitees: [I.bob])).encoded()
        bytes.removeLast(2 + 4)  // data length, "bob" and its length byte
        bytes.removeLast(2)  // the count
        bytes += [0xFF, 0xFF, 1, 0x61, 0, 0]
        #expect(Self.parseError(bytes) == .countTooLarge(claimed: 65_535, limit: 2))
        // A data length longer than what follows is truncation, not an allocation.
        let accept = try InvitationMessage.accept(tag: 1, Self.id, data: []).encoded()
        #expect(Self.parseError(Array(accept.dropLast(2)) + [0xFF, 0xFF]) == .truncated(needed: 18 + 65_535, got: 18))
    }

    @Test("encoding refuses what a length prefix cannot carry")
    func encodeLimits() {
        let big = InvitationMessage.accept(tag: 1, Self.id, data: Array(repeating: 0, count: 65_536))
        #expect(throws: InvitationWireError.fieldTooLong("custom data")) { try big.encoded() }
        let many = InvitationMessage.event(
            .invitationTimeout(Self.id, invitees: Array(repeating: I.bob, count: InvitationMessage.maxPeersPerList + 1), cause: .deadline))
        #expect(throws: InvitationWireError.fieldTooLong("peer list")) { try many.encoded() }
    }

    @Test("fuzz: seeded random bytes and mutated messages never crash; what parses re-encodes stably")
    func fuzz() throws {
        var rng = SeededRandom(seed: 0x1A7E)
        let valid = try Self.samples.map { try $0.encoded() }
        var parsed = 0
        var refused = 0
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = rng.bytes(rng.below(64))
                if bytes.count > 1, rng.chance(0.7) {
                    bytes[0] = 1  // get past the version check
                    bytes[1] = [0x01, 0x02, 0x03, 0x04, 0x81, 0x82, 0x83, 0x90, 0x91, 0x92, 0x93, 0x94][rng.below(12)]
                }
            } else {
                bytes = valid[rng.below(valid.count)]
                for _ in 0..<(1 + rng.below(3)) {
                    switch rng.below(3) {
                    case 0: if !bytes.isEmpty { bytes[rng.below(bytes.count)] ^= UInt8(1 << rng.below(8)) }
                    case 1: bytes.removeLast(rng.below(bytes.count + 1))
                    default: bytes += rng.bytes(1 + rng.below(4))
                    }
                }
            }
            let message: InvitationMessage
            do {
                message = try InvitationMessage.parse(bytes)
            } catch {
                refused += 1
                continue
            }
            parsed += 1
            // Outside the do/catch: an encoding failure here is a bug, not a refusal.
            let again = try message.encoded()
            #expect(try InvitationMessage.parse(again) == message)
            if case .refused = message {} else { #expect(again == bytes) }
        }
        #expect(parsed + refused == 20_000)
        #expect(parsed > 0)
        #expect(refused > 0)
    }
}

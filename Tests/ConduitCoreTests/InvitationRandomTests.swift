import ConduitCore
import ConduitImpairment
import ConduitRooms
import ConduitRelayCore
import Testing

// Seeded random sequences of every operation (invite, answers, cancels, peers leaving, time
// passing) on one book, checking after each step what must always hold.

@Suite("Invitations: random operation sequences")
struct InvitationRandomTests {
    typealias I = Inv

    @Test("invariants hold under random operations; when everyone leaves nothing remains", arguments: [1, 2, 3, 4] as [UInt64])
    func randomOperations(seed: UInt64) throws {
        var rng = SeededRandom(seed: seed)
        var book = I.book {
            $0.maxOpenInvitationsPerInviter = 8
            $0.maxTombstones = 64
            $0.tombstoneLifetime = .seconds(20)
        }
        let peers = (0..<8).map { PeerID(unchecked: "p\($0)") }
        var present = Set(peers)
        var known: [InvitationID: (inviter: PeerID, invitees: [PeerID])] = [:]
        var endedSeen = Set<InvitationID>()
        var stillOpen = Set<InvitationID>()
        var kinds = Set<String>()
        var ids: [InvitationID] = []  // in the order they were made, so picks replay exactly
        var newInvitationsTo: [InvitationID: [PeerID]] = [:]
        var now = I.t(0)

        func check(_ deliveries: [InvitationDelivery], _ book: InvitationBook) {
            for delivery in deliveries {
                let id = delivery.event.invitationID
                guard let parties = known[id] else {
                    Issue.record("delivery about an ID never handed out: \(delivery)")
                    continue
                }
                // Only parties are ever told anything, and only while the invitation was open.
                #expect(delivery.to == parties.inviter || parties.invitees.contains(delivery.to), "\(delivery) to an outsider")
                #expect(!endedSeen.contains(id), "\(delivery) after the invitation ended")
                if case .newInvitation = delivery.event { newInvitationsTo[id, default: []].append(delivery.to) }
                kinds.insert(Self.kind(delivery.event))
            }
            for id in stillOpen where book.invitation(id)?.isOpen != true {
                endedSeen.insert(id)
                stillOpen.remove(id)
            }
            #expect(book.openCount == stillOpen.count)
        }

        for _ in 0..<3_000 {
            now = now + .milliseconds(Int64(rng.below(1_500)))
            let actor = peers[rng.below(peers.count)]
            // Mostly recent invitations (likely open) and their own parties; sometimes anything, anyone.
            let recent = rng.chance(0.7)
            let pick = ids.isEmpty ? nil : ids[recent ? ids.count - 1 - rng.below(min(ids.count, 12)) : rng.below(ids.count)]
            let invitee = pick.flatMap { recent ? known[$0]!.invitees[rng.below(known[$0]!.invitees.count)] : actor } ?? actor
            let inviter = pick.flatMap { recent ? known[$0]!.inviter : actor } ?? actor
            switch rng.below(8) {
            case 0, 1:
                let count = 1 + rng.below(4)
                let invitees = Array(peers.filter { $0 != actor }.prefix(count + rng.below(2)))
                let request = InvitationRequest(
                    invitees: invitees, data: rng.bytes(rng.below(8)), timeoutSeconds: UInt32(rng.below(4)) * 3,
                    onlineUserOnly: rng.chance(0.3))
                if let receipt = try? book.invite(from: actor, request, now: now, isOnline: { present.contains($0) }) {
                    known[receipt.id] = (actor, invitees.filter { !receipt.skippedOffline.contains($0) })
                    stillOpen.insert(receipt.id)
                    ids.append(receipt.id)
                }
            case 2: if let pick { _ = try? book.accept(pick, by: invitee, now: now) }
            case 3: if let pick { _ = try? book.reject(pick, by: invitee, data: [1], now: now) }
            case 4: if let pick { _ = try? book.cancel(pick, by: inviter, now: now) }
            case 5:
                if present.remove(actor) != nil { book.peerLeft(actor, now: now) } else { present.insert(actor) }
            default:
                book.handleTimeouts(now: now)
            }
            check(book.takeDeliveries(), book)
            #expect(book.tombstoneCount <= 64)
        }
        // The sequence was not vacuous: every kind of event happened.
        #expect(kinds == ["new", "accepted", "rejected", "cancelled/cancelledByInviter", "cancelled/inviterLeft", "timeout/deadline", "timeout/inviteeLeft"])
        // Each invitee was told of its invitation exactly once.
        for (id, list) in newInvitationsTo { #expect(list == known[id]!.invitees, "newInvitation recipients of \(id)") }

        // Everyone leaves, including peers that left before and were invited while away
        // (without onlineUserOnly an offline invitee stays invited until it answers, times out
        // or leaves again; a relay calls peerLeft once per departure).
        for peer in peers { book.peerLeft(peer, now: now) }
        check(book.takeDeliveries(), book)
        #expect(book.openCount == 0)
        #expect(book.trackedPeerCount == 0)
        book.handleTimeouts(now: now + .seconds(3_600))
        #expect(book.takeDeliveries().isEmpty)
        #expect(book.tombstoneCount == 0)
        #expect(book.deadlineEntryCount == 0)
        #expect(book.nextTimeout == nil)
    }

    static func kind(_ event: InvitationEvent) -> String {
        switch event {
        case .newInvitation: "new"
        case .inviteeAccepted: "accepted"
        case .inviteeRejected: "rejected"
        case .invitationCancelled(_, _, _, let reason): "cancelled/\(reason)"
        case .invitationTimeout(_, _, let cause): "timeout/\(cause)"
        }
    }

    @Test("the client survives random and mutated relay messages: no crash, bounded views, counted drops")
    func clientFuzz() throws {
        var rng = SeededRandom(seed: 0xC11E)
        var client = InvitationClient(me: "bob", configuration: { var c = InvitationClient.Configuration(); c.maxTrackedInvitations = 16; return c }())
        let peers: [PeerID] = ["alice", "bob", "carol"]
        for _ in 0..<5_000 {
            let id = InvitationID(rawValue: UInt64(1 + rng.below(40)))!
            let someone = peers[rng.below(peers.count)]
            let message: InvitationMessage
            switch rng.below(9) {
            case 0: message = .event(.newInvitation(NewInvitation(id: id, inviter: "alice", groupID: nil, invitees: ["bob", "carol"], data: [], timeoutSeconds: 0)))
            case 1: message = .event(.inviteeAccepted(id, invitee: someone, data: []))
            case 2: message = .event(.inviteeRejected(id, invitee: someone, data: []))
            case 3: message = .event(.invitationTimeout(id, invitees: [someone], cause: .deadline))
            case 4: message = .event(.invitationCancelled(id, inviter: "alice", data: [], reason: .inviterLeft))
            case 5: message = .done(tag: UInt32(rng.below(4)), id)
            case 6: message = .refused(tag: UInt32(rng.below(4)), id, InvitationError(.unknownInvitation, ""))
            case 7: message = .invited(tag: UInt32(rng.below(4)), InvitationReceipt(id: id))
            default:
                // Our own answer, and the relay's reply to it.
                guard let request = try? client.accept(id) else { continue }
                message = .done(tag: request.tagForTests, id)
            }
            _ = client.receive(message)
            #expect(client.openInvitations.count <= 16)
            #expect(client.requestsInFlight <= 256)
        }
        #expect(client.droppedMessages > 0)
    }
}

extension InvitationMessage {
    /// The request tag of a request message (0 for anything else).
    var tagForTests: UInt32 {
        switch self {
        case .invite(let tag, _), .accept(let tag, _, _), .reject(let tag, _, _), .cancel(let tag, _, _): tag
        default: 0
        }
    }
}

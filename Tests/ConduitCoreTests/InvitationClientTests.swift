import ConduitCore
import ConduitRooms
import Testing

/// A relay in a few lines, as the real one will host the book: decode a request, pass it and
/// `now` to the book, reply to the sender, send the deliveries. Every message crosses the wire
/// codec both ways.
struct MiniRelay {
    var book = Inv.book()
    var clients: [PeerID: InvitationClient] = [:]
    var online: Set<PeerID> = []
    /// Everything each client's app was told, in order.
    var told: [PeerID: [InvitationClient.Update]] = [:]

    init(_ peers: [PeerID]) {
        for peer in peers {
            clients[peer] = InvitationClient(me: peer)
            online.insert(peer)
        }
    }

    /// The relay's whole invitation handling.
    mutating func handle(_ bytes: [UInt8], from peer: PeerID, now: ConduitInstant) throws {
        let reply: InvitationMessage
        switch try InvitationMessage.parse(bytes) {
        case .invite(let tag, let request):
            do {
                let online = self.online
                reply = .invited(tag: tag, try book.invite(from: peer, request, now: now, isOnline: { online.contains($0) }))
            } catch { reply = .refused(tag: tag, nil, error) }
        case .accept(let tag, let id, let data): reply = Self.result(tag, id) { () throws(InvitationError) in try book.accept(id, by: peer, data: data, now: now) }
        case .reject(let tag, let id, let data): reply = Self.result(tag, id) { () throws(InvitationError) in try book.reject(id, by: peer, data: data, now: now) }
        case .cancel(let tag, let id, let data): reply = Self.result(tag, id) { () throws(InvitationError) in try book.cancel(id, by: peer, data: data, now: now) }
        default: reply = .refused(tag: 0, nil, InvitationError(.malformedRequest, "not a request"))
        }
        try deliver(reply, to: peer)
        for delivery in book.takeDeliveries() { try deliver(.event(delivery.event), to: delivery.to) }
    }

    static func result(_ tag: UInt32, _ id: InvitationID, _ body: () throws(InvitationError) -> Void) -> InvitationMessage {
        do {
            try body()
            return .done(tag: tag, id)
        } catch { return .refused(tag: tag, id, error) }
    }

    mutating func deliver(_ message: InvitationMessage, to peer: PeerID) throws {
        guard online.contains(peer) else { return }
        let parsed = try InvitationMessage.parse(try message.encoded())
        told[peer, default: []] += clients[peer]!.receive(parsed)
    }

    /// A client makes a request and it reaches the relay.
    mutating func send(_ peer: PeerID, now: ConduitInstant, _ make: (inout InvitationClient) throws -> InvitationMessage) throws {
        let message = try make(&clients[peer]!)
        try handle(try message.encoded(), from: peer, now: now)
    }

    mutating func tick(_ now: ConduitInstant) throws {
        book.handleTimeouts(now: now)
        for delivery in book.takeDeliveries() { try deliver(.event(delivery.event), to: delivery.to) }
    }

    mutating func leave(_ peer: PeerID, now: ConduitInstant) throws {
        online.remove(peer)
        book.peerLeft(peer, now: now)
        for delivery in book.takeDeliveries() { try deliver(.event(delivery.event), to: delivery.to) }
    }

    mutating func take(_ peer: PeerID) -> [InvitationClient.Update] {
        defer { told[peer] = [] }
        return told[peer] ?? []
    }
}

@Suite("Invitations: client tracking over the wire")
struct InvitationClientTests {
    typealias I = Inv

    @Test("1:1 call through the codec: the callee's view gives the room; accept ends both views as settled")
    func callAccepted() throws {
        var relay = MiniRelay([I.alice, I.bob])
        try relay.send(I.alice, now: I.t(0)) { try $0.invite(InvitationRequest(invitees: [I.bob], data: I.bytes("room-9"), timeoutSeconds: 30)) }
        guard case .inviteSent(let tag, let receipt) = try #require(relay.take(I.alice).first) else {
            Issue.record("expected inviteSent")
            return
        }
        #expect(tag == 1)
        let id = receipt.id
        #expect(relay.clients[I.alice]!.view(id)?.role == .inviter)
        let ring = relay.take(I.bob)
        #expect(ring.count == 1)
        #expect(relay.clients[I.bob]!.view(id)?.data == I.bytes("room-9"))

        try relay.send(I.bob, now: I.t(1)) { try $0.accept(id) }
        let bobTold = relay.take(I.bob)
        #expect(bobTold.count == 2)
        #expect(bobTold.first == .requestDone(tag: 1, id))
        guard case .ended(id, let bobView) = bobTold.last else { Issue.record("expected ended"); return }
        #expect(bobView.end == .settled)
        #expect(bobView.states == [.accepted])
        let aliceTold = relay.take(I.alice)
        #expect(aliceTold.first == .event(.inviteeAccepted(id, invitee: I.bob, data: [])))
        guard case .ended(id, let aliceView) = aliceTold.last else { Issue.record("expected ended"); return }
        #expect(aliceView.accepted == [I.bob])
        #expect(relay.clients[I.alice]!.openInvitations.isEmpty)
        #expect(relay.clients[I.bob]!.openInvitations.isEmpty)
    }

    @Test("local refusals cost no round trip: unknown ID, wrong role, other answer after answering")
    func localRefusals() throws {
        var relay = MiniRelay([I.alice, I.bob, I.carol])
        try relay.send(I.alice, now: I.t(0)) { try $0.invite(InvitationRequest(invitees: [I.bob, I.carol])) }
        guard case .inviteSent(_, let receipt) = try #require(relay.take(I.alice).first) else { return }
        let id = receipt.id
        #expect(refusal { _ = try relay.clients[I.alice]!.accept(id) } == .notInvitee)
        #expect(refusal { _ = try relay.clients[I.bob]!.cancel(id) } == .notInviter)
        #expect(refusal { _ = try relay.clients[I.bob]!.accept(InvitationID(rawValue: 1)!) } == .unknownInvitation)
        #expect(refusal { _ = try relay.clients[I.alice]!.invite(InvitationRequest(invitees: [I.alice])) } == .invalidInviteeList)
        try relay.send(I.bob, now: I.t(1)) { try $0.accept(id) }
        #expect(refusal { _ = try relay.clients[I.bob]!.reject(id) } == .alreadyAnswered)
        // The same answer again goes out, and the relay treats it as done.
        try relay.send(I.bob, now: I.t(2)) { try $0.accept(id) }
        #expect(relay.take(I.bob).last.map { if case .requestDone = $0 { true } else { false } } == true)
    }

    @Test("a refused request is reported with the relay's code (an outsider cannot answer)")
    func refusedByRelay() throws {
        var relay = MiniRelay([I.alice, I.bob, I.eve])
        try relay.send(I.alice, now: I.t(0)) { try $0.invite(InvitationRequest(invitees: [I.bob])) }
        guard case .inviteSent(_, let receipt) = try #require(relay.take(I.alice).first) else { return }
        // Eve forges an accept with the right ID, bypassing her client's local check.
        try relay.handle(try InvitationMessage.accept(tag: 77, receipt.id, data: []).encoded(), from: I.eve, now: I.t(1))
        #expect(relay.book.invitation(receipt.id)?.state(of: I.bob) == .pending)
        #expect(relay.take(I.alice).isEmpty)
        // Her client had no request 77 in flight: a counted drop.
        #expect(relay.clients[I.eve]!.droppedMessages == 1)
    }

    @Test("group views: hands raised are collected per invitee; timeout and cancel end the views on every side")
    func groupViews() throws {
        var relay = MiniRelay([I.alice, I.bob, I.carol, I.dave])
        try relay.send(I.alice, now: I.t(0)) {
            try $0.invite(InvitationRequest(invitees: [I.bob, I.carol, I.dave], groupID: "class", data: I.bytes("raise hands"), timeoutSeconds: 10))
        }
        guard case .inviteSent(_, let receipt) = try #require(relay.take(I.alice).first) else { return }
        let id = receipt.id
        try relay.send(I.carol, now: I.t(1)) { try $0.accept(id) }
        try relay.send(I.bob, now: I.t(2)) { try $0.accept(id) }
        #expect(relay.clients[I.alice]!.view(id)?.accepted == [I.bob, I.carol])
        #expect(relay.clients[I.dave]!.view(id)?.accepted == [I.bob, I.carol])
        try relay.tick(I.t(10))
        for peer in [I.alice, I.bob, I.carol, I.dave] {
            guard case .ended(id, let view) = relay.take(peer).last else { Issue.record("\(peer) was not told the end"); continue }
            #expect(view.states == [.accepted, .accepted, .timedOut])
            #expect(relay.clients[peer]!.openInvitations.isEmpty)
        }

        try relay.send(I.alice, now: I.t(11)) { try $0.invite(InvitationRequest(invitees: [I.bob, I.carol])) }
        guard case .inviteSent(_, let second) = try #require(relay.take(I.alice).first) else { return }
        try relay.send(I.alice, now: I.t(12)) { try $0.cancel(second.id) }
        for peer in [I.alice, I.bob, I.carol] {
            guard case .ended(second.id, let view) = relay.take(peer).last else { Issue.record("\(peer) was not told the end"); continue }
            #expect(view.end == .cancelled(.cancelledByInviter))
        }
    }

    @Test("onlineUserOnly over the wire: the inviter's view holds only the invitees reached")
    func onlineOnly() throws {
        var relay = MiniRelay([I.alice, I.bob, I.carol])
        try relay.leave(I.carol, now: I.t(0))
        try relay.send(I.alice, now: I.t(0)) { try $0.invite(InvitationRequest(invitees: [I.bob, I.carol], onlineUserOnly: true)) }
        guard case .inviteSent(_, let receipt) = try #require(relay.take(I.alice).first) else { return }
        #expect(receipt.skippedOffline == [I.carol])
        #expect(relay.clients[I.alice]!.view(receipt.id)?.invitees == [I.bob])
        try relay.leave(I.bob, now: I.t(1))
        guard case .ended(_, let view) = relay.take(I.alice).last else { Issue.record("expected ended"); return }
        #expect(view.states == [.left])
    }
}

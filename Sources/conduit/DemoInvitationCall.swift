import Conduit
import ConduitRelay

/// The demo's call through invitations: alice and bob wait in a lobby on an in-process relay;
/// alice calls bob (an invitation carrying the call's room ID); bob, busy, rejects the first;
/// the second he answers, both join the call room and exchange a message each way.
struct DemoInvitationCall {
    let runtime: ConduitRuntime
    let transcript: Transcript

    func run() async throws -> [String] {
        var failures: [String] = []
        func check(_ condition: Bool, _ what: String) { if !condition { failures.append("call: " + what) } }

        var generator = SystemRandomNumberGenerator()
        let secret = try RelaySecret(bytes: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let server = RelayServer(authority: RelayTokenAuthority(secret: secret), registry: runtime.registry)
        let url = try await server.listen(on: "loopback://demo-call-relay").description
        func token(_ peer: PeerID, _ room: RoomID) -> String {
            RelayToken(room: room, peer: peer, canPublish: true, canSubscribe: true, allowedSubgroups: nil,
                       expiresAt: RelayServer.unixTime() + 60).signed(with: secret)
        }
        let aliceLobby = try await runtime.join(relay: url, room: "lobby", as: "alice", token: token("alice", "lobby"))
        let bobLobby = try await runtime.join(relay: url, room: "lobby", as: "bob", token: token("bob", "lobby"))
        await transcript.say("relay", "alice and bob wait in lobby on \(url)")

        // Bob's phone: the first ring is rejected as busy, the second answered.
        let (runtime, transcript) = (self.runtime, self.transcript)
        let bobToken = token("bob", "call-room")
        let phone = Task { () -> Conference? in
            var rings = 0
            for await event in bobLobby.invitationEvents {
                guard case .newInvitation(let ring) = event else { continue }
                rings += 1
                await transcript.say("bob", "ringing: \(ring.inviter) calls, room \(String(decoding: ring.data, as: UTF8.self))")
                if rings == 1 {
                    try? await bobLobby.reject(ring.id, data: Array("busy".utf8))
                    await transcript.say("bob", "rejected: busy")
                    continue
                }
                let call = try? await runtime.answerCall(ring, on: bobLobby, relay: url, token: bobToken)
                await transcript.say("bob", "accepted and joined \(call?.room.rawValue ?? "nothing")")
                return call
            }
            return nil
        }

        do {
            _ = try await runtime.placeCall(on: aliceLobby, to: "bob", room: "call-room", relay: url, token: token("alice", "call-room"), timeout: .seconds(10))
            check(false, "a rejected call was answered")
        } catch let error as CallNotAnswered {
            await transcript.say("alice", "\(error)")
            check(error.reason == .rejected && error.data == Array("busy".utf8), "the first call ended as \(error)")
        }
        let aliceCall = try await runtime.placeCall(on: aliceLobby, to: "bob", room: "call-room", relay: url, token: token("alice", "call-room"), timeout: .seconds(10))
        await transcript.say("alice", "bob answered; joined \(aliceCall.room)")
        guard let bobCall = await bounded(.seconds(10), default: nil, { await phone.value }) else {
            check(false, "bob never joined the call")
            await server.shutdown()
            return failures
        }

        let aliceLog = RoomLog(aliceCall)
        let bobLog = RoomLog(bobCall)
        let toBob = try await aliceCall.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        let toAlice = try await bobCall.makeOutboundDataSession(streamID: 101, type: .reliableMessage)
        check(await bobLog.waitIncoming(100, nil), "bob was not told of alice's session")
        check(await aliceLog.waitIncoming(101, nil), "alice was not told of bob's session")
        let atBob = try await bobCall.makeInboundDataSession(streamID: 100)
        let atAlice = try await aliceCall.makeInboundDataSession(streamID: 101)
        try await toBob.send(Array("hello bob, thanks for picking up".utf8))
        try await toAlice.send(Array("hi alice".utf8))
        check(await receive(atBob, who: "bob") == ["alice: hello bob, thanks for picking up"], "bob did not get alice's message")
        check(await receive(atAlice, who: "alice") == ["bob: hi alice"], "alice did not get bob's message")
        check(await server.invitations.book.openCount == 0, "the relay still holds open invitations")

        for conference in [aliceCall, bobCall, aliceLobby, bobLobby] { await conference.leave() }
        await transcript.say("alice", "hung up")
        await server.shutdown()
        return failures
    }

    func receive(_ session: InboundDataSession, who: String) async -> [String] {
        let lines = await bounded(.seconds(5), default: []) { () -> [String] in
            for await event in session.events {
                if case .message(let message) = event {
                    return ["\(message.sender?.rawValue ?? "?"): \(String(decoding: message.bytes, as: UTF8.self))"]
                }
            }
            return []
        }
        for line in lines { await transcript.say(who, "received from \(line)") }
        return lines
    }
}

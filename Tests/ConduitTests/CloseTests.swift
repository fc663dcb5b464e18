import Conduit
import Testing

/// How sessions end: declined by the receiver, closed by the sender, ended with the call; and the
/// oversize sends that are refused without ending anything.
@Suite("Closing")
struct CloseTests {
    @Test("unsupportInboundDataSession closes the sender's session with unsupported, and only that one", arguments: SessionType.allCases)
    func unsupportedClosesSender(type: SessionType) async throws {
        let pair = try await CallPair.connect("close-unsupported-\(type.name)")
        let declined = try await pair.caller.makeOutboundDataSession(streamID: 104, type: type)
        try await CallPair.awaitIncoming(104, type, on: pair.callee)
        let (kept, keptIn) = try await pair.open(105, .reliableMessage)

        await pair.callee.unsupportInboundDataSession(streamID: 104)
        #expect(try await drain(declined.events, "the declined session's events") == [.closed(.unsupported)])
        #expect(await declined.closeReason == .unsupported)
        #expect(await pair.callee.inboundDataSession(streamID: 104) == nil)
        #expect(await pair.caller.outboundDataSession(streamID: 104) === declined)

        if let error = await conduitError({ () throws(ConduitError) in try await declined.send([1, 2, 3], timestamp: 1) }) {
            #expect(error.code == .sessionClosed)
            #expect(error.closeReason == .unsupported)
            #expect(error.failReason == nil)
        }
        if let error = await conduitError({ () throws(ConduitError) in _ = try await declined.trySend([1], timestamp: 2) }) {
            #expect(error.code == .sessionClosed)
            #expect(error.closeReason == .unsupported)
        }

        // The other session is unaffected, in both directions of use.
        #expect(await kept.closeReason == nil)
        try await kept.send(Array("still open".utf8), timestamp: 1_234)
        let event = try #require(try await next(keptIn, "a message on the other session"))
        #expect(event.message?.bytes == Array("still open".utf8))
        #expect(event.message?.timestamp == 1_234)
        try await pair.finish()
    }

    @Test("OutboundDataSession.close is graceful: every accepted message arrives, then sessionEnd")
    func closeAfterMessages() async throws {
        let pair = try await CallPair.connect("close-after-messages")
        let (outbound, inbound) = try await pair.open(106, .reliableMessage)
        var generator = SplitMix64(seed: 106)
        let sends = (0..<40).map { index in (bytes: generator.bytes(generator.logUniformSize(max: 16 * 1024)), timestamp: 600 + UInt64(index)) }
        for send in sends { try await outbound.send(send.bytes, timestamp: send.timestamp) }
        // Close at once: whatever is still queued must still be delivered before the close.
        await outbound.close()
        if let error = await conduitError({ () throws(ConduitError) in try await outbound.send([0], timestamp: 0) }) {
            #expect(error.code == .sessionClosed)
            #expect(error.closeReason == .sessionEnd)
        } else {
            Issue.record("a send after close() was accepted")
        }

        #expect(try await drain(outbound.events, "the outbound session's events") == [.closed(.sessionEnd)])
        #expect(await outbound.closeReason == .sessionEnd)
        let events = try await drain(inbound, "the inbound session to close")
        try #require(events.count == sends.count + 1)
        #expect(events.last == .closed(.sessionEnd))
        #expect(events.dropLast().map { $0.message?.timestamp } == sends.map(\.timestamp))
        #expect(events.dropLast().map { $0.message?.bytes } == sends.map(\.bytes))

        if let error = await conduitError({ () throws(ConduitError) in try await outbound.send([0], timestamp: 0) }) {
            #expect(error.code == .sessionClosed)
            #expect(error.closeReason == .sessionEnd)
        }
        // Closing twice is harmless, and the call goes on.
        await outbound.close()
        #expect(await outbound.closeReason == .sessionEnd)
        #expect(await pair.caller.isEnded == false)
        try await pair.finish()
    }

    @Test("hangUp closes every session on both sides with sessionEnd and ends the call")
    func hangUpClosesEverything() async throws {
        let pair = try await CallPair.connect("close-hang-up")
        var callerOut: [OutboundDataSession] = [], calleeIn: [InboundDataSession] = []
        var calleeOut: [OutboundDataSession] = [], callerIn: [InboundDataSession] = []
        for (offset, type) in SessionType.allCases.enumerated() {
            let (out, into) = try await pair.open(StreamID(100 + offset), type, from: pair.caller, to: pair.callee)
            callerOut.append(out)
            calleeIn.append(into)
            let (back, backIn) = try await pair.open(StreamID(200 + offset), type, from: pair.callee, to: pair.caller)
            calleeOut.append(back)
            callerIn.append(backIn)
        }
        // Some traffic first, so the sessions are in use when the call ends.
        for session in callerOut + calleeOut { try await session.send([9, 9], timestamp: 9) }
        for session in callerIn + calleeIn {
            let event = try #require(try await next(session, "the first delivery on stream \(session.streamID)"))
            #expect(event.message?.bytes ?? event.fragment?.bytes == [9, 9])
        }

        let caller = pair.caller
        try await within("hang up") { await caller.hangUp() }

        for session in callerOut + calleeOut {
            #expect(try await drain(session.events, "outbound \(session.streamID) to close") == [.closed(.sessionEnd)], "outbound \(session.streamID)")
            #expect(await session.closeReason == .sessionEnd)
        }
        for session in callerIn + calleeIn {
            #expect(try await drain(session, "inbound \(session.streamID) to close") == [.closed(.sessionEnd)], "inbound \(session.streamID)")
        }
        // The caller's events were read up to the last dataSessionIncoming; what is left ends the call.
        #expect(try await drain(pair.caller.events, "the caller's call events") == [.disconnected(.localHangUp)])
        #expect(try await drain(pair.callee.events, "the callee's call events") == [.disconnected(.remoteHangUp)])
        #expect(await pair.caller.isEnded)
        #expect(await pair.callee.isEnded)

        for session in callerOut + calleeOut {
            if let error = await conduitError({ () throws(ConduitError) in try await session.send([1], timestamp: 1) }) {
                #expect(error.code == .sessionClosed, "send on \(session.streamID) after hang-up")
                #expect(error.closeReason == .sessionEnd)
            }
        }
        try await pair.finish()
    }

    @Test("the callee hanging up: the caller sees remoteHangUp and its sessions close with sessionEnd")
    func calleeHangsUp() async throws {
        let pair = try await CallPair.connect("close-callee-hangs-up")
        let (outbound, inbound) = try await pair.open(130, .reliableBytes)
        let callee = pair.callee
        try await within("hang up") { await callee.hangUp() }
        #expect(try await drain(outbound.events, "the caller's outbound session to close") == [.closed(.sessionEnd)])
        #expect(try await drain(inbound, "the callee's inbound session to close") == [.closed(.sessionEnd)])
        #expect(try await drain(pair.caller.events, "the caller's call events") == [.connected(peer: "bob", isDataSessionSupported: true), .disconnected(.remoteHangUp)])
        #expect(try await drain(pair.callee.events, "the callee's call events") == [.disconnected(.localHangUp)])
        try await pair.finish()
    }

    @Test("an oversize send throws messageTooLarge and the session delivers the next send", arguments: SessionType.allCases)
    func oversizeSendIsRefused(type: SessionType) async throws {
        let pair = try await CallPair.connect("close-oversize-\(type.name)")
        let (outbound, inbound) = try await pair.open(140, type)
        let limit = type.isMessage ? 128 * 1024 : 4 * 1024 * 1024
        #expect(type.maxSendSize == limit)
        let oversize = [UInt8](repeating: 0xEE, count: limit + 1)

        if let error = await conduitError({ () throws(ConduitError) in try await outbound.send(oversize, timestamp: 1) }) {
            #expect(error.code == .messageTooLarge)
            #expect(error.closeReason == nil)
        }
        if let error = await conduitError({ () throws(ConduitError) in _ = try await outbound.trySend(oversize, timestamp: 2) }) {
            #expect(error.code == .messageTooLarge)
        }
        #expect(await outbound.closeReason == nil)

        var generator = SplitMix64(seed: 140)
        let next1 = generator.bytes(3_000)
        try await outbound.send(next1, timestamp: 3)
        var received: [UInt8] = []
        var timestamps: Set<UInt64> = []
        var messageIDs: Set<UInt32> = []
        while received.count < next1.count {
            let event = try #require(try await next(inbound, "the send after the oversize one"))
            if let message = event.message {
                received = message.bytes
                timestamps.insert(message.timestamp)
            } else if let fragment = event.fragment {
                #expect(fragment.offset == received.count)
                #expect(fragment.totalLength == next1.count)
                received += fragment.bytes
                timestamps.insert(fragment.timestamp)
                messageIDs.insert(fragment.messageID)
            } else {
                Issue.record("stream 140 closed after an oversize send")
                break
            }
        }
        #expect(received == next1)
        #expect(timestamps == [3])
        if !type.isMessage {
            // Every fragment belongs to the one valid send.
            #expect(messageIDs.count == 1)
        }
        try await pair.finish()
    }
}

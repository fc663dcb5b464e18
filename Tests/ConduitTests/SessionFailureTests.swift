import Conduit
import ConduitTesting
import Testing

/// Every `DataSessionFailReason` a session creation can fail with, through the public API.
@Suite("Session creation failures")
struct SessionFailureTests {
    private func expectCreationFailure(
        _ reason: DataSessionFailReason,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () async throws(ConduitError) -> Void
    ) async {
        guard let error = await conduitError(sourceLocation: sourceLocation, body) else { return }
        #expect(error.code == .sessionCreationFailed, sourceLocation: sourceLocation)
        #expect(error.failReason == reason, sourceLocation: sourceLocation)
        #expect(error.closeReason == nil, sourceLocation: sourceLocation)
    }

    @Test("invalidId: outbound stream 99 and 1000, inbound stream 99 and 1000")
    func invalidID() async throws {
        let pair = try await CallPair.connect("failure-invalid-id")
        for type in SessionType.allCases {
            await expectCreationFailure(.invalidId) { () throws(ConduitError) in
                _ = try await pair.caller.makeOutboundDataSession(streamID: 99, type: type)
            }
            await expectCreationFailure(.invalidId) { () throws(ConduitError) in
                _ = try await pair.caller.makeOutboundDataSession(streamID: 1000, type: type)
            }
        }
        await expectCreationFailure(.invalidId) { () throws(ConduitError) in
            _ = try await pair.callee.makeInboundDataSession(streamID: 1000)
        }
        await expectCreationFailure(.invalidId) { () throws(ConduitError) in
            _ = try await pair.callee.makeInboundDataSession(streamID: 99, expecting: .reliableMessage)
        }
        // Nothing was created, and the bounds themselves are valid.
        #expect(await pair.caller.outboundDataSession(streamID: 99) == nil)
        #expect(await pair.caller.outboundDataSession(streamID: 1000) == nil)
        let low = try await pair.caller.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        let high = try await pair.caller.makeOutboundDataSession(streamID: 999, type: .unreliableBytes)
        #expect(low.streamID == 100 && low.type == .reliableMessage && low.subgroup == nil)
        #expect(high.streamID == 999 && high.type == .unreliableBytes)
        try await pair.finish()
    }

    @Test("alreadyExist: a second outbound session on a stream, with any type")
    func outboundAlreadyExists() async throws {
        let pair = try await CallPair.connect("failure-outbound-twice")
        let first = try await pair.caller.makeOutboundDataSession(streamID: 150, type: .reliableBytes)
        for type in SessionType.allCases {
            await expectCreationFailure(.alreadyExist) { () throws(ConduitError) in
                _ = try await pair.caller.makeOutboundDataSession(streamID: 150, type: type)
            }
        }
        #expect(await pair.caller.outboundDataSession(streamID: 150) === first)
        // The same stream ID in the other direction is a different session.
        let reverse = try await pair.callee.makeOutboundDataSession(streamID: 150, type: .reliableMessage)
        #expect(await pair.callee.outboundDataSession(streamID: 150) === reverse)
        try await pair.finish()
    }

    @Test("alreadyExist: a second inbound session for an announced stream")
    func inboundAlreadyExists() async throws {
        let pair = try await CallPair.connect("failure-inbound-twice")
        let (outbound, inbound) = try await pair.open(160, .reliableMessage)
        await expectCreationFailure(.alreadyExist) { () throws(ConduitError) in
            _ = try await pair.callee.makeInboundDataSession(streamID: 160)
        }
        await expectCreationFailure(.alreadyExist) { () throws(ConduitError) in
            _ = try await pair.callee.makeInboundDataSession(streamID: 160, expecting: .reliableMessage)
        }
        // The first session is still the one registered, and still receives.
        #expect(await pair.callee.inboundDataSession(streamID: 160) === inbound)
        try await outbound.send([7, 7, 7], timestamp: 77)
        let event = try #require(try await next(inbound, "a message after the refused second inbound"))
        #expect(event.message?.bytes == [7, 7, 7])
        #expect(event.message?.timestamp == 77)
        try await pair.finish()
    }

    @Test("notIncoming: makeInbound for a stream nobody announced")
    func notIncoming() async throws {
        let pair = try await CallPair.connect("failure-not-incoming")
        await expectCreationFailure(.notIncoming) { () throws(ConduitError) in
            _ = try await pair.callee.makeInboundDataSession(streamID: 500)
        }
        await expectCreationFailure(.notIncoming) { () throws(ConduitError) in
            _ = try await pair.callee.makeInboundDataSession(streamID: 999, expecting: .reliableBytes)
        }
        // An outbound session of our own on that stream is not an incoming one.
        _ = try await pair.callee.makeOutboundDataSession(streamID: 500, type: .reliableMessage)
        await expectCreationFailure(.notIncoming) { () throws(ConduitError) in
            _ = try await pair.callee.makeInboundDataSession(streamID: 500)
        }
        #expect(await pair.callee.inboundDataSession(streamID: 500) == nil)
        try await pair.finish()
    }

    @Test("invalidType: makeInbound expecting a type other than the announced one", arguments: SessionType.allCases)
    func invalidType(announced: SessionType) async throws {
        let pair = try await CallPair.connect("failure-invalid-type-\(announced.name)")
        let outbound = try await pair.caller.makeOutboundDataSession(streamID: 170, type: announced)
        try await CallPair.awaitIncoming(170, announced, on: pair.callee)
        for wrong in SessionType.allCases where wrong != announced {
            await expectCreationFailure(.invalidType) { () throws(ConduitError) in
                _ = try await pair.callee.makeInboundDataSession(streamID: 170, expecting: wrong)
            }
        }
        #expect(await pair.callee.inboundDataSession(streamID: 170) == nil)

        // A refused attempt does not use up the stream: the right type still works.
        let inbound = try await pair.callee.makeInboundDataSession(streamID: 170, expecting: announced)
        #expect(inbound.type == announced)
        #expect(inbound.streamID == 170)
        #expect(await pair.callee.inboundDataSession(streamID: 170) === inbound)
        try await outbound.send([1], timestamp: 5)
        let event = try #require(try await next(inbound, "a delivery on the accepted stream"))
        #expect(event.message?.bytes ?? event.fragment?.bytes == [1])
        try await pair.finish()
    }

    @Test("makeInbound without an expected type takes the announced one")
    func inboundTakesAnnouncedType() async throws {
        let pair = try await CallPair.connect("failure-announced-type")
        _ = try await pair.caller.makeOutboundDataSession(streamID: 180, type: .unreliableBytes)
        try await CallPair.awaitIncoming(180, .unreliableBytes, on: pair.callee)
        let inbound = try await pair.callee.makeInboundDataSession(streamID: 180)
        #expect(inbound.type == .unreliableBytes)
        try await pair.finish()
    }

    @Test("internal: the peer does not support data sessions")
    func peerWithoutDataSessions() async throws {
        var unsupported = ConduitConfiguration.testDefaults
        unsupported.dataSessionsSupported = false
        let pair = try await CallPair.connect("failure-internal", calleeConfiguration: unsupported)
        #expect(pair.caller.isPeerDataSessionSupported == false)
        #expect(pair.callee.isPeerDataSessionSupported == true)
        for type in SessionType.allCases {
            await expectCreationFailure(.internal) { () throws(ConduitError) in
                _ = try await pair.caller.makeOutboundDataSession(streamID: 100, type: type)
            }
            // The side that does not support data sessions cannot make one either.
            await expectCreationFailure(.internal) { () throws(ConduitError) in
                _ = try await pair.callee.makeOutboundDataSession(streamID: 100, type: type)
            }
        }
        // invalidId is checked before support.
        await expectCreationFailure(.invalidId) { () throws(ConduitError) in
            _ = try await pair.caller.makeOutboundDataSession(streamID: 1000, type: .reliableMessage)
        }
        #expect(await pair.caller.outboundDataSession(streamID: 100) == nil)
        try await pair.finish()
    }

    @Test("internal: making sessions after the call ended")
    func afterHangUp() async throws {
        let pair = try await CallPair.connect("failure-after-hangup")
        _ = try await pair.caller.makeOutboundDataSession(streamID: 190, type: .reliableMessage)
        try await CallPair.awaitIncoming(190, .reliableMessage, on: pair.callee)
        let caller = pair.caller, callee = pair.callee
        let calleeEvents = EventRecorder(callee.events)
        try await within("hang up") { await caller.hangUp() }
        // The callee's own disconnected event says it saw the hang-up: no polling.
        _ = try await within("the callee to see the hang-up") {
            try await calleeEvents.first { if case .disconnected(.remoteHangUp) = $0 { true } else { false } }
        }
        #expect(await callee.isEnded)
        #expect(await caller.isEnded)
        await expectCreationFailure(.internal) { () throws(ConduitError) in
            _ = try await pair.caller.makeOutboundDataSession(streamID: 191, type: .reliableMessage)
        }
        await expectCreationFailure(.internal) { () throws(ConduitError) in
            _ = try await pair.callee.makeOutboundDataSession(streamID: 191, type: .reliableMessage)
        }
        // A stream announced before the end can still be made, to read what it held (nothing
        // here): it closes at once with sessionEnd. Once drained, or never announced: internal.
        let drained = try await pair.callee.makeInboundDataSession(streamID: 190)
        let last = try await next(drained, "stream 190's close")
        #expect(last?.closeReason == .sessionEnd)
        await expectCreationFailure(.internal) { () throws(ConduitError) in
            _ = try await pair.callee.makeInboundDataSession(streamID: 190)
        }
        await expectCreationFailure(.internal) { () throws(ConduitError) in
            _ = try await pair.callee.makeInboundDataSession(streamID: 192)
        }
        try await pair.finish()
    }

    @Test("getters return the session made for a stream, and nil for others")
    func getters() async throws {
        let pair = try await CallPair.connect("failure-getters")
        #expect(await pair.caller.outboundDataSession(streamID: 120) == nil)
        #expect(await pair.callee.inboundDataSession(streamID: 120) == nil)

        let (outbound, inbound) = try await pair.open(120, .reliableMessage)
        let (bytesOut, bytesIn) = try await pair.open(121, .reliableBytes)
        #expect(await pair.caller.outboundDataSession(streamID: 120) === outbound)
        #expect(await pair.caller.outboundDataSession(streamID: 121) === bytesOut)
        #expect(await pair.callee.inboundDataSession(streamID: 120) === inbound)
        #expect(await pair.callee.inboundDataSession(streamID: 121) === bytesIn)
        #expect(inbound.streamID == 120 && inbound.type == .reliableMessage && inbound.subgroup == nil)

        // Directions do not mix, nor do other streams.
        #expect(await pair.caller.inboundDataSession(streamID: 120) == nil)
        #expect(await pair.callee.outboundDataSession(streamID: 120) == nil)
        #expect(await pair.caller.outboundDataSession(streamID: 122) == nil)
        #expect(await pair.callee.inboundDataSession(streamID: 122) == nil)

        // A closed outbound session is still returned ("open or closed").
        await outbound.close()
        #expect(await outbound.closeReason == .sessionEnd)
        #expect(await pair.caller.outboundDataSession(streamID: 120) === outbound)
        #expect(try await drain(inbound, "stream 120 to close") == [.closed(.sessionEnd)])
        try await pair.finish()
    }
}

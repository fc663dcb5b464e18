@testable import Conduit
import ConduitCore
import Testing

/// The public streams' one contract: named `AsyncSequence` types; data streams deliver
/// everything in order and end; notification streams are bounded and count every drop.
@Suite struct StreamContractTests {
    @Test func anInboundSessionsNamedStreamDeliversInOrderAndEnds() async throws {
        let pair = try await CallPair.connect("stream-contract-order")
        let (outbound, inbound) = try await pair.open(100, .reliableMessage)
        let events: InboundDataSession.Events = inbound.events
        for number in 0..<500 { try await outbound.send(Array("\(number)".utf8)) }
        await outbound.close()
        let all = try await drain(events, "the session's messages and close")
        let texts = all.compactMap { event -> String? in
            guard case .message(let message) = event else { return nil }
            return String(decoding: message.bytes, as: UTF8.self)
        }
        #expect(texts == (0..<500).map { "\($0)" })
        #expect(all.last == .closed(.sessionEnd))
        // Ended: a new read returns nil at once.
        #expect(await events.next() == nil)
        try await pair.finish()
    }

    @Test func aCallsNamedEventStreamEndsWithDisconnected() async throws {
        let pair = try await CallPair.connect("stream-contract-events")
        let events: Call.Events = pair.caller.events
        #expect(events.capacity == 1_024)
        try await pair.finish()
        let all = try await drain(events, "the caller's events")
        #expect(all.first.map { if case .connected = $0 { true } else { false } } == true)
        #expect(all.last.map { if case .disconnected = $0 { true } else { false } } == true)
        #expect(pair.caller.droppedEventCount == 0)
    }

    @Test func anOutboundSessionsEventsCountDropsAndNeverDropClosed() async throws {
        let queue = EventQueue<OutboundDataSession.Event>(capacity: 2, makeDropped: { .eventsDropped(count: $0) }) { event in
            if case .closed = event { true } else { false }
        }
        let events = OutboundDataSession.Events(queue)
        for enabled in [true, false, true, false, true] { queue.yield(.tooLongQueuedData(enabled: enabled)) }
        queue.yield(.closed(.sessionEnd))
        queue.finish()
        let all = try await drain(events, "the session's events")
        #expect(all == [.tooLongQueuedData(enabled: true), .tooLongQueuedData(enabled: false), .eventsDropped(count: 3), .closed(.sessionEnd)])
        #expect(events.droppedCount == 3)
    }

    @Test func aStreamWithoutAnOverflowEventStillCountsEveryDrop() async throws {
        let queue = EventQueue<Int>(capacity: 3, makeDropped: nil)
        let accepted = (0..<10).map { queue.yield($0) }
        #expect(accepted == [true, true, true] + Array(repeating: false, count: 7))
        queue.finish()
        let stream = NotificationStream(queue)
        #expect(try await drain(stream, "the queued numbers") == [0, 1, 2])
        #expect(stream.droppedCount == 7)
    }
}

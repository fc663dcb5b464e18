import ConduitCore
import Testing

@testable import Conduit

/// `Call.events` and `Conference.events` never drop silently: overflow is counted and reported.
@Suite("Event overflow")
struct EventQueueTests {
    enum Event: Sendable, Hashable {
        case number(Int)
        case dropped(Int)
        case end
    }

    static func read(_ stream: NotificationStream<Event>, _ count: Int) async -> [Event] {
        var events: [Event] = []
        var iterator = stream.makeAsyncIterator()
        while events.count < count, let event = await iterator.next() { events.append(event) }
        return events
    }

    @Test("past the capacity, events are counted and reported once, where they were lost, with the right count")
    func overflowIsReported() async {
        let queue = EventQueue<Event>(capacity: 4, makeDropped: { .dropped($0) })
        for number in 1...10 { queue.yield(.number(number)) }
        #expect(queue.droppedCount == 6)
        // The reader catches up: the four kept, then one report of the six lost.
        let stream = queue.stream
        #expect(await Self.read(stream, 5) == [.number(1), .number(2), .number(3), .number(4), .dropped(6)])
        // Later events follow in order; a second overflow is reported on its own, the total grows.
        for number in 11...16 { queue.yield(.number(number)) }
        #expect(queue.droppedCount == 8)
        queue.yield(.end, essential: true)
        queue.finish()
        var rest: [Event] = []
        for await event in stream { rest.append(event) }
        #expect(rest == [.number(11), .number(12), .number(13), .number(14), .dropped(2), .end])
    }

    @Test("nothing is reported while the reader keeps up, and a waiting reader gets events at once")
    func noOverflowNoReport() async {
        let queue = EventQueue<Event>(capacity: 2, makeDropped: { .dropped($0) })
        let stream = queue.stream
        let reader = Task { await Self.read(stream, 100) }
        for number in 1...100 {
            queue.yield(.number(number))
            // Let the reader take it before the next (capacity 2 would overflow otherwise).
            while queue.pending > 0 { await Task.yield() }
        }
        let events = await reader.value
        #expect(events == (1...100).map(Event.number))
        #expect(queue.droppedCount == 0)
    }

    @Test("essential events (disconnected) are never dropped, even when full")
    func essentialEventsKept() async {
        let queue = EventQueue<Event>(capacity: 1, makeDropped: { .dropped($0) })
        queue.yield(.number(1))
        queue.yield(.number(2))
        queue.yield(.end, essential: true)
        queue.finish()
        var events: [Event] = []
        for await event in queue.stream { events.append(event) }
        #expect(events == [.number(1), .dropped(1), .end])
        #expect(queue.droppedCount == 1)
    }

    @Test("a call's events report overflow as Call.Event.eventsDropped, and the call counts it")
    func callEventsCase() async throws {
        let queue = EventQueue<Call.Event>(capacity: 1_024, makeDropped: { .eventsDropped(count: $0) })
        for number in 0..<1_030 {
            queue.yield(.dataSessionIncoming(streamID: StreamID(100 + number % 900), subgroup: nil, type: .reliableMessage))
        }
        #expect(queue.droppedCount == 6)
        var iterator = queue.stream.makeAsyncIterator()
        for _ in 0..<1_024 { _ = await iterator.next() }
        #expect(await iterator.next() == .eventsDropped(count: 6))
    }
}

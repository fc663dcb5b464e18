/// A stream of notifications (events) about a call, a conference, a session or invitations:
/// bounded, and never lossy in silence.
///
/// Notifications are small and rare next to data, so Conduit never slows the link down for an
/// app that does not read them. Instead the stream holds at most ``capacity`` unread
/// notifications; one that finds it full is **dropped and counted** (``droppedCount``), and where
/// the element type has an overflow event (`eventsDropped(count:)` on ``Call/Event``,
/// ``Conference/Event`` and ``OutboundDataSession/Event``) the reader gets one such event at the
/// point of the loss, in order. The last event of a stream (`.disconnected`, `.closed`) is never
/// dropped. See <doc:StreamsAndBackpressure>.
///
/// Iterate it with `for await`. Each notification goes to one reader: iterate it from one task.
/// The stream ends (the iterator returns nil) after its last event, or for a reader whose task
/// is cancelled.
public struct NotificationStream<Element: Sendable>: AsyncSequence, Sendable {
    /// Reading never throws.
    public typealias Failure = Never

    let queue: EventQueue<Element>

    init(_ queue: EventQueue<Element>) { self.queue = queue }

    /// The most notifications held unread before later ones are dropped (and counted).
    public var capacity: Int { queue.capacity }

    /// Notifications dropped because the stream was not read while ``capacity`` others waited, in total.
    public var droppedCount: Int { queue.droppedCount }

    /// Reads a ``NotificationStream``.
    public struct AsyncIterator: AsyncIteratorProtocol, Sendable {
        let queue: EventQueue<Element>

        /// The next notification, or nil once the stream ended.
        public mutating func next() async -> Element? { await queue.next() }

        /// The next notification, or nil once the stream ended.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? { await queue.next() }
    }

    /// An iterator over the notifications not yet read.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(queue: queue) }

    /// The next notification, or nil once the stream ended: the same as an iterator's `next()`,
    /// for a loop that reads without `for await`.
    public func next() async -> Element? { await queue.next() }
}

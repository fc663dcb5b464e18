import ConduitCore

/// A stream of received data (an inbound session's messages, a data track's messages, labeled
/// channel messages): **backpressured down to the transport**, never dropped.
///
/// Received data waits here, up to ``capacity`` (bytes, `inboundBufferBytes` of the
/// configuration). While the stream is full, the call or conference it belongs to stops reading
/// its link: the transport's own flow control (the reliability engine's window, the relay's
/// per-receiver queue) then holds the sender back, and the sender's queue fills (it sees
/// `tooLongQueuedData`, or `send` suspends). Nothing is discarded on the way; an app that stops
/// reading stalls its link instead. See <doc:StreamsAndBackpressure>.
///
/// Because one link carries every stream of a call or conference, a stream left unread holds
/// up the others on that link too: read every stream you subscribe to, or end it
/// (unsubscribe, close, `unsupportInboundDataSession`).
///
/// One consumer at a time: iterate it from one task. It ends (the iterator returns nil) once
/// the session, track or conference ends and everything received was read, or for a reader
/// whose task is cancelled.
public struct DataStream<Element: Sendable>: AsyncSequence, Sendable {
    /// Reading never throws.
    public typealias Failure = Never

    let channel: AsyncBoundedChannel<Element>

    init(_ channel: AsyncBoundedChannel<Element>) { self.channel = channel }

    /// The most data buffered (in bytes) before the link stops being read.
    public var capacity: Int { channel.capacity }

    /// The data buffered now, unread (in bytes).
    public var bufferedBytes: Int { channel.bufferedWeight }

    /// Returns once the stream holds its capacity unread and holds back the data behind it (or
    /// once it ended): the moment a test of receive backpressure checks.
    package func waitUntilFull() async { await channel.waitUntilProducerWaits() }

    /// Reads a ``DataStream``.
    public struct AsyncIterator: AsyncIteratorProtocol, Sendable {
        let channel: AsyncBoundedChannel<Element>

        /// The next element, or nil once the stream ended and was read to the end.
        public mutating func next() async -> Element? { await channel.next() }

        /// The next element, or nil once the stream ended and was read to the end.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? { await channel.next() }
    }

    /// An iterator over the elements not yet read.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(channel: channel) }

    /// The next element, or nil once the stream ended and was read to the end: the same as an
    /// iterator's `next()`, for a loop that reads without `for await`.
    public func next() async -> Element? { await channel.next() }
}

extension AsyncBoundedChannel {
    /// A channel for received data, weighed in bytes (an element weighs at least 1).
    static func received(capacity: Int, bytes: @escaping @Sendable (Element) -> Int) -> AsyncBoundedChannel {
        AsyncBoundedChannel(capacity: capacity) { Swift.max(1, bytes($0)) }
    }
}

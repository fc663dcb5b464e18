public import ConduitCore

/// The sending half of a data session (LINE Planet `PlanetKitOutboundDataSession`).
///
/// When `send` suspends, returns, or throws:
/// - It **throws** `ConduitError` at once for a send larger than the type allows
///   (`messageTooLarge`: 128 KiB for message types, 4 MiB for bytes types) and for a closed
///   session (`sessionClosed`, with `ConduitError.closeReason` `unsupported`, `sessionEnd` or `internal`).
/// - It **suspends** while the session's send queue is at its cap (backpressure), and resumes
///   when the queue has room or the session closes (then it throws).
/// - It **returns** once the message is queued: the rate cap paces it onto the wire later.
///
/// ``trySend(_:timestamp:)`` never waits for room: it returns false when the queue is full.
/// Watch ``events`` for `tooLongQueuedData(enabled: true)` (slow down) and `(enabled: false)`.
public final class OutboundDataSession: Sendable {
    /// What an outbound session reports to its sender.
    public enum Event: Sendable, Hashable {
        /// The queueing delay crossed the on threshold (true) or fell back to the off one (false).
        case tooLongQueuedData(enabled: Bool)
        /// The session closed; it can send no more. Always the last event (never dropped).
        case closed(DataSessionCloseReason)
        /// `count` events were lost here because ``OutboundDataSession/events`` was not read
        /// while 256 others waited; delivered in their place once the reader caught up.
        /// ``OutboundDataSession/droppedEventCount`` has the total.
        case eventsDropped(count: Int)
    }

    /// What ``events`` yields: a ``NotificationStream``, bounded, with every drop counted.
    public typealias Events = NotificationStream<Event>

    /// The stream ID, 100…999, that the receiving app expects.
    public let streamID: StreamID
    /// The subgroup the session sends in, or nil for a 1:1 call or the main room.
    public let subgroup: SubgroupName?
    /// The session type: message or bytes, reliable or not.
    public let type: SessionType
    /// Bounded (256 unread) but never silently: events that find it full are counted and
    /// reported by one ``Event/eventsDropped(count:)`` where they were lost; `.closed` is always last.
    public let events: Events
    /// The engine's side of ``events``.
    let eventSink: EventQueue<Event>

    /// Events lost because ``events`` was not read (see ``Event/eventsDropped(count:)``), in total.
    public var droppedEventCount: Int { events.droppedCount }
    private let engineRef: any OutboundSessionEngine

    init(key: SessionKey, type: SessionType, engine: any OutboundSessionEngine) {
        self.streamID = key.streamID
        self.subgroup = key.subgroup
        self.type = type
        self.engineRef = engine
        eventSink = EventQueue(capacity: 256, makeDropped: { .eventsDropped(count: $0) }) { event in
            if case .closed = event { true } else { false }
        }
        events = eventSink.stream
    }

    var key: SessionKey { SessionKey(streamID: streamID, subgroup: subgroup) }

    /// Queues `bytes` with a user-defined `timestamp` that the receiver sees.
    public func send(_ bytes: [UInt8], timestamp: UInt64 = 0) async throws(ConduitError) {
        _ = try await engineRef.send(key, bytes: bytes, timestamp: timestamp, wait: true)
    }

    /// Queues `bytes` if the queue has room; false if it is full. Throws like ``send(_:timestamp:)``.
    @discardableResult
    public func trySend(_ bytes: [UInt8], timestamp: UInt64 = 0) async throws(ConduitError) -> Bool {
        try await engineRef.send(key, bytes: bytes, timestamp: timestamp, wait: false)
    }

    /// Closes the session gracefully, like `RTCDataChannel.close()`: sends are refused from now on
    /// (`sessionClosed`, reason `sessionEnd`), messages already accepted are still delivered, and
    /// then the receiver's inbound session closes with `sessionEnd`. Returns once the queue has
    /// drained to the link (``events`` ends with `.closed(.sessionEnd)` then), so a hang-up or a
    /// leave right after it cannot cut the last messages. (Hanging up or leaving without it
    /// discards whatever is still queued.)
    public func close() async { await engineRef.closeOutbound(key) }

    /// Closes the session gracefully and returns once every message it accepted has been
    /// delivered: for a reliable session type, acknowledged by the peer (the relay, in a room).
    /// Throws `notAcknowledged`, saying how many messages were not, when `timeout` passes on the
    /// runtime's clock first or the call ends; nothing accepted is given up on silently.
    public func close(timeout: Duration) async throws(ConduitError) {
        try await engineRef.flushOutboundOrThrow(key, timeout: timeout, closing: true)
    }

    /// Waits, with the session left open, until every message accepted before the call has been
    /// written and, for a reliable session type, acknowledged by the peer (the relay, in a room).
    /// Throws `notAcknowledged`, saying how many messages were not, when `timeout` passes first
    /// or the call ends. Messages sent meanwhile do not hold it up.
    public func flush(timeout: Duration) async throws(ConduitError) {
        try await engineRef.flushOutboundOrThrow(key, timeout: timeout, closing: false)
    }

    /// LINE Planet `changeDestination` (group calls only): later sends go to `peer` alone, or to
    /// everyone in the session's scope when nil (the room, or the subgroup for a subgroup
    /// session). Returns false if the peer is not in the room, the session is closed, or this is a
    /// 1:1 call (where the destination is always the one peer).
    @discardableResult
    public func changeDestination(_ peer: PeerID?) async -> Bool { await engineRef.changeDestination(key, to: peer) }

    /// Why the session closed, or nil while open.
    public var closeReason: DataSessionCloseReason? { get async { await engineRef.outboundCloseReason(key) } }

    /// The session's counters and queue now: messages queued, sent and discarded, bytes sent,
    /// bytes queued and the queueing delay. Still answers after the session or call ended.
    public var statistics: OutboundDataSessionStatistics { get async { await engineRef.outboundStatistics(key) } }
}

/// What an outbound session needs from the engine that runs it (a call's or a conference's).
protocol OutboundSessionEngine: Actor {
    func send(_ key: SessionKey, bytes: [UInt8], timestamp: UInt64, wait: Bool) async throws(ConduitError) -> Bool
    func closeOutbound(_ key: SessionKey) async
    func flushOutboundOrThrow(_ key: SessionKey, timeout: Duration, closing: Bool) async throws(ConduitError)
    func outboundCloseReason(_ key: SessionKey) -> DataSessionCloseReason?
    func changeDestination(_ key: SessionKey, to peer: PeerID?) -> Bool
    func outboundStatistics(_ key: SessionKey) -> OutboundDataSessionStatistics
}

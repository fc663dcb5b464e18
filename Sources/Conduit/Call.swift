public import ConduitCore

/// A 1:1 call: one peer on each end of a transport link, carrying data sessions.
///
/// Obtained from ``ConduitRuntime/connect(to:as:)-(String?,_)`` or ``CallListener/accept()``, both of which
/// return once the two sides have greeted each other. Data sessions live until the call ends;
/// ``hangUp()`` ends it and closes every session with `DataSessionCloseReason.sessionEnd`.
public final class Call: Sendable {
    /// What happens to the call as a whole (LINE Planet `PlanetKitCallDelegate`).
    public enum Event: Sendable, Hashable {
        /// The call is set up; data sessions may be made.
        case connected(peer: PeerID, isDataSessionSupported: Bool)
        /// The peer made an outbound session. Answer with ``Call/makeInboundDataSession(streamID:expecting:)``
        /// or ``Call/unsupportInboundDataSession(streamID:)``.
        case dataSessionIncoming(streamID: StreamID, subgroup: SubgroupName?, type: SessionType)
        /// The call ended: hung up here or there, refused, timed out, or the link failed. Always the last event.
        case disconnected(DisconnectReason)
        /// `count` events were lost here because ``Call/events`` was not read while 1,024 others
        /// waited; delivered in their place once the reader caught up. ``Call/droppedEventCount``
        /// has the total. (`.disconnected` is never dropped.)
        case eventsDropped(count: Int)
    }

    let engine: CallEngine
    /// This side's peer ID, as given to ``ConduitRuntime/connect(to:as:)-(String?,_)`` or ``ConduitRuntime/listen(on:as:)``.
    public let localPeer: PeerID
    /// The peer at the other end, as it introduced itself.
    public let remotePeer: PeerID
    /// Whether the peer supports data sessions (`isDataSessionSupported` of the connected event).
    public let isPeerDataSessionSupported: Bool
    /// What ``events`` yields: a ``NotificationStream``, bounded, with every drop counted.
    public typealias Events = NotificationStream<Event>

    /// Call events, starting with `.connected`. Bounded (1,024 unread) but never silently: events
    /// that find it full are counted and reported by one ``Event/eventsDropped(count:)`` where
    /// they were lost.
    public let events: Events

    /// Events lost because ``events`` was not read (see ``Event/eventsDropped(count:)``), in total.
    public var droppedEventCount: Int { events.droppedCount }

    init(engine: CallEngine, localPeer: PeerID, remotePeer: PeerID, peerSupportsDataSessions: Bool, events: EventQueue<Event>) {
        self.engine = engine
        self.localPeer = localPeer
        self.remotePeer = remotePeer
        self.isPeerDataSessionSupported = peerSupportsDataSessions
        self.events = events.stream
    }

    // MARK: Sender side

    /// Creates an outbound data session (LINE Planet `makeOutboundDataSession`). Fails with a
    /// `ConduitError` whose `ConduitError.failReason` is `invalidId`, `alreadyExist` or `internal`.
    /// `options` sets its priority (its share of the link while other sessions have data queued)
    /// and its own rate cap.
    public func makeOutboundDataSession(streamID: StreamID, type: SessionType, options: OutboundSessionOptions = .init()) async throws(ConduitError) -> OutboundDataSession {
        try await engine.makeOutbound(SessionKey(streamID: streamID), type: type, options: options)
    }

    /// The outbound session made earlier for `streamID`, open or closed (`getOutboundDataSession`).
    public func outboundDataSession(streamID: StreamID) async -> OutboundDataSession? {
        await engine.outboundSession(SessionKey(streamID: streamID))
    }

    // MARK: Receiver side

    /// Creates the inbound session for a stream announced by `dataSessionIncoming`
    /// (`makeInboundDataSession`). Fails with `notIncoming` if no such event came, `alreadyExist`,
    /// `invalidId`, or `invalidType` if `expecting` differs from the announced type. After the
    /// call ended, a stream announced before the end can still be made once: it delivers what it
    /// held, then closes with the end's reason; any other fails with `internal`.
    public func makeInboundDataSession(streamID: StreamID, expecting type: SessionType? = nil) async throws(ConduitError) -> InboundDataSession {
        try await engine.makeInbound(SessionKey(streamID: streamID), expecting: type)
    }

    /// The inbound session made earlier for `streamID` (`getInboundDataSession`).
    public func inboundDataSession(streamID: StreamID) async -> InboundDataSession? {
        await engine.inboundSession(SessionKey(streamID: streamID))
    }

    /// Tells the peer this app does not handle `streamID`: the peer's outbound session closes with
    /// `DataSessionCloseReason.unsupported` and can send no more (`unsupportInboundDataSession`).
    public func unsupportInboundDataSession(streamID: StreamID) async {
        await engine.unsupportInbound(SessionKey(streamID: streamID))
    }

    // MARK: Lifetime

    /// Ends the call. Every session closes with `sessionEnd`; the peer sees `remoteHangUp`.
    /// Returns once the goodbye is written and the link closed.
    public func hangUp() async { await engine.hangUp() }

    /// Ends the call once what it sent has arrived: closes every outbound session gracefully,
    /// waits until the peer acknowledged every reliable message, then hangs up as ``hangUp()``.
    /// If `timeout` passes on the runtime's clock first (or the call ends), it hangs up anyway
    /// and throws `notAcknowledged`, saying how many messages were not acknowledged.
    public func hangUp(timeout: Duration) async throws(ConduitError) { try await engine.hangUp(timeout: timeout) }

    /// True once the call ended, by either side or because the link failed. Reading it suspends briefly (the call's actor).
    public var isEnded: Bool { get async { await engine.isEnded } }

    /// Counters of what was sent, delivered, refused and dropped.
    public var statistics: CallStatistics { get async { await engine.statistics } }

    /// What the transport measures of the path now: smoothed, minimum and variation of the RTT,
    /// congestion window, bytes in flight, pacing rate, packets sent, lost, retransmitted and
    /// duplicated, the MTU. Nil over an in-process link; partly nil where the transport does not
    /// measure a figure (see `LinkStatistics`).
    public var linkStatistics: LinkStatistics? { get async { await engine.linkStatistics() } }
}

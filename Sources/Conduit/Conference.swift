public import ConduitCore
import ConduitARQ
public import ConduitRooms
import ConduitDriver
import ConduitReliableTransport

/// A group call through a relay (LINE Planet `PlanetKitConference`): join a room, learn who is
/// there, exchange data sessions with everyone, one peer, or a subgroup.
///
/// ```swift
/// let room = try await runtime.join(relay: "loopback://relay", room: "standup", as: "alice", token: token)
/// let chat = try await room.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
/// try await chat.send(Array("hello".utf8))           // everyone in the room
/// await chat.changeDestination("bob")                 // from now on, bob only
/// for await event in room.events { ... }              // .peersChanged, .dataSessionIncoming, ...
/// ```
///
/// Inbound sessions are per stream (and subgroup), shared by every sender; each message says
/// who sent it (``InboundDataSession/Message/sender``), as stamped by the relay.
public final class Conference: Sendable {
    /// What happens in the room as a whole (LINE Planet `PlanetKitConferenceDelegate`).
    public enum Event: Sendable, Hashable {
        /// Joined; the peers already in the room.
        case connected(peers: [PeerID])
        /// Peers joined or left (coalesced by the relay; `version` numbers the updates).
        case peersChanged(joined: [PeerID], left: [PeerID], version: UInt32)
        /// A peer made an outbound session, or its data reached this side (late joiners).
        case dataSessionIncoming(streamID: StreamID, subgroup: SubgroupName?, type: SessionType, from: PeerID)
        /// One sender's session ended (closed, or its creator left the subgroup).
        case dataSessionEnded(streamID: StreamID, subgroup: SubgroupName?, from: PeerID, reason: DataSessionCloseReason)
        /// The relay confirmed a subscription to a subgroup; `dataSession` is the subgroup's attribute (whether it carries data sessions).
        case subscribed(SubgroupName, dataSession: Bool)
        /// The relay refused a subscription, for example because the token does not allow the subgroup.
        case subscribeRefused(SubgroupName, RelayRefusal)
        /// A peer-to-peer message the relay carried without interpreting it (invitations).
        case extensionReceived(id: UInt8, from: PeerID, body: [UInt8])
        /// Another peer published a data track (or had published it when this side joined).
        case dataTrackPublished(ChannelLabel, by: PeerID, reliability: Reliability)
        /// A peer stopped publishing a data track; its subscriptions end.
        case dataTrackUnpublished(ChannelLabel, by: PeerID)
        /// The relay confirmed the labeled channels declared when joining: their IDs, options and
        /// (`ChannelInfo.headerLength`) the length of the sender header receivers get.
        case channelsReady([ChannelInfo])
        /// This side left, was refused, was let go as a slow receiver, or the link closed.
        case disconnected(RelayDisconnectReason, String)
        /// `count` events were lost here because ``Conference/events`` was not read while 1,024
        /// others waited; delivered in their place once the reader caught up.
        /// ``Conference/droppedEventCount`` has the total. (`.disconnected` is never dropped.)
        case eventsDropped(count: Int)
        /// `count` invitation events were lost because ``Conference/invitationEvents`` was not
        /// read while 8,192 others waited (they are also counted in
        /// ``Conference/droppedInvitationMessages``).
        case invitationEventsDropped(count: Int)
    }

    /// What ``events`` yields: a ``NotificationStream``, bounded, with every drop counted.
    public typealias Events = NotificationStream<Event>

    let engine: ConferenceEngine
    /// The room this conference joined.
    public let room: RoomID
    /// This side's peer ID in the room.
    public let localPeer: PeerID
    /// Bounded (1,024 unread) but never silently: events that find it full are counted and
    /// reported by one ``Event/eventsDropped(count:)`` where they were lost.
    public let events: Events

    /// Events lost because ``events`` was not read (see ``Event/eventsDropped(count:)``), in total.
    public var droppedEventCount: Int { events.droppedCount }

    init(engine: ConferenceEngine, room: RoomID, localPeer: PeerID) {
        self.engine = engine
        self.room = room
        self.localPeer = localPeer
        self.events = engine.eventSink.stream
    }

    /// The other peers in the room now.
    public var peers: [PeerID] { get async { await engine.peers } }

    /// `makeOutboundDataSession` of the room (subgroup nil) or of a subgroup this side subscribed
    /// to with `dataSession: true`. Sends go to everyone in scope until ``OutboundDataSession/changeDestination(_:)``.
    /// `options` sets its priority and its own rate cap, as for a call's. A stream keeps one type
    /// in a room: a closed session may be made again with its type; another type than this
    /// side's earlier session on the stream, or than other senders announced on it, fails with
    /// `invalidType` (receivers share one inbound session per stream, of one type).
    public func makeOutboundDataSession(
        streamID: StreamID, type: SessionType, subgroup: SubgroupName? = nil, options: OutboundSessionOptions = .init()
    ) async throws(ConduitError) -> OutboundDataSession {
        try await engine.makeOutbound(SessionKey(streamID: streamID, subgroup: subgroup), type: type, options: options)
    }

    /// The outbound session made earlier for `streamID` in `subgroup` (nil: the main room), open or closed.
    public func outboundDataSession(streamID: StreamID, subgroup: SubgroupName? = nil) async -> OutboundDataSession? {
        await engine.outboundSession(SessionKey(streamID: streamID, subgroup: subgroup))
    }

    /// After `dataSessionIncoming` for this stream and subgroup. After the conference ended, a
    /// stream announced before the end can still be made once, to read what it held.
    public func makeInboundDataSession(streamID: StreamID, subgroup: SubgroupName? = nil, expecting type: SessionType? = nil) async throws(ConduitError) -> InboundDataSession {
        try await engine.makeInbound(SessionKey(streamID: streamID, subgroup: subgroup), expecting: type)
    }

    /// The inbound session made earlier for `streamID` in `subgroup` (nil: the main room).
    public func inboundDataSession(streamID: StreamID, subgroup: SubgroupName? = nil) async -> InboundDataSession? {
        await engine.inboundSession(SessionKey(streamID: streamID, subgroup: subgroup))
    }

    /// This side stops receiving the stream; the senders are not told and keep sending to others.
    public func unsupportInboundDataSession(streamID: StreamID, subgroup: SubgroupName? = nil) async {
        await engine.unsupportInbound(SessionKey(streamID: streamID, subgroup: subgroup))
    }

    /// Subscribes to a subgroup (creating it with `dataSession` if it is new). True once the relay
    /// confirmed, false if it refused (see the `subscribeRefused` event for why).
    @discardableResult
    public func subscribe(_ subgroup: SubgroupName, dataSession: Bool = true) async -> Bool {
        await engine.subscribe(subgroup, dataSession: dataSession)
    }

    /// Leaves a subgroup: this side's sessions in it end, here and for the other members.
    public func unsubscribe(_ subgroup: SubgroupName) async { await engine.unsubscribe(subgroup) }

    /// Sends an extension message to one peer through the relay (the opening for invitations).
    @discardableResult
    public func sendExtension(_ id: UInt8, to peer: PeerID, body: [UInt8]) async -> Bool {
        await engine.sendExtension(id, to: peer, body: body)
    }

    // MARK: Data tracks (Twilio style)

    /// Publishes a named, unidirectional data track with its reliability (`ordered`, and
    /// `maxPacketLifeTime` or `maxRetransmits`: see `Reliability.init(ordered:maxRetransmits:maxPacketLifeTime:)`).
    /// The lifetime is end to end: each message's remaining lifetime travels with it and the
    /// relay subtracts the time it held it. Returns nil if the relay refused (no publish right,
    /// or the name is taken by this peer).
    public func publishDataTrack(_ name: ChannelLabel, reliability: Reliability = .reliableOrdered) async -> LocalDataTrack? {
        guard await engine.publishTrack(name, reliability: reliability) else { return nil }
        return LocalDataTrack(name: name, reliability: reliability, engine: engine)
    }

    /// Subscribes to `publisher`'s track `name` (announced by `dataTrackPublished`): messages sent
    /// from now on arrive on the returned track. Nil if no such track is announced.
    public func subscribeDataTrack(_ name: ChannelLabel, of publisher: PeerID) async -> RemoteDataTrack? {
        await engine.subscribeTrack(name, of: publisher)
    }

    /// Stops receiving `publisher`'s track `name`: the ``RemoteDataTrack``'s messages end. Nothing happens if not subscribed.
    public func unsubscribeDataTrack(_ name: ChannelLabel, of publisher: PeerID) async {
        await engine.unsubscribeTrack(name, of: publisher)
    }

    // MARK: Labeled channels (Sora style)

    /// A message on a labeled channel: `data` is the sender header (``headerLength`` bytes: the
    /// sender's member number, the connection ID the relay stamped) followed by the message, as
    /// Sora's `onDataChannelMessage` hands it over.
    public struct ChannelMessage: Sendable, Hashable {
        /// The channel the message came on.
        public var label: ChannelLabel
        /// The member that sent it, as the relay stamped it.
        public var sender: PeerID
        /// The sender header (``headerLength`` bytes) followed by the message, as Sora hands it over.
        public var data: [UInt8]
        /// The length of the sender header at the start of ``data``: 2 for a channel declared with `senderHeader`, else 0.
        public var headerLength: Int
        /// The sender header: the sender's member number, big-endian (empty without `senderHeader`).
        public var header: ArraySlice<UInt8> { data.prefix(headerLength) }
        /// The message itself, after the header.
        public var message: ArraySlice<UInt8> { data.dropFirst(headerLength) }
    }

    /// What ``channelMessages`` yields: a ``DataStream``, backpressured down to the transport.
    public typealias ChannelMessages = DataStream<ChannelMessage>

    /// Messages on every labeled channel this side receives on, in arrival order. Backpressured:
    /// up to `inboundBufferBytes` wait unread, then the link to the relay stops being read (the
    /// relay queues for this side, up to its own limit); never dropped. One consumer at a time;
    /// every call returns the same stream.
    public var channelMessages: ChannelMessages { DataStream(engine.channelMessages) }

    /// The channels the relay confirmed (empty until `.channelsReady`).
    public var channels: [ChannelLabel: ChannelInfo] { get async { await engine.channels } }

    /// Sends on a labeled channel declared with `sendrecv` or `sendonly` (compressed with zlib
    /// if declared with `compress`). The queue that data tracks and labeled channels share is
    /// bounded (`maxQueuedBytesPerSession`): when it is full, returns false at once, or with
    /// `waitForRoom`, waits until it has room (backpressure, as a session's `send`) and returns
    /// true. Throws if the channel is not declared for sending, the message is too large or the
    /// conference has ended.
    @discardableResult
    public func sendChannelMessage(_ label: ChannelLabel, _ bytes: [UInt8], waitForRoom: Bool = false) async throws(ConduitError) -> Bool {
        try await engine.sendChannel(label, bytes: bytes, waitForRoom: waitForRoom)
    }

    /// Leaves the room (`leaveConference`): sessions close with `sessionEnd`, events end with
    /// `.disconnected(.left, ...)`, and the peers hear that this side left.
    public func leave() async { await engine.leave() }

    /// Leaves the room once what this side sent has reached the relay: closes every outbound
    /// session gracefully, waits until the relay acknowledged every reliable message (and every
    /// reliable track and channel frame), then leaves as ``leave()``. If `timeout` passes on the
    /// runtime's clock first (or the room ends), it leaves anyway and throws `notAcknowledged`,
    /// saying how many messages were not acknowledged.
    public func leave(timeout: Duration) async throws(ConduitError) { try await engine.leave(timeout: timeout) }

    /// True once this side left the room or was disconnected. Reading it suspends briefly (the room's actor).
    public var isEnded: Bool { get async { await engine.isEnded } }
    /// Counters of what this side received, delivered, sent and dropped in the room.
    public var statistics: ConferenceStatistics { get async { await engine.statistics } }
    /// What the transport measures of the path to the relay now (see `Call.linkStatistics`).
    public var linkStatistics: LinkStatistics? { get async { await engine.linkStatistics() } }
}

extension ConduitRuntime {
    /// Joins `room` on the relay at `relay` as `peer`, with a token the app's server minted.
    /// `channels` are Sora-style labeled channels to declare (see `.channelsReady`).
    /// Returns once the relay accepted the join; throws `connectionFailed` with the refusal
    /// (`tokenExpired`, `wrongRoom`, ...) if it did not, or `timedOut`. A token too long for the
    /// join (over `RoomControlFrame.maxTokenBytes`, or with room and peer more than one datagram to
    /// the relay can carry) is `invalidConfiguration` saying so, before anything is sent.
    public func join(relay url: String, room: RoomID, as peer: PeerID, token: String, channels: [ChannelDeclaration] = []) async throws(ConduitError) -> Conference {
        try configuration.validate()
        if !Zlib.isAvailable, let compressed = channels.first(where: \.compress) {
            throw ConduitError(
                .invalidConfiguration,
                "channel \(compressed.label) is declared with compress, but this build of Conduit has no zlib: enable the package trait Zlib"
            )
        }
        let tokenBytes = token.utf8.count
        guard tokenBytes <= RoomControlFrame.maxTokenBytes else {
            throw ConduitError(.invalidConfiguration, "the token has \(tokenBytes) bytes; a join carries at most \(RoomControlFrame.maxTokenBytes)")
        }
        let (transport, resolved) = try registry.resolve(url)
        let reliability = try ARQEngine.Configuration(url: resolved)
        // One limit, as for calls: the URL's connect-timeout-ms, else the configuration's.
        let timeout = try resolved.connectTimeout(default: configuration.connectTimeout)
        // One limit on the runtime's clock (a test's VirtualClock too): what the connect took
        // of it, the greeting does not get.
        let limitClock: any ConduitClock = clock ?? SystemMonotonicClock()
        let deadline = limitClock.now() + timeout
        let raw = try await withTimeout(timeout + ConduitRuntime.connectBackstop, what: "connecting to the relay at \(resolved)") { () throws(ConduitError) in
            try await transport.connect(to: resolved.withoutReliableTransportOptions, timeout: timeout)
        }
        let link = await ReliableTransportLink.wrapIfNeeded(
            raw, configuration: reliability, logger: observability.logger, metricsFactory: observability.metricsFactory, transport: resolved.scheme,
            clock: clock
        )
        // The join goes as one datagram: say so here rather than let the link refuse it and close.
        let joinBytes = RoomControlFrame.join(room: room, peer: peer, dataSessionsSupported: true, token: Array(token.utf8)).encoded.count
        guard joinBytes <= link.capabilities.maxDatagramSize else {
            await link.close()
            throw ConduitError(
                .invalidConfiguration,
                "the token has \(tokenBytes) bytes: with room and peer the join takes \(joinBytes) bytes, more than the \(link.capabilities.maxDatagramSize) one datagram to \(resolved.scheme):// carries"
            )
        }
        let engine = ConferenceEngine(
            room: room, peer: peer, token: token, link: link, configuration: configuration, channels: channels, observability: observability, transport: resolved.scheme,
            clock: clock
        )
        // The join gets what the connect left of the one limit.
        _ = try await engine.establish(timeout: max(deadline - limitClock.now(), .zero), limit: timeout)
        return Conference(engine: engine, room: room, localPeer: peer)
    }
}

/// A data track this side published (Twilio `LocalDataTrack`).
public final class LocalDataTrack: Sendable {
    /// The track's name, unique per publisher.
    public let name: ChannelLabel
    /// The track's reliability: ordered or not, and at most one of `maxRetransmits` or `maxPacketLifeTime`.
    public let reliability: Reliability
    let engine: ConferenceEngine

    init(name: ChannelLabel, reliability: Reliability, engine: ConferenceEngine) {
        self.name = name
        self.reliability = reliability
        self.engine = engine
    }

    /// Sends one message (up to 64 KiB; Twilio recommends at most 16 KiB) to the track's current
    /// subscribers. When the send queue (shared with labeled channels) is full: false at once, or
    /// with `waitForRoom`, waits until it has room (backpressure, as a session's `send`) and
    /// returns true. Throws if the track is unpublished, the message too large or the conference
    /// has ended.
    @discardableResult
    public func send(_ bytes: [UInt8], waitForRoom: Bool = false) async throws(ConduitError) -> Bool {
        try await engine.sendTrack(name, bytes: bytes, waitForRoom: waitForRoom)
    }

    /// Stops publishing: members are told `.dataTrackUnpublished`, subscriptions end, and later sends throw.
    public func unpublish() async { await engine.unpublishTrack(name) }
}

/// A subscription to another peer's data track (Twilio `RemoteDataTrack`): its messages, in the
/// order the track's reliability allows; the sequence ends when the track is unpublished, the
/// subscription ends or the conference does.
public final class RemoteDataTrack: Sendable {
    /// What ``messages`` yields: a ``DataStream``, backpressured down to the transport.
    public typealias Messages = DataStream<[UInt8]>

    /// The track's name.
    public let name: ChannelLabel
    /// The peer that publishes the track.
    public let publisher: PeerID
    /// The track's messages, starting with the first one sent after the subscription; ends with
    /// the track, the subscription or the conference. Backpressured: up to `inboundBufferBytes`
    /// wait unread, then the link to the relay stops being read; never dropped. One consumer.
    public let messages: Messages
    /// The engine's side of ``messages``.
    let channel: AsyncBoundedChannel<[UInt8]>

    init(name: ChannelLabel, publisher: PeerID, bufferBytes: Int) {
        self.name = name
        self.publisher = publisher
        self.channel = .received(capacity: bufferBytes) { $0.count }
        self.messages = DataStream(channel)
    }
}

public import ConduitCore
import DequeModule

/// The sans-IO client of a group room: one link to a relay, carrying the room's peer list,
/// subgroups and data sessions (LINE Planet `PlanetKitConference`).
///
/// Same contract as `CallMachine`: datagrams, app commands and `now` go in; frames
/// (``pollTransmit(now:into:maxBytes:)``), events (``pollEvent()``) and deadlines come out. Its data
/// sessions are the 1:1 call's session layer (queues, 2 Mbit/s pacer, `tooLongQueuedData`,
/// graceful close, announce and hold); what is the conference's own is the control plane (join,
/// membership, subgroups, tracks, labeled channels) and the addressing: every session frame goes
/// out in a ``RelayEnvelope`` naming its destination, which is fixed per message when it is queued
/// (so `changeDestination` never splits a message). The receive side keeps one reassembler per
/// sender, because every sender numbers its own messages.
public struct ConferenceMachine: Sendable {
    /// Where the conference is in its life.
    public enum Phase: Sendable, Hashable {
        /// The join is out; waiting for `joined` and the first snapshot.
        case joining
        /// Joined, with this side's member number.
        case connected(member: UInt16)
        /// Ended, with why.
        case ended(RelayDisconnectReason)
    }

    /// The room being joined.
    public let room: RoomID
    /// This side's peer ID.
    public let localPeer: PeerID
    /// Session limits, ping interval, sender cap and declared channels.
    public let configuration: ConferenceConfiguration
    /// Joining, connected or ended.
    public internal(set) var phase: Phase = .joining
    /// Counters of what the machine received, delivered, sent and dropped.
    public var statistics: ConferenceStatistics { sessions.statistics }

    /// Other members, by member number.
    public internal(set) var members: [UInt16: RoomMember] = [:]
    /// The last peer-list version applied.
    public internal(set) var peerListVersion: UInt32 = 0
    var joinedMember: UInt16?
    var awaitingSnapshot = true
    var inSnapshot = false

    var subgroupIDs: [SubgroupName: UInt16] = [:]
    var subgroupNames: [UInt16: SubgroupName] = [:]
    var subgroupDataSession: [SubgroupName: Bool] = [:]
    var pendingSubscriptions: Set<SubgroupName> = []

    /// The data sessions, both ways; also the queues of the conference's control frames and events.
    package var sessions: SessionLayer<ConferenceSessionHost>

    var localTracks: [ChannelLabel: LocalTrack] = [:]
    var announcedTracks: [UInt16: TrackInfo] = [:]
    var subscribedTracks: Set<UInt16> = []
    var trackReassemblers: [UInt16: Reassembler] = [:]
    var trackQueue = Deque<QueuedTrackFrame>()
    var trackQueuedBytes = 0
    var channelInfos: [ChannelLabel: ChannelInfo] = [:]
    var channelLabels: [UInt16: ChannelLabel] = [:]
    var channelReassemblers: [UInt32: Reassembler] = [:]
    var channelMessageIDs: [UInt16: UInt32] = [:]

    var lastTransmit: ConduitInstant
    var scratch = DatagramBatch(reservingBytes: 2_048, datagrams: 1)

    /// Starts a join of `room` as `localPeer` with `token`: the join frame is queued for the first ``pollTransmit(now:into:maxBytes:)``.
    public init(room: RoomID, localPeer: PeerID, token: [UInt8], configuration: ConferenceConfiguration = .init(), now: ConduitInstant) {
        self.room = room
        self.localPeer = localPeer
        self.configuration = configuration
        self.lastTransmit = now
        self.sessions = SessionLayer(configuration: configuration.session, maxSenders: configuration.maxSenders)
        sessions.controlOut.append(TaggedFrame(RoomControlFrame.join(
            room: room,
            peer: localPeer,
            dataSessionsSupported: configuration.session.dataSessionsSupported,
            token: Array(token.prefix(RoomControlFrame.maxTokenBytes))
        ).encoded))
    }

    /// Whether the relay accepted the join and the conference has not ended.
    public var isConnected: Bool {
        if case .connected = phase { return true }
        return false
    }

    /// Whether the conference ended (left, refused, disconnected); its sessions ended with it.
    public var isEnded: Bool { sessions.isEnded }

    /// Whether a reliable stream the app has not made an inbound session for holds
    /// `maxPendingInboundBytes` or more: a driver stops reading its link until the app makes or
    /// declines the session (reliable data is held, never dropped).
    public var isHoldingBeyondLimit: Bool { sessions.isHoldingBeyondLimit }

    /// This side's member number once joined.
    public var localMember: UInt16? { joinedMember }

    /// The next event for the app, or nil when there is none.
    public mutating func pollEvent() -> ConferenceEvent? { sessions.events.popFirst() }

    /// The member number of a peer in the room, if it is there.
    public func member(for peer: PeerID) -> UInt16? {
        members.first(where: { $0.value.peer == peer })?.key
    }

    // MARK: Subgroups

    /// Asks to subscribe to `name`. The first subscriber creates the subgroup with its
    /// `dataSession` attribute; later subscribers get the attribute the subgroup has.
    public mutating func subscribe(_ name: SubgroupName, dataSession: Bool) {
        guard isConnected, subgroupIDs[name] == nil, !pendingSubscriptions.contains(name) else { return }
        pendingSubscriptions.insert(name)
        sessions.controlOut.append(TaggedFrame(RoomControlFrame.subscribe(name, dataSession: dataSession).encoded))
    }

    /// Leaves a subgroup: this side's sessions in it close (`sessionEnd`), for it and, through the
    /// relay, for the other members (LINE Planet: a subgroup session lives while its creator stays
    /// subscribed); inbound sessions in it close too.
    public mutating func unsubscribe(_ name: SubgroupName) {
        guard isConnected, let id = subgroupIDs.removeValue(forKey: name) else { return }
        subgroupNames[id] = nil
        sessions.closeSessions(in: name)
        // Fragments in flight for the subgroup are dropped at their next arrival (unknown subgroup).
        sessions.controlOut.append(TaggedFrame(RoomControlFrame.unsubscribe(name).encoded))
    }

    /// Whether this side is subscribed to `name`.
    public func isSubscribed(_ name: SubgroupName) -> Bool { subgroupIDs[name] != nil }

    // MARK: Leaving

    /// Leaves the room: every session closes with `sessionEnd`, the relay is told.
    public mutating func leave() {
        guard !isEnded else { return }
        // A barrier: the leave must not overtake the data this side sent before it.
        sessions.controlOut.append(TaggedFrame(RoomControlFrame.leave.encoded, tag: .farewell))
        end(.left, "left the room")
    }

    /// The link to the relay closed.
    public mutating func linkClosed() {
        guard !isEnded else { return }
        sessions.controlOut.removeAll()
        end(.transportClosed, "the link to the relay closed")
    }

    package mutating func end(_ reason: RelayDisconnectReason, _ text: String) {
        phase = .ended(reason)
        let sessionReason: DataSessionCloseReason = switch reason {
        case .left, .refused, .relayShutdown: .sessionEnd
        default: .internal
        }
        sessions.end(closingSessionsWith: sessionReason)
        sessions.reassemblers.removeAll()
        trackReassemblers.removeAll()
        channelReassemblers.removeAll()
        trackQueue.removeAll()
        trackQueuedBytes = 0
        sessions.events.append(.disconnected(reason, text))
    }

    // MARK: Extensions

    /// Sends an extension message to one member, through the relay. Extension 1 is the relay's
    /// own (invitations, see ``InvitationExtension``): false for it.
    public mutating func sendExtension(_ id: UInt8, to peer: PeerID, body: [UInt8]) -> Bool {
        guard isConnected, id != InvitationExtension.id, body.count <= RoomControlFrame.maxExtensionBytes, let member = member(for: peer) else { return false }
        sessions.controlOut.append(TaggedFrame(RoomControlFrame.extension(id: id, member: member, body: body).encoded))
        return true
    }

    /// Sends an extension message to the relay itself (member 0), as invitation requests are.
    public mutating func sendRelayExtension(_ id: UInt8, body: [UInt8]) -> Bool {
        guard isConnected, body.count <= RoomControlFrame.maxExtensionBytes else { return false }
        sessions.controlOut.append(TaggedFrame(RoomControlFrame.extension(id: id, member: 0, body: body).encoded))
        return true
    }
}

/// The knobs of a conference client.
public struct ConferenceConfiguration: Sendable, Hashable {
    /// Session settings, as for a 1:1 call. `fragmentSize` must leave room for the relay envelope.
    public var session: CallConfiguration
    /// When nothing was sent for this long, a ping keeps the relay from timing this member out.
    public var pingInterval: Duration
    /// Senders whose reassembly state is kept at once (bounded by the room's size anyway).
    public var maxSenders: Int
    /// Sora-style labeled channels to declare on joining.
    public var channels: [ChannelDeclaration]

    /// Makes a configuration; `maxSenders` caps the senders tracked per inbound session.
    public init(session: CallConfiguration = .init(), pingInterval: Duration = .seconds(5), maxSenders: Int = 1_024, channels: [ChannelDeclaration] = []) {
        self.session = session
        self.channels = channels
        self.pingInterval = pingInterval
        self.maxSenders = maxSenders
    }
}

/// Counters for what the conference client refused or dropped.
public struct ConferenceStatistics: Sendable, Hashable {
    /// Datagrams received from the relay.
    public var datagramsReceived = 0
    /// Datagrams that did not parse; dropped.
    public var malformedDatagrams = 0
    /// Frames from a member number not (or no longer) in the peer list.
    public var droppedUnknownSender = 0
    /// Data for a subgroup this side is not subscribed to; dropped.
    public var droppedUnknownSubgroup = 0
    /// Data of a stream this side declined; dropped.
    public var droppedUnsupported = 0
    /// Data of a session already closed; dropped.
    public var droppedClosedSession = 0
    /// Data of another type than its stream was first announced with (by another sender); dropped.
    public var droppedWrongType = 0
    /// Data for an announced stream beyond `maxPendingInboundBytes` before the app accepted it; dropped.
    public var droppedPendingOverflow = 0
    /// Frames that came in the wrong phase (before joining, after ending); dropped.
    public var droppedOutOfState = 0
    /// Peer-list updates whose version skipped ahead (a snapshot was asked for).
    public var peerListGaps = 0
    /// Track frames whose lifetime ran out before they left this side.
    public var trackFramesExpired = 0
    /// Whole messages delivered to the app.
    public var messagesDelivered = 0
    /// Bytes-type fragments delivered to the app.
    public var fragmentsDelivered = 0
    /// Messages the app sent.
    public var messagesSent = 0
    /// Frames written to the relay.
    public var framesSent = 0
    /// Payload bytes that left in session data frames (frame headers and envelopes excluded).
    public var bytesSent = 0
    /// Payload bytes of the session messages and fragments handed to the app.
    public var bytesDelivered = 0
    /// All counters at zero.
    public init() {}
}

/// What the conference machine tells its driver.
public enum ConferenceEvent: Sendable, Hashable {
    /// Joined: this side's member number and who else is in the room.
    case connected(member: UInt16, peers: [RoomMember])
    /// Members joined or left, as the relay numbered the update.
    case peersChanged(joined: [RoomMember], left: [RoomMember], version: UInt32)
    /// A sender made an outbound session, or its data reached this side first (late joiners).
    case dataSessionIncoming(SessionKey, SessionType, from: PeerID)
    /// Data for an inbound session, with its sender.
    case received(SessionKey, from: PeerID, InboundDelivery)
    /// One sender's session ended (it closed it, or left its subgroup). The inbound session stays
    /// open for the other senders on the same stream.
    case senderSessionEnded(SessionKey, from: PeerID, DataSessionCloseReason)
    /// A subgroup subscription was confirmed.
    case subscribed(SubgroupName, dataSession: Bool)
    /// A subgroup subscription was refused.
    case subscribeRefused(SubgroupName, RelayRefusal)
    /// An outbound session closed.
    case outboundClosed(SessionKey, DataSessionCloseReason)
    /// An inbound session closed (its sender closed it or left).
    case inboundClosed(SessionKey, DataSessionCloseReason)
    /// An outbound session's queueing delay crossed a threshold.
    case tooLongQueuedData(SessionKey, enabled: Bool)
    /// An outbound session's queue has room again (wakes suspended sends).
    case sendQueueHasRoom(SessionKey)
    /// An extension message from another member (or the relay, member 0).
    case extensionReceived(id: UInt8, from: PeerID, body: [UInt8])
    /// An extension message from the relay itself (member 0): invitation replies and events.
    case relayExtensionReceived(id: UInt8, body: [UInt8])
    /// A track was published (by this side: the relay confirmed it) or unpublished.
    case trackPublished(ChannelLabel, by: PeerID, Reliability)
    /// A member unpublished a track.
    case trackUnpublished(ChannelLabel, by: PeerID)
    /// A track subscription was confirmed.
    case trackSubscribed(ChannelLabel, of: PeerID)
    /// A message on a subscribed track.
    case trackMessage(ChannelLabel, from: PeerID, [UInt8])
    /// The relay confirmed the declared labeled channels (IDs, options; header lengths follow).
    case channelsReady([ChannelInfo])
    /// A labeled-channel message: `header` is the sender header (empty unless declared), `bytes`
    /// the message, still zlib-compressed when `compressed`.
    case channelMessage(ChannelLabel, from: PeerID, header: [UInt8], [UInt8], compressed: Bool)
    /// The conference ended, with why and the relay's message.
    case disconnected(RelayDisconnectReason, String)
}

extension ConferenceMachine {
    /// The relay's wire ID of a subgroup this side is subscribed to.
    public func subgroupWireID(_ name: SubgroupName) -> UInt16? { subgroupIDs[name] }
}

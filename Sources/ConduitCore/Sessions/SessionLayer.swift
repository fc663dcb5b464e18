package import DequeModule

/// What a machine that hosts a ``SessionLayer`` supplies: how the layer's frames are addressed on
/// the link, and the events the machine reports for them. A call writes its frames bare to its one
/// peer; a conference puts each in a relay envelope naming its destination.
package protocol SessionHost {
    /// The machine's events; the layer's go into the same queue, so the machine's order holds.
    associatedtype Event: Sendable
    /// Who sent an inbound frame: no one to name in a call, the member in a conference.
    associatedtype Sender: Sendable
    /// The machine's public counters; the layer keeps them, the machine adds its own.
    associatedtype Statistics: SessionStatistics

    /// Bytes written in front of every data frame (the pacer counts them with the frame).
    static var envelopeSize: Int { get }
    /// Starts the datagram of a data frame for `destination`: writes its envelope, if any, which
    /// the frame appended next completes (so the frame is copied once).
    static func beginDataFrame(to destination: UInt16, in batch: inout DatagramBatch)
    /// A session's control frame (open, close, unsupported) as it goes on the link.
    static func wrapControl(_ frame: [UInt8]) -> [UInt8]
    /// The peer named in a fragment delivered from `sender` (nil in a call).
    static func peer(of sender: Sender) -> PeerID?

    static func incoming(_ key: SessionKey, _ type: SessionType, from sender: Sender) -> Event
    static func received(_ key: SessionKey, from sender: Sender, _ delivery: InboundDelivery) -> Event
    static func outboundClosed(_ key: SessionKey, _ reason: DataSessionCloseReason) -> Event
    static func inboundClosed(_ key: SessionKey, _ reason: DataSessionCloseReason) -> Event
    static func tooLongQueuedData(_ key: SessionKey, enabled: Bool) -> Event
    static func sendQueueHasRoom(_ key: SessionKey) -> Event
}

/// The data sessions of one call or conference, both directions, sans-IO.
///
/// Outbound: per-session queues, round-robin scheduling, pacing at the rate cap, the queue-delay
/// monitor (`tooLongQueuedData`, with hysteresis) and graceful close. Inbound: announce
/// (`dataSessionIncoming`), hold what arrives before the app accepts (bounded), accept, unsupport,
/// reassembly per sender. Every frame it writes carries its ``FrameTag``.
///
/// The hosting machine keeps its control plane (a call's hello and goodbye; a conference's join,
/// membership, subgroups, tracks and channels) and resolves wire subgroup IDs to session keys; its
/// ``SessionHost`` says how frames are addressed. Its own control frames and events go through the
/// layer's queues (``controlOut``, ``events``), so one order holds for everything it emits.
package struct SessionLayer<Host: SessionHost>: Sendable {
    /// Fragment size, rate cap, queue and buffer caps.
    let configuration: CallConfiguration
    /// Senders whose reassembly state is kept at once (a call has one).
    let maxSenders: Int

    var outbound: [SessionKey: OutboundSessionState] = [:]
    /// Round-robin order of outbound sessions, so one busy stream cannot starve the others.
    var outboundOrder: [SessionKey] = []
    var nextOutboundIndex = 0
    /// Fragments the session at `nextOutboundIndex` sent in the current round (up to its weight).
    var creditUsed = 0
    var inbound: [SessionKey: InboundSessionState<Host.Sender>] = [:]
    /// Streams this side told the peer it does not support.
    var locallyUnsupported: Set<SessionKey> = []
    /// Reliable streams the app has not accepted yet that hold `maxPendingInboundBytes` or more:
    /// their data is never dropped, so the host stops reading its link until the app answers.
    var holdingBeyondLimit: Set<SessionKey> = []
    /// Bytes held across every stream not yet made (bounded by `maxPendingInboundBytesTotal`).
    var pendingBytesTotal = 0
    /// Every announced stream's counters, kept after its session closes or the host ends (bounded
    /// like the announcements: stream IDs, per subgroup).
    var inboundStatistics: [SessionKey: InboundDataSessionStatistics] = [:]
    /// One reassembler per sender, by the host's number for it: every sender numbers its own messages.
    package var reassemblers: [UInt16: Reassembler] = [:]

    /// Control frames to write before any data: the host's and the sessions', in order.
    package var controlOut = Deque<TaggedFrame>()
    /// Events for the host's driver: the host's and the sessions', in order.
    package var events = Deque<Host.Event>()
    /// Set when a send lands in an empty queue (see ``takeQueueHeadAdded()``).
    var queueHeadAdded = false
    /// What messages queued from now on are cut to: the configuration's `fragmentSize` until the
    /// host says the link carries more (``setFragmentSize(_:)``).
    package internal(set) var fragmentSize: Int
    /// The host's counters: what it and its sessions received, sent, delivered and dropped.
    package var statistics = Host.Statistics()
    /// The host ended: sessions are closed and no session control goes out any more.
    package var isEnded = false

    package init(configuration: CallConfiguration, maxSenders: Int) {
        precondition(configuration.fragmentSize > 0 && configuration.fragmentSize <= Int(UInt16.max), "fragment size must be 1...65535")
        self.configuration = configuration
        fragmentSize = configuration.fragmentSize
        self.maxSenders = maxSenders
    }

    /// Whether a send landed in an empty queue since the last call (see ``CallMachine/takeQueueHeadAdded()``).
    package mutating func takeQueueHeadAdded() -> Bool {
        defer { queueHeadAdded = false }
        return queueHeadAdded
    }

    /// Counts a datagram from the link; false (and counted as out of state) once the host ended.
    package mutating func admitDatagram() -> Bool {
        statistics.datagramsReceived += 1
        guard !isEnded else {
            statistics.droppedOutOfState += 1
            return false
        }
        return true
    }

    /// Queues a session's control frame, on the session's channel (so it never overtakes the data before it).
    package mutating func sendSessionControl(_ frame: ControlFrame, stream: StreamID, subgroupID: UInt16, priority: OutboundSessionOptions.Priority = .low) {
        controlOut.append(TaggedFrame(Host.wrapControl(frame.encoded), tag: .session(stream: stream, subgroupID: subgroupID, type: nil, priority: priority)))
    }

    /// Ends every session: outbound ones close with `reason`, accepted inbound ones too. Sessions
    /// close with `sessionEnd` when the host ended as agreed and with `internal` when it broke
    /// under them, so an app can tell a finished exchange from a lost one.
    ///
    /// Streams announced but not accepted yet keep what they hold, closed with `reason`: the app
    /// can still make their inbound sessions and read it, as a socket is read after the peer's
    /// FIN. A goodbye that overtook the app's `makeInbound` then loses nothing that arrived.
    package mutating func end(closingSessionsWith reason: DataSessionCloseReason) {
        isEnded = true
        holdingBeyondLimit.removeAll()
        for key in outboundOrder { closeOutbound(key, reason: reason) }
        for (key, session) in inbound.sorted(by: { $0.key.streamID < $1.key.streamID }) {
            if session.isAccepted {
                if session.closeReason == nil { events.append(Host.inboundClosed(key, reason)) }
                inbound[key] = nil
            } else if session.closeReason == nil {
                inbound[key]!.closeReason = reason
            }
        }
    }

    /// Whether a reliable stream the app has not accepted holds `maxPendingInboundBytes` or more
    /// (the host stops reading its link until the app makes or declines the session).
    package var isHoldingBeyondLimit: Bool {
        !isEnded && (!holdingBeyondLimit.isEmpty || pendingBytesTotal >= configuration.maxPendingInboundBytesTotal)
    }

    /// Closes this side's sessions in `subgroup` (it left it), both ways, with `sessionEnd`.
    package mutating func closeSessions(in subgroup: SubgroupName) {
        for key in outboundOrder where key.subgroup == subgroup { closeOutbound(key, reason: .sessionEnd) }
        for key in inbound.keys.sorted(by: { $0.streamID < $1.streamID }) where key.subgroup == subgroup {
            holdingBeyondLimit.remove(key)
            if let session = inbound.removeValue(forKey: key) {
                pendingBytesTotal -= session.pendingBytes
                if session.isAccepted, session.closeReason == nil { events.append(Host.inboundClosed(key, .sessionEnd)) }
            }
        }
    }
}

/// The counters a session layer keeps in its host's statistics (``CallStatistics``,
/// `ConferenceStatistics`), beside the host's own.
package protocol SessionStatistics: Sendable {
    init()
    var datagramsReceived: Int { get set }
    var droppedOutOfState: Int { get set }
    var droppedUnsupported: Int { get set }
    var droppedClosedSession: Int { get set }
    var droppedWrongType: Int { get set }
    var droppedPendingOverflow: Int { get set }
    var messagesDelivered: Int { get set }
    var fragmentsDelivered: Int { get set }
    var bytesDelivered: Int { get set }
    var messagesSent: Int { get set }
    var bytesSent: Int { get set }
    /// A message fragment came from a sender past ``SessionLayer/maxSenders``.
    mutating func countSenderOverLimit()
    /// A reassembler's counters changed (kept by a host with one sender).
    mutating func noteReassembly(_ statistics: Reassembler.Statistics)
}

/// The sans-IO state machine of one call between two peers over one transport link.
///
/// It follows quinn-proto's contract: the driver feeds it datagrams (``handle(batch:now:)``),
/// app commands (`make…`, ``enqueue(_:bytes:timestamp:now:)``), and the passing of time, then
/// drains its output: frames to transmit (``pollTransmit(now:into:maxBytes:)``), events to
/// dispatch (``pollEvent()``), and when to call it again (``nextDeadline(now:)``). It owns no socket,
/// reads no clock, and never blocks, so every behaviour is testable with virtual time.
public struct CallMachine: Sendable {
    /// Where the call is in its life.
    public enum Phase: Sendable, Hashable {
        /// Our hello is out; waiting for the peer's.
        case handshaking
        /// Both sides said hello.
        case connected(peer: PeerID, peerSupportsDataSessions: Bool)
        /// The call ended, with why.
        case ended(DisconnectReason)
    }

    /// This side's peer ID.
    public let localPeer: PeerID
    /// Fragment size, rate cap, queue and buffer caps.
    public private(set) var configuration: CallConfiguration
    /// Handshaking, connected or ended.
    public internal(set) var phase: Phase = .handshaking
    /// Counters of what the call received, delivered, sent and dropped.
    public var statistics: CallStatistics { sessions.statistics }
    /// The data sessions, both ways; also the queues of the call's control frames and events.
    package var sessions: SessionLayer<CallSessionHost>
    var localSubgroupIDs: [SubgroupName: UInt16] = [:]
    var remoteSubgroups: [UInt16: SubgroupName] = [:]
    /// Subgroups a peer may announce; past this, its frames for new ones are dropped and counted.
    public static let maxRemoteSubgroups = 256

    /// Starts a call as `localPeer`: the hello is queued for the first ``pollTransmit(now:into:maxBytes:)``.
    public init(localPeer: PeerID, configuration: CallConfiguration = .init()) {
        self.localPeer = localPeer
        self.configuration = configuration
        self.sessions = SessionLayer(configuration: configuration, maxSenders: 1)
        sessions.controlOut.append(TaggedFrame(ControlFrame.hello(peer: localPeer, dataSessionsSupported: configuration.dataSessionsSupported).encoded))
    }

    /// Whether both sides said hello and the call has not ended.
    public var isConnected: Bool {
        if case .connected = phase { return true }
        return false
    }

    /// Whether the call ended (its sessions ended with it).
    public var isEnded: Bool { sessions.isEnded }

    /// Whether a reliable stream the app has not made an inbound session for holds
    /// `maxPendingInboundBytes` or more: a driver stops reading its link until the app makes or
    /// declines the session (reliable data is held, never dropped).
    public var isHoldingBeyondLimit: Bool { sessions.isHoldingBeyondLimit }

    /// The next event for the driver, or nil when there is none.
    public mutating func pollEvent() -> CallEvent? { sessions.events.popFirst() }

    /// Whether a send landed in an empty queue since the last call: only then can
    /// ``nextTimeout()`` and ``nextTransmit(now:)`` have moved earlier because of sends, so a
    /// driver re-arms its timers after a send only when this says so (both walk every session).
    public mutating func takeQueueHeadAdded() -> Bool { sessions.takeQueueHeadAdded() }

    // MARK: Sender side

    /// LINE Planet `makeOutboundDataSession`: `.none` on success, else why not.
    public mutating func makeOutbound(_ key: SessionKey, type: SessionType, options: OutboundSessionOptions = .init(), now: ConduitInstant) -> DataSessionFailReason {
        guard key.streamID.isValid else { return .invalidId }
        guard case .connected(_, let peerSupports) = phase, peerSupports, configuration.dataSessionsSupported else {
            return .internal
        }
        guard sessions.outboundType(key) == nil else { return .alreadyExist }
        sessions.openOutbound(key, type: type, subgroupID: localSubgroupID(for: key.subgroup), options: options, now: now)
        return .none
    }

    /// Offers one `send` to a session's queue. Sizes and state are checked here, so an oversize or
    /// closed send fails at the call instead of vanishing later.
    public mutating func enqueue(_ key: SessionKey, bytes: [UInt8], timestamp: UInt64, now: ConduitInstant) -> EnqueueResult {
        sessions.enqueue(key, bytes: bytes, timestamp: timestamp, now: now)
    }

    /// Closes an outbound session gracefully, as `RTCDataChannel.close()` does: sends are refused
    /// from now on, messages already accepted are still sent, and then the receiver's inbound
    /// session closes with `sessionEnd` after the last of them. `outboundClosed` fires at that point.
    /// (Ending the whole call, by contrast, discards what is still queued.)
    public mutating func closeOutbound(_ key: SessionKey) { sessions.closeOutbound(key) }

    // MARK: Receiver side

    /// LINE Planet `makeInboundDataSession`. `expectedType`, when given, must match what the
    /// sender announced (else `invalidType`).
    public mutating func makeInbound(_ key: SessionKey, expectedType: SessionType? = nil) -> DataSessionFailReason {
        sessions.makeInbound(key, expectedType: expectedType, hostIsConnected: isConnected)
    }

    /// LINE Planet `unsupportInboundDataSession`: tells the sender this side cannot handle the
    /// stream. In a 1:1 call the sender's session closes with `unsupported`.
    public mutating func unsupportInbound(_ key: SessionKey) {
        guard sessions.unsupport(key) else { return }
        // A subgroup the peer has not announced has no wire ID yet: remember the refusal and
        // answer the peer's open when it comes (see `handleControl`).
        guard let subgroupID = remoteSubgroupID(for: key.subgroup) else { return }
        sessions.discardReassembly(of: 0, streamID: key.streamID, subgroupID: subgroupID)
        if !isEnded {
            sessions.sendSessionControl(.sessionUnsupported(streamID: key.streamID, subgroupID: subgroupID), stream: key.streamID, subgroupID: subgroupID)
        }
    }

    // MARK: Call lifetime

    /// Hangs up: every session closes with `sessionEnd` and a goodbye goes to the peer.
    public mutating func hangUp() {
        guard !isEnded else { return }
        // A barrier: the goodbye must not overtake what the call sent before hanging up.
        sessions.controlOut.append(TaggedFrame(ControlFrame.goodbye.encoded, tag: .farewell))
        end(.localHangUp)
    }

    /// The transport closed under the call.
    public mutating func linkClosed() {
        guard !isEnded else { return }
        sessions.controlOut.removeAll()
        end(.transportClosed)
    }

    /// Ends the call. Sessions close with `sessionEnd` when the call ended as agreed (a hang-up on
    /// either side) and with `internal` when it broke under them (the transport failed without a
    /// goodbye), so an app can tell a finished exchange from a lost one.
    package mutating func end(_ reason: DisconnectReason) {
        phase = .ended(reason)
        sessions.end(closingSessionsWith: reason == .localHangUp || reason == .remoteHangUp ? .sessionEnd : .internal)
        sessions.events.append(.disconnected(reason))
    }

    // MARK: Subgroup numbering

    mutating func localSubgroupID(for name: SubgroupName?) -> UInt16 {
        guard let name else { return 0 }
        if let id = localSubgroupIDs[name] { return id }
        let id = UInt16(truncatingIfNeeded: localSubgroupIDs.count + 1)
        localSubgroupIDs[name] = id
        return id
    }

    /// The peer's wire ID for a subgroup: 0 for the main room, nil if the peer never announced it.
    func remoteSubgroupID(for name: SubgroupName?) -> UInt16? {
        guard let name else { return 0 }
        return remoteSubgroups.first(where: { $0.value == name })?.key
    }
}

/// How a call's sessions are addressed and reported: frames go bare to the one peer.
package enum CallSessionHost: SessionHost {
    package typealias Event = CallEvent
    /// A call has one peer: a frame's sender needs no name.
    package typealias Sender = Void
    package typealias Statistics = CallStatistics

    package static var envelopeSize: Int { 0 }
    package static func beginDataFrame(to destination: UInt16, in batch: inout DatagramBatch) {}
    package static func wrapControl(_ frame: [UInt8]) -> [UInt8] { frame }
    package static func peer(of sender: Void) -> PeerID? { nil }
    package static func incoming(_ key: SessionKey, _ type: SessionType, from sender: Void) -> CallEvent { .dataSessionIncoming(key, type) }
    package static func received(_ key: SessionKey, from sender: Void, _ delivery: InboundDelivery) -> CallEvent { .received(key, delivery) }
    package static func outboundClosed(_ key: SessionKey, _ reason: DataSessionCloseReason) -> CallEvent { .outboundClosed(key, reason) }
    package static func inboundClosed(_ key: SessionKey, _ reason: DataSessionCloseReason) -> CallEvent { .inboundClosed(key, reason) }
    package static func tooLongQueuedData(_ key: SessionKey, enabled: Bool) -> CallEvent { .tooLongQueuedData(key, enabled: enabled) }
    package static func sendQueueHasRoom(_ key: SessionKey) -> CallEvent { .sendQueueHasRoom(key) }
}

extension CallStatistics: SessionStatistics {
    /// A call has one sender, never over the limit.
    package mutating func countSenderOverLimit() {}
    package mutating func noteReassembly(_ statistics: Reassembler.Statistics) { reassembly = statistics }
}
extension CallMachine: SessionLayerBacked {}

public import ConduitCore
/// A conference's data sessions: the session layer, with the relay's subgroup numbers and each
/// frame addressed to a member (or everyone in scope) through the relay.
extension ConferenceMachine {
    // MARK: Sender side

    /// `makeOutboundDataSession` of a conference or subgroup. A subgroup session needs this side
    /// subscribed to a subgroup whose `dataSession` attribute is true (else `internal`).
    public mutating func makeOutbound(_ key: SessionKey, type: SessionType, options: OutboundSessionOptions = .init(), now: ConduitInstant) -> DataSessionFailReason {
        guard key.streamID.isValid else { return .invalidId }
        guard isConnected, configuration.session.dataSessionsSupported else { return .internal }
        var subgroupID: UInt16 = 0
        if let name = key.subgroup {
            guard let id = subgroupIDs[name], subgroupDataSession[name] == true else { return .internal }
            subgroupID = id
        }
        // A closed session may be made again (after leaving and rejoining its subgroup, too).
        if sessions.outboundType(key) != nil, sessions.outboundCloseReason(key) == nil { return .alreadyExist }
        // But a stream keeps one type in a room: a receiver holds one inbound session per stream,
        // for every sender, of the type first announced, and could only drop frames of another
        // (the fuzzer's relay-machine target found bob's reliable messages dropped so at alice
        // after he re-made his closed unreliable-bytes stream 101 as reliable messages).
        if let known = sessions.outboundType(key) ?? sessions.inboundType(key), known != type { return .invalidType }
        sessions.openOutbound(key, type: type, subgroupID: subgroupID, options: options, now: now)
        return .none
    }

    /// LINE Planet `changeDestination`: later messages go to `peer` only, or to everyone in the
    /// session's scope (the room, or the subgroup) when nil. False if the session is not open or
    /// the peer is not in the room.
    public mutating func changeDestination(_ key: SessionKey, to peer: PeerID?) -> Bool {
        guard let peer else { return sessions.setDestination(key, 0) }
        guard let member = member(for: peer) else { return false }
        return sessions.setDestination(key, member)
    }

    /// Where an outbound session sends: a peer, or nil for everyone in scope (also for an unknown session).
    public func destination(of key: SessionKey) -> PeerID? {
        let member = sessions.destination(of: key)
        return member == 0 ? nil : members[member]?.peer
    }

    // Sending (`enqueue`), a graceful close (`closeOutbound`) and accepting an announced stream
    // (`makeInbound`) are the call's operations to the letter: they come from `SessionLayerBacked`.

    // MARK: Receiver side

    /// `unsupportInboundDataSession` in a group call: this receiver stops getting the stream (the
    /// relay stops forwarding it here); the senders keep sending to everyone else.
    public mutating func unsupportInbound(_ key: SessionKey) {
        guard sessions.unsupport(key) else { return }
        let subgroupID: UInt16? = key.subgroup.map { subgroupIDs[$0] } ?? 0
        guard let subgroupID, isConnected else { return }
        sessions.sendSessionControl(.sessionUnsupported(streamID: key.streamID, subgroupID: subgroupID), stream: key.streamID, subgroupID: subgroupID)
    }

    // MARK: Session state

    /// The longest queueing delay among the open outbound sessions (zero when every queue is
    /// empty), as `CallMachine/longestQueueingDelay(now:)`.
    public func longestQueueingDelay(now: ConduitInstant) -> Duration { sessions.longestQueueingDelay(now: now) }
}

/// How a conference's sessions are addressed and reported: every frame goes to the relay in an
/// envelope naming its destination (a member, or 0 for everyone in scope); a frame's sender is
/// the member the relay stamped on it.
package enum ConferenceSessionHost: SessionHost {
    package typealias Event = ConferenceEvent
    package typealias Sender = PeerID
    package typealias Statistics = ConferenceStatistics

    package static var envelopeSize: Int { RelayEnvelope.size }

    package static func beginDataFrame(to destination: UInt16, in batch: inout DatagramBatch) {
        batch.beginDatagram(prefix: (WireVersion.current << 4 | RelayFrameKind.routed.rawValue, 0, UInt8(destination >> 8), UInt8(destination & 0xFF)))
    }

    package static func wrapControl(_ frame: [UInt8]) -> [UInt8] { RelayEnvelope.wrap(.routed, member: 0, frame) }
    package static func peer(of sender: PeerID) -> PeerID? { sender }
    package static func incoming(_ key: SessionKey, _ type: SessionType, from sender: PeerID) -> ConferenceEvent { .dataSessionIncoming(key, type, from: sender) }
    package static func received(_ key: SessionKey, from sender: PeerID, _ delivery: InboundDelivery) -> ConferenceEvent { .received(key, from: sender, delivery) }
    package static func outboundClosed(_ key: SessionKey, _ reason: DataSessionCloseReason) -> ConferenceEvent { .outboundClosed(key, reason) }
    package static func inboundClosed(_ key: SessionKey, _ reason: DataSessionCloseReason) -> ConferenceEvent { .inboundClosed(key, reason) }
    package static func tooLongQueuedData(_ key: SessionKey, enabled: Bool) -> ConferenceEvent { .tooLongQueuedData(key, enabled: enabled) }
    package static func sendQueueHasRoom(_ key: SessionKey) -> ConferenceEvent { .sendQueueHasRoom(key) }
}

extension ConferenceStatistics: SessionStatistics {
    package mutating func countSenderOverLimit() { droppedUnknownSender += 1 }
    /// Reassembly is per sender here; its counters are not summed.
    package mutating func noteReassembly(_ statistics: Reassembler.Statistics) {}
}
extension ConferenceMachine: SessionLayerBacked {}

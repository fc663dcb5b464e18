import DequeModule
public import ConduitCore

/// Data tracks on the client: publish, send (fragmented, with the remaining lifetime carried in
/// every frame), subscribe, receive (reassembled per track).
extension ConferenceMachine {
    struct LocalTrack: Sendable {
        let reliability: Reliability
        var trackID: UInt16?
        var nextMessageID: UInt32 = 0
    }

    struct QueuedTrackFrame: Sendable {
        var frame: [UInt8]
        /// The track's or channel's link channel and reliability (the lifetime as queued).
        let tag: FrameTag
        let queuedAt: ConduitInstant
    }

    /// Publishes a track (`LocalParticipant.publishTrack`). The relay answers with the track's ID
    /// (`trackPublished` with this side as publisher); sends wait for it.
    public mutating func publishTrack(_ name: ChannelLabel, reliability: Reliability) -> Bool {
        guard isConnected, localTracks[name] == nil else { return false }
        localTracks[name] = LocalTrack(reliability: reliability)
        sessions.controlOut.append(TaggedFrame(RoomControlFrame.publishTrack(name, reliability).encoded))
        return true
    }

    /// Stops publishing track `name`: the relay tells members, subscriptions end, later sends fail.
    public mutating func unpublishTrack(_ name: ChannelLabel) {
        guard let track = localTracks.removeValue(forKey: name), let id = track.trackID, isConnected else { return }
        sessions.controlOut.append(TaggedFrame(RoomControlFrame.unpublishTrack(id).encoded))
    }

    /// Whether track `name` is published (the relay confirmed it).
    public func isTrackPublished(_ name: ChannelLabel) -> Bool { localTracks[name]?.trackID != nil }

    /// Queues one message on a published track. Messages larger than a datagram are fragmented;
    /// with `maxPacketLifeTime`, the time a message waits here counts against its lifetime.
    public mutating func sendTrack(_ name: ChannelLabel, bytes: [UInt8], now: ConduitInstant) -> EnqueueResult {
        if let ended = endedFailure { return ended }
        guard let track = localTracks[name], let id = track.trackID else {
            return .failed(ConduitError(.sessionClosed, "track \(name) is not published"))
        }
        guard bytes.count <= TrackFrameHeader.maxMessageBytes else {
            return .failed(ConduitError(.messageTooLarge, "\(bytes.count) bytes exceed the \(TrackFrameHeader.maxMessageBytes)-byte limit of a track message"))
        }
        guard trackQueueFits(bytes.count) else { return .queueFull }
        let messageID = track.nextMessageID
        localTracks[name]!.nextMessageID &+= 1
        let header = TrackFrameHeader(trackID: id, reliability: track.reliability).bytes
        queueRelayMessage(bytes, header: header, id: id, messageID: messageID, channel: FrameTag.trackChannel(id), reliability: track.reliability, now: now)
        return .queued(messageID: messageID)
    }

    /// Whether a message of `count` bytes fits the queue that tracks and labeled channels share
    /// (an empty queue takes any message, so one larger than the cap still goes).
    func trackQueueFits(_ count: Int) -> Bool {
        trackQueuedBytes == 0 || trackQueuedBytes + count <= configuration.session.maxQueuedBytesPerSession
    }

    /// Whether a sender the shared track and channel queue refused should try again: the queue is
    /// at most half full (so waiting senders wake once per half a queue, not once per frame), or
    /// the conference ended (the retry then fails with why).
    public var trackQueueHasRoom: Bool {
        isEnded || trackQueuedBytes <= configuration.session.maxQueuedBytesPerSession / 2
    }

    /// A send's failure once the conference ended: its queue is gone, so nothing may be queued.
    var endedFailure: EnqueueResult? {
        isEnded ? .failed(ConduitError(.connectionClosed, "the conference has ended")) : nil
    }

    /// Cuts one track or labeled-channel message into frames behind `header` (which carries `id`)
    /// and queues them on the link channel `channel` with the message's reliability.
    mutating func queueRelayMessage(
        _ bytes: [UInt8], header: [UInt8], id: UInt16, messageID: UInt32, channel: UInt32, reliability: Reliability, now: ConduitInstant
    ) {
        var fragmenter = Fragmenter(
            streamID: 100,
            sessionType: reliability.isFullyReliable ? .reliableMessage : .unreliableMessage,
            subgroupID: id,
            messageID: messageID,
            totalLength: bytes.count,
            fragmentSize: max(1, configuration.session.fragmentSize - header.count + RelayEnvelope.size),
            timestamp: 0
        )
        scratch.removeAll()
        bytes.withUnsafeBytes { fragmenter.emitAll(of: $0, into: &scratch) }
        let tag = FrameTag(channel: channel, delivery: reliability)
        for index in 0..<scratch.count {
            let frame = header + scratch[index]
            trackQueue.append(QueuedTrackFrame(frame: frame, tag: tag, queuedAt: now))
            trackQueuedBytes += frame.count
        }
    }

    /// Subscribes to `publisher`'s track `name` (it must have been announced).
    public mutating func subscribeTrack(_ name: ChannelLabel, of publisher: PeerID) -> Bool {
        guard isConnected, let member = member(for: publisher),
            let info = announcedTracks.values.first(where: { $0.publisher == member && $0.name == name })
        else { return false }
        sessions.controlOut.append(TaggedFrame(RoomControlFrame.subscribeTrack(info.trackID).encoded))
        return true
    }

    /// Ends the subscription to `publisher`'s track `name`.
    public mutating func unsubscribeTrack(_ name: ChannelLabel, of publisher: PeerID) {
        guard let member = member(for: publisher),
            let info = announcedTracks.values.first(where: { $0.publisher == member && $0.name == name })
        else { return }
        subscribedTracks.remove(info.trackID)
        trackReassemblers[info.trackID] = nil
        sessions.controlOut.append(TaggedFrame(RoomControlFrame.unsubscribeTrack(info.trackID).encoded))
    }

    mutating func handleTrackControl(_ frame: RoomControlFrame) {
        switch frame {
        case .trackPublished(let info):
            announcedTracks[info.trackID] = info
            if info.publisher == joinedMember, localTracks[info.name]?.trackID == nil, localTracks[info.name] != nil {
                localTracks[info.name]!.trackID = info.trackID
                sessions.events.append(.trackPublished(info.name, by: localPeer, info.reliability))
            } else if let publisher = members[info.publisher] {
                sessions.events.append(.trackPublished(info.name, by: publisher.peer, info.reliability))
            }
        case .trackUnpublished(let id):
            guard let info = announcedTracks.removeValue(forKey: id) else { return }
            subscribedTracks.remove(id)
            trackReassemblers[id] = nil
            let publisher = info.publisher == joinedMember ? localPeer : members[info.publisher]?.peer
            if let publisher { sessions.events.append(.trackUnpublished(info.name, by: publisher)) }
        case .trackSubscribed(let id):
            guard let info = announcedTracks[id] else { return }
            subscribedTracks.insert(id)
            if let publisher = members[info.publisher] { sessions.events.append(.trackSubscribed(info.name, of: publisher.peer)) }
        default:
            sessions.statistics.malformedDatagrams += 1
        }
    }

    mutating func handleTrackFrame(_ datagram: UnsafeRawBufferPointer, now: ConduitInstant) {
        guard isConnected,
            let header = try? TrackFrameHeader.parse(datagram),
            let (inner, payload) = try? DataFrameHeader.parse(UnsafeRawBufferPointer(rebasing: datagram[TrackFrameHeader.size...])),
            inner.subgroupID == header.trackID
        else {
            sessions.statistics.malformedDatagrams += 1
            return
        }
        guard subscribedTracks.contains(header.trackID), let info = announcedTracks[header.trackID], let publisher = members[info.publisher] else {
            sessions.statistics.droppedClosedSession += 1
            return
        }
        if trackReassemblers[header.trackID] == nil {
            trackReassemblers[header.trackID] = Reassembler(configuration: configuration.session.reassembly)
        }
        let body = UnsafeRawBufferPointer(rebasing: datagram[TrackFrameHeader.size...])
        guard case .complete(let message) = trackReassemblers[header.trackID]!.ingest(inner, payload: UnsafeRawBufferPointer(rebasing: body[payload]), now: now) else {
            return
        }
        sessions.statistics.messagesDelivered += 1
        sessions.events.append(.trackMessage(info.name, from: publisher.peer, message.bytes))
    }

    /// Moves queued track frames into `batch`, stamping each with the lifetime it has left and
    /// dropping those whose lifetime ran out while queued.
    mutating func pollTrackFrames(now: ConduitInstant, into batch: inout DatagramBatch, maxBytes: Int) {
        while let next = trackQueue.first, batch.isEmpty || batch.byteCount + next.frame.count <= maxBytes {
            trackQueue.removeFirst()
            trackQueuedBytes -= next.frame.count
            if let lifetime = TrackFrameHeader.remainingLifetime(next.frame) {
                let waited = (now - next.queuedAt).nanosecondsClamped / 1_000_000
                guard waited < Int64(lifetime) else {
                    sessions.statistics.trackFramesExpired += 1
                    continue
                }
                var frame = next.frame
                TrackFrameHeader.setRemainingLifetime(&frame, milliseconds: lifetime - UInt32(waited))
                batch.append(frame, tag: next.tag.withRemainingLifetime(milliseconds: lifetime - UInt32(waited)))
            } else {
                batch.append(next.frame, tag: next.tag)
            }
        }
    }
}

extension ConferenceMachine {
    /// The relay's ID of an announced track (for tools and tests).
    public func announcedTrackID(_ name: ChannelLabel) -> UInt16? {
        announcedTracks.values.first(where: { $0.name == name })?.trackID
    }
}

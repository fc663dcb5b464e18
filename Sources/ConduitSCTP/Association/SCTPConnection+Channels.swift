#if SCTP
import ConduitCore
import NIOCore

/// A channel's life on one stream: opened (by either side) with DATA_CHANNEL_OPEN, closed by
/// resetting the stream both ways (RFC 8831 section 6.7).
struct ChannelRecord {
    var open: DataChannelOpen
    var openedLocally: Bool
    /// RFC 8832 section 6: until the peer acknowledges (with an ACK or any message on the
    /// stream), the opener sends ordered, so nothing overtakes the OPEN.
    var acked: Bool
    /// Channels mode: the public face. Conduit mode has none (messages go to the link).
    var handle: DataChannel?
    var closing = false
    var awaitingOutgoingReset = false
    var outgoingResetDone = false
    var incomingResetDone = false
    /// Why this end closed it, when the app did not (a refused OPEN, an unsupported PPID).
    var closedBecause: String?
}

extension SCTPConnection {
    /// Opens a channel on our next free stream: sends DATA_CHANNEL_OPEN (RFC 8832 section 6).
    func openChannel(_ open: DataChannelOpen, withHandle: Bool) throws(ConduitError) -> (UInt16, DataChannel?) {
        guard state == .established else { throw closedError }
        guard let id = allocator.allocate() else {
            throw ConduitError(.sessionCreationFailed, "all \(allocator.streamCount / 2) stream IDs of this side of \(remoteDescription) are in use")
        }
        let handle = withHandle ? DataChannel(connection: self, streamID: id, open: open) : nil
        channels[id] = ChannelRecord(open: open, openedLocally: true, acked: false, handle: handle)
        statistics.channelsOpened += 1
        open.bytes.withUnsafeBytes { send(stream: id, ppid: .dcep, bytes: $0, delivery: .reliableOrdered, promise: nil) }
        return (id, handle)
    }

    /// One user or DCEP message from the peer. Nothing here ends the association: what the RFCs
    /// refuse is counted, and at most the stream's channel is closed (``DCEPStreamPolicy``).
    func receive(stream: UInt16, ppid: UInt32, _ bytes: UnsafeRawBufferPointer) {
        statistics.messagesReceived += 1
        if ppid == PayloadProtocolIdentifier.dcep.rawValue {
            receiveDCEP(stream: stream, bytes)
            return
        }
        switch DCEPStreamPolicy.answer(userMessagePPID: ppid, state: streamState(stream), binaryOnly: mode == .conduit) {
        case .dropNoChannel:
            statistics.droppedNoChannel += 1
        case .closeChannelUnsupportedPPID:
            statistics.droppedPPID += 1
            closeChannel(stream, because: "the peer sent a message with PPID \(ppid), which data channels do not use (RFC 8831 section 6.6)")
        case .deliver(let kind, let isEmpty):
            channels[stream]?.acked = true
            let payload: [UInt8] = isEmpty ? [] : Array(bytes)
            if mode == .conduit {
                // Woken once per read burst (`readAvailable`), not once per message.
                linkInbox.deliver(payload, wake: false)
            } else {
                channels[stream]?.handle?.inbox.deliver(DataChannelMessage(kind: kind, bytes: payload))
            }
        }
    }

    /// What the DCEP rules need to know of `stream`.
    func streamState(_ stream: UInt16) -> DCEPStreamPolicy.StreamState {
        guard let record = channels[stream] else { return .unused }
        if record.closing || record.incomingResetDone { return .closing }
        return record.openedLocally ? .openedLocally(acked: record.acked) : .openedByPeer
    }

    private func receiveDCEP(stream: UInt16, _ bytes: UnsafeRawBufferPointer) {
        switch DCEPStreamPolicy.answer(dcep: bytes, stream: stream, state: streamState(stream), streamCount: Int(limits.streams)) {
        case .acknowledged:
            channels[stream]?.acked = true
        case .ignore(let why):
            statistics.droppedDCEP += 1
            logger.debug("dcep message ignored", metadata: ["conduit.remote": "\(remoteDescription)", "conduit.stream": "\(stream)", "conduit.reason": "\(why)"])
        case .refuse(let why):
            // RFC 8832 section 6: close the stream's channel, send no ACK.
            statistics.opensRefused += 1
            if why == .collision { statistics.channelCollisions += 1 }
            if channels[stream] == nil {
                // A malformed OPEN on a free stream: hold the stream until its reset is done.
                channels[stream] = ChannelRecord(open: DataChannelOpen(reliability: .reliableOrdered, label: "", protocol: ""), openedLocally: false, acked: true)
                allocator.reserve(stream)
            }
            closeChannel(stream, because: "the peer's DATA_CHANNEL_OPEN was refused (\(why), RFC 8832 section 6)")
        case .accept(let open):
            acceptOpen(open, on: stream)
        }
    }

    /// A valid OPEN on a free stream, of either parity (without DTLS there is no role to check,
    /// see ``DCEPStreamPolicy``): the channel exists, and the ACK goes back on its stream.
    private func acceptOpen(_ open: DataChannelOpen, on stream: UInt16) {
        if mode == .undecided {
            decideMode(conduitAware && open.protocol == SCTPConduitMapping.protocolName ? .conduit : .channels)
        }
        let handle = mode == .channels ? DataChannel(connection: self, streamID: stream, open: open) : nil
        channels[stream] = ChannelRecord(open: open, openedLocally: false, acked: true, handle: handle)
        // The peer may open on our parity: our own next channels must not pick this stream.
        allocator.reserve(stream)
        statistics.channelsOpened += 1
        DataChannelAck().bytes.withUnsafeBytes { send(stream: stream, ppid: .dcep, bytes: $0, delivery: .reliableOrdered, promise: nil) }
        if mode == .conduit, open.label == SCTPConduitMapping.callLabel, conduitStreams[FrameTag.controlChannel] == nil {
            // The call's channel is the caller's; we answer on the same stream.
            conduitStreams[FrameTag.controlChannel] = stream
        }
        if let handle { acceptInbox.deliver(handle) }
    }

    /// Sends on an open channel, with its reliability (ordered until acknowledged).
    func sendOnChannel(_ id: UInt16, _ message: DataChannelMessage, promise: EventLoopPromise<Void>) {
        guard state != .closed else {
            promise.fail(closedError)
            return
        }
        guard let record = channels[id], !record.closing else {
            let why = channels[id]?.closedBecause.map { ": \($0)" } ?? ""
            promise.fail(ConduitError(.sessionClosed, "data channel \(id) to \(remoteDescription) is closed\(why)"))
            return
        }
        var delivery = record.open.channelType.reliability
        if !record.acked { delivery.ordered = true }
        message.bytes.withUnsafeBytes { send(stream: id, ppid: message.kind.ppid(count: message.bytes.count), bytes: $0, delivery: delivery, promise: promise) }
    }

    /// Closes a channel from our side: reset our outgoing stream; the peer resets its own in turn.
    /// `because` (logged, and in the error of later sends) when it is not the app's own close.
    func closeChannel(_ id: UInt16, because reason: String? = nil) {
        guard var record = channels[id], !record.closing else { return }
        if let reason {
            record.closedBecause = reason
            record.handle?.closedBecause.withLock { $0 = reason }
            logger.notice("data channel closed", metadata: ["conduit.remote": "\(remoteDescription)", "conduit.stream": "\(id)", "conduit.reason": "\(reason)"])
        }
        record.closing = true
        record.awaitingOutgoingReset = true
        record.handle?.inbox.finish(discarding: true)
        channels[id] = record
        resetOutgoing([id])
    }

    /// The peer reset its outgoing stream: it closed the channel, or answered our close.
    func incomingReset(_ stream: UInt16) {
        guard var record = channels[stream] else { return }
        record.incomingResetDone = true
        if !record.closing {
            record.closing = true
            record.awaitingOutgoingReset = true
            record.handle?.inbox.finish(discarding: false)
            channels[stream] = record
            resetOutgoing([stream])
        } else {
            channels[stream] = record
        }
        finishIfReset(stream)
    }

    func outgoingResetDone(_ stream: UInt16) {
        guard var record = channels[stream] else { return }
        record.awaitingOutgoingReset = false
        record.outgoingResetDone = true
        channels[stream] = record
        finishIfReset(stream)
    }

    /// Both directions reset: the stream ID is free again (RFC 8831 section 6.7).
    private func finishIfReset(_ stream: UInt16) {
        guard let record = channels[stream], record.incomingResetDone, record.outgoingResetDone else { return }
        channels[stream] = nil
        record.handle?.inbox.setOnSpace {}
        allocator.release(stream)
        statistics.channelsClosed += 1
    }

    /// Statistics with the channel counts of this moment.
    var currentStatistics: SCTPAssociationStatistics {
        var copy = statistics
        copy.openChannels = channels.values.count { !$0.closing }
        copy.streamsInUse = channels.count
        return copy
    }
}
#endif

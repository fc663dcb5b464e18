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

    /// One user or DCEP message from the peer.
    func receive(stream: UInt16, ppid rawPPID: UInt32, _ bytes: UnsafeRawBufferPointer) {
        statistics.messagesReceived += 1
        guard let ppid = PayloadProtocolIdentifier(rawValue: rawPPID) else {
            statistics.droppedPPID += 1
            return
        }
        if ppid == .dcep {
            receiveDCEP(stream: stream, bytes)
            return
        }
        guard let (kind, isEmpty) = DataChannelMessageKind.received(ppid) else { return }
        guard var record = channels[stream], !record.incomingResetDone else {
            statistics.droppedNoChannel += 1
            return
        }
        if !record.acked {
            record.acked = true
            channels[stream] = record
        }
        let payload: [UInt8] = isEmpty ? [] : Array(bytes)
        switch mode {
        case .conduit:
            guard kind == .binary else {
                statistics.droppedPPID += 1
                return
            }
            // Woken once per read burst (`readAvailable`), not once per message.
            linkInbox.deliver(payload, wake: false)
        case .channels, .undecided:
            record.handle?.inbox.deliver(DataChannelMessage(kind: kind, bytes: payload))
        }
    }

    private func receiveDCEP(stream: UInt16, _ bytes: UnsafeRawBufferPointer) {
        let message: DCEPMessage
        do {
            message = try DCEPMessage(parsing: bytes)
        } catch {
            statistics.droppedDCEP += 1
            return
        }
        switch message {
        case .ack:
            channels[stream]?.acked = true
        case .open(let open):
            // RFC 8832 section 6: the peer opens on its own parity, on a stream not in use.
            guard !allocator.isOurs(stream), stream < limits.streams, channels[stream] == nil else {
                statistics.droppedDCEP += 1
                return
            }
            if mode == .undecided {
                decideMode(conduitAware && open.protocol == SCTPConduitMapping.protocolName ? .conduit : .channels)
            }
            let handle = mode == .channels ? DataChannel(connection: self, streamID: stream, open: open) : nil
            channels[stream] = ChannelRecord(open: open, openedLocally: false, acked: true, handle: handle)
            statistics.channelsOpened += 1
            DataChannelAck().bytes.withUnsafeBytes { send(stream: stream, ppid: .dcep, bytes: $0, delivery: .reliableOrdered, promise: nil) }
            if mode == .conduit, open.label == SCTPConduitMapping.callLabel, conduitStreams[FrameTag.controlChannel] == nil {
                // The call's channel is the caller's; we answer on the same stream.
                conduitStreams[FrameTag.controlChannel] = stream
            }
            if let handle { acceptInbox.deliver(handle) }
        }
    }

    /// Sends on an open channel, with its reliability (ordered until acknowledged).
    func sendOnChannel(_ id: UInt16, _ message: DataChannelMessage, promise: EventLoopPromise<Void>) {
        guard let record = channels[id], !record.closing else {
            promise.fail(ConduitError(.sessionClosed, "data channel \(id) to \(remoteDescription) is closed"))
            return
        }
        var delivery = record.open.channelType.reliability
        if !record.acked { delivery.ordered = true }
        message.bytes.withUnsafeBytes { send(stream: id, ppid: message.kind.ppid(count: message.bytes.count), bytes: $0, delivery: delivery, promise: promise) }
    }

    /// Closes a channel from our side: reset our outgoing stream; the peer resets its own in turn.
    func closeChannel(_ id: UInt16) {
        guard var record = channels[id], !record.closing else { return }
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
        if allocator.isOurs(stream) { allocator.release(stream) }
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

public import ConduitCore

/// Labeled channels on the client: declared in the configuration, sent right after joining;
/// messages fragmented like track messages; received per sender and channel.
extension ConferenceMachine {
    /// The channels the relay confirmed, by label.
    public var channels: [ChannelLabel: ChannelInfo] { channelInfos }

    mutating func declareChannelsAfterJoining() {
        guard !configuration.channels.isEmpty else { return }
        sessions.controlOut.append(TaggedFrame(RoomControlFrame.declareChannels(Array(configuration.channels.prefix(RoomControlFrame.maxChannels))).encoded))
    }

    mutating func handleChannelsAnswer(_ infos: [ChannelInfo]) {
        for info in infos {
            channelInfos[info.declaration.label] = info
            channelLabels[info.channelID] = info.declaration.label
        }
        sessions.events.append(.channelsReady(infos))
    }

    /// Queues one message on a labeled channel this side declared with a sending direction.
    /// `compressed` says the bytes are already zlib-compressed (the runtime does that when the
    /// channel was declared with `compress`).
    public mutating func sendChannel(_ label: ChannelLabel, bytes: [UInt8], compressed: Bool, now: ConduitInstant) -> EnqueueResult {
        if let ended = endedFailure { return ended }
        guard let info = channelInfos[label], info.declaration.direction.sends else {
            return .failed(ConduitError(.sessionClosed, "channel \(label) is not declared for sending"))
        }
        guard bytes.count <= ChannelFrameHeader.maxMessageBytes else {
            return .failed(ConduitError(.messageTooLarge, "\(bytes.count) bytes exceed the \(ChannelFrameHeader.maxMessageBytes)-byte limit of a channel message"))
        }
        guard trackQueueFits(bytes.count) else { return .queueFull }
        let header = ChannelFrameHeader(channelID: info.channelID, reliability: info.declaration.reliability, compressed: compressed, sender: 0).bytes
        let messageID = channelMessageIDs[info.channelID, default: 0]
        channelMessageIDs[info.channelID] = messageID &+ 1
        queueRelayMessage(
            bytes, header: header, id: info.channelID, messageID: messageID,
            channel: FrameTag.labeledChannel(info.channelID), reliability: info.declaration.reliability, now: now
        )
        return .queued(messageID: messageID)
    }

    mutating func handleChannelFrame(_ datagram: UnsafeRawBufferPointer, now: ConduitInstant) {
        guard isConnected,
            let header = try? ChannelFrameHeader.parse(datagram),
            let (inner, payload) = try? DataFrameHeader.parse(UnsafeRawBufferPointer(rebasing: datagram[ChannelFrameHeader.size...])),
            inner.subgroupID == header.channelID
        else {
            sessions.statistics.malformedDatagrams += 1
            return
        }
        guard let label = channelLabels[header.channelID], let info = channelInfos[label], info.declaration.direction.receives else {
            sessions.statistics.droppedClosedSession += 1
            return
        }
        guard let sender = members[header.sender] else {
            sessions.statistics.droppedUnknownSender += 1
            return
        }
        let key = UInt32(header.sender) << 16 | UInt32(header.channelID)
        if channelReassemblers[key] == nil {
            guard channelReassemblers.count < configuration.maxSenders else {
                sessions.statistics.droppedUnknownSender += 1
                return
            }
            channelReassemblers[key] = Reassembler(configuration: configuration.session.reassembly)
        }
        let body = UnsafeRawBufferPointer(rebasing: datagram[ChannelFrameHeader.size...])
        guard case .complete(let message) = channelReassemblers[key]!.ingest(inner, payload: UnsafeRawBufferPointer(rebasing: body[payload]), now: now) else {
            return
        }
        sessions.statistics.messagesDelivered += 1
        let senderHeader: [UInt8] = info.declaration.senderHeader ? [UInt8(header.sender >> 8), UInt8(header.sender & 0xFF)] : []
        sessions.events.append(.channelMessage(label, from: sender.peer, header: senderHeader, message.bytes, compressed: header.compressed))
    }
}

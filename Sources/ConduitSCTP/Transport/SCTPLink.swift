#if SCTP
public import ConduitCore
import CUsrsctpSupport
import NIOCore
import Synchronization

/// A Conduit call's link over one SCTP association: each frame written is one SCTP message on
/// the data channel of its Conduit channel (see ``SCTPConduitMapping``); every message received,
/// on any channel, is one datagram for the reader.
public final class SCTPLink: TransportLink {
    /// Reliable and ordered for the call (SCTP itself retransmits and orders), with partial reliability for unreliable session types.
    public let capabilities = SCTPConduitMapping.capabilities
    public let remoteDescription: String
    let connection: SCTPConnection
    /// The transport's logger and counters, told once when the link closes.
    private let observer: SCTPObserver?
    private let reported = Atomic<Bool>(false)

    /// How long a goodbye waits for the frames written before it.
    static let goodbyeDrainLimit = Duration.seconds(10)
    /// How long ``close()`` waits for data written and not yet acknowledged: a few delayed-SACK
    /// intervals (RFC 9260 section 6.2: at most 500 ms, usrsctp's default 200 ms).
    static let closeDrainLimit = Duration.seconds(1)

    init(connection: SCTPConnection, observer: SCTPObserver? = nil) {
        self.connection = connection
        self.remoteDescription = connection.remoteDescription
        self.observer = observer
    }

    /// Sends each frame as one SCTP message on its data session's channel (opened on first use) and returns once usrsctp has taken the batch; a goodbye goes only once everything before it is acknowledged. Throws `protocolViolation` for a frame over the limit, `connectionClosed` once the association is gone.
    public func write(_ batch: DatagramBatch) async throws(ConduitError) {
        guard !batch.isEmpty else { return }
        var goodbye: Int?
        for index in 0..<batch.count {
            let count = batch.range(of: index).count
            if count > capabilities.maxDatagramSize {
                throw ConduitError(.protocolViolation, "a \(count)-byte datagram exceeds this SCTP link's limit of \(capabilities.maxDatagramSize)")
            }
            if goodbye == nil, batch.tag(at: index).isBarrier { goodbye = index }
        }
        guard let goodbye else { return try await send(batch, 0..<batch.count) }
        // Streams are independent, so a goodbye could overtake earlier frames: send it once they
        // are acknowledged.
        try await send(batch, 0..<goodbye)
        _ = await waitForAcknowledgement(channel: nil, timeout: Self.goodbyeDrainLimit)
        try await send(batch, goodbye..<batch.count)
    }

    private func send(_ batch: DatagramBatch, _ range: Range<Int>) async throws(ConduitError) {
        guard !range.isEmpty else { return }
        let connection = self.connection
        try await connection.stack.run(.connectionClosed, "writing to \(remoteDescription) failed") { () -> EventLoopFuture<Void> in
            let promise = connection.stack.loop.makePromise(of: Void.self)
            for index in range {
                let failed = batch.withDatagram(index) { frame -> ConduitError? in
                    do throws(ConduitError) {
                        let (stream, delivery) = try connection.conduitStream(for: frame, tag: batch.tag(at: index))
                        connection.send(stream: stream, ppid: .binary, bytes: frame, delivery: delivery, promise: index == range.upperBound - 1 ? promise : nil)
                        return nil
                    } catch {
                        return error
                    }
                }
                if let failed {
                    promise.fail(failed)
                    break
                }
            }
            return promise.futureResult
        }
    }

    /// Waits until the peer acknowledged everything written on the association, it closed, or
    /// `timeout` passed. usrsctp counts unacknowledged data per association, not per stream, so
    /// the wait covers every channel whatever `channel` says, and the frames are only counted.
    public func waitForAcknowledgement(channel: UInt32?, timeout: Duration) async -> LinkAcknowledgement {
        let connection = self.connection
        let (seconds, attoseconds) = timeout.components
        let deadline = NIODeadline.now() + .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        // Once the association is gone, what it still owed when it ended.
        let outstanding = (try? await connection.stack.run(.connectionClosed, "waiting for acknowledgement") { connection.whenAcknowledged(by: deadline) }) ?? 0
        return LinkAcknowledgement(unacknowledgedFrames: outstanding)
    }

    /// The next frames received from the peer, or nil once the association ended (by either
    /// side, in whatever way: ``closeReason()`` says which). Not an error even after an ABORT:
    /// usrsctp aborts when a socket closes with unread data, so a peer's ordinary close can arrive
    /// as one.
    public func read() async throws(ConduitError) -> DatagramBatch? {
        guard let messages = await connection.linkInbox.next() else { return nil }
        var batch = DatagramBatch(reservingBytes: messages.reduce(0) { $0 + $1.count }, datagrams: messages.count)
        for message in messages { batch.append(message) }
        return batch
    }

    /// Shuts the association down gracefully (what was written is still
    /// delivered). While the association is up and data written on it is unacknowledged, it
    /// first waits (at most 1 s) for the peer's acknowledgement: a peer that hangs
    /// up right after its last read acknowledges that data a moment later, and a flush waiting
    /// beside this close should see it acknowledged rather than cut off by our own teardown.
    public func close() async {
        _ = await waitForAcknowledgement(channel: nil, timeout: Self.closeDrainLimit)
        let connection = self.connection
        // What was received stays readable, then reads end (TransportLink's promise).
        connection.linkInbox.finish(discarding: false)
        let statistics = try? await connection.stack.run { () -> SCTPAssociationStatistics in
            let statistics = connection.currentStatistics
            connection.close()
            return statistics
        }
        if let observer, let statistics, !reported.exchange(true, ordering: .relaxed) {
            observer.linkClosed(remote: remoteDescription, statistics: statistics)
        }
    }

    /// usrsctp's view of the path as a `LinkStatistics`: packets and the path MTU (usrsctp keeps
    /// its RTT, window and losses to itself here).
    public func linkStatistics() async -> LinkStatistics? {
        let counts = await statistics()
        return LinkStatistics(packetsSent: counts.packetsSent, packetsReceived: counts.packetsReceived, mtu: capabilities.mtu)
    }

    /// Why the link's association ended; nil while it is up.
    public func closeReason() async -> SCTPCloseReason? { connection.endReason }

    /// Counts for this link's association.
    public func statistics() async -> SCTPAssociationStatistics {
        let connection = self.connection
        return (try? await connection.stack.run { connection.currentStatistics }) ?? SCTPAssociationStatistics()
    }
}

extension SCTPConnection {
    /// The stream and delivery of one Conduit frame, as its writer tagged it, opening its channel
    /// on first use and giving its stream the tag's priority.
    func conduitStream(for frame: UnsafeRawBufferPointer, tag: FrameTag) throws(ConduitError) -> (UInt16, Reliability) {
        let (key, delivery) = (tag.channel, tag.delivery)
        var streamDelivery = delivery
        if let stream = conduitStreams[key] {
            if channels[stream]?.acked != true { streamDelivery.ordered = true }
            if key != FrameTag.controlChannel { schedule(stream, tag.priority) }
            return (stream, streamDelivery)
        }
        let type = SCTPConduitMapping.sessionType(of: frame)
        let reliability = type.map(Reliability.for) ?? delivery
        let open = DataChannelOpen(
            reliability: reliability,
            priority: SCTPConduitMapping.channelPriority(tag.priority),
            label: SCTPConduitMapping.label(forChannel: key, type: type),
            protocol: SCTPConduitMapping.protocolName
        )
        let (stream, _) = try openChannel(open, withHandle: false)
        conduitStreams[key] = stream
        streamDelivery.ordered = true
        schedule(stream, tag.priority)
        return (stream, streamDelivery)
    }

    /// Sets `stream`'s scheduling value when it changes (a session reopened with another
    /// priority reuses its channel). A refusal leaves the stream at usrsctp's default, the
    /// highest, and is counted.
    private func schedule(_ stream: UInt16, _ priority: OutboundSessionOptions.Priority) {
        let value = SCTPConduitMapping.schedulingValue(priority)
        guard streamPriorities[stream] != value, let socket else { return }
        streamPriorities[stream] = value
        if conduit_sctp_set_stream_priority(socket, stream, value) != 0 { statistics.priorityRefused += 1 }
    }
}
#endif

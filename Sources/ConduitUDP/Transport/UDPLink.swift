@_spi(Benchmarks) public import ConduitCore
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One established UDP link: RTP datagrams to and from one peer address and SSRC.
///
/// Its state lives on the event loop of the datagram channel it sends through (its own channel on
/// the client side, the listener's on the server side); received datagrams reach the reader once
/// per read burst through a bounded inbox.
public final class UDPLink: TransportLink {
    /// Unreliable and unordered datagrams of at most the agreed `mtu` minus the 12-byte RTP header; the reliability engine runs above.
    public let capabilities: TransportCapabilities
    public let remoteDescription: String
    /// This end's SSRC and the peer's.
    public let localSSRC: UInt32
    /// The SSRC the peer sends with; RTP with another SSRC is dropped and counted.
    public let remoteSSRC: UInt32

    /// The event loop of the channel this link sends through (its channel may change, its loop not).
    let loop: any EventLoop
    private let state: NIOLoopBoundBox<State>
    private let inbox = UDPInbox()
    private let origin: NIODeadline
    private let closed = Atomic<Bool>(false)
    /// Run on the event loop once the link is closed (either side): frees what it holds there.
    private let detach: @Sendable (UDPLink) -> EventLoopFuture<Void>
    /// SRTP for what this link sends (the socket's filter, shared with its listener or handshake).
    private let srtp: NIOLoopBoundBox<UDPSRTPFilter>?
    /// The transport's logger and counters, told when the link ends.
    private let observer: UDPObserver?
    /// The socket, for writes gathered straight from the caller's batch (nil: through the channel).
    private let directSocket: UDPDirectSocket?
    /// Client side: opens a fresh socket on the link's loop, delivering to the link's handshake
    /// (for ``moveToNewSocket()``); nil on the listener side.
    private let openSocket: (@Sendable () async throws(ConduitError) -> any Channel)?

    private struct State {
        /// The datagram channel this link sends through, and where to.
        var channel: any Channel
        /// The peer's address: on the listener side it changes when the client's path is
        /// validated (see ``UDPPathValidator``).
        var peer: SocketAddress
        /// Whether writes may go straight to ``directSocket`` (false once the socket was replaced).
        var directWrites = true
        /// The newest RTP sequence number from the peer: only newer datagrams may open a path validation.
        var highWater = RTPSequenceHighWater()
        var sequence: UInt16
        /// Runs of equal-sized datagrams go out as one write the kernel segments (UDP_SEGMENT).
        /// Turned off for good if such a write fails (a device that cannot do it).
        var segmentationOffload: Bool
        var statistics = UDPLinkStatistics()
        var received = DatagramBatch()
        var isOpen = true
        /// Batches handed to the channel whose writes have not completed: while there are any,
        /// later batches queue behind them there instead of overtaking them on the direct path.
        var channelWritesInFlight = 0
    }

    /// Created on `channel`'s event loop.
    init(
        channel: any Channel,
        peer: SocketAddress,
        localSSRC: UInt32,
        remoteSSRC: UInt32,
        mtu: Int,
        offload: Bool = false,
        srtp: NIOLoopBoundBox<UDPSRTPFilter>? = nil,
        observer: UDPObserver? = nil,
        directSocket: UDPDirectSocket? = nil,
        openSocket: (@Sendable () async throws(ConduitError) -> any Channel)? = nil,
        detach: @escaping @Sendable (UDPLink) -> EventLoopFuture<Void>
    ) {
        var random = SystemRandomNumberGenerator()
        self.capabilities = UDPOptions.capabilities(mtu: mtu)
        self.remoteDescription = "udp://\(SocketAddressing.describe(peer))"
        self.localSSRC = localSSRC
        self.remoteSSRC = remoteSSRC
        self.loop = channel.eventLoop
        self.openSocket = openSocket
        // SRTP protects datagram by datagram; those go out one write each.
        self.state = NIOLoopBoundBox(
            State(channel: channel, peer: peer, sequence: random.next(), segmentationOffload: offload && srtp == nil), eventLoop: channel.eventLoop)
        self.origin = .now()
        self.detach = detach
        self.srtp = srtp
        self.observer = observer
        // SRTP protects each datagram into a buffer of its own; that one goes through the channel.
        self.directSocket = srtp == nil ? directSocket : nil
    }

    /// On the loop: the channel this link sends through.
    var channel: any Channel { state.value.channel }
    /// On the loop: the peer's address.
    var peer: SocketAddress { state.value.peer }

    /// On the loop, listener side: the client's new address passed path validation; send there
    /// from now on (segmenting to it only if `offload` allows).
    func move(to address: SocketAddress, offload: Bool) {
        state.value.peer = address
        state.value.segmentationOffload = state.value.segmentationOffload && offload
    }

    /// The address of the socket this link sends from now (it changes with ``moveToNewSocket()``).
    func localAddress() async -> SocketAddress? {
        try? await loop.submit { self.state.value.channel.localAddress }.get()
    }

    /// On the loop: whether `sequence` is newer than every RTP sequence number received so far.
    func isNewer(_ sequence: UInt16) -> Bool { state.value.highWater.isNewer(sequence) }

    /// Client side: sends and receives through a new socket on a new port from now on, as a NAT
    /// rebinding or a move to another network does to a client's address; the old socket closes.
    /// The listener validates the new address before it sends there (tests use this).
    package func moveToNewSocket() async throws(ConduitError) {
        guard let openSocket else { throw ConduitError(.unsupportedByTransport, "only a client's UDP link can move to a new socket") }
        let fresh = try await openSocket()
        let old = try? await loop.submit { () -> (any Channel)? in
            guard self.state.value.isOpen else { return nil }
            let old = self.state.value.channel
            self.state.value.channel = fresh
            self.state.value.directWrites = false
            return old
        }.get()
        if let old { try? await old.close() } else { try? await fresh.close() }
    }

    /// On the event loop, once, when the link stops being open: the totals to the observer.
    private func reportEnd(_ reason: String) {
        observer?.linkEnded(remote: remoteDescription, statistics: state.value.statistics, reason: reason)
    }

    /// `buffer` as it goes on the wire: SRTP-protected when SRTP is on (nil: refused, not sent).
    func sealed(_ buffer: ByteBuffer) -> ByteBuffer? {
        guard let srtp else { return buffer }
        return srtp.value.protect(buffer, allocator: channel.allocator)
    }

    func countSRTPDrop() { state.value.statistics.droppedSRTP += 1 }

    // MARK: Writing

    /// The event loop of the channel this link sends through.
    public var preferredExecutor: (any SerialExecutor)? { loop.executor }

    /// Sends each datagram of the batch as one RTP packet (SRTP-protected when configured), in one segmented write where offload allows. Does not wait for the peer; throws `connectionClosed` once the link closed.
    nonisolated(nonsending) public func write(_ batch: DatagramBatch) async throws(ConduitError) {
        guard !batch.isEmpty else { return }
        for index in 0..<batch.count where batch.range(of: index).count > capabilities.maxDatagramSize {
            throw ConduitError(
                .protocolViolation,
                "a \(batch.range(of: index).count)-byte datagram exceeds this UDP link's limit of \(capabilities.maxDatagramSize) (mtu \(capabilities.mtu + RTPHeader.size) less the RTP header)"
            )
        }
        guard !closed.load(ordering: .relaxed) else { throw closedError }
        // On the loop already (a driver on ``preferredExecutor``): send now, no task hop.
        let future = loop.inEventLoop ? send(batch) : loop.flatSubmit { self.send(batch) }
        do {
            // Not `future.get()`, which is nonisolated and would resume off the caller's executor.
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                future.whenComplete { continuation.resume(with: $0) }
            }
        } catch let error as ConduitError {
            throw error
        } catch {
            throw ConduitError(.connectionClosed, "writing to \(remoteDescription) failed: \(error)")
        }
    }

    private var closedError: ConduitError {
        ConduitError(.connectionClosed, "the UDP link to \(remoteDescription) is closed")
    }

    /// On the loop: one RTP datagram per batch entry, one flush; the future completes when the
    /// last datagram has gone to the kernel (backpressure for the writer).
    private func send(_ batch: DatagramBatch) -> EventLoopFuture<Void> {
        guard state.value.isOpen else { return loop.makeFailedFuture(closedError) }
        let timestamp = UInt32(truncatingIfNeeded: (NIODeadline.now().uptimeNanoseconds &- origin.uptimeNanoseconds) / 1_000_000)
        var sequence = state.value.sequence
        var index = 0
        state.value.statistics.datagramsSent += batch.count
        state.value.statistics.bytesSent += batch.byteCount
        // Direct writes only with segmentation offload: datagram by datagram they would cost a
        // system call each, where the channel sends a batch with one `sendmmsg`.
        if let directSocket, state.value.directWrites, state.value.segmentationOffload, state.value.channelWritesInFlight == 0, channel.isActive {
            index = sendDirect(batch, through: directSocket, sequence: &sequence, timestamp: timestamp)
            if index == batch.count {
                state.value.sequence = sequence
                return loop.makeSucceededVoidFuture()
            }
        }
        // Through the channel: what the direct path did not send (the kernel's buffer was full,
        // or a write failed, which the channel then reports as for any write of its own).
        let promise = loop.makePromise(of: Void.self)
        state.value.channelWritesInFlight += 1
        promise.futureResult.whenComplete { [state] _ in state.value.channelWritesInFlight -= 1 }
        while index < batch.count {
            let end = state.value.segmentationOffload ? Self.endOfRun(in: batch, from: index) : index + 1
            let isLast = end == batch.count
            if end - index > 1 {
                writeSegmented(batch, index..<end, sequence: sequence, timestamp: timestamp, promise: isLast ? promise : nil)
            } else {
                writeOne(batch, index, sequence: sequence, timestamp: timestamp, promise: isLast ? promise : nil)
            }
            sequence &+= UInt16(truncatingIfNeeded: end - index)
            index = end
        }
        channel.flush()
        state.value.sequence = sequence
        return promise.futureResult.flatMapError { [state, loop] error in
            // A refused datagram (ECONNREFUSED after an ICMP error, say) is a lost datagram, and
            // so is one a replaced socket took down with it (the link's current one is asked).
            guard state.value.channel.isActive else { return loop.makeFailedFuture(error) }
            state.value.statistics.sendErrors += 1
            return loop.makeSucceededVoidFuture()
        }
    }

    /// Writes the batch's datagrams from its storage, run by run, until one write is not taken;
    /// returns the index of the first datagram not sent (the batch's count when all were).
    private func sendDirect(_ batch: DatagramBatch, through socket: UDPDirectSocket, sequence: inout UInt16, timestamp: UInt32) -> Int {
        var index = 0
        while index < batch.count {
            let end = Self.endOfRun(in: batch, from: index)
            let first = sequence
            let start = index
            let segmentSize = end - index > 1 ? batch.range(of: index).count + RTPHeader.size : nil
            let sent = socket.send(batch, index..<end, to: peer, segmentSize: segmentSize) { datagram in
                RTPHeader(sequence: first &+ UInt16(truncatingIfNeeded: datagram - start), timestamp: timestamp, ssrc: localSSRC)
            }
            guard sent else { break }
            if segmentSize != nil { state.value.statistics.segmentedWrites += 1 }
            sequence &+= UInt16(truncatingIfNeeded: end - index)
            index = end
        }
        return index
    }

    /// Segments per offloaded write, at most, and bytes (an IPv4 datagram's limit, with room).
    static let maxSegments = 64
    static let maxSegmentedBytes = 65_000

    /// The end of the run starting at `start` that can go as one offloaded write: datagrams of
    /// the first one's size, the last possibly shorter (the kernel's rule for UDP_SEGMENT).
    static func endOfRun(in batch: DatagramBatch, from start: Int) -> Int {
        let size = batch.range(of: start).count + RTPHeader.size
        var end = start + 1
        var bytes = size
        while end < batch.count, end - start < maxSegments {
            let next = batch.range(of: end).count + RTPHeader.size
            guard next <= size, bytes + next <= maxSegmentedBytes else { break }
            bytes += next
            end += 1
            if next < size { break }
        }
        return end
    }

    private func writeOne(_ batch: DatagramBatch, _ index: Int, sequence: UInt16, timestamp: UInt32, promise: EventLoopPromise<Void>?) {
        var buffer = channel.allocator.buffer(capacity: RTPHeader.size + batch.range(of: index).count)
        RTPHeader(sequence: sequence, timestamp: timestamp, ssrc: localSSRC).write(into: &buffer)
        batch.withDatagram(index) { _ = buffer.writeBytes($0) }
        PayloadCopies.countSend(batch.range(of: index).count)
        guard let sealed = sealed(buffer) else {
            state.value.statistics.sendErrors += 1
            promise?.succeed()
            return
        }
        // A datagram above the size every path carries may exceed the interface's MTU (a path
        // MTU probe): the kernel refuses it (EMSGSIZE, don't-fragment is set), and the loss is
        // counted here, since no other promise sees it. Smaller ones keep the allocation-free write.
        if promise == nil, sealed.readableBytes > UDPTransport.Configuration.defaultMTU {
            let refused = loop.makePromise(of: Void.self)
            refused.futureResult.whenFailure { [state, channel] _ in
                if channel.isActive { state.value.statistics.sendErrors += 1 }
            }
            channel.write(AddressedEnvelope(remoteAddress: peer, data: sealed), promise: refused)
            return
        }
        channel.write(AddressedEnvelope(remoteAddress: peer, data: sealed), promise: promise)
    }

    /// One buffer of RTP datagrams back to back, which the kernel splits at the first one's size.
    private func writeSegmented(_ batch: DatagramBatch, _ run: Range<Int>, sequence: UInt16, timestamp: UInt32, promise: EventLoopPromise<Void>?) {
        let segmentSize = batch.range(of: run.lowerBound).count + RTPHeader.size
        var buffer = channel.allocator.buffer(capacity: segmentSize * run.count)
        var sequence = sequence
        for index in run {
            RTPHeader(sequence: sequence, timestamp: timestamp, ssrc: localSSRC).write(into: &buffer)
            batch.withDatagram(index) { _ = buffer.writeBytes($0) }
            PayloadCopies.countSend(batch.range(of: index).count)
            sequence &+= 1
        }
        state.value.statistics.segmentedWrites += 1
        let metadata = AddressedEnvelope<ByteBuffer>.Metadata(ecnState: .transportNotCapable, packetInfo: nil, segmentSize: segmentSize)
        let written = promise ?? loop.makePromise(of: Void.self)
        // The caller's promise counts a failed write as one send error; a run's own counts every datagram.
        let lost = promise == nil ? run.count : 0
        written.futureResult.whenFailure { [state, channel] error in
            // A run too large for the path (EMSGSIZE, one of the errors SwiftNIO survives):
            // these datagrams are lost, later ones go singly. (Errors NIO does not survive close
            // the socket; that is why `auto` segments only to loopback peers.)
            // NIO reports EMSGSIZE as `ChannelError.writeMessageTooLarge`.
            guard channel.isActive else { return }
            state.value.statistics.sendErrors += lost
            guard Self.isTooLarge(error) else { return }
            state.value.segmentationOffload = false
            state.value.statistics.segmentationOffloadFailures += 1
        }
        channel.write(AddressedEnvelope(remoteAddress: peer, data: buffer, metadata: metadata), promise: written)
    }

    /// EMSGSIZE, as NIO reports it.
    static func isTooLarge(_ error: any Error) -> Bool {
        if case ChannelError.writeMessageTooLarge? = error as? ChannelError { return true }
        return (error as? IOError)?.errnoCode == EMSGSIZE
    }

    // MARK: Receiving, on the loop

    /// An RTP datagram from the peer's address, or (`fromPeer` false) from an address being
    /// validated, whose sequence number does not raise the high water: a forgery from elsewhere
    /// cannot make the real client's next datagrams look old.
    func receive(rtp buffer: ByteBuffer, header: RTPHeader, fromPeer: Bool = true) {
        guard state.value.isOpen else { return }
        guard header.ssrc == remoteSSRC else {
            state.value.statistics.droppedStranger += 1
            return
        }
        guard buffer.readableBytes <= capabilities.mtu + RTPHeader.size else {
            state.value.statistics.droppedMalformed += 1
            return
        }
        buffer.withUnsafeReadableBytes { bytes in
            state.value.received.append(UnsafeRawBufferPointer(rebasing: bytes[RTPHeader.size...]))
            PayloadCopies.countReceive(bytes.count - RTPHeader.size)
        }
        if fromPeer { state.value.highWater.record(header.sequence) }
        state.value.statistics.datagramsReceived += 1
        state.value.statistics.bytesReceived += buffer.readableBytes - RTPHeader.size
    }

    func countMalformed() { state.value.statistics.droppedMalformed += 1 }
    func countStranger() { state.value.statistics.droppedStranger += 1 }

    /// End of a read burst: hands what arrived to the reader.
    func flushReceived() {
        guard !state.value.received.isEmpty else { return }
        let batch = state.value.received
        // The next burst's batch starts at this one's size (up to 256 KiB) instead of growing
        // from empty, which copied each burst's bytes again at every doubling.
        state.value.received = DatagramBatch(reservingBytes: min(batch.byteCount, 1 << 18), datagrams: min(batch.count, 256))
        let accepted = inbox.deliver(batch)
        state.value.statistics.droppedQueueFull += batch.count - accepted
    }

    /// A BYE from the peer's address: reads end once what arrived before it is read.
    func receive(byeFrom ssrc: UInt32) {
        guard ssrc == remoteSSRC else {
            state.value.statistics.droppedStranger += 1
            return
        }
        guard state.value.isOpen else { return }
        flushReceived()
        state.value.isOpen = false
        closed.store(true, ordering: .relaxed)
        inbox.finish(discarding: false)
        reportEnd("the peer said bye")
        _ = detach(self)
    }

    // MARK: Reading and closing

    /// The next datagrams received from the peer, or nil once the link closed (BYE, `close()`, or the socket closed).
    nonisolated(nonsending) public func read() async throws(ConduitError) -> DatagramBatch? { await inbox.read() }

    /// Sends BYE (unless the peer already said it), ends reads, and releases the socket or the
    /// listener's table entry. Never waits for the peer, so it returns even if the peer vanished.
    public func close() async {
        closed.store(true, ordering: .relaxed)
        inbox.finish(discarding: true)
        let future = loop.flatSubmit { () -> EventLoopFuture<Void> in
            guard self.state.value.isOpen else { return self.loop.makeSucceededVoidFuture() }
            self.state.value.isOpen = false
            self.reportEnd("closed")
            var buffer = self.channel.allocator.buffer(capacity: 8)
            UDPControlMessage.bye(ssrc: self.localSSRC).write(into: &buffer)
            guard let sealed = self.sealed(buffer) else { return self.detach(self) }
            let sent = self.channel.writeAndFlush(AddressedEnvelope(remoteAddress: self.peer, data: sealed))
            return sent.flatMapError { _ in self.loop.makeSucceededVoidFuture() }.flatMap { self.detach(self) }
        }
        try? await future.get()
    }

    /// What this link has sent, received and dropped so far.
    public func statistics() async -> UDPLinkStatistics {
        (try? await loop.submit { self.state.value.statistics }.get()) ?? UDPLinkStatistics()
    }
}

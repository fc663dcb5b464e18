#if SCTP
import CUsrsctp
import CUsrsctpSupport
import ConduitCore
import DequeModule
import Logging
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One SCTP association (one usrsctp one-to-one socket) and its data channels. Confined to the
/// stack's event loop: every method runs there. The public faces are ``SCTPAssociation`` and
/// ``DataChannel`` (standard peers) and ``SCTPLink`` (Conduit peers).
final class SCTPConnection: @unchecked Sendable {
    /// What the association carries: decided by the connecting side, or, on the accepting side,
    /// by the protocol of the first channel the peer opens (``SCTPConduitMapping/protocolName``).
    enum Mode { case undecided, channels, conduit }
    enum State { case connecting, established, closed }

    let stack: SCTPStack
    let address: UInt
    let isClient: Bool
    let route: SCTPRoute
    let limits: SCTPLimits

    private(set) var mode: Mode
    private(set) var state = State.connecting
    var socket: OpaquePointer?
    private var listeningSocket: OpaquePointer?
    var allocator: StreamIDAllocator
    var channels: [UInt16: ChannelRecord] = [:]
    private var pendingSends = Deque<PendingSend>()
    private var serviceScheduled = false
    /// Messages read in parts, per stream (notifications under -1): with I-DATA (fragment
    /// interleave level 2) usrsctp may hand out parts of messages of different streams in turn.
    var partials: [Int: PartialMessage] = [:]
    /// Bytes held in `partials`, at most ``maxPartialBytes``.
    var partialBytes = 0
    /// What partly read messages may hold together: eight messages of the largest size, so a
    /// peer that starts many large messages at once cannot grow it without bound.
    static let maxPartialBytes = 8 * DataChannel.maxMessageSize
    /// The peer shut down (SHUTDOWN received, reads at their end): the association stays up until
    /// what this side sent is acknowledged (RFC 9260 section 9.2), so that can still be seen.
    var peerIsShuttingDown = false
    /// Chunks still owed when the association ended (nil while it lives).
    private(set) var outstandingAtEnd: Int?
    /// Waits for everything written to be acknowledged (``whenAcknowledged(by:)``), by number.
    var acknowledgementWaiters: [UInt64: AcknowledgementWaiter] = [:]
    var nextAcknowledgementWaiter: UInt64 = 0
    private var establishedPromise: EventLoopPromise<Void>?
    var statistics = SCTPAssociationStatistics()

    /// Conduit mode: every user message of every channel, in arrival order, for the link's reader.
    let linkInbox: SCTPInbox<[UInt8]>
    /// Conduit mode: our stream per Conduit link channel (`FrameTag.channel`).
    var conduitStreams: [UInt32: UInt16] = [:]
    /// Conduit mode: the scheduling value (SCTP_SS_VALUE) set on each of our streams that carries a session.
    var streamPriorities: [UInt16: UInt16] = [:]
    /// Channels mode: channels the peer opened, for `acceptChannel`.
    let acceptInbox: SCTPInbox<DataChannel>
    /// Called once the mode is known on the accepting side (the listener hands the association on).
    var onModeDecided: ((SCTPConnection) -> Void)?
    /// Called once, when the association is gone (either side); the route is then released.
    var onClosed: ((SCTPConnection) -> Void)?
    /// Accepting side: whether a first channel with the Conduit protocol makes this a Conduit link.
    var conduitAware = false
    /// Where the end of the association is logged, with its reason (`notice` when abnormal).
    var logger = SCTPConnection.silentLogger
    /// Why the association ended, set once at teardown; read from any thread.
    private let endReasonBox = TSanVisibleMutex<SCTPCloseReason?>(nil)

    static let silentLogger = Logger(label: "conduit", factory: { _ in SwiftLogNoOpLogHandler() })

    struct PendingSend {
        var stream: UInt16
        var ppid: PayloadProtocolIdentifier
        var bytes: [UInt8]
        var delivery: Reliability
        var promise: EventLoopPromise<Void>?
    }

    init(stack: SCTPStack, address: UInt, isClient: Bool, mode: Mode, route: SCTPRoute, limits: SCTPLimits) {
        self.stack = stack
        self.address = address
        self.isClient = isClient
        self.mode = mode
        self.route = route
        self.limits = limits
        self.allocator = StreamIDAllocator(isClient: isClient, streamCount: Int(limits.streams))
        self.linkInbox = SCTPInbox(maxItems: 8192, maxBytes: 8 << 20, size: { $0.count })
        self.acceptInbox = SCTPInbox(maxItems: 1024, maxBytes: Int.max, size: { _ in 1 })
        let loop = stack.loop
        // A cycle (inbox → closure → connection → inbox) until teardown clears it.
        linkInbox.setOnSpace { [self] in loop.execute { self.scheduleService() } }
    }

    var remoteDescription: String { "sctp+udp://\(route.describe)" }
    var hasPendingSends: Bool { !pendingSends.isEmpty }

    // MARK: Opening

    /// Client: a socket connecting to the peer's SCTP port. The future completes at COMM_UP.
    func startConnecting() -> EventLoopFuture<Void> {
        let promise = stack.loop.makePromise(of: Void.self)
        establishedPromise = promise
        guard let socket = conduit_sctp_socket(sctpUpcall, SCTPStack.pointer(address), limits.settings) else {
            fail(connecting: SCTPErrors.system("cannot create an SCTP socket", errno))
            return promise.futureResult
        }
        self.socket = socket
        var error = conduit_sctp_bind(socket, address, limits.localPort)
        if error == 0 {
            error = conduit_sctp_connect(socket, address, limits.remotePort)
            if error == EINPROGRESS { error = 0 }
        }
        if error != 0 { fail(connecting: SCTPErrors.system("cannot start an SCTP association", error)) }
        return promise.futureResult
    }

    /// Server: a listening socket for this one peer; its association is accepted when it is up.
    func startListening() throws(ConduitError) {
        guard let socket = conduit_sctp_socket(sctpUpcall, SCTPStack.pointer(address), limits.settings) else {
            throw SCTPErrors.system("cannot create an SCTP socket", errno)
        }
        listeningSocket = socket
        var error = conduit_sctp_bind(socket, address, limits.localPort)
        if error == 0 { error = conduit_sctp_listen(socket) }
        if error != 0 {
            usrsctp_close(socket)
            listeningSocket = nil
            throw SCTPErrors.system("cannot listen for an SCTP association", error)
        }
    }

    func fail(connecting error: ConduitError) {
        guard state == .connecting else { return }
        let promise = establishedPromise
        establishedPromise = nil
        teardown(abort: true, peerClosed: false, reason: .notEstablished(error.message))
        promise?.fail(error)
    }

    /// The connect timeout fired: abort with `error` unless already up.
    func connectTimedOut(_ error: ConduitError) { fail(connecting: error) }

    func established() {
        guard state == .connecting else { return }
        state = .established
        if let socket { statistics.interleaving = conduit_sctp_interleaving(socket) == 1 }
        let promise = establishedPromise
        establishedPromise = nil
        promise?.succeed()
    }

    func decideMode(_ mode: Mode) {
        guard self.mode == .undecided else { return }
        self.mode = mode
        onModeDecided?(self)
        onModeDecided = nil
    }

    // MARK: Packets in and out

    /// An SCTP packet from the peer (the payload of one UDP datagram), dropped and counted if its
    /// CRC32c is wrong (RFC 9260 section 6.8; usrsctp runs with the check left to us). Packets
    /// still go in after we closed, so that the SHUTDOWN exchange can finish while the route lingers.
    func input(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        statistics.packetsReceived += 1
        guard SCTPChecksum.isValid(bytes) else {
            statistics.droppedChecksum += 1
            return
        }
        usrsctp_conninput(SCTPStack.pointer(address), base, bytes.count, 0)
    }

    /// A packet usrsctp wants sent to the peer.
    func output(_ bytes: UnsafeRawBufferPointer) {
        statistics.packetsSent += 1
        route.send(bytes, stack: stack)
    }

    // MARK: Socket events

    func scheduleService() {
        guard !serviceScheduled else { return }
        serviceScheduled = true
        stack.loop.execute { [self] in
            serviceScheduled = false
            service()
        }
    }

    /// Accepts, reads and writes whatever the socket allows (after an upcall, never inside one:
    /// usrsctp holds locks while it calls us).
    private func service() {
        if socket == nil, let listening = listeningSocket {
            guard let accepted = conduit_sctp_accept(listening) else { return }
            _ = conduit_sctp_configure(accepted, sctpUpcall, SCTPStack.pointer(address), limits.settings)
            socket = accepted
            listeningSocket = nil
            usrsctp_close(listening)
            established()
        }
        guard socket != nil, state != .closed else { return }
        readAvailable()
        flushPendingSends()
        completeAcknowledgementWaiters()
    }

    // MARK: Sending

    /// Sends one message on `stream`, or queues it while the send buffer is full. `promise`
    /// completes once usrsctp has taken it.
    func send(stream: UInt16, ppid: PayloadProtocolIdentifier, bytes: UnsafeRawBufferPointer, delivery: Reliability, promise: EventLoopPromise<Void>?) {
        guard state != .closed, socket != nil || state == .connecting else {
            promise?.fail(closedError)
            return
        }
        if pendingSends.isEmpty, state == .established, let socket {
            let error = SCTPConnection.sendNow(socket, stream: stream, ppid: ppid, bytes: bytes, delivery: delivery)
            if error == 0 {
                statistics.messagesSent += 1
                promise?.succeed()
                return
            }
            guard error == EAGAIN || error == EWOULDBLOCK else {
                promise?.fail(sendFailure(error))
                return
            }
        }
        pendingSends.append(PendingSend(stream: stream, ppid: ppid, bytes: Array(bytes), delivery: delivery, promise: promise))
    }

    private static func sendNow(_ socket: OpaquePointer, stream: UInt16, ppid: PayloadProtocolIdentifier, bytes: UnsafeRawBufferPointer, delivery: Reliability) -> Int32 {
        let policy: (UInt16, UInt32) = switch delivery.limit {
        case .none: (UInt16(SCTP_PR_SCTP_NONE), 0)
        case .maxRetransmits(let count): (UInt16(SCTP_PR_SCTP_RTX), UInt32(count))
        case .maxPacketLifeTime(let milliseconds): (UInt16(SCTP_PR_SCTP_TTL), milliseconds)
        }
        // An SCTP message is never empty: empty messages go as one zero byte (RFC 8831 section 6.6).
        if bytes.isEmpty {
            var zero: UInt8 = 0
            return conduit_sctp_send(socket, &zero, 1, stream, ppid.rawValue, delivery.ordered ? 0 : 1, policy.0, policy.1)
        }
        return conduit_sctp_send(socket, bytes.baseAddress, bytes.count, stream, ppid.rawValue, delivery.ordered ? 0 : 1, policy.0, policy.1)
    }

    private func flushPendingSends() {
        guard state == .established, let socket else { return }
        while let next = pendingSends.first {
            let error = next.bytes.withUnsafeBytes { SCTPConnection.sendNow(socket, stream: next.stream, ppid: next.ppid, bytes: $0, delivery: next.delivery) }
            if error == EAGAIN || error == EWOULDBLOCK { return }
            pendingSends.removeFirst()
            if error == 0 {
                statistics.messagesSent += 1
                next.promise?.succeed()
            } else {
                next.promise?.fail(sendFailure(error))
            }
        }
    }

    /// A send refused by usrsctp. When the association is gone (the peer's ABORT, say), the
    /// notification saying why is still unread: read it first, so the error carries the reason.
    private func sendFailure(_ error: Int32) -> ConduitError {
        if state != .closed { readAvailable() }
        return state == .closed ? closedError : SCTPErrors.system("sending to \(remoteDescription) failed", error)
    }

    /// What operations on the ended association throw: its end, with the reason.
    var closedError: ConduitError {
        endReason?.error(remoteDescription) ?? ConduitError(.connectionClosed, "the SCTP association with \(remoteDescription) is closed")
    }

    /// Why the association ended; nil while it lives. Safe from any thread.
    var endReason: SCTPCloseReason? { endReasonBox.withLock { $0 } }

    /// Chunks not yet sent or acknowledged (0: everything written so far has arrived).
    var outstanding: Int {
        guard let socket, state == .established else { return 0 }
        return pendingSends.count + max(0, Int(conduit_sctp_outstanding(socket)))
    }

    // MARK: Stream reset (RFC 6525), for channels

    func resetOutgoing(_ streams: [UInt16]) {
        guard let socket, state == .established, !streams.isEmpty else { return }
        let error = streams.withUnsafeBufferPointer { conduit_sctp_reset_outgoing(socket, $0.baseAddress, UInt16(streams.count)) }
        // EALREADY/EBUSY: a reset is in flight; try again shortly.
        if error != 0 { retryReset(streams) }
    }

    func retryReset(_ streams: [UInt16]) {
        stack.loop.scheduleTask(in: .milliseconds(50)) { [weak self] in
            guard let self else { return }
            let still = streams.filter { self.channels[$0]?.awaitingOutgoingReset == true }
            self.resetOutgoing(still)
        }
    }

    // MARK: Closing

    /// The peer ended the association (SHUTDOWN, ABORT or loss): what arrived is still read.
    func peerClosed(_ reason: SCTPCloseReason) {
        guard state != .closed else { return }
        if state == .connecting {
            fail(connecting: ConduitError(.connectionFailed, "the SCTP association with \(remoteDescription) ended: \(reason)"))
            return
        }
        teardown(abort: false, peerClosed: true, reason: reason)
    }

    /// The peer sent SHUTDOWN (our reads hit the end): nothing more arrives, so readers see the
    /// end now, but the association is kept while usrsctp delivers what this side still owes, up
    /// to `limit`, then torn down as shut down by the peer.
    func peerShuttingDown(limit: TimeAmount = .seconds(2)) {
        guard state == .established, !peerIsShuttingDown else { return peerClosed(.shutDownByPeer) }
        peerIsShuttingDown = true
        linkInbox.finish(discarding: false)
        acceptInbox.finish(discarding: false)
        for record in channels.values { record.handle?.inbox.finish(discarding: false) }
        whenAcknowledged(by: NIODeadline.now() + limit).whenComplete { [self] _ in peerClosed(.shutDownByPeer) }
    }

    /// Closes from our side: a graceful SHUTDOWN once what was sent is delivered. `reason` says
    /// why when it is not the app's own wish (a listener refusing the peer, say).
    /// What the link had received stays readable (its reader takes it, then the end).
    func close(_ reason: SCTPCloseReason = .closedLocally) {
        guard state != .closed else { return }
        teardown(abort: state == .connecting, peerClosed: false, keepingReceived: true, reason: reason)
    }

    private func teardown(abort: Bool, peerClosed: Bool, keepingReceived: Bool = false, reason: SCTPCloseReason) {
        outstandingAtEnd = outstanding
        endReasonBox.withLock { $0 = $0 ?? reason }
        logger.log(
            level: reason.isAbnormal ? .notice : .debug, "sctp association ended",
            metadata: ["conduit.remote": "\(remoteDescription)", "conduit.reason": "\(reason)"])
        state = .closed
        linkInbox.finish(discarding: !peerClosed && !keepingReceived)
        linkInbox.setOnSpace {}
        acceptInbox.finish(discarding: !peerClosed)
        for record in channels.values {
            record.handle?.inbox.finish(discarding: !peerClosed)
            record.handle?.inbox.setOnSpace {}
        }
        channels.removeAll()
        let error = closedError
        while let pending = pendingSends.popFirst() { pending.promise?.fail(error) }
        completeAcknowledgementWaiters()
        if let listening = listeningSocket {
            listeningSocket = nil
            usrsctp_close(listening)
        }
        if let socket {
            if abort { _ = conduit_sctp_set_abort_on_close(socket) }
            usrsctp_close(socket)
        }
        // `socket` stays set (as a marker) but is never used again once state is closed.
        // usrsctp still sends the SHUTDOWN (or ABORT) through our address: keep the route a while.
        let linger: TimeAmount = abort || peerClosed ? .milliseconds(200) : .seconds(3)
        stack.loop.scheduleTask(in: linger) { [self] in
            stack.release(address)
            onClosed?(self)
            onClosed = nil
            onModeDecided = nil
        }
        if mode == .undecided { onModeDecided = nil }
    }
}
#endif

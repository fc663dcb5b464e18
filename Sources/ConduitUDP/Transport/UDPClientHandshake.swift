import ConduitCore
import NIOCore

/// The client side of the cookie handshake, on the client channel's event loop:
///
/// ```
///   HELLO ──▶            (retransmitted: 200 ms, doubling, at most 1 s apart)
///         ◀── COOKIE
///   HELLO-WITH-COOKIE ──▶ (retransmitted likewise)
///         ◀── ACCEPT      → the link is established
/// ```
///
/// Afterwards it demultiplexes the channel's datagrams to the link. Only datagrams from the
/// server's address that echo this attempt's nonce and SSRC move the handshake on.
final class UDPClientHandshake: Sendable {
    static let firstRetransmit = TimeAmount.milliseconds(200)
    static let maxRetransmit = TimeAmount.seconds(1)
    /// A cookie older than this is given up for a fresh HELLO (the listener accepts ~10 s).
    static let cookieRefresh = TimeAmount.seconds(8)

    private enum Phase {
        case handshaking(cookie: UDPCookie?, cookieAt: NIODeadline)
        case established(UDPLink)
        case failed
    }

    private struct State {
        var phase = Phase.handshaking(cookie: nil, cookieAt: .now())
        var retransmitDelay = UDPClientHandshake.firstRetransmit
        var timer: Scheduled<Void>?
        var deadline: Scheduled<Void>?
    }

    private let state: NIOLoopBoundBox<State>
    private let promise: EventLoopPromise<UDPLink>
    let server: SocketAddress
    private let ssrc: UInt32
    private let nonce: UInt64
    private let mtu: Int
    private let offload: UDPOffloadPolicy
    /// SRTP for everything this socket sends and receives, when the URL asks for it.
    private let srtp: NIOLoopBoundBox<UDPSRTPFilter>?
    /// The socket's descriptor for the links' direct writes (nil: they write through the channel).
    let directSocket: UDPDirectSocket?
    /// The transport's logger and counters, handed to the link.
    private let observer: UDPObserver?
    /// Opens another socket delivering here, for ``UDPLink/moveToNewSocket()`` (set once, before `start`).
    private let openSocket: NIOLoopBoundBox<(@Sendable () async throws(ConduitError) -> any Channel)?>

    init(
        loop: any EventLoop, server: SocketAddress, mtu: Int, offload: UDPOffloadPolicy = UDPOffloadPolicy(mode: .off), srtp: sending UDPSRTPFilter? = nil,
        observer: UDPObserver? = nil, directSocket: UDPDirectSocket? = nil
    ) {
        self.observer = observer
        self.directSocket = directSocket
        var random = SystemRandomNumberGenerator()
        state = .makeBoxSendingValue(State(), eventLoop: loop)
        openSocket = .makeBoxSendingValue(nil, eventLoop: loop)
        promise = loop.makePromise()
        self.server = server
        ssrc = random.next()
        nonce = random.next()
        self.mtu = mtu
        self.offload = offload
        if let srtp {
            self.srtp = .makeBoxSendingValue(srtp, eventLoop: loop)
        } else {
            self.srtp = nil
        }
    }

    /// Starts the handshake on `channel`; the future holds the link, or `timeoutError` in time.
    /// `openSocket` opens another socket for the link later (see ``UDPLink/moveToNewSocket()``).
    func start(
        on channel: any Channel, timeout: TimeAmount, timeoutError: ConduitError,
        openSocket: (@Sendable () async throws(ConduitError) -> any Channel)? = nil
    ) -> EventLoopFuture<UDPLink> {
        channel.eventLoop.execute {
            self.openSocket.value = openSocket
            let loop = channel.eventLoop.assumeIsolated()
            self.state.value.deadline = loop.scheduleTask(in: timeout) {
                self.fail(timeoutError)
            }
            self.transmit(on: channel)
        }
        return promise.futureResult
    }

    /// Gives up (from any thread): `connect` was cancelled.
    func cancel(_ error: ConduitError) {
        promise.futureResult.eventLoop.execute { self.fail(error) }
    }

    private func fail(_ error: ConduitError) {
        guard case .handshaking = state.value.phase else { return }
        state.value.phase = .failed
        state.value.timer?.cancel()
        state.value.deadline?.cancel()
        promise.fail(error)
    }

    /// Sends HELLO, or HELLO-WITH-COOKIE once a cookie came, and schedules the next attempt.
    private func transmit(on channel: any Channel) {
        guard case .handshaking(var cookie, let cookieAt) = state.value.phase else { return }
        if cookie != nil, NIODeadline.now() - cookieAt > Self.cookieRefresh {
            cookie = nil
            state.value.phase = .handshaking(cookie: nil, cookieAt: cookieAt)
        }
        let version = UDPControlMessage.protocolVersion
        if let cookie {
            send(.helloWithCookie(ssrc: ssrc, nonce: nonce, version: version, mtu: UInt16(mtu), cookie: cookie), on: channel)
        } else {
            send(.hello(ssrc: ssrc, nonce: nonce, version: version, mtu: UInt16(mtu), srtpProfile: srtp?.value.wireCode ?? 0), on: channel)
        }
        let delay = state.value.retransmitDelay
        state.value.retransmitDelay = min(delay * 2, Self.maxRetransmit)
        state.value.timer = channel.eventLoop.assumeIsolated().scheduleTask(in: delay) {
            self.transmit(on: channel)
        }
    }

    private func send(_ message: UDPControlMessage, on channel: any Channel) {
        guard let buffer = message.datagram(sealedWith: srtp, allocator: channel.allocator) else { return }
        // Errors (ECONNREFUSED after an ICMP port-unreachable) are not fatal: retry until the timeout.
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: server, data: buffer), promise: nil)
    }

    func receive(_ envelope: AddressedEnvelope<ByteBuffer>, via channel: any Channel) {
        var data = envelope.data
        if case .handshaking = state.value.phase, envelope.remoteAddress == server,
            case .reject(_, let client, let reason)? = UDPControlMessage(parsing: data), client == ssrc
        {
            // In the clear by design: the listener could not take our handshake.
            let why = reason == 2
                ? "its SRTP profile differs from ours (or only one side uses SRTP)"
                : "it could not authenticate it with SRTP (the SRTP keys or profile differ, or only one side uses SRTP)"
            return fail(ConduitError(.connectionFailed, "udp://\(SocketAddressing.describe(server)) refused the handshake: \(why)"))
        }
        if let srtp {
            switch srtp.value.unprotect(data) {
            case .success(let plain):
                data = plain
            case .failure:
                if case .established(let link) = state.value.phase { link.countSRTPDrop() }
                return
            }
        }
        switch state.value.phase {
        case .established(let link):
            guard envelope.remoteAddress == server else { return link.countStranger() }
            if let header = RTPHeader(parsing: data) {
                link.receive(rtp: data, header: header)
            } else if RTPHeader.looksLikeRTCP(data), let message = UDPControlMessage(parsing: data) {
                switch message {
                case .bye(let ssrc):
                    link.receive(byeFrom: ssrc)
                case .pathChallenge(let serverSSRC, let client, let challenge) where serverSSRC == link.remoteSSRC && client == link.localSSRC:
                    // RFC 9000 §8.2.2: echo it at once, from the socket it reached (the path it probes).
                    let response = UDPControlMessage.pathResponse(ssrc: link.localSSRC, serverSSRC: serverSSRC, challenge: challenge)
                    guard let buffer = response.datagram(sealedWith: srtp, allocator: channel.allocator) else { return }
                    channel.writeAndFlush(AddressedEnvelope(remoteAddress: server, data: buffer), promise: nil)
                default:
                    return  // a repeated ACCEPT, or a challenge for another link: ignored
                }
            } else {
                link.countMalformed()
            }
        case .handshaking:
            guard envelope.remoteAddress == server, RTPHeader.looksLikeRTCP(data), let message = UDPControlMessage(parsing: data) else { return }
            switch message {
            case .cookie(_, let echoed, let cookie) where echoed == nonce:
                state.value.phase = .handshaking(cookie: cookie, cookieAt: .now())
                state.value.timer?.cancel()
                state.value.retransmitDelay = Self.firstRetransmit
                transmit(on: channel)
            case .accept(let serverSSRC, let client, let echoed, let agreed)
            where client == ssrc && echoed == nonce && UDPOptions.mtuRange.contains(Int(agreed)) && Int(agreed) <= mtu:
                state.value.timer?.cancel()
                state.value.deadline?.cancel()
                let link = UDPLink(channel: channel, peer: server, localSSRC: ssrc, remoteSSRC: serverSSRC, mtu: Int(agreed), offload: offload.segments(to: server), srtp: srtp, observer: observer, directSocket: directSocket,
                    openSocket: openSocket.value
                ) { link in
                    link.channel.close()
                }
                observer?.linkEstablished(remote: link.remoteDescription, isClient: true)
                state.value.phase = .established(link)
                promise.succeed(link)
            default:
                return
            }
        case .failed:
            return
        }
    }

    func flushReceived() {
        if case .established(let link) = state.value.phase { link.flushReceived() }
    }
}

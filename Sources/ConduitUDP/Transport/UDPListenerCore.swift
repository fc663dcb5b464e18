import ConduitCore
import NIOCore

/// The listener's event-loop side: the stateless cookie exchange and the demultiplexer from
/// remote address to established link. Everything here runs on the listening channel's loop.
final class UDPListenerCore: Sendable {
    struct State {
        var links: [SocketAddress: UDPLink] = [:]
        /// Links by the client's SSRC, for datagrams from a new client address (a link whose
        /// client SSRC another link already has is left out: it cannot move).
        var bySSRC: [UInt32: UDPLink] = [:]
        /// Open path validations of new client addresses (see UDPListenerCore+Migration.swift).
        var validator = UDPPathValidator<SocketAddress>()
        /// Links and handshakes per remote IP address (the listener's per-address limits).
        var addresses: UDPAddressLedger
        var dirty: [UDPLink] = []
        var statistics = UDPListenerStatistics()
        var isOpen = true
        /// Whether new handshakes wait for the socket to catch up (UDPHandshakeShedder.swift).
        var shedder: UDPHandshakeShedder
        /// When shedding was last logged (at most every 10 s, with the count since).
        var shedLoggedAt: ConduitInstant?
        var shedSinceLog = 0
    }

    let state: NIOLoopBoundBox<State>
    let backlog: AsyncBoundedChannel<UDPLink>
    let limits: UDPTransport.Configuration.ListenerLimits
    let mtu: Int
    /// Which links send runs of datagrams as one segmentation-offload write.
    let offload: UDPOffloadPolicy
    /// The SSRC the listener's COOKIE messages carry.
    private let ssrc: UInt32
    private let jar = UDPCookieJar()
    /// SRTP for everything on this socket, every link's traffic included (one libsrtp stream per
    /// SSRC, so each link has its own replay window), when the URL asks for it.
    let srtp: NIOLoopBoundBox<UDPSRTPFilter>?
    /// The socket's descriptor for the links' direct writes (nil: they write through the channel).
    let directSocket: UDPDirectSocket?
    /// The transport's logger and counters, handed to every link.
    let observer: UDPObserver?
    /// The listener's time (the monotonic clock; a test passes its own).
    let clock: @Sendable () -> ConduitInstant

    init(
        loop: any EventLoop, mtu: Int, offload: UDPOffloadPolicy = UDPOffloadPolicy(mode: .off), srtp: sending UDPSRTPFilter? = nil,
        observer: UDPObserver? = nil, directSocket: UDPDirectSocket? = nil, limits: UDPTransport.Configuration.ListenerLimits = .init(),
        clock: @escaping @Sendable () -> ConduitInstant = UDPListenerCore.now
    ) {
        self.limits = limits
        self.clock = clock
        backlog = AsyncBoundedChannel<UDPLink>(capacity: limits.maxAwaitingAccept)
        self.observer = observer
        self.directSocket = directSocket
        var random = SystemRandomNumberGenerator()
        state = .makeBoxSendingValue(
            State(addresses: UDPAddressLedger(limits: limits), shedder: UDPHandshakeShedder(overloadBurst: limits.overloadBurst, ceiling: limits.handshakesPerSecond)), eventLoop: loop)
        ssrc = random.next()
        self.mtu = mtu
        self.offload = offload
        if let srtp {
            self.srtp = .makeBoxSendingValue(srtp, eventLoop: loop)
        } else {
            self.srtp = nil
        }
    }

    func receive(_ envelope: AddressedEnvelope<ByteBuffer>, via channel: any Channel) {
        let from = envelope.remoteAddress
        var data = envelope.data
        if let srtp {
            switch srtp.value.unprotect(data) {
            case .success(let plain):
                data = plain
            case .failure:
                if let link = state.value.links[from] { return link.countSRTPDrop() }
                state.value.statistics.srtpRejected += 1
                // A client with other keys (or none) learns why at once: REJECT in the clear,
                // no larger than what came, naming only the SSRC the packet showed in the clear.
                if RTPHeader.looksLikeRTCP(data), let client = data.getInteger(at: data.readerIndex + 4, as: UInt32.self) {
                    sendClear(.reject(ssrc: ssrc, clientSSRC: client, reason: 1), to: from, via: channel)
                }
                return
            }
        }
        if let link = state.value.links[from] {
            return dispatch(data, to: link, via: channel)
        }
        if let header = RTPHeader(parsing: data) {
            guard let link = state.value.bySSRC[header.ssrc] else {
                state.value.statistics.strayDatagrams += 1
                return
            }
            return probe(data, header: header, of: link, from: from, via: channel)
        }
        guard RTPHeader.looksLikeRTCP(data), let message = UDPControlMessage(parsing: data) else {
            state.value.statistics.malformed += 1
            return
        }
        switch message {
        case .hello(let client, let nonce, let version, let mtu, let srtpProfile):
            guard version == UDPControlMessage.protocolVersion, UDPOptions.mtuRange.contains(Int(mtu)) else {
                state.value.statistics.malformed += 1
                return
            }
            // Authenticated, yet another profile (two share the SRTCP transform): refuse clearly.
            guard srtpProfile == (srtp?.value.wireCode ?? 0) else {
                state.value.statistics.srtpRejected += 1
                sendClear(.reject(ssrc: ssrc, clientSSRC: client, reason: 2), to: from, via: channel)
                return
            }
            guard answersHello(), hasRoom() else { return }
            let cookie = jar.mint(for: from, ssrc: client, nonce: nonce, mtu: mtu)
            send(.cookie(ssrc: ssrc, nonce: nonce, cookie: cookie), to: from, via: channel)
            state.value.statistics.hellosAnswered += 1
        case .helloWithCookie(let client, let nonce, let version, let mtu, let cookie):
            guard version == UDPControlMessage.protocolVersion, UDPOptions.mtuRange.contains(Int(mtu)),
                jar.verify(cookie, from: from, ssrc: client, nonce: nonce, mtu: mtu)
            else {
                state.value.statistics.badCookies += 1
                return
            }
            guard hasRoom(), admitsLink(), admitAddress(from) else { return }
            establish(from: from, ssrc: client, nonce: nonce, mtu: min(Int(mtu), self.mtu), via: channel)
        case .pathResponse(let client, let server, let challenge):
            validate(client: client, server: server, challenge: challenge, from: from)
        case .cookie, .accept, .bye, .reject, .pathChallenge:
            state.value.statistics.strayDatagrams += 1
        }
    }

    /// False (counting the HELLO in `shedUnderLoad`) when, just after the listener fell behind its
    /// socket, HELLOs exceed their share of the adaptive rate (UDPHandshakeShedder.swift).
    private func answersHello() -> Bool {
        let now = clock()
        guard !state.value.shedder.answerHello(now: now) else { return true }
        shed(now: now)
        return false
    }

    /// False (counting the HELLO-WITH-COOKIE in `shedUnderLoad`) when the listener's adaptive
    /// rate of new links (UDPHandshakeShedder.swift) has nothing left.
    private func admitsLink() -> Bool {
        let now = clock()
        guard !state.value.shedder.admitLink(now: now) else { return true }
        shed(now: now)
        return false
    }

    private func shed(now: ConduitInstant) {
        state.value.statistics.shedUnderLoad += 1
        state.value.shedSinceLog += 1
        observer?.handshakeShed()
        if state.value.shedLoggedAt.map({ now - $0 >= .seconds(10) }) ?? true {
            observer?.logger.notice(
                "udp listener behind its socket: new links and HELLOs limited",
                metadata: [
                    "conduit.shed": "\(state.value.shedSinceLog)", "conduit.links-per-second": "\(state.value.shedder.rate)",
                    "conduit.overload-burst": "\(limits.overloadBurst)",
                ])
            state.value.shedLoggedAt = now
            state.value.shedSinceLog = 0
        }
    }

    /// False (counting the refusal) when another link would exceed a limit.
    private func hasRoom() -> Bool {
        guard state.value.isOpen, state.value.links.count < limits.maxLinks, backlog.bufferedWeight < limits.maxAwaitingAccept else {
            state.value.statistics.refusedAtCapacity += 1
            return false
        }
        return true
    }

    /// False (counting the refusal) when `address`'s host holds `maxLinksPerAddress` links or
    /// has established `handshakesPerSecondPerAddress` this second; else its new link is counted.
    private func admitAddress(_ address: SocketAddress) -> Bool {
        let now = clock()
        switch state.value.addresses.admit(Self.hostKey(address), now: now) {
        case .admitted: return true
        case .tooManyLinks: state.value.statistics.refusedPerAddressLimit += 1
        case .tooManyHandshakes: state.value.statistics.refusedHandshakeRate += 1
        case .tooManyHandshakesInAll: state.value.statistics.refusedListenerHandshakeRate += 1
        }
        return false
    }

    /// The remote host, without its port: what the per-address limits count.
    static func hostKey(_ address: SocketAddress) -> String { address.ipAddress ?? "\(address)" }

    private func establish(from peer: SocketAddress, ssrc client: UInt32, nonce: UInt64, mtu: Int, via channel: any Channel) {
        var random = SystemRandomNumberGenerator()
        var candidate: UInt32 = random.next()
        while candidate == client { candidate = random.next() }
        let local = candidate
        let link = UDPLink(channel: channel, peer: peer, localSSRC: local, remoteSSRC: client, mtu: mtu, offload: offload.segments(to: peer), srtp: srtp, observer: observer, directSocket: directSocket) { [weak self] link in
            // Weak: the core holds its links, and a link's close hook that held the core made a
            // cycle, so a listener dropped with a link never closed was never freed (LeakSanitizer).
            guard let self else { return channel.eventLoop.makeSucceededVoidFuture() }
            // Where the link is now: its client may have moved since it was established.
            if state.value.links[link.peer] === link {
                state.value.links[link.peer] = nil
                state.value.addresses.release(Self.hostKey(link.peer))
            }
            if state.value.bySSRC[client] === link {
                state.value.bySSRC[client] = nil
                state.value.validator.forget(link: client)
            }
            closeSocketIfUnused(channel)
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        guard backlog.trySend(link) else {
            state.value.addresses.release(Self.hostKey(peer))
            state.value.statistics.refusedAtCapacity += 1
            return
        }
        state.value.links[peer] = link
        if state.value.bySSRC[client] == nil { state.value.bySSRC[client] = link }
        state.value.statistics.linksEstablished += 1
        observer?.linkEstablished(remote: link.remoteDescription, isClient: false)
        send(.accept(ssrc: local, clientSSRC: client, nonce: nonce, mtu: UInt16(mtu)), to: peer, via: channel)
    }

    private func dispatch(_ data: ByteBuffer, to link: UDPLink, via channel: any Channel) {
        if let header = RTPHeader(parsing: data) { return deliver(data, header: header, to: link, fromPeer: true) }
        guard RTPHeader.looksLikeRTCP(data), let message = UDPControlMessage(parsing: data) else {
            link.countMalformed()
            return
        }
        switch message {
        case .bye(let ssrc):
            link.receive(byeFrom: ssrc)
        case .helloWithCookie(let client, let nonce, _, _, _) where client == link.remoteSSRC:
            // The first ACCEPT may have been lost: say it again (the link already exists).
            state.value.statistics.acceptsRepeated += 1
            send(.accept(ssrc: link.localSSRC, clientSSRC: client, nonce: nonce, mtu: UInt16(link.capabilities.mtu + RTPHeader.size)), to: link.peer, via: channel)
        case .hello, .helloWithCookie, .cookie, .accept, .reject, .pathChallenge, .pathResponse:
            link.countStranger()
        }
    }

    /// RTP for `link`, handed over at the end of the read burst.
    func deliver(_ data: ByteBuffer, header: RTPHeader, to link: UDPLink, fromPeer: Bool) {
        link.receive(rtp: data, header: header, fromPeer: fromPeer)
        if state.value.dirty.last !== link { state.value.dirty.append(link) }
    }

    /// End of a read burst of `reads` datagrams: every link that got data hands it to its reader,
    /// and the burst's size tells whether the listener is behind its socket.
    func endBurst(reads: Int) {
        if reads >= limits.overloadBurst { state.value.shedder.noteBurst(datagrams: reads, now: clock()) }
        flushReceived()
    }

    /// Every link that got data in this burst hands it to its reader.
    func flushReceived() {
        let dirty = state.value.dirty
        guard !dirty.isEmpty else { return }
        state.value.dirty.removeAll(keepingCapacity: true)
        for link in dirty { link.flushReceived() }
    }

    func send(_ message: UDPControlMessage, to address: SocketAddress, via channel: any Channel) {
        guard let buffer = message.datagram(sealedWith: srtp, allocator: channel.allocator) else { return }
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: buffer), promise: nil)
    }

    private func sendClear(_ message: UDPControlMessage, to address: SocketAddress, via channel: any Channel) {
        guard let buffer = message.datagram(sealedWith: nil, allocator: channel.allocator) else { return }
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: buffer), promise: nil)
    }

    /// Stops taking links (the listener closes them as it empties its backlog).
    func shutDown() {
        state.value.isOpen = false
    }

    /// Once the listener is closed and its last link is gone, the socket goes too.
    func closeSocketIfUnused(_ channel: any Channel) {
        guard !state.value.isOpen, state.value.links.isEmpty, channel.isActive else { return }
        channel.close(promise: nil)
    }
}

public import ConduitCore

public import ConduitARQ
extension ARQEngine.Configuration {
    /// The link's knobs from a transport URL's query, for transports the engine runs over:
    ///
    /// | option | meaning | default |
    /// |---|---|---|
    /// | `keepalive-ms` | PING after this long without sending (0: never) | 5000 |
    /// | `idle-timeout-ms` | close after this long without hearing the peer (0: never) | 30000 |
    /// | `receive-window` | bytes buffered for the call above, advertised to the peer | 4194304 |
    /// | `max-ack-delay-ms` | how long an ACK may be held back (RFC 9000 `max_ack_delay`) | 5 |
    /// | `ack-every` | acknowledge at once after this many ack-eliciting packets | 2 |
    /// | `pmtud` | path MTU discovery (RFC 8899): `on` searches from `pmtud-base` up to the transport's `mtu`, `off` sends at `mtu` | on |
    /// | `pmtud-base` | the size the search starts at and falls back to, in link packet bytes (512...65535) | 1220 |
    /// | `cc` | congestion control: `bbr` (BBRv3) or `newreno` (RFC 9002) | bbr |
    ///
    /// The datagram size comes from the transport's own `mtu`: with `pmtud=on` the most the
    /// search goes up to, with `pmtud=off` the size of every full packet.
    /// The query keys read here are `ARQEngine.Configuration.urlOptionKeys` (declared in the
    /// core, so transports list them among the options they accept); they are taken out of the URL
    /// before the transport sees it.
    /// Reads the engine's options from `url`'s query (table above), defaults for those absent. Throws `invalidConfiguration` naming an option whose value is out of range.
    public init(url: TransportURL) throws(ConduitError) {
        self.init()
        let keepalive = try url.intOption("keepalive-ms", default: 5_000, in: 0...3_600_000)
        keepaliveInterval = keepalive == 0 ? nil : .milliseconds(keepalive)
        let idle = try url.intOption("idle-timeout-ms", default: 30_000, in: 0...86_400_000)
        idleTimeout = idle == 0 ? nil : .milliseconds(idle)
        receiveWindow = try url.intOption("receive-window", default: receiveWindow, in: 65_536...(1 << 30))
        // 5 ms rather than QUIC's 25: ACKs go out at once every second packet anyway, and the
        // delay is part of every probe timeout, so a short one recovers tail losses sooner.
        maxAckDelay = .milliseconds(try url.intOption("max-ack-delay-ms", default: 5, in: 1...1_000))
        // RFC 9000's 2 by default; a higher value (as QUIC's ACK frequency extension allows)
        // sends fewer ACKs. On loopback 8 measured no different from 2, within the noise.
        ackElicitingThreshold = try url.intOption("ack-every", default: 2, in: 1...64)
        pathMTUDiscovery = try Self.pathMTUDiscovery(url)
        congestionControl = try Self.congestionControl(url)
        // Keep the untransmitted queue short: the call above has its own paced queue, and
        // a short one here lets its queue-delay signal (`tooLongQueuedData`) see congestion.
        maxSendQueueBytes = 1 << 20
    }
}

extension ARQEngine.Configuration {
    /// `pmtud` and `pmtud-base` (see ``init(url:)``).
    private static func pathMTUDiscovery(_ url: TransportURL) throws(ConduitError) -> LinkPathMTUSearch.Settings? {
        var settings = LinkPathMTUSearch.Settings()
        // At least 512: an ACK frame with all its ranges must fit a base-size packet.
        settings.basePacketSize = try url.intOption("pmtud-base", default: settings.basePacketSize, in: 512...65_535)
        switch url.query["pmtud"] ?? "on" {
        case "on": return settings
        case "off": return nil
        case let other: throw ConduitError(.invalidConfiguration, "option pmtud=\(other) in \(url) must be on or off")
        }
    }
}

extension ARQEngine.Configuration {
    /// `cc` (see ``init(url:)``).
    private static func congestionControl(_ url: TransportURL) throws(ConduitError) -> ARQEngine.CongestionControlAlgorithm {
        guard let value = url.query["cc"] else { return ARQEngine.Configuration().congestionControl }
        guard let algorithm = ARQEngine.CongestionControlAlgorithm(rawValue: value) else {
            throw ConduitError(.invalidConfiguration, "option cc=\(value) in \(url) must be bbr or newreno")
        }
        return algorithm
    }
}

extension TransportURL {
    /// This URL without the reliable link's options: what the transport itself is given.
    public var withoutReliableTransportOptions: TransportURL {
        var url = self
        url.query = query.filter { !ARQEngine.Configuration.urlOptionKeys.contains($0.key) }
        return url
    }
}

/// What a link measures of its path and its traffic, on demand (``TransportLink/linkStatistics()``):
/// the transport half of a call's statistics, beside the sessions' counters in `CallStatistics`.
///
/// Compare W3C `RTCTransportStats` and `RTCIceCandidatePairStats`. A figure the transport does
/// not measure is nil (usrsctp reports neither its congestion window nor its losses here).
public struct LinkStatistics: Sendable, Hashable {
    /// The smoothed round-trip time (RFC 9002 section 5.3).
    public var smoothedRTT: Duration?
    /// The smallest round-trip time seen.
    public var minimumRTT: Duration?
    /// The round-trip time's mean deviation.
    public var rttVariation: Duration?
    /// Bytes the congestion controller lets be in flight.
    public var congestionWindow: Int?
    /// Bytes sent and neither acknowledged nor declared lost.
    public var bytesInFlight: Int?
    /// Bytes per second the pacer releases at.
    public var pacingRate: Int?
    /// Packets (datagrams) sent, retransmissions and acknowledgements included.
    public var packetsSent: Int
    /// Packets received and accepted.
    public var packetsReceived: Int
    /// Packets declared lost.
    public var packetsLost: Int?
    /// Packets that carried a retransmission.
    public var packetsRetransmitted: Int?
    /// Duplicate packets received and suppressed.
    public var duplicatesReceived: Int?
    /// The largest datagram the link sends now.
    public var mtu: Int

    /// Makes statistics; what the transport does not measure stays nil.
    public init(
        smoothedRTT: Duration? = nil, minimumRTT: Duration? = nil, rttVariation: Duration? = nil,
        congestionWindow: Int? = nil, bytesInFlight: Int? = nil, pacingRate: Int? = nil,
        packetsSent: Int = 0, packetsReceived: Int = 0, packetsLost: Int? = nil,
        packetsRetransmitted: Int? = nil, duplicatesReceived: Int? = nil, mtu: Int
    ) {
        self.smoothedRTT = smoothedRTT
        self.minimumRTT = minimumRTT
        self.rttVariation = rttVariation
        self.congestionWindow = congestionWindow
        self.bytesInFlight = bytesInFlight
        self.pacingRate = pacingRate
        self.packetsSent = packetsSent
        self.packetsReceived = packetsReceived
        self.packetsLost = packetsLost
        self.packetsRetransmitted = packetsRetransmitted
        self.duplicatesReceived = duplicatesReceived
        self.mtu = mtu
    }
}

/// What one UDP link did. Counts since the link was established.
public struct UDPLinkStatistics: Sendable, Hashable, Codable {
    /// RTP datagrams written.
    public var datagramsSent = 0
    /// Payload bytes written (what the link above handed over: RTP headers and SRTP tags excluded).
    public var bytesSent = 0
    /// RTP datagrams from the peer accepted.
    public var datagramsReceived = 0
    /// Payload bytes of those datagrams (RTP headers and SRTP tags excluded).
    public var bytesReceived = 0
    /// Received datagrams dropped because the reader fell behind (the link's inbox was full).
    public var droppedQueueFull = 0
    /// Datagrams from the peer's address that were neither our RTP nor our RTCP, or too large.
    public var droppedMalformed = 0
    /// RTP from the peer's address with a foreign SSRC, or (client side) from another address.
    public var droppedStranger = 0
    /// Sends the operating system refused (the datagrams are lost; the link stays up).
    public var sendErrors = 0
    /// With SRTP: datagrams from the peer that failed authentication or were replays (dropped).
    public var droppedSRTP = 0
    /// Writes of several datagrams for the kernel to segment (UDP_SEGMENT).
    public var segmentedWrites = 0
    /// Segmented writes the kernel refused; after the first, the link writes datagram by datagram.
    public var segmentationOffloadFailures = 0

    /// All counters at zero.
    public init() {}
}

/// What one UDP listener did with datagrams that belong to no established link.
public struct UDPListenerStatistics: Sendable, Hashable, Codable {
    /// HELLOs answered with a COOKIE (the listener keeps no state for them).
    public var hellosAnswered = 0
    /// HELLO-WITH-COOKIEs whose cookie was wrong, expired or minted for another client.
    public var badCookies = 0
    /// Well-formed RTP or RTCP from an address without a link (including BYE, COOKIE, ACCEPT).
    public var strayDatagrams = 0
    /// Datagrams from an address without a link that are not our RTP or RTCP.
    public var malformed = 0
    /// HELLOs and HELLO-WITH-COOKIEs left unanswered because the link or backlog limit was reached.
    public var refusedAtCapacity = 0
    /// Valid HELLO-WITH-COOKIEs left unanswered because their IP address already holds
    /// `maxLinksPerAddress` links.
    public var refusedPerAddressLimit = 0
    /// Valid HELLO-WITH-COOKIEs left unanswered because their IP address established
    /// `handshakesPerSecondPerAddress` links in the last second.
    public var refusedHandshakeRate = 0
    /// Valid HELLO-WITH-COOKIEs left unanswered because the listener established
    /// `handshakesPerSecond` links (all addresses together) in the last second.
    public var refusedListenerHandshakeRate = 0
    /// HELLOs and HELLO-WITH-COOKIEs left unanswered because the listener was behind its socket:
    /// HELLOs beyond four per link allowed within 100 ms of a read burst of `overloadBurst`
    /// datagrams, valid HELLO-WITH-COOKIEs beyond the rate of new links such bursts lowered. The
    /// client retransmits.
    public var shedUnderLoad = 0
    /// Links created (each from a valid cookie).
    public var linksEstablished = 0
    /// ACCEPTs sent again for a repeated HELLO-WITH-COOKIE of an established link.
    public var acceptsRepeated = 0
    /// With SRTP: datagrams from an address without a link that failed authentication (each
    /// RTCP one answered with a clear REJECT, so a client with other keys learns why at once).
    public var srtpRejected = 0

    // Address migration (RFC 9000 §9): a link's client seen at a new address.

    /// RTP of a link from a new address, newer than anything the link received: delivered to the
    /// link, and its address challenged (the link keeps sending to its old address meanwhile).
    public var pathProbes = 0
    /// RTP of a link from a new address that was not newer than what the link received (a replay
    /// or a late datagram): dropped, nothing challenged.
    public var pathProbesStale = 0
    /// RTP of a link from a new address dropped because no other validation may open (too many
    /// pending in total, for that address or for that link) or that address holds
    /// `maxLinksPerAddress` links.
    public var pathProbesRefused = 0
    /// Path challenges sent (a new validation, or a resend to an address still sending).
    public var pathChallengesSent = 0
    /// Path responses that validated a new address: the link moved there.
    public var pathMigrations = 0
    /// Path responses that moved nothing: no open validation of that link from that address with
    /// that challenge (wrong, late or forged), or the address could not take the link.
    public var pathResponsesRejected = 0
    /// Validations that ended without their response (3 s).
    public var pathValidationsTimedOut = 0

    /// All counters at zero.
    public init() {}

    /// Every datagram that reached the listener without reaching a link is in exactly one counter
    /// (a valid HELLO-WITH-COOKIE in `linksEstablished`, `acceptsRepeated`, `refusedAtCapacity`,
    /// `refusedPerAddressLimit`, `refusedHandshakeRate`, `refusedListenerHandshakeRate` or `shedUnderLoad`; RTP of a link from a new address in a
    /// `pathProbes` counter, a path response in `pathMigrations` or `pathResponsesRejected`).
    public var datagramsAccountedFor: Int {
        hellosAnswered + badCookies + strayDatagrams + malformed + refusedAtCapacity + refusedPerAddressLimit + refusedHandshakeRate
            + refusedListenerHandshakeRate + shedUnderLoad + linksEstablished + acceptsRepeated + srtpRejected
            + pathProbes + pathProbesStale + pathProbesRefused + pathMigrations + pathResponsesRejected
    }
}

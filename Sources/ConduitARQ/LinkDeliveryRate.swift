import ConduitCore

/// What the delivery rate estimator remembers of the connection when a packet is sent
/// (draft-cheng-iccrg-delivery-rate-estimation section 3.2, the `P.*` fields).
struct LinkDeliverySnapshot: Sendable, Hashable {
    /// `P.delivered`: bytes delivered when the packet was sent.
    var delivered = 0
    /// `P.delivered_time`: when the latest of those bytes was acknowledged.
    var deliveredTime = ConduitInstant.zero
    /// `P.first_sent_time`: when the first packet of the flight it belongs to was sent.
    var firstSentTime = ConduitInstant.zero
    /// `P.lost`: bytes declared lost when the packet was sent (BBRv3's loss rate per sample).
    var lost = 0
    /// `P.tx_in_flight`: bytes in flight once the packet was sent (BBRv3).
    var inFlight = 0
    /// `P.is_app_limited`.
    var isAppLimited = false
}

/// One rate sample, made from an ACK (section 3.3's `rs.*`), with what the ACK did to the flight.
struct LinkRateSample: Sendable, Hashable {
    /// Bytes per nanosecond over the sample's interval; 0 when the interval was too short to say.
    var deliveryRate = 0.0
    /// `rs.is_app_limited`: the sender left the window unused, so the rate is a lower bound.
    var isAppLimited = false
    /// `rs.prior_delivered`: bytes delivered when the newest packet acknowledged was sent (marks rounds).
    var priorDelivered = 0
    /// `C.delivered` after this ACK.
    var totalDelivered = 0
    /// `rs.tx_in_flight`: bytes in flight when the newest packet acknowledged was sent.
    var inFlightAtSend = 0
    /// `rs.lost`: bytes declared lost between that packet's sending and this ACK.
    var lost = 0
    /// Bytes this ACK newly acknowledged.
    var newlyAcked = 0
    /// The RTT of the newest packet acknowledged, in nanoseconds (BBR's min_rtt input).
    var rttNanoseconds: Int64 = 0
}

/// Delivery rate estimation (draft-cheng-iccrg-delivery-rate-estimation-02, the `C.*` state): how
/// fast the path delivered the bytes acknowledged, measured from the flight each packet was sent in,
/// so that neither ACK compression nor a paced sender's gaps distort it. BBR's bandwidth model is
/// the maximum of these samples.
struct LinkDeliveryRateEstimator: Sendable {
    /// `C.delivered`.
    private(set) var delivered = 0
    /// `C.delivered_time`.
    private var deliveredTime = ConduitInstant.zero
    /// `C.first_sent_time`.
    private var firstSentTime = ConduitInstant.zero
    /// `C.app_limited`: nonzero while the bytes delivered are below the mark set when the
    /// sender ran out of data; samples up to it are app-limited.
    private var appLimitedUntil = 0
    /// `C.lost`.
    private(set) var lost = 0
    /// The sample under construction while an ACK is processed.
    private var pending: (snapshot: LinkDeliverySnapshot, timeSent: ConduitInstant)?
    private var pendingAcked = 0

    /// Section 3.2, on sending a packet: `inFlightBefore` is what was in flight before it, and
    /// `isAppLimited` says it was the last packet the sender had while the window had room.
    mutating func onPacketSent(size: Int, inFlightBefore: Int, isAppLimited: Bool, now: ConduitInstant) -> LinkDeliverySnapshot {
        if inFlightBefore == 0 {
            firstSentTime = now
            deliveredTime = now
        }
        if isAppLimited { appLimitedUntil = max(delivered + inFlightBefore + size, 1) }
        return LinkDeliverySnapshot(
            delivered: delivered, deliveredTime: deliveredTime, firstSentTime: firstSentTime, lost: lost,
            inFlight: inFlightBefore + size, isAppLimited: appLimitedUntil != 0
        )
    }

    /// Section 3.3, for each packet an ACK newly acknowledges.
    mutating func onPacketAcked(_ snapshot: LinkDeliverySnapshot, size: Int, timeSent: ConduitInstant, now: ConduitInstant) {
        delivered += size
        deliveredTime = now
        pendingAcked += size
        // The sample is taken from the most recently sent packet acknowledged.
        if pending.map({ snapshot.delivered >= $0.snapshot.delivered && timeSent >= $0.timeSent }) ?? true {
            pending = (snapshot, timeSent)
            firstSentTime = timeSent
        }
    }

    /// Bytes declared lost (for the loss rate of the samples that span it).
    mutating func onPacketLost(size: Int) { lost += size }

    /// Section 3.3, at the end of an ACK: the sample, or nil if the ACK acknowledged nothing new.
    /// A sample whose interval is shorter than `minRttNanoseconds` says nothing about the path
    /// (section 3.3: ACK compression), so its rate is 0.
    mutating func finishSample(now: ConduitInstant, minRttNanoseconds: Int64) -> LinkRateSample? {
        defer {
            pending = nil
            pendingAcked = 0
        }
        if appLimitedUntil != 0, delivered > appLimitedUntil { appLimitedUntil = 0 }
        guard let (snapshot, timeSent) = pending else { return nil }
        var sample = LinkRateSample(
            isAppLimited: snapshot.isAppLimited, priorDelivered: snapshot.delivered, totalDelivered: delivered,
            inFlightAtSend: snapshot.inFlight, lost: lost - snapshot.lost, newlyAcked: pendingAcked,
            rttNanoseconds: LinkTime.elapsed(from: timeSent, to: now)
        )
        let sendElapsed = LinkTime.elapsed(from: snapshot.firstSentTime, to: timeSent)
        let ackElapsed = LinkTime.elapsed(from: snapshot.deliveredTime, to: now)
        let interval = max(sendElapsed, ackElapsed)
        if interval > 0, interval >= minRttNanoseconds {
            sample.deliveryRate = Double(delivered - snapshot.delivered) / Double(interval)
        }
        return sample
    }
}

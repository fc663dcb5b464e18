import ConduitCore

/// Round-trip time estimation as RFC 9002 section 5 specifies it for QUIC (the RFC 6298 smoothed
/// RTT and variation, a minimum RTT, and acknowledgement delay taken out of samples).
public struct LinkRTTEstimator: Sendable, Hashable {
    /// Timer granularity, `kGranularity` (RFC 9002 section 6.1.2).
    public static let granularity: Int64 = LinkTime.millisecond

    /// The latest sample, in nanoseconds.
    public private(set) var latestNanoseconds: Int64
    /// The smoothed RTT (`smoothed_rtt`), in nanoseconds.
    public private(set) var smoothedNanoseconds: Int64
    /// The RTT variation (`rttvar`), in nanoseconds.
    public private(set) var variationNanoseconds: Int64
    /// `Int64.max` until the first sample.
    public private(set) var minimumNanoseconds: Int64 = .max
    /// Samples taken so far.
    public private(set) var sampleCount = 0

    /// Before any sample: smoothed_rtt = kInitialRtt, rttvar = kInitialRtt / 2 (RFC 9002 section 5.3).
    public init(initialRtt: Duration) {
        let initial = LinkTime.nanoseconds(initialRtt)
        latestNanoseconds = initial
        smoothedNanoseconds = initial
        variationNanoseconds = initial / 2
    }

    /// Whether a sample was taken (before it, the initial RTT is assumed).
    public var hasSample: Bool { sampleCount > 0 }
    /// The smoothed RTT.
    public var smoothed: Duration { .nanoseconds(smoothedNanoseconds) }
    /// The RTT variation.
    public var variation: Duration { .nanoseconds(variationNanoseconds) }
    /// The latest sample.
    public var latest: Duration { .nanoseconds(latestNanoseconds) }
    /// The smallest sample, once there is one.
    public var minimum: Duration? { hasSample ? .nanoseconds(minimumNanoseconds) : nil }

    /// Takes one RTT sample (RFC 9002 section 5.1: the time from sending the largest newly
    /// acknowledged packet, if ack-eliciting, to receiving its acknowledgement).
    public mutating func update(sampleNanoseconds: Int64, ackDelayNanoseconds: Int64, maxAckDelayNanoseconds: Int64) {
        let sample = max(sampleNanoseconds, 1)
        latestNanoseconds = sample
        // Section 5.2: min_rtt is the minimum of raw samples, ack delay not subtracted.
        minimumNanoseconds = min(minimumNanoseconds, sample)
        sampleCount += 1
        guard sampleCount > 1 else {
            // Section 5.3, first sample.
            smoothedNanoseconds = sample
            variationNanoseconds = sample / 2
            return
        }
        // Section 5.3: the peer's delay is capped at its max_ack_delay, and only subtracted when
        // that does not take the sample below min_rtt.
        let ackDelay = min(max(ackDelayNanoseconds, 0), maxAckDelayNanoseconds)
        var adjusted = sample
        if sample >= minimumNanoseconds + ackDelay { adjusted = sample - ackDelay }
        variationNanoseconds = (3 * variationNanoseconds + abs(smoothedNanoseconds - adjusted)) / 4
        smoothedNanoseconds = (7 * smoothedNanoseconds + adjusted) / 8
    }

    /// The probe timeout without backoff: smoothed_rtt + max(4 * rttvar, kGranularity) +
    /// max_ack_delay (RFC 9002 section 6.2.1).
    public func probeTimeoutNanoseconds(maxAckDelayNanoseconds: Int64) -> Int64 {
        smoothedNanoseconds + max(4 * variationNanoseconds, Self.granularity) + maxAckDelayNanoseconds
    }

    /// The time threshold of loss detection: max(kTimeThreshold * max(smoothed_rtt, latest_rtt),
    /// kGranularity) with kTimeThreshold = 9/8 (RFC 9002 section 6.1.2).
    public var lossDelayNanoseconds: Int64 {
        max(max(smoothedNanoseconds, latestNanoseconds) * 9 / 8, Self.granularity)
    }
}

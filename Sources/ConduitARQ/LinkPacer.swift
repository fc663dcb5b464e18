import ConduitCore

/// Spreads ack-eliciting packets over the round trip (RFC 9002 section 7.7) with a token bucket.
///
/// Rate: N * congestion_window / smoothed_rtt with N = 1.25, so pacing alone never keeps the
/// window from being used. Burst: the bucket holds about 2 ms of that rate, at least ten
/// datagrams and at most `maxBurst` (quinn's pacer does the same: below a couple of milliseconds a
/// timer cannot wake a sender reliably, so smaller buckets cap throughput at the timer's rate, not
/// the path's). A packet
/// goes out only when a full datagram's worth of tokens is there, so the bytes released at any one
/// instant never exceed the bucket.
struct LinkPacer: Sendable, Hashable {
    private(set) var maxDatagramSize: Int
    private(set) var maxBurst: Int
    private(set) var tokens: Double
    private var lastUpdate: ConduitInstant

    init(maxDatagramSize: Int, maxBurst: Int, now: ConduitInstant) {
        self.maxDatagramSize = maxDatagramSize
        self.maxBurst = maxBurst
        tokens = Double(maxBurst)
        lastUpdate = now
    }

    /// Path MTU discovery changed the packet size: the bucket counts in the new one (64 packets
    /// at most, as at the start), or one 65,000-byte packet would empty a bucket of 64 base-size
    /// ones and every packet would wait for a timer of its own.
    mutating func maxDatagramSizeChanged(to size: Int, burstPackets: Int) {
        maxDatagramSize = size
        maxBurst = burstPackets * size
    }

    /// Bytes per nanosecond.
    static func rate(window: Int, smoothedRttNanoseconds: Int64) -> Double {
        1.25 * Double(window) / Double(max(smoothedRttNanoseconds, 1))
    }

    func capacity(rate: Double) -> Double {
        min(Double(maxBurst), max(Double(10 * maxDatagramSize), rate * 2_000_000))
    }

    func tokens(at now: ConduitInstant, rate: Double) -> Double {
        let elapsed = Double(LinkTime.elapsed(from: lastUpdate, to: now))
        return min(capacity(rate: rate), tokens + elapsed * rate)
    }

    func mayRelease(now: ConduitInstant, rate: Double) -> Bool {
        tokens(at: now, rate: rate) >= Double(maxDatagramSize)
    }

    /// When a full datagram may go out.
    func nextRelease(now: ConduitInstant, rate: Double) -> ConduitInstant {
        let missing = Double(maxDatagramSize) - tokens(at: now, rate: rate)
        guard missing > 0 else { return now }
        return LinkTime.add(now, Int64((missing / rate).rounded(.up)) + 1)
    }

    mutating func consume(_ bytes: Int, now: ConduitInstant, rate: Double) {
        tokens = tokens(at: now, rate: rate) - Double(bytes)
        lastUpdate = max(lastUpdate, now)
    }
}

/// A per-session sending rate cap.
public enum RateLimit: Hashable, Sendable, CustomStringConvertible {
    /// At most this many bits per second.
    case bitsPerSecond(Int)
    /// No pacing: for benchmarks and local links. Queues still bound memory.
    case unlimited

    /// 2 Mbit/s, the LINE Planet data-session cap that keeps data from starving voice and video.
    public static let `default` = RateLimit.bitsPerSecond(2_000_000)

    /// Parses `2000000`, `2mbps`, `500kbps`, `unlimited`.
    public init(parsing text: String) throws(ConduitError) {
        let lower = text.lowercased()
        if lower == "unlimited" || lower == "off" || lower == "none" {
            self = .unlimited
            return
        }
        var digits = Substring(lower)
        var scale = 1
        for (suffix, factor) in [("gbps", 1_000_000_000), ("mbps", 1_000_000), ("kbps", 1_000), ("bps", 1)] where digits.hasSuffix(suffix) {
            digits = digits.dropLast(suffix.count)
            scale = factor
            break
        }
        guard digits.allSatisfy(\.isASCIIDigit), let value = Int(digits), value > 0, value <= Int.max / scale else {
            throw ConduitError(.invalidConfiguration, "rate '\(text)' is not a positive bit rate (e.g. 2000000, 2mbps, unlimited)")
        }
        self = .bitsPerSecond(value * scale)
    }

    public var description: String {
        switch self {
        case .unlimited: "unlimited"
        case .bitsPerSecond(let bps): "\(bps) bit/s"
        }
    }
}

/// A token bucket that paces one session's frames to its ``RateLimit``.
///
/// Credit may go negative by at most one frame: a frame is released whenever the balance is
/// positive, which keeps large frames from starving under a small cap.
public struct Pacer: Sendable {
    /// The rate this pacer enforces.
    public let limit: RateLimit
    /// Largest burst, in bytes, released back to back after an idle period.
    public let burstBytes: Int
    private var credit: Double
    private var lastRefill: ConduitInstant

    /// Makes a pacer with full credit at `now`. `burstBytes` defaults to a few frames' worth.
    public init(limit: RateLimit, burstBytes: Int? = nil, now: ConduitInstant) {
        self.limit = limit
        switch limit {
        case .unlimited:
            self.burstBytes = .max
        case .bitsPerSecond(let bps):
            // 20 ms of traffic, and at least a few frames.
            self.burstBytes = burstBytes ?? max(4 * 1_500, bps / 8 / 50)
        }
        credit = Double(min(self.burstBytes, 1 << 40))
        lastRefill = now
    }

    private mutating func refill(now: ConduitInstant) {
        guard case .bitsPerSecond(let bps) = limit, now > lastRefill else { return }
        let seconds = Double((now - lastRefill).nanosecondsClamped) / 1e9
        credit = min(Double(burstBytes), credit + seconds * Double(bps) / 8)
        lastRefill = now
    }

    /// True if a frame may go out now.
    public mutating func mayRelease(now: ConduitInstant) -> Bool {
        guard case .bitsPerSecond = limit else { return true }
        refill(now: now)
        return credit > 0
    }

    /// Charges `bytes` just sent against the credit (which may go negative by one frame).
    public mutating func consume(_ bytes: Int, now: ConduitInstant) {
        guard case .bitsPerSecond = limit else { return }
        refill(now: now)
        credit -= Double(bytes)
    }

    /// When the next frame may go out (now, if it may already).
    public func nextRelease(now: ConduitInstant) -> ConduitInstant {
        guard case .bitsPerSecond(let bps) = limit else { return now }
        let seconds = Double((now - lastRefill).nanosecondsClamped) / 1e9
        let current = credit + seconds * Double(bps) / 8
        guard current <= 0 else { return now }
        let wait = (-current + 1) * 8 / Double(bps)
        return now + .nanoseconds(Int64(wait * 1e9) + 1)
    }

    /// How long `bytes` take at this rate (zero when unlimited).
    public func drainTime(of bytes: Int) -> Duration {
        guard case .bitsPerSecond(let bps) = limit else { return .zero }
        return .nanoseconds(Int64(clamping: Int64(Double(bytes) * 8 / Double(bps) * 1e9)))
    }
}

/// Hysteresis for the `tooLongQueuedData` event: turns on when the queueing delay reaches
/// `onThreshold`, off again only once it has fallen to `offThreshold`, so the app is not flooded
/// with events while the queue hovers around one value.
public struct QueueDelayMonitor: Sendable, Hashable {
    /// The queueing delay at which the event turns on.
    public var onThreshold: Duration
    /// The queueing delay at or below which it turns off again; at most ``onThreshold``.
    public var offThreshold: Duration
    /// Whether the event is on now (`tooLongQueuedData(enabled: true)` was the last reported).
    public private(set) var isTooLong = false

    /// Makes a monitor that is off, with the default thresholds of 500 ms and 100 ms.
    public init(onThreshold: Duration = .milliseconds(500), offThreshold: Duration = .milliseconds(100)) {
        precondition(offThreshold <= onThreshold, "the off threshold must not exceed the on threshold")
        self.onThreshold = onThreshold
        self.offThreshold = offThreshold
    }

    /// Feeds the current queueing delay; returns the new state when it changed.
    public mutating func update(delay: Duration) -> Bool? {
        if !isTooLong, delay >= onThreshold {
            isTooLong = true
            return true
        }
        if isTooLong, delay <= offThreshold {
            isTooLong = false
            return false
        }
        return nil
    }
}

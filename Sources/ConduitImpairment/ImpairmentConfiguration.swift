public import ConduitCore

/// What an emulated network does to datagrams: the knobs of `tc netem`, in user space.
///
/// Probabilities are per datagram and independent. Parsed from the query options that the
/// loopback transport and `conduit impair` share: `loss`, `dup`, `reorder`, `corrupt` (0...1),
/// `delay-ms`, `jitter-ms`, `rate` (`10mbps`, bits/s, `unlimited`), `queue-ms`, `max-size` (bytes), `seed`.
public struct ImpairmentConfiguration: Hashable, Sendable {
    /// Chance that a datagram is dropped (0…1).
    public var loss: Double = 0
    /// Chance that a datagram is delivered twice (0…1).
    public var duplicate: Double = 0
    /// Chance that a datagram is held back by ``reorderHold`` so later ones overtake it.
    public var reorder: Double = 0
    /// Chance that one bit of a datagram is flipped.
    public var corrupt: Double = 0
    /// One-way propagation delay.
    public var delay: Duration = .zero
    /// Extra delay drawn uniformly from `0...jitter`. Jitter alone never reorders (like a real
    /// queue); reordering is the separate ``reorder`` knob.
    public var jitter: Duration = .zero
    /// Bottleneck rate: datagrams queue behind each other at this rate.
    public var rate: RateLimit = .unlimited
    /// The bottleneck's buffer, as the longest a datagram may wait in it: one that would wait
    /// longer is dropped, as a router's full buffer drops it (drop-tail; netem's `limit`, in
    /// time). Nil: the buffer never fills. Only with a ``rate``.
    public var queueLimit: Duration?
    /// How long a reordered datagram is held back.
    public var reorderHold: Duration = .milliseconds(10)
    /// The seed of the model's random numbers: the same seed replays the same losses.
    public var seed: UInt64 = 1
    /// Datagrams larger than this many bytes are dropped, as a path whose MTU is smaller drops
    /// them (a black hole for path MTU discovery, RFC 8899 section 4.3); nil for no limit.
    public var maxDatagramSize: Int?

    /// No impairment: nothing lost, delayed or changed.
    public init() {}

    /// No impairment at all.
    public var isTransparent: Bool {
        loss == 0 && duplicate == 0 && reorder == 0 && corrupt == 0 && delay == .zero && jitter == .zero && rate == .unlimited
            && maxDatagramSize == nil
    }

    /// The option names this configuration reads.
    public static let optionNames: Set<String> = ["loss", "dup", "reorder", "corrupt", "delay-ms", "jitter-ms", "rate", "seed", "reorder-hold-ms", "max-size", "queue-ms"]

    /// Reads the impairment options present in `options`; others are left to the caller.
    public init(options: [String: String]) throws(ConduitError) {
        func probability(_ key: String) throws(ConduitError) -> Double {
            guard let text = options[key] else { return 0 }
            guard let value = Double(text), value >= 0, value <= 1 else {
                throw ConduitError(.invalidConfiguration, "\(key)=\(text) must be a probability between 0 and 1")
            }
            return value
        }
        func milliseconds(_ key: String, default defaultValue: Duration = .zero) throws(ConduitError) -> Duration {
            guard let text = options[key] else { return defaultValue }
            guard let value = Double(text), value >= 0, value <= 3_600_000 else {
                throw ConduitError(.invalidConfiguration, "\(key)=\(text) must be a number of milliseconds between 0 and 3600000")
            }
            return .nanoseconds(Int64(value * 1_000_000))
        }
        self.init()
        loss = try probability("loss")
        duplicate = try probability("dup")
        reorder = try probability("reorder")
        corrupt = try probability("corrupt")
        delay = try milliseconds("delay-ms")
        jitter = try milliseconds("jitter-ms")
        reorderHold = try milliseconds("reorder-hold-ms", default: .milliseconds(10))
        if let text = options["rate"] { rate = try RateLimit(parsing: text) }
        if options["queue-ms"] != nil { queueLimit = try milliseconds("queue-ms") }
        if let text = options["max-size"] {
            guard text.allSatisfy(\.isASCIIDigit), let value = Int(text), (1...65_535).contains(value) else {
                throw ConduitError(.invalidConfiguration, "max-size=\(text) must be a number of bytes between 1 and 65535")
            }
            maxDatagramSize = value
        }
        if let text = options["seed"] {
            guard text.allSatisfy(\.isASCIIDigit), let value = UInt64(text) else {
                throw ConduitError(.invalidConfiguration, "seed=\(text) must be a non-negative integer")
            }
            seed = value
        }
    }
}

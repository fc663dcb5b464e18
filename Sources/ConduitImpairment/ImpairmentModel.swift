public import ConduitCore

/// Decides, deterministically from its seed, what happens to each datagram crossing an emulated
/// network: dropped, delivered once or twice, when, and whether a bit is flipped.
///
/// Sans-IO like the rest of the core: the caller passes `now` and schedules the deliveries itself
/// (on virtual time in simulations, on a real clock in the loopback transport and `conduit impair`).
/// A partition (blackout) drops everything while ``isPartitioned`` is set.
public struct ImpairmentModel: Sendable {
    /// What the model did, counted since it was made.
    public struct Statistics: Sendable, Hashable {
        /// Datagrams submitted.
        public var submitted = 0
        /// Datagrams dropped by the `loss` probability.
        public var dropped = 0
        /// Datagrams dropped while partitioned.
        public var droppedByPartition = 0
        /// Datagrams dropped for being larger than ``ImpairmentModel/maxDatagramSize``.
        public var droppedOverSize = 0
        /// Extra copies made (the `dup` probability).
        public var duplicated = 0
        /// Datagrams delayed past later ones (the `reorder` probability).
        public var reordered = 0
        /// Datagrams with a bit flipped (the `corrupt` probability).
        public var corrupted = 0
        /// Datagrams that went through the bottleneck (a `rate` is set).
        public var queuedAtBottleneck = 0
        /// Datagrams dropped because the bottleneck's buffer was full (``ImpairmentConfiguration/queueLimit``).
        public var droppedAtBottleneck = 0
        /// How long those datagrams waited at the bottleneck behind others, in total: the
        /// queueing delay the senders built up (divide by ``queuedAtBottleneck`` for the mean).
        public var totalQueueDelay = Duration.zero
        /// The longest any datagram waited at the bottleneck behind others.
        public var maxQueueDelay = Duration.zero
        /// All counters at zero.
        public init() {}
    }

    /// The fate of one datagram: zero, one or two deliveries.
    public struct Decision: Sendable, Hashable {
        /// When to deliver the datagram: empty if dropped, two entries if duplicated.
        public var deliveries: [Delivery]
        /// Whether the datagram is lost.
        public var isDropped: Bool { deliveries.isEmpty }
    }

    /// One delivery of a datagram.
    public struct Delivery: Sendable, Hashable {
        /// When to deliver it.
        public var at: ConduitInstant
        /// Flip bit `bit` of byte `byte` before delivering, if set.
        public var corruption: (byte: Int, bit: UInt8)?

        public static func == (lhs: Delivery, rhs: Delivery) -> Bool {
            lhs.at == rhs.at && lhs.corruption?.byte == rhs.corruption?.byte && lhs.corruption?.bit == rhs.corruption?.bit
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(at)
            hasher.combine(corruption?.byte)
            hasher.combine(corruption?.bit)
        }

        /// Applies the corruption, if any, to `datagram`.
        public func apply(to datagram: inout [UInt8]) {
            guard let corruption, corruption.byte < datagram.count else { return }
            datagram[corruption.byte] ^= 1 << corruption.bit
        }
    }

    /// Probabilities, delays, rate and seed.
    public let configuration: ImpairmentConfiguration
    /// While true, every datagram is dropped (a network blackout).
    public var isPartitioned = false
    /// Datagrams larger than this are dropped (the path's MTU); starts at the configuration's
    /// ``ImpairmentConfiguration/maxDatagramSize`` and may change mid-run (a route change).
    public var maxDatagramSize: Int?
    /// What the model decided so far.
    public private(set) var statistics = Statistics()
    private var random: SeededRandom
    /// When the bottleneck finishes sending what it holds.
    private var linkFreeAt = ConduitInstant.zero
    /// Latest in-order delivery so far: jitter must not reorder.
    private var lastDelivery = ConduitInstant.zero

    /// Makes a model; its random numbers come from `configuration.seed`, so runs repeat exactly.
    public init(configuration: ImpairmentConfiguration) {
        self.configuration = configuration
        self.random = SeededRandom(seed: configuration.seed)
        self.maxDatagramSize = configuration.maxDatagramSize
    }

    /// Decides the fate of a `size`-byte datagram sent at `now`.
    public mutating func submit(size: Int, now: ConduitInstant) -> Decision {
        statistics.submitted += 1
        if isPartitioned {
            statistics.dropped += 1
            statistics.droppedByPartition += 1
            return Decision(deliveries: [])
        }
        // Draw every random number in a fixed order whatever the outcome, so one knob's value
        // does not shift the sequence another knob sees.
        let lost = random.chance(configuration.loss)
        let duplicated = random.chance(configuration.duplicate)
        let reordered = random.chance(configuration.reorder)
        let corrupted = random.chance(configuration.corrupt)
        let jitterDraw = random.unit()
        let corruptByte = size > 0 ? Int(random.next() % UInt64(size)) : 0
        let corruptBit = UInt8(random.next() % 8)
        if lost {
            statistics.dropped += 1
            return Decision(deliveries: [])
        }
        if let maxDatagramSize, size > maxDatagramSize {
            statistics.dropped += 1
            statistics.droppedOverSize += 1
            return Decision(deliveries: [])
        }
        // The bottleneck: serialise behind what is already queued.
        var departure = now
        if case .bitsPerSecond(let bps) = configuration.rate {
            let start = max(now, linkFreeAt)
            let wait = start - now
            if let limit = configuration.queueLimit, wait > limit {
                statistics.dropped += 1
                statistics.droppedAtBottleneck += 1
                return Decision(deliveries: [])
            }
            statistics.queuedAtBottleneck += 1
            statistics.totalQueueDelay += wait
            statistics.maxQueueDelay = max(statistics.maxQueueDelay, wait)
            let serialisation = Duration.nanoseconds(Int64(Double(size) * 8 / Double(bps) * 1e9))
            linkFreeAt = start + serialisation
            departure = linkFreeAt
        }
        let jitter = Duration.nanoseconds(Int64(Double(configuration.jitter.nanosecondsClamped) * jitterDraw))
        var arrival = max(departure + configuration.delay + jitter, lastDelivery)
        if reordered {
            statistics.reordered += 1
            arrival = arrival + configuration.reorderHold
        } else {
            lastDelivery = arrival
        }
        var first = Delivery(at: arrival, corruption: nil)
        if corrupted, size > 0 {
            statistics.corrupted += 1
            first.corruption = (corruptByte, corruptBit)
        }
        guard duplicated else { return Decision(deliveries: [first]) }
        statistics.duplicated += 1
        return Decision(deliveries: [first, Delivery(at: arrival, corruption: nil)])
    }
}

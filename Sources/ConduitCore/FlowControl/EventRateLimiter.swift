/// Admits at most `perSecond` events per second, with bursts of up to `burstWindow`'s worth (one
/// second's unless given, at least one event): a token bucket on the caller's time (the core reads
/// no clock), for limits such as joins or handshakes per second. The rate may change while it runs
/// (``setRate(perSecond:now:)``), for limits that adapt to load.
public struct EventRateLimiter: Sendable, Hashable {
    /// Events admitted per second on average.
    public private(set) var perSecond: Int
    /// How long a run at `perSecond` the bucket holds: the largest burst is that many events.
    public let burstWindow: Duration
    /// Credit in event-nanoseconds: one event costs a billion, a nanosecond earns `perSecond`.
    private var credit: Int64
    private var refilledAt: ConduitInstant

    /// Makes a limiter with a full bucket at `now`. `perSecond` is at least 1; `burstWindow` is
    /// kept between a nanosecond and a second.
    public init(perSecond: Int, burstWindow: Duration = .seconds(1), now: ConduitInstant) {
        self.perSecond = Self.clamped(perSecond)
        self.burstWindow = min(max(burstWindow, .nanoseconds(1)), .seconds(1))
        credit = 0
        refilledAt = now
        credit = capacity
    }

    private static let costPerEvent: Int64 = 1_000_000_000
    private static func clamped(_ perSecond: Int) -> Int { max(1, min(perSecond, 1_000_000_000)) }

    /// The most credit the bucket holds: `burstWindow` at `perSecond`, and at least one event.
    /// (At most 10^9 events/s over at most 10^9 ns: no overflow.)
    private var capacity: Int64 { max(Self.costPerEvent, Int64(perSecond) * burstWindow.nanosecondsClamped) }

    /// Charges one event at `now`: true if it is within the rate, false (nothing charged) if not.
    public mutating func admit(now: ConduitInstant) -> Bool {
        refill(to: now)
        guard credit >= Self.costPerEvent else { return false }
        credit -= Self.costPerEvent
        return true
    }

    /// From `now` on, admits `perSecond` a second: the credit earned until `now` is at the old
    /// rate, and what is left beyond the new rate's burst is dropped (a higher rate does not
    /// fill the bucket at once).
    public mutating func setRate(perSecond: Int, now: ConduitInstant) {
        refill(to: now)
        self.perSecond = Self.clamped(perSecond)
        credit = min(credit, capacity)
    }

    /// Whether the bucket is full at `now`: a limiter made afresh then would behave the same, so
    /// its owner may forget it.
    public func isFull(at now: ConduitInstant) -> Bool {
        credit(at: now) >= capacity
    }

    private mutating func refill(to now: ConduitInstant) {
        guard now > refilledAt else { return }
        credit = credit(at: now)
        refilledAt = now
    }

    /// The credit refilled up to `now` (capped at the bucket's capacity).
    private func credit(at now: ConduitInstant) -> Int64 {
        guard now > refilledAt else { return credit }
        // More than a second of idleness fills the bucket anyway; capping first avoids overflow.
        let elapsed = min((now - refilledAt).nanosecondsClamped, Self.costPerEvent)
        return min(capacity, credit + elapsed * Int64(perSecond))
    }
}

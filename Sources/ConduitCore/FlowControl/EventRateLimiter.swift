/// Admits at most `perSecond` events per second, with bursts of up to one second's worth: a token
/// bucket on the caller's time (the core reads no clock), for limits such as joins or handshakes
/// per second.
public struct EventRateLimiter: Sendable, Hashable {
    /// Events admitted per second on average; also the largest burst.
    public let perSecond: Int
    /// Credit in event-nanoseconds: one event costs a billion, a nanosecond earns `perSecond`.
    private var credit: Int64
    private var refilledAt: ConduitInstant

    /// Makes a limiter with a full bucket at `now`. `perSecond` is at least 1.
    public init(perSecond: Int, now: ConduitInstant) {
        self.perSecond = max(1, min(perSecond, 1_000_000_000))
        credit = Self.costPerEvent * Int64(self.perSecond)
        refilledAt = now
    }

    private static let costPerEvent: Int64 = 1_000_000_000

    /// Charges one event at `now`: true if it is within the rate, false (nothing charged) if not.
    public mutating func admit(now: ConduitInstant) -> Bool {
        if now > refilledAt {
            credit = credit(at: now)
            refilledAt = now
        }
        guard credit >= Self.costPerEvent else { return false }
        credit -= Self.costPerEvent
        return true
    }

    /// Whether the bucket is full at `now`: a limiter made afresh then would behave the same, so
    /// its owner may forget it.
    public func isFull(at now: ConduitInstant) -> Bool {
        credit(at: now) >= Self.costPerEvent * Int64(perSecond)
    }

    /// The credit refilled up to `now` (capped at one second's worth).
    private func credit(at now: ConduitInstant) -> Int64 {
        guard now > refilledAt else { return credit }
        // More than a second of idleness fills the bucket anyway; capping first avoids overflow.
        let elapsed = min((now - refilledAt).nanosecondsClamped, Self.costPerEvent)
        return min(Self.costPerEvent * Int64(perSecond), credit + elapsed * Int64(perSecond))
    }
}

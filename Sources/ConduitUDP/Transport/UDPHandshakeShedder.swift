package import ConduitCore

/// How many new links a listener takes, judged by how far behind its socket is.
///
/// A listener that has more to do than its CPU allows falls behind its socket: datagrams queue in
/// the kernel, and every datagram, an established member's included, waits behind the queue.
/// Each read burst (NIO reads until the socket is empty or its per-burst cap is reached) tells how
/// deep that queue was: a burst of `overloadBurst` datagrams or more means the listener is at its
/// capacity. New links are what a storm of joins costs (each link's tasks, timers and engine, for
/// the seconds until it is refused and drained), so their rate adapts as a congestion window
/// does: halved at an overloaded burst (at most once per `step`), raised by a tenth for every
/// `step` without one, between a floor (a twentieth of the ceiling: joins still get in while a
/// room is busy) and `handshakesPerSecond`. HELLOs, cheap but not free, are answered at most at
/// four times that rate for a `step` after an overloaded burst (a link needs a cookie first, so
/// never fewer than the links the floor lets in); the rest go unanswered, and clients retransmit.
///
/// A fixed rate is too low for a quiet relay or too high for a busy one: with 1,000 links/s
/// allowed, a bad-token storm held one core of an optimized relay and a member's p99 went from
/// 3 to 65-94 ms, queued behind it (`RelayAbuseSoakTests`).
///
/// Deterministic: the caller passes `now`.
package struct UDPHandshakeShedder: Sendable {
    /// How often the rate may be halved, and how long HELLOs are limited after an overloaded burst.
    package static let step = Duration.milliseconds(100)
    /// HELLOs answered per new link allowed, while limited.
    package static let hellosPerLink = 4

    let overloadBurst: Int
    /// The rate's bounds, in links per second.
    package let ceiling: Int
    package let floor: Int
    /// New links allowed per second now.
    package private(set) var rate: Int
    /// Token buckets holding a `step`'s worth at the current rate (at least one).
    private var links: EventRateLimiter
    private var hellos: EventRateLimiter
    /// When the rate was last halved, and last raised (or halved).
    private var halvedAt: ConduitInstant?
    private var raisedAt: ConduitInstant?
    /// When the last overloaded burst ended.
    private var overloadedAt: ConduitInstant?
    /// Overloaded bursts seen.
    package private(set) var overloadedBursts = 0

    /// A shedder that counts a burst of `overloadBurst` datagrams as overload, allowing at most
    /// `ceiling` new links per second.
    package init(overloadBurst: Int, ceiling: Int) {
        self.overloadBurst = overloadBurst
        self.ceiling = max(1, ceiling)
        floor = max(1, self.ceiling / 20)
        rate = self.ceiling
        // (Full buckets: the first take refills nothing past a full one, whatever `now` is.)
        links = EventRateLimiter(perSecond: rate, burstWindow: Self.step, now: .zero)
        hellos = EventRateLimiter(perSecond: rate * Self.hellosPerLink, burstWindow: Self.step, now: .zero)
    }

    /// A read burst of `datagrams` ended at `now`.
    package mutating func noteBurst(datagrams: Int, now: ConduitInstant) {
        guard datagrams >= overloadBurst else { return }
        overloadedBursts += 1
        overloadedAt = now
        guard halvedAt.map({ now - $0 >= Self.step }) ?? true else { return }
        raise(now: now)
        halvedAt = now
        raisedAt = now
        setRate(max(floor, rate / 2), now: now)
    }

    /// Whether a HELLO is answered at `now`: always, unless within a `step` of an overloaded
    /// burst; then while HELLOs stay within `hellosPerLink` times the rate of new links.
    package mutating func answerHello(now: ConduitInstant) -> Bool {
        guard let overloadedAt, now - overloadedAt < Self.step else { return true }
        raise(now: now)
        return hellos.admit(now: now)
    }

    /// Takes one new link at `now` if the rate allows it.
    package mutating func admitLink(now: ConduitInstant) -> Bool {
        raise(now: now)
        return links.admit(now: now)
    }

    /// A tenth more for every `step` since the rate last changed, up to the ceiling.
    private mutating func raise(now: ConduitInstant) {
        guard let raisedAt, rate < ceiling else { return }
        var steps = (now - raisedAt).nanosecondsClamped / Self.step.nanosecondsClamped
        guard steps > 0 else { return }
        self.raisedAt = raisedAt + Self.step * Int(steps)
        var raised = rate
        while steps > 0, raised < ceiling {
            raised = min(ceiling, raised + max(1, raised / 10))
            steps -= 1
        }
        setRate(raised, now: now)
    }

    private mutating func setRate(_ newRate: Int, now: ConduitInstant) {
        rate = newRate
        links.setRate(perSecond: newRate, now: now)
        hellos.setRate(perSecond: newRate * Self.hellosPerLink, now: now)
    }
}

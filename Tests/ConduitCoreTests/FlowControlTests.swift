import ConduitCore
import Testing

// RateLimit parsing, the Pacer token bucket on virtual time, and the queue-delay hysteresis.

@Suite("Rate limit")
struct RateLimitTests {
    @Test("parses plain, suffixed and unlimited rates", arguments: [
        ("2000000", RateLimit.bitsPerSecond(2_000_000)),
        ("2mbps", .bitsPerSecond(2_000_000)),
        ("2MBPS", .bitsPerSecond(2_000_000)),
        ("500kbps", .bitsPerSecond(500_000)),
        ("1gbps", .bitsPerSecond(1_000_000_000)),
        ("64bps", .bitsPerSecond(64)),
        ("1", .bitsPerSecond(1)),
        ("unlimited", .unlimited),
        ("Unlimited", .unlimited),
        ("off", .unlimited),
        ("none", .unlimited),
    ] as [(String, RateLimit)])
    func parses(text: String, expected: RateLimit) throws {
        #expect(try RateLimit(parsing: text) == expected)
    }

    @Test("refuses what is not a positive bit rate", arguments: [
        "", "abc", "-5", "0", "0kbps", "-2mbps", "mbps", "bps", "2 mbps", "2.5mbps", "2mbit", "2mbpss", " 2000", "9223372036854775807gbps",
    ])
    func refuses(text: String) {
        let error = #expect(throws: ConduitError.self) {
            _ = try RateLimit(parsing: text)
        }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test("defaults to 2 Mbit/s and describes itself")
    func defaults() {
        #expect(RateLimit.default == .bitsPerSecond(2_000_000))
        #expect(RateLimit.default.description == "2000000 bit/s")
        #expect(RateLimit.unlimited.description == "unlimited")
    }
}

@Suite("Pacer")
struct PacerTests {
    @Test("2 Mbit/s over 10 virtual seconds releases rate x time plus one burst")
    func tenSecondsAt2Mbps() {
        var pacer = Pacer(limit: .bitsPerSecond(2_000_000), now: .zero)
        #expect(pacer.burstBytes == 6_000)
        let end = ConduitInstant.zero + .seconds(10)
        var now = ConduitInstant.zero
        var released = 0
        var steps = 0
        var timeWentBackOrStood = false
        while now < end, steps < 1_000_000 {
            steps += 1
            if pacer.mayRelease(now: now) {
                pacer.consume(1_232, now: now)
                released += 1_232
            } else {
                let next = pacer.nextRelease(now: now)
                if next <= now { timeWentBackOrStood = true }
                now = max(next, now + .nanoseconds(1))
            }
        }
        #expect(!timeWentBackOrStood, "nextRelease is later than now whenever mayRelease is false")
        #expect(steps < 1_000_000)
        // 2,500,000 bytes of rate plus the 6,000-byte burst (and at most one frame of overdraft).
        #expect((2_450_000...2_560_000).contains(released), "released \(released) bytes")
        #expect(released >= 2_500_000 + 6_000 - 1_232)
        #expect(released <= 2_500_000 + 6_000 + 1_232)
    }

    @Test("a fresh pacer releases one burst back to back, then waits")
    func burst() {
        var pacer = Pacer(limit: .bitsPerSecond(2_000_000), now: .ms(5))
        var frames = 0
        while pacer.mayRelease(now: .ms(5)) {
            pacer.consume(1_232, now: .ms(5))
            frames += 1
        }
        // 6,000 bytes of credit: five frames, the last one overdrawing by 160 bytes.
        #expect(frames == 5)
        let next = pacer.nextRelease(now: .ms(5))
        // 161 bytes at 250,000 bytes/s is 644 microseconds.
        #expect(next > .ms(5))
        #expect(next <= .ms(5) + .microseconds(650))
        let tooEarly = pacer.mayRelease(now: .ms(5) + .microseconds(600))
        #expect(!tooEarly)
        let onTime = pacer.mayRelease(now: next)
        #expect(onTime)

        // An idle period refills no more than one burst.
        var idle = Pacer(limit: .bitsPerSecond(2_000_000), now: .zero)
        while idle.mayRelease(now: .zero) { idle.consume(1_232, now: .zero) }
        var afterIdle = 0
        let later = ConduitInstant.zero + .seconds(60)
        while idle.mayRelease(now: later) {
            idle.consume(1_232, now: later)
            afterIdle += 1
        }
        #expect(afterIdle == 5)
    }

    @Test("burst size is 20 ms of traffic, at least four 1,500-byte frames, or as given")
    func burstSizes() {
        #expect(Pacer(limit: .bitsPerSecond(2_000_000), now: .zero).burstBytes == 6_000)
        #expect(Pacer(limit: .bitsPerSecond(8_000_000), now: .zero).burstBytes == 20_000)
        #expect(Pacer(limit: .bitsPerSecond(1_000), now: .zero).burstBytes == 6_000)
        #expect(Pacer(limit: .bitsPerSecond(2_000_000), burstBytes: 1_500, now: .zero).burstBytes == 1_500)
        #expect(Pacer(limit: .unlimited, now: .zero).burstBytes == .max)
    }

    @Test("drain time is bytes at the rate")
    func drainTime() {
        let pacer = Pacer(limit: .bitsPerSecond(2_000_000), now: .zero)
        #expect(pacer.drainTime(of: 250_000) == .seconds(1))
        #expect(pacer.drainTime(of: 0) == .zero)
        #expect(pacer.drainTime(of: 1_250) == .milliseconds(5))
        #expect(Pacer(limit: .unlimited, now: .zero).drainTime(of: 1 << 40) == .zero)
    }

    @Test("unlimited always releases")
    func unlimited() {
        var pacer = Pacer(limit: .unlimited, now: .zero)
        for _ in 0..<10_000 {
            let released = pacer.mayRelease(now: .zero)
            #expect(released)
            pacer.consume(65_535, now: .zero)
        }
        let stillReleases = pacer.mayRelease(now: .zero)
        #expect(stillReleases)
        #expect(pacer.nextRelease(now: .ms(7)) == .ms(7))
    }
}

@Suite("Queue delay monitor")
struct QueueDelayMonitorTests {
    @Test("switches on at the on threshold, off at the off threshold, once each")
    func hysteresis() {
        var monitor = QueueDelayMonitor(onThreshold: .milliseconds(500), offThreshold: .milliseconds(100))
        let delays: [Int64] = [0, 100, 499, 500, 501, 900, 500, 300, 101, 100, 99, 0, 100, 499, 1_000, 1_000, 50, 50]
        let changes = delays.map { monitor.update(delay: .milliseconds($0)) }
        #expect(changes == [nil, nil, nil, true, nil, nil, nil, nil, nil, false, nil, nil, nil, nil, true, nil, false, nil])
        #expect(!monitor.isTooLong)
    }

    @Test("stays on while the delay hovers between the thresholds")
    func hovering() {
        var monitor = QueueDelayMonitor()
        #expect(monitor.update(delay: .milliseconds(600)) == true)
        #expect(monitor.isTooLong)
        for delay in stride(from: 499, through: 101, by: -1) {
            #expect(monitor.update(delay: .milliseconds(Int64(delay))) == nil)
        }
        #expect(monitor.isTooLong)
        #expect(monitor.update(delay: .milliseconds(100)) == false)
        #expect(!monitor.isTooLong)
        for delay in stride(from: 100, through: 499, by: 1) {
            #expect(monitor.update(delay: .milliseconds(Int64(delay))) == nil)
        }
    }

    @Test("equal thresholds still alternate one event at a time")
    func equalThresholds() {
        var monitor = QueueDelayMonitor(onThreshold: .milliseconds(200), offThreshold: .milliseconds(200))
        #expect(monitor.update(delay: .milliseconds(200)) == true)
        #expect(monitor.update(delay: .milliseconds(200)) == false)
        #expect(monitor.update(delay: .milliseconds(199)) == nil)
        #expect(monitor.update(delay: .milliseconds(201)) == true)
    }
}

@Suite("Event rate limiter")
struct EventRateLimiterTests {
    static let start = ConduitInstant.zero + .seconds(10)

    static func admitted(_ limiter: inout EventRateLimiter, _ attempts: Int, now: ConduitInstant) -> Int {
        (0..<attempts).reduce(0) { count, _ in count + (limiter.admit(now: now) ? 1 : 0) }
    }

    @Test("a burst window of a tenth of a second holds a tenth of the rate, and at least one event")
    func burstWindow() {
        var limiter = EventRateLimiter(perSecond: 1_000, burstWindow: .milliseconds(100), now: Self.start)
        #expect(Self.admitted(&limiter, 150, now: Self.start) == 100)
        // An hour idle refills a tenth of a second's worth, no more.
        #expect(Self.admitted(&limiter, 150, now: Self.start + .seconds(3_600)) == 100)
        var slow = EventRateLimiter(perSecond: 5, burstWindow: .milliseconds(100), now: Self.start)
        #expect(Self.admitted(&slow, 3, now: Self.start) == 1)
        #expect(Self.admitted(&slow, 1, now: Self.start + .milliseconds(199)) == 0)
        #expect(Self.admitted(&slow, 1, now: Self.start + .milliseconds(200)) == 1)
    }

    @Test("a lower rate drops the credit past its burst at once; a higher one earns from then on, not before")
    func changingTheRate() {
        var limiter = EventRateLimiter(perSecond: 1_000, burstWindow: .milliseconds(100), now: Self.start)
        limiter.setRate(perSecond: 100, now: Self.start)
        #expect(Self.admitted(&limiter, 50, now: Self.start) == 10)
        // 50 ms at 100/s earned 5; raised to 1,000/s then, 10 ms more earn 10.
        let raised = Self.start + .milliseconds(50)
        limiter.setRate(perSecond: 1_000, now: raised)
        #expect(limiter.perSecond == 1_000)
        #expect(Self.admitted(&limiter, 50, now: raised + .milliseconds(10)) == 15)
        #expect(!limiter.isFull(at: raised + .milliseconds(99)))
        #expect(limiter.isFull(at: raised + .milliseconds(110)))
    }

    @Test("rates and windows out of range are clamped, never trapping")
    func clamps() {
        var limiter = EventRateLimiter(perSecond: 0, burstWindow: .seconds(-5), now: Self.start)
        #expect(limiter.perSecond == 1)
        #expect(limiter.burstWindow == .nanoseconds(1))
        #expect(Self.admitted(&limiter, 3, now: Self.start) == 1)
        limiter.setRate(perSecond: .max, now: Self.start + .seconds(1))
        #expect(limiter.perSecond == 1_000_000_000)
        var huge = EventRateLimiter(perSecond: .max, burstWindow: .seconds(100), now: Self.start)
        #expect(huge.burstWindow == .seconds(1))
        #expect(Self.admitted(&huge, 1_000, now: Self.start + .seconds(1_000_000)) == 1_000)
    }
}

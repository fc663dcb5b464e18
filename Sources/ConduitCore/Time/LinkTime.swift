/// Nanosecond arithmetic on ``ConduitInstant`` for the link's timers. `Int64` nanoseconds keep the
/// hot paths cheap (`Duration` is 128 bits) and every operation saturates instead of trapping.
package enum LinkTime {
    package static let millisecond: Int64 = 1_000_000

    @inline(__always)
    package static func add(_ instant: ConduitInstant, _ nanoseconds: Int64) -> ConduitInstant {
        if nanoseconds >= 0 {
            let (sum, overflow) = instant.nanoseconds.addingReportingOverflow(UInt64(nanoseconds))
            return ConduitInstant(nanoseconds: overflow ? .max : sum)
        }
        return ConduitInstant(nanoseconds: instant.nanoseconds - min(instant.nanoseconds, nanoseconds.magnitude))
    }

    /// `later - earlier` in nanoseconds, 0 if `earlier` is later.
    @inline(__always)
    package static func elapsed(from earlier: ConduitInstant, to later: ConduitInstant) -> Int64 {
        later.nanoseconds > earlier.nanoseconds ? Int64(clamping: later.nanoseconds - earlier.nanoseconds) : 0
    }

    package static func nanoseconds(_ duration: Duration) -> Int64 { max(0, duration.nanosecondsClamped) }

    static func duration(_ nanoseconds: Int64) -> Duration { .nanoseconds(nanoseconds) }

    package static func earliest(_ a: ConduitInstant?, _ b: ConduitInstant?) -> ConduitInstant? {
        switch (a, b) {
        case (let x?, let y?): min(x, y)
        case (let x?, nil): x
        case (nil, let y): y
        }
    }
}

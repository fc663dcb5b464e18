/// A point in time passed into the core by its caller. The core never reads a clock, which keeps
/// it deterministic: tests drive it with virtual time, runtimes with a monotonic clock.
public struct ConduitInstant: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Nanoseconds since an arbitrary origin chosen by the caller.
    public var nanoseconds: UInt64

    /// The instant `nanoseconds` after the driver's origin.
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// The driver's origin.
    public static let zero = ConduitInstant(nanoseconds: 0)

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// The instant `rhs` later (negative durations clamp at ``zero``).
    public static func + (lhs: Self, rhs: Duration) -> Self {
        let delta = rhs.nanosecondsClamped
        return delta >= 0
            ? Self(nanoseconds: lhs.nanoseconds &+ UInt64(delta))
            : Self(nanoseconds: lhs.nanoseconds &- min(lhs.nanoseconds, UInt64(-delta)))
    }

    /// `lhs - rhs`, zero when `rhs` is later.
    public static func - (lhs: Self, rhs: Self) -> Duration {
        lhs.nanoseconds >= rhs.nanoseconds ? .nanoseconds(Int64(clamping: lhs.nanoseconds - rhs.nanoseconds)) : .zero
    }

    public var description: String { "t+\(Double(nanoseconds) / 1e9)s" }
}

extension Duration {
    /// A limit as errors say it: "10 s", or "700 ms" when not whole seconds.
    package var limitDescription: String {
        let milliseconds = components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000
        return milliseconds % 1_000 == 0 ? "\(milliseconds / 1_000) s" : "\(milliseconds) ms"
    }

    /// Whole nanoseconds, saturating at the `Int64` range.
    public var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).overflow
            ? (seconds < 0 ? .min : .max) : scaled + attoseconds / 1_000_000_000
    }
}

import ConduitDriver

/// The system's monotonic clock in nanoseconds: what the drivers pass to the sans-IO core as `now`
/// (`SystemMonotonicClock.nanoseconds()` of `ConduitDriver`, kept under this name for source compatibility).
public enum MonotonicClock {
    /// Now, in nanoseconds since an arbitrary point (`CLOCK_MONOTONIC`); never goes backwards.
    public static func nanoseconds() -> UInt64 { SystemMonotonicClock.nanoseconds() }
}

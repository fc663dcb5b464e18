#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The system's monotonic clock in nanoseconds: what the drivers pass to the sans-IO core as `now`.
/// Read directly because turning a `ContinuousClock` reading into nanoseconds goes through
/// `Duration`'s 128-bit arithmetic, which showed in profiles at one reading per message.
public enum MonotonicClock {
    /// Now, in nanoseconds since an arbitrary point (`CLOCK_MONOTONIC`); never goes backwards.
    public static func nanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }
}

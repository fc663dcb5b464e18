public import ConduitCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a driver reads `now` and sleeps until a deadline: injected, so that a test (or a host
/// app's test, through `ConduitTesting`'s `VirtualClock`) runs the same code on virtual time.
public protocol ConduitClock: Sendable {
    /// Now, as the instant the machines are given.
    func now() -> ConduitInstant
    /// Suspends until the clock reaches `deadline` (returns at once if it has); throws
    /// `CancellationError` if the calling task is cancelled first.
    func sleep(until deadline: ConduitInstant) async throws
}

/// The system's monotonic clock (`CLOCK_MONOTONIC`), with its time zero where it was made: the
/// default clock of every driver.
public struct SystemMonotonicClock: ConduitClock {
    /// The reading, in nanoseconds, that this clock calls zero.
    public let origin: UInt64

    /// A clock whose zero is now.
    public init() { origin = Self.nanoseconds() }

    /// Now, in nanoseconds since an arbitrary point; never goes backwards. Read directly because
    /// turning a `ContinuousClock` reading into nanoseconds goes through `Duration`'s 128-bit
    /// arithmetic, which showed in profiles at one reading per message.
    public static func nanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    public func now() -> ConduitInstant { ConduitInstant(nanoseconds: Self.nanoseconds() &- origin) }

    public func sleep(until deadline: ConduitInstant) async throws {
        let delay = deadline - now()
        guard delay > .zero else { return try Task.checkCancellation() }
        try await Task.sleep(for: delay)
    }
}

extension ConduitClock {
    /// Runs `action` once `delay` has passed on this clock, unless the returned task is cancelled
    /// first: the bound on a wait (cancel it once the wait is over), or a grace period.
    @discardableResult
    public func after(_ delay: Duration, _ action: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        let due = now() + delay
        return Task {
            guard (try? await sleep(until: due)) != nil else { return }
            await action()
        }
    }
}

package import Conduit
import ConduitCore

/// Parsing of the command-line values the jobs take, with one-line typed errors.
package enum JobArguments {
    /// `MIN` or `MIN-MAX` bytes, within what one send of `type` may carry.
    package static func sizeRange(_ text: String, for type: SessionType) throws(ConduitError) -> ClosedRange<Int> {
        let parts = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        let numbers = parts.map { part -> Int? in
            guard !part.isEmpty, part.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
            return Int(part)
        }
        guard let low = numbers.first ?? nil, let high = numbers.last ?? nil else {
            throw ConduitError(.invalidConfiguration, "size '\(text)' is not MIN or MIN-MAX in bytes (e.g. 1-16384)")
        }
        guard low <= high else {
            throw ConduitError(.invalidConfiguration, "size range \(text) is inverted (MIN must not exceed MAX)")
        }
        guard high <= type.maxSendSize else {
            throw ConduitError(.messageTooLarge, "size \(high) exceeds the \(type.maxSendSize)-byte limit of one \(type) send")
        }
        return low...high
    }

    /// A transport URL's scheme (`loopback`, `udp`, ...), or the text itself if it does not parse.
    static func scheme(of url: String) -> String {
        (try? TransportURL(parsing: url).scheme) ?? url
    }
}

extension Duration {
    /// The duration in seconds, as a `Double` for reports.
    var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}

/// Bytes over seconds, 0 when no time passed.
func throughput(bytes: Int, seconds: Double) -> Double {
    seconds > 0 ? Double(bytes) / seconds : 0
}

/// Runs `expire` once `deadline` passes unless cancelled first. The jobs' operations are woken by
/// closing what they wait on (the listener, the call), not by cancellation, which `send` under
/// backpressure does not observe; so the watchdog's action is what bounds a job in time.
final class Watchdog: Sendable {
    private let fired = TSanVisibleMutex(false)
    private let task: TSanVisibleMutex<Task<Void, Never>?> = TSanVisibleMutex(nil)

    init(deadline: ContinuousClock.Instant, expire: @escaping @Sendable () async -> Void) {
        let started = Task { [self] in
            try? await Task.sleep(until: deadline, clock: .continuous)
            guard !Task.isCancelled else { return }
            fired.withLock { $0 = true }
            await expire()
        }
        task.withLock { $0 = started }
    }

    var hasFired: Bool { fired.withLock { $0 } }

    func cancel() { task.withLock { $0 }?.cancel() }
}

/// A stream's events until `.closed`, or `nil` at `deadline` (the stream is left as it is).
func closeReason(of session: OutboundDataSession, before deadline: ContinuousClock.Instant) async -> DataSessionCloseReason? {
    await withTaskGroup(of: DataSessionCloseReason?.self) { group in
        group.addTask {
            for await event in session.events {
                if case .closed(let reason) = event { return reason }
            }
            return await session.closeReason
        }
        group.addTask {
            try? await Task.sleep(until: deadline, clock: .continuous)
            return nil
        }
        defer { group.cancelAll() }
        return await group.next() ?? nil
    }
}

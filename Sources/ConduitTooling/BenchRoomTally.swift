import ConduitCore

/// What the room bench's receivers got: per receiver and sender the next message number due
/// (so a duplicate, a gap or a reordering is seen at once), and every delivery's latency.
package final class BenchRoomTally: Sendable {
    /// Sender index (4 bytes) and message number (4 bytes), big-endian, at the payload's start.
    package static let headerSize = 8

    private struct State {
        var next: [[Int]]
        var delivered = 0
        var deliveredTo: [Int]
        var duplicates = 0
        var outOfOrder = 0
        var bytes = 0
        var latencies: [Double] = []
        var origin: ContinuousClock.Instant?
        var lastDelivery: ContinuousClock.Instant?
    }

    private let state: TSanVisibleMutex<State>
    private let expectedPerReceiver: Int
    private let receivers: Int
    /// Latency samples kept, at most (every delivery up to this).
    private static let maxSamples = 4_000_000

    package init(senders: Int, expectedPerReceiver: Int, receivers: Int) {
        state = TSanVisibleMutex(State(next: Array(repeating: Array(repeating: 0, count: senders), count: receivers), deliveredTo: Array(repeating: 0, count: receivers)))
        self.expectedPerReceiver = expectedPerReceiver
        self.receivers = receivers
    }

    package static func stamp(_ payload: inout [UInt8], sender: Int, seq: Int) {
        for (offset, value) in [(0, UInt32(sender)), (4, UInt32(seq))] {
            for byte in 0..<4 { payload[offset + byte] = UInt8(truncatingIfNeeded: value >> (24 - 8 * byte)) }
        }
    }

    private static func read(_ bytes: [UInt8], at offset: Int) -> Int {
        (0..<4).reduce(0) { $0 << 8 | Int(bytes[offset + $1]) }
    }

    package func start(origin: ContinuousClock.Instant) {
        state.withLock { $0.origin = origin }
    }

    /// Tallies one delivery to `receiver`: a message from a sender the bench does not know, or too
    /// short to carry the header, counts as out of order (it is not what was sent).
    package func add(_ bytes: [UInt8], timestamp: UInt64, receiver: Int) {
        let now = ContinuousClock.now
        state.withLock { state in
            guard bytes.count >= Self.headerSize, case let sender = Self.read(bytes, at: 0), state.next[receiver].indices.contains(sender) else {
                state.outOfOrder += 1
                return
            }
            let seq = Self.read(bytes, at: 4)
            let due = state.next[receiver][sender]
            if seq < due {
                state.duplicates += 1
                return
            }
            if seq > due { state.outOfOrder += 1 }
            state.next[receiver][sender] = seq + 1
            state.delivered += 1
            state.deliveredTo[receiver] += 1
            state.bytes += bytes.count
            state.lastDelivery = now
            if let origin = state.origin, state.latencies.count < Self.maxSamples {
                let sentAt = Double(timestamp) / 1_000
                state.latencies.append(Double(origin.duration(to: now).benchNanoseconds) / 1_000 - sentAt)
            }
        }
    }

    /// Waits until every receiver has every message, or `deadline`; true when all arrived.
    package func waitForAll(until deadline: ContinuousClock.Instant) async -> Bool {
        let expected = expectedPerReceiver * receivers
        while !state.withLock({ $0.delivered >= expected }) {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// In-order deliveries so far, per receiver.
    package func deliveredPerReceiver() -> [Int] { state.withLock { $0.deliveredTo } }

    package func fill(_ report: inout BenchRoom.Report) {
        state.withLock { state in
            report.delivered = state.delivered
            report.duplicates = state.duplicates
            report.outOfOrder = state.outOfOrder
            report.missing = max(0, report.expected - state.delivered)
            if let origin = state.origin, let last = state.lastDelivery {
                let elapsed = Double(origin.duration(to: last).benchNanoseconds) / 1e9
                report.elapsedSeconds = elapsed
                if elapsed > 0 {
                    report.forwardedMessagesPerSecond = Double(state.delivered) / elapsed
                    report.forwardedBytesPerSecond = Double(state.bytes) / elapsed
                }
            }
            if let figures = BenchLatency.Figures(microseconds: state.latencies) {
                report.latencyP50Micros = figures.p50Micros
                report.latencyP99Micros = figures.p99Micros
            }
        }
    }
}

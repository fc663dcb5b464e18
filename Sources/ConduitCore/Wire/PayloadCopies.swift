import Synchronization

/// Payload bytes copied between the app and the transport, counted at each place that copies
/// them, so that `conduit bench` reports copies per message from what the code does (bytes copied
/// over payload bytes delivered) instead of from a hand count.
///
/// Off by default: each copy site then pays one relaxed load. Counting is on while at least one
/// measurement runs: ``start()`` begins one and ``stop(_:)`` ends it with the bytes copied in
/// between, so measurements that overlap (bench runs side by side in one process) never switch
/// each other off; each may count the other's copies too.
@_spi(Benchmarks) public enum PayloadCopies {
    private static let measurements = Atomic<Int>(0)
    private static let sent = Atomic<Int>(0)
    private static let received = Atomic<Int>(0)

    /// Bytes copied on the way out and on the way in during one measurement.
    public struct Totals: Sendable, Hashable {
        /// Payload bytes copied from the app's bytes to the socket write.
        public var sendBytes: Int
        /// Payload bytes copied from the socket read to the app's delivery.
        public var receiveBytes: Int
    }

    /// One measurement under way: the counters when it started.
    public struct Measurement: Sendable {
        let start: Totals
    }

    /// Starts a measurement (and counting, if none was under way).
    public static func start() -> Measurement {
        measurements.wrappingAdd(1, ordering: .relaxed)
        return Measurement(start: Totals(sendBytes: sent.load(ordering: .relaxed), receiveBytes: received.load(ordering: .relaxed)))
    }

    /// Ends `measurement` and returns what was copied since it started. Counting stops once no
    /// measurement is under way.
    public static func stop(_ measurement: Measurement) -> Totals {
        let totals = Totals(
            sendBytes: sent.load(ordering: .relaxed) &- measurement.start.sendBytes,
            receiveBytes: received.load(ordering: .relaxed) &- measurement.start.receiveBytes
        )
        measurements.wrappingSubtract(1, ordering: .relaxed)
        return totals
    }

    /// A send-side copy of `bytes` payload bytes.
    @inline(__always) public static func countSend(_ bytes: Int) {
        if measurements.load(ordering: .relaxed) > 0 { sent.wrappingAdd(bytes, ordering: .relaxed) }
    }

    /// A receive-side copy of `bytes` payload bytes.
    @inline(__always) public static func countReceive(_ bytes: Int) {
        if measurements.load(ordering: .relaxed) > 0 { received.wrappingAdd(bytes, ordering: .relaxed) }
    }
}

import Synchronization

/// Payload bytes copied between the app and the transport, counted at each place that copies
/// them, so that `conduit bench` reports copies per message from what the code does (bytes copied
/// over payload bytes delivered) instead of from a hand count.
///
/// Off by default: each copy site then pays one relaxed load. ``start()`` resets and turns it on.
@_spi(Benchmarks) public enum PayloadCopies {
    private static let counting = Atomic<Bool>(false)
    private static let sent = Atomic<Int>(0)
    private static let received = Atomic<Int>(0)

    /// Bytes copied on the way out and on the way in since ``start()``.
    public struct Totals: Sendable, Hashable {
        /// Payload bytes copied from the app's bytes to the socket write.
        public var sendBytes: Int
        /// Payload bytes copied from the socket read to the app's delivery.
        public var receiveBytes: Int
    }

    /// Resets both counters and starts counting.
    public static func start() {
        sent.store(0, ordering: .relaxed)
        received.store(0, ordering: .relaxed)
        counting.store(true, ordering: .relaxed)
    }

    /// Stops counting and returns the totals.
    public static func stop() -> Totals {
        counting.store(false, ordering: .relaxed)
        return Totals(sendBytes: sent.load(ordering: .relaxed), receiveBytes: received.load(ordering: .relaxed))
    }

    /// A send-side copy of `bytes` payload bytes.
    @inline(__always) public static func countSend(_ bytes: Int) {
        if counting.load(ordering: .relaxed) { sent.wrappingAdd(bytes, ordering: .relaxed) }
    }

    /// A receive-side copy of `bytes` payload bytes.
    @inline(__always) public static func countReceive(_ bytes: Int) {
        if counting.load(ordering: .relaxed) { received.wrappingAdd(bytes, ordering: .relaxed) }
    }
}

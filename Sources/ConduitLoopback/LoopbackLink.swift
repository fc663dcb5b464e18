public import ConduitCore

public import ConduitImpairment
import ConduitDriver
/// One end of an in-process link: it reads its own inbox and writes into its peer's.
/// Batches cross without a copy (arrays are shared copy-on-write and never mutated after sending).
public final class LoopbackLink: TransportLink {
    /// Reliable and ordered on a clean link; unreliable and unordered when the URL asks for impairment.
    public let capabilities: TransportCapabilities
    public let remoteDescription: String
    private let inbox: AsyncBoundedChannel<DatagramBatch>
    private let outbox: AsyncBoundedChannel<DatagramBatch>
    /// On an impaired link, what this end writes goes through here instead of straight to `outbox`.
    private let delayLine: DelayLine?
    /// On an impaired link, the peer's delay line, which feeds `inbox`.
    private let incomingLine: DelayLine?

    private init(capabilities: TransportCapabilities, remote: String, inbox: AsyncBoundedChannel<DatagramBatch>, outbox: AsyncBoundedChannel<DatagramBatch>, delayLine: DelayLine?, incomingLine: DelayLine?) {
        self.capabilities = capabilities
        self.remoteDescription = remote
        self.inbox = inbox
        self.outbox = outbox
        self.delayLine = delayLine
        self.incomingLine = incomingLine
    }

    /// A link let go without `close()` still ends its delay lines' tasks, and the peer reads nil.
    deinit { shutDown() }

    static func pair(
        capabilities: TransportCapabilities,
        window: Int,
        name: String,
        impairment: (ImpairmentConfiguration, PartitionSwitch)? = nil,
        clock: any ConduitClock
    ) -> (client: LoopbackLink, server: LoopbackLink) {
        let toServer = AsyncBoundedChannel<DatagramBatch>(capacity: window) { max(1, $0.byteCount) }
        let toClient = AsyncBoundedChannel<DatagramBatch>(capacity: window) { max(1, $0.byteCount) }
        var upstream: DelayLine?
        var downstream: DelayLine?
        if let (configuration, partition) = impairment {
            var reverse = configuration
            reverse.seed = configuration.seed &+ 1  // independent fates per direction, still seeded
            upstream = DelayLine(configuration: configuration, capacity: window, inbox: toServer, partition: partition, clock: clock)
            downstream = DelayLine(configuration: reverse, capacity: window, inbox: toClient, partition: partition, clock: clock)
            for line in [upstream, downstream].compactMap({ $0 }) { Task { await line.run() } }
        }
        return (
            LoopbackLink(capabilities: capabilities, remote: "loopback://\(name) (server)", inbox: toClient, outbox: toServer, delayLine: upstream, incomingLine: downstream),
            LoopbackLink(capabilities: capabilities, remote: "loopback://\(name) (client)", inbox: toServer, outbox: toClient, delayLine: downstream, incomingLine: upstream)
        )
    }

    /// What the emulated network did to this end's datagrams (nil on an unimpaired link).
    /// `droppedAtReceiverClose` counts what this end sent that was still in flight when the peer closed.
    public var impairmentStatistics: (impairment: ImpairmentModel.Statistics, droppedOverCapacity: Int, droppedAtReceiverClose: Int)? {
        delayLine?.statistics
    }

    /// Sends a batch to the peer. Suspends while the direction's window is full (a clean link); an impaired link queues or tail-drops instead. Throws `protocolViolation` for a datagram over the limit and `connectionClosed` once either end closed.
    public func write(_ batch: DatagramBatch) async throws(ConduitError) {
        guard !batch.isEmpty else { return }
        var start = 0
        for end in batch.ends {
            guard end - start <= capabilities.maxDatagramSize else {
                throw ConduitError(.protocolViolation, "a \(end - start)-byte datagram exceeds the loopback limit of \(capabilities.maxDatagramSize)")
            }
            start = end
        }
        guard !outbox.isFinished, delayLine?.isClosed != true else {
            throw ConduitError(.connectionClosed, "the loopback link to \(remoteDescription) is closed")
        }
        if let delayLine {
            // A network does not push back: the delay line queues or tail-drops.
            delayLine.submit(batch)
            return
        }
        guard await outbox.send(batch) else {
            throw ConduitError(.connectionClosed, "the loopback link to \(remoteDescription) is closed")
        }
    }

    /// The next batch the peer wrote, or nil once the peer closed and everything sent before was read.
    public func read() async throws(ConduitError) -> DatagramBatch? { await inbox.next() }

    /// Closes both directions: the peer drains what was already sent, then reads nil; so does
    /// this end (what the peer's writes already handed over is not thrown away: they succeeded).
    public func close() async { shutDown() }

    private func shutDown() {
        if let delayLine {
            delayLine.close()  // in-flight datagrams still land, then the peer reads nil
        } else {
            outbox.finish()
        }
        incomingLine?.receiverClosed()
        inbox.finish()
    }
}

public import ConduitCore

/// One end of an in-process link: it reads its own inbox and writes into its peer's.
/// Batches cross without a copy (arrays are shared copy-on-write and never mutated after sending).
public final class LoopbackLink: TransportLink {
    public let capabilities: TransportCapabilities
    public let remoteDescription: String
    private let inbox: AsyncBoundedChannel<DatagramBatch>
    private let outbox: AsyncBoundedChannel<DatagramBatch>

    private init(capabilities: TransportCapabilities, remote: String, inbox: AsyncBoundedChannel<DatagramBatch>, outbox: AsyncBoundedChannel<DatagramBatch>) {
        self.capabilities = capabilities
        self.remoteDescription = remote
        self.inbox = inbox
        self.outbox = outbox
    }

    static func pair(capabilities: TransportCapabilities, window: Int, name: String) -> (client: LoopbackLink, server: LoopbackLink) {
        let toServer = AsyncBoundedChannel<DatagramBatch>(capacity: window) { max(1, $0.byteCount) }
        let toClient = AsyncBoundedChannel<DatagramBatch>(capacity: window) { max(1, $0.byteCount) }
        return (
            LoopbackLink(capabilities: capabilities, remote: "loopback://\(name) (server)", inbox: toClient, outbox: toServer),
            LoopbackLink(capabilities: capabilities, remote: "loopback://\(name) (client)", inbox: toServer, outbox: toClient)
        )
    }

    public func write(_ batch: DatagramBatch) async throws(ConduitError) {
        guard !batch.isEmpty else { return }
        var start = 0
        for end in batch.ends {
            guard end - start <= capabilities.maxDatagramSize else {
                throw ConduitError(.protocolViolation, "a \(end - start)-byte datagram exceeds the loopback limit of \(capabilities.maxDatagramSize)")
            }
            start = end
        }
        guard await outbox.send(batch) else {
            throw ConduitError(.connectionClosed, "the loopback link to \(remoteDescription) is closed")
        }
    }

    public func read() async throws(ConduitError) -> DatagramBatch? { await inbox.next() }

    /// Closes both directions: the peer drains what was already sent, then reads nil.
    public func close() async {
        outbox.finish()
        inbox.finishAndDiscard()
    }
}

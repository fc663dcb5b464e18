import ConduitRelayCore
import Testing

@testable import ConduitRelay

/// The in-process bus's flow control: a shard waits before reading links while another shard has
/// `backlogLimit` or more of its messages still to take, and goes on once that shard took them.
@Suite("In-process bus flow control")
struct InProcessBusFlowControlTests {
    /// Publishes one post per number in `sequences`, one hand-over each.
    private func publish(_ sequences: Range<UInt64>, from endpoint: RelayInProcessBus.Endpoint) {
        for sequence in sequences {
            let use = RelayClusterTokenUse(node: RelayNodeID(UInt64(endpoint.index + 1)), sequence: sequence, expiresAt: 0, tokenID: [1])
            #expect(endpoint.publish([.tokenUse(use)]) == 0)
        }
    }

    private func sequences(_ batch: [RelayClusterInbound]?) -> [UInt64] {
        (batch ?? []).map { inbound in
            if case .posted(.tokenUse(let use)) = inbound { use.sequence } else { 0 }
        }
    }

    /// Returns once `count` publishers wait for room in shard `index`'s inbox (no clock involved).
    private func waitForPublishers(_ count: Int, on index: Int, of bus: RelayInProcessBus) async {
        while bus.waitingPublishers(on: index) < count { await Task.yield() }
    }

    @Test("under the limit, waitForRoom returns at once (false); at it, it waits until the other shard takes its batch")
    func waitsWhileTheOtherShardIsBehind() async {
        let bus = RelayInProcessBus(members: 2, backlogLimit: 4)
        let sender = bus.endpoint(0)
        var deliveries = bus.endpoint(1).deliveries().makeAsyncIterator()
        publish(0..<3, from: sender)
        #expect(await sender.waitForRoom() == false)
        publish(3..<4, from: sender)
        let waiter = Task { await sender.waitForRoom() }
        await waitForPublishers(1, on: 1, of: bus)
        // Taking the batch is what lets the waiter go: it reports that it waited.
        let batch = await deliveries.next()
        #expect(sequences(batch) == [0, 1, 2, 3])
        #expect(await waiter.value == true)
        #expect(await sender.waitForRoom() == false)
        await bus.endpoint(1).close()
    }

    @Test("a shard's own inbox never holds it back, and a closed inbox lets a waiting publisher go")
    func ownInboxAndClose() async {
        let bus = RelayInProcessBus(members: 2, backlogLimit: 2)
        publish(0..<5, from: bus.endpoint(1))  // into shard 0's inbox
        #expect(await bus.endpoint(0).waitForRoom() == false)
        let waiter = Task { await bus.endpoint(1).waitForRoom() }
        await waitForPublishers(1, on: 0, of: bus)
        await bus.endpoint(0).close()
        #expect(await waiter.value == true)
    }

    @Test("the limit leaves room under a receiver's cap: a third of cap minus high-water mark, in datagrams, within 16...4,096")
    func limitFollowsTheConfiguration() {
        #expect(RelayInProcessBus.backlogLimit(for: RelayConfiguration(maxQueuedBytesPerReceiver: 256 * 1024, receiverHighWater: 16 * 1024)) == 68)
        #expect(RelayInProcessBus.backlogLimit(for: RelayConfiguration()) == (8 * 1024 * 1024 - 1024 * 1024) / 3 / 1_200)
        #expect(RelayInProcessBus.backlogLimit(for: RelayConfiguration(maxQueuedBytesPerReceiver: 1024, receiverHighWater: 1024)) == 16)
        #expect(RelayInProcessBus.backlogLimit(for: RelayConfiguration(maxQueuedBytesPerReceiver: 1 << 30)) == 4_096)
    }
}

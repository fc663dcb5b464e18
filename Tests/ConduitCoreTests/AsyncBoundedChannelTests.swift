import ConduitCore
import Testing

// AsyncBoundedChannel: order, finishing, and backpressure, asserted by ordering, never by timing.

/// Records what happened, in the order it happened.
actor EventLog {
    private(set) var entries: [String] = []
    func append(_ entry: String) { entries.append(entry) }
}

/// Yields until `condition` holds (bounded, so a broken channel fails instead of hanging).
func waitUntil(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<1_000_000 {
        if condition() { return true }
        await Task.yield()
    }
    return condition()
}

@Suite("Async bounded channel")
struct AsyncBoundedChannelTests {
    @Test("delivers in FIFO order")
    func fifo() async {
        let channel = AsyncBoundedChannel<Int>(capacity: 100)
        for value in 0..<50 { #expect(await channel.send(value)) }
        #expect(channel.bufferedWeight == 50)
        var received: [Int] = []
        for _ in 0..<50 { received.append(await channel.next() ?? -1) }
        #expect(received == Array(0..<50))
        #expect(channel.bufferedWeight == 0)
    }

    @Test("finish delivers what is buffered, then nil for good")
    func finishDrains() async {
        let channel = AsyncBoundedChannel<String>(capacity: 10)
        #expect(await channel.send("a"))
        #expect(channel.trySend("b"))
        channel.finish()
        #expect(channel.isFinished)
        var received: [String] = []
        for await value in channel { received.append(value) }
        #expect(received == ["a", "b"])
        #expect(await channel.next() == nil)
        #expect(await channel.next() == nil)
    }

    @Test("a consumer waiting on an empty channel gets nil when it finishes")
    func finishWakesConsumer() async {
        let channel = AsyncBoundedChannel<Int>(capacity: 1)
        let consumer = Task { await channel.next() }
        channel.finish()
        #expect(await consumer.value == nil)
    }

    @Test("waitUntilProducerWaits returns only once a producer is held back, or the channel finished")
    func pushbackIsObservable() async {
        let channel = AsyncBoundedChannel<Int>(capacity: 2)
        let log = EventLog()
        let watcher = Task {
            await channel.waitUntilProducerWaits()
            await log.append("watcher saw a producer wait")
        }
        // Up to the capacity nobody waits, and neither does the watcher's answer come.
        #expect(await channel.send(1))
        #expect(await channel.send(2))
        let producer = Task { () async -> Bool in
            await log.append("third sent")
            return await channel.send(3)
        }
        await watcher.value
        #expect(await log.entries == ["third sent", "watcher saw a producer wait"])
        #expect(channel.bufferedWeight == 3)
        // Room again: the producer goes on.
        #expect(await channel.next() == 1)
        #expect(await producer.value)
        // A producer already waiting answers at once; a finished channel too; a cancelled wait ends.
        let finished = AsyncBoundedChannel<Int>(capacity: 1)
        finished.finish()
        await finished.waitUntilProducerWaits()
        let idle = AsyncBoundedChannel<Int>(capacity: 1)
        let cancelled = Task { await idle.waitUntilProducerWaits() }
        cancelled.cancel()
        await cancelled.value
    }

    @Test("a waiting consumer receives a sent element")
    func handOff() async {
        let channel = AsyncBoundedChannel<Int>(capacity: 1)
        let consumer = Task { () async -> [Int?] in
            [await channel.next(), await channel.next()]
        }
        #expect(await channel.send(1))
        #expect(await channel.send(2))
        #expect(await consumer.value == [1, 2])
    }

    @Test("a producer over capacity suspends until the consumer takes")
    func backpressure() async {
        let channel = AsyncBoundedChannel<Int>(capacity: 2)
        let log = EventLog()
        let producer = Task {
            await channel.send(1)
            await channel.send(2)
            await log.append("sent 1 and 2")
            let accepted = await channel.send(3)
            await log.append("send 3 returned")
            return accepted
        }
        // Element 3 is buffered (weight 3 > capacity 2), so the producer must now be waiting.
        #expect(await waitUntil { channel.bufferedWeight == 3 })
        // Give the producer every chance to run on; it must not get past send(3).
        for _ in 0..<1_000 { await Task.yield() }
        #expect(await log.entries == ["sent 1 and 2"])

        await log.append("consumer takes")
        #expect(await channel.next() == 1)
        #expect(await producer.value == true)
        #expect(await log.entries == ["sent 1 and 2", "consumer takes", "send 3 returned"])
        #expect(await channel.next() == 2)
        #expect(await channel.next() == 3)
    }

    @Test("weights count toward capacity; the producer resumes once back at capacity")
    func weighted() async {
        let channel = AsyncBoundedChannel<[UInt8]>(capacity: 1_000, weigh: { $0.count })
        let log = EventLog()
        #expect(await channel.send(Array(repeating: 1, count: 600)))
        let producer = Task {
            let accepted = await channel.send(Array(repeating: 2, count: 600))
            await log.append("second send returned")
            return accepted
        }
        #expect(await waitUntil { channel.bufferedWeight == 1_200 })
        for _ in 0..<1_000 { await Task.yield() }
        #expect(await log.entries == [])
        await log.append("consumer takes")
        #expect(await channel.next()?.count == 600)
        #expect(await producer.value == true)
        #expect(await log.entries == ["consumer takes", "second send returned"])
        #expect(channel.bufferedWeight == 600)
    }

    @Test("finish releases a suspended producer; its element is still delivered")
    func finishReleasesProducer() async {
        let channel = AsyncBoundedChannel<Int>(capacity: 1)
        let producer = Task {
            await channel.send(1)
            return await channel.send(2)
        }
        #expect(await waitUntil { channel.bufferedWeight == 2 })
        channel.finish()
        #expect(await producer.value == true)
        #expect(await channel.next() == 1)
        #expect(await channel.next() == 2)
        #expect(await channel.next() == nil)
    }

    @Test("trySend refuses when at or over capacity")
    func trySend() async {
        let channel = AsyncBoundedChannel<Int>(capacity: 2)
        #expect(channel.trySend(1))
        #expect(channel.trySend(2))
        #expect(!channel.trySend(3))
        #expect(channel.bufferedWeight == 2)
        #expect(await channel.next() == 1)
        #expect(channel.trySend(4))
        #expect(!channel.trySend(5))

        // One heavy element is admitted below capacity, and then nothing more.
        let weighted = AsyncBoundedChannel<Int>(capacity: 10, weigh: { $0 })
        #expect(weighted.trySend(9))
        #expect(weighted.trySend(30))
        #expect(!weighted.trySend(1))
        #expect(weighted.bufferedWeight == 39)
    }

    @Test("send and trySend after finish return false and drop the element")
    func sendAfterFinish() async {
        let channel = AsyncBoundedChannel<Int>(capacity: 4)
        #expect(await channel.send(1))
        channel.finish()
        #expect(await channel.send(2) == false)
        #expect(channel.trySend(3) == false)
        #expect(channel.bufferedWeight == 1)
        #expect(await channel.next() == 1)
        #expect(await channel.next() == nil)
    }

    @Test("finishAndDiscard drops what is buffered")
    func finishAndDiscard() async {
        let channel = AsyncBoundedChannel<Int>(capacity: 4)
        #expect(channel.trySend(1))
        #expect(channel.trySend(2))
        channel.finishAndDiscard()
        #expect(channel.isFinished)
        #expect(channel.bufferedWeight == 0)
        #expect(await channel.next() == nil)
    }

    @Test("many producers, one consumer: nothing lost, each producer's order kept")
    func manyProducers() async {
        let channel = AsyncBoundedChannel<Int>(capacity: 3)
        let producers = 4
        let perProducer = 200
        await withTaskGroup(of: Void.self) { group in
            for producer in 0..<producers {
                group.addTask {
                    for index in 0..<perProducer { await channel.send(producer * 10_000 + index) }
                }
            }
            var received: [Int] = []
            while received.count < producers * perProducer, let value = await channel.next() {
                received.append(value)
            }
            channel.finish()
            await group.waitForAll()
            #expect(received.count == producers * perProducer)
            for producer in 0..<producers {
                let mine = received.filter { $0 / 10_000 == producer }.map { $0 % 10_000 }
                #expect(mine == Array(0..<perProducer))
            }
        }
    }
}

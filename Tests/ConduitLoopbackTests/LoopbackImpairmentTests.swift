import ConduitConformance
import ConduitCore
import ConduitLoopback
import ConduitTesting
import Testing

@Suite("Impaired loopback")
struct LoopbackImpairmentTests {
    static let impairment = "loss=0.05&dup=0.02&reorder=0.1&corrupt=0.01&delay-ms=2&jitter-ms=1&seed=11"

    @Test(arguments: ConformanceSuite.Case.datagramCases)
    func conformsAsADatagramLink(_ testCase: ConformanceSuite.Case) async throws {
        let suite = ConformanceSuite(
            transport: LoopbackTransport(hub: LoopbackHub()),
            address: { try! TransportURL(parsing: "loopback://impaired-\($0)?\(Self.impairment)") },
            deadAddress: TransportURL(scheme: "loopback", host: "nobody-listens-here")
        )
        try await suite.run(testCase)
    }

    func pair(_ name: String, _ options: String, hub: LoopbackHub = LoopbackHub()) async throws -> (any TransportLink, any TransportLink, any TransportListener) {
        let transport = LoopbackTransport(hub: hub)
        let listener = try await transport.listen(on: TransportURL(parsing: "loopback://\(name)"))
        async let accepted = listener.accept()
        let client = try await transport.connect(to: TransportURL(parsing: "loopback://\(name)?\(options)"))
        let server = try #require(try await accepted)
        return (client, server, listener)
    }

    /// A hub whose impaired links delay datagrams on a virtual clock: what arrives by when is
    /// decided by the seed and the virtual time alone.
    static func virtualHub() -> (LoopbackHub, VirtualClock) {
        let clock = VirtualClock()
        return (LoopbackHub(clock: clock), clock)
    }

    @Test func anImpairedLinkDeclaresItselfUnreliable() async throws {
        let (client, server, listener) = try await pair("caps", "loss=0.1")
        #expect(!client.capabilities.isReliable && !client.capabilities.isOrdered)
        #expect(!server.capabilities.isReliable)
        await client.close()
        await server.close()
        await listener.close()
    }

    @Test func whatArrivesIsAccountedForByTheModel() async throws {
        let (hub, clock) = Self.virtualHub()
        let (client, server, listener) = try await pair("accounting", "loss=0.2&dup=0.05&seed=5", hub: hub)
        for index in 0..<1_000 {
            var batch = DatagramBatch()
            batch.append([UInt8(truncatingIfNeeded: index), UInt8(truncatingIfNeeded: index >> 8)])
            try await client.write(batch)
        }
        let stats = try #require((client as? LoopbackLink)?.impairmentStatistics)
        let expected = 1_000 - stats.impairment.dropped + stats.impairment.duplicated - stats.droppedOverCapacity
        let received = EventRecorder(LinkDatagrams(server))
        // No delay configured: everything that survives is due at once; a second of virtual time
        // later nothing more can come.
        #expect(await clock.advance(by: .milliseconds(10), until: { received.all.count >= expected }, limit: .seconds(1)))
        await clock.advance(by: .seconds(1))
        #expect(stats.impairment.submitted == 1_000)
        #expect(received.all.count == expected)
        #expect((150...250).contains(stats.impairment.dropped))
        // Nothing arrives that was not sent (no corruption configured).
        #expect(received.all.allSatisfy { $0.count == 2 && Int($0[0]) | Int($0[1]) << 8 < 1_000 })
        await client.close()
        await server.close()
        await listener.close()
    }

    @Test func aPartitionBlacksOutBothDirectionsUntilLifted() async throws {
        let (hub, clock) = Self.virtualHub()
        let (client, server, listener) = try await pair("blackout", "delay-ms=1", hub: hub)
        let atServer = EventRecorder(LinkDatagrams(server)), atClient = EventRecorder(LinkDatagrams(client))
        var batch = DatagramBatch()
        batch.append([1])
        hub.setPartitioned("blackout", true)
        for _ in 0..<20 {
            try await client.write(batch)
            try await server.write(batch)
        }
        // A second of virtual time: a 1 ms path would have delivered everything long since.
        await clock.advance(by: .seconds(1))
        #expect(atServer.all.isEmpty)
        #expect(atClient.all.isEmpty)
        hub.setPartitioned("blackout", false)
        let sentAt = clock.now()
        try await client.write(batch)
        #expect(await clock.advance(by: .milliseconds(1), until: { !atServer.all.isEmpty }, limit: .seconds(1)))
        #expect(clock.now() - sentAt >= .milliseconds(1))
        await clock.advance(by: .seconds(1))
        #expect(atServer.all == [[1]])
        #expect((client as? LoopbackLink)?.impairmentStatistics?.impairment.droppedByPartition == 20)
        await client.close()
        await server.close()
        await listener.close()
    }

    @Test func aFullRouterQueueTailDrops() async throws {
        let (hub, clock) = Self.virtualHub()
        let (client, server, listener) = try await pair("tail-drop", "delay-ms=200&window=10000", hub: hub)
        let received = EventRecorder(LinkDatagrams(server))
        var batch = DatagramBatch()
        for _ in 0..<20 { batch.append([UInt8](repeating: 7, count: 1_000)) }
        try await client.write(batch)  // never suspends: a network queues or drops
        let stats = try #require((client as? LoopbackLink)?.impairmentStatistics)
        #expect(stats.droppedOverCapacity == 10)
        // The 10 queued ones arrive after the 200 ms delay, not before, then nothing more.
        await clock.advance(by: .milliseconds(199))
        #expect(received.all.isEmpty)
        await clock.advance(by: .milliseconds(1))
        #expect(await clock.advance(by: .milliseconds(1), until: { received.all.count == 10 }, limit: .milliseconds(10)))
        await clock.advance(by: .seconds(1))
        #expect(received.all.count == 10)
        await client.close()
        await server.close()
        await listener.close()
    }

    @Test func datagramsInFlightToAClosedEndAreDroppedCountedAndLeaveNoTaskBehind() async throws {
        let (hub, clock) = Self.virtualHub()
        let (client, server, listener) = try await pair("closed-receiver", "delay-ms=200", hub: hub)
        var batch = DatagramBatch()
        for _ in 0..<5 { batch.append([9]) }
        try await client.write(batch)
        try await server.write(batch)
        await clock.advance(by: .milliseconds(100))  // half way: all 10 still in flight
        await server.close()
        await client.close()
        await clock.settle()
        // Each direction's datagrams had a closed end to land on: none is delivered later, each is
        // counted, and no delay line sleeps on for time that a finished test will never move.
        #expect((client as? LoopbackLink)?.impairmentStatistics?.droppedAtReceiverClose == 5)
        #expect((server as? LoopbackLink)?.impairmentStatistics?.droppedAtReceiverClose == 5)
        #expect(clock.sleeperCount == 0)
        await listener.close()
    }

    @Test(.timeLimit(.minutes(1)))
    func aLinkLetGoWithoutClosingEndsAndItsPeerReadsTheEnd() async throws {
        let (hub, _) = Self.virtualHub()
        var (client, server, listener): ((any TransportLink)?, any TransportLink, any TransportListener) = try await pair("let-go", "delay-ms=5", hub: hub)
        #expect(client != nil)
        client = nil
        #expect(try await server.read() == nil)
        await server.close()
        await listener.close()
    }

    @Test(arguments: ["loopback://x?loss=2", "loopback://x?delay-ms=-1", "loopback://x?seed=abc", "loopback://x?rate=fast"])
    func badImpairmentOptionsAreTypedErrors(_ text: String) async throws {
        let transport = LoopbackTransport(hub: LoopbackHub())
        await #expect(throws: ConduitError.self) {
            let listener = try await transport.listen(on: TransportURL(parsing: text))
            await listener.close()
        }
    }
}

/// What a link reads, datagram by datagram, as an async sequence (ends when the link does).
struct LinkDatagrams: AsyncSequence, Sendable {
    let link: any TransportLink
    init(_ link: any TransportLink) { self.link = link }

    struct AsyncIterator: AsyncIteratorProtocol {
        let link: any TransportLink
        var pending: [[UInt8]] = []

        mutating func next() async throws -> [UInt8]? {
            while pending.isEmpty {
                guard let batch = try await link.read() else { return nil }
                pending = (0..<batch.count).map { batch[$0] }.reversed()
            }
            return pending.popLast()
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(link: link) }
}

import ConduitConformance
import ConduitCore
import ConduitLoopback
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

    /// Reads until `count` datagrams arrived or the link stays quiet for a second.
    /// Reads until `count` datagrams arrived or nothing came for `idle`.
    func collect(_ link: any TransportLink, upTo count: Int, idle: Duration = .seconds(1)) async throws -> [[UInt8]] {
        var received: [[UInt8]] = []
        while received.count < count {
            let batch = try await withThrowingTaskGroup(of: DatagramBatch?.self) { group in
                group.addTask { try await link.read() }
                group.addTask {
                    try await Task.sleep(for: idle)
                    return nil
                }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            guard let batch else { break }
            for index in 0..<batch.count { received.append(batch[index]) }
        }
        return received
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
        let (client, server, listener) = try await pair("accounting", "loss=0.2&dup=0.05&seed=5")
        for index in 0..<1_000 {
            var batch = DatagramBatch()
            batch.append([UInt8(truncatingIfNeeded: index), UInt8(truncatingIfNeeded: index >> 8)])
            try await client.write(batch)
        }
        let received = try await collect(server, upTo: 2_000)
        let stats = try #require((client as? LoopbackLink)?.impairmentStatistics)
        #expect(stats.impairment.submitted == 1_000)
        #expect(received.count == 1_000 - stats.impairment.dropped + stats.impairment.duplicated - stats.droppedOverCapacity)
        #expect((150...250).contains(stats.impairment.dropped))
        // Nothing arrives that was not sent (no corruption configured).
        #expect(received.allSatisfy { $0.count == 2 && Int($0[0]) | Int($0[1]) << 8 < 1_000 })
        await client.close()
        await server.close()
        await listener.close()
    }

    @Test func aPartitionBlacksOutBothDirectionsUntilLifted() async throws {
        let hub = LoopbackHub()
        let (client, server, listener) = try await pair("blackout", "delay-ms=1", hub: hub)
        var batch = DatagramBatch()
        batch.append([1])
        hub.setPartitioned("blackout", true)
        for _ in 0..<20 {
            try await client.write(batch)
            try await server.write(batch)
        }
        #expect(try await collect(server, upTo: 1).isEmpty)
        #expect(try await collect(client, upTo: 1).isEmpty)
        hub.setPartitioned("blackout", false)
        try await client.write(batch)
        #expect(try await collect(server, upTo: 1) == [[1]])
        #expect((client as? LoopbackLink)?.impairmentStatistics?.impairment.droppedByPartition == 20)
        await client.close()
        await server.close()
        await listener.close()
    }

    @Test func aFullRouterQueueTailDrops() async throws {
        let (client, server, listener) = try await pair("tail-drop", "delay-ms=200&window=10000")
        var batch = DatagramBatch()
        for _ in 0..<20 { batch.append([UInt8](repeating: 7, count: 1_000)) }
        try await client.write(batch)  // never suspends: a network queues or drops
        let stats = try #require((client as? LoopbackLink)?.impairmentStatistics)
        #expect(stats.droppedOverCapacity == 10)
        // The 10 queued ones arrive (a generous wait: a loaded machine can delay the delay line),
        // then nothing more.
        #expect(try await collect(server, upTo: 10, idle: .seconds(10)).count == 10)
        #expect(try await collect(server, upTo: 1).isEmpty)
        await client.close()
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

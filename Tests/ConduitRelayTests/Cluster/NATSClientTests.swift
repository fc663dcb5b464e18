#if NATS
import ConduitNATS
import ConduitNetworkTestSupport
import Testing

/// The libnats wrapper against a real nats-server of the test's own (skipped without one).
@Suite(.enabled(if: NATSServerProcess.isInstalled, "nats-server is not installed (Debian: nats-server); Scripts/test.sh installs it"),
       .timeLimit(.minutes(1)))
struct NATSClientTests {
    @Test func publishedMessagesArriveOnceInOrderWithTheirSubject() async throws {
        let server = try await NATSServerProcess.start()
        let publisher = try await NATSClient.connect(to: server.url)
        let receiver = try await NATSClient.connect(to: server.url)
        let subscription = try receiver.subscribe(to: "conduit.test.>")
        try await receiver.flush()
        let count = 500
        for index in 0..<count {
            try publisher.publish([UInt8(index & 0xFF), UInt8(index >> 8)] + Array(repeating: 7, count: index % 40), on: "conduit.test.\(index % 3)")
        }
        var received: [NATSMessage] = []
        for await message in subscription.messages {
            received.append(message)
            if received.count == count { break }
        }
        #expect(received.count == count)
        for (index, message) in received.enumerated() {
            #expect(message.subject == "conduit.test.\(index % 3)")
            let expected: [UInt8] = [UInt8(index & 0xFF), UInt8(index >> 8)] + [UInt8](repeating: 7, count: index % 40)
            #expect(message.payload == expected)
        }
        #expect(subscription.dropped == 0)
        await publisher.close()
        await receiver.close()
        await server.stop()
    }

    /// The first `count` messages of `subscription`, as (sequence, payload).
    static func first(_ count: Int, of subscription: NATSSubscription) async -> [(UInt64, [UInt8])] {
        var received: [(UInt64, [UInt8])] = []
        for await message in subscription.messages {
            received.append((message.streamSequence ?? 0, message.payload))
            if received.count == count { break }
        }
        return received
    }

    @Test func jetStreamKeepsOneOrderReadFromTheStartOrFromASequenceAndDropsARetriedMessage() async throws {
        let server = try await NATSServerProcess.start(jetStream: true)
        let client = try await NATSClient.connect(to: server.url)
        let jetStream = try NATSJetStream(client: client)
        try await jetStream.addStream(named: "TEST", subjects: ["conduit.stream"])
        try await jetStream.addStream(named: "TEST", subjects: ["conduit.stream"])  // made already: found
        #expect(try await jetStream.publish([1], on: "conduit.stream", messageID: "a") == 1)
        #expect(try await jetStream.publish([2], on: "conduit.stream", messageID: "b") == 2)
        // A retry of a stored message (same ID) is not stored again.
        #expect(try await jetStream.publish([2], on: "conduit.stream", messageID: "b") == 2)
        #expect(try await jetStream.publish([3], on: "conduit.stream", messageID: "c") == 3)
        let all = await Self.first(3, of: try await jetStream.subscribeOrdered(to: "conduit.stream"))
        #expect(all.map(\.0) == [1, 2, 3] && all.map(\.1) == [[1], [2], [3]])
        let tail = await Self.first(2, of: try await jetStream.subscribeOrdered(to: "conduit.stream", from: 2))
        #expect(tail.map(\.0) == [2, 3] && tail.map(\.1) == [[2], [3]])
        jetStream.close()
        await client.close()
        await server.stop()
        server.removeStorage()
    }

    @Test func aPurgeOfOneSubjectLeavesHolesInTheStreamSequenceButNotInTheConsumers() async throws {
        let server = try await NATSServerProcess.start(jetStream: true)
        let client = try await NATSClient.connect(to: server.url)
        let jetStream = try NATSJetStream(client: client)
        try await jetStream.addStream(named: "TEST", subjects: ["conduit.old"])
        // Found with other subjects: it takes the ones asked for.
        try await jetStream.addStream(named: "TEST", subjects: ["conduit.s.>"])
        for (index, subject) in ["conduit.s.a", "conduit.s.a", "conduit.s.b", "conduit.s.a", "conduit.s.b"].enumerated() {
            #expect(try await jetStream.publish([UInt8(index)], on: subject, messageID: "\(index)") == UInt64(index + 1))
        }
        // a's messages before 4 go (1 and 2); a's 4 and b's stay.
        try await jetStream.purge(stream: "TEST", subject: "conduit.s.a", before: 4)
        let state = try await jetStream.state(ofStream: "TEST")
        #expect(state.messages == 3 && state.first == 3 && state.last == 5)
        var read: [(stream: UInt64?, consumer: UInt64?, payload: [UInt8])] = []
        for await message in try await jetStream.subscribeOrdered(to: "conduit.s.>").messages {
            read.append((message.streamSequence, message.consumerSequence, message.payload))
            if read.count == 3 { break }
        }
        #expect(read.map(\.stream) == [3, 4, 5] && read.map(\.consumer) == [1, 2, 3] && read.map(\.payload) == [[2], [3], [4]])
        await #expect(throws: NATSError.self) { try await jetStream.purge(stream: "NONE", subject: "conduit.s.a", before: 4) }
        jetStream.close()
        await client.close()
        await server.stop()
        server.removeStorage()
    }

    @Test func withoutJetStreamTheStreamCannotBeMadeATypedError() async throws {
        let server = try await NATSServerProcess.start()
        let client = try await NATSClient.connect(to: server.url)
        let jetStream = try NATSJetStream(client: client)
        await #expect(throws: NATSError.self) { try await jetStream.addStream(named: "TEST", subjects: ["conduit.stream"]) }
        jetStream.close()
        await client.close()
        await server.stop()
    }

    @Test func aClosedClientRefusesToPublishWithATypedError() async throws {
        let server = try await NATSServerProcess.start()
        let client = try await NATSClient.connect(to: server.url)
        let subscription = try client.subscribe(to: "conduit.closed")
        await client.close()
        await client.close()
        #expect(throws: NATSError.self) { try client.publish([1], on: "conduit.closed") }
        // The subscription's stream ends with the client.
        var iterator = subscription.messages.makeAsyncIterator()
        #expect(await iterator.next() == nil)
        await server.stop()
    }

    @Test func connectingWhereNoServerListensFailsWithATypedError() async throws {
        let server = try await NATSServerProcess.start()
        let url = server.url
        await server.stop()
        await #expect(throws: NATSError.self) { _ = try await NATSClient.connect(to: url, timeout: .milliseconds(500)) }
    }

    @Test func aFullBufferCountsItsDrops() async throws {
        let server = try await NATSServerProcess.start()
        let client = try await NATSClient.connect(to: server.url)
        let subscription = try client.subscribe(to: "conduit.full", bufferLimit: 10)
        try await client.flush()
        for index in 0..<50 { try client.publish([UInt8(index)], on: "conduit.full") }
        try await client.flush()
        // Delivery runs on the client's own thread: wait (bounded) until all 50 were handed over.
        let deadline = ContinuousClock.now + .seconds(5)
        while subscription.dropped < 40, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(subscription.dropped == 40)
        var kept: [UInt8] = []
        for await message in subscription.messages {
            kept += message.payload
            if kept.count == 10 { break }
        }
        #expect(kept == Array(0..<10))
        await client.close()
        await server.stop()
    }
}
#endif

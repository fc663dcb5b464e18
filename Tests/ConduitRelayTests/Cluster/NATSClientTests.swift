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
            #expect(message.payload == [UInt8(index & 0xFF), UInt8(index >> 8)] + Array(repeating: 7, count: index % 40))
        }
        #expect(subscription.dropped == 0)
        await publisher.close()
        await receiver.close()
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

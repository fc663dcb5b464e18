import ConduitCore

import ConduitImpairment
extension ConformanceSuite {
    /// A connected pair of links, closed by `body`'s end.
    func withLinkPair<R>(index: Int, _ body: (any TransportLink, any TransportLink) async throws -> R) async throws -> R {
        let listener = try await transport.listen(on: address(index))
        async let acceptedLink = listener.accept()
        let client = try await transport.connect(to: listener.localURL)
        guard let server = try await acceptedLink else { throw ConformanceFailure("the listener closed without accepting") }
        do {
            let result = try await body(client, server)
            await client.close()
            await server.close()
            await listener.close()
            return result
        } catch {
            await client.close()
            await server.close()
            await listener.close()
            throw error
        }
    }

    func declaresSaneCapabilities() async throws {
        try await withLinkPair(index: 0) { client, server in
            for link in [client, server] {
                let caps = link.capabilities
                try expect(caps.mtu > DataFrameHeader.size, "mtu \(caps.mtu) leaves no room for a payload")
                try expect(caps.mtu <= caps.maxDatagramSize, "mtu \(caps.mtu) exceeds maxDatagramSize \(caps.maxDatagramSize)")
                try expect(caps.fragmentSize <= Int(UInt16.max), "fragment size \(caps.fragmentSize) does not fit the wire format")
                try expect(!caps.isReliable || !caps.supportsPartialReliability || caps.isReliable, "inconsistent reliability flags")
            }
            try expect(client.capabilities == server.capabilities, "the two ends declare different capabilities")
        }
    }

    /// Datagrams of every size up to the MTU arrive byte-identical (and, on a reliable ordered
    /// transport, all of them, exactly once, in order).
    func datagramsArriveIntact() async throws {
        try await withLinkPair(index: 1) { client, server in
            let mtu = client.capabilities.mtu
            var random = SeededRandom(seed: 0xC0FFEE)
            var sent: [[UInt8]] = []
            var batches: [DatagramBatch] = []
            for batchIndex in 0..<20 {
                var batch = DatagramBatch()
                for _ in 0..<(1 + batchIndex % 7) {
                    let size = 1 + Int(random.next() % UInt64(mtu))
                    var datagram = [UInt8](repeating: 0, count: size)
                    for i in 0..<size { datagram[i] = UInt8(truncatingIfNeeded: random.next()) }
                    datagram[0] = UInt8(truncatingIfNeeded: sent.count)
                    sent.append(datagram)
                    batch.append(datagram)
                }
                batches.append(batch)
            }
            // Written while the server reads: a flow-controlled link (kernel SCTP) may hold a
            // writer until its peer reads, and about 600 KB need not fit in its buffers.
            async let written: Void = { for batch in batches { try await client.write(batch) } }()
            var received: [[UInt8]] = []
            // A lossy transport may never deliver everything: stop after a quiet second.
            while received.count < sent.count, let batch = try await read(server, quietFor: .seconds(client.capabilities.isReliable ? 30 : 1)) {
                for index in 0..<batch.count { received.append(batch[index]) }
            }
            try await written
            if client.capabilities.isReliable && client.capabilities.isOrdered {
                try expect(received == sent, "received \(received.count) datagrams that differ from the \(sent.count) sent")
            } else {
                let known = Set(sent)
                try expect(received.allSatisfy(known.contains), "a received datagram matches nothing that was sent")
            }
        }
    }

    /// The next batch, or nil if the link closed or stayed quiet for `limit`.
    func read(_ link: any TransportLink, quietFor limit: Duration) async throws -> DatagramBatch? {
        try await withThrowingTaskGroup(of: DatagramBatch?.self) { group in
            group.addTask { try await link.read() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    func bothDirections() async throws {
        try await withLinkPair(index: 2) { client, server in
            var ping = DatagramBatch()
            ping.append(Array("ping".utf8))
            try await client.write(ping)
            let gotPing = try await server.read()
            try expect(gotPing?[0] == Array("ping".utf8), "server did not read ping")
            var pong = DatagramBatch()
            pong.append(Array("pong".utf8))
            try await server.write(pong)
            let gotPong = try await client.read()
            try expect(gotPong?[0] == Array("pong".utf8), "client did not read pong")
        }
    }

    func oversizeDatagramIsRefused() async throws {
        try await withLinkPair(index: 3) { client, _ in
            var batch = DatagramBatch()
            batch.append([UInt8](repeating: 1, count: client.capabilities.maxDatagramSize + 1))
            do {
                try await client.write(batch)
                throw ConformanceFailure("a datagram over maxDatagramSize was accepted")
            } catch let error as ConduitError {
                try expect(error.code == .protocolViolation, "oversize write failed with \(error.code), expected protocolViolation")
            }
        }
    }

    func closeEndsPeerReads() async throws {
        try await withLinkPair(index: 4) { client, server in
            var batch = DatagramBatch()
            batch.append(Array("last words".utf8))
            try await client.write(batch)
            await client.close()
            let first = try await server.read()
            try expect(first?[0] == Array("last words".utf8), "data written before close was lost")
            let end = try await server.read()
            try expect(end == nil, "read after the peer closed returned data instead of nil")
            do {
                try await client.write(batch)
                throw ConformanceFailure("write after close succeeded")
            } catch let error as ConduitError {
                try expect(error.code == .connectionClosed, "write after close failed with \(error.code), expected connectionClosed")
            }
        }
    }

    func closeKeepsWhatWasReceived() async throws {
        try await withLinkPair(index: 8) { client, server in
            var batch = DatagramBatch()
            batch.append(Array("held".utf8))
            try await server.write(batch)
            // Delivered (acknowledged, where the link acknowledges), and not read yet.
            let delivered = await server.waitForAcknowledgement(channel: nil, timeout: .seconds(10))
            try expect(delivered.isComplete, "the write was not acknowledged within 10 s")
            await client.close()
            let held = try await client.read()
            try expect(held?[0] == Array("held".utf8), "what the link had received before it closed was thrown away")
            let end = try await client.read()
            try expect(end == nil, "read after the link closed and was drained returned data instead of nil")
        }
    }

    func connectToNothingFails() async throws {
        do {
            let link = try await transport.connect(to: deadAddress)
            await link.close()
            throw ConformanceFailure("connecting to \(deadAddress), where nothing listens, succeeded")
        } catch let error as ConduitError {
            try expect(
                error.code == .connectionFailed || error.code == .timedOut,
                "connecting to nothing failed with \(error.code), expected connectionFailed or timedOut"
            )
        }
    }

    func listenTwiceFails() async throws {
        let url = address(5)
        let first = try await transport.listen(on: url)
        defer { Task { await first.close() } }
        do {
            let second = try await transport.listen(on: first.localURL)
            await second.close()
            throw ConformanceFailure("listening twice on \(first.localURL) succeeded")
        } catch let error as ConduitError {
            try expect(error.code == .addressInUse, "second listen failed with \(error.code), expected addressInUse")
        }
        await first.close()
    }
}

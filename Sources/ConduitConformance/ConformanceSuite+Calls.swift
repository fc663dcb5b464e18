import ConduitCore

import ConduitImpairment
extension ConformanceSuite {
    func withCall<R>(index: Int, _ body: (LinkDriver, LinkDriver) async throws -> R) async throws -> R {
        try await withLinkPair(index: index) { client, server in
            let alice = LinkDriver(peer: "alice", link: client)
            let bob = LinkDriver(peer: "bob", link: server)
            await alice.start()
            await bob.start()
            await alice.flush()
            await bob.flush()
            let connected: @Sendable ([CallEvent]) -> Bool = { $0.contains { if case .connected = $0 { true } else { false } } }
            try expect(await alice.wait(until: connected), "alice never saw the handshake complete")
            try expect(await bob.wait(until: connected), "bob never saw the handshake complete")
            do {
                let result = try await body(alice, bob)
                await alice.stop()
                await bob.stop()
                return result
            } catch {
                await alice.stop()
                await bob.stop()
                throw error
            }
        }
    }

    /// A 1:1 call over the transport: each of the four session types carries seeded messages that
    /// arrive exactly once, in order, byte-identical, with their timestamps.
    func callCarriesEverySessionType() async throws {
        try await withCall(index: 6) { alice, bob in
            var random = SeededRandom(seed: 42)
            var expected: [SessionKey: [[UInt8]]] = [:]
            for (offset, type) in SessionType.allCases.enumerated() {
                let key = SessionKey(streamID: StreamID(200 + offset))
                let reason = await alice.perform { machine, now in machine.makeOutbound(key, type: type, now: now) }
                try expect(reason == .none, "makeOutbound \(type) failed with \(reason)")
            }
            let announced: @Sendable ([CallEvent]) -> Bool = { events in
                events.filter { if case .dataSessionIncoming = $0 { true } else { false } }.count == 4
            }
            try expect(await bob.wait(until: announced), "bob was not told of all four sessions")
            for (offset, type) in SessionType.allCases.enumerated() {
                let key = SessionKey(streamID: StreamID(200 + offset))
                let reason = await bob.perform { machine, _ in machine.makeInbound(key, expectedType: type) }
                try expect(reason == .none, "makeInbound \(type) failed with \(reason)")
                for index in 0..<25 {
                    let maxSize = type.isMessage ? 20_000 : 60_000
                    let size = Int(random.next() % UInt64(maxSize))
                    let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ index &* 7 &+ offset) }
                    expected[key, default: []].append(bytes)
                    let result = await alice.perform { machine, now in
                        machine.enqueue(key, bytes: bytes, timestamp: UInt64(1_000 * offset + index), now: now)
                    }
                    guard case .queued = result else { throw ConformanceFailure("enqueue on \(type) returned \(result)") }
                }
            }
            // On a lossy path only the reliable sessions must complete; unreliable ones are checked
            // below for what did arrive.
            let mustComplete: @Sendable (SessionKey) -> Bool = { [pathIsLossy] key in
                !pathIsLossy || SessionType.allCases[key.streamID.rawValue - 200].isReliable
            }
            let expectedCounts = expected.filter { mustComplete($0.key) }
            let allArrived: @Sendable ([CallEvent]) -> Bool = { events in
                var messages: [SessionKey: Int] = [:]
                var fragmentBytes: [SessionKey: Int] = [:]
                for case .received(let key, let delivery) in events {
                    switch delivery {
                    case .message: messages[key, default: 0] += 1
                    case .fragment(let fragment): fragmentBytes[key, default: 0] += max(1, fragment.bytes.count)
                    }
                }
                return expectedCounts.allSatisfy { key, sends in
                    key.streamID.rawValue - 200 < 2
                        ? messages[key, default: 0] == sends.count
                        : fragmentBytes[key, default: 0] == sends.reduce(0) { $0 + max(1, $1.count) }
                }
            }
            try expect(await bob.wait(until: allArrived), "not everything arrived")
            let events = await bob.events
            for (key, sends) in expected {
                var rebuilt: [[UInt8]] = []
                var timestamps: [UInt64] = []
                var aggregator = FragmentAggregator(streamID: key.streamID, sessionType: .reliableBytes)
                for case .received(let k, let delivery) in events where k == key {
                    switch delivery {
                    case .message(let bytes, let timestamp):
                        rebuilt.append(bytes)
                        timestamps.append(timestamp)
                    case .fragment(let fragment):
                        if let whole = aggregator.add(fragment) {
                            rebuilt.append(whole.bytes)
                            timestamps.append(whole.timestamp)
                        }
                    }
                }
                let offset = key.streamID.rawValue - 200
                guard mustComplete(key) else {
                    // At most once, intact, with its own timestamp; fragments never spliced.
                    try expect(Set(timestamps).count == timestamps.count, "\(key): a message was delivered twice")
                    for (bytes, timestamp) in zip(rebuilt, timestamps) {
                        let index = Int(timestamp) - 1_000 * offset
                        try expect(sends.indices.contains(index) && sends[index] == bytes, "\(key): a delivered message differs from what was sent")
                    }
                    continue
                }
                try expect(rebuilt == sends, "\(key): received content differs from what was sent (\(rebuilt.count) of \(sends.count))")
                try expect(timestamps == (0..<sends.count).map { UInt64(1_000 * offset + $0) }, "\(key): timestamps differ")
            }
        }
    }

    /// The receiver declines a stream (the sender's session closes `unsupported`), then the caller
    /// hangs up (every session closes `sessionEnd`; the peer sees `remoteHangUp`).
    func unsupportedAndHangUp() async throws {
        try await withCall(index: 7) { alice, bob in
            let declined = SessionKey(streamID: 300)
            let kept = SessionKey(streamID: 301)
            _ = await alice.perform { machine, now in machine.makeOutbound(declined, type: .reliableMessage, now: now) }
            _ = await alice.perform { machine, now in machine.makeOutbound(kept, type: .reliableMessage, now: now) }
            try expect(await bob.wait { $0.filter { if case .dataSessionIncoming = $0 { true } else { false } }.count == 2 }, "bob was not told of both streams")
            await bob.perform { machine, _ in machine.unsupportInbound(declined) }
            _ = await bob.perform { machine, _ in machine.makeInbound(kept) }
            try expect(await alice.wait { $0.contains(.outboundClosed(declined, .unsupported)) }, "the declined stream did not close as unsupported")
            let refused = await alice.perform { machine, now in machine.enqueue(declined, bytes: [1], timestamp: 0, now: now) }
            try expect(refused == .failed(.closed(.unsupported)), "a send on the declined stream gave \(refused)")
            await alice.perform { machine, _ in machine.hangUp() }
            try expect(await alice.wait { $0.contains(.disconnected(.localHangUp)) }, "alice did not disconnect")
            try expect(await alice.wait { $0.contains(.outboundClosed(kept, .sessionEnd)) }, "alice's open session did not close with sessionEnd")
            try expect(await bob.wait { $0.contains(.disconnected(.remoteHangUp)) }, "bob did not see remoteHangUp")
            try expect(await bob.wait { $0.contains(.inboundClosed(kept, .sessionEnd)) }, "bob's inbound session did not close with sessionEnd")
        }
    }
}

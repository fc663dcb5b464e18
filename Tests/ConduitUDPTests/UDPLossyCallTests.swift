import Conduit
import ConduitNetworkTestSupport
import ConduitCore
import ConduitImpairment
import ConduitUDP
import Foundation
import NIOCore
import Testing

extension UDPTransportTests {
    /// Calls through the public API over real UDP sockets on 127.0.0.1, through the user-space
    /// impairment proxy (`conduit impair`): 10 % loss, 5 % reordering, 1 % duplication each way.
    /// CONDUIT_SOAK=1 sends the brief's full 2,000 messages.
    @Suite("Calls over UDP through the impairment proxy", .timeLimit(.minutes(3)))
    struct UDPLossyCallTests {
        static let soak = ProcessInfo.processInfo.environment["CONDUIT_SOAK"] == "1"

        /// `query` goes on both URLs, the listener's and the caller's.
        static func connect(impairment: ImpairmentConfiguration, query: String = "") async throws -> ImpairedCall {
            var configuration = ConduitConfiguration()
            configuration.rateLimit = .unlimited
            configuration.reassembly.incompleteTimeout = .seconds(3_600)
            configuration.queueDelayOn = .seconds(3_600)
            return try await ImpairedCall.connect(
                scheme: "udp", transport: UDPTransport(keyReader: .testFilesAndEnvironment), configuration: configuration, impairment: impairment,
                listenQuery: query, connectQuery: query)
        }

        /// `count` seeded messages of 1 B – 128 KiB, for ``ImpairedCall/transferReliably(on:_:)``.
        static func messages(count: Int, seed: UInt64) -> [[UInt8]] {
            var random = SeededRandom(seed: seed)
            return (0..<count).map { _ in random.bytes(max(1, random.logUniformSize(max: 131_072))) }
        }

        static func awaitIncoming(_ call: Call) async -> (StreamID, SessionType)? {
            for await event in call.events {
                if case .dataSessionIncoming(let streamID, _, let type) = event { return (streamID, type) }
            }
            return nil
        }

        @Test("reliable messages of 1 B to 128 KiB: exactly once, in order, byte-identical")
        func reliableMessagesThroughLoss() async throws {
            let setup = try await Self.connect(impairment: .harsh(seed: 41))
            let count = Self.soak ? 2_000 : 200
            let messages = Self.messages(count: count, seed: 77)
            let started = ContinuousClock.now
            let received = try await setup.transferReliably(on: 100, messages)
            let elapsed = started.duration(to: .now)
            #expect(received.map(\.timestamp) == (0..<UInt64(count)).map { $0 })
            #expect(received.map(\.bytes) == messages)
            let stats = await setup.proxy.statistics()
            #expect(stats.clientToUpstream.dropped > 0 && stats.clientToUpstream.duplicated > 0 && stats.clientToUpstream.reordered > 0)
            let bytes = messages.reduce(0) { $0 + $1.count }
            print("[udp lossy] \(count) messages, \(bytes) bytes through 10 % loss / 5 % reorder / 1 % dup in \(elapsed)")
            await setup.end()
        }

        @Test("unreliable messages: never a duplicate, never corrupted, most delivered")
        func unreliableMessagesThroughLoss() async throws {
            let setup = try await Self.connect(impairment: .harsh(seed: 43))
            let outbound = try await setup.caller.makeOutboundDataSession(streamID: 101, type: .unreliableMessage)
            #expect(await setup.nextIncomingSession()?.streamID == 101)
            let inbound = try await setup.callee.makeInboundDataSession(streamID: 101, expecting: .unreliableMessage)
            let count = 1_000
            var random = SeededRandom(seed: 78)
            // One datagram each, so each message's fate is one coin toss of the loss model.
            let messages: [[UInt8]] = (0..<count).map { _ in random.bytes(1 + random.below(1_000)) }
            for (index, message) in messages.enumerated() {
                try await outbound.send(message, timestamp: UInt64(index))
                if index % 50 == 49 { try await Task.sleep(for: .milliseconds(5)) }
            }
            var seen: [UInt64: Int] = [:]
            var corrupted = 0
            let collector = Task { () -> ([UInt64: Int], Int) in
                for await event in inbound.events {
                    guard case .message(let message) = event else { continue }
                    seen[message.timestamp, default: 0] += 1
                    if Int(message.timestamp) >= count || messages[Int(message.timestamp)] != message.bytes { corrupted += 1 }
                }
                return (seen, corrupted)
            }
            try await Task.sleep(for: .seconds(1))
            await setup.caller.hangUp()
            let (delivered, bad) = await collector.value
            let ratio = Double(delivered.count) / Double(count)
            #expect(delivered.values.allSatisfy { $0 == 1 })
            #expect(bad == 0)
            #expect(ratio > 0.8 && ratio < 1.0, "delivery ratio \(ratio)")
            print("[udp lossy] unreliable: delivery ratio \(String(format: "%.3f", ratio)) through 10 % loss")
            await setup.callee.hangUp()
            await setup.listener.close()
            await setup.proxy.stop()
        }

        // The 5 s blackout and the keepalive / idle-timeout tests moved to virtual time over an
        // impaired loopback path (ConduitTests' ImpairedPathVirtualTimeTests): the engine's timers
        // are the same over any unreliable link, and there they need no wall-clock sleep.

        /// A receiver that stops reading for 5 s: its buffers and the link's window fill, the
        /// sender's queue fills and it is told (`tooLongQueuedData`), nothing grows past the
        /// configured caps, and everything arrives in order once reading resumes.
        @Test("a receiver that stops reading slows the sender, then everything completes")
        func stalledReceiverSlowsTheSender() async throws {
            var configuration = ConduitConfiguration()
            configuration.rateLimit = .unlimited
            configuration.maxQueuedBytesPerSession = 512 * 1_024
            configuration.inboundBufferBytes = 256 * 1_024
            configuration.queueDelayOn = .milliseconds(300)
            configuration.queueDelayOff = .milliseconds(50)
            let runtime = ConduitRuntime(configuration: configuration, registry: TransportRegistry.defaults.registering(UDPTransport()))
            let listener = try await runtime.listen(on: "udp://127.0.0.1:0?receive-window=131072", as: "bob")
            async let accepted = listener.accept()
            let caller = try await runtime.connect(to: "udp://127.0.0.1:\(listener.url.port!)?receive-window=131072", as: "alice")
            let callee = try #require(try await accepted)
            let outbound = try await caller.makeOutboundDataSession(streamID: 103, type: .reliableMessage)
            #expect(await Self.awaitIncoming(callee)?.0 == 103)
            let inbound = try await callee.makeInboundDataSession(streamID: 103, expecting: .reliableMessage)

            let events = Task { () -> [OutboundDataSession.Event] in
                var seen: [OutboundDataSession.Event] = []
                for await event in outbound.events {
                    seen.append(event)
                    if event == .tooLongQueuedData(enabled: false) || seen.count > 16 { break }
                }
                return seen
            }
            var random = SeededRandom(seed: 80)
            let messages: [[UInt8]] = (0..<64).map { _ in random.bytes(64 * 1_024) }
            let sentSoFar = TSanVisibleMutex(0)
            let sender = Task {
                for (index, message) in messages.enumerated() {
                    try await outbound.send(message, timestamp: UInt64(index))
                    sentSoFar.withLock { $0 += 1 }
                }
            }
            // Nobody reads for 5 s; 4 MiB cannot fit in the buffers on the way (each capped: 512 KiB
            // queued, 1 MiB untransmitted in the link, a 128 KiB window, 256 KiB inbound), so the
            // sender's `send` suspends and the queue-delay signal fires.
            try await Task.sleep(for: .seconds(5))
            #expect(sentSoFar.withLock { $0 } < messages.count, "send must suspend while the receiver does not read")
            var received: [InboundDataSession.Message] = []
            for await event in inbound.events {
                guard case .message(let message) = event else { continue }
                received.append(message)
                if received.count == messages.count { break }
            }
            try await sender.value
            #expect(received.map(\.bytes) == messages)
            let seen = await events.value
            #expect(seen.first == .tooLongQueuedData(enabled: true))
            #expect(seen.contains(.tooLongQueuedData(enabled: false)))
            await caller.hangUp()
            await callee.hangUp()
            await listener.close()
        }
    }
}

// Relay fan-out benchmarks for the core's RelayMachine (the forwarding hot path, sans-IO).
//
// "Fanout_1_to_50_<size>": a room of 51 members; one sender's routed data frames (one fragment
// each, reliableMessage, to everyone) go into the machine as batches of 100, the way a reader
// task hands them over, and after each batch every receiver's queue is drained into a reused
// DatagramBatch, the way its writer task takes it. One measured pass routes `scalingFactor`
// frames, so rows marked `*` are per *incoming* frame; each is forwarded 50 times. The custom
// metric `forwardedPerSecond` counts forwarded copies (frames × 50) per second of the pass.
//
// "Route_1_to_1_beside_999_rooms_64_B": the same sender and traffic in a room of two, on a relay
// that also holds 999 other rooms of two (2,000 links). The relay's work per frame should not grow
// with the links and rooms that have nothing to do with it: after each batch the driver asks
// `nextTimeout()` (the server rearms its timer after every batch), and that once scanned every
// connection and room.
//
// "Route_1_to_1_beside_999_rooms_clustered_64_B": the same, on a relay that is a node of a cluster
// (a shard of `conduit relay --threads N`, or a relay clustered through NATS): its cluster
// deadlines once scanned every room after every batch too.
//
// Only mallocCountTotal is gated (see ../../README.md). Expected: one allocation per incoming
// frame (the relay copies the frame once, rewrites its envelope in place and shares that one
// array among the 50 receivers' queues), so 1/50 of an allocation per forwarded message.

import Benchmark
import ConduitCore

import ConduitRooms
import ConduitRelayCore
let framesPerBatch = 100
let forwardedPerSecond = BenchmarkMetric.custom("forwardedPerSecond", polarity: .prefersLarger, useScalingFactor: false)

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let quick = getenv("CONDUIT_BENCHMARK_QUICK").map { String(cString: $0) == "1" } ?? false

/// A relay with one room of a sender and `receivers` receivers (beside `otherRooms` rooms of two),
/// and the sender's frames, cut once.
final class FanoutState: @unchecked Sendable {
    var relay = RelayMachine(configuration: RelayConfiguration(maxMembersPerRoom: 64, maxPendingConnections: 4_096, maxJoinAttemptsPerSecond: 100_000))
    let sender = RelayConnectionID(1)
    let receivers: Int
    var batches: [DatagramBatch] = []
    var out = DatagramBatch(reservingBytes: 256 * 1024, datagrams: 256)
    var now = ConduitInstant(nanoseconds: 1)
    /// Frames handed to receivers, checked after each pass (outside the measurement).
    var delivered = 0
    /// What the last `nextTimeout()` said (kept, so the call is not optimized away).
    var deadline: ConduitInstant?

    init(payloadBytes: Int, receivers: Int, otherRooms: Int = 0, clustered: Bool = false) {
        self.receivers = receivers
        if clustered { relay.joinCluster(as: RelayNodeID(1), now: now) }
        var members: [(room: String, peer: String)] = (0...receivers).map { ("bench", "peer\($0)") }
        for room in 0..<otherRooms { members += [("idle\(room)", "a"), ("idle\(room)", "b")] }
        for (index, member) in members.enumerated() {
            let id = RelayConnectionID(UInt64(index + 1))
            _ = relay.connectionOpened(id, now: now)
            let join = RoomControlFrame.join(room: RoomID(stringLiteral: member.room), peer: PeerID(stringLiteral: member.peer), dataSessionsSupported: true, token: [1])
            relay.handle(id, datagram: join.encoded, now: now)
            drain()
        }
        // The peer lists of every room go out, as they would on a relay running for a while.
        now = now + .seconds(1)
        relay.handleTimeout(now: now)
        drain()
        let payload = (0..<payloadBytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        var messageID: UInt32 = 0
        for _ in 0..<10 {
            var batch = DatagramBatch()
            for _ in 0..<framesPerBatch {
                var fragmenter = Fragmenter(streamID: 100, sessionType: .reliableMessage, messageID: messageID, totalLength: payloadBytes, fragmentSize: 1_200, timestamp: 0)
                var one = DatagramBatch()
                payload.withUnsafeBytes { fragmenter.emitAll(of: $0, into: &one) }
                one.withDatagram(0) { batch.append($0, prefix: (0x12, 0, 0, 0)) }
                messageID &+= 1
            }
            batches.append(batch)
        }
        // Warm up: every receiver's queue grows to the size one batch needs, once, here; a relay
        // under steady traffic keeps that capacity, so the measured passes see no growth.
        for batch in batches {
            relay.handle(sender, batch: batch, now: now)
            drain()
        }
    }

    /// Hands every receiver its queue, as the writers do, admits joins and asks for the next
    /// timeout, as the server does. (A driver must honour every `.transmit`: the machine signals
    /// a connection once until its queue is empty again.)
    func drain() {
        defer { deadline = relay.nextTimeout() }
        // What a clustered relay publishes for the other relays (nobody here takes it).
        while relay.pollClusterMessage() != nil {}
        while relay.pollClusterNodeMessage() != nil {}
        while let action = relay.pollAction() {
            switch action {
            case .transmit(let id):
                out.removeAll()
                delivered += relay.pollTransmit(id, into: &out, maxBytes: .max)
            case .authorize(let who, let request):
                relay.admit(who, grant: RelayGrant(room: request.room, peer: request.peer, canPublish: true, canSubscribe: true), now: now)
            case .close, .resumeReading:
                break
            }
        }
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, forwardedPerSecond],
        timeUnits: .automatic,
        warmupIterations: quick ? 1 : 3,
        maxDuration: quick ? .milliseconds(100) : .milliseconds(1_500),
        maxIterations: quick ? 3 : 1_000,
        thresholds: [
            .mallocCountTotal: .strict,
            .wallClock: .none,
            .throughput: .none,
            forwardedPerSecond: .none,
        ]
    )

    let cases = [
        ("Fanout_1_to_50_64_B", 64, 50, 0, false), ("Fanout_1_to_50_1_KiB", 1_024, 50, 0, false),
        ("Route_1_to_1_beside_999_rooms_64_B", 64, 1, 999, false), ("Route_1_to_1_beside_999_rooms_clustered_64_B", 64, 1, 999, true),
    ]
    for (name, bytes, receivers, otherRooms, clustered) in cases {
        var configuration = Benchmark.defaultConfiguration
        configuration.scalingFactor = .kilo
        Benchmark(name, configuration: configuration) { benchmark, state in
            let frames = benchmark.scaledIterations.count
            state.delivered = 0
            let start = ContinuousClock.now
            benchmark.startMeasurement()
            var routed = 0
            var index = 0
            while routed < frames {
                state.relay.handle(state.sender, batch: state.batches[index % state.batches.count], now: state.now)
                state.drain()
                routed += framesPerBatch
                index += 1
            }
            benchmark.stopMeasurement()
            let elapsed = start.duration(to: .now)
            let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
            if nanoseconds > 0 { benchmark.measurement(forwardedPerSecond, Int(Double(routed * state.receivers) * 1e9 / nanoseconds)) }
            // Every frame reached every receiver, or the figures mean nothing.
            guard state.delivered == routed * state.receivers else {
                fatalError("\(state.delivered) frames delivered for \(routed) routed to \(state.receivers) receivers: \(state.relay.statistics)")
            }
        } setup: {
            FanoutState(payloadBytes: bytes, receivers: receivers, otherRooms: otherRooms, clustered: clustered)
        }
    }
}

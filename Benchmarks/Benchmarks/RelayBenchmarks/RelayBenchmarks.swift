// Relay fan-out benchmarks for the core's RelayMachine (the forwarding hot path, sans-IO).
//
// "Fanout_1_to_50_<size>": a room of 51 members; one sender's routed data frames (one fragment
// each, reliableMessage, to everyone) go into the machine as batches of 100, the way a reader
// task hands them over, and after each batch every receiver's queue is drained into a reused
// DatagramBatch, the way its writer task takes it. One measured pass routes `scalingFactor`
// frames, so rows marked `*` are per *incoming* frame; each is forwarded 50 times. The custom
// metric `forwardedPerSecond` counts forwarded copies (frames × 50) per second of the pass.
//
// Only mallocCountTotal is gated (see ../../README.md). Expected: one allocation per incoming
// frame (the relay copies the frame once, rewrites its envelope in place and shares that one
// array among the 50 receivers' queues), so 1/50 of an allocation per forwarded message.

import Benchmark
import ConduitCore

import ConduitRooms
import ConduitRelayCore
let receivers = 50
let framesPerBatch = 100
let forwardedPerSecond = BenchmarkMetric.custom("forwardedPerSecond", polarity: .prefersLarger, useScalingFactor: false)

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let quick = getenv("CONDUIT_BENCHMARK_QUICK").map { String(cString: $0) == "1" } ?? false

/// A relay with one room of a sender and `receivers` receivers, and the sender's frames, cut once.
final class FanoutState: @unchecked Sendable {
    var relay = RelayMachine(configuration: RelayConfiguration(maxMembersPerRoom: 64))
    let sender = RelayConnectionID(1)
    var batches: [DatagramBatch] = []
    var out = DatagramBatch(reservingBytes: 256 * 1024, datagrams: 256)
    var now = ConduitInstant(nanoseconds: 1)
    /// Frames handed to receivers, checked after each pass (outside the measurement).
    var delivered = 0

    init(payloadBytes: Int) {
        for index in 0...receivers {
            let id = RelayConnectionID(UInt64(index + 1))
            let peer = PeerID(stringLiteral: "peer\(index)")
            _ = relay.connectionOpened(id, now: now)
            relay.handle(id, datagram: RoomControlFrame.join(room: "bench", peer: peer, dataSessionsSupported: true, token: [1]).encoded, now: now)
            drain()
        }
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

    /// Hands every receiver its queue, as the writers do, and admits joins, as the server does.
    /// (A driver must honour every `.transmit`: the machine signals a connection once until its
    /// queue is empty again.)
    func drain() {
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

    for (label, bytes) in [("64_B", 64), ("1_KiB", 1_024)] {
        var configuration = Benchmark.defaultConfiguration
        configuration.scalingFactor = .kilo
        Benchmark("Fanout_1_to_50_\(label)", configuration: configuration) { benchmark, state in
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
            if nanoseconds > 0 { benchmark.measurement(forwardedPerSecond, Int(Double(routed * receivers) * 1e9 / nanoseconds)) }
            // Every frame reached every receiver, or the figures mean nothing.
            guard state.delivered == routed * receivers else {
                fatalError("\(state.delivered) frames delivered for \(routed) routed to \(receivers) receivers: \(state.relay.statistics)")
            }
        } setup: {
            FanoutState(payloadBytes: bytes)
        }
    }
}

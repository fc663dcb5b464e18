// Fragmentation and reassembly benchmarks for ConduitCore.
//
// For each message size (1_KiB, 16_KiB, 128_KiB: reliableMessage; 4_MiB: reliableBytes) there are
// four benchmarks:
// - "Fragment_<size>": Fragmenter (1200-byte fragments) into a DatagramBatch that is reused
//   across messages, as a sender's transmit loop does.
// - "Reassemble_<size>_in_order" / "..._shuffled": the datagrams are cut once in setup; the
//   measured loop gives each message a new Message ID (a 4-byte store per datagram: a receiver
//   drops a repeated ID as a duplicate), parses every datagram with DataFrameHeader.parse and
//   feeds Reassembler.ingest. The Reassembler lives across passes, like a call's. "shuffled"
//   feeds the datagrams in a fixed pseudo-random order (SeededRandom, fixed seed).
// - "Memcpy_<size>": one plain copy of the same number of bytes into a preallocated buffer, the
//   floor that reassembly throughput is compared with.
//
// Names use `_`, not spaces: package-benchmark 1.38.1 writes threshold files with spaces turned
// into `_` but looks them up by the raw name, so a name with a space is never checked.
//
// One measured pass handles `scalingFactor` messages; the `*` rows (wall clock, mallocs) are per
// message, and `bytesPerSecond` is message bytes per second of the whole pass. Only
// mallocCountTotal is gated by the checked-in thresholds (see ../../README.md); time metrics
// depend on the machine and are reported, never gated.

import Benchmark
import ConduitCore

import ConduitImpairment
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - Cases

struct SizeCase: Sendable {
    let label: String
    let bytes: Int
    let sessionType: SessionType
    /// Messages per measured pass (a ``BenchmarkScalingFactor`` raw value): large enough that the
    /// per-pass overhead of the harness is noise.
    let messagesPerPass: Int

    var scalingFactor: BenchmarkScalingFactor { BenchmarkScalingFactor(rawValue: messagesPerPass)! }
}

let sizeCases: [SizeCase] = [
    SizeCase(label: "1_KiB", bytes: 1 << 10, sessionType: .reliableMessage, messagesPerPass: 1_000),
    SizeCase(label: "16_KiB", bytes: 16 << 10, sessionType: .reliableMessage, messagesPerPass: 1_000),
    SizeCase(label: "128_KiB", bytes: 128 << 10, sessionType: .reliableMessage, messagesPerPass: 1_000),
    SizeCase(label: "4_MiB", bytes: 4 << 20, sessionType: .reliableBytes, messagesPerPass: 1),
]

let fragmentSize = 1_200
let streamID: StreamID = 100
/// A 4 MiB send must fit in `maxBufferedBytes` (16 MiB by default); 8 MiB holds two in progress.
let reassemblyConfiguration = Reassembler.Configuration(maxIncompleteMessages: 64, maxBufferedBytes: 8 << 20)

/// Message bytes per second of the measured loop, computed by the benchmark itself.
let bytesPerSecond = BenchmarkMetric.custom("bytesPerSecond", polarity: .prefersLarger, useScalingFactor: false)

// MARK: - Helpers

/// A fixed permutation of `0..<count` (Fisher-Yates driven by the core's SeededRandom; not `shuffle(using:)`,
/// whose algorithm the standard library does not promise to keep).
func fixedPermutation(count: Int, seed: UInt64) -> [Int] {
    var order = Array(0..<count)
    var rng = SeededRandom(seed: seed)
    var i = count - 1
    while i > 0 {
        let j = Int(rng.next() % UInt64(i + 1))
        order.swapAt(i, j)
        i -= 1
    }
    return order
}

func makeMessage(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
}

/// The datagrams of one message, cut once, the order to feed them in, and the receiver's state,
/// which lives across measured passes as it does across a call.
final class PreFragmented: @unchecked Sendable {
    /// The datagrams, back to back. Mutable only so that each message can get its own ID.
    let storage: UnsafeMutableRawBufferPointer
    /// Byte range of each datagram in `storage`, in feeding order.
    let ranges: [Range<Int>]
    var reassembler = Reassembler(configuration: reassemblyConfiguration)
    var nextMessageID: UInt32 = 0

    init(_ size: SizeCase, shuffled: Bool) {
        var batch = DatagramBatch()
        var fragmenter = Fragmenter(
            streamID: streamID,
            sessionType: size.sessionType,
            messageID: 0,
            totalLength: size.bytes,
            fragmentSize: fragmentSize,
            timestamp: 0x0102_0304_0506_0708
        )
        makeMessage(size.bytes).withUnsafeBytes { fragmenter.emitAll(of: $0, into: &batch) }
        let inOrder = (0..<batch.count).map { batch.range(of: $0) }
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: batch.byteCount, alignment: 16)
        batch.storage.withUnsafeBytes { storage.copyMemory(from: $0) }
        self.storage = storage
        ranges = shuffled ? fixedPermutation(count: inOrder.count, seed: 0xC0DE_D00D).map { inOrder[$0] } : inOrder
    }

    deinit { storage.deallocate() }

    /// Sets the Message ID field (bytes 8..<12, big-endian) of every datagram. A receiver remembers
    /// the IDs it delivered and drops repeats, so each message fed must have a new one, as a
    /// sender's successive messages do.
    @inline(__always)
    func stamp(messageID: UInt32) {
        for range in ranges {
            storage.storeBytes(of: messageID.bigEndian, toByteOffset: range.lowerBound + 8, as: UInt32.self)
        }
    }
}

/// A reused output batch and the message it is filled from.
final class FragmentState: @unchecked Sendable {
    let message: [UInt8]
    var batch: DatagramBatch

    init(_ size: SizeCase) {
        message = makeMessage(size.bytes)
        let frames = (size.bytes + fragmentSize - 1) / fragmentSize
        batch = DatagramBatch(reservingBytes: size.bytes + max(frames, 1) * DataFrameHeader.size, datagrams: max(frames, 1))
    }
}

/// Source and preallocated destination for the memcpy baseline.
final class CopyState: @unchecked Sendable {
    let source: UnsafeMutableRawBufferPointer
    let destination: UnsafeMutableRawBufferPointer

    init(_ size: SizeCase) {
        source = .allocate(byteCount: size.bytes, alignment: 64)
        destination = .allocate(byteCount: size.bytes, alignment: 64)
        for i in 0..<size.bytes { source[i] = UInt8(truncatingIfNeeded: i &* 31 &+ 7) }
        destination.initializeMemory(as: UInt8.self, repeating: 0)  // fault the pages in before measuring
    }

    deinit {
        source.deallocate()
        destination.deallocate()
    }
}

/// Records `bytesPerSecond` for a measured loop of `messages` messages of `bytes` bytes.
@inline(__always)
func recordRate(_ benchmark: Benchmark, bytes: Int, messages: Int, since start: ContinuousClock.Instant) {
    let elapsed = start.duration(to: .now)
    benchmark.stopMeasurement()
    let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    if nanoseconds > 0 {
        benchmark.measurement(bytesPerSecond, Int(Double(bytes) * Double(messages) * 1e9 / nanoseconds))
    }
}

/// `CONDUIT_BENCHMARK_QUICK=1` (set by run-ci.sh) runs a handful of passes per benchmark: enough
/// for the allocation counts, which are the same on every pass, but not for meaningful times.
let quick = getenv("CONDUIT_BENCHMARK_QUICK").map { String(cString: $0) == "1" } ?? false

// MARK: - Benchmarks

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, bytesPerSecond],
        timeUnits: .automatic,
        warmupIterations: quick ? 1 : 3,
        maxDuration: quick ? .milliseconds(100) : .milliseconds(1_500),
        maxIterations: quick ? 3 : 1_000,
        thresholds: [
            // Allocation counts are deterministic: any change is a regression (or an improvement to record).
            .mallocCountTotal: .strict,
            // Time depends on the machine: reported, never gated.
            .wallClock: .none,
            .throughput: .none,
            bytesPerSecond: .none,
        ]
    )

    func configuration(_ size: SizeCase) -> Benchmark.Configuration {
        var configuration = Benchmark.defaultConfiguration
        configuration.scalingFactor = size.scalingFactor
        return configuration
    }

    for size in sizeCases {
        Benchmark("Fragment_\(size.label)", configuration: configuration(size)) { benchmark, state in
            // Take the batch out of the state so the loop mutates a local, uniquely referenced value.
            var batch = DatagramBatch()
            swap(&batch, &state.batch)
            defer { swap(&batch, &state.batch) }
            let messages = benchmark.scaledIterations
            state.message.withUnsafeBytes { message in
                benchmark.startMeasurement()
                let start = ContinuousClock.now
                for index in messages {
                    batch.removeAll(keepingCapacity: true)
                    var fragmenter = Fragmenter(
                        streamID: streamID,
                        sessionType: size.sessionType,
                        messageID: UInt32(truncatingIfNeeded: index),
                        totalLength: size.bytes,
                        fragmentSize: fragmentSize,
                        timestamp: 0
                    )
                    fragmenter.emitAll(of: message, into: &batch)
                    blackHole(batch.count)
                }
                recordRate(benchmark, bytes: size.bytes, messages: messages.count, since: start)
            }
        } setup: {
            FragmentState(size)
        }

        for shuffled in [false, true] {
            Benchmark(
                "Reassemble_\(size.label)_\(shuffled ? "shuffled" : "in_order")",
                configuration: configuration(size)
            ) { benchmark, state in
                // Move the receiver's state into a local for the measured loop. The placeholder's
                // allocations happen here, outside the measured region.
                var reassembler = Reassembler(configuration: reassemblyConfiguration)
                swap(&reassembler, &state.reassembler)
                defer { swap(&reassembler, &state.reassembler) }
                let completedBefore = reassembler.statistics.completedMessages
                let messages = benchmark.scaledIterations
                let all = UnsafeRawBufferPointer(state.storage)
                var messageID = state.nextMessageID
                benchmark.startMeasurement()
                let start = ContinuousClock.now
                for _ in messages {
                    state.stamp(messageID: messageID)
                    messageID &+= 1
                    for range in state.ranges {
                        let datagram = UnsafeRawBufferPointer(rebasing: all[range])
                        let frame: (header: DataFrameHeader, payload: Range<Int>)
                        do {
                            frame = try DataFrameHeader.parse(datagram)
                        } catch {
                            fatalError("benchmark datagram refused: \(error)")
                        }
                        let outcome = reassembler.ingest(
                            frame.header,
                            payload: UnsafeRawBufferPointer(rebasing: datagram[frame.payload]),
                            now: .zero
                        )
                        if case .complete(let message) = outcome { blackHole(message.bytes) }
                    }
                }
                recordRate(benchmark, bytes: size.bytes, messages: messages.count, since: start)
                state.nextMessageID = messageID
                precondition(
                    reassembler.statistics.completedMessages - completedBefore == messages.count
                        && reassembler.incompleteMessages == 0,
                    "reassembly did not complete every message: \(reassembler.statistics)"
                )
            } setup: {
                PreFragmented(size, shuffled: shuffled)
            }
        }

        Benchmark("Memcpy_\(size.label)", configuration: configuration(size)) { benchmark, buffers in
            let messages = benchmark.scaledIterations
            let source = UnsafeRawBufferPointer(buffers.source)
            benchmark.startMeasurement()
            let start = ContinuousClock.now
            for _ in messages {
                buffers.destination.copyMemory(from: source)
                blackHole(buffers.destination.baseAddress)
            }
            recordRate(benchmark, bytes: size.bytes, messages: messages.count, since: start)
        } setup: {
            CopyState(size)
        }
    }
}

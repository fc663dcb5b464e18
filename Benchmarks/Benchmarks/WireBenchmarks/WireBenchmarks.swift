// Wire codec benchmarks for ConduitCore: what every datagram and every control frame costs to
// encode, parse and checksum, apart from the copies that fragmentation and reassembly make.
//
// - "DataHeader_encode_parse": DataFrameHeader.encode into a preallocated 32-byte buffer, then
//   DataFrameHeader.parse of a 1,232-byte datagram (header + 1,200 payload bytes). Per datagram.
// - "ControlFrame_parse": ControlFrame.parse of a sessionOpen frame naming a subgroup. Per frame.
// - "ControlFrame_encode": ControlFrame.encode(into:) appending to a reused array. Per frame.
// - "CRC32C_1200B": CRC32C.checksum over 1,200 bytes, the trailer every reliable-link packet
//   carries. Per datagram; `bytesPerSecond` is the checksum's throughput.
//
// As in FragmentationBenchmarks, only mallocCountTotal is gated; times are reported.

import Benchmark
import ConduitCore

import ConduitARQ
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

let quick = getenv("CONDUIT_BENCHMARK_QUICK").map { String(cString: $0) == "1" } ?? false
let bytesPerSecond = BenchmarkMetric.custom("bytesPerSecond", polarity: .prefersLarger, useScalingFactor: false)
let perPass = 1_000  // a BenchmarkScalingFactor case (1, 1_000, 1_000_000, ...)
let payloadSize = 1_200

/// A datagram to parse and a scratch buffer to encode into, made once in setup.
final class HeaderState: @unchecked Sendable {
    let datagram: UnsafeMutableRawBufferPointer
    let scratch: UnsafeMutableRawBufferPointer
    let header = DataFrameHeader(
        streamID: 100, sessionType: .reliableBytes, subgroupID: 3, messageID: 7,
        fragmentOffset: 2_400, totalLength: 1 << 20, fragmentSize: UInt16(payloadSize), timestamp: 42
    )

    init() {
        datagram = .allocate(byteCount: DataFrameHeader.size + payloadSize, alignment: 16)
        datagram.initializeMemory(as: UInt8.self, repeating: 0x5A)
        header.encode(into: UnsafeMutableRawBufferPointer(rebasing: datagram[0..<DataFrameHeader.size]))
        scratch = .allocate(byteCount: DataFrameHeader.size, alignment: 16)
    }

    deinit {
        datagram.deallocate()
        scratch.deallocate()
    }
}

final class ControlState: @unchecked Sendable {
    let frame = ControlFrame.sessionOpen(streamID: 412, subgroupID: 9, subgroup: "whiteboard", type: .reliableMessage)
    let encoded: [UInt8]
    var output: [UInt8] = []

    init() {
        encoded = frame.encoded
        output.reserveCapacity(256)
    }
}

@inline(__always)
func recordRate(_ benchmark: Benchmark, bytes: Int, since start: ContinuousClock.Instant) {
    let elapsed = start.duration(to: .now)
    benchmark.stopMeasurement()
    let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    if nanoseconds > 0 { benchmark.measurement(bytesPerSecond, Int(Double(bytes) * 1e9 / nanoseconds)) }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        timeUnits: .automatic,
        warmupIterations: quick ? 1 : 3,
        scalingFactor: BenchmarkScalingFactor(rawValue: perPass)!,
        maxDuration: quick ? .milliseconds(100) : .milliseconds(1_500),
        maxIterations: quick ? 3 : 1_000,
        thresholds: [.mallocCountTotal: .strict, .wallClock: .none, .throughput: .none]
    )

    Benchmark("DataHeader_encode_parse") { benchmark, state in
        let datagram = UnsafeRawBufferPointer(state.datagram)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            state.header.encode(into: state.scratch)
            do {
                let parsed = try DataFrameHeader.parse(datagram)
                blackHole(parsed.payload.count)
            } catch {
                fatalError("benchmark datagram refused: \(error)")
            }
        }
        benchmark.stopMeasurement()
    } setup: {
        HeaderState()
    }

    Benchmark("ControlFrame_parse") { benchmark, state in
        state.encoded.withUnsafeBytes { bytes in
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                do {
                    blackHole(try ControlFrame.parse(bytes))
                } catch {
                    fatalError("benchmark control frame refused: \(error)")
                }
            }
            benchmark.stopMeasurement()
        }
    } setup: {
        ControlState()
    }

    Benchmark("ControlFrame_encode") { benchmark, state in
        var output: [UInt8] = []
        swap(&output, &state.output)
        defer { swap(&output, &state.output) }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            output.removeAll(keepingCapacity: true)
            state.frame.encode(into: &output)
            blackHole(output.count)
        }
        benchmark.stopMeasurement()
    } setup: {
        ControlState()
    }

    var crcConfiguration = Benchmark.defaultConfiguration
    crcConfiguration.metrics.append(bytesPerSecond)
    crcConfiguration.thresholds?[bytesPerSecond] = BenchmarkThresholds.none
    Benchmark("CRC32C_1200B", configuration: crcConfiguration) { benchmark, state in
        let payload = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(state.datagram)[DataFrameHeader.size...])
        let iterations = benchmark.scaledIterations
        benchmark.startMeasurement()
        let start = ContinuousClock.now
        var crc: UInt32 = 0
        for _ in iterations { crc = CRC32C.checksum(payload, continuing: crc) }
        blackHole(crc)
        recordRate(benchmark, bytes: payload.count * iterations.count, since: start)
    } setup: {
        HeaderState()
    }
}

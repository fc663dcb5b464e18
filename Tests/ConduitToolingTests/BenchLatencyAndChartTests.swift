import Conduit
import ConduitTooling
import ConduitUDP
import Foundation
import Testing

@Suite("conduit bench: latency percentiles and the SVG chart", .timeLimit(.minutes(1)))
struct BenchLatencyAndChartTests {
    @Test func percentilesAreNearestRank() throws {
        let figures = try #require(BenchLatency.Figures(microseconds: (1...100).map(Double.init).shuffled()))
        #expect(figures.samples == 100)
        #expect(figures.p50Micros == 50)
        #expect(figures.p99Micros == 99)
        let one = try #require(BenchLatency.Figures(microseconds: [7]))
        #expect(one.p50Micros == 7 && one.p99Micros == 7)
        #expect(BenchLatency.Figures(microseconds: []) == nil)
    }

    /// Every message of a reliable session yields one sample; percentiles are ordered and positive.
    @Test(arguments: [SessionType.reliableMessage, .reliableBytes])
    func latencyOnLoopbackCountsEveryMessage(_ type: SessionType) async throws {
        let latency = BenchLatency(runtime: .forToolingTests(), options: .init(messages: 40, rate: 400))
        let figures = try #require(try await latency.run(transport: "loopback://latency-\(type.name)", type: type, size: 4_096, timeout: .seconds(20)))
        #expect(figures.samples == 40)
        #expect(figures.p50Micros > 0)
        #expect(figures.p50Micros <= figures.p99Micros)
    }

    /// Under load, every timed message still arrives (one sample each) while the bulk session
    /// on the same call delivers data, and its rate is reported; without load there is none.
    @Test func latencyUnderLoadAlsoReportsTheBulkTransfer() async throws {
        let loaded = BenchLatency(runtime: .forToolingTests(), options: .init(messages: 40, rate: 200, underLoad: true))
        let figures = try #require(try await loaded.run(transport: "loopback://latency-under-load", type: .reliableMessage, size: 256, timeout: .seconds(20)))
        #expect(figures.samples == 40)
        #expect((figures.bulkMegabytesPerSecond ?? 0) > 0)

        let idle = BenchLatency(runtime: .forToolingTests(), options: .init(messages: 10, rate: 200))
        let plain = try #require(try await idle.run(transport: "loopback://latency-idle", type: .reliableMessage, size: 256, timeout: .seconds(20)))
        #expect(plain.bulkMegabytesPerSecond == nil)
    }

    /// The `conduit` executable the test command built beside this test bundle.
    static let conduit: String? = {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [directory, directory.deletingLastPathComponent()].map { $0.appendingPathComponent("conduit").path }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// With the receiving end in a child `conduit bench-latency-peer` (the command's default):
    /// the child counts every timed message of the reliable session, and the figures and the bulk
    /// rate it reports come back; a peer that cannot start is an error, not empty figures.
    @Test(.enabled(if: conduit != nil, "needs the conduit executable beside the test bundle (swift build --build-tests builds it)"))
    func theReceivingEndCanBeAChildProcess() async throws {
        let executable = try #require(Self.conduit)
        var configuration = ConduitConfiguration()
        configuration.rateLimit = .unlimited
        let runtime = ConduitRuntime(configuration: configuration, registry: TransportRegistry.defaults.registering(UDPTransport()))
        let latency = BenchLatency(runtime: runtime, options: .init(messages: 30, rate: 300, underLoad: true, peer: .process(executable: executable)))
        let figures = try #require(try await latency.run(transport: "udp://127.0.0.1:0", type: .reliableMessage, size: 512, timeout: .seconds(30)))
        #expect(figures.samples == 30)
        #expect(figures.p50Micros > 0 && figures.p50Micros <= figures.p99Micros)
        #expect((figures.bulkMegabytesPerSecond ?? 0) > 0)

        let missing = BenchLatency(runtime: runtime, options: .init(messages: 5, peer: .process(executable: "/nonexistent/conduit")))
        await #expect(throws: ConduitError.self) {
            try await missing.run(transport: "udp://127.0.0.1:0", type: .reliableMessage, size: 64, timeout: .seconds(10))
        }
    }

    @Test func benchCellsCarryLatencyUnlessTurnedOff() async throws {
        var options = BenchJob.Options(
            transports: ["loopback://bench-latency"], types: [.reliableMessage], sizes: [1_024], runs: 1,
            countBytes: 64 * 1_024, timeout: .seconds(20))
        options.latency = .init(messages: 20, rate: 500)
        let cell = try #require(try await BenchJob(runtime: .forToolingTests(), options: options).run().first)
        #expect(cell.latencySamples == 20)
        #expect((cell.latencyP50Micros ?? 0) > 0 && (cell.latencyP99Micros ?? 0) >= (cell.latencyP50Micros ?? .infinity))

        options.latency = .init(messages: 0)
        let off = try #require(try await BenchJob(runtime: .forToolingTests(), options: options).run().first)
        #expect(off.latencySamples == nil && off.latencyP50Micros == nil && off.latencyP99Micros == nil)

        options.latency = .init(messages: 10, rate: 0)
        #expect(throws: ConduitError.self) { try options.validate() }
    }

    @Test func chartHasABarPerCellAndReference() throws {
        func cell(_ transport: String, _ size: Int, _ rate: Double) -> BenchCellReport {
            var report = BenchCellReport(
                cell: .init(transport: transport, type: .reliableMessage, size: size),
                runs: [], peakResidentBytes: 0)
            report.megabytesPerSecond = BenchSpread(median: rate, min: rate * 0.9, max: rate * 1.1)
            return report
        }
        let report = BenchJob.Report(
            cells: [cell("udp://127.0.0.1:0", 1_024, 90), cell("udp://127.0.0.1:0", 65_536, 120), cell("loopback://x", 1_024, 400)],
            references: [
                BenchReferenceReport(name: "tsctp", size: 1_024, megabytesPerSecond: [60]),
                BenchReferenceReport(name: "tsctp", size: 65_536, megabytesPerSecond: [150]),
                BenchReferenceReport(name: "iperf3", size: 65_536, megabytesPerSecond: [500]),
                BenchReferenceReport(name: "udp-blast", size: 1_200, megabytesPerSecond: [700]),
            ])
        let svg = BenchChart.svg(report)
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        #expect(svg.hasSuffix("</svg>\n"))
        // 3 cells + 2 tsctp + 1 iperf3 + the blast in each of the 2 size groups.
        #expect(svg.components(separatedBy: "class=\"bar\"").count - 1 == 8)
        #expect(svg.contains("iperf3 (kernel TCP)"))
        #expect(svg.contains(">1 KiB</text>") && svg.contains(">64 KiB</text>"))
        #expect(svg.contains("usrsctp tsctp (debug off)") && svg.contains("UDP blast, 1200-byte datagrams"))
        #expect(svg.contains("udp://127.0.0.1:0 reliable-message, 65536 B: 120 MB/s"))
        // The tallest bar (the blast, 700) sets the axis: 1000.
        #expect(svg.contains(">1000</text>"))
    }
}

import Conduit
import ConduitTooling
import Testing

@Suite("conduit bench: statistics, matrix, one tiny run", .timeLimit(.minutes(1)))
struct BenchJobTests {
    @Test func medianAndSpreadOfAnOddCount() throws {
        let spread = try #require(BenchSpread([3, 1, 2]))
        #expect(spread == BenchSpread(median: 2, min: 1, max: 3))
    }

    @Test func medianOfAnEvenCountIsTheMeanOfTheMiddleTwo() throws {
        let spread = try #require(BenchSpread([10, 4, 1, 6]))
        #expect(spread == BenchSpread(median: 5, min: 1, max: 10))
    }

    @Test func oneValueIsItsOwnSpreadAndNoneIsNil() throws {
        #expect(BenchSpread([7.5]) == BenchSpread(median: 7.5, min: 7.5, max: 7.5))
        #expect(BenchSpread([]) == nil)
    }

    @Test func matrixIsTransportsThenTypesThenSizes() {
        let options = BenchJob.Options(
            transports: ["loopback://a", "udp://127.0.0.1:0"], types: [.reliableMessage, .unreliableBytes], sizes: [1, 2, 3]
        )
        let cells = options.cells
        #expect(cells.count == 12)
        #expect(cells.first == .init(transport: "loopback://a", type: .reliableMessage, size: 1))
        #expect(cells[3] == .init(transport: "loopback://a", type: .unreliableBytes, size: 1))
        #expect(cells.last == .init(transport: "udp://127.0.0.1:0", type: .unreliableBytes, size: 3))
        #expect(Set(cells).count == 12)
    }

    @Test func defaultsAndCounts() {
        let options = BenchJob.Options()
        #expect(options.cells.map(\.size) == [1_024, 16_384, 65_536])
        #expect(options.cells.allSatisfy { $0.transport == "udp://127.0.0.1:0" && $0.type == .reliableMessage })
        #expect(options.runs == 3)
        #expect(options.count(for: 1_024) == 262_144)
        #expect(options.count(for: 65_536) == 4_096)
        #expect(options.count(for: 16 * 1_048_576) == 50)
    }

    @Test func badOptionsAreRefused() {
        #expect(throws: ConduitError.self) { try BenchJob.Options(runs: 0).validate() }
        #expect(throws: ConduitError.self) { try BenchJob.Options(sizes: [0]).validate() }
        #expect(throws: ConduitError.self) { try BenchJob.Options(sizes: [Limits.maxMessageSize + 1]).validate() }
        #expect(throws: ConduitError.self) { try BenchJob.Options(transports: ["not a url"]).validate() }
        #expect(throws: ConduitError.self) { try BenchJob.Options(sizes: []).validate() }
        #expect(throws: Never.self) { try BenchJob.Options(types: [.reliableBytes], sizes: [Limits.maxMessageSize + 1]).validate() }
    }

    @Test func tinyRunOnLoopback() async throws {
        let options = BenchJob.Options(
            transports: ["loopback://bench-test"], types: [.reliableMessage], sizes: [1_024, 16_384], runs: 1,
            countBytes: 256 * 1_024, timeout: .seconds(20)
        )
        let job = BenchJob(runtime: .forToolingTests(), options: options)
        let cells = try await job.run()
        #expect(cells.map(\.size) == [1_024, 16_384])
        for cell in cells {
            #expect(cell.transport == "loopback://bench-test")
            #expect(cell.type == "reliable-message")
            #expect(cell.runs == 1)
            #expect(cell.count == options.count(for: cell.size))
            #expect(cell.megabytesPerSecond.median > 0)
            #expect(cell.messagesPerSecond.median > 0)
            // bytes / elapsed and messages / elapsed share the elapsed time: their ratio is the size.
            let bytesPerMessage = cell.megabytesPerSecond.median * 1e6 / cell.messagesPerSecond.median
            #expect(abs(bytesPerMessage - Double(cell.size)) < 1e-6 * Double(cell.size))
            #expect(cell.cpuSeconds.median >= 0)
            #expect(cell.peakResidentBytes > 0)
            // Counted where the code copies: the fragmenter copies every payload byte out, the
            // reassembler every payload byte in (other tests running beside may add to the counts).
            #expect(cell.copiesPerMessageSend >= 1)
            #expect(cell.copiesPerMessageReceive >= 1)
        }
        #expect(cells.map(\.count) == [256, 50])
    }
}

import ConduitCore
import ConduitImpairment
import Testing

@Suite("Impairment model")
struct ImpairmentModelTests {
    func run(_ configuration: ImpairmentConfiguration, count: Int = 10_000, spacing: Duration = .milliseconds(1)) -> (ImpairmentModel, [[ImpairmentModel.Delivery]]) {
        var model = ImpairmentModel(configuration: configuration)
        var now = ConduitInstant.zero
        var fates: [[ImpairmentModel.Delivery]] = []
        for _ in 0..<count {
            fates.append(model.submit(size: 1_000, now: now).deliveries)
            now = now + spacing
        }
        return (model, fates)
    }

    @Test func theSameSeedGivesTheSameFates() {
        var configuration = ImpairmentConfiguration()
        configuration.loss = 0.1
        configuration.duplicate = 0.01
        configuration.reorder = 0.05
        configuration.corrupt = 0.01
        configuration.jitter = .milliseconds(5)
        let (_, first) = run(configuration)
        let (_, second) = run(configuration)
        #expect(first == second)
        configuration.seed = 2
        let (_, other) = run(configuration)
        #expect(first != other)
    }

    @Test func ratesLandNearTheirProbabilities() {
        var configuration = ImpairmentConfiguration()
        configuration.loss = 0.1
        configuration.duplicate = 0.01
        configuration.reorder = 0.05
        configuration.corrupt = 0.02
        let (model, fates) = run(configuration, count: 100_000)
        let stats = model.statistics
        #expect(stats.submitted == 100_000)
        // Binomial with n = 100,000: these bounds are more than 5 standard deviations wide.
        #expect((9_500...10_500).contains(stats.dropped))
        #expect((850...1_150).contains(stats.duplicated))
        #expect(fates.filter { $0.count == 2 }.count == stats.duplicated)
        #expect(fates.filter(\.isEmpty).count == stats.dropped)
        #expect((1_500...2_500).contains(stats.corrupted))
    }

    @Test func jitterAloneNeverReorders() {
        var configuration = ImpairmentConfiguration()
        configuration.delay = .milliseconds(20)
        configuration.jitter = .milliseconds(15)
        let (_, fates) = run(configuration, count: 5_000, spacing: .microseconds(100))
        let arrivals = fates.map { $0[0].at }
        #expect(arrivals == arrivals.sorted())
        #expect(arrivals[0] >= ConduitInstant.zero + .milliseconds(20))
    }

    @Test func reorderedDatagramsAreOvertaken() {
        var configuration = ImpairmentConfiguration()
        configuration.reorder = 0.2
        configuration.reorderHold = .milliseconds(10)
        let (model, fates) = run(configuration, count: 1_000)
        let arrivals = fates.map { $0[0].at }
        var inversions = 0
        for i in 1..<arrivals.count where arrivals[i] < arrivals[i - 1] { inversions += 1 }
        #expect(model.statistics.reordered > 100)
        #expect(inversions > 0)
    }

    @Test func thePartitionDropsEverythingUntilLifted() {
        var model = ImpairmentModel(configuration: ImpairmentConfiguration())
        model.isPartitioned = true
        for i in 0..<100 { #expect(model.submit(size: 10, now: .init(nanoseconds: UInt64(i))).isDropped) }
        model.isPartitioned = false
        #expect(!model.submit(size: 10, now: .init(nanoseconds: 200)).isDropped)
        #expect(model.statistics.droppedByPartition == 100)
    }

    @Test func theBottleneckSerialisesAtItsRate() {
        var configuration = ImpairmentConfiguration()
        configuration.rate = .bitsPerSecond(8_000_000)  // 1 byte per microsecond
        var model = ImpairmentModel(configuration: configuration)
        let arrivals = (0..<10).map { _ in model.submit(size: 1_000, now: .zero).deliveries[0].at }
        #expect(arrivals == (1...10).map { ConduitInstant.zero + .microseconds(1_000 * $0) })
    }

    @Test func corruptionFlipsExactlyOneBit() {
        var configuration = ImpairmentConfiguration()
        configuration.corrupt = 1
        var model = ImpairmentModel(configuration: configuration)
        let delivery = model.submit(size: 64, now: .zero).deliveries[0]
        var datagram = [UInt8](repeating: 0, count: 64)
        delivery.apply(to: &datagram)
        let bitsSet = datagram.reduce(0) { (sum: Int, byte: UInt8) in sum + byte.nonzeroBitCount }
        #expect(bitsSet == 1)
    }

    @Test func optionsParseAndRefuseNonsense() throws {
        let configuration = try ImpairmentConfiguration(options: ["loss": "0.1", "dup": "0.01", "reorder": "0.05", "delay-ms": "20", "jitter-ms": "2.5", "rate": "10mbps", "seed": "7"])
        #expect(configuration.loss == 0.1 && configuration.duplicate == 0.01 && configuration.reorder == 0.05)
        #expect(configuration.delay == .milliseconds(20) && configuration.jitter == .microseconds(2_500))
        #expect(configuration.rate == .bitsPerSecond(10_000_000) && configuration.seed == 7)
        for bad in [["loss": "1.5"], ["dup": "-0.1"], ["delay-ms": "abc"], ["seed": "-1"], ["rate": "fast"]] {
            #expect(throws: ConduitError.self) { try ImpairmentConfiguration(options: bad) }
        }
    }

    /// A bottleneck buffer (`queue-ms`) drops what would wait in it longer than its limit, as a full
    /// router buffer does (drop-tail), and counts it; what it keeps waits no longer than the limit.
    @Test func aFullBottleneckBufferDropsWhatWouldWaitLongerAndCountsIt() throws {
        let configuration = try ImpairmentConfiguration(options: ["rate": "1mbps", "queue-ms": "20"])
        #expect(configuration.queueLimit == .milliseconds(20))
        var model = ImpairmentModel(configuration: configuration)
        // 1,250 bytes take 10 ms at 1 Mbit/s: of ten sent at once, the first three wait 0, 10 and
        // 20 ms; the fourth would wait 30, and so would every later one (a drop takes no time).
        let fates = (0..<10).map { _ in model.submit(size: 1_250, now: .zero) }
        #expect(fates.map(\.isDropped) == [false, false, false] + Array(repeating: true, count: 7))
        #expect(fates[2].deliveries.map(\.at) == [ConduitInstant.zero + Duration.milliseconds(30)])
        #expect(model.statistics.droppedAtBottleneck == 7 && model.statistics.dropped == 7)
        #expect(model.statistics.maxQueueDelay == .milliseconds(20))
        // Once the buffer drained, a datagram goes through again.
        #expect(!model.submit(size: 1_250, now: .zero + .milliseconds(30)).isDropped)
        #expect(model.statistics.queuedAtBottleneck == 4 && model.statistics.droppedAtBottleneck == 7)
        // Unset, the buffer never fills.
        var unbounded = ImpairmentModel(configuration: try ImpairmentConfiguration(options: ["rate": "1mbps"]))
        #expect((0..<10).allSatisfy { _ in !unbounded.submit(size: 1_250, now: .zero).isDropped })
        #expect(throws: ConduitError.self) { try ImpairmentConfiguration(options: ["queue-ms": "-1"]) }
    }

    /// Over `maxDatagramSize` is a counted drop; the draws for every other datagram stay the same.
    @Test func datagramsOverTheSizeLimitAreDroppedAndCounted() throws {
        var configuration = try ImpairmentConfiguration(options: ["loss": "0.1", "max-size": "1300"])
        #expect(configuration.maxDatagramSize == 1_300)
        #expect(!configuration.isTransparent)
        var limited = ImpairmentModel(configuration: configuration)
        configuration.maxDatagramSize = nil
        var unlimited = ImpairmentModel(configuration: configuration)
        var now = ConduitInstant.zero
        for index in 0..<1_000 {
            let size = index % 2 == 0 ? 1_300 : 1_301
            let fate = limited.submit(size: size, now: now)
            let reference = unlimited.submit(size: size, now: now)
            if size > 1_300 { #expect(fate.isDropped) } else { #expect(fate == reference) }
            now = now + .milliseconds(1)
        }
        // The same losses, plus the oversized datagrams the loss left.
        #expect(limited.statistics.dropped == unlimited.statistics.dropped + limited.statistics.droppedOverSize)
        #expect((400..<500).contains(limited.statistics.droppedOverSize))
        limited.maxDatagramSize = 100
        #expect(limited.submit(size: 101, now: now).isDropped)
        #expect(throws: ConduitError.self) { try ImpairmentConfiguration(options: ["max-size": "0"]) }
        #expect(throws: ConduitError.self) { try ImpairmentConfiguration(options: ["max-size": "big"]) }
    }
}

package import Conduit
@_spi(Benchmarks) import ConduitCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A figure measured over several runs: the median and the spread.
package struct BenchSpread: Sendable, Codable, Hashable {
    package var median: Double
    package var min: Double
    package var max: Double

    package init(median: Double, min: Double, max: Double) {
        self.median = median
        self.min = min
        self.max = max
    }

    /// The median (the mean of the middle two for an even count) and min–max of `values`; `nil`
    /// when there are none.
    package init?(_ values: [Double]) {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        median = sorted.count.isMultiple(of: 2) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle]
        min = sorted[0]
        max = sorted[sorted.count - 1]
    }
}

/// What `conduit bench` does: a matrix transport × session type × message size, each cell run
/// `runs` times in process (a ``ListenJob`` and a ``SendJob`` on one runtime, rate cap off,
/// every payload verified), reported as median and spread.
package struct BenchJob: Sendable {
    /// One cell of the matrix.
    package struct Cell: Sendable, Hashable {
        package var transport: String
        package var type: SessionType
        package var size: Int

        package init(transport: String, type: SessionType, size: Int) {
            self.transport = transport
            self.type = type
            self.size = size
        }
    }

    package struct Options: Sendable, Hashable {
        package var transports: [String]
        package var types: [SessionType]
        package var sizes: [Int]
        package var runs: Int
        /// Each run sends `max(50, countBytes / size)` messages.
        package var countBytes: Int
        /// Bounds each run (listen and send).
        package var timeout: Duration
        /// `--reference`: tsctp and the UDP blast measured in the same run (nil: not run).
        package var reference: BenchReferenceOptions? = nil
        /// One-way latency per cell at a fixed moderate rate, after its throughput runs.
        package var latency = BenchLatency.Options()

        package init(
            transports: [String] = ["udp://127.0.0.1:0"],
            types: [SessionType] = [.reliableMessage],
            sizes: [Int] = [1_024, 16_384, 65_536],
            runs: Int = 3,
            countBytes: Int = 256 * 1_048_576,
            timeout: Duration = .seconds(120)
        ) {
            self.transports = transports
            self.types = types
            self.sizes = sizes
            self.runs = runs
            self.countBytes = countBytes
            self.timeout = timeout
        }

        /// The cells in order: transports outermost, then types, then sizes.
        package var cells: [Cell] {
            transports.flatMap { transport in
                types.flatMap { type in sizes.map { Cell(transport: transport, type: type, size: $0) } }
            }
        }

        /// Messages per run for a message size.
        package func count(for size: Int) -> Int { Swift.max(50, countBytes / Swift.max(1, size)) }

        /// Refuses runs < 1, an empty matrix, sizes outside 1...the type's limit, bad URLs.
        package func validate() throws(ConduitError) {
            guard runs >= 1 else { throw ConduitError(.invalidConfiguration, "runs must be at least 1 (got \(runs))") }
            guard countBytes >= 1 else { throw ConduitError(.invalidConfiguration, "count-bytes must be positive (got \(countBytes))") }
            guard !transports.isEmpty, !types.isEmpty, !sizes.isEmpty else {
                throw ConduitError(.invalidConfiguration, "the matrix is empty (give at least one transport, type and size)")
            }
            for url in transports { _ = try TransportURL(parsing: url) }
            try reference?.validate()
            guard latency.messages >= 0, latency.messages <= 100_000, (1...100_000).contains(latency.rate) else {
                throw ConduitError(.invalidConfiguration, "latency messages must be 0...100000 and its rate 1...100000 per second (got \(latency.messages), \(latency.rate))")
            }
            for type in types {
                for size in sizes where size < 1 || size > type.maxSendSize {
                    throw ConduitError(.messageTooLarge, "size \(size) is outside 1...\(type.maxSendSize), the limit of one \(type) send")
                }
            }
        }
    }

    /// One run's figures.
    package struct Run: Sendable, Hashable {
        package var messages: Int
        package var bytes: Int
        package var elapsedSeconds: Double
        package var cpuSeconds: Double
        /// Payload bytes copied on the way out and in (`PayloadCopies`), over the bytes delivered.
        package var copiesPerMessageSend: Double = 0
        package var copiesPerMessageReceive: Double = 0
        package var megabytesPerSecond: Double { elapsedSeconds > 0 ? Double(bytes) / elapsedSeconds / 1e6 : 0 }
        package var messagesPerSecond: Double { elapsedSeconds > 0 ? Double(messages) / elapsedSeconds : 0 }
    }

    package var runtime: ConduitRuntime
    package var options: Options

    package init(runtime: ConduitRuntime, options: Options) {
        self.runtime = runtime
        self.options = options
    }

    /// Progress of one finished run: its number among all runs, the total, the cell, the run
    /// within the cell, and its figures.
    package typealias Progress = @Sendable (_ index: Int, _ total: Int, _ cell: Cell, _ run: Int, _ figures: Run) -> Void

    /// Runs every cell and returns their reports. Throws on bad options, or when a run cannot
    /// listen, connect, or does not deliver every message intact.
    package func run(progress: Progress = { _, _, _, _, _ in }) async throws(ConduitError) -> [BenchCellReport] {
        try options.validate()
        let cells = options.cells
        let total = cells.count * options.runs
        var reports: [BenchCellReport] = []
        var index = 0
        for cell in cells {
            var runs: [Run] = []
            for run in 1...options.runs {
                let figures = try await runOnce(cell)
                index += 1
                progress(index, total, cell, run, figures)
                runs.append(figures)
            }
            var report = BenchCellReport(cell: cell, runs: runs, peakResidentBytes: ResourceUsage.now().peakResidentBytes)
            let latency = try await BenchLatency(runtime: runtime, options: options.latency)
                .run(transport: cell.transport, type: cell.type, size: cell.size, timeout: options.timeout)
            report.latencyP50Micros = latency?.p50Micros
            report.latencyP99Micros = latency?.p99Micros
            report.latencySamples = latency?.samples
            report.bulkMegabytesPerSecondUnderLoad = latency?.bulkMegabytesPerSecond
            reports.append(report)
        }
        return reports
    }

    /// One run of one cell.
    package func runOnce(_ cell: Cell) async throws(ConduitError) -> Run {
        let count = options.count(for: cell.size)
        let listen = ListenJob(runtime: runtime, url: cell.transport, options: .init(expect: count, timeout: options.timeout, peer: "bench-listener"))
        let (urls, bound) = AsyncStream.makeStream(of: String.self)
        let listening = Task { () async throws(ConduitError) -> ListenReport in
            defer { bound.finish() }
            return try await listen.run(onListening: { bound.yield($0) })
        }
        func listened() async throws(ConduitError) -> ListenReport {
            switch await listening.result {
            case .success(let report): return report
            case .failure(let error as ConduitError): throw error
            case .failure(let error): throw ConduitError(.connectionFailed, "listening on \(cell.transport): \(error)")
            }
        }
        var iterator = urls.makeAsyncIterator()
        guard let url = await iterator.next() else {
            // The listener failed before it listened: its error says why.
            _ = try await listened()
            throw ConduitError(.connectionFailed, "the listener ended before it listened on \(cell.transport)")
        }
        let before = ResourceUsage.now()
        let copying = PayloadCopies.start()
        let send = SendJob(runtime: runtime, options: .init(
            url: url, streamID: 100, type: cell.type, count: count, sizes: cell.size...cell.size,
            rate: .unlimited, seed: 1, timeout: options.timeout, peer: "bench-sender"
        ))
        let sent: SendReport
        do throws(ConduitError) {
            sent = try await send.run()
        } catch {
            listening.cancel()
            _ = PayloadCopies.stop(copying)
            throw error
        }
        let received: ListenReport
        do throws(ConduitError) { received = try await listened() } catch {
            _ = PayloadCopies.stop(copying)
            throw error
        }
        let after = ResourceUsage.now()
        let copies = PayloadCopies.stop(copying)
        guard sent.sent == count, received.valid == count, received.corrupted == 0, received.missing == 0 else {
            throw ConduitError(
                received.ended == .timeout ? .timedOut : .connectionClosed,
                "\(cell.transport) \(cell.type) \(cell.size) B: sent \(sent.sent) of \(count), \(received.valid) arrived intact (\(received.corrupted) corrupted, \(received.missing) missing)"
            )
        }
        var run = Run(messages: received.valid, bytes: received.bytes, elapsedSeconds: received.elapsedSeconds, cpuSeconds: after.cpuSeconds - before.cpuSeconds)
        if received.bytes > 0 {
            run.copiesPerMessageSend = Double(copies.sendBytes) / Double(received.bytes)
            run.copiesPerMessageReceive = Double(copies.receiveBytes) / Double(received.bytes)
        }
        return run
    }
}

/// One cell of `conduit bench`'s report (`--json`: an element of `cells`).
package struct BenchCellReport: Sendable, Codable, Hashable {
    package var transport: String
    package var type: String
    package var size: Int
    package var runs: Int
    /// Messages per run.
    package var count: Int
    package var megabytesPerSecond: BenchSpread
    package var messagesPerSecond: BenchSpread
    /// User + system CPU time of the whole process during a run.
    package var cpuSeconds: BenchSpread
    /// The process's peak resident memory after the cell's last run.
    package var peakResidentBytes: Int
    /// How many times each message's payload was copied between the app and the socket, on the
    /// sending side and on the receiving side: payload bytes copied, counted where the code copies
    /// (`PayloadCopies`), over message bytes delivered; median over the runs. A copy below the
    /// call layer also copies its headers, so each such copy counts a little over 1.
    package var copiesPerMessageSend: Double
    package var copiesPerMessageReceive: Double
    /// One-way latency, send to delivery, at ``BenchLatency/Options/rate`` messages/s: median and
    /// 99th percentile in microseconds over ``latencySamples`` delivered messages.
    package var latencyP50Micros: Double?
    package var latencyP99Micros: Double?
    package var latencySamples: Int?
    /// With `--latency-under-load`: the bulk transfer's MB/s on the same call while the latency
    /// messages went (their session at high priority, the bulk's at low).
    package var bulkMegabytesPerSecondUnderLoad: Double?
    /// The median MB/s over usrsctp tsctp's at the same size (`--reference`).
    package var ratioToTsctp: Double?
    /// The median MB/s over the plain UDP blast's (`--reference`).
    package var ratioToBlast: Double?
    /// The median MB/s over kernel TCP's (iperf3 over 127.0.0.1, same byte count and write size; `--reference`).
    package var ratioToTCP: Double?

    package init(cell: BenchJob.Cell, runs: [BenchJob.Run], peakResidentBytes: Int) {
        transport = cell.transport
        type = cell.type.name
        size = cell.size
        self.runs = runs.count
        count = runs.first?.messages ?? 0
        megabytesPerSecond = BenchSpread(runs.map(\.megabytesPerSecond)) ?? BenchSpread(median: 0, min: 0, max: 0)
        messagesPerSecond = BenchSpread(runs.map(\.messagesPerSecond)) ?? BenchSpread(median: 0, min: 0, max: 0)
        cpuSeconds = BenchSpread(runs.map(\.cpuSeconds)) ?? BenchSpread(median: 0, min: 0, max: 0)
        self.peakResidentBytes = peakResidentBytes
        copiesPerMessageSend = BenchSpread(runs.map(\.copiesPerMessageSend))?.median ?? 0
        copiesPerMessageReceive = BenchSpread(runs.map(\.copiesPerMessageReceive))?.median ?? 0
    }
}

/// The process's CPU time and peak resident memory (`getrusage(RUSAGE_SELF)`).
package struct ResourceUsage: Sendable, Hashable {
    package var cpuSeconds: Double
    package var peakResidentBytes: Int

    #if canImport(Glibc)
    private static let rusageSelf = __rusage_who_t(RUSAGE_SELF.rawValue)
    #else
    private static let rusageSelf = RUSAGE_SELF
    #endif

    package static func now() -> ResourceUsage {
        var usage = rusage()
        guard getrusage(rusageSelf, &usage) == 0 else { return ResourceUsage(cpuSeconds: 0, peakResidentBytes: 0) }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) * 1e-6 }
        #if os(Linux)
        let peak = Int(usage.ru_maxrss) * 1_024  // KiB on Linux
        #else
        let peak = Int(usage.ru_maxrss)  // bytes on Darwin
        #endif
        return ResourceUsage(cpuSeconds: seconds(usage.ru_utime) + seconds(usage.ru_stime), peakResidentBytes: peak)
    }
}

extension BenchJob {
    /// The Conduit cells and, with ``Options/reference``, the references and each cell's ratios.
    package struct Report: Sendable, Codable, Hashable {
        package var cells: [BenchCellReport]
        package var references: [BenchReferenceReport]

        package init(cells: [BenchCellReport], references: [BenchReferenceReport] = []) {
            self.cells = cells
            self.references = references
        }
    }

    /// Progress of one reference run: its name, size, run number, runs, and MB/s.
    package typealias ReferenceProgress = @Sendable (_ name: String, _ size: Int, _ run: Int, _ runs: Int, _ megabytesPerSecond: Double) -> Void

    /// Runs the matrix (as ``run(progress:)``), then, with ``Options/reference``, `runs` runs of
    /// tsctp and of iperf3 (kernel TCP) at every size and of the UDP blast, and sets each cell's
    /// ``BenchCellReport/ratioToTsctp`` and ``BenchCellReport/ratioToTCP`` (median MB/s over the
    /// reference's median at the same size) and ``BenchCellReport/ratioToBlast``.
    package func runReport(
        progress: Progress = { _, _, _, _, _ in },
        referenceProgress: ReferenceProgress = { _, _, _, _, _ in }
    ) async throws(ConduitError) -> Report {
        var cells = try await run(progress: progress)
        guard let reference = options.reference else { return Report(cells: cells, references: []) }
        var references: [BenchReferenceReport] = []
        for size in options.sizes {
            var rates: [Double] = []
            for run in 1...options.runs {
                let rate = try await BenchReferenceRun.tsctp(size: size, options: reference)
                referenceProgress("tsctp", size, run, options.runs, rate)
                rates.append(rate)
            }
            references.append(BenchReferenceReport(name: "tsctp", size: size, megabytesPerSecond: rates))
        }
        for size in options.sizes {
            var rates: [Double] = []
            for run in 1...options.runs {
                let rate = try await BenchReferenceRun.iperf3(size: size, options: reference)
                referenceProgress("iperf3", size, run, options.runs, rate)
                rates.append(rate)
            }
            references.append(BenchReferenceReport(name: "iperf3", size: size, megabytesPerSecond: rates))
        }
        // The blast does not depend on the message size: measured once, compared with every cell.
        var blastRates: [Double] = []
        for run in 1...options.runs {
            let rate = try await BenchReferenceRun.blast(options: reference)
            referenceProgress("udp-blast", BenchReferenceRun.blastDatagramSize, run, options.runs, rate)
            blastRates.append(rate)
        }
        let blast = BenchReferenceReport(name: "udp-blast", size: BenchReferenceRun.blastDatagramSize, megabytesPerSecond: blastRates)
        references.append(blast)
        for index in cells.indices {
            let median = cells[index].megabytesPerSecond.median
            if let tsctp = references.first(where: { $0.name == "tsctp" && $0.size == cells[index].size }), tsctp.megabytesPerSecond.median > 0 {
                cells[index].ratioToTsctp = median / tsctp.megabytesPerSecond.median
            }
            if let tcp = references.first(where: { $0.name == "iperf3" && $0.size == cells[index].size }), tcp.megabytesPerSecond.median > 0 {
                cells[index].ratioToTCP = median / tcp.megabytesPerSecond.median
            }
            if blast.megabytesPerSecond.median > 0 {
                cells[index].ratioToBlast = median / blast.megabytesPerSecond.median
            }
        }
        return Report(cells: cells, references: references)
    }
}

import Conduit
import ConduitARQ
import ConduitCore
import ConduitNetworkTestSupport
import ConduitRelay
import ConduitRelayCore
import ConduitReliableTransport
import ConduitRooms
import ConduitTooling
import ConduitUDP
import Foundation
import Synchronization
import Testing

/// Issue 18's full-size abuse targets, behind CONDUIT_SOAK=1 (they take a minute and thousands of
/// links): 1,100 links that ping every 4 s but never join, then a member joins; a storm of join
/// attempts with bad tokens plus 200,000 junk datagrams while a member already in the room keeps
/// sending. The figures (join time, the storm's achieved rate and counters, RSS before and after,
/// the member's rate and p99 latency idle and under the storm) are printed. The storm comes from
/// `JoinStorm` (crafted datagrams from a pool of sockets, one thread, the junk from it too) at a
/// `conduit relay` child process, so the RSS is the relay's alone. Against an optimized relay the
/// storm's thread runs on CPU time nobody else wants (`SCHED_IDLE`): attackers' CPU is not the
/// relay host's, and on a 2-core machine a storm at normal priority raised the member's p99 as
/// much when aimed at another relay process as at this one. `CONDUIT_SOAK_RELAY` picks the relay's executable (an optimized build
/// for the p99 target).
@Suite("Relay abuse soak", .enabled(if: ProcessInfo.processInfo.environment["CONDUIT_SOAK"] == "1"), .timeLimit(.minutes(5)), .serialized)
struct RelayAbuseSoakTests {
    @Test("1,100 links that ping but never join, then a member joins")
    func elevenHundredPingers() async throws {
        let rig = try await RelayAbuseUDPTests.Rig.start()
        let pingers = try await rig.unjoinedLinks(1_100)
        let pinging = Task {
            while !Task.isCancelled {
                for link in pingers { try? await link.write(RelayAbuseUDPTests.batch(RoomControlFrame.ping.encoded)) }
                try? await Task.sleep(for: .seconds(4))
            }
        }
        let started = ContinuousClock.now
        let alice = try await rig.join("alice")
        let took = ContinuousClock.now - started
        let statistics = await rig.server.statistics
        print("abuse soak: 1,100 pinging links; a member joined in \(took); pendingEvicted \(statistics.pendingEvicted), joinDeadlinesMissed \(statistics.joinDeadlinesMissed)")
        #expect(statistics.joins == 1)
        // Opening 1,100 links takes seconds: the pingers that had waited their join timeout were
        // refused, and the table's overflow evicted the oldest of the others.
        #expect(statistics.pendingEvicted + statistics.joinDeadlinesMissed >= 1_100 + 1 - RelayConfiguration().maxPendingConnections)
        pinging.cancel()
        await alice.leave()
        await rig.stop(closing: pingers)
    }

    @Test("a join storm with bad tokens and 200,000 junk datagrams: RSS returns, a member keeps its rate and latency")
    func joinStorm() async throws {
        let transport = RelayAbuseUDPTests.transport()
        let runtime = ConduitRuntime(registry: TransportRegistry.defaults.registering(transport))
        // The relay in a process of its own when the conduit executable was built next to this
        // bundle, so the RSS figure is the relay's alone; else in this one (an upper bound).
        let child = try await Self.relayChild()
        let server = child == nil ? RelayServer(authority: RelayTokenAuthority(secret: RelayAbuseUDPTests.secret), registry: runtime.registry) : nil
        let url: TransportURL
        if let child { url = try TransportURL(parsing: child.url) } else { url = try await server!.listen(on: "udp://127.0.0.1:0") }
        let relayPID = child.map { "\($0.pid)" } ?? "self"
        // An optimized relay has a CPU to itself (`--threads 1` confines it to the first one this
        // process may use), and the members and the storm run on the others, as on a relay host
        // they would be elsewhere: co-located, the members' debug-build work and the relay's took
        // turns on the same cores, and the member's p99 measured both (1.8-2.2x idle here, against
        // 1.75x with the relay on its own core).
        let allowed = CPUAffinity.allowed() ?? []
        let relayHasACPU = child != nil && Self.relayIsOptimized && allowed.count >= 2 && CPUAffinity.confine(toCPUs: Array(allowed.dropFirst()))
        defer { if relayHasACPU { _ = CPUAffinity.confine(toCPUs: allowed) } }
        let alice = try await runtime.join(relay: url.description, room: "room", as: "alice", token: RelayAbuseUDPTests.token("alice"))
        let bob = try await runtime.join(relay: url.description, room: "room", as: "bob", token: RelayAbuseUDPTests.token("bob"))
        let bobLog = EventLog(bob)
        let probe = try await LatencyProbe.start(from: alice, to: bob, log: bobLog, residentOf: relayPID)
        // A short storm first, so the baseline is a relay that has refused a join before: the
        // code pages of those paths (file-backed; a debug build's are large) are resident then,
        // and what the figure compares is what the storm leaves behind.
        var warmUp = JoinStorm.Options(port: url.port!)
        warmUp.attemptsPerSecond = 200
        warmUp.duration = .seconds(1)
        _ = try await JoinStorm.run(warmUp)
        try await Task.sleep(for: .seconds(2))
        let baseline = Self.residentBytes(of: relayPID)
        let baselineAnonymous = Self.residentBytes(of: relayPID, field: "RssAnon")
        // Both windows as long as the storm: a p99 of 1,000 samples against one of 6,000 compared
        // two estimates of unequal reach into the tail (the idle one read 0.8-1.1 ms over 5 s).
        let window = Duration.seconds(30)
        let idle = try await probe.measure(for: window)

        var options = JoinStorm.Options(port: url.port!)
        options.attemptsPerSecond = 5_000
        options.duration = .seconds(30)
        options.junkDatagrams = 200_000
        // Against the relay as shipped (optimized) the storm yields the CPU, so what the member's
        // p99 measures is the relay; a debug relay takes most of the machine, and a storm that
        // yielded to it would fall far short of its rate (what the RSS target needs).
        options.yieldsCPU = Self.relayIsOptimized
        let storm = Task { try await Self.storm(options) }
        let loaded = try await probe.measure(for: window)
        let attempts = try await storm.value
        // Refused links close (each after its refusal is acknowledged, or 2 s without), join
        // deadlines pass, and the relay trims its heap 1, 5 and 15 s after links end.
        let stormEnded = ContinuousClock.now
        var after = Self.residentBytes(of: relayPID)
        while after - baseline > 16 * 1_048_576, ContinuousClock.now - stormEnded < .seconds(20) {
            try await Task.sleep(for: .seconds(1))
            after = Self.residentBytes(of: relayPID)
        }
        let settled = ContinuousClock.now - stormEnded
        let afterAnonymous = Self.residentBytes(of: relayPID, field: "RssAnon")
        let counters: String
        if let server { counters = "\(await server.statistics)" } else { counters = child!.output().split(separator: "\n").last { $0.contains("statistics") }.map(String.init) ?? "none logged" }
        print("""
            abuse soak: join storm \(attempts.summary)
            abuse soak: relay counters \(counters)
            abuse soak: RSS of \(child == nil ? "this process (relay in process)" : "conduit relay \(relayPID) (\(Self.relayIsOptimized ? "optimized" : "debug") build)") \(baseline / 1_048_576) MiB before, \(after / 1_048_576) MiB \(settled) after the storm (peak during the storm \(probe.peakResident / 1_048_576) MiB); anonymous (heap, stacks) \(baselineAnonymous / 1_048_576) MiB before, \(afterAnonymous / 1_048_576) MiB after
            abuse soak: member idle \(idle.rate) msg/s p99 \(idle.p99Milliseconds) ms; under the storm \(loaded.rate) msg/s p99 \(loaded.p99Milliseconds) ms (\(relayHasACPU ? "relay on CPU \(allowed[0]), members and storm on \(allowed.dropFirst().map(String.init).joined(separator: ","))" : "relay, members and storm on the same CPUs"))
            """)
        #expect(attempts.refused > 0, "no attempt of the storm was refused: it never reached the relay")
        // Issue 18's target: within 16 MiB of the baseline once the storm's links are gone.
        #expect(after - baseline <= 16 * 1_048_576, "RSS grew by \((after - baseline) / 1_048_576) MiB over the storm")
        #expect(loaded.rate * 2 >= idle.rate, "the member's rate fell from \(idle.rate) to \(loaded.rate) msg/s")
        // The p99 target holds for the relay as shipped, an optimized build: a debug relay spends
        // about ten times the CPU per attempt, cannot keep up with the storm, and its socket drops
        // the member's datagrams with the storm's (its figure is printed, not asserted). Asserted
        // only for the storm the issue names, too: on a machine busy with other work the storm's
        // thread (which yields the CPU to everyone) falls short of 5,000 attempts a second.
        if Self.relayIsOptimized, attempts.attemptsPerSecond >= 0.9 * Double(options.attemptsPerSecond) {
            #expect(loaded.p99Milliseconds <= 2 * idle.p99Milliseconds, "the member's p99 rose from \(idle.p99Milliseconds) to \(loaded.p99Milliseconds) ms")
        }
        await probe.stop()
        await alice.leave()
        await bob.leave()
        await server?.shutdown()
        child?.stop()
    }

    /// The `conduit` executable the relay runs from: `CONDUIT_SOAK_RELAY` (a release build, say:
    /// `swift build -c release --product conduit --enable-all-traits`), else the one built next to
    /// this test bundle (the debug build).
    static var relayExecutable: String {
        if let chosen = ProcessInfo.processInfo.environment["CONDUIT_SOAK_RELAY"], !chosen.isEmpty { return chosen }
        let bundle = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return URL(fileURLWithPath: bundle).deletingLastPathComponent().appendingPathComponent("conduit").path
    }

    /// Runs the storm in this process, or as `conduit bench --join-storm` from the executable
    /// `CONDUIT_SOAK_STORM` names: for a test bundle too slow to storm itself, such as one built
    /// under AddressSanitizer (there the storm in process reached about 940 attempts a second, a
    /// fifth of the 5,000 this target asks for). The command line carries the options this suite
    /// sets; the room, token and answer timeout keep `JoinStorm.Options`' defaults on both paths.
    static func storm(_ options: JoinStorm.Options) async throws -> JoinStorm.Report {
        guard let executable = ProcessInfo.processInfo.environment["CONDUIT_SOAK_STORM"], !executable.isEmpty else {
            return try await JoinStorm.run(options)
        }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-abuse-storm-\(getpid()).json")
        defer { try? FileManager.default.removeItem(at: output) }
        try #require(FileManager.default.createFile(atPath: output.path, contents: nil), "cannot create \(output.path)")
        let seconds = Double(options.duration.components.seconds) + Double(options.duration.components.attoseconds) / 1e18
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "bench", "--join-storm", "udp://\(options.host):\(options.port)", "--storm-rate", "\(options.attemptsPerSecond)",
            "--storm-seconds", "\(seconds)", "--storm-junk", "\(options.junkDatagrams)", "--storm-sockets", "\(options.sockets)", "--json",
        ] + (options.yieldsCPU ? ["--storm-yields-cpu"] : [])
        let handle = try FileHandle(forWritingTo: output)
        defer { try? handle.close() }
        process.standardOutput = handle
        try process.run()
        let status = await process.exitStatus()
        let text = try String(contentsOf: output, encoding: .utf8)
        try #require(status == 0, "\(executable) bench --join-storm exited with \(status): \(text)")
        let line = try #require(text.split(separator: "\n").last, "\(executable) bench --join-storm printed no report")
        return try JSONDecoder().decode(JoinStorm.Report.self, from: Data(line.utf8))
    }

    /// Whether the relay runs from an optimized build (SwiftPM's release products sit in a
    /// `release` directory).
    static var relayIsOptimized: Bool { relayExecutable.split(separator: "/").contains("release") }

    /// `conduit relay` on udp://127.0.0.1:0 with this suite's secret, its listener letting one
    /// address (the storm's 127.0.0.1) hold many links, as `RelayAbuseUDPTests.transport()` does;
    /// nil when there is no such executable.
    static func relayChild() async throws -> RelayChild? {
        let executable = relayExecutable
        guard FileManager.default.isExecutableFile(atPath: executable) else { return nil }
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("conduit-abuse-soak-\(getpid()).secret").path
        guard FileManager.default.createFile(atPath: secretFile, contents: Data(RelayAbuseUDPTests.secretBytes), attributes: [.posixPermissions: 0o600]) else { return nil }
        defer { try? FileManager.default.removeItem(atPath: secretFile) }
        return try await RelayChild(executable: executable, arguments: [
            "udp://127.0.0.1:0", "--secret-file", secretFile, "--max-links-per-address", "4096", "--handshakes-per-address", "100000",
            "--stats-interval", "1", "--log-level", "info",
        ] + (relayIsOptimized ? ["--threads", "1"] : []))
    }

    /// A process's resident set (or another field of /proc/PID/status in kB, `RssAnon` say), "self": this one.
    static func residentBytes(of pid: String = "self", field: String = "VmRSS") -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("\(field):") })
        else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1_024
    }
}

/// A member sending 200 timestamped messages a second to another through the relay; measures what
/// arrives per window (rate, p99 one-way latency) and samples the relay process's RSS.
final class LatencyProbe: Sendable {
    struct Window: Sendable { var rate: Int; var p99Milliseconds: Double }

    /// What the probe's tasks record.
    final class Counters: Sendable {
        let state = TSanVisibleMutex<(latencies: [Double], received: Int, peak: Int)>(([], 0, 0))
    }

    private let sender: Task<Void, Never>
    private let receiver: Task<Void, Never>
    private let counters: Counters

    var peakResident: Int { counters.state.withLock { $0.peak } }

    private init(sender: Task<Void, Never>, receiver: Task<Void, Never>, counters: Counters) {
        self.sender = sender
        self.receiver = receiver
        self.counters = counters
    }

    static func start(from alice: Conference, to bob: Conference, log: EventLog, residentOf pid: String) async throws -> LatencyProbe {
        let outbound = try await alice.makeOutboundDataSession(streamID: 100, type: .reliableMessage)
        try await log.wait(for: "incoming", limit: .seconds(30)) { if case .dataSessionIncoming(100, _, .reliableMessage, _) = $0 { true } else { false } }
        let inbound = try await bob.makeInboundDataSession(streamID: 100, expecting: .reliableMessage)
        let counters = Counters()
        let sender = Task {
            var next = ContinuousClock.now
            var sequence = 0
            while !Task.isCancelled {
                next = next + .milliseconds(5)
                let stamp = DispatchTime.now().uptimeNanoseconds
                try? await outbound.send(withUnsafeBytes(of: stamp.bigEndian, Array.init) + Array(repeating: 0, count: 200))
                sequence += 1
                // The RSS once a second, for the peak.
                let resident = sequence % 200 == 0 ? RelayAbuseSoakTests.residentBytes(of: pid) : 0
                counters.state.withLock { $0.peak = max($0.peak, resident) }
                try? await Task.sleep(until: next)
            }
        }
        let receiver = Task {
            for await event in inbound.events {
                guard case .message(let message) = event, message.bytes.count >= 8 else { continue }
                let stamp = message.bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                let latency = Double(DispatchTime.now().uptimeNanoseconds - stamp) / 1e6
                counters.state.withLock { $0.latencies.append(latency); $0.received += 1 }
            }
        }
        return LatencyProbe(sender: sender, receiver: receiver, counters: counters)
    }

    /// Clears the counters, waits `duration`, and returns what arrived meanwhile.
    func measure(for duration: Duration) async throws -> Window {
        counters.state.withLock { $0.latencies.removeAll(); $0.received = 0 }
        try await Task.sleep(for: duration)
        return counters.state.withLock { value in
            let sorted = value.latencies.sorted()
            let p99 = sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
            return Window(rate: value.received / Int(duration.components.seconds), p99Milliseconds: (p99 * 100).rounded() / 100)
        }
    }

    func stop() async {
        sender.cancel()
        receiver.cancel()
    }
}

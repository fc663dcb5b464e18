package import Conduit
import ConduitCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin  // no /proc there: ProcessCPU says so with a typed error
#endif

/// `conduit bench --room`: a group room through real relay processes. N senders and M receivers
/// (all in this process, on one clock) join one room on a `conduit relay` child (or on R of them
/// clustered through a `nats-server`, members spread over them in turn); each sender sends
/// its messages (reliable, rate cap off unless a rate is given) to everyone; every receiver checks
/// that each sender's messages arrive exactly once and in order, and times each delivery from the
/// instant its sender sent it. The relay's CPU time comes from its /proc entry, read after the
/// joins and after the last delivery, so it covers forwarding only.
package struct BenchRoom: Sendable {
    package struct Options: Sendable {
        package var senders = 1
        package var receivers = 10
        /// Messages per sender.
        package var messages = 2_000
        package var size = 1_024
        /// Messages per second per sender; 0 sends as fast as the room takes them.
        package var rate = 0
        /// The relay's listening URL (port 0: it picks one).
        package var transport = "udp://127.0.0.1:0"
        /// The `conduit` executable to run `conduit relay` from, and its secret file.
        package var relayExecutable: String
        package var secretFile: String
        /// More arguments for `conduit relay`.
        package var relayArguments: [String] = []
        /// Relays; more than one run as a cluster through a `nats-server` the bench starts, the
        /// members spread over them in turn.
        package var relays = 1
        package var natsServer = "/usr/sbin/nats-server"
        package var timeout = Duration.seconds(120)
        /// Signs a token for a peer of the bench's room (the relay's secret).
        package var token: @Sendable (RoomID, PeerID) -> String

        package init(relayExecutable: String, secretFile: String, token: @escaping @Sendable (RoomID, PeerID) -> String) {
            self.relayExecutable = relayExecutable
            self.secretFile = secretFile
            self.token = token
        }

        func validate() throws(ConduitError) {
            guard (1...64).contains(senders), (1...256).contains(receivers), senders + receivers <= 256 else {
                throw ConduitError(.invalidConfiguration, "--senders must be 1...64, --receivers 1...256, together at most 256 (a room's default size)")
            }
            guard (1...8).contains(relays), relays <= receivers + senders else {
                throw ConduitError(.invalidConfiguration, "--relays must be 1...8 and at most the number of members")
            }
            guard messages >= 1, (BenchRoomTally.headerSize...SessionType.reliableMessage.maxSendSize).contains(size), rate >= 0 else {
                throw ConduitError(.invalidConfiguration, "--messages must be positive, --size \(BenchRoomTally.headerSize)...\(SessionType.reliableMessage.maxSendSize), --room-rate not negative")
            }
        }
    }

    /// What one room run measured (`--json`: the last line).
    package struct Report: Sendable, Codable, Hashable {
        package var senders: Int
        package var receivers: Int
        package var messagesPerSender: Int
        package var size: Int
        /// Deliveries expected: senders × messages × receivers.
        package var expected: Int
        package var delivered = 0
        package var duplicates = 0
        package var outOfOrder = 0
        package var missing = 0
        /// From the first send to the last delivery.
        package var elapsedSeconds = 0.0
        /// Messages and payload bytes the relay forwarded per second (deliveries to receivers).
        package var forwardedMessagesPerSecond = 0.0
        package var forwardedBytesPerSecond = 0.0
        package var latencyP50Micros = 0.0
        package var latencyP99Micros = 0.0
        /// The relay process's user plus system CPU over the forwarding, and per forwarded message.
        package var relayCPUSeconds = 0.0
        package var relayCPUMicrosPerMessage = 0.0
        /// Per relay: the messages it delivered to its own receivers per second, and its CPU seconds.
        package var perRelay: [RelayFigures] = []
        package var ended = ""

        package init(senders: Int, receivers: Int, messagesPerSender: Int, size: Int, expected: Int) {
            self.senders = senders
            self.receivers = receivers
            self.messagesPerSender = messagesPerSender
            self.size = size
            self.expected = expected
        }
    }

    /// One relay's share of a room run.
    package struct RelayFigures: Sendable, Codable, Hashable {
        package var forwardedMessagesPerSecond: Double
        package var cpuSeconds: Double
    }

    package let runtime: ConduitRuntime
    package let options: Options

    package init(runtime: ConduitRuntime, options: Options) {
        self.runtime = runtime
        self.options = options
    }

    static let room: RoomID = "bench-room"
    static let stream: StreamID = 100

    /// Runs the room once. Throws when the relay does not start or a member cannot join; a run
    /// that lost or reordered reliable messages returns a report saying so (`isComplete` false).
    package func run() async throws(ConduitError) -> Report {
        try options.validate()
        let deadline = ContinuousClock.now + options.timeout
        let processes = try await BenchRoomRelays(options: options, until: deadline)
        defer { processes.stop() }
        let urls = processes.urls
        var report = Report(senders: options.senders, receivers: options.receivers, messagesPerSender: options.messages, size: options.size,
                            expected: options.senders * options.messages * options.receivers)
        let tally = BenchRoomTally(senders: options.senders, expectedPerReceiver: options.senders * options.messages, receivers: options.receivers)
        var members: [Conference] = []
        var readers: [Task<Void, Never>] = []
        defer { for reader in readers { reader.cancel() } }
        do throws(ConduitError) {
            for index in 0..<options.receivers {
                let conference = try await join("receiver-\(index)", url: urls[index % urls.count])
                members.append(conference)
                readers.append(Task { await Self.receive(conference, receiver: index, tally: tally) })
            }
            var senders: [Conference] = []
            for index in 0..<options.senders {
                let conference = try await join("sender-\(index)", url: urls[(options.receivers + index) % urls.count])
                senders.append(conference)
                members.append(conference)
                // A sender gets the other senders' messages too; one that never took them would
                // be isolated by the relay as a slow receiver (about a second into a 4 → 20 room).
                readers.append(Task { await Self.receive(conference, receiver: nil, tally: tally) })
            }
            let before = try processes.cpuSeconds()
            let origin = ContinuousClock.now
            tally.start(origin: origin)
            do {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (index, conference) in senders.enumerated() {
                        group.addTask { try await self.send(from: conference, index: index, origin: origin, until: deadline) }
                    }
                    try await group.waitForAll()
                }
            } catch {
                throw (error as? ConduitError) ?? ConduitError(.connectionFailed, "a sender failed: \(error)")
            }
            // Every sender's close returned: the relay has all of it, so what is still on its way
            // arrives soon or not at all.
            report.ended = await tally.waitForAll(until: min(deadline, .now + .seconds(10))) ? "complete" : "timeout"
            let cpu = zip(try processes.cpuSeconds(), before).map { $0 - $1 }
            tally.fill(&report)
            report.relayCPUSeconds = cpu.reduce(0, +)
            report.relayCPUMicrosPerMessage = report.delivered > 0 ? report.relayCPUSeconds * 1e6 / Double(report.delivered) : 0
            let delivered = tally.deliveredPerReceiver()
            report.perRelay = cpu.indices.map { relay in
                let mine = delivered.indices.filter { $0 % urls.count == relay }.reduce(0) { $0 + delivered[$1] }
                return RelayFigures(forwardedMessagesPerSecond: report.elapsedSeconds > 0 ? Double(mine) / report.elapsedSeconds : 0, cpuSeconds: cpu[relay])
            }
        } catch {
            for member in members { try? await member.leave(timeout: .zero) }
            throw error
        }
        for member in members { try? await member.leave(timeout: .seconds(2)) }
        return report
    }

    private func join(_ name: String, url: String) async throws(ConduitError) -> Conference {
        let peer = try PeerID(name)
        return try await runtime.join(relay: url, room: Self.room, as: peer, token: options.token(Self.room, peer))
    }

    /// Waits until everyone is in the room, sends this sender's messages, then closes the session
    /// so that the relay has acknowledged every one of them (else throws, naming how many).
    private func send(from conference: Conference, index: Int, origin: ContinuousClock.Instant, until deadline: ContinuousClock.Instant) async throws(ConduitError) {
        while await conference.peers.count < options.senders + options.receivers - 1 {
            guard ContinuousClock.now < deadline, !(await conference.isEnded) else {
                throw ConduitError(.timedOut, "the room did not fill: \(await conference.peers.count + 1) of \(options.senders + options.receivers) members")
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        let session = try await conference.makeOutboundDataSession(streamID: Self.stream, type: .reliableMessage)
        let interval = options.rate > 0 ? Duration.nanoseconds(1_000_000_000 / Int64(options.rate)) : nil
        let start = ContinuousClock.now
        var payload = [UInt8](repeating: UInt8(truncatingIfNeeded: index &* 37), count: options.size)
        for seq in 0..<options.messages {
            if let interval { try? await Task.sleep(until: start + interval * seq, clock: .continuous) }
            BenchRoomTally.stamp(&payload, sender: index, seq: seq)
            try await session.send(payload, timestamp: UInt64(origin.duration(to: .now).benchNanoseconds))
        }
        try await session.close(timeout: max(ContinuousClock.now.duration(to: deadline), .zero))
    }

    /// Accepts every sender's session and tallies what arrives for `receiver` (a sender's own
    /// reads, `nil`, are taken and not counted), until the conference ends.
    private static func receive(_ conference: Conference, receiver: Int?, tally: BenchRoomTally) async {
        await withTaskGroup(of: Void.self) { group in
            for await event in conference.events {
                if case .disconnected = event { break }
                guard case .dataSessionIncoming(let streamID, let subgroup, _, _) = event,
                    let inbound = try? await conference.makeInboundDataSession(streamID: streamID, subgroup: subgroup)
                else { continue }
                group.addTask {
                    for await event in inbound.events {
                        if case .message(let message) = event, let receiver { tally.add(message.bytes, timestamp: message.timestamp, receiver: receiver) }
                    }
                }
            }
            group.cancelAll()
        }
    }
}

extension BenchRoom.Report {
    /// Every reliable message arrived at every receiver, exactly once and in order.
    package var isComplete: Bool { missing == 0 && duplicates == 0 && outOfOrder == 0 && delivered == expected }
}

/// A process's user plus system CPU seconds, from /proc/PID/stat (fields 14 and 15, in clock ticks).
enum ProcessCPU {
    static func seconds(of pid: pid_t) throws(ConduitError) -> Double {
        guard let file = fopen("/proc/\(pid)/stat", "r") else {
            throw ConduitError(.invalidConfiguration, "cannot read /proc/\(pid)/stat: the relay's CPU time is unknown")
        }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 1_024)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else {
            throw ConduitError(.invalidConfiguration, "/proc/\(pid)/stat is empty")
        }
        let line = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
        guard let close = line.lastIndex(of: ")") else { throw ConduitError(.invalidConfiguration, "/proc/\(pid)/stat: no command field") }
        let fields = line[line.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else {
            throw ConduitError(.invalidConfiguration, "/proc/\(pid)/stat: no CPU fields")
        }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

extension Duration {
    var benchNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

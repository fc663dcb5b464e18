package import ConduitCore
import ConduitLoopback
import ConduitRelay
import ConduitRelayCore
import ConduitRooms

/// `conduit bench --room --in-process`: a measurement in which the relay is the bottleneck.
///
/// `conduit bench --room` runs full `Conference` members (session layers, reliability engines
/// over UDP) beside a `conduit relay` process; on a 2-core machine they cost as much CPU per
/// forwarded message as the relay, so the relay's threads cannot show. Here:
///
/// - the relay is a ``RelayShardGroup`` of N shards, the code `conduit relay --threads N` runs,
///   in this process, listening on the loopback transport (reliable and ordered, so no
///   reliability engine on either side); its one listener hands links to the shards in turn,
///   so the room spans the shards and frames cross between them through the in-process bus;
/// - the members are synthetic (``SyntheticRoomMember``): each joins over its own loopback link
///   with a token signed by the bench's secret and checked by the relay's token authority;
///   senders (publish right only) write frames encoded before the clock starts, in batches;
///   receivers (subscribe right only) read the relay's batches and peek at each frame's envelope
///   and header in place, checking per sender exactly once and in order.
///
/// The same room runs with each thread count in turn (1, 2, 1, 2, …), so load from outside
/// affects both alike; each run is a fresh relay and a fresh room. Forwarded messages/s counts
/// deliveries to receivers; the CPU figure is this whole process's (relay and members).
package struct BenchShardedRoom: Sendable {
    package struct Options: Sendable {
        package var senders = 1
        package var receivers = 50
        /// Messages per sender.
        package var messages = 20_000
        package var size = 1_024
        /// Relay shard counts, run in turn `runs` times each.
        package var threads = [1, 2]
        package var runs = 3
        /// Frames per write of a sender (a real relay reads up to 64 datagrams per system call).
        package var framesPerWrite = 64
        /// Bytes each sender may have in flight to its slowest receiver (see ``SyntheticRoomProgress``);
        /// the sum over the senders stays under the relay's hard cap per receiver (8 MiB).
        package var windowBytesPerReceiver = 2 * 1_048_576
        package var timeout = Duration.seconds(120)

        package init() {}

        func validate() throws(ConduitError) {
            guard (1...64).contains(senders), (1...256).contains(receivers), senders + receivers <= 256 else {
                throw ConduitError(.invalidConfiguration, "--senders must be 1...64, --receivers 1...256, together at most 256 (a room's default size)")
            }
            let fragment = SyntheticRoomFrames.fragmentSize(mtu: LoopbackTransport.defaultMTU)
            guard messages >= 1, (1...fragment).contains(size) else {
                throw ConduitError(.invalidConfiguration, "--messages must be positive and --size 1...\(fragment) in process (one fragment per message)")
            }
            guard !threads.isEmpty, threads.allSatisfy({ (1...64).contains($0) }), (1...100).contains(runs) else {
                throw ConduitError(.invalidConfiguration, "--relay-threads values must be 1...64 and --runs 1...100")
            }
            guard senders * messages * size <= 1 << 30 else {
                throw ConduitError(.invalidConfiguration, "senders × messages × size must stay within 1 GiB: the frames are encoded before the clock starts")
            }
        }
    }

    package let options: Options

    package init(options: Options) { self.options = options }

    static let room: RoomID = "bench-room"

    /// Runs every thread count `runs` times, alternating; `progress` hears of each run as it ends.
    package func run(progress: @Sendable (BenchShardedRoomReport.Run) -> Void = { _ in }) async throws(ConduitError) -> BenchShardedRoomReport {
        try options.validate()
        var report = BenchShardedRoomReport(senders: options.senders, receivers: options.receivers, messagesPerSender: options.messages, size: options.size)
        // The senders' frames are the same for every run: encoded once, before any clock starts.
        let frames = (0..<options.senders).map { sender in
            SyntheticRoomFrames.dataBatches(messages: options.messages, size: options.size, perBatch: options.framesPerWrite,
                                            mtu: LoopbackTransport.defaultMTU, fill: UInt8(truncatingIfNeeded: sender &* 37 &+ 1))
        }
        for round in 0..<options.runs {
            for threads in options.threads {
                let run = try await runOnce(threads: threads, frames: frames, name: "conduit-bench-room-\(round)-\(threads)")
                report.runs.append(run)
                progress(run)
            }
        }
        report.summarize(threads: options.threads)
        return report
    }

    /// One room on a fresh relay of `threads` shards.
    private func runOnce(threads: Int, frames: [[DatagramBatch]], name: String) async throws(ConduitError) -> BenchShardedRoomReport.Run {
        let deadline = ContinuousClock.now + options.timeout
        let secret = try RelaySecret(bytes: (0..<32).map { _ in UInt8.random(in: 0...255) })
        let transport = LoopbackTransport(hub: LoopbackHub())
        let group = RelayShardGroup(threads: threads, authority: RelayTokenAuthority(secret: secret), registry: TransportRegistry([transport]))
        var members: [SyntheticRoomMember] = []
        do throws(ConduitError) {
            let url = try await group.listen(on: "loopback://\(name)")
            let roomProgress = SyntheticRoomProgress(senders: options.senders, receivers: options.receivers)
            // Receivers first, then senders, one at a time: links go to the shards in the order
            // they are accepted, so members alternate between shards and so do the senders.
            for index in 0..<(options.receivers + options.senders) {
                let isReceiver = index < options.receivers
                let peer = try PeerID(isReceiver ? "receiver-\(index)" : SyntheticRoomReader.senderPrefix + "\(index - options.receivers)")
                let token = RelayToken(room: Self.room, peer: peer, canPublish: !isReceiver, canSubscribe: isReceiver,
                                       expiresAt: RelayServer.unixTime() + 600).signed(with: secret)
                members.append(try await SyntheticRoomMember.join(
                    url, on: transport, room: Self.room, as: peer, token: token, receiver: isReceiver ? index : nil,
                    progress: roomProgress, senders: options.senders, size: options.size, until: deadline))
            }
            try await Self.waitUntilEveryoneKnown(members, until: deadline)
            let run = try await forward(frames, members: members, progress: roomProgress, threads: threads, group: group, until: deadline)
            await Self.end(members, group)
            return run
        } catch {
            await Self.end(members, group)
            throw error
        }
    }

    /// Every member has heard of every other (a sender must know its room before it sends, as a
    /// conference waits for its peers; a receiver learns which member number is which sender).
    private static func waitUntilEveryoneKnown(_ members: [SyntheticRoomMember], until deadline: ContinuousClock.Instant) async throws(ConduitError) {
        for member in members {
            while member.status.othersKnown < members.count - 1 {
                if let ended = member.status.ended { throw ConduitError(.connectionFailed, "\(member.peer) left the room while it filled: \(ended)") }
                guard ContinuousClock.now < deadline else {
                    throw ConduitError(.timedOut, "the room did not fill: \(member.peer) knows \(member.status.othersKnown) of \(members.count - 1) others")
                }
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
    }

    /// The measured part: the senders write everything, the receivers check everything.
    private func forward(
        _ frames: [[DatagramBatch]], members: [SyntheticRoomMember], progress: SyntheticRoomProgress, threads: Int, group: RelayShardGroup,
        until deadline: ContinuousClock.Instant
    ) async throws(ConduitError) -> BenchShardedRoomReport.Run {
        var run = BenchShardedRoomReport.Run(threads: threads, expected: options.senders * options.messages * options.receivers)
        let receivers = members.prefix(options.receivers)
        let senders = Array(members.dropFirst(options.receivers))
        let window = max(options.framesPerWrite * 2, options.windowBytesPerReceiver / max(1, options.size) / options.senders)
        let statisticsBefore = await group.statistics
        let cpuBefore = ResourceUsage.now().cpuSeconds
        let start = ContinuousClock.now
        let sending = Task { () -> String? in
            await withTaskGroup(of: String?.self) { group in
                for (index, sender) in senders.enumerated() {
                    group.addTask {
                        do throws(ConduitError) {
                            try await sender.send(frames[index], closing: SyntheticRoomFrames.closingBatch(), sender: index, progress: progress, window: window, until: deadline)
                            return nil
                        } catch { return "\(sender.peer): \(error.message)" }
                    }
                }
                return await group.first { $0 != nil } ?? nil
            }
        }
        // Whatever happens, the readers end by the deadline: their links close under them.
        let watchdog = Task {
            guard (try? await Task.sleep(until: deadline)) != nil else { return }
            progress.release()
            for member in members { await member.close() }
        }
        var tallies: [SyntheticRoomReader.Tally] = []
        for receiver in receivers { tallies.append(await receiver.reader.value) }
        let cpuAfter = ResourceUsage.now().cpuSeconds
        watchdog.cancel()
        let sendFailure = await sending.value
        let statisticsAfter = await group.statistics

        for tally in tallies {
            run.delivered += tally.delivered
            run.duplicates += tally.duplicates
            run.outOfOrder += tally.outOfOrder
            run.malformed += tally.malformed + tally.unknownSender
        }
        run.missing = max(0, run.expected - run.delivered)
        let last = tallies.compactMap(\.lastDelivery).max() ?? start
        run.elapsedSeconds = Double(start.duration(to: last).benchNanoseconds) / 1e9
        if run.elapsedSeconds > 0 {
            run.forwardedMessagesPerSecond = Double(run.delivered) / run.elapsedSeconds
            run.forwardedBytesPerSecond = Double(run.delivered * options.size) / run.elapsedSeconds
        }
        run.cpuSeconds = cpuAfter - cpuBefore
        run.cpuMicrosPerForwardedMessage = run.delivered > 0 ? run.cpuSeconds * 1e6 / Double(run.delivered) : 0
        run.crossShardFrames = statisticsAfter.cluster.framesForwarded - statisticsBefore.cluster.framesForwarded
        run.crossShardLost = statisticsAfter.cluster.messagesLost - statisticsBefore.cluster.messagesLost
        for shard in group.shards { run.crossShardLost += await shard.clusterMessagesDroppedOnArrival }
        run.sendersPaused = statisticsAfter.sendersPaused - statisticsBefore.sendersPaused
        let incomplete = tallies.first { $0.ended != "complete" }?.ended
        run.ended = sendFailure ?? incomplete.map { "a receiver ended early: \($0)" } ?? "complete"
        return run
    }

    /// Members leave (their links close), then the relay shuts down.
    private static func end(_ members: [SyntheticRoomMember], _ group: RelayShardGroup) async {
        for member in members { await member.close() }
        for member in members { _ = await member.reader.value }
        await group.shutdown()
    }
}

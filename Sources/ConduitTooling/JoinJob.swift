package import Conduit
import ConduitCore

/// `conduit join`: join a room through a relay, then send seeded messages (to everyone, one peer
/// or a subgroup), receive and verify what others send, or both. A library so tests run it in process.
package struct JoinJob: Sendable {
    package struct Options: Sendable {
        package var relay: String
        package var room: RoomID
        package var peer: PeerID
        package var token: String
        package var subgroup: SubgroupName?
        /// Sending: stream, type, count, sizes, seed; `to` nil means everyone in scope.
        package var send: (streamID: StreamID, type: SessionType, count: Int, sizes: ClosedRange<Int>, seed: UInt32)?
        package var to: PeerID?
        /// Before sending, wait until this many other peers are in the room (or `to` is).
        package var waitForPeers: Int
        /// Receiving: stop after this many valid messages (nil: receive until the timeout).
        package var expect: Int?
        package var timeout: Duration

        package init(relay: String, room: RoomID, peer: PeerID, token: String, subgroup: SubgroupName? = nil,
                    send: (streamID: StreamID, type: SessionType, count: Int, sizes: ClosedRange<Int>, seed: UInt32)? = nil,
                    to: PeerID? = nil, waitForPeers: Int = 1, expect: Int? = nil, timeout: Duration = .seconds(30)) {
            self.relay = relay
            self.room = room
            self.peer = peer
            self.token = token
            self.subgroup = subgroup
            self.send = send
            self.to = to
            self.waitForPeers = waitForPeers
            self.expect = expect
            self.timeout = timeout
        }
    }

    /// What `conduit join --json` prints (its last line).
    package struct Report: Sendable, Codable, Hashable {
        package var room: String
        package var peer: String
        package var peers: [String]
        package var sent = 0
        package var sentBytes = 0
        package var received = 0
        package var valid = 0
        package var bytes = 0
        package var duplicates = 0
        package var outOfOrder = 0
        package var corrupted = 0
        package var missing = 0
        /// Valid messages per sender, as the relay stamped them.
        package var bySender: [String: Int] = [:]
        package var elapsedSeconds = 0.0
        package var throughputBytesPerSecond = 0.0
        package var ended = ""
    }

    package let runtime: ConduitRuntime
    package let options: Options

    package init(runtime: ConduitRuntime, options: Options) {
        self.runtime = runtime
        self.options = options
    }

    final class Tally: Sendable {
        struct State {
            var verifiers: [PeerID: PayloadVerifier] = [:]
            var total = PayloadVerifier.Counts()
        }

        let state = TSanVisibleMutex(State())

        /// Returns the number of valid messages so far.
        func add(_ message: InboundDataSession.Message) -> Int {
            state.withLock { state in
                let sender = message.sender ?? "?"
                var verifier = state.verifiers[sender] ?? PayloadVerifier()
                switch verifier.classify(message.bytes, timestamp: message.timestamp) {
                case .ok: state.total.ok += 1
                case .outOfOrder: state.total.outOfOrder += 1
                case .duplicate: state.total.duplicates += 1
                case .corrupted: state.total.corrupted += 1
                }
                state.total.received += 1
                state.total.bytes += message.bytes.count
                state.verifiers[sender] = verifier
                return state.total.valid
            }
        }
    }

    /// Runs the job; `progress` gets one-line updates (joined, sending, ...).
    package func run(progress: @escaping @Sendable (String) -> Void = { _ in }) async throws(ConduitError) -> Report {
        let clock = ContinuousClock()
        let start = clock.now
        let conference = try await runtime.join(relay: options.relay, room: options.room, as: options.peer, token: options.token)
        progress("joined \(options.room) as \(options.peer) via \(options.relay); peers: \(await conference.peers.map(\.rawValue).joined(separator: ", "))")
        if let subgroup = options.subgroup {
            guard await conference.subscribe(subgroup, dataSession: true) else {
                await conference.leave()
                throw ConduitError(.connectionFailed, "the relay refused the subscription to subgroup \(subgroup)")
            }
        }
        let tally = Tally()
        let deadline = start + options.timeout
        var report = Report(room: options.room.rawValue, peer: options.peer.rawValue, peers: [])

        // Receive: accept every incoming session in scope, verify per sender. The first of
        // "expected", "timeout" or "disconnected" on `done` ends the receiving.
        let (done, doneSink) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingOldest(4))
        let readers = TSanVisibleMutex<[Task<Void, Never>]>([])
        var helpers: [Task<Void, Never>] = []
        if let expect = options.expect {
            let events = conference.events
            let subgroup = options.subgroup
            helpers.append(Task {
                for await event in events {
                    if case .disconnected(let reason, _) = event { doneSink.yield("disconnected (\(reason))") }
                    guard case .dataSessionIncoming(let streamID, let sub, _, _) = event, sub == subgroup,
                        let inbound = try? await conference.makeInboundDataSession(streamID: streamID, subgroup: sub)
                    else { continue }
                    let reader = Task {
                        for await event in inbound.events {
                            if case .message(let message) = event, tally.add(message) >= expect { doneSink.yield("expected") }
                        }
                    }
                    readers.withLock { $0.append(reader) }
                }
            })
            helpers.append(Task {
                try? await Task.sleep(until: deadline, clock: clock)
                doneSink.yield("timeout")
            })
        }

        if let send = options.send {
            try await waitForPeers(conference, until: deadline, clock: clock)
            let session = try await conference.makeOutboundDataSession(streamID: send.streamID, type: send.type, subgroup: options.subgroup)
            if let to = options.to, await session.changeDestination(to) == false {
                throw ConduitError(.connectionFailed, "\(to) is not in the room")
            }
            progress("sending \(send.count) \(send.type) messages on stream \(send.streamID) to \(options.to?.rawValue ?? "everyone")")
            for seq in 0..<send.count {
                let message = SeededPayload.message(seed: send.seed, seq: UInt32(seq), sizes: send.sizes)
                try await session.send(message.bytes, timestamp: message.timestamp)
                report.sent += 1
                report.sentBytes += message.bytes.count
            }
            // Graceful close: everything queued goes out before the leave does, and for a reliable
            // type the relay must have acknowledged all of it (else the job fails, naming how many).
            if send.type.isReliable {
                do throws(ConduitError) {
                    try await session.close(timeout: max(ContinuousClock.now.duration(to: deadline), .zero))
                } catch {
                    for task in helpers { task.cancel() }
                    for task in readers.withLock({ $0 }) { task.cancel() }
                    try? await conference.leave(timeout: .zero)  // already told: the leave waits no more
                    throw error
                }
            } else {
                await session.close()
            }
            for await _ in session.events {}
        }
        if options.expect != nil {
            for await reason in done {
                report.ended = reason
                break
            }
        } else {
            report.ended = "sent"
        }
        for task in helpers { task.cancel() }
        for task in readers.withLock({ $0 }) { task.cancel() }
        report.peers = await conference.peers.map(\.rawValue)
        await conference.leave()

        let totals = tally.state.withLock { $0 }
        report.received = totals.total.received
        report.valid = totals.total.valid
        report.bytes = totals.total.bytes
        report.duplicates = totals.total.duplicates
        report.outOfOrder = totals.total.outOfOrder
        report.corrupted = totals.total.corrupted
        if let expect = options.expect { report.missing = max(0, expect - report.valid) }
        for (sender, verifier) in totals.verifiers { report.bySender[sender.rawValue] = verifier.counts.valid }
        let elapsed = start.duration(to: clock.now)
        report.elapsedSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        report.throughputBytesPerSecond = report.elapsedSeconds > 0 ? Double(report.bytes + report.sentBytes) / report.elapsedSeconds : 0
        return report
    }

    private func waitForPeers(_ conference: Conference, until deadline: ContinuousClock.Instant, clock: ContinuousClock) async throws(ConduitError) {
        while true {
            let peers = await conference.peers
            let ready = options.to.map { peers.contains($0) } ?? (peers.count >= options.waitForPeers)
            if ready { return }
            guard clock.now < deadline, !(await conference.isEnded) else {
                throw ConduitError(.timedOut, options.to.map { "\($0) did not join in time" } ?? "fewer than \(options.waitForPeers) peers joined in time")
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}

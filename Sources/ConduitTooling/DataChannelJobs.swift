#if SCTP
package import ConduitCore
package import ConduitSCTP

/// `conduit send sctp+udp://… --label L` to a standard (non-Conduit) data-channel peer: one
/// channel with that label and protocol, `count` seeded messages alternating string and binary,
/// and (with verify-echo) every echo checked for content and type.
///
/// Payloads come from ``SeededPayload``: message `seq` is `SeededPayload.bytes(seed, seq, n)`;
/// string messages map those bytes onto printable ASCII (so they are valid UTF-8). A standard
/// peer echoes content only (no timestamps), so echoes are matched against what was sent as a
/// multiset: each sent message may come back once.
package struct DataChannelSendJob: Sendable {
    package var options: SendJob.Options

    package init(options: SendJob.Options) { self.options = options }

    /// Message `seq` of the run: even ones are strings, odd ones binary.
    package static func message(seed: UInt32, seq: UInt32, sizes: ClosedRange<Int>) -> DataChannelMessage {
        let bytes = SeededPayload.bytes(seed: seed, seq: seq, count: SeededPayload.size(seed: seed, seq: seq, in: sizes))
        return seq % 2 == 0 ? DataChannelMessage(kind: .string, bytes: bytes.map { 0x21 + $0 % 94 }) : .binary(bytes)
    }

    package func run() async throws(ConduitError) -> SendReport {
        let options = options
        guard options.count >= 0, options.sizes.lowerBound >= 0, options.sizes.upperBound <= DataChannel.maxMessageSize else {
            throw ConduitError(.invalidConfiguration, "data-channel messages are 0...\(DataChannel.maxMessageSize) bytes and count must not be negative")
        }
        let url = try TransportURL(parsing: options.url)
        let started = ContinuousClock.now
        let association: SCTPAssociation
        do throws(ConduitError) {
            association = try await SCTPAssociation.connect(to: url)
        } catch {
            throw ConduitError(error.code, "cannot reach \(options.url): \(error.message)")
        }
        let reliability = options.type.isReliable ? Reliability.reliableOrdered : Reliability(ordered: false, limit: .maxRetransmits(0))
        let channel = try await association.openChannel(label: options.label ?? "", protocol: options.protocolName ?? "", reliability: reliability)
        let tally = DataChannelEchoTally()
        let deadline = started.advanced(by: options.timeout)
        let outcome = await withTaskGroup(of: Void.self) { group -> (sent: Int, bytes: Int, timedOut: Bool) in
            if options.verifyEcho {
                group.addTask {
                    while let echo = await channel.receive() {
                        if tally.check(echo) == options.count { return }
                    }
                }
            }
            group.addTask {
                try? await Task.sleep(until: deadline)
                await association.close()
            }
            var sent = 0, bytes = 0
            for seq in 0..<options.count {
                let message = Self.message(seed: options.seed, seq: UInt32(seq), sizes: options.sizes)
                if options.verifyEcho { tally.expect(message) }
                do {
                    try await channel.send(message)
                } catch {
                    break
                }
                sent += 1
                bytes += message.bytes.count
            }
            if options.verifyEcho { _ = await group.next() }
            let timedOut = ContinuousClock.now >= deadline
            group.cancelAll()
            return (sent, bytes, timedOut)
        }
        let elapsed = started.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        await channel.close()
        await association.close()
        let counts = tally.counts
        return SendReport(
            url: options.url, transport: url.scheme, stream: Int(channel.streamID), type: options.type.description,
            label: options.label, protocol: options.protocolName, seed: options.seed, rate: "unlimited",
            count: options.count, sent: outcome.sent, bytes: outcome.bytes, elapsedSeconds: seconds,
            throughputBytesPerSecond: seconds > 0 ? Double(outcome.bytes) / seconds : 0, verifyEcho: options.verifyEcho,
            echoed: counts.echoed, echoMismatches: counts.mismatches, echoDuplicates: counts.duplicates,
            timedOut: outcome.timedOut || (options.verifyEcho && counts.echoed < outcome.sent)
        )
    }
}

/// Echoes of a standard peer, matched as a multiset against what was sent.
final class DataChannelEchoTally: Sendable {
    struct Counts {
        var echoed = 0
        var mismatches = 0
        var duplicates = 0
    }

    private struct State {
        var outstanding: [DataChannelMessage: Int] = [:]
        var sent: Set<DataChannelMessage> = []
        var counts = Counts()
    }

    private let state = TSanVisibleMutex(State())

    func expect(_ message: DataChannelMessage) {
        state.withLock {
            $0.outstanding[message, default: 0] += 1
            $0.sent.insert(message)
        }
    }

    /// Counts one echo; returns how many were good so far.
    func check(_ echo: DataChannelMessage) -> Int {
        state.withLock { state in
            if let left = state.outstanding[echo], left > 0 {
                state.outstanding[echo] = left == 1 ? nil : left - 1
                state.counts.echoed += 1
            } else if state.sent.contains(echo) {
                state.counts.duplicates += 1
            } else {
                state.counts.mismatches += 1
            }
            return state.counts.echoed
        }
    }

    var counts: Counts { state.withLock { $0.counts } }
}

/// `conduit listen sctp+udp://… --echo` for standard peers: every message on every channel the
/// peer opens goes back on the same channel with the same type, until the association ends.
package enum DataChannelEcho {
    /// Serves `association`; `log` gets one line per channel. Returns when the association ends.
    package static func serve(_ association: SCTPAssociation, log: @escaping @Sendable (String) -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            while let channel = await association.acceptChannel() {
                log("standard peer \(association.remoteDescription): channel '\(channel.label)' protocol '\(channel.protocol)' on stream \(channel.streamID), echoing")
                group.addTask {
                    while let message = await channel.receive() {
                        do { try await channel.send(message) } catch { break }
                    }
                }
            }
        }
    }
}
#endif

import ConduitCore
import ConduitRooms

/// One synthetic member of the in-process room bench: a link to the relay that joined the room
/// with a signed token, the task reading it (``SyntheticRoomReader``), and, for a receiver, the
/// keepalive a `Conference` sends (the relay removes a member it has not heard from in 15 s).
///
/// It is not a `Conference`: no runtime, no session layer, no reliability engine (the loopback
/// link is reliable and ordered, so a conference would not run one on it either). What it writes
/// is what a conference writes, made by the same codecs.
final class SyntheticRoomMember: Sendable {
    let peer: PeerID
    let link: any TransportLink
    let status: SyntheticMemberStatus
    let reader: Task<SyntheticRoomReader.Tally, Never>
    private let keepalive: Task<Void, Never>?

    /// How often a receiver pings, as `ConferenceConfiguration.pingInterval` does by default.
    static let pingInterval = Duration.seconds(5)

    private init(peer: PeerID, link: any TransportLink, status: SyntheticMemberStatus, reader: Task<SyntheticRoomReader.Tally, Never>, keepalive: Task<Void, Never>?) {
        self.peer = peer
        self.link = link
        self.status = status
        self.reader = reader
        self.keepalive = keepalive
    }

    /// Connects to the relay at `url`, joins `room` as `peer` with `token` (the join frame a
    /// `Conference` sends) and returns once the relay said `joined`; throws if it refused, the
    /// link ended or `deadline` passed first. `receiver` is the member's index among the
    /// receivers (nil for a sender, which only sends).
    static func join(
        _ url: TransportURL, on transport: any Transport, room: RoomID, as peer: PeerID, token: String,
        receiver: Int?, progress: SyntheticRoomProgress, senders: Int, size: Int, until deadline: ContinuousClock.Instant
    ) async throws(ConduitError) -> SyntheticRoomMember {
        let link = try await transport.connect(to: url)
        let status = SyntheticMemberStatus()
        let reader = Task {
            var reader = SyntheticRoomReader(link: link, status: status, receiver: receiver, progress: progress, senders: senders, size: size)
            return await reader.run()
        }
        let keepalive: Task<Void, Never>? = receiver == nil ? nil : Task {
            while (try? await Task.sleep(for: pingInterval)) != nil {
                try? await link.write(SyntheticRoomFrames.room(.ping))
            }
        }
        let member = SyntheticRoomMember(peer: peer, link: link, status: status, reader: reader, keepalive: keepalive)
        do throws(ConduitError) {
            try await link.write(SyntheticRoomFrames.room(.join(room: room, peer: peer, dataSessionsSupported: true, token: Array(token.utf8))))
            while status.member == nil {
                if let ended = status.ended { throw ConduitError(.connectionFailed, "\(peer) could not join: \(ended)") }
                guard ContinuousClock.now < deadline else { throw ConduitError(.timedOut, "\(peer) was not admitted in time") }
                try? await Task.sleep(for: .milliseconds(1))
            }
        } catch {
            await member.close()
            throw error
        }
        return member
    }

    /// Writes `batches` (pre-encoded, see ``SyntheticRoomFrames``), then `closing`, staying at
    /// most `window` messages ahead of the slowest receiver of this sender (see
    /// ``SyntheticRoomProgress``): when it is that far ahead it waits until the slowest receiver
    /// is within half the window, then writes on. The link's own flow control holds each `write`
    /// while the relay does not read (its backpressure). Throws if the link ends; the bench
    /// releases a sender that still waits at its deadline, and the run then reports what is missing.
    func send(_ batches: [DatagramBatch], closing: DatagramBatch, sender: Int, progress: SyntheticRoomProgress, window: Int, until deadline: ContinuousClock.Instant) async throws(ConduitError) {
        var written = 0
        for batch in batches {
            // A loop: a receiver may resume a sender that parked again since it looked.
            while written - progress.slowest(sender: sender) > window {
                guard ContinuousClock.now < deadline else {
                    throw ConduitError(.timedOut, "\(peer): receivers took \(progress.slowest(sender: sender)) of \(written) messages before the deadline")
                }
                await progress.wait(sender: sender, untilSlowestReaches: written - window / 2)
            }
            try await link.write(batch)
            // (The first batch also holds the session's open: counted as a message, one too many.)
            written += batch.count
        }
        try await link.write(closing)
    }

    /// Ends the keepalive and closes the link (the relay sees the member go); the reader ends.
    func close() async {
        keepalive?.cancel()
        await link.close()
    }
}

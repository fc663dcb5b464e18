#if SCTP
import ConduitCore
import ConduitInteropSupport
import ConduitLogCapture
import ConduitSCTP
import Logging
import Testing

/// pion opening its channel on a stream of either parity, both ways (pion dialing us, and us
/// dialing pion), and pion aborting mid-transfer. Over plain UDP there is no DTLS role, so RFC 8832
/// section 6's even/odd rule has nothing to bind to: Conduit accepts either parity. The limit
/// covers the first test's `go build` of the peer on a fresh machine, which a loaded one (a
/// sanitizer run) has stretched past 2 minutes.
@Suite(
    "SCTP data channels with pion: stream parity and abrupt ends",
    .enabled(if: PionDataChannelPeer.isAvailable, "needs golang-go, golang-github-pion-sctp-dev and golang-github-pion-datachannel-dev"),
    .timeLimit(.minutes(4))
)
struct PionSCTPParityTests {
    static let count = 500
    static let size = 200

    /// What pion sends as message `index` (main.go's `message`): strings on even indexes.
    static func pionMessage(_ index: Int) -> DataChannelMessage {
        if index % 2 == 0 {
            return .string(String(decoding: (0..<size).map { UInt8(ascii: "a") + UInt8((index + $0) % 26) }, as: UTF8.self))
        }
        return .binary((0..<size).map { UInt8(truncatingIfNeeded: index * 31 + $0 * 7 + 1) })
    }

    /// Echoes what arrives on `channel` until the channel ends or `limit` messages came; returns them.
    static func echo(_ channel: DataChannel, limit: Int) async -> (received: [DataChannelMessage], sendError: ConduitError?) {
        var received: [DataChannelMessage] = []
        while received.count < limit, let message = await channel.receive() {
            received.append(message)
            do { try await channel.send(message) } catch { return (received, error) }
        }
        return (received, nil)
    }

    /// A pion client dialing a new listener of ours, opening "`label`" on `stream` and sending
    /// `count` messages (options adjusted by `configure`); the association and channel we accepted.
    /// The caller kills pion and closes the rest.
    static func pionDialing(
        label: String, stream: Int, count: Int = count, logger: Logger? = nil, _ configure: (inout PionDataChannelPeer.Options) -> Void = { _ in }
    ) async throws -> (listener: SCTPAssociationListener, pion: PionDataChannelPeer, association: SCTPAssociation, channel: DataChannel) {
        let listener = try await SCTPAssociation.listen(on: TransportURL(parsing: "sctp+udp://127.0.0.1:0"), logger: logger)
        var options = PionDataChannelPeer.Options(
            role: .client, remote: "127.0.0.1:\(listener.localURL.port!)", label: label, protocol: "p",
            count: count, size: size, timeoutSeconds: 40, streamID: stream)
        configure(&options)
        let pion = try await PionDataChannelPeer.start(options)
        let association = try #require(await listener.accept())
        let channel = try #require(await association.acceptChannel())
        return (listener, pion, association, channel)
    }

    /// A send on `channel` must fail with `code`, its message naming `reason`.
    static func expectSendRefused(_ channel: DataChannel, _ code: ConduitError.Code, naming reason: String) async {
        do {
            try await channel.send(.string("too late"))
            Issue.record("a send on the ended channel succeeded")
        } catch {
            #expect(error.code == code && error.message.contains(reason), "\(error)")
        }
    }

    static func checkExactlyOnceInOrder(_ received: [DataChannelMessage], _ outcome: PionDataChannelPeer.Outcome) {
        #expect(received == (0..<count).map(pionMessage), "every message once, in order, byte for byte and type for type")
        let report = outcome.report
        #expect(outcome.succeeded, "\(report.error ?? "") \(outcome.standardError.suffix(500))")
        // pion checks each echo against what it sent, in order: verified == sent and nothing else came back.
        #expect(report.sent == count && report.verified == count && report.received == count && report.mismatches == 0)
    }

    @Test("pion dials us and opens on stream 1 or 2: 500 messages echoed exactly once, in order", arguments: [1, 2])
    func pionDialsUs(stream: Int) async throws {
        let (listener, pion, association, channel) = try await Self.pionDialing(label: "parity-\(stream)", stream: stream)
        defer { pion.kill() }
        #expect(channel.streamID == UInt16(stream) && channel.label == "parity-\(stream)")
        let (received, sendError) = await Self.echo(channel, limit: Self.count)
        #expect(sendError == nil)
        Self.checkExactlyOnceInOrder(received, try await pion.finish())
        let statistics = await association.statistics()
        #expect(statistics.droppedDCEP == 0 && statistics.opensRefused == 0 && statistics.droppedNoChannel == 0)
        // pion shut down once every echo was back; usrsctp reports that as SHUTDOWN_COMP, or at
        // times as COMM_LOST without an ABORT (pion closes its socket right after): either way an
        // end with a reason, never a silent one, and never the ABORT of the test below.
        let reason = await association.closeReason()
        #expect(reason == .shutDownByPeer || reason == .lost, "\(String(describing: reason))")
        await association.close()
        await listener.close()
    }

    @Test("we dial pion and pion opens on stream 1 or 2: 500 messages echoed exactly once, in order", arguments: [1, 2])
    func weDialPion(stream: Int) async throws {
        let pion = try await PionDataChannelPeer.start(.init(
            role: .server, label: "parity-\(stream)", protocol: "p", count: Self.count, size: Self.size, timeoutSeconds: 40, streamID: stream))
        defer { pion.kill() }
        let association = try await SCTPAssociation.connect(to: TransportURL(parsing: "sctp+udp://\(pion.address)"))
        let channel = try #require(await association.acceptChannel())
        #expect(channel.streamID == UInt16(stream))
        let (received, sendError) = await Self.echo(channel, limit: Self.count)
        #expect(sendError == nil)
        Self.checkExactlyOnceInOrder(received, try await pion.finish())
        #expect(await association.statistics().opensRefused == 0)
        await association.close()
    }

    @Test("pion takes stream 0, our parity: our own next channel skips it and both channels work")
    func peerHoldsOurParity() async throws {
        let pion = try await PionDataChannelPeer.start(.init(
            role: .server, label: "theirs-on-0", protocol: "p", count: 50, size: Self.size, echo: true, timeoutSeconds: 30, streamID: 0))
        defer { pion.kill() }
        let association = try await SCTPAssociation.connect(to: TransportURL(parsing: "sctp+udp://\(pion.address)"))
        let theirs = try #require(await association.acceptChannel())
        #expect(theirs.streamID == 0)
        let ours = try await association.openChannel(label: "ours", protocol: "p")
        #expect(ours.streamID == 2, "the lowest even stream the peer does not hold")
        let (received, _) = await Self.echo(theirs, limit: 50)
        #expect(received == (0..<50).map(Self.pionMessage))
        let sent = (0..<20).map { DataChannelMessage.binary([UInt8($0)] + Array(repeating: 7, count: $0)) }
        for message in sent { try await ours.send(message) }
        var echoes: [DataChannelMessage] = []
        while echoes.count < sent.count, let message = await ours.receive() { echoes.append(message) }
        #expect(echoes == sent)
        #expect(await association.statistics().opensRefused == 0)
        await association.close()
        // pion (echoing) does not always notice our SHUTDOWN and would wait for its timeout; the
        // echoes above already show it took our channel. The deferred kill ends it.
    }

    @Test("pion opens on the stream our channel uses: that channel is closed with the reason (RFC 8832 section 6), the association stays up")
    func openOnAStreamInUse() async throws {
        var options = PionDataChannelPeer.Options(
            role: .server, label: "intruder", protocol: "p", count: 0, echo: true, timeoutSeconds: 30, streamID: 0)
        options.openAfterAccept = true
        let pion = try await PionDataChannelPeer.start(options)
        defer { pion.kill() }
        let association = try await SCTPAssociation.connect(to: TransportURL(parsing: "sctp+udp://\(pion.address)"))
        let first = try await association.openChannel(label: "first", protocol: "p")
        #expect(first.streamID == 0)
        // pion acknowledges our OPEN, then sends its own on the same stream: we refuse it by
        // resetting the stream, which closes our channel; reads end.
        #expect(await first.receive() == nil)
        await Self.expectSendRefused(first, .sessionClosed, naming: "refused (streamInUse")
        let statistics = await association.statistics()
        #expect(statistics.opensRefused == 1 && statistics.channelCollisions == 0)
        #expect(await association.closeReason() == nil, "one refused channel does not end the association")
        // The association still carries channels: a new one is echoed by pion.
        let second = try await association.openChannel(label: "second", protocol: "p")
        #expect(second.streamID != 0 || statistics.streamsInUse == 0)
        let sent = (0..<Self.count).map(Self.pionMessage)
        for message in sent { try await second.send(message) }
        var echoes: [DataChannelMessage] = []
        while echoes.count < sent.count, let message = await second.receive() { echoes.append(message) }
        #expect(echoes == sent)
        await association.close()
    }

    @Test("an unknown DCEP message type on pion's channel is ignored and counted: 500 messages still echoed exactly once")
    func unknownDCEPTypeIsIgnored() async throws {
        let (listener, pion, association, channel) = try await Self.pionDialing(label: "odd-dcep", stream: 1) { $0.inject = "dcep-unknown" }
        defer { pion.kill() }
        let (received, sendError) = await Self.echo(channel, limit: Self.count)
        #expect(sendError == nil)
        Self.checkExactlyOnceInOrder(received, try await pion.finish())
        let statistics = await association.statistics()
        #expect(statistics.droppedDCEP == 1 && statistics.opensRefused == 0 && statistics.channelsClosed == 0)
        await association.close()
        await listener.close()
    }

    @Test("a message with an unknown PPID closes that channel only (RFC 8831 section 6.6), with the reason")
    func unknownPPIDClosesTheChannel() async throws {
        let (listener, pion, association, channel) = try await Self.pionDialing(label: "bad-ppid", stream: 1, count: 20) { $0.inject = "ppid-unknown" }
        defer { pion.kill() }
        // The PPID-99 message came right after the OPEN: the channel closes before any message.
        #expect(await channel.receive() == nil)
        await Self.expectSendRefused(channel, .sessionClosed, naming: "PPID 99")
        let statistics = await association.statistics()
        #expect(statistics.droppedPPID == 1)
        #expect(await association.closeReason() == nil, "the association outlives the channel")
        await association.close()
        await listener.close()
    }

    @Test("pion aborts mid-transfer: reads end, sends fail, and the app gets the peer's reason", arguments: [1, 2])
    func pionAborts(stream: Int) async throws {
        let lines = LogCapture()
        let (listener, pion, association, channel) = try await Self.pionDialing(label: "doomed", stream: stream, logger: lines.logger()) {
            $0.abortAfter = 200
        }
        defer { pion.kill() }
        let (received, sendError) = await Self.echo(channel, limit: Self.count)
        if let sendError {
            // An echo refused by the ended association says why, too.
            #expect(sendError.code == .connectionClosed && sendError.message.contains("aborted by the peer"), "\(sendError)")
        }
        // Whatever arrived before the ABORT is intact and in order; nothing after it.
        #expect((1...200).contains(received.count) && received == (0..<received.count).map(Self.pionMessage), "\(received.count) received")
        let outcome = try await pion.finish()
        #expect(outcome.report.aborted == true && outcome.exitStatus == 0, "\(outcome.report.error ?? "")")
        let reason = await association.closeReason()
        #expect(reason == .abortedByPeer(reason: "sctp-pion: abort requested by -abort-after"))
        #expect(reason?.isAbnormal == true)
        #expect(lines.entries.contains {
            $0.message == "sctp association ended" && $0.level == .notice && $0.metadata["conduit.reason"]?.contains("aborted by the peer") == true
        })
        await Self.expectSendRefused(channel, .connectionClosed, naming: "aborted by the peer")
        do {
            _ = try await association.openChannel(label: "after", protocol: "")
            Issue.record("opening a channel after the peer's ABORT succeeded")
        } catch {
            #expect(error.code == .connectionClosed && error.message.contains("aborted by the peer"), "\(error)")
        }
        await association.close()
        await listener.close()
    }

    @Test("a standard peer at a listener for Conduit callers only is refused with a logged reason, not silently")
    func standardPeerRefusedAtConduitListener() async throws {
        let lines = LogCapture()
        let listener = try await SCTPTransport(logger: lines.logger()).listenSCTP(on: TransportURL(parsing: "sctp+udp://127.0.0.1:0"))
        let accepting = Task { try? await listener.accept() }
        let pion = try await PionDataChannelPeer.start(.init(
            role: .client, remote: "127.0.0.1:\(listener.localURL.port!)", label: "not-conduit", protocol: "p",
            count: 10, size: 10, timeoutSeconds: 20, streamID: 1))
        defer { pion.kill() }
        // pion's association ends when we refuse it; its run then fails (no echoes), as it should.
        let outcome = try await pion.finish()
        #expect(outcome.report.verified == 0)
        let refused = lines.entries.filter { $0.message == "sctp association ended" && $0.level == .notice }
        #expect(refused.count == 1 && refused.first?.metadata["conduit.reason"]?.contains("refused: a standard data-channel peer") == true, "\(refused)")
        await listener.close()
        accepting.cancel()
    }
}
#endif

#if SCTP
import ConduitCore
import ConduitImpairment
import ConduitInteropSupport
import ConduitSCTP
import ConduitTooling
import Testing

/// Interoperability with an independent RFC 8831/8832 implementation: pion/sctp and
/// pion/datachannel (Go), run by `Tests/Interop/sctp-pion` over plain UDP, no DTLS. Conduit opens
/// channels to pion and accepts pion's, strings and binaries both ways, labels and protocols kept.
///
/// By hand: `apt-get install golang-go golang-github-pion-sctp-dev golang-github-pion-datachannel-dev`,
/// then `swift test --filter PionSCTPInteropTests`.
@Suite(
    "SCTP data-channel interoperability with pion",
    .enabled(if: PionDataChannelPeer.isAvailable, "needs golang-go, golang-github-pion-sctp-dev and golang-github-pion-datachannel-dev"),
    .timeLimit(.minutes(4))
)
struct PionSCTPInteropTests {
    static func messages(_ count: Int, seed: UInt64) -> [DataChannelMessage] {
        var random = SeededRandom(seed: seed)
        return (0..<count).map { index in
            if index % 2 == 0 {
                let letters = (0..<(1 + random.below(300))).map { _ in UInt8(ascii: "a") + UInt8(random.below(26)) }
                return .string(String(decoding: letters, as: UTF8.self) + "✓")
            }
            return .binary(random.bytes(random.below(2_000)))
        }
    }

    @Test("Conduit opens a channel to pion; pion echoes strings and binaries with the same type", arguments: [
        Reliability.reliableOrdered, Reliability(ordered: false, limit: .none),
    ])
    func conduitOpensToPion(_ reliability: Reliability) async throws {
        // An echo-only pion server ends when it notices our SHUTDOWN, which it does not always do,
        // or at its -timeout, which it reports as a normal end.
        let pion = try await PionDataChannelPeer.start(.init(role: .server, echo: true, timeoutSeconds: 15))
        defer { pion.kill() }
        let port = pion.port
        let association = try await SCTPAssociation.connect(to: TransportURL(parsing: "sctp+udp://127.0.0.1:\(port)"))
        let channel = try await association.openChannel(label: "from-conduit ✓", protocol: "conduit-interop/1", reliability: reliability)
        let sent = Self.messages(40, seed: 11)
        for message in sent { try await channel.send(message) }
        var echoes: [DataChannelMessage] = []
        while echoes.count < sent.count, let message = await channel.receive() { echoes.append(message) }
        if reliability.ordered {
            #expect(echoes == sent)
        } else {
            #expect(echoes.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) } == sent.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) })
        }
        await association.close()
        let outcome = try await pion.finish()
        let report = outcome.report
        #expect(outcome.exitStatus == 0, "\(report.error ?? "")")
        #expect(report.channels == [.init(label: "from-conduit ✓", protocol: "conduit-interop/1")])
        #expect(report.received == sent.count && report.strings == 20 && report.binaries == 20 && report.mismatches == 0)
    }

    /// A pion client opening "from-pion" with 30 messages of 700 B; the test adds where to connect.
    static func pionClient(ordered: Bool, maxRetransmits: Int? = nil, maxLifetimeMilliseconds: Int? = nil) -> PionDataChannelPeer.Options {
        PionDataChannelPeer.Options(
            role: .client, label: "from-pion", protocol: "pion-interop/1", ordered: ordered, maxRetransmits: maxRetransmits,
            maxLifetimeMilliseconds: maxLifetimeMilliseconds, count: 30, size: 700, timeoutSeconds: 30)
    }

    @Test("pion opens channels to Conduit; Conduit echoes on the same channel with the same type", arguments: [
        pionClient(ordered: true), pionClient(ordered: false, maxRetransmits: 0), pionClient(ordered: true, maxLifetimeMilliseconds: 500),
    ])
    func pionOpensToConduit(_ client: PionDataChannelPeer.Options) async throws {
        let listener = try await SCTPAssociation.listen(on: TransportURL(parsing: "sctp+udp://127.0.0.1:0"))
        var options = client
        options.remote = "127.0.0.1:\(listener.localURL.port!)"
        let pion = try await PionDataChannelPeer.start(options)
        defer { pion.kill() }
        let association = try #require(await listener.accept())
        let channel = try #require(await association.acceptChannel())
        #expect(channel.label == "from-pion" && channel.protocol == "pion-interop/1")
        #expect(channel.streamID % 2 == 0, "the connecting side uses even stream IDs")
        let partial = options.isPartiallyReliable
        if partial {
            #expect(channel.reliability.ordered == options.ordered)
            #expect(channel.reliability.limit != .none)
        } else {
            #expect(channel.reliability == .reliableOrdered)
        }
        // pion ends a partially reliable channel once echoes pause for a second, so on a loaded
        // machine it may close the channel before every echo is sent: that ends the loop, not the test.
        var kinds: [DataChannelMessageKind: Int] = [:]
        for _ in 0..<30 {
            guard let message = await channel.receive() else { break }
            kinds[message.kind, default: 0] += 1
            #expect(message.bytes.count == 700)
            let sent: Result<Void, ConduitError>
            do {
                try await channel.send(message)
                sent = .success(())
            } catch {
                sent = .failure(error)
            }
            if case .failure(let error) = sent {
                #expect(partial && error.code == .sessionClosed, "\(error)")
                break
            }
        }
        let outcome = try await pion.finish()
        let report = outcome.report
        #expect(outcome.exitStatus == 0, "\(report.error ?? "")")
        #expect(report.sent == 30 && report.mismatches == 0)
        if partial {
            #expect(kinds[.string, default: 0] > 0 && kinds[.binary, default: 0] > 0)
            #expect((1...30).contains(report.verified))
        } else {
            #expect(kinds == [.string: 15, .binary: 15])
            #expect(report.verified == 30)
        }
        await association.close()
        await listener.close()
    }
}

/// What `conduit send --label --protocol --verify-echo` and `conduit listen --echo` run, against pion.
@Suite(
    "conduit send / listen jobs with a pion data-channel peer",
    .enabled(if: PionDataChannelPeer.isAvailable, "needs golang-go, golang-github-pion-sctp-dev and golang-github-pion-datachannel-dev"),
    .timeLimit(.minutes(4))
)
struct PionSCTPToolingTests {
    @Test("DataChannelSendJob opens the labelled channel to pion and verifies every echo, strings and binaries")
    func sendJobToPion() async throws {
        let pion = try await PionDataChannelPeer.start(.init(role: .server, echo: true, timeoutSeconds: 15))
        defer { pion.kill() }
        let port = pion.port
        let options = SendJob.Options(
            url: "sctp+udp://127.0.0.1:\(port)", streamID: 100, type: .reliableMessage, count: 60, sizes: 0...20_000,
            label: "tool-label", protocolName: "tool/1", seed: 7, verifyEcho: true, timeout: .seconds(20)
        )
        let report = try await DataChannelSendJob(options: options).run()
        #expect(report.sent == 60 && report.echoed == 60 && report.echoMismatches == 0 && report.echoDuplicates == 0 && !report.timedOut)
        let outcome = try await pion.finish()
        let pionReport = outcome.report
        #expect(outcome.exitStatus == 0)
        #expect(pionReport.channels == [.init(label: "tool-label", protocol: "tool/1")])
        #expect(pionReport.strings == 30 && pionReport.binaries == 30)
    }

    @Test("DataChannelEcho echoes a pion client's channel, which verifies every message")
    func echoServiceForPion() async throws {
        let listener = try await SCTPAssociation.listen(on: TransportURL(parsing: "sctp+udp://127.0.0.1:0"))
        let pion = try await PionDataChannelPeer.start(.init(
            role: .client, remote: "127.0.0.1:\(listener.localURL.port!)", label: "L", protocol: "P", count: 50, size: 1200, timeoutSeconds: 20))
        defer { pion.kill() }
        let association = try #require(await listener.accept())
        let service = Task { await DataChannelEcho.serve(association) { _ in } }
        let outcome = try await pion.finish()
        let report = outcome.report
        #expect(outcome.exitStatus == 0, "\(report.error ?? "")")
        #expect(report.verified == 50 && report.mismatches == 0)
        await association.close()
        await service.value
        await listener.close()
    }
}
#endif

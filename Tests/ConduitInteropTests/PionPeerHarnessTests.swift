import ConduitInteropSupport
import Testing

/// The pion data-channel peer against itself (pion server ↔ pion client over loopback UDP), so CI
/// proves the interoperability harness works before any Conduit transport is tested against it:
/// channels open with their label and protocol, every message comes back byte-identical with its
/// type, and the reports count exactly what was sent.
@Suite(
    "pion data-channel peer (harness self-test)",
    .enabled(if: PionDataChannelPeer.isAvailable, "needs golang-go, golang-github-pion-sctp-dev, golang-github-pion-datachannel-dev")
)
struct PionPeerHarnessTests {
    struct Channel: Sendable, CustomTestStringConvertible {
        var ordered: Bool
        var maxRetransmits: Int?
        var size: Int
        var testDescription: String {
            "\(ordered ? "ordered" : "unordered"), \(maxRetransmits.map { "maxRetransmits \($0)" } ?? "reliable"), \(size) B"
        }
    }

    @Test(arguments: [
        Channel(ordered: true, maxRetransmits: nil, size: 1_000),
        Channel(ordered: false, maxRetransmits: nil, size: 0),
        Channel(ordered: true, maxRetransmits: nil, size: 60_000),
    ])
    func clientChannelIsEchoedByServer(_ channel: Channel) async throws {
        let server = try await PionDataChannelPeer.start(.init(role: .server, echo: true, timeoutSeconds: 20))
        defer { server.kill() }
        let client = try await PionDataChannelPeer.run(
            .init(
                role: .client, remote: server.address, label: "chat", protocol: "conduit-test",
                ordered: channel.ordered, maxRetransmits: channel.maxRetransmits, count: 20, size: channel.size,
                timeoutSeconds: 20))
        // An echo-only server ends when the client's SHUTDOWN arrives, or else at its own timeout,
        // which counts as success for it: on a loaded machine pion's 2 s graceful shutdown can lapse,
        // so wait out the server's timeout rather than kill it early.
        let served = try await server.finish()

        #expect(client.succeeded, "\(client.report.error ?? "") \(client.standardError)")
        #expect(client.report.sent == 20)
        #expect(client.report.verified == 20)
        #expect(client.report.mismatches == 0)
        #expect(client.report.strings == 10 && client.report.binaries == 10)

        // The server saw one channel with the label and protocol the client chose, and echoed all.
        #expect(served.succeeded, "\(served.report.error ?? "") \(served.standardError)")
        #expect(served.report.channels == [.init(label: "chat", protocol: "conduit-test")])
        #expect(served.report.received == 20)
        #expect(served.report.echoedBack == 20)
        #expect(served.report.strings == 10 && served.report.binaries == 10)
    }

    /// The server opens a channel of its own (what tests use to check that Conduit accepts channels
    /// from pion), and the client, which echoes, sees its label and protocol.
    @Test func serverOpensAChannelToTheClient() async throws {
        let server = try await PionDataChannelPeer.start(
            .init(role: .server, label: "from-server", protocol: "p2", count: 12, size: 100, timeoutSeconds: 20))
        defer { server.kill() }
        let client = try await PionDataChannelPeer.run(
            .init(role: .client, remote: server.address, label: "c", count: 1, echo: true, expectEcho: false, timeoutSeconds: 20))
        let served = try await server.finish()

        #expect(served.succeeded, "\(served.report.error ?? "") \(served.standardError)")
        #expect(served.report.sent == 12 && served.report.verified == 12 && served.report.mismatches == 0)
        #expect(client.succeeded, "\(client.report.error ?? "") \(client.standardError)")
        #expect(client.report.channels == [.init(label: "from-server", protocol: "p2")])
        #expect(client.report.echoedBack == 12)
    }

    /// A client with nobody listening fails within its timeout, with a report saying why.
    @Test func clientWithoutServerFailsInTime() async throws {
        let client = try await PionDataChannelPeer.run(.init(role: .client, remote: "127.0.0.1:9", timeoutSeconds: 1))
        #expect(!client.succeeded)
        #expect(client.exitedByItself)
        #expect(client.report.error?.contains("timed out") == true)
    }
}

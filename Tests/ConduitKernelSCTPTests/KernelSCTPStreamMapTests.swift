#if KernelSCTP
import ConduitCore
import ConduitRooms
@testable import ConduitKernelSCTP
import Testing

/// Which SCTP stream carries a frame: the part of the kernel backend that needs no kernel SCTP.
@Suite("kernel SCTP: channel to stream")
struct KernelSCTPStreamMapTests {
    @Test func theCallChannelUsesStreamZero() {
        #expect(KernelSCTPLink.stream(for: FrameTag.controlChannel, streams: 1_024) == 0)
    }

    @Test func sessionsUseStreamsOneAndUpAndStayOnTheirStream() {
        let streams: UInt16 = 10
        var seen: Set<UInt16> = []
        for stream in UInt16(100)...999 {
            for subgroup in UInt16(0)..<3 {
                let channel = FrameTag.sessionChannel(stream: stream, subgroupID: subgroup)
                let sctpStream = KernelSCTPLink.stream(for: channel, streams: streams)
                #expect((1..<streams).contains(sctpStream))
                #expect(KernelSCTPLink.stream(for: channel, streams: streams) == sctpStream)
                seen.insert(sctpStream)
            }
        }
        #expect(seen.count == Int(streams) - 1)  // every data stream is used
    }

    @Test func withOneStreamEverythingSharesIt() {
        #expect(KernelSCTPLink.stream(for: FrameTag.sessionChannel(stream: 100, subgroupID: 0), streams: 1) == 0)
    }

    @Test func badURLsAreTypedErrors() async throws {
        // Checked after availability, so on these machines the availability error comes first;
        // where the kernel has SCTP the URL errors show. Either way: a typed error, no crash.
        for text in ["sctp://127.0.0.1", "sctp://127.0.0.1:5000?mtu=1", "sctp://127.0.0.1:0"] {
            let url = try TransportURL(parsing: text)
            await #expect(throws: ConduitError.self) { _ = try await KernelSCTPTransport().connect(to: url) }
        }
    }
}
#endif

#if SCTP
import ConduitCore
import Testing

@testable import ConduitSCTP

@Suite("sctp+udp URL options")
struct SCTPOptionsTests {
    static func mtu(_ url: String) throws -> Int {
        try SCTPOptions(TransportURL(parsing: url), listening: true).mtu
    }

    @Test("packet size: 1472 to a loopback host, 1232 elsewhere, and mtu= always wins")
    func defaultPacketSize() throws {
        for url in ["sctp+udp://127.0.0.1:5000", "sctp+udp://127.1.2.3:0", "sctp+udp://[::1]:5000",
                    "sctp+udp://[0:0:0:0:0:0:0:1]:5000", "sctp+udp://localhost:5000"] {
            #expect(try Self.mtu(url) == 1_472, "\(url)")
        }
        for url in ["sctp+udp://192.0.2.7:5000", "sctp+udp://0.0.0.0:5000", "sctp+udp://[::]:5000",
                    "sctp+udp://[2001:db8::1]:5000", "sctp+udp://example.com:5000", "sctp+udp://127.0.0.256:5000",
                    "sctp+udp://[::1:1]:5000"] {
            #expect(try Self.mtu(url) == 1_232, "\(url)")
        }
        #expect(try Self.mtu("sctp+udp://127.0.0.1:5000?mtu=1200") == 1_200)
        #expect(try Self.mtu("sctp+udp://192.0.2.7:5000?mtu=64000") == 64_000)
        #expect(throws: ConduitError.self) { try Self.mtu("sctp+udp://127.0.0.1:5000?mtu=65000") }
    }
}
#endif

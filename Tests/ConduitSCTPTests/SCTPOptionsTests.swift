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

    @Test("a typed configuration round-trips through the URL query; bad values are refused by option name")
    func typedConfiguration() throws {
        let typed = try SCTPTransport.Configuration(sctpPort: 5001, connectTimeoutMilliseconds: 700, streams: 64, initAttempts: 3, mtu: 1_300)
        let url = TransportURL(scheme: SCTPOptions.scheme, host: "127.0.0.1", port: 9, query: typed.query)
        #expect(try SCTPOptions(url, listening: false) == typed)
        #expect(try SCTPOptions(TransportURL(parsing: "sctp+udp://127.0.0.1:9?streams=64&mtu=1300&sctp-port=5001&init-attempts=3&connect-timeout-ms=700"), listening: false) == typed)
        for (option, configuration) in [("streams", { () throws(ConduitError) in try SCTPTransport.Configuration(streams: 8, mtu: 1_300) }),
                                        ("mtu", { () throws(ConduitError) in try SCTPTransport.Configuration(mtu: 100) })] {
            let error = #expect(throws: ConduitError.self) { _ = try configuration() }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains(option) == true)
        }
        let error = #expect(throws: ConduitError.self) { try SCTPOptions(TransportURL(parsing: "sctp+udp://127.0.0.1:9?streams=8"), listening: false) }
        #expect(error?.message.contains("streams") == true)
    }
}
#endif

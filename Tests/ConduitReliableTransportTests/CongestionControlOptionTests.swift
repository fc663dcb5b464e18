import ConduitARQ
import ConduitCore
import ConduitReliableTransport
import Testing

/// The `cc` URL option: which congestion controller a link runs.
@Suite("Congestion control URL option")
struct CongestionControlOptionTests {
    @Test("cc: bbr by default, bbr or newreno when asked, other values refused, and kept from the transport")
    func urlOption() throws {
        #expect(try ARQEngine.Configuration(url: TransportURL(parsing: "udp://127.0.0.1:9")).congestionControl == .bbr)
        #expect(try ARQEngine.Configuration(url: TransportURL(parsing: "udp://127.0.0.1:9?cc=newreno")).congestionControl == .newReno)
        #expect(try ARQEngine.Configuration(url: TransportURL(parsing: "udp://127.0.0.1:9?cc=bbr")).congestionControl == .bbr)
        for bad in ["cc=cubic", "cc=BBR", "cc="] {
            let error = #expect(throws: ConduitError.self) { try ARQEngine.Configuration(url: TransportURL(parsing: "udp://127.0.0.1:9?\(bad)")) }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains("cc=") == true, "\(error?.message ?? "")")
        }
        let stripped = try TransportURL(parsing: "udp://127.0.0.1:9?mtu=1500&cc=newreno").withoutReliableTransportOptions
        #expect(stripped.query == ["mtu": "1500"])
    }
}

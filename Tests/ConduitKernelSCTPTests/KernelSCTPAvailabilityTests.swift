#if KernelSCTP
import ConduitCore
import ConduitKernelSCTP
import ConduitLogCapture
import Logging
import Synchronization
import Testing

/// Kernel SCTP (`sctp://`) on a machine whose kernel has no SCTP, which is every machine we run on:
/// selecting it must fail at once with a typed error that says why and what to use instead. Where
/// the kernel has SCTP these tests skip themselves; the working socket path is not tested here.
@Suite(
    "kernel SCTP where the kernel lacks it",
    .enabled(if: KernelSCTPTransport.unavailability() != nil, "this kernel has SCTP; the error path cannot be exercised")
)
struct KernelSCTPAvailabilityTests {
    @Test func connectFailsWithAClearTypedError() async throws {
        let error = await #expect(throws: ConduitError.self) {
            _ = try await KernelSCTPTransport().connect(to: TransportURL(parsing: "sctp://127.0.0.1:5000"))
        }
        #expect(error?.code == .unsupportedByTransport)
        #expect(error?.message.contains("kernel SCTP is not available on this machine") == true)
        #expect(error?.message.contains("IPPROTO_SCTP") == true)
        #expect(error?.message.contains("use sctp+udp://") == true)
    }

    @Test func listenFailsWithTheSameError() async throws {
        let error = await #expect(throws: ConduitError.self) {
            _ = try await KernelSCTPTransport().listen(on: TransportURL(parsing: "sctp://127.0.0.1:0"))
        }
        #expect(error?.code == .unsupportedByTransport)
        #expect(error == KernelSCTPTransport.unavailability())
    }

    /// A host that gave the transport a logger learns at debug why the kernel refused.
    @Test func theRefusalIsLoggedWhenAskedTo() async throws {
        let lines = LogCapture()
        let logger = lines.logger(label: "test")
        _ = try? await KernelSCTPTransport(logger: logger).connect(to: TransportURL(parsing: "sctp://127.0.0.1:5000"))
        let logged = lines.entries
        try #require(logged.count == 1)
        #expect(logged[0].message == "sctp connect failed")
        #expect(logged[0].metadata["conduit.transport"] == "sctp")
        #expect(logged[0].metadata["conduit.reason"]?.contains("use sctp+udp://") == true)
    }

    /// The registry resolves `sctp://` to this transport (so the CLI reports this error, not an
    /// unknown scheme), and leaves `sctp+udp://` to the usrsctp transport.
    @Test func registryResolvesTheScheme() throws {
        let registry = TransportRegistry([KernelSCTPTransport()])
        let (transport, url) = try registry.resolve("sctp://[::1]:5000")
        #expect(transport is KernelSCTPTransport)
        #expect(url.host == "::1" && url.port == 5000)
        #expect(registry.transport(for: "sctp+udp") == nil)
    }
}
#endif

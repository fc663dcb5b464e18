#if KernelSCTP
import ConduitCore
import ConduitKernelSCTP
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
        let lines = KernelSCTPLogLines()
        let logger = Logger(label: "test", factory: { _ in KernelSCTPCapturingHandler(lines: lines) })
        _ = try? await KernelSCTPTransport(logger: logger).connect(to: TransportURL(parsing: "sctp://127.0.0.1:5000"))
        let logged = lines.storage.withLock { $0 }
        try #require(logged.count == 1)
        #expect(logged[0].0 == "sctp connect failed")
        #expect(logged[0].1["conduit.transport"] == "sctp")
        #expect(logged[0].1["conduit.reason"].map { "\($0)".contains("use sctp+udp://") } == true)
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

/// Each line's message and metadata (the handler's and the call site's).
final class KernelSCTPLogLines: Sendable {
    let storage = Mutex<[(String, Logger.Metadata)]>([])
}

struct KernelSCTPCapturingHandler: LogHandler {
    let lines: KernelSCTPLogLines
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        lines.storage.withLock { $0.append((event.message.description, merged)) }
    }
}
#endif

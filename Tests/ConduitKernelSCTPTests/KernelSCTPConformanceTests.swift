#if KernelSCTP
import ConduitConformance
import ConduitCore
import ConduitKernelSCTP
import Foundation
import Testing

/// The conformance suite over `sctp://`: real kernel SCTP sockets on loopback. This machine's
/// kernel (and CI's) has no SCTP, so here the suite skips, saying so; `Scripts/kernel-sctp-vm.sh`
/// runs it for real in a qemu guest whose kernel loads the `sctp` module.
@Suite(
    "kernel SCTP transport conformance",
    .enabled(if: KernelSCTPAvailability.shouldRun, KernelSCTPAvailability.skipNote)
)
struct KernelSCTPConformanceTests {
    // Three minutes, not one: the guest may run under software emulation (TCG), several times slower.
    // Not closeKeepsWhatWasReceived: KernelSCTPLink.close shuts its socket down at once, and
    // what the socket had received goes with it (not yet made to keep it; untested in a guest).
    @Test(.timeLimit(.minutes(3)), arguments: ConformanceSuite.Case.allCases.filter { $0 != .closeKeepsWhatWasReceived })
    func conforms(_ testCase: ConformanceSuite.Case) async throws {
        let suite = ConformanceSuite(
            transport: KernelSCTPTransport(connectTimeout: .seconds(5)),
            address: { _ in TransportURL(scheme: "sctp", host: "127.0.0.1", port: 0) },
            deadAddress: TransportURL(scheme: "sctp", host: "127.0.0.1", port: try await unusedSCTPPort())
        )
        try await suite.run(testCase)
    }

    /// The same over IPv6 loopback, where the guest has it: one call, every session type.
    @Test(.timeLimit(.minutes(3)))
    func callOverIPv6Loopback() async throws {
        let suite = ConformanceSuite(
            transport: KernelSCTPTransport(connectTimeout: .seconds(5)),
            address: { _ in TransportURL(scheme: "sctp", host: "::1", port: 0) },
            deadAddress: TransportURL(scheme: "sctp", host: "::1", port: try await unusedSCTPPort())
        )
        try await suite.run(.callCarriesEverySessionType)
    }
}

/// Whether kernel SCTP runs here, and what a skipped suite says when it does not.
enum KernelSCTPAvailability {
    static let isAvailable = KernelSCTPTransport.unavailability() == nil

    /// Set by the VM's init script: there, a kernel without SCTP is a failure, not a skip.
    static let required = ProcessInfo.processInfo.environment["CONDUIT_KERNEL_SCTP"] == "1"

    /// The UDP port of the kernel's SCTP encapsulation (net.sctp.udp_port), set by the VM's init.
    static let udpPort = ProcessInfo.processInfo.environment["CONDUIT_KERNEL_SCTP_UDP_PORT"].flatMap(Int.init)

    /// Run where the kernel has SCTP, and wherever it is required (so that they fail there).
    static let shouldRun = isAvailable || required

    static let skipNote: Comment = """
        SKIPPED: this kernel has no SCTP (no sctp module); run Scripts/kernel-sctp-vm.sh to run \
        these tests in a qemu guest that has it
        """
}

/// A kernel SCTP port where nothing listens: one the kernel handed out and took back.
func unusedSCTPPort() async throws -> Int {
    let listener = try await KernelSCTPTransport().listen(on: TransportURL(scheme: "sctp", host: "127.0.0.1", port: 0))
    let port = listener.localURL.port ?? 0
    await listener.close()
    return port
}
#endif

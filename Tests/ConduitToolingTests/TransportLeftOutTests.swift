import Conduit
import ConduitTooling
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A transport left out of a build by its package trait is still known by scheme, and every use
/// fails at once with an error that names the trait.
@Suite struct TransportLeftOutTests {
    let runtime = ConduitRuntime(
        registry: TransportRegistry.defaults.registering(
            TransportLeftOut(scheme: "sctp+udp", trait: "SCTP", library: "usrsctp (Debian: libusrsctp-dev)")
        )
    )

    @Test func connectingNamesTheTrait() async {
        do {
            _ = try await runtime.connect(to: "sctp+udp://127.0.0.1:9", as: "alice")
            Issue.record("connect succeeded on a transport that is not built in")
        } catch {
            #expect(error.code == .unsupportedByTransport)
            #expect(error.message.contains("package trait SCTP"))
            #expect(error.message.contains("libusrsctp-dev"))
        }
    }

    @Test func listeningNamesTheTrait() async {
        do {
            _ = try await runtime.listen(on: "sctp+udp://127.0.0.1:0", as: "bob")
            Issue.record("listen succeeded on a transport that is not built in")
        } catch {
            #expect(error.code == .unsupportedByTransport)
            #expect(error.message.contains("package trait SCTP"))
        }
    }
}

/// `conduit bench --reference` builds the library that keeps tsctp quiet on first use.
@Suite struct QuietLibraryTests {
    @Test func itIsBuiltOnceAndThenReused() async throws {
        let path = "/tmp/conduit-quiet-test-\(getpid()).so"
        defer { unlink(path) }
        #expect(try await BenchReferenceRun.quietLibrary(at: path) == path)
        var first = stat()
        #expect(stat(path, &first) == 0 && first.st_size > 0)
        #expect(try await BenchReferenceRun.quietLibrary(at: path) == path)
        var second = stat()
        #expect(stat(path, &second) == 0 && second.st_ino == first.st_ino)
        // No source or partial file is left beside it.
        #expect(access(path + ".\(getpid()).c", F_OK) != 0)
        #expect(access(path + ".\(getpid()).partial", F_OK) != 0)
    }
}

// The libFuzzer harness: `main` hands the process to libFuzzer's driver (`LLVMFuzzerRunDriver`,
// from libclang_rt.fuzzer_no_main, which `Scripts/fuzz.sh` links) with the input callback.
// Linked that way rather than with `--sanitize fuzzer` (whose libFuzzer brings its own `main`), the
// build that makes this executable also builds the test suite under AddressSanitizer with the same
// flags: CI builds once for both. `CONDUIT_FUZZ_TARGET` picks the harness; `list` prints the
// targets this build has. Run it through `Scripts/fuzz.sh`.
import ConduitFuzzTargets

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The harness this process runs, chosen once from the environment.
private let selectedTarget: FuzzTarget = {
    let name = getenv("CONDUIT_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    if name == "list" {
        for target in FuzzTargets.all { print(target.name) }
        exit(0)
    }
    guard let target = FuzzTargets.named(name) else {
        print("conduit-fuzz: set CONDUIT_FUZZ_TARGET to one of: \(FuzzTargets.all.map(\.name).joined(separator: ", "))")
        exit(2)
    }
    return target
}()

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> CInt {
    print("conduit-fuzz: \(selectedTarget.name): \(selectedTarget.summary)")
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    do {
        _ = try selectedTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    } catch {
        // A broken invariant is a finding: trap, so libFuzzer saves the input as a crash artifact.
        fatalError("invariant broken: \(error)")
    }
    return 0
}

/// libFuzzer's driver (`int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const
/// uint8_t *, size_t))`). Named here so the link pulls it from libclang_rt.fuzzer_no_main; its
/// arguments are all pointers, passed the same way by Swift's and C's conventions on the 64-bit
/// platforms we fuzz on.
@_silgen_name("LLVMFuzzerRunDriver")
private func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@main
enum FuzzMain {
    static func main() {
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(runFuzzerDriver(&argc, &argv, fuzzerTestOneInput))
    }
}

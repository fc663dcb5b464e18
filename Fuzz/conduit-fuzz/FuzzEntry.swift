// The libFuzzer entry points (libFuzzer's own `main` comes with `--sanitize fuzzer`; this file is
// not main.swift, so the target has none). `CONDUIT_FUZZ_TARGET` picks the harness; `list` prints
// the targets this build has. Run it through `Scripts/fuzz.sh`.
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

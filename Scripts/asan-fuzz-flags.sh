# Sourced by Scripts/fuzz.sh and Scripts/sanitizers.sh: the flags of the AddressSanitizer build
# both use, so that one build (.build-asan, every trait, CONDUIT_FUZZ=1) serves the test suite
# under AddressSanitizer and the fuzzer, and CI compiles the package under it once.
#
# - AddressSanitizer everywhere (C targets too, through SwiftPM's --sanitize).
# - libFuzzer's coverage instrumentation in our Swift library modules (Package.swift adds it when
#   CONDUIT_FUZZ is set: not in the dependencies or the tests). Without libFuzzer linked,
#   AddressSanitizer's runtime answers those hooks with no-ops.
# - libFuzzer without its main (libclang_rt.fuzzer_no_main): conduit-fuzz's own main starts
#   libFuzzer's driver. The archive is pulled only where that driver is named, so the test bundle
#   and the conduit executable, which have mains of their own, link as usual. (--sanitize fuzzer
#   would link libFuzzer's main into every executable, the test bundle's included.)
# - No DWARF debug info, as in the thread build (Scripts/sanitizer-build-flags.sh says why).
# - The index store stays on: on Linux, SwiftPM's test discovery reads it (`--build-tests` with
#   `--disable-index-store` fails: "index store path does not exist").
toolchain_bin="$(dirname "$(readlink -f "$(command -v swiftc)")")"
fuzzer_archive="$(ls "$toolchain_bin"/../lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-"$(uname -m)".a 2>/dev/null | head -1)"
if [ -z "$fuzzer_archive" ]; then
    echo "no libclang_rt.fuzzer_no_main in the Swift toolchain at $toolchain_bin/.." >&2
    exit 1
fi
source Scripts/sanitizer-build-flags.sh
asan_fuzz_flags=(
    --enable-all-traits --sanitize address
    -Xlinker "$fuzzer_archive" -Xlinker -lstdc++
    "${sanitizer_build_flags[@]}"
)
export CONDUIT_FUZZ=1  # the manifest with conduit-fuzz, the same for both scripts

# Sourced by Scripts/sanitizers.sh and Scripts/asan-fuzz-flags.sh: what the sanitizer builds add to
# `swift build`, to spend less CPU on builds that only run the suite (CI makes both beside its
# other steps, on 2 cores). The ThreadSanitizer build here, cold: 559 s on both cores and 1,028 s
# of CPU as SwiftPM makes it, 447 s and 817 s without debug info, 423 s and 752 s whole-module too.
# - No DWARF debug info: -gnone to the frontend (given to swiftc, it would lose to the -g SwiftPM
#   puts after our flags; through -Xfrontend it comes after the -g the driver passes on). A report
#   still names each frame's function from the symbol table, which is what the suppressions
#   match, but gives no file and line. SANITIZER_DEBUG_INFO=full keeps it.
# - Whole-module compiles (-wmo, two threads): one frontend per module, not one per batch of files
#   that each parse the whole module again. Nothing is optimized: still -Onone. -disable-batch-mode
#   undoes SwiftPM's -enable-batch-mode (the later flag wins), which with -wmo drew one driver
#   warning per module (223 lines in a CI run).
# Scripts/fuzz.sh --release sets sanitizer_build_release=true: a release build is whole-module
# already (with SwiftPM's thread count), and long campaigns keep debug info for their findings.
sanitizer_build_flags=()
if [ "${sanitizer_build_release:-false}" = true ]; then return 0; fi
sanitizer_build_flags=(-Xswiftc -wmo -Xswiftc -disable-batch-mode -Xswiftc -num-threads -Xswiftc 2)
if [ "${SANITIZER_DEBUG_INFO:-none}" != full ]; then
    sanitizer_build_flags+=(-Xswiftc -Xfrontend -Xswiftc -gnone)
fi

#!/usr/bin/env bash
# Fuzzes Conduit's parsers with libFuzzer and AddressSanitizer (issue 18).
#
#   bash Scripts/fuzz.sh [target...] [--seconds N | --runs N] [--jobs N] [--release] [--skip-build]
#                                     (default: every target, 60 s each, as many at once as cores)
#   bash Scripts/fuzz.sh --list
#
# --release: an optimized build (-c release, scratch path .build-fuzz-release) for long campaigns:
# the machine targets run about ten times as many inputs a second as in the debug build, where
# unspecialized generics and reference counting dominate each input. Checks are the same: the
# harnesses' invariants and the library's preconditions stay in -O, and -assert-config Debug keeps
# assert() too. A cold release build takes longer, so CI keeps the debug one for its short runs.
# --skip-build: run the conduit-fuzz already in the scratch path. CI does, after
# `Scripts/sanitizers.sh address` built the suite there (with --build-tests, which links
# conduit-fuzz too): building the product alone compiles the modules with other flags (45 s).
#
# Builds `conduit-fuzz` once (Scripts/asan-fuzz-flags.sh: AddressSanitizer, libFuzzer's coverage
# and driver, every trait; scratch path .build-asan, the build `Scripts/sanitizers.sh address`
# runs the suite from), then runs the targets (each one libFuzzer process on one core, so
# --jobs of them side by side) from their seeds in Fuzz/corpus/<target>
# (read only: what libFuzzer adds goes to .build-asan/corpus/<target>). A finding (a crash, an
# AddressSanitizer report, a broken invariant, a leak, an input that takes over 10 s) stops that
# target; its input is saved as Fuzz/findings/<target>/crash-<sha1> (or leak-, timeout-, oom-) and
# the script exits 1 after the remaining targets have run. To keep a fixed finding fixed, move its
# input to Fuzz/regressions/<target>/ (the test suite replays that directory).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scratch=.build-asan
configuration=(-c debug)
limit=(-max_total_time=60)
targets=()
list=false
skip_build=false
jobs="$(nproc 2>/dev/null || echo 1)"

while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) limit=(-max_total_time="$2"); shift 2 ;;
        --runs) limit=(-runs="$2"); shift 2 ;;
        --jobs) jobs="$2"; shift 2 ;;
        --list) list=true; shift ;;
        --skip-build) skip_build=true; shift ;;
        --release) scratch=.build-fuzz-release; configuration=(-c release -Xswiftc -assert-config -Xswiftc Debug)
                   sanitizer_build_release=true; shift ;;  # SwiftPM's release flags (Scripts/sanitizer-build-flags.sh)
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        -*) echo "Scripts/fuzz.sh: unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done

source Scripts/asan-fuzz-flags.sh
start=$SECONDS
if $skip_build; then
    echo "Scripts/fuzz.sh: using the conduit-fuzz already built in $scratch"
else
    echo "Scripts/fuzz.sh: building conduit-fuzz (libFuzzer + AddressSanitizer) in $scratch"
    # The filter never fails; the build's own status does (pipefail): a failed build must not
    # fall through to an older conduit-fuzz left in the scratch path.
    if ! swift build "${configuration[@]}" "${asan_fuzz_flags[@]}" --scratch-path "$scratch" --product conduit-fuzz 2>&1 |
        { grep -E "error|warning: |Build of product" | grep -v "Cannot export local symbol" || true; }; then
        echo "Scripts/fuzz.sh: the build failed (above)" >&2
        exit 1
    fi
fi
binary="$(swift build "${configuration[@]}" "${asan_fuzz_flags[@]}" --scratch-path "$scratch" --show-bin-path)/conduit-fuzz"
[ -x "$binary" ] || { echo "Scripts/fuzz.sh: the build failed (no $binary)" >&2; exit 1; }
echo "Scripts/fuzz.sh: built in $((SECONDS - start)) s"

available=($(CONDUIT_FUZZ_TARGET=list "$binary" 2>/dev/null))
if $list; then printf '%s\n' "${available[@]}"; exit 0; fi
[ ${#targets[@]} -gt 0 ] || targets=("${available[@]}")

for target in "${targets[@]}"; do
    if ! printf '%s\n' "${available[@]}" | grep -qx -- "$target"; then
        echo "Scripts/fuzz.sh: no target '$target' (targets: ${available[*]})" >&2; exit 2
    fi
done

# One target: its libFuzzer run, then a summary (or the finding) printed in one piece, so targets
# running side by side do not interleave their lines. Exit status 1 on a finding.
fuzz_target() {
    local target="$1" work="$scratch/corpus/$1" findings="Fuzz/findings/$1" log="$scratch/fuzz-$1.log"
    mkdir -p "$work" "$findings"
    local seeds=("Fuzz/corpus/$target")
    [ -d "Fuzz/regressions/$target" ] && seeds+=("Fuzz/regressions/$target")
    # SWIFT_BACKTRACE off: the runtime's backtracer, reading memory after a trap, trips
    # AddressSanitizer itself and buries the finding's message.
    if CONDUIT_FUZZ_TARGET="$target" SWIFT_BACKTRACE=enable=no ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1" \
        "$binary" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$findings/" "$work" "${seeds[@]}" >"$log" 2>&1; then
        echo "== $target (${limit[*]}) $(grep -E "^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)|^#[0-9]+.*DONE" "$log" | tr '\n' ' ')corpus: $(ls "$work" | wc -l) files"
        rmdir "$findings" 2>/dev/null || true
    else
        { echo "== $target (${limit[*]})"; tail -40 "$log"
          echo "Scripts/fuzz.sh: FINDING in $target: $(ls "$findings" | tr '\n' ' ') (under $findings; log $log)"; }
        return 1
    fi
}

failed=()
pids=()
names=()
reap() { # waits for the oldest running target
    if ! wait "${pids[0]}"; then failed+=("${names[0]}"); fi
    pids=("${pids[@]:1}"); names=("${names[@]:1}")
}
echo "Scripts/fuzz.sh: ${#targets[@]} targets, $jobs at a time"
for target in "${targets[@]}"; do
    [ ${#pids[@]} -ge "$jobs" ] && reap
    fuzz_target "$target" &
    pids+=($!); names+=("$target")
done
while [ ${#pids[@]} -gt 0 ]; do reap; done
if [ ${#failed[@]} -gt 0 ]; then
    echo "Scripts/fuzz.sh: findings in ${failed[*]}"
    exit 1
fi
echo "Scripts/fuzz.sh: ${#targets[@]} targets, no finding ($((SECONDS - start)) s in all)"

#!/usr/bin/env bash
# Builds the benchmarks and checks their allocation counts against Benchmarks/Thresholds/.
#
# Run from anywhere (CI calls it from the repository root): bash Benchmarks/run-ci.sh
#
# Exit status: 0 when every mallocCountTotal equals its threshold, or is lower (an improvement:
# a warning asks for the thresholds to be regenerated); non-zero on any regression, on a
# benchmark without a threshold file, or when the build or the run fails.
#
# Only mallocCountTotal is checked. It is the same on every pass, so the benchmarks run in quick
# mode (CONDUIT_BENCHMARK_QUICK=1: a few passes each); time metrics are neither run long enough
# to mean anything here nor gated.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT

echo "== Building the benchmarks and listing them"
swift package benchmark list --no-progress 2>&1 | tee "$log"

# Every benchmark must have a threshold file: the check silently skips benchmarks without one.
# (package-benchmark 1.38.1 looks thresholds up by the raw benchmark name, so names must not
# contain spaces or '/'.)
missing=0
benchmarks=0
while IFS=$'\t' read -r target name; do
    benchmarks=$((benchmarks + 1))
    if [[ ! -f "Thresholds/$target.$name.p90.json" ]]; then
        echo "error: no threshold file Thresholds/$target.$name.p90.json for benchmark '$name'" >&2
        missing=$((missing + 1))
    fi
done < <(awk '
    /^Target .* available benchmarks:$/ { target = $2; gsub("\047", "", target); next }
    target != "" && NF > 0 && $0 !~ /^\[/ { print target "\t" $0 }
    NF == 0 { target = "" }
' "$log")

if [[ $benchmarks -eq 0 ]]; then
    echo "error: no benchmarks listed" >&2
    exit 1
fi
if [[ $missing -gt 0 ]]; then
    echo "error: $missing benchmark(s) have no threshold; see Benchmarks/README.md to generate them" >&2
    exit 1
fi
echo "== $benchmarks benchmarks, each with a threshold file"

echo "== Checking mallocCountTotal against Thresholds/"
status=0
CONDUIT_BENCHMARK_QUICK=1 swift package benchmark thresholds check \
    --metric mallocCountTotal --no-progress 2>&1 | tee "$log" || status=$?

# A benchmark that crashed (a failed precondition, say) has no results and would not be compared.
if grep -qE "^(Process failed|Failed to run)" "$log"; then
    echo "error: a benchmark process failed (see above)" >&2
    exit 1
fi
# `swift package` reports every threshold deviation as exit status 1, better or worse alike;
# the tool's last words tell them apart.
if grep -q "is WORSE than the defined thresholds" "$log"; then
    echo "error: allocation regression (see the 'Deviations worse than threshold' tables above)" >&2
    exit 1
fi
if grep -q "is BETTER than the defined thresholds" "$log"; then
    echo "warning: fewer allocations than the thresholds allow. Regenerate them (Benchmarks/README.md)" >&2
    echo "warning: and commit Benchmarks/Thresholds/ so that the lower counts are enforced from now on." >&2
    exit 0
fi
if [[ $status -ne 0 ]] || ! grep -q "is EQUAL to the defined thresholds" "$log"; then
    echo "error: the threshold check did not complete (exit status $status)" >&2
    exit 1
fi
echo "== Allocation counts match the thresholds"

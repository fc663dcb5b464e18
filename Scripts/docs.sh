#!/usr/bin/env bash
# Builds the DocC documentation of every product module, warnings treated as errors, and counts
# the public declarations that have no documentation comment.
#
#   bash Scripts/docs.sh               archives in .build/documentation/MODULE.doccarchive
#   bash Scripts/docs.sh --skip-build  from the debug build Scripts/test.sh just made (CI); whether
#                                      it is current is not checked, only that it has every trait
#
# The build is Scripts/test.sh's (every trait, so ConduitSCTP, ConduitSRTP and ConduitKernelSCTP
# are documented with their sources: without their trait they compile empty; this needs the system
# libraries that `bash Scripts/test.sh` installs). Then Scripts/extract-symbol-graphs.py extracts
# each module's symbol graph from that build as swift-docc-plugin would, and `docc convert` (in the
# toolchain) builds its catalog. Through the plugin (`swift package generate-documentation`, which
# Package.swift allows while CONDUIT_DOCS is set) extraction compiled the product modules a second
# time: 267 compile jobs in CI, which the sanitizer builds beside this step waited for.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

modules=(Conduit ConduitCore ConduitARQ ConduitRooms ConduitRelayCore ConduitImpairment ConduitDriver ConduitTesting
         ConduitLoopback ConduitReliableTransport ConduitUDP ConduitSRTP ConduitSCTP ConduitKernelSCTP ConduitRelay ConduitConformance)
started=$SECONDS
graphs=.build/symbol-graphs
log=.build/docs.log

case "${1:-}" in
    ""|--skip-build) ;;
    *) echo "Scripts/docs.sh: unknown option $1 (only --skip-build)" >&2; exit 2 ;;
esac
if [ "${1:-}" != --skip-build ]; then
    echo "Scripts/docs.sh: swift build --build-tests --enable-all-traits (Scripts/test.sh's build)"
    swift build --build-tests --enable-all-traits
fi
rm -rf "$graphs"
python3 Scripts/extract-symbol-graphs.py "$graphs" "${modules[@]}" || {
    echo "Scripts/docs.sh: no symbol graphs (above); without --skip-build this script builds first" >&2
    exit 1
}

echo "Scripts/docs.sh: docc convert ${modules[*]} (warnings are errors)"
docc="$(dirname "$(readlink -f "$(command -v swift)")")/docc"
[ -x "$docc" ] || docc=docc
mkdir -p .build/documentation
: > "$log"
for module in "${modules[@]}"; do
    set +e
    "$docc" convert "Sources/$module/Documentation.docc" --fallback-display-name "$module" \
        --fallback-bundle-identifier "$module" --additional-symbol-graph-dir "$graphs/$module" \
        --output-path ".build/documentation/$module.doccarchive" --warnings-as-errors 2>&1 | tee -a "$log"
    status=${PIPESTATUS[0]}
    set -e
    if [ "$status" -ne 0 ] || grep -E "(warning|error): " "$log" >/dev/null; then
        echo "Scripts/docs.sh: the documentation of $module failed or warned (above)" >&2
        exit 1
    fi
done

echo "Scripts/docs.sh: counting undocumented public declarations"
python3 Scripts/undocumented.py "$graphs" --list
echo "Scripts/docs.sh: done in $((SECONDS - started)) s"

#!/usr/bin/env bash
# Builds the DocC documentation of every product module with swift-docc-plugin, warnings treated
# as errors, and counts the public declarations that have no documentation comment.
#
#   bash Scripts/docs.sh            archives in .build/plugins/Swift-DocC/outputs/MODULE.doccarchive
#
# Every trait is on (--enable-all-traits), so ConduitSCTP, ConduitSRTP and ConduitKernelSCTP are
# documented with their sources (without their trait they compile empty); this needs the system
# libraries that `bash Scripts/test.sh` installs. The plugin is a dependency only while
# CONDUIT_DOCS is set (see the end of Package.swift), so host apps never resolve it. Fails on any
# DocC warning and on any undocumented public declaration in a product module.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CONDUIT_DOCS=1

modules=(Conduit ConduitCore ConduitARQ ConduitRooms ConduitRelayCore ConduitImpairment ConduitDriver ConduitTesting
         ConduitLoopback ConduitReliableTransport ConduitUDP ConduitSRTP ConduitSCTP ConduitKernelSCTP ConduitRelay ConduitConformance)
targets=()
for module in "${modules[@]}"; do targets+=(--target "$module"); done

started=$SECONDS
log=.build/docs.log
mkdir -p .build
echo "Scripts/docs.sh: swift package generate-documentation ${modules[*]} (warnings are errors)"
set +e
swift package --enable-all-traits --disable-sandbox generate-documentation "${targets[@]}" \
    --warnings-as-errors 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ] || grep -E "(warning|error): " "$log" >/dev/null; then
    echo "Scripts/docs.sh: the documentation build failed or warned (above)" >&2
    exit 1
fi

echo "Scripts/docs.sh: counting undocumented public declarations"
# In the symbol graphs the plugin extracted for the documentation (public declarations, no second
# extraction); each product module's must be there.
graphs=(.build/*/extracted-symbols)
for module in "${modules[@]}"; do
    if ! ls "${graphs[@]/%//}"*/"$module"/"$module".symbols.json >/dev/null 2>&1; then
        echo "Scripts/docs.sh: no symbol graph for $module under ${graphs[*]}" >&2
        exit 1
    fi
done
python3 Scripts/undocumented.py "${graphs[0]}" --list
echo "Scripts/docs.sh: done in $((SECONDS - started)) s"

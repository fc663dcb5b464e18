#!/usr/bin/env bash
# Goodput through conduit impair: 80 ms RTT (40 ms each way), 5 ms jitter, loss each way L,
# reliable 1 KiB messages capped at 2 Mbit/s, for each transport URL scheme given.
# usage: bash Scripts/impair-compare.sh BIN SCHEME...   e.g. .build/release/conduit udp sctp+udp
# env LOSSES (default "0 0.02 0.05 0.10"), COUNT (messages, default 1500). Loopback only
# (127.0.0.1, ports from 47102 up); every process it starts is killed at the end of its run.
set -u
B=$1; shift
LOSSES=${LOSSES:-"0 0.02 0.05 0.10"}
COUNT=${COUNT:-1500}
port=47100
for scheme in "$@"; do
  for loss in $LOSSES; do
    port=$((port + 2)); up=$port; front=$((port + 1))
    $B listen "$scheme://127.0.0.1:$up" --expect $COUNT --timeout 150 >"${TMPDIR:-/tmp}/ic-listen.log" 2>&1 &
    lp=$!
    sleep 0.5
    $B impair --listen 127.0.0.1:$front --upstream 127.0.0.1:$up --delay-ms 40 --jitter-ms 5 --loss $loss --seed 7 >"${TMPDIR:-/tmp}/ic-impair.log" 2>&1 &
    ip=$!
    sleep 0.3
    out=$(timeout 120 $B send "$scheme://127.0.0.1:$front" --stream 100 --type reliable-message --size 1024 --count $COUNT --rate 2mbps --timeout 110 --json 2>&1 | tail -1)
    rc=$?
    kill $lp $ip 2>/dev/null; wait $lp $ip 2>/dev/null
    python3 - "$scheme" "$loss" "$rc" "$out" <<'PY'
import json,sys
scheme,loss,rc,out=sys.argv[1:5]
try:
    j=json.loads(out); bps=j["throughputBytesPerSecond"]*8
    print(f"{scheme:9s} loss {float(loss)*100:4.0f} %  goodput {bps/1e6:5.3f} Mbit/s = {bps/2e6*100:5.1f} % of the cap  sent {j['sent']}  {j['elapsedSeconds']:.1f} s  exit {rc}")
except Exception as e:
    print(scheme, loss, "exit", rc, out[:300])
PY
  done
done

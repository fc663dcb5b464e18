#!/usr/bin/env bash
# Two calls through one bottleneck of `conduit impair` (RATE, default 10 Mbit/s; 40 ms each way,
# so an 80 ms RTT), each sending COUNT reliable 1 KiB messages uncapped, started together. Prints
# each call's goodput while both ran (from its listener's 100 ms timeline, the first 2 s left out),
# their ratio, and how long datagrams queued at the bottleneck (largest and mean, client to
# upstream, the whole run, start-up included). A run of over 40 s (COUNT=40000: the listener's
# timeline covers the first minute) also gets the last 20 s both calls ran.
# usage: bash Scripts/impair-share.sh BIN [SCHEME]   e.g. .build/release/conduit udp
# env COUNT (default 15000), RATE (default 10mbps), CC (udp:// controller: bbr or newreno; default
# the transport's), QUEUE_MS (the bottleneck's buffer in ms of queueing, drop-tail; default never full). Loopback only (127.0.0.1, ports 47300-47302); every process it starts is ended.
set -u
B=$1
scheme=${2:-udp}
COUNT=${COUNT:-15000}
RATE=${RATE:-10mbps}
query=${CC:+?cc=$CC}
t=${TMPDIR:-/tmp}
front=47300
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null' EXIT
for n in 1 2; do
  $B listen "$scheme://127.0.0.1:$((front + n))$query" --expect "$COUNT" --timeout 240 --json >"$t/is-listen$n.log" 2>&1 &
  pids+=($!)
done
sleep 0.5
$B impair --listen 127.0.0.1:$front --upstream 127.0.0.1:$((front + 1)) --upstream 127.0.0.1:$((front + 2)) \
  --delay-ms 40 --rate "$RATE" ${QUEUE_MS:+--queue-ms "$QUEUE_MS"} --seed 7 >"$t/is-impair.log" 2>&1 &
impair=$!
sleep 0.3
senders=()
for n in 1 2; do
  $B send "$scheme://127.0.0.1:$front$query" --stream 100 --type reliable-message --size 1024 --count "$COUNT" \
    --timeout 220 --json >"$t/is-send$n.log" 2>&1 &
  senders+=($!)
done
status=0
for pid in "${senders[@]}"; do wait "$pid" || status=1; done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
pids=()
kill -INT $impair
wait $impair
python3 - "$t" "$status" <<'PY'
import json, sys
t, status = sys.argv[1], sys.argv[2]
last = lambda path: json.loads(open(path).read().strip().splitlines()[-1])
flows = [last(f"{t}/is-listen{n}.log")["bytesPer100Milliseconds"] for n in (1, 2)]
ends = [max(i for i, b in enumerate(f) if b > 0) + 1 for f in flows]
start, stop = 20, min(ends) - 5  # from 2 s in to 0.5 s before the first call ended
rates = [sum(f[start:stop]) * 8 / ((stop - start) / 10) / 1e6 for f in flows]
impair = last(f"{t}/is-impair.log")["clientToUpstream"]
print(f"calls ended after {ends[0] / 10:.1f} s and {ends[1] / 10:.1f} s; both ran {stop / 10:.1f} s")
print(f"goodput while both ran, {start / 10:.0f}-{stop / 10:.1f} s: {rates[0]:.2f} and {rates[1]:.2f} Mbit/s, "
      f"ratio {min(rates) / max(rates):.2f}, together {sum(rates):.2f} Mbit/s")
if stop - start > 400:  # a long run: also the last 20 s, once the probes have had time to converge
    tail = [sum(f[stop - 200:stop]) * 8 / 20 / 1e6 for f in flows]
    print(f"the last 20 s both ran: {tail[0]:.2f} and {tail[1]:.2f} Mbit/s, ratio {min(tail) / max(tail):.2f}")
print("per 5 s, Mbit/s:", "  ".join(f"{sum(flows[0][i:i + 50]) * 8 / 5e6:.1f}/{sum(flows[1][i:i + 50]) * 8 / 5e6:.1f}" for i in range(0, min(ends), 50)))
print(f"queueing at the bottleneck: at most {impair['maxQueueDelayMilliseconds']:.1f} ms, "
      f"mean {impair['meanQueueDelayMilliseconds']:.1f} ms, {impair.get('droppedAtBottleneck', 0)} dropped by a full buffer; "
      f"every message delivered and acknowledged: "
      f"{'yes' if status == '0' else 'NO'}")
PY

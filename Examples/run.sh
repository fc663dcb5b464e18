#!/usr/bin/env bash
# Runs the examples end to end, after `swift build --package-path Examples`: the whiteboard to
# completion (relay on udp://127.0.0.1, three peers; then on loopback, two), and the chat as two
# processes on 127.0.0.1 with a scripted exchange, checking what each side printed.
set -euo pipefail
cd "$(dirname "$0")"
bin=${EXAMPLES_BIN:-$(swift build --show-bin-path)}  # CI builds them in the package's own .build
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

expect_line() { # file line: the file has the line, or the run fails
  grep -qxF -- "$2" "$1" || { echo "error: no line '$2' in $1:"; cat "$1"; exit 1; }
}

echo "-- Whiteboard: relay on udp://127.0.0.1, 3 peers"
timeout 60 "$bin/Whiteboard" | tee "$work/whiteboard.log"
expect_line "$work/whiteboard.log" "every peer saw every other peer's strokes"
for peer in ana ben cleo; do grep -q "^$peer sees " "$work/whiteboard.log" || { echo "error: $peer saw no stroke"; exit 1; }; done

echo "-- Whiteboard: relay on loopback, 2 peers"
timeout 60 "$bin/Whiteboard" --relay loopback://board --peers 2 | tee "$work/whiteboard-loopback.log"
expect_line "$work/whiteboard-loopback.log" "every peer saw every other peer's strokes"

echo "-- Chat: bob listens, alice connects; each pipes two lines in"
printf 'hello from bob\nbob again\n' | timeout 60 "$bin/Chat" listen udp://127.0.0.1:0 --as bob > "$work/bob.log" 2>&1 &
bob=$!
for _ in $(seq 300); do grep -q '^listening on ' "$work/bob.log" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$work/bob.log")
[ -n "$url" ] || { echo "error: bob is not listening:"; cat "$work/bob.log"; exit 1; }
printf 'hello from alice\nalice again\n' | timeout 60 "$bin/Chat" connect "$url" --as alice > "$work/alice.log" 2>&1 \
  || { echo "error: alice's chat failed:"; cat "$work/alice.log"; exit 1; }
wait "$bob" || { echo "error: bob's chat failed:"; cat "$work/bob.log"; exit 1; }
echo "bob's side:"; cat "$work/bob.log"
echo "alice's side:"; cat "$work/alice.log"
expect_line "$work/bob.log" "connected to alice"
expect_line "$work/bob.log" "alice: hello from alice"
expect_line "$work/bob.log" "alice: alice again"
expect_line "$work/bob.log" "call ended"
expect_line "$work/alice.log" "connected to bob"
expect_line "$work/alice.log" "bob: hello from bob"
expect_line "$work/alice.log" "bob: bob again"
expect_line "$work/alice.log" "call ended"
echo "examples: all ran as expected"

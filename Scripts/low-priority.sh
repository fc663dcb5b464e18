#!/usr/bin/env bash
# Runs a command, and everything it starts, at the lowest CPU priority, so that it only takes
# the CPU time the rest of the machine leaves idle.
#
#   bash Scripts/low-priority.sh COMMAND [ARGUMENTS...]
#
# The command gets a session of its own, and that session's autogroup is niced to 19. With
# autogroups on (Linux's default), the scheduler first shares the CPU between sessions, and a
# process's nice value only ranks it within its session: a plain `nice -n 19 swift build` still
# took its full share beside CI's other steps (in a CI check of stop 28; `ps` also showed
# SwiftPM's compiler processes at nice 0). The command is niced too, for machines without
# autogroups. The exit status is the command's.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: bash Scripts/low-priority.sh COMMAND [ARGUMENTS...]" >&2; exit 2; }
exec setsid --wait bash -c 'echo 19 > /proc/self/autogroup 2>/dev/null || true; exec nice -n 19 "$@"' low-priority "$@"

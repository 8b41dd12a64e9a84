#!/bin/sh
# appstreams under spillway's prefetch window, with jitter: every checksum
# right, no hazard (races included) or fault in simgpu's report, the window
# really used (a run that never commits would prove nothing), and, in copy
# mode, changed chunks written back home.
# Each commit point waits on the host once (item 12 of issue 18: it waited
# again for the fingerprints' read-back), counted with simgpu's calls.
# Usage: appstreams.sh PROGRAM LIBSPILLWAY SIMGPU_DIR copy|green|late|coop|idle|destroy|flip
# SANITIZER_PRELOAD (meson, in a sanitized build): the sanitizer's runtime,
# which must come first in LD_PRELOAD, with spillway or without.
set -u
pre=${SANITIZER_PRELOAD:-}
prog=$1 lib=$2 simgpu=$3 mode=$4
# Late mode needs a window of three slots: then some commits happen at A's
# launches, with the chunk for the new stream copied in ahead.
window=32MiB
case $mode in late | idle | destroy) window=48MiB ;; esac
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
num() { sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" "$2" | head -n 1; }
calls() { sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" "$2" | tail -n 1; }
LD_PRELOAD="${pre:+$pre }$lib" LD_LIBRARY_PATH=$simgpu SIMGPU_JITTER=300 SIMGPU_MEM=512MiB \
SIMGPU_REPORT=$tmp/sg.json SPILLWAY_REPORT=$tmp/sw.json SPILLWAY_STATS_DIR=$tmp \
SPILLWAY_GPU_BUDGET=96MiB SPILLWAY_CHUNK=16MiB SPILLWAY_PREFETCH_BYTES=$window \
    "$prog" "$mode" >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
[ "$rc" = 0 ] || { echo "FAIL: exit $rc"; exit 1; }
[ "$(num hazards "$tmp/sg.json")" = 0 ] || { echo "FAIL: hazards"; grep -A3 hazard_list "$tmp/sg.json"; exit 1; }
[ "$(num faults "$tmp/sg.json")" = 0 ] || { echo "FAIL: faults"; exit 1; }
commits=$(( $(num prefetch_late "$tmp/sw.json") + $(num prefetches "$tmp/sw.json") ))
[ "$commits" -gt 0 ] || { echo "FAIL: the window was never used"; exit 1; }
# In copy and green modes stream B, in flip mode two sign bits, change buffers while
# they are in the window: those must have been copied home (and the checksums above prove the copies
# right).
[ "$mode" != copy ] && [ "$mode" != green ] && [ "$mode" != flip ] || [ "$(num bytes_written_back "$tmp/sw.json")" -gt 0 ] ||
    { echo "FAIL: changed chunks were never written back"; exit 1; }
# The host waits spillway made: all the waits simgpu saw, less the
# program's own. Each commit point and each demotion round waits once
# (safety_syncs), each move at most twice (its copy, its fingerprint).
waits=0
for f in cuStreamSynchronize cuCtxSynchronize cuEventSynchronize; do
    n=$(calls "$f" "$tmp/sg.json")
    waits=$((waits + ${n:-0}))
done
own=$(sed -n 's/^syncs \([0-9]*\)$/\1/p' "$tmp/out")
mine=$((waits - own))
moves=$(( $(num demotions "$tmp/sw.json") + $(num promotions "$tmp/sw.json") ))
allowed=$(( $(num safety_syncs "$tmp/sw.json") + 2 * moves ))
[ "$mine" -le "$allowed" ] ||
    { echo "FAIL: spillway waited $mine times, more than once per commit (at most $allowed)"; exit 1; }
echo "ok: $commits chunks through the window, no hazard, $mine waits of spillway's (at most $allowed)"

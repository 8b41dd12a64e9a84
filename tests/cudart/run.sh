#!/bin/sh
# Runs a real-runtime program (built by nvcc) on simgpu twice, both with
# random delays before every stream operation: plain, and under spillway
# with a GPU budget below its footprint. Both runs must succeed (the
# program checks itself against its host reference), print the same
# "result:" line, and
# leave simgpu's report without hazards or faults; under spillway its
# allocations must have been tracked and some chunks moved off the GPU,
# or the run proved nothing about spillway.
# With MEM, simgpu has only MEM under spillway, and a plain run with MEM
# must fail (the footprint does not fit: spillway is what makes it run);
# each FIELD of spillway's report must then be above 0.
# Usage: run.sh PROGRAM LIBSPILLWAY SIMGPU_DIR BUDGET [MEM [FIELD...]]
# Exit 77 (skip) only where the program could not be built: no nvcc or no
# libcudart (meson then passes a missing path).
# SANITIZER_PRELOAD (meson, in a sanitized build): the sanitizer's runtime,
# which must come first in LD_PRELOAD, with spillway or without.
set -u
pre=${SANITIZER_PRELOAD:-}
prog=$1 lib=$2 simgpu=$3 budget=$4 mem=${5:-1GiB}
shift 4; [ $# -gt 0 ] && shift
[ -x "$prog" ] || { echo "SKIP: $prog not built (nvcc or libcudart missing)"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
num() { sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" "$2" | head -n 1; }
fail() { echo "FAIL: $*"; exit 1; }
check_report() {
    [ -s "$1" ] || fail "$2: no simgpu report"
    [ "$(num hazards "$1")" = 0 ] || { grep -A5 hazard_list "$1"; fail "$2: hazards"; }
    [ "$(num faults "$1")" = 0 ] || fail "$2: faults"
}

LD_PRELOAD=$pre LD_LIBRARY_PATH=$simgpu SIMGPU_MEM=1GiB SIMGPU_JITTER=200 SIMGPU_SEED=2 SIMGPU_REPORT=$tmp/plain.json \
    "$prog" >"$tmp/plain.out" 2>&1
rc=$?
cat "$tmp/plain.out"
[ "$rc" = 0 ] || fail "plain run exited $rc"
check_report "$tmp/plain.json" "plain run"

if [ "$mem" != 1GiB ]; then
    LD_PRELOAD=$pre LD_LIBRARY_PATH=$simgpu SIMGPU_MEM=$mem "$prog" >"$tmp/small.out" 2>&1 &&
        fail "plain run fits in $mem: the test proves nothing"
    grep -qi "out of memory" "$tmp/small.out" || { cat "$tmp/small.out"; fail "plain run in $mem failed, not for memory"; }
fi

LD_PRELOAD="${pre:+$pre }$lib" LD_LIBRARY_PATH=$simgpu SIMGPU_MEM=$mem SIMGPU_JITTER=200 SIMGPU_SEED=3 \
SIMGPU_REPORT=$tmp/sw-sg.json SPILLWAY_REPORT=$tmp/sw.json SPILLWAY_STATS_DIR=$tmp \
SPILLWAY_GPU_BUDGET=$budget SPILLWAY_CHUNK=2MiB SPILLWAY_MIN_ALLOC=1MiB \
    "$prog" >"$tmp/sw.out" 2>&1
rc=$?
cat "$tmp/sw.out"
[ "$rc" = 0 ] || fail "run under spillway exited $rc"
check_report "$tmp/sw-sg.json" "run under spillway"
want=$(grep '^result:' "$tmp/plain.out")
got=$(grep '^result:' "$tmp/sw.out")
[ -n "$want" ] && [ "$want" = "$got" ] || fail "answers differ: '$want' plain, '$got' under spillway"
[ "$(num tracked_allocs_peak "$tmp/sw.json")" -gt 0 ] || fail "spillway tracked no allocation"
[ "$(num demotions "$tmp/sw.json")" -gt 0 ] || fail "nothing left the GPU: the budget did not bind"
for field in "$@"; do
    [ "$(num "$field" "$tmp/sw.json")" -gt 0 ] || fail "$field is 0 under spillway"
done
echo "ok: same answer plain and under spillway (budget $budget), no hazard, no fault"

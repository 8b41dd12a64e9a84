#!/bin/sh
# Runs wrappers (built against the real runtime, shared or static) under
# spillway and checks that each allocation and launch is seen exactly once
# although, with the shared runtime, every call passes both a runtime
# wrapper and a driver wrapper, and that cudaMemGetInfo is adjusted exactly
# once with SPILLWAY_MEMINFO=virtual.
# Usage: wrappers.sh PROGRAM LIBSPILLWAY SIMGPU_DIR
# Exit 77 (skip) only where the program could not be built (no nvcc or no
# libcudart).
# SANITIZER_PRELOAD (meson, in a sanitized build): the sanitizer's runtime,
# which must come first in LD_PRELOAD, with spillway or without.
set -u
pre=${SANITIZER_PRELOAD:-}
app=$1 lib=$2 simgpu=$3
[ -x "$app" ] || { echo "SKIP: $app not built (nvcc or libcudart missing)"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/out" "$tmp/report.json" 2>/dev/null; exit 1; }
field() { sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" "$tmp/report.json" | head -n 1; }

LD_PRELOAD=$pre LD_LIBRARY_PATH=$simgpu SIMGPU_MEM=1GiB "$app" >"$tmp/out" 2>&1 ||
    fail "wrappers without spillway"
grep -q 'total=1073741824$' "$tmp/out" || fail "physical total without spillway"

LD_PRELOAD="${pre:+$pre }$lib" LD_LIBRARY_PATH=$simgpu SIMGPU_MEM=1GiB SPILLWAY_STATS_DIR=$tmp \
SPILLWAY_HOST_BUDGET=64MiB SPILLWAY_MEMINFO=virtual SPILLWAY_REPORT=$tmp/report.json \
    "$app" >"$tmp/out" 2>&1 || fail "wrappers under spillway"
grep -q 'wrappers: ok launches=12 ' "$tmp/out" || fail "result line"
# 1 GiB of device plus the 64 MiB host budget, added once.
grep -q 'total=1140850688$' "$tmp/out" || fail "cudaMemGetInfo adjusted other than once"
[ "$(field launches)" = 12 ] || fail "launches counted $(field launches) times, want 12"
[ "$(field passthrough_allocs)" = 1 ] || fail "passthrough_allocs $(field passthrough_allocs), want 1"
[ "$(field tracked_allocs_peak)" = 3 ] || fail "tracked_allocs_peak $(field tracked_allocs_peak), want 3"
[ "$(field tracked_allocs)" = 0 ] || fail "tracked allocations left: $(field tracked_allocs)"
echo "ok: runtime and driver wrappers count each allocation and launch once"

#!/bin/sh
# Runs rtlocal (two plugins, each with its own runtime, loaded RTLD_LOCAL)
# without and under spillway: both runs must succeed, and under spillway
# each plugin's 4 MiB allocation is tracked (two runs of plugin a, one of b).
# Usage: local.sh RTLOCAL PLUGIN_A PLUGIN_B LIBSPILLWAY SIMGPU_DIR
# SANITIZER_PRELOAD (meson, in a sanitized build): the sanitizer's runtime,
# which must come first in LD_PRELOAD, with spillway or without.
set -u
pre=${SANITIZER_PRELOAD:-}
app=$1 a=$2 b=$3 lib=$4 simgpu=$5
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp/out" "$tmp/report.json" 2>/dev/null; exit 1; }
field() { sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" "$tmp/report.json" | head -n 1; }

LD_LIBRARY_PATH=$simgpu "$app" "$a" "$b" >"$tmp/out" 2>&1 || fail "rtlocal without spillway"
grep -q 'rtlocal: ok' "$tmp/out" || fail "result line without spillway"

LD_PRELOAD="${pre:+$pre }$lib" LD_LIBRARY_PATH=$simgpu SPILLWAY_STATS_DIR=$tmp \
SPILLWAY_REPORT=$tmp/report.json "$app" "$a" "$b" >"$tmp/out" 2>&1 ||
    fail "rtlocal under spillway"
grep -q 'rtlocal: ok' "$tmp/out" || fail "result line under spillway"
[ "$(field tracked_allocs_peak)" = 1 ] || fail "tracked_allocs_peak $(field tracked_allocs_peak), want 1"
[ "$(field launches)" = 3 ] || fail "launches $(field launches), want 3"
echo "ok: runtimes loaded RTLD_LOCAL each get their own calls"

#!/bin/sh
# refused.sh: swt-writes window-word under spillway where the captured
# read is served from a window copy (a 20 MiB budget, 2 MiB chunks, a
# window of 8 MiB given, so that it is kept: a window spillway sized would
# be given back before the capture, copying too little in the loops before
# it to repay its room, and the capture would read in place): the
# new graph node given that read's arguments must be refused, the log must
# say why, and the result must be the plain run's.
# Usage: refused.sh PROGRAM LIBSPILLWAY SIMGPU_DIR
# SANITIZER_PRELOAD (meson, in a sanitized build) comes first in LD_PRELOAD.
set -u
[ $# -eq 3 ] || { echo "usage: $0 PROGRAM LIBSPILLWAY SIMGPU_DIR" >&2; exit 2; }
prog=$1 lib=$2 simgpu=$3
pre=${SANITIZER_PRELOAD:-}
plain=$(LD_PRELOAD=$pre LD_LIBRARY_PATH=$simgpu SIMGPU_MEM=1GiB "$prog" window-word 2>&1) ||
    { echo "FAIL: plain run: $plain"; exit 1; }
out=$(env LD_PRELOAD="${pre:+$pre }$lib" LD_LIBRARY_PATH="$simgpu" SIMGPU_MEM=1GiB \
    SPILLWAY_GPU_BUDGET=20MiB SPILLWAY_CHUNK=2MiB SPILLWAY_PREFETCH_BYTES=8MiB \
    "$prog" window-word 2>&1) ||
    { echo "FAIL: under spillway: $out"; exit 1; }
echo "$out" | grep -q '^window-word: refused$' ||
    { echo "FAIL: the node was added:"; echo "$out"; exit 1; }
echo "$out" | grep -q "an address in spillway's streaming window" ||
    { echo "FAIL: the log does not say why:"; echo "$out"; exit 1; }
[ "$(echo "$out" | grep '^result:')" = "$(echo "$plain" | grep '^result:')" ] ||
    { echo "FAIL: result differs from the plain run's"; exit 1; }
echo "ok: refused and said, with the plain run's result"

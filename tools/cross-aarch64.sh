#!/bin/sh
# cross-aarch64.sh [--run] [BUILD_DIR]: builds libspillway for aarch64 Linux
# (GH200, GB200) with cross/aarch64-linux-gnu.ini and checks what came out:
# an AArch64 shared object exporting dlsym and the cu* hooks. Then, where
# qemu-user is installed (qemu-aarch64), runs the aarch64 mlp on the aarch64
# simgpu, plain and under the aarch64 libspillway, in three shapes that
# demote, stream through the window (rewritten launches, the fingerprint
# kernel) and replay a graph: each run must print result=match with the
# plain run's checksum, and spillway must have done what the shape asks.
# Where check is installed for aarch64 (check:arm64), the unit tests' pure
# suites run too. --run: fail without qemu-aarch64 or the unit tests rather
# than skip them. Needs Debian's gcc-aarch64-linux-gnu (and qemu-user and
# check:arm64 for the runs; .ci/run installs all three). Exit 0 built,
# checked (and run), 1 otherwise.
set -eu
cd "$(dirname "$0")/.."
must_run=0
if [ "${1:-}" = --run ]; then
    must_run=1
    shift
fi
dir=${1:-build-aarch64}
if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" --cross-file cross/aarch64-linux-gnu.ini
fi
ninja -C "$dir" src/libspillway.so tests/simgpu/libcuda.so.1 tests/apps/mlp
unit=$dir/tests/unit/test-unit
[ ! -f "$dir/build.ninja" ] || ! grep -q 'tests/unit/test-unit:' "$dir/build.ninja" ||
    ninja -C "$dir" tests/unit/test-unit
lib=$dir/src/libspillway.so
readelf=${READELF:-aarch64-linux-gnu-readelf}
"$readelf" -h "$lib" | grep -q 'Machine: *AArch64' || {
    echo "cross-aarch64: $lib is not an AArch64 object" >&2
    exit 1
}
syms=$("$readelf" --dyn-syms -W "$lib")
for s in dlsym cuMemAlloc_v2 cuLaunchKernel; do
    echo "$syms" | grep -qE " $s(@@[A-Z_0-9.]+)?\$" || {
        echo "cross-aarch64: $lib does not export $s" >&2
        exit 1
    }
done
echo "cross-aarch64: $lib built for AArch64"

qemu=$(command -v qemu-aarch64 || true)
# The aarch64 C library: multiarch's (libc6:arm64, which check:arm64
# brings) where installed, else the cross toolchain's, as qemu's -L root.
# Never both: the cross loader with multiarch's libraries hung mlp.
sysroot=/usr/aarch64-linux-gnu
if [ -e /lib/ld-linux-aarch64.so.1 ]; then
    emulate() { "$qemu" "$@"; }
else
    emulate() { "$qemu" -L "$sysroot" "$@"; }
fi
if [ -z "$qemu" ] || { [ ! -e /lib/ld-linux-aarch64.so.1 ] && [ ! -d "$sysroot" ]; }; then
    echo "cross-aarch64: no qemu-aarch64 (Debian's qemu-user) or no aarch64 C library: built, not run"
    [ "$must_run" = 0 ]
    exit
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -m 700 "$tmp/stats"
num() { sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" "$2" | head -n 1; }
fail() { echo "cross-aarch64: $*" >&2; exit 1; }
simgpu=$(cd "$dir/tests/simgpu" && pwd)
mlp=$dir/tests/apps/mlp

# run NAME BUDGET_MiB COUNTER MLP-ARGS...: plain, then under spillway with
# that budget; both must match, with one checksum, and spillway's report
# must show COUNTER above 0.
run() {
    name=$1 budget=$2 counter=$3
    shift 3
    emulate -E LD_LIBRARY_PATH="$simgpu" -E SIMGPU_MEM=1GiB \
        "$mlp" "$@" >"$tmp/plain" 2>&1 || { cat "$tmp/plain"; fail "$name: plain run failed"; }
    emulate -E LD_LIBRARY_PATH="$simgpu" -E SIMGPU_MEM=$((budget + 256))MiB \
        -E LD_PRELOAD="$(cd "$(dirname "$lib")" && pwd)/libspillway.so" \
        -E SPILLWAY_GPU_BUDGET=${budget}MiB -E SPILLWAY_REPORT="$tmp/sw.json" \
        -E SPILLWAY_STATS_DIR="$tmp/stats" \
        "$mlp" "$@" >"$tmp/sw" 2>&1 || { cat "$tmp/sw"; fail "$name: run under spillway failed"; }
    want=$(sed -n 's/.*\(checksum=[0-9a-fx]*\) result=match.*/\1/p' "$tmp/plain")
    got=$(sed -n 's/.*\(checksum=[0-9a-fx]*\) result=match.*/\1/p' "$tmp/sw")
    [ -n "$want" ] || { cat "$tmp/plain"; fail "$name: the plain run did not match its reference"; }
    [ "$got" = "$want" ] || { cat "$tmp/sw"; fail "$name: under spillway '$got', plain '$want'"; }
    n=$(num "$counter" "$tmp/sw.json")
    [ "${n:-0}" -gt 0 ] || fail "$name: $counter is ${n:-missing} under spillway"
    echo "cross-aarch64: $name ran under qemu-aarch64: $want, $counter $n"
}
run decode-streamed 32 rewritten_launches --layers 20 --width 1024 --streams 2 --steps 8
run segments-in-place 32 demotions --layers 20 --width 1024 --segments 20 --streams 2 --steps 6
run graph 32 launches_touching_host --layers 12 --width 1024 --graph --steps 6

# The unit tests, every suite but gate, in check's fork mode: the
# out-of-memory cases are left out (UNIT_NO_OOM: RLIMIT_AS would cap
# qemu's address space, not the program's). gate's handshake between a
# writer and readers (a sequentially consistent store, then a load) failed
# under qemu-user 7.2 on x86_64 and passes natively; ARMv8 orders a
# store-release before a later load-acquire, which qemu's translation to
# the host is not known to keep, so that suite says nothing here. check's
# time limits are ten times longer: racing threads run far slower emulated
# (stats_file's seqlock cases take a minute).
if [ ! -x "$unit" ]; then
    echo "cross-aarch64: no check for aarch64 (Debian's check:arm64): the unit tests not run"
    [ "$must_run" = 0 ]
    exit
fi
for suite in cost learn options pack policy policy_learned popularity replay rewrite scan spread \
    stats_file table tmap worth; do
    emulate -E CK_FORK=yes -E CK_TIMEOUT_MULTIPLIER=10 -E UNIT_NO_OOM=1 -E CK_RUN_SUITE=$suite "$unit" >"$tmp/unit" 2>&1 ||
        { cat "$tmp/unit"; fail "unit suite $suite failed under qemu-aarch64"; }
    echo "cross-aarch64: unit suite $suite under qemu-aarch64: $(tail -n 1 "$tmp/unit")"
done

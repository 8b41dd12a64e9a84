#!/bin/sh
# cross-aarch64.sh [--run] [BUILD_DIR]: builds libspillway for aarch64 Linux
# (GH200, GB200) with cross/aarch64-linux-gnu.ini and checks what came out:
# an AArch64 shared object exporting dlsym and the cu* hooks. Then, where
# qemu-user is installed (qemu-aarch64), runs the aarch64 mlp on the aarch64
# simgpu, plain and under the aarch64 libspillway, in three shapes that
# demote, stream through the window (rewritten launches, the fingerprint
# kernel) and replay a graph: each run must print result=match with the
# plain run's checksum, and spillway must have done what the shape asks.
# --run: fail without qemu-aarch64 rather than skip the runs. Needs
# Debian's gcc-aarch64-linux-gnu (and qemu-user for the runs; .ci/run
# installs both). Exit 0 built, checked (and run), 1 otherwise.
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
sysroot=/usr/aarch64-linux-gnu
if [ -z "$qemu" ] || [ ! -d "$sysroot" ]; then
    echo "cross-aarch64: no qemu-aarch64 (Debian's qemu-user) or no $sysroot: built, not run"
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
    "$qemu" -L "$sysroot" -E LD_LIBRARY_PATH="$simgpu" -E SIMGPU_MEM=1GiB \
        "$mlp" "$@" >"$tmp/plain" 2>&1 || { cat "$tmp/plain"; fail "$name: plain run failed"; }
    "$qemu" -L "$sysroot" -E LD_LIBRARY_PATH="$simgpu" -E SIMGPU_MEM=$((budget + 256))MiB \
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

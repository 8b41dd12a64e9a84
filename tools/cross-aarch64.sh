#!/bin/sh
# cross-aarch64.sh [BUILD_DIR]: builds libspillway for aarch64 Linux (GH200,
# GB200) with cross/aarch64-linux-gnu.ini and checks what came out: an
# AArch64 shared object exporting dlsym and the cu* hooks. Needs Debian's
# gcc-aarch64-linux-gnu (.ci/run installs it). Exit 0 built and checked,
# 1 otherwise.
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build-aarch64}
if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" --cross-file cross/aarch64-linux-gnu.ini
fi
ninja -C "$dir" src/libspillway.so
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

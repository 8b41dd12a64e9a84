#!/bin/sh
# sweep-layouts.sh BUILDDIR [LIB] [-- MLP-ARGS...]: the issue's model-like layouts on simgpu,
# default options and only a GPU budget of 40% of the weights. mlp with
# 12, 16 and 24 layers, square ones of 896..1536 floats (3.06..9 MiB) and
# three mixes of shapes (`mlp --widths`: 3.5..5 MiB, 4.5..7 MiB and
# 12..20 MiB layers, as a model's attention and MLP weights differ), the
# odd layers packed into allocator segments of 8 or 20 MiB (a third of the
# layers read only through a pointer table, two streams); 12 steps, the
# last 6 timed. Prints a markdown table: the layers' sizes, the step and
# its ratio to the link bound, (weights - budget) / 55 GB/s. Unlike
# bench-offload, budgets here are below 8 segments: the issue's
# proportions, not a deployment's. MLP-ARGS are added to every run: `--
# --graph` sweeps decode under a CUDA graph (the bound is the same).
set -eu
usage="usage: sweep-layouts.sh BUILDDIR [LIBSPILLWAY] [-- MLP-ARGS...]"
build=${1:?$usage}
shift
lib=$build/src/libspillway.so
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    lib=$1
    shift
fi
if [ $# -gt 0 ]; then
    [ "$1" = "--" ] || { echo "$usage" >&2; exit 2; }
    shift
fi

# The bytes of layers L of the dimensions cycling through list W (mlp.h):
# layer l is d(l+1) x d(l) floats. With ALL=1 the total, else "min-max" MiB.
layer_bytes() {
    awk -v L="$1" -v W="$2" -v all="$3" 'BEGIN {
        n = split(W, d, ",")
        for (l = 0; l < L; l++) {
            b = d[(l + 1) % n + 1] * d[l % n + 1] * 4
            sum += b
            if (l == 0 || b < lo) lo = b
            if (b > hi) hi = b
        }
        if (all) printf "%d", sum
        else if (lo == hi) printf "%.2f", lo / 1048576
        else printf "%.2f-%.2f", lo / 1048576, hi / 1048576
    }'
}

echo "| layers | widths | layer MiB | segments MiB | budget MiB | step us | x bound |"
echo "|--:|--:|--:|--:|--:|--:|--:|"
for layers in 12 16 24; do
    for widths in 896 1024 1152 1280 1536 1024,896,1280 768,1536,1024,1792 1536,2560,2048; do
        for seg in 8 20; do
            weights=$(layer_bytes "$layers" "$widths" 1)
            budget=$(awk -v w="$weights" 'BEGIN { printf "%d", w / 1048576 * 0.4 + 0.5 }')
            out=$(env LD_LIBRARY_PATH="$build/tests/simgpu" SIMGPU_MEM=$((budget + 256))MiB \
                LD_PRELOAD="$lib" SPILLWAY_GPU_BUDGET=${budget}MiB "$build/tests/apps/mlp" \
                --layers "$layers" --widths "$widths" --segments "$seg" --odd-segments \
                --streams 2 --steps 12 --time 6 "$@" 2>&1) || { echo "$out" >&2; exit 1; }
            echo "$out" | grep -q 'result=match' || { echo "$out" >&2; exit 1; }
            echo "$out" | awk -v l="$layers" -v w="$widths" -v s="$seg" -v b="$budget" \
                -v weights="$weights" -v sizes="$(layer_bytes "$layers" "$widths" 0)" '
                /step_ns=/ {
                    match($0, /step_ns=[0-9]+/); ns = substr($0, RSTART + 8, RLENGTH - 8)
                    bound = (weights - b * 1048576) / 55e3
                    printf "| %d | %s | %s | %d | %d | %.1f | %.3f |\n", l, w, sizes, s, b,
                        ns / 1e3, ns / 1e3 / bound
                }'
        done
    done
done

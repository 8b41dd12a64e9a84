#!/bin/sh
# sweep-layouts.sh BUILDDIR [LIB]: the model-like layouts on simgpu,
# default options and only a GPU budget of 40% of the weights. mlp with
# 12, 16 and 24 layers of 896..1536 floats square (3.06..9 MiB), the odd
# ones packed into allocator segments of 8 or 20 MiB (a third of the
# layers read only through a pointer table, two streams); 12 steps, the
# last 6 timed. Prints a markdown table: the step and its ratio to the
# link bound, (weights - budget) / 55 GB/s. Unlike bench-offload, budgets
# here are below 8 segments: the proportions, not a deployment's.
set -eu
build=${1:?usage: sweep-layouts.sh BUILDDIR [LIBSPILLWAY]}
lib=${2:-$build/src/libspillway.so}
echo "| layers | width | segments MiB | budget MiB | step us | x bound |"
echo "|--:|--:|--:|--:|--:|--:|"
for layers in 12 16 24; do
    for width in 896 1024 1152 1280 1536; do
        for seg in 8 20; do
            budget=$(awk -v l="$layers" -v w="$width" 'BEGIN { printf "%d", l * w * w * 4 / 1048576 * 0.4 + 0.5 }')
            out=$(env LD_LIBRARY_PATH="$build/tests/simgpu" SIMGPU_MEM=$((budget + 256))MiB \
                LD_PRELOAD="$lib" SPILLWAY_GPU_BUDGET=${budget}MiB "$build/tests/apps/mlp" \
                --layers "$layers" --width "$width" --segments "$seg" --odd-segments \
                --streams 2 --steps 12 --time 6 2>&1) || { echo "$out" >&2; exit 1; }
            echo "$out" | grep -q 'result=match' || { echo "$out" >&2; exit 1; }
            echo "$out" | awk -v l="$layers" -v w="$width" -v s="$seg" -v b="$budget" '
                /step_ns=/ {
                    match($0, /step_ns=[0-9]+/); ns = substr($0, RSTART + 8, RLENGTH - 8)
                    bound = (l * w * w * 4 - b * 1048576) / 55e3
                    printf "| %d | %d | %d | %d | %.1f | %.3f |\n", l, w, s, b, ns / 1e3, ns / 1e3 / bound
                }'
        done
    done
done

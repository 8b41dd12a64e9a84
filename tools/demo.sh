#!/usr/bin/env bash
# The demo: the MLP program on simgpu, first with a model that fits, then
# with one 2.5x bigger than the simulated GPU. Usage: tools/demo.sh [builddir]
set -u
build=${1:-build}
if [ ! -x "$build/tests/apps/mlp" ]; then
    echo "demo: $build/tests/apps/mlp not found; run: meson setup $build && ninja -C $build" >&2
    exit 2
fi
export LD_LIBRARY_PATH="$build/tests/simgpu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mlp="$build/tests/apps/mlp"

echo "== 1. a 64 MiB model (16 layers x 1024^2 floats) on a simulated 80 GiB GPU"
"$mlp" --layers 16 --width 1024 --steps 4 || exit 1

echo
echo "== 2. the same model on a simulated GPU of 24 MiB (the model is 2.7x the GPU)"
SIMGPU_MEM=24MiB "$mlp" --layers 16 --width 1024 --steps 4
rc=$?
if [ "$rc" -eq 2 ]; then
    echo "   -> out of memory, as expected without spillway (exit $rc)"
else
    echo "   -> unexpected exit status $rc" >&2
    exit 1
fi

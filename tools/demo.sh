#!/usr/bin/env bash
# The demo: the MLP program on simgpu (the simulated GPU). First a model
# that fits; then one 2.7x bigger than the GPU, which fails with
# out-of-memory on its own and runs correctly under spillway, with
# spillway-stat's view of it while it runs; last, a picture of its
# timeline (build/demo-timeline.png, when gnuplot is installed).
# Usage: tools/demo.sh [builddir]
set -u
build=${1:-build}
mlp=$build/tests/apps/mlp
spillway=$build/tools/spillway
for f in "$mlp" "$spillway" "$build/src/libspillway.so" "$build/tools/spillway-stat"; do
    if [ ! -e "$f" ]; then
        echo "demo: $f not found; run: meson setup $build && ninja -C $build" >&2
        exit 2
    fi
done
export LD_LIBRARY_PATH="$build/tests/simgpu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
stats=$(mktemp -d)
trap 'rm -rf "$stats"' EXIT
model=(--layers 16 --width 1024)

echo "== 1. a 64 MiB model (16 layers of 1024x1024 floats) on a simulated 80 GiB GPU"
"$mlp" "${model[@]}" --steps 4 || exit 1

echo
echo "== 2. the same model on a simulated GPU of 24 MiB, without spillway"
SIMGPU_MEM=24MiB "$mlp" "${model[@]}" --steps 4
rc=$?
[ "$rc" -eq 2 ] || { echo "   -> unexpected exit status $rc" >&2; exit 1; }
echo "   -> out of memory (exit $rc): the problem spillway removes"

echo
echo "== 3. the same, under spillway: spillway run -- $mlp ..."
SIMGPU_MEM=24MiB "$spillway" run --stats-dir "$stats" -- "$mlp" "${model[@]}" --steps 300 &
pid=$!
# Record its timeline from the moment its stats file appears.
for _ in $(seq 100); do
    [ -e "$stats/$pid.stats" ] && break
    sleep 0.05
done
"$spillway" stat --dir "$stats" "$pid" --record "$build/demo-timeline.csv" --watch 0.2 >/dev/null &
rec=$!
# Wait (at most ~10 s) until the model is loaded and running.
for _ in $(seq 100); do
    [ -n "$("$spillway" stat --dir "$stats" --json 2>/dev/null | grep '"launches": [1-9]')" ] && break
    sleep 0.1
done
echo "-- spillway stat (while it runs):"
"$spillway" stat --dir "$stats"
echo "-- spillway stat $pid:"
"$spillway" stat --dir "$stats" "$pid"
wait "$pid" || { echo "   -> mlp under spillway failed" >&2; exit 1; }
wait "$rec"

echo
if command -v gnuplot >/dev/null; then
    "$(dirname "$0")/spillway-plot.sh" "$build/demo-timeline.csv" "$build/demo-timeline.png" &&
        echo "== 4. its timeline, sampled every 0.2 s: $build/demo-timeline.png"
else
    echo "== 4. its timeline: $build/demo-timeline.csv (install gnuplot-nox for a picture)"
fi

#!/usr/bin/env bash
# The demo: the MLP program on simgpu (the simulated GPU). First a model
# that fits; then one 2.7x bigger than the GPU, which fails with
# out-of-memory on its own and runs correctly under spillway with no
# option, with spillway-stat's view of it while it runs; then the step
# times side by side (simgpu's virtual time: all-resident, spillway with
# no option, LRU, reading in place) against the link bound; last, a
# picture of its timeline (build/demo-timeline.png, with gnuplot).
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

# step MODE VAR=value...: one timed run of the model (3 warm-up steps,
# then 4 timed), its virtual step time in microseconds.
step() {
    env "$@" "$mlp" "${model[@]}" --steps 7 --time 3 2>/dev/null |
        sed -n 's/.* step_ns=\([0-9]*\).*/\1/p' | awk '{ printf "%.1f", $1 / 1000 }'
}
echo
echo "== 4. step times (simgpu's virtual time, 64 MiB model, 24 MiB GPU)"
res=$(step SIMGPU_MEM=80GiB)
on="LD_PRELOAD=$build/src/libspillway.so"
auto=$(step SIMGPU_MEM=24MiB "$on")
lru=$(step SIMGPU_MEM=24MiB "$on" SPILLWAY_POLICY=lru)
inplace=$(step SIMGPU_MEM=24MiB "$on" SPILLWAY_PREFETCH_BYTES=0)
# The bound: what must cross the link each step, the model less the GPU,
# at simgpu's 55 GB/s copy rate; never less than the all-resident step.
awk -v res="$res" -v auto="$auto" -v lru="$lru" -v inplace="$inplace" 'BEGIN {
    bound = (64 - 24) * 1048576 / 55 / 1000
    if (bound < res) bound = res
    printf "   %-42s %9s us\n", "all-resident (80 GiB GPU)", res
    printf "   %-42s %9s\n", "plain, 24 MiB GPU", "out of memory"
    printf "   %-42s %9s us  %.2fx the link bound\n", "spillway run, no option", auto, auto / bound
    printf "   %-42s %9s us  %.2fx\n", "LRU (SPILLWAY_POLICY=lru)", lru, lru / bound
    printf "   %-42s %9s us  %.2fx\n", "read in place (SPILLWAY_PREFETCH_BYTES=0)", inplace, inplace / bound
    printf "   %-42s %9.1f us  ((64 - 24) MiB at 55 GB/s)\n", "link bound", bound
}'

echo
if command -v gnuplot >/dev/null; then
    "$(dirname "$0")/spillway-plot.sh" "$build/demo-timeline.csv" "$build/demo-timeline.png" &&
        echo "== 5. its timeline, sampled every 0.2 s: $build/demo-timeline.png"
else
    echo "== 5. its timeline: $build/demo-timeline.csv (install gnuplot-nox for a picture)"
fi

#!/bin/sh
# Randomized differential runs (issue 16): each seed of sg-diff
# (tests/apps/diff.c) runs all-resident, without spillway, then under
# spillway in every mode below; every run must exit 0 and print the same
# line, and simgpu must report no hazard (races included) and no fault.
#
# Usage: diff.sh BUILD_DIR FIRST_SEED LAST_SEED [MODE...]
#   e.g. tests/spillway/diff.sh build 1 500            (a long run)
#        tests/spillway/diff.sh build 17 17 tiny      (one seed, one mode)
# Environment: DIFF_OPS (operations per run, 300), DIFF_CAP (live data
# bytes at most, MiB, 64), DIFF_EXTRA (more sg-diff options for every
# run, such as --loops). The GPU the modes leave is 3/8 of the cap, far
# below the footprint. Exits 0 when every run agreed, 1 otherwise; each
# failure is printed with the command that reproduces it.
#
# Modes:
#   oom      simgpu's memory below the footprint, no GPU budget
#            (SPILLWAY_GPU_BUDGET=none): spillway demotes when the driver
#            says out of memory
#   auto     simgpu's memory below the footprint, and nothing set: the
#            budget spillway picks, its window made when it binds
#   lru      SPILLWAY_POLICY=lru under a GPU budget
#   learned  the default policy under a GPU budget: the schedule, prefetch
#            and the streaming window; through cuGetProcAddress (--route
#            loader)
#   tiny     the smallest chunks: 64 KiB granularity, SPILLWAY_CHUNK and
#            SPILLWAY_MIN_ALLOC 64KiB, under a GPU budget
#   jitter   the learned budget with 2 MiB chunks and random delays before
#            every stream operation (SIMGPU_JITTER, seeded by the seed)
#   chunks   the learned budget with a SPILLWAY_CHUNK drawn by the seed:
#            2, 4, 8 or 16 MiB
#   remap    the learned budget with the remapping window
#            (SPILLWAY_REWRITE=0), given a quarter of the cap (its default,
#            a quarter of the budget, holds fewer than the two 2 MiB slots
#            it needs at a cap of 16 MiB: it would not be made)
#   window   the learned budget with SPILLWAY_PREFETCH_BYTES=25% given: a
#            window the user sizes serves every capture whole, where
#            spillway's own is given back before a capture with nothing
#            timed slower in place (sw_worth_capture), so that captures
#            copy into it
# Every mode runs sg-diff with --slices: kernels are given pointers
# anywhere in a buffer and read past the pointers other kernels were
# given, as CUDA allows (a kernel may touch any byte of the allocation its
# pointer points into).
set -u
[ $# -ge 3 ] || { echo "usage: $0 BUILD_DIR FIRST_SEED LAST_SEED [MODE...]" >&2; exit 2; }
build=$(cd "$1" && pwd) first=$2 last=$3
shift 3
modes=${*:-oom auto lru learned tiny jitter chunks remap window}
ops=${DIFF_OPS:-300} cap=${DIFF_CAP:-64} all=${DIFF_EXTRA:-}
gpu=$((cap * 3 / 8))MiB
prog=$build/tests/apps/sg-diff
lib=$build/src/libspillway.so
simgpu=$build/tests/simgpu
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -m 700 "$tmp/stats"

num() { sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" "$2" | head -n 1; }

# The settings of a mode, one NAME=value a word.
mode_env() {
    case $1 in
    resident) echo "" ;;
    oom) echo "SIMGPU_MEM=$gpu SPILLWAY_GPU_BUDGET=none" ;;
    auto) echo "SIMGPU_MEM=$gpu" ;;
    lru) echo "SPILLWAY_POLICY=lru SPILLWAY_GPU_BUDGET=$gpu" ;;
    learned) echo "SPILLWAY_GPU_BUDGET=$gpu" ;;
    tiny) echo "SIMGPU_GRANULARITY=64KiB SIMGPU_HOST_GRANULARITY=64KiB SPILLWAY_CHUNK=64KiB" \
        "SPILLWAY_MIN_ALLOC=64KiB SPILLWAY_GPU_BUDGET=$gpu" ;;
    jitter) echo "SIMGPU_JITTER=50 SIMGPU_SEED=$2 SPILLWAY_CHUNK=2MiB SPILLWAY_GPU_BUDGET=$gpu" ;;
    chunks) echo "SPILLWAY_CHUNK=$((2 << ($2 % 4)))MiB SPILLWAY_GPU_BUDGET=$gpu" ;;
    remap) echo "SPILLWAY_REWRITE=0 SPILLWAY_CHUNK=2MiB SPILLWAY_PREFETCH_BYTES=$((cap / 4))MiB SPILLWAY_GPU_BUDGET=$gpu" ;;
    window) echo "SPILLWAY_PREFETCH_BYTES=25% SPILLWAY_GPU_BUDGET=$gpu" ;;
    *) echo "diff.sh: unknown mode $1" >&2; exit 2 ;;
    esac
}

# Runs seed $1 in mode $2; leaves its line in $tmp/$2.line. Returns 1, after saying why, when the run
# failed or simgpu saw a hazard or fault.
run() {
    seed=$1 mode=$2
    settings=$(mode_env "$mode" "$seed") || exit 2
    preload=""
    # A sanitized build's runtime first (meson's SANITIZER_PRELOAD).
    [ "$mode" = resident ] || preload="LD_PRELOAD=${SANITIZER_PRELOAD:+$SANITIZER_PRELOAD:}$lib"
    route=direct
    [ "$mode" = learned ] && route=loader
    rm -f "$tmp/sg.json" "$tmp/sw.json"
    cmd="env LD_LIBRARY_PATH=$simgpu $preload $settings $prog --seed $seed --ops $ops --cap $cap --route $route --slices $all"
    # shellcheck disable=SC2086 # one word a setting
    env SIMGPU_REPORT="$tmp/sg.json" SPILLWAY_REPORT="$tmp/sw.json" SPILLWAY_STATS_DIR="$tmp/stats" \
        LD_LIBRARY_PATH="$simgpu" $preload $settings \
        "$prog" --seed "$seed" --ops "$ops" --cap "$cap" --route "$route" --slices $all \
        >"$tmp/$mode.line" 2>"$tmp/err"
    rc=$?
    why=""
    if [ $rc != 0 ]; then
        why="exit $rc: $(head -c 600 "$tmp/err")"
    elif [ ! -s "$tmp/sg.json" ]; then
        why="no simgpu report"
    elif [ "$(num hazards "$tmp/sg.json")" != 0 ]; then
        why="hazards: $(grep -A2 hazard_list "$tmp/sg.json" | head -c 600)"
    elif [ "$(num faults "$tmp/sg.json")" != 0 ]; then
        why="faults: $(num faults "$tmp/sg.json")"
    fi
    if [ "$mode" != resident ] && [ -s "$tmp/sw.json" ]; then
        d=$(num demotions "$tmp/sw.json")
        eval "dem_$mode=\$((dem_$mode + ${d:-0}))"
    fi
    [ -z "$why" ] && return 0
    echo "FAIL seed $seed mode $mode: $why"
    echo "  reproduce: $cmd"
    return 1
}

failed=0
for m in $modes; do eval "dem_$m=0"; done
seed=$first
while [ "$seed" -le "$last" ]; do
    before=$failed
    if ! run "$seed" resident; then
        failed=$((failed + 1))
        seed=$((seed + 1))
        continue
    fi
    for m in $modes; do
        run "$seed" "$m" || { failed=$((failed + 1)); continue; }
        if ! cmp -s "$tmp/resident.line" "$tmp/$m.line"; then
            echo "FAIL seed $seed mode $m: the line differs"
            echo "  resident: $(cat "$tmp/resident.line")"
            echo "  $m: $(cat "$tmp/$m.line")"
            echo "  reproduce: $cmd"
            failed=$((failed + 1))
        fi
    done
    [ $failed = "$before" ] && echo "seed $seed agrees in $modes"
    seed=$((seed + 1))
done
# A mode in which spillway never moved a chunk would test nothing.
for m in $modes; do
    eval "d=\$dem_$m"
    echo "mode $m: $d demotions"
    if [ "$d" = 0 ]; then
        echo "FAIL mode $m: spillway never demoted"
        failed=$((failed + 1))
    fi
done
[ $failed = 0 ] || { echo "$failed failures"; exit 1; }
echo "all runs agree"

#!/bin/sh
# compare-libs.sh: one gpu-offload-bench geometry under several builds of
# libspillway, each run COMPARE_RUNS times with SPILLWAY_LOG=info: a line
# per run (step time, prefetches, late copies, bytes streamed) and the
# window's log lines under it. For a decision that changed between
# leases: the 64 x 32 MiB window of docs/gpu-facts.md (2026-11-30).
#
#   tests/gpu/compare-libs.sh BUILD_DIR "GEOMETRY" LIB...
#
# BUILD_DIR holds tests/gpu/gpu-offload-bench; GEOMETRY is its flags
# ("--layers 64 --width 4096"; the regime is decode unless it names
# one); each LIB is a libspillway.so, one built at another commit:
#   git worktree add /tmp/wt-C C && cd /tmp/wt-C && meson setup build &&
#   ninja -C build src/libspillway.so
# The budget is --plan's, as in run-bench.sh. Exits 1 if a run failed,
# 2 on bad usage, 77 without a GPU.
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 3 ] || { echo "usage: $0 BUILD_DIR \"GEOMETRY\" LIB..." >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 2
geo=$2
shift 2
# shellcheck source=tests/gpu/gpu-env.sh
. "$here/gpu-env.sh"
gpu_clean_env
gpu_require_device
bench=$build/tests/gpu/gpu-offload-bench
[ -x "$bench" ] || { echo "error: $bench is missing (configure with nvcc, then ninja -C $build)"; exit 1; }
case " $geo " in *" --regime "*) ;; *) geo="--regime decode $geo" ;; esac
# $geo is a word list: split on purpose.
# shellcheck disable=SC2086
budget=$(kv spillway_budget "$("$bench" --plan $geo)")
[ -n "$budget" ] || { echo "error: gpu-offload-bench --plan $geo gave no budget"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
log=$tmp/run.log rep=$tmp/report.json
fails=0
echo "## gpu-offload-bench $geo, budget $budget ($(date -u '+%Y-%m-%d %H:%M UTC'), $(gpu_device))"
for lib in "$@"; do
  [ -f "$lib" ] || { echo "error: $lib is missing"; fails=$((fails + 1)); continue; }
  lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
  i=0
  while [ $i -lt "${COMPARE_RUNS:-2}" ]; do
    i=$((i + 1))
    rm -f "$rep"
    # shellcheck disable=SC2086
    timeout 90 env LD_PRELOAD="$lib" SPILLWAY_GPU_BUDGET="$budget" SPILLWAY_LOG=info \
      SPILLWAY_REPORT="$rep" "$bench" --mode resident $geo >"$log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || fails=$((fails + 1))
    echo
    echo "$lib run $i: exit $rc, $(grep '^bench:' "$log" | tail -n1 | grep -o 'step_us=[0-9.]*'),"\
      "prefetches $(jf "$rep" prefetches), late $(jf "$rep" prefetch_late), bytes streamed $(jf "$rep" bytes_streamed)"
    grep -iE 'window|repays|read in place' "$log" | cut -c1-300 | head -n 12 | sed 's/^/    /'
  done
done
[ $fails -eq 0 ]

#!/bin/sh
# verdicts.sh: one gpu-offload-bench run per geometry, plain and under
# spillway with SPILLWAY_LOG=info, printed as markdown: what spillway's
# timing decided on the real driver (the window's size, ranges read in
# place, the window's bar) beside each run's step time.
#
#   tests/gpu/verdicts.sh BUILD_DIR
#
# The budget is gpu-offload-bench --plan's, as in run-bench.sh. About 20 s
# on an H200. Exits 1 if a run failed, 77 without a GPU.
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 2
# shellcheck source=tests/gpu/gpu-env.sh
. "$here/gpu-env.sh"
gpu_clean_env
gpu_require_device
bench=$build/tests/gpu/gpu-offload-bench
lib=$build/src/libspillway.so
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
log=$tmp/run.log rep=$tmp/report.json
fails=0

echo "## What spillway's timing decided ($(date -u '+%Y-%m-%d %H:%M UTC'), $(gpu_device))"
for spec in "decode|" "prefill|" "decode|--layers 64 --width 4096 --pack 64" \
  "decode|--layers 128 --width 2048 --pack 2" "decode|--layers 64 --width 4096" \
  "decode|--layers 128 --width 2048"; do
  regime=${spec%%|*} geo=${spec#*|}
  # $geo is a word list: split on purpose.
  # shellcheck disable=SC2086
  budget=$(kv spillway_budget "$("$bench" --plan --regime "$regime" $geo)")
  for how in plain spillway; do
    if [ $how = spillway ]; then
      # shellcheck disable=SC2086
      timeout 90 env LD_PRELOAD="$lib" SPILLWAY_GPU_BUDGET="$budget" SPILLWAY_LOG=info \
        SPILLWAY_REPORT="$rep" "$bench" --mode resident --regime "$regime" $geo >"$log" 2>&1
    else
      # shellcheck disable=SC2086
      timeout 90 "$bench" --mode resident --regime "$regime" $geo >"$log" 2>&1
    fi
    rc=$?
    [ $rc -eq 0 ] || fails=$((fails + 1))
    echo
    echo "### $regime $geo, $how (exit $rc): $(grep '^bench:' "$log" | tail -n1)"
  done
  echo "ranges read in place by timing: $(grep -c 'is read in place' "$log"); prefetches" \
    "$(jf "$rep" prefetches), late $(jf "$rep" prefetch_late), bytes streamed $(jf "$rep" bytes_streamed)"
  echo '```'
  grep -v '^bench:' "$log" | grep -iE 'window|repays|read in place|period' | cut -c1-300 | head -n 25
  echo '```'
done
[ $fails -eq 0 ]

#!/bin/sh
# run-all.sh: everything tests/gpu has for a real GPU, in one command.
#
#   run-all.sh BUILD_DIR [--only correctness|bench]   (meson's gpu-all test)
#   run-all.sh --no-nvcc                              meson found no nvcc: skip
#
# BUILD_DIR is a meson build of this project configured with nvcc on PATH
# (it holds tests/gpu/gpu-* and src/libspillway.so). Two parts:
#
# 1. Correctness. Each program (gpu-custom, gpu-custom-static, gpu-cublas,
#    gpu-library, gpu-threads) checks its device results bit for bit
#    against a host reference; torch-eager, torch-graph and torch-train
#    (torch_check.py, PyTorch) check theirs against a float64 reference on
#    the CPU. Each prints a checksum and its footprint. It
#    runs once without spillway, then under
#      LD_PRELOAD=libspillway.so SPILLWAY_GPU_BUDGET=<footprint / 3>
#    once per variant in GPU_ALL_VARIANTS (default "learned lru noprefetch":
#    SPILLWAY_POLICY=learned, SPILLWAY_POLICY=lru, SPILLWAY_PREFETCH_BYTES=0).
#    A run passes when it exits 0 with result=match, prints no CUDA error
#    name, and, under spillway, has the plain run's checksum and a
#    SPILLWAY_REPORT with demotions > 0. A torch program whose plain run
#    exits 77 (no PyTorch, or it sees no GPU) is reported as skipped.
# 2. The offload benchmark: run-bench.sh BUILD_DIR (its own header says
#    what it runs and how its table reads).
#
# The report (markdown) goes to stdout and to GPU_ALL_OUT (default
# BUILD_DIR/gpu-all.md). GPU_ALL_TIMEOUT: seconds per run (default 300);
# GPU_SPILLWAY_ENV: extra VAR=value words for every run under spillway.
# Exits 0 if everything passed, 1 if anything failed, 77 where no GPU is
# usable. It never uses simgpu: it drops it from LD_LIBRARY_PATH.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/gpu-env.sh"

usage() {
  echo "usage: $0 BUILD_DIR [--only correctness|bench]" >&2
  exit 2
}

case "${1:-}" in
--no-nvcc) gpu_skip "nvcc was not found when the build was configured" ;;
"" | -*) usage ;;
esac
build=$(cd "$1" && pwd) || exit 2
shift
only=all
while [ $# -gt 0 ]; do
  case "$1" in
  --only)
    [ $# -ge 2 ] || usage
    only=$2
    shift 2
    ;;
  *) usage ;;
  esac
done
case $only in all | correctness | bench) ;; *) usage ;; esac

bin=$build/tests/gpu
lib=$build/src/libspillway.so
programs="gpu-custom gpu-custom-static gpu-cublas gpu-library gpu-threads"
torch_programs="torch-eager torch-graph torch-train"
variants=${GPU_ALL_VARIANTS:-learned lru noprefetch}
T=${GPU_ALL_TIMEOUT:-300}
sw_extra=${GPU_SPILLWAY_ENV:-}
report=${GPU_ALL_OUT:-$build/gpu-all.md}

gpu_clean_env
gpu_require_device
for p in $programs gpu-offload-bench; do
  [ -x "$bin/$p" ] || { echo "error: $bin/$p is missing: configure with nvcc on PATH, then ninja -C $build"; exit 1; }
done
[ -f "$lib" ] || { echo "error: $lib is missing: ninja -C $build"; exit 1; }
gpu_require_driver "$bin"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
: >"$report" || exit 1
fails=0

# run PROGRAM [VAR=value...]: runs a test program with those variables set,
# under the time limit: a binary in $bin, or torch-MODE (torch_check.py).
run() {
  run_p=$1
  shift
  case $run_p in
  torch-*) timeout "$T" env "$@" python3 "$here/torch_check.py" "${run_p#torch-}" ;;
  *) timeout "$T" env "$@" "$bin/$run_p" ;;
  esac
}

say() {
  printf '%s\n' "$*" | tee -a "$report"
}

# keep LOG TITLE: keep the end of a failed run's output for after the table.
keep() {
  {
    echo
    echo "$2:"
    echo
    echo '```'
    tail -n 20 "$1"
    echo '```'
  } >>"$tmp/failed.md"
}

# row PROGRAM RUN BUDGET EXIT RESULT CHECKSUM SAME REPORT TIME VERDICT
row() {
  if [ -n "$8" ] && [ -f "$8" ]; then
    sw="$(jf "$8" demotions) | $(jf "$8" promotions) | $(jf "$8" prefetches) | $(jf "$8" launches_touching_host) | $(jf "$8" failed_moves)"
  else
    sw="- | - | - | - | -"
  fi
  say "| $1 | $2 | $3 | $4 | $5 | $6 | $7 | $sw | $9 | ${10} |"
}

correctness() {
  say ""
  say "## Correctness without and under spillway"
  say ""
  say "| program | run | budget MiB | exit | result | checksum | same | demotions | promotions | prefetches | launches on host | failed moves | time s | verdict |"
  say "|---|---|--:|--:|---|---|---|--:|--:|--:|--:|--:|--:|---|"
  for p in $programs $torch_programs; do
    log=$tmp/$p.plain.log
    run "$p" >"$log" 2>&1
    rc=$?
    if [ $rc -eq 77 ]; then
      row "$p" plain - 77 - - - "" - "skipped: $(sed -n 's/.*skip: //p' "$log" | head -n1)"
      continue
    fi
    line=$(grep "^$p: result=" "$log" | tail -n1)
    res=$(kv result "$line")
    sum=$(kv checksum "$line")
    fp=$(kv footprint "$line")
    errs=$(cuda_errors "$log")
    verdict=ok
    if [ $rc -ne 0 ] || [ "$res" != match ] || [ -n "$errs" ] || [ -z "$fp" ]; then
      verdict="FAIL${errs:+ ($errs)}"
    fi
    row "$p" plain - "$rc" "${res:-none}" "${sum:--}" - "" "$(kv time_s "$line")" "$verdict"
    if [ "$verdict" != ok ]; then
      fails=$((fails + 1))
      keep "$log" "$p, plain run"
      continue
    fi
    budget=$((fp / 3))
    for v in $variants; do
      case $v in
      learned) venv=SPILLWAY_POLICY=learned ;;
      lru) venv=SPILLWAY_POLICY=lru ;;
      noprefetch) venv=SPILLWAY_PREFETCH_BYTES=0 ;;
      *)
        echo "error: unknown variant $v in GPU_ALL_VARIANTS (learned, lru, noprefetch)"
        exit 2
        ;;
      esac
      log=$tmp/$p.$v.log
      rep=$tmp/$p.$v.json
      # $sw_extra is a word list: split on purpose.
      # shellcheck disable=SC2086
      run "$p" LD_PRELOAD="$lib" SPILLWAY_GPU_BUDGET="$budget" SPILLWAY_REPORT="$rep" \
        $venv $sw_extra >"$log" 2>&1
      rc=$?
      line=$(grep "^$p: result=" "$log" | tail -n1)
      res=$(kv result "$line")
      vsum=$(kv checksum "$line")
      errs=$(cuda_errors "$log")
      dem=$(jf "$rep" demotions)
      same=no
      [ -n "$vsum" ] && [ "$vsum" = "$sum" ] && same=yes
      verdict=ok
      if [ $rc -ne 0 ] || [ "$res" != match ] || [ -n "$errs" ] || [ $same != yes ]; then
        verdict="FAIL${errs:+ ($errs)}"
      elif [ -z "$dem" ]; then
        verdict="FAIL (no SPILLWAY_REPORT)"
      elif [ "$dem" -eq 0 ]; then
        verdict="FAIL (no demotions)"
      fi
      row "$p" "spillway $v" $((budget / 1048576)) "$rc" "${res:-none}" "${vsum:--}" "$same" "$rep" \
        "$(kv time_s "$line")" "$verdict"
      if [ "$verdict" != ok ]; then
        fails=$((fails + 1))
        keep "$log" "$p, spillway $v"
      fi
    done
  done
  say ""
  say "- torch-MODE: \`python3 $here/torch_check.py MODE\` (4 GiB of weights for eager and graph, 1 GiB for train)."
  say "- plain: \`$bin/PROGRAM\` (default sizes); spillway: \`LD_PRELOAD=$lib SPILLWAY_GPU_BUDGET=<footprint/3> SPILLWAY_REPORT=... $bin/PROGRAM\` with, per variant, SPILLWAY_POLICY=learned, SPILLWAY_POLICY=lru or SPILLWAY_PREFETCH_BYTES=0${sw_extra:+, plus $sw_extra}."
  say "- same: the checksum equals the plain run's. Counters are from SPILLWAY_REPORT; launches on host = launches_touching_host."
  if [ -f "$tmp/failed.md" ]; then
    say ""
    say "### Output of the failed runs (last lines)"
    tee -a "$report" <"$tmp/failed.md"
  fi
}

dev=$(gpu_device)
say "# spillway on a real GPU: tests/gpu/run-all.sh"
say ""
say "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
say "- device, driver: ${dev:-unknown (no nvidia-smi)}"
if [ "$only" = all ]; then
  say "- command: \`tests/gpu/run-all.sh $build\`"
else
  say "- command: \`tests/gpu/run-all.sh $build --only $only\`"
fi
say "- host: $(uname -r); $(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"

if [ "$only" != bench ]; then
  correctness
fi
if [ "$only" != correctness ]; then
  say ""
  { sh "$here/run-bench.sh" "$build" 2>&1; echo $? >"$tmp/bench.rc"; } | tee -a "$report"
  brc=$(cat "$tmp/bench.rc")
  if [ "$brc" = 77 ]; then
    gpu_skip "run-bench.sh skipped"
  elif [ "$brc" != 0 ]; then
    fails=$((fails + 1))
  fi
fi

say ""
if [ $fails -gt 0 ]; then
  say "run-all: $fails failure(s); report: $report"
  exit 1
fi
say "run-all: everything passed; report: $report"
exit 0

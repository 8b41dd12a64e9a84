#!/bin/sh
# run-bench.sh: the offload benchmark on a real GPU, every mode of
# gpu-offload-bench in one go, printed as a markdown table.
#
#   run-bench.sh BUILD_DIR [BENCH_FLAGS...]
#
# BENCH_FLAGS go to every run (sizes: --layers --width --dtype --batch
# --offload-layers --lookahead --warmup --steps; not --mode or --regime).
# Environment:
#   BENCH_REGIMES     regimes to run (default "decode graph prefill"; graph
#                     has no accelerate row: its copies cannot be captured)
#   BENCH_MODES       modes (default: all six)
#   OVERHEAD_ROUNDS   alternating runs of resident and spillway-idle per
#                     regime for the overhead measurement (default 3; 0: skip)
#   BENCH_TIMEOUT     seconds per run (default 240)
#   GPU_SPILLWAY_ENV  extra VAR=value words for every run under spillway
#
# Each run is its own process. The spillway rows run the resident code
# path under LD_PRELOAD=libspillway.so with SPILLWAY_GPU_BUDGET = the
# bytes spillway tracks minus the offloaded bytes (gpu-offload-bench
# --plan), so every offloading column holds the same bytes on the host.
# "spillway-idle" runs it under the preload with no budget: nothing is
# offloaded, which measures spillway's overhead (target: at most 2%).
#
# Exits 0 when every run succeeded and the spillway rows computed the same
# output as resident; 1 otherwise; 77 without a GPU. Times are reported,
# not judged.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/gpu-env.sh"

[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [BENCH_FLAGS...]" >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 2
shift
extra="$*"
bench=$build/tests/gpu/gpu-offload-bench
lib=$build/src/libspillway.so
regimes=${BENCH_REGIMES:-decode graph prefill}
modes=${BENCH_MODES:-resident spillway spillway-noprefetch uva prefetch accelerate}
rounds=${OVERHEAD_ROUNDS:-3}
T=${BENCH_TIMEOUT:-240}
sw_extra=${GPU_SPILLWAY_ENV:-}

gpu_clean_env
gpu_require_device
[ -x "$bench" ] || { echo "error: $bench is missing (configure with nvcc, then ninja -C $build)"; exit 1; }
[ -f "$lib" ] || { echo "error: $lib is missing"; exit 1; }
gpu_require_driver "$build/tests/gpu"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0

# run LOG MODE REGIME [VAR=value...]: one bench run; prints its bench: line.
# On failure it keeps the end of the output for the report and returns 1.
run() {
  log=$1 mode=$2 regime=$3
  shift 3
  # $extra and $sw_extra are word lists: split on purpose.
  # shellcheck disable=SC2086
  timeout "$T" env "$@" "$bench" --mode "$mode" --regime "$regime" $extra >"$log" 2>&1
  rc=$?
  line=$(grep '^bench: ' "$log" | tail -n1)
  errs=$(cuda_errors "$log")
  if [ $rc -ne 0 ] || [ -z "$line" ] || [ -n "$errs" ]; then
    {
      echo
      echo "$mode, $regime: exit $rc${errs:+ ($errs)}; last lines:"
      echo
      echo '```'
      tail -n 15 "$log"
      echo '```'
    } >>"$tmp/failed.md"
    return 1
  fi
  printf '%s\n' "$line"
}

# spillway_env REGIME MODE REPORT: the env words of a spillway run.
spillway_env() {
  case $2 in
  spillway) echo "LD_PRELOAD=$lib SPILLWAY_GPU_BUDGET=$budget SPILLWAY_REPORT=$3 $sw_extra" ;;
  spillway-noprefetch)
    echo "LD_PRELOAD=$lib SPILLWAY_GPU_BUDGET=$budget SPILLWAY_PREFETCH_BYTES=0 SPILLWAY_REPORT=$3 $sw_extra" ;;
  spillway-idle) echo "LD_PRELOAD=$lib SPILLWAY_REPORT=$3 $sw_extra" ;;
  *) ;;
  esac
}

median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

dev=$(gpu_device)
echo "## Offload benchmark (gpu-offload-bench)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "- device, driver: ${dev:-unknown (no nvidia-smi)}"
echo "- command: \`tests/gpu/run-bench.sh $build${extra:+ $extra}\` (regimes: $regimes)"
echo "- each row: \`gpu-offload-bench --mode MODE --regime REGIME${extra:+ $extra}\`; spillway rows add" \
  "\`LD_PRELOAD=$lib SPILLWAY_GPU_BUDGET=<budget>\` (and \`SPILLWAY_PREFETCH_BYTES=0\`)"

for regime in $regimes; do
  # shellcheck disable=SC2086
  plan=$("$bench" --plan --regime "$regime" $extra) || { echo "error: $bench --plan failed"; exit 1; }
  budget=$(kv spillway_budget "$plan")
  echo
  echo "### $regime: layers=$(kv layers "$plan") width=$(kv width "$plan") batch=$(kv batch "$plan")" \
    "dtype=$(kv dtype "$plan") pack=$(kv pack "$plan"); model $(($(kv model_bytes "$plan") / 1048576)) MiB," \
    "offloaded $(($(kv offload_bytes "$plan") / 1048576)) MiB, spillway budget $((budget / 1048576)) MiB"
  echo
  echo "| mode | step ms | tokens/s | bound ms | x bound | peak MiB | H2D GB/s | output | spillway demoted / prefetched / late / rewritten launches / TMA descriptors |"
  echo "|---|--:|--:|--:|--:|--:|--:|---|---|"
  res_us='' res_sum=''
  for mode in $modes; do
    [ "$regime.$mode" = graph.accelerate ] && continue
    rep=$tmp/$regime.$mode.json
    # shellcheck disable=SC2046
    if ! line=$(run "$tmp/$regime.$mode.log" "$mode" "$regime" $(spillway_env "$regime" "$mode" "$rep")); then
      echo "| $mode | FAILED | | | | | | | |"
      fails=$((fails + 1))
      continue
    fi
    us=$(kv step_us "$line")
    sum=$(kv checksum "$line")
    if [ "$mode" = resident ]; then
      res_us=$us res_sum=$sum off=0
    else
      off=$(kv offload_bytes "$line")
    fi
    out="-"
    if [ -n "$res_sum" ]; then
      if [ "$sum" = "$res_sum" ]; then out="= resident"; else out="DIFFERS"; fi
    fi
    swcol="-"
    case $mode in
    spillway*)
      if [ -n "$(jf "$rep" demotions)" ]; then
        swcol="$(jf "$rep" bytes_demoted | awk '{ printf "%.0f MiB", $1 / 1048576 }') / $(jf "$rep" prefetches) / $(jf "$rep" prefetch_late) / $(jf "$rep" rewritten_launches) / $(jf "$rep" descriptors_recognised)"
      else
        swcol="no report"
        fails=$((fails + 1))
      fi
      if [ "$out" = DIFFERS ]; then fails=$((fails + 1)); fi
      ;;
    esac
    # bound = max(resident step, offloaded bytes / H2D bandwidth); us.
    awk -v mode="$mode" -v us="$us" -v res="${res_us:-0}" -v off="$off" \
      -v bw="$(kv h2d_gb_s "$line")" -v tps="$(kv tokens_s "$line")" \
      -v peak="$(kv peak_mib "$line")" -v out="$out" -v sw="$swcol" 'BEGIN {
        xfer = bw > 0 ? off / (bw * 1e3) : 0
        bound = res > xfer ? res : xfer
        if (mode == "resident") bound = us
        printf "| %s | %.3f | %.1f | %.3f | %s | %.0f | %.1f | %s | %s |\n", mode, us / 1e3, tps,
          bound / 1e3, (bound > 0 ? sprintf("%.2f", us / bound) : "-"), peak, bw, out, sw
      }'
  done
done

echo
echo "- step: median over the timed steps of one forward pass, from events on the compute stream; tokens/s = batch / step."
echo "- bound: max(resident step, offloaded bytes / H2D), H2D being that run's 256 MiB pinned cudaMemcpyAsync (median of 5); x bound = step / bound."
echo "- peak: device memory in use (cudaMemGetInfo), sampled after setup and every step, above what the process held before the model."
echo "- output: the last step's output checksum against resident's (the same weights and inputs in every mode; a spillway row that differs is a failure)."
echo "- prefetch mode holds its --lookahead slot buffers on the device on top of the resident layers (see peak); spillway's prefetch window lies inside its budget."

if [ "$rounds" -gt 0 ]; then
  echo
  echo "### spillway's overhead with nothing offloaded (target: at most 2%)"
  echo
  echo "$rounds alternating runs each of resident without and with \`LD_PRELOAD=$lib\` and no budget (spillway-idle); median of the runs' median steps."
  echo
  echo "| regime | resident ms | spillway-idle ms | overhead | demotions | target |"
  echo "|---|--:|--:|--:|--:|---|"
  for regime in $regimes; do
    a='' b='' dem=0 bad=''
    i=0
    while [ $i -lt "$rounds" ]; do
      i=$((i + 1))
      rep=$tmp/idle.$regime.$i.json
      line=$(run "$tmp/ovh.$regime.$i.res.log" resident "$regime") || bad=1
      a="$a $(kv step_us "$line")"
      # shellcheck disable=SC2046
      line=$(run "$tmp/ovh.$regime.$i.idle.log" spillway "$regime" $(spillway_env "$regime" spillway-idle "$rep")) || bad=1
      b="$b $(kv step_us "$line")"
      d=$(jf "$rep" demotions)
      [ -n "$d" ] || bad=1
      dem=$((dem + ${d:-0}))
    done
    if [ -n "$bad" ]; then
      echo "| $regime | FAILED | | | | |"
      fails=$((fails + 1))
      continue
    fi
    # shellcheck disable=SC2086
    ma=$(median $a)
    # shellcheck disable=SC2086
    mb=$(median $b)
    awk -v r="$regime" -v a="$ma" -v b="$mb" -v d="$dem" 'BEGIN {
      o = (b / a - 1) * 100
      printf "| %s | %.3f | %.3f | %+.2f%% | %d | %s |\n", r, a / 1e3, b / 1e3, o, d, (o <= 2 ? "PASS" : "MISS")
    }'
  done
fi

if [ -f "$tmp/failed.md" ]; then
  echo
  echo "### Output of the failed runs"
  cat "$tmp/failed.md"
fi
echo
if [ $fails -gt 0 ]; then
  echo "run-bench: $fails failure(s)"
  exit 1
fi
echo "run-bench: every run succeeded"
exit 0

#!/bin/sh
# lease.sh: what a short GPU lease is for, in one command, most valuable
# part first (issue "On a real GPU: one prepared script").
#
#   tests/gpu/lease.sh BUILD_DIR OUT_DIR [SECONDS]
#
# LEASE_PARTS (default "correctness cudart probe bench pack chunk2m") picks and
# orders the parts; GPU_ALL_VARIANTS, BENCH_MODES, OVERHEAD_ROUNDS pass to
# the scripts they name. The whole default run took 378 s on an H100
# (2026-11-26), the correctness part alone about 190 s.
#
# BUILD_DIR: a meson build of this project made with nvcc on PATH (it may
# have been built on another x86-64 machine and carried over). OUT_DIR gets
# one file per part, written as the part runs, so that a run cut off still
# returns what it measured. SECONDS (default 420) bounds the whole run: each
# part gets its own limit, never more than what is left.
#
# Parts:
#   env.txt          the GPU, driver, toolkit and libraries found
#   correctness.md   spillway's own kernels on the driver first (gpu-kernels:
#                    the fused look and way home against the two in turn),
#                    then tests/gpu programs plain and under spillway
#                    (run-all.sh --only correctness; variants learned and
#                    noprefetch)
#   cudart.md        the real-runtime programs of tests/cudart, shared and
#                    static, plain and under spillway with 2 MiB chunks
#                    (extent also under a graph)
#   gpu-facts.txt    the open driver facts (run-probe.sh; its log, the same
#                    report, is kept only when it failed: probe-log.txt)
#   bench.md         the offload benchmark: decode, graph, prefill
#   pack.md          the benchmark again with layers sharing allocations:
#                    64 x 32 MiB in one buffer (llama.cpp), 128 x 8 MiB in
#                    16 MiB segments (PyTorch's caching allocator)
#   chunk2m.md       correctness again with SPILLWAY_CHUNK=2MiB, if time is left
#   compare.md       only where named in LEASE_PARTS: COMPARE_GEOMETRY (default
#                    "--layers 64 --width 4096") under each library in
#                    LEASE_LIBS (paths, built at other commits) and this
#                    build's, twice each (compare-libs.sh)
#   parts.txt        each part's exit status and time
# (At most eight files: all a lease brings back; chunk2m.md is the ninth
# only when probe-log.txt is not kept.) Exits 0 when every part ran and passed, 1 otherwise, 77 with no GPU.
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR [SECONDS]" >&2; exit 2; }
build=$(cd "$1" && pwd) || exit 2
out=$2
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
total=${3:-420}
parts=${LEASE_PARTS:-correctness cudart probe bench pack chunk2m}
start=$(date +%s)
fails=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

. "$here/gpu-env.sh"
gpu_clean_env
gpu_require_device

# The programs were linked with an rpath to the build machine's toolkit;
# where this one keeps libcudart or libcublas elsewhere (a Python wheel),
# add that directory.
for so in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
  ldd "$build/tests/gpu/gpu-cublas" 2>/dev/null | grep -q "$so => not found" || continue
  d=$(find /usr/local /opt /usr/lib -name "$so" 2>/dev/null | head -n1)
  [ -n "$d" ] && LD_LIBRARY_PATH="$(dirname "$d")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"

left() {
  echo $((total - ($(date +%s) - start)))
}

# part NAME CAP COMMAND...: runs one part for at most CAP seconds (less if
# less is left), its output to OUT_DIR/NAME; notes its exit and time.
part() {
  name=$1 cap=$2
  shift 2
  l=$(left)
  [ "$cap" -gt "$l" ] && cap=$l
  if [ "$cap" -lt 20 ]; then
    echo "part $name: not run, ${l}s left" | tee -a "$out/parts.txt"
    return
  fi
  t0=$(date +%s)
  case $(command -v "$1") in
  /*) timeout "$cap" "$@" >"$out/$name" 2>&1 ;;
  *) "$@" >"$out/$name" 2>&1 ;; # a function here: its commands have their own limits
  esac
  rc=$?
  echo "part $name: exit $rc in $(($(date +%s) - t0))s (limit ${cap}s)" | tee -a "$out/parts.txt"
  [ $rc -eq 0 ] || fails=$((fails + 1))
  return $rc
}

environment() {
  date -u '+date: %Y-%m-%d %H:%M UTC'
  nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max \
    --format=csv,noheader
  nvcc --version 2>/dev/null | tail -n1
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd "$build/tests/gpu/gpu-cublas" | grep -E 'cuda|cublas'
  ldd "$build/src/libspillway.so"
  uname -r
  grep -m1 '^model name' /proc/cpuinfo
}

# cudart PROGRAM BUDGET [VAR=value]: one tests/cudart program plain, then
# under spillway with BUDGET, 2 MiB chunks and 1 MiB tracked allocations as
# run.sh runs it on simgpu, both with the variable given; one markdown row.
cudart() {
  p=$build/tests/cudart/$1
  rep=$tmp/cudart-$1.json
  plain=$(timeout 60 env ${3:+"$3"} "$p" 2>&1)
  prc=$?
  sw=$(timeout 60 env ${3:+"$3"} LD_PRELOAD="$build/src/libspillway.so" SPILLWAY_GPU_BUDGET="$2" \
    SPILLWAY_CHUNK=2MiB SPILLWAY_MIN_ALLOC=1MiB SPILLWAY_REPORT="$rep" "$p" 2>&1)
  src=$?
  want=$(printf '%s\n' "$plain" | grep '^result:')
  got=$(printf '%s\n' "$sw" | grep '^result:')
  dem=$(jf "$rep" demotions)
  verdict=ok
  if [ $prc -ne 0 ] || [ $src -ne 0 ] || [ -z "$want" ] || [ "$want" != "$got" ]; then
    verdict=FAIL
  elif [ "${dem:-0}" -eq 0 ]; then
    verdict="FAIL (no demotions)"
  fi
  echo "| $1${3:+ ($3)} | $2 | $prc | $src | ${want:-none} | ${got:-none} | ${dem:--} | $(jf "$rep" rewritten_launches) | $verdict |"
  if [ "$verdict" != ok ]; then
    # shellcheck disable=SC2016 # backquotes: markdown, not expansion
    printf '\n```\n%s\n--- under spillway ---\n%s\n```\n\n' \
      "$(printf '%s\n' "$plain" | tail -n 8)" "$(printf '%s\n' "$sw" | tail -n 15)"
    return 1
  fi
}

# The offload benchmark with packed layers: decode and graph, the peers
# beside spillway, no overhead rounds (bench.md has them); half the part's
# limit (cap, set by part) for each geometry.
bench_pack() {
  bad=0
  for geometry in "--layers 64 --width 4096 --pack 64" "--layers 128 --width 2048 --pack 2"; do
    # shellcheck disable=SC2086 # the geometry is a word list
    timeout "$((cap / 2))" env BENCH_REGIMES="decode graph" OVERHEAD_ROUNDS=0 BENCH_TIMEOUT=60 \
      BENCH_MODES="resident spillway spillway-noprefetch uva prefetch" \
      sh "$here/run-bench.sh" "$build" $geometry || bad=$((bad + 1))
  done
  [ $bad -eq 0 ]
}

cudart_all() {
  echo "| program | budget | plain exit | spillway exit | plain result | spillway result | demotions | rewritten launches | verdict |"
  echo "|---|---|--:|--:|---|---|--:|--:|---|"
  bad=0
  for form in shared static; do
    for pb in extent:12MiB eager:12MiB graph:12MiB mallocasync:12MiB threads:8MiB; do
      cudart "${pb%%:*}-$form" "${pb#*:}" || bad=$((bad + 1))
    done
    cudart "extent-$form" 12MiB EXTENT_FORM=graph || bad=$((bad + 1))
  done
  [ $bad -eq 0 ]
}

# spillway's own kernels alone, then the programs under spillway: both run,
# and the part fails if either does. Their limits add up to the part's 240 s
# (a function gets none from part()).
correctness_all() {
  timeout 30 "$build/tests/gpu/gpu-kernels"
  k=$?
  timeout 210 env GPU_ALL_VARIANTS="${GPU_ALL_VARIANTS:-learned noprefetch}" GPU_ALL_TIMEOUT=90 \
    GPU_ALL_OUT="$tmp/correctness.md" sh "$here/run-all.sh" "$build" --only correctness
  a=$?
  [ $k -eq 0 ] && [ $a -eq 0 ]
}

part env.txt 30 environment
for p in $parts; do
  case $p in
  correctness) part correctness.md 240 correctness_all ;;
  cudart) part cudart.md 90 cudart_all ;;
  probe)
    part probe-log.txt 150 env GPU_FACTS_OUT="$out/gpu-facts.txt" sh "$here/run-probe.sh" \
      "$build/tests/gpu/probe" "$build/tests/gpu/libgpu-trace-preload.so" &&
      rm -f "$out/probe-log.txt"
    ;;
  bench) part bench.md 150 env OVERHEAD_ROUNDS="${OVERHEAD_ROUNDS:-2}" BENCH_TIMEOUT=60 sh "$here/run-bench.sh" "$build" ;;
  pack) part pack.md 150 bench_pack ;;
  chunk2m)
    part chunk2m.md 120 env GPU_ALL_VARIANTS=learned GPU_ALL_TIMEOUT=60 GPU_SPILLWAY_ENV=SPILLWAY_CHUNK=2MiB \
      GPU_ALL_OUT="$tmp/chunk2m.md" sh "$here/run-all.sh" "$build" --only correctness
    ;;
  compare)
    # LEASE_LIBS is a word list of paths: split on purpose.
    # shellcheck disable=SC2086
    part compare.md 150 sh "$here/compare-libs.sh" "$build" \
      "${COMPARE_GEOMETRY:---layers 64 --width 4096}" ${LEASE_LIBS:-} "$build/src/libspillway.so"
    ;;
  *) echo "lease: unknown part $p (correctness cudart probe bench pack chunk2m compare)" | tee -a "$out/parts.txt" ;;
  esac
done

echo "lease: $fails part(s) failed or were cut off; $(left)s of ${total}s left" | tee -a "$out/parts.txt"
[ $fails -eq 0 ]

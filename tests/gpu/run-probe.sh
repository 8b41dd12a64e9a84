#!/bin/sh
# run-probe.sh: measure the open CUDA facts (docs/gpu-facts.md) on a real GPU.
#
#   run-probe.sh PROBE PRELOAD REPORT   as meson's gpu-probe test runs it
#   run-probe.sh --no-nvcc              meson found no nvcc: skip
#   run-probe.sh                        standalone: build with nvcc and cc into
#                                       $GPU_BUILD_DIR, report to ./gpu-facts.txt
#
# GPU_FACTS_OUT, if set, is the report's path. Exits 77 (meson's skip) where
# no GPU is usable. Each probe section runs in its own process, so a crash or
# a dead context (--unmap-in-flight) costs only that section; its exit code
# is recorded in the report as section.NAME.exit.
set -u
SKIP=77

skip() {
  echo "SKIP: $*"
  exit $SKIP
}

case "${1:-}" in
--no-nvcc) skip "nvcc was not found when the build was configured" ;;
esac

# The real driver only: no simgpu on the library path, no interposer.
unset LD_PRELOAD
clean=
old_ifs=$IFS
IFS=:
for d in ${LD_LIBRARY_PATH:-}; do
  case "$d" in
  "" | *simgpu*) continue ;;
  esac
  [ "$d" = "${SPILLWAY_SIMGPU_DIR:-}" ] && continue
  clean="${clean:+$clean:}$d"
done
IFS=$old_ifs
if [ -n "$clean" ]; then export LD_LIBRARY_PATH="$clean"; else unset LD_LIBRARY_PATH; fi

# Cheap checks first: a device node, then nvidia-smi where it is installed.
ls /dev/nvidia[0-9]* >/dev/null 2>&1 || skip "no /dev/nvidiaN: no GPU here"
if command -v nvidia-smi >/dev/null 2>&1; then
  timeout 30 nvidia-smi -L >/dev/null 2>&1 || skip "nvidia-smi -L fails"
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

if [ $# -ge 2 ]; then
  probe=$1
  preload=$2
  report=${GPU_FACTS_OUT:-${3:-$PWD/gpu-facts.txt}}
else
  # Standalone build; keep the flags in step with meson.build.
  here=$(cd "$(dirname "$0")" && pwd)
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  [ -x "$nvcc" ] || skip "nvcc not found"
  cuda=$(cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd)
  out=${GPU_BUILD_DIR:-${TMPDIR:-/tmp}/spillway-gpu-probe}
  mkdir -p "$out" || exit 1
  probe=$out/probe
  preload=$out/libgpu-trace-preload.so
  report=${GPU_FACTS_OUT:-$PWD/gpu-facts.txt}
  echo "building into $out"
  "$nvcc" -O2 -std=c++17 -cudart shared \
    -gencode arch=compute_80,code=sm_80 \
    -gencode arch=compute_90,code=sm_90 \
    -gencode arch=compute_90,code=compute_90 \
    -Xcompiler -Wall,-Wextra -Xlinker "-rpath=$cuda/lib64" \
    -o "$probe" "$here/probe.cu" -lcuda -ldl || exit 1
  cc -std=gnu11 -D_GNU_SOURCE -O2 -foptimize-sibling-calls -fPIC -shared \
    -Wall -Wextra -isystem "$cuda/include" \
    -o "$preload" "$here/trace_preload.c" -ldl -lpthread || exit 1
fi

# The decisive check: the real libcuda.so.1 initialises and sees a device.
timeout 60 "$probe" --check >"$tmp/check" 2>&1
rc=$?
[ $rc -eq 0 ] || skip "no usable driver (probe --check exit $rc): $(grep -v '^# ==' "$tmp/check" | tr '\n' ' ')"

: >"$report" || exit 1

# run NAME SECONDS COMMAND...: one section, appended to the report.
run() {
  name=$1
  secs=$2
  shift 2
  echo "# ---- $name: $*" >>"$report"
  timeout "$secs" "$@" >>"$report" 2>"$tmp/err"
  rc=$?
  sed 's/^/# stderr: /' "$tmp/err" >>"$report"
  echo "section.$name.exit=$rc" >>"$report"
  echo "$name: exit $rc"
}

{
  echo "# spillway GPU facts, written by tests/gpu/run-probe.sh"
  echo "# key=value; '#' lines are comments; GB/s are 1e9 bytes per second"
  echo "host.kernel=$(uname -r)"
  echo "host.cpu=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/.*: //')"
  echo "host.numa_nodes=$(find /sys/devices/system/node -maxdepth 1 -name 'node[0-9]*' 2>/dev/null | wc -l)"
  if command -v nvidia-smi >/dev/null 2>&1; then
    timeout 30 nvidia-smi --format=csv,noheader \
      --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.current,pcie.link.width.current \
      2>/dev/null | head -1 | awk -F', ' '{
        print "smi.name=" $1; print "smi.driver_version=" $2
        print "smi.pcie_gen_max=" $3; print "smi.pcie_width_max=" $4
        print "smi.pcie_gen_current=" $5; print "smi.pcie_width_current=" $6 }'
  fi
} >>"$report"

run info 30 "$probe" --info
run params 30 "$probe" --params
run granularity 30 "$probe" --granularity
run numa_create 30 "$probe" --numa-create
run alloc_range 30 "$probe" --alloc-range
# Each section is its own process, so the unmap sections, which may kill
# their context, need not come last; they come early as the most wanted.
run unmap_device 30 "$probe" --unmap-in-flight=device
run unmap_host 30 "$probe" --unmap-in-flight=host
run vmm_cost 60 "$probe" --vmm-cost
run vmm_batch 30 "$probe" --vmm-batch
run vmm_sizes 60 "$probe" --vmm-sizes
run bandwidth 120 "$probe" --bandwidth
run gemm 120 "$probe" --gemm
run gemm_batch 120 "$probe" --gemm-batch
# env execs the probe, so only the probe carries the preload.
run runtime_calls 30 env TRACE_OUT="$tmp/trace" LD_PRELOAD="$preload" "$probe" --runtime-calls
[ -f "$tmp/trace" ] && cat "$tmp/trace" >>"$report"

echo "report: $report"
cat "$report"
# Measurements are reported, not judged; fail only if the basics broke.
grep -q '^section.info.exit=0$' "$report"

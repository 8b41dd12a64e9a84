# gpu-env.sh: sourced by run-all.sh and run-bench.sh (POSIX sh).
# The same rules as run-probe.sh: the real driver only, and exit 77
# (meson's skip) where no GPU is usable.

SKIP=77

gpu_skip() {
  echo "SKIP: $*"
  exit $SKIP
}

# No interposer, and no simgpu on the library path: these scripts set
# LD_PRELOAD themselves, for the runs that want it.
gpu_clean_env() {
  unset LD_PRELOAD
  gpu_clean=
  gpu_old_ifs=$IFS
  IFS=:
  for d in ${LD_LIBRARY_PATH:-}; do
    case "$d" in
    "" | *simgpu*) continue ;;
    esac
    [ "$d" = "${SPILLWAY_SIMGPU_DIR:-}" ] && continue
    gpu_clean="${gpu_clean:+$gpu_clean:}$d"
  done
  IFS=$gpu_old_ifs
  if [ -n "$gpu_clean" ]; then export LD_LIBRARY_PATH="$gpu_clean"; else unset LD_LIBRARY_PATH; fi
  # spillway's settings come only from the runs that set them (meson's
  # SPILLWAY_SIMGPU_DIR too: spillway would warn about an unknown name).
  for v in $(env | sed -n 's/^\(SPILLWAY_[A-Z_]*\)=.*/\1/p'); do
    unset "$v"
  done
}

# Cheap checks first: a device node, then nvidia-smi where it is installed.
gpu_require_device() {
  ls /dev/nvidia[0-9]* >/dev/null 2>&1 || gpu_skip "no /dev/nvidiaN: no GPU here"
  if command -v nvidia-smi >/dev/null 2>&1; then
    timeout 30 nvidia-smi -L >/dev/null 2>&1 || gpu_skip "nvidia-smi -L fails"
  fi
}

# gpu_require_driver BINDIR: the decisive check, with the programs built
# here: probe --check refuses simgpu, gpu-custom --check needs the CUDA 13
# runtime to see a device.
gpu_require_driver() {
  if [ -x "$1/probe" ]; then
    gpu_out=$(timeout 60 "$1/probe" --check 2>&1) ||
      gpu_skip "no usable driver (probe --check): $(printf '%s' "$gpu_out" | grep -v '^# ==' | tr '\n' ' ')"
  fi
  gpu_out=$(timeout 60 "$1/gpu-custom" --check 2>&1) ||
    gpu_skip "no usable driver (gpu-custom --check): $(printf '%s' "$gpu_out" | tr '\n' ' ')"
}

# "NAME, DRIVER" of GPU 0, from nvidia-smi; empty without it.
gpu_device() {
  command -v nvidia-smi >/dev/null 2>&1 &&
    timeout 30 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n1
}

# kv KEY LINE: the value of KEY=VALUE in a line of space-separated pairs.
kv() {
  printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n1
}

# jf REPORT FIELD: a numeric field of a SPILLWAY_REPORT file (empty if none).
jf() {
  sed -n "s/^ *\"$2\": \([0-9][0-9]*\),\{0,1\}\$/\1/p" "$1" 2>/dev/null | head -n1
}

# cuda_errors LOG: the first CUDA, runtime or cuBLAS error names in a log.
cuda_errors() {
  grep -oE 'CUDA_ERROR_[A-Z_]+|cudaError[A-Z][A-Za-z]*|CUBLAS_STATUS_[A-Z_]+' "$1" |
    grep -v '^CUBLAS_STATUS_SUCCESS$' | sort -u | head -n3 | tr '\n' ' ' | sed 's/ $//'
}

#!/usr/bin/env bash
# Builds the fuzz harnesses of tests/fuzz with clang's libFuzzer, AddressSanitizer
# and UndefinedBehaviorSanitizer, and runs each for a bounded time. Fails
# (exit 1) when any harness finds a crash, a failed check or a leak; the
# input that did it is left in tests/fuzz/crashes/<harness>/, to be kept
# there (the meson test fuzz-<harness> replays it from then on) once src/
# is fixed.
#
#   tools/fuzz.sh [SECONDS [HARNESS...]]
#
# SECONDS per harness, default 60 (what CI runs); HARNESS: any of the names
# below, default all, one after another. A longer search is the same
# command with more seconds: tools/fuzz.sh 3600.
#
# The seed corpus in tests/fuzz/corpus/<harness>/ is read, never written:
# inputs the search finds go to build-fuzz/corpus/<harness>/ (FUZZ_BUILD
# names another directory), which later runs start from too. To keep a
# few of them as seeds, minimise them into the seed corpus by hand:
#   build-fuzz/fuzz-options -merge=1 tests/fuzz/corpus/options build-fuzz/corpus/options
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

secs=${1:-60}
[ $# -gt 0 ] && shift
all=(options statsfile scan pointers tmap)
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=("${all[@]}")
out=${FUZZ_BUILD:-$root/build-fuzz}
cc=${FUZZ_CC:-clang}

# The sources each harness links: only the code it exercises, built with
# the sanitizers (the pure core and the stats file format need no CUDA).
sources() {
    case "$1" in
    options) echo src/core/options.c ;;
    statsfile) echo src/stats_file.c ;;
    scan) echo src/core/scan.c ;;
    pointers) echo src/core/scan.c src/core/table.c src/core/learn.c ;;
    tmap) echo src/core/tmap.c src/core/scan.c ;;
    *) echo "fuzz.sh: no harness named $1 (known: ${all[*]})" >&2; return 1 ;;
    esac
}

if ! command -v "$cc" >/dev/null; then
    echo "fuzz.sh: $cc not found (apt-get install clang libclang-rt-dev)" >&2
    exit 1
fi
mkdir -p "$out"
# -fno-sanitize-recover: UBSan's findings abort like ASan's, so libFuzzer
# records them as crashes instead of printing and going on.
flags=(-g -O1 -std=gnu11 -D_GNU_SOURCE "-fsanitize=fuzzer,address,undefined"
       -fno-sanitize-recover=all -Isrc -Iinclude -Itests/fuzz)

failed=()
summary=()
for h in "${harnesses[@]}"; do
    srcs=$(sources "$h")
    # shellcheck disable=SC2086 # srcs is a list of paths without spaces
    "$cc" "${flags[@]}" -o "$out/fuzz-$h" "tests/fuzz/fuzz_$h.c" $srcs -lpthread
    mkdir -p "$out/corpus/$h" "tests/fuzz/crashes/$h"
    dict=()
    [ -f "tests/fuzz/$h.dict" ] && dict=(-dict="tests/fuzz/$h.dict")
    log="$out/fuzz-$h.log"
    echo "== fuzz-$h: ${secs}s (log: $log)"
    # The scratch corpus first (libFuzzer writes new inputs only there),
    # then the seeds and every crash kept so far, which run first.
    if "$out/fuzz-$h" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 "${dict[@]}" -artifact_prefix="tests/fuzz/crashes/$h/" \
        "$out/corpus/$h" "tests/fuzz/corpus/$h" "tests/fuzz/crashes/$h" >"$log" 2>&1; then
        :
    else
        failed+=("$h")
        tail -n 40 "$log"
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1 || true)
    summary+=("$(printf '%-10s %12s execs %8s/s  %s' "$h" "${execs:-?}" "${rate:-?}" "$cov")")
done

printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz.sh: crashes in: ${failed[*]} (inputs in tests/fuzz/crashes/)" >&2
    exit 1
fi

#!/bin/sh
# differ.sh: a test program (extent.c, writes.c) plain, then under
# spillway at each chunk size and budget; every run must exit 0, print the
# plain run's result line, and leave simgpu's report without hazards
# (races included) or faults, and some launch must have met host memory
# (read in place or from a window copy), or the budget proved nothing.
#
# Usage: differ.sh PROGRAM LIBSPILLWAY SIMGPU_DIR "BUDGET..." [streams|window-streams] -- ARG...
#   BUDGET...: GPU budgets, each run at every chunk size;
#   streams: also fail unless the window served some launch (its argument
#   words rewritten) at every chunk size, so that the rewriting itself was
#   tested there (a loop agreed on too early once lost the window for
#   good at 2 MiB and default chunks);
#   window-streams: the same, for the window of a size given alone (a
#   graph captured before any eager step is served by no window of
#   spillway's sizing: sw_worth_capture);
#   ARG...: the program's arguments.
# Chunks: 2 MiB, 16 MiB and the default, the default again with up to 50
# us of random delay before every stream operation (SIMGPU_JITTER), and
# the default with SPILLWAY_PREFETCH_BYTES=25% given: a window the user
# sizes serves every capture whole, so that captures copy into it.
# SANITIZER_PRELOAD (meson, in a sanitized build) comes first in LD_PRELOAD.
set -u
[ $# -ge 5 ] || { echo "usage: $0 PROGRAM LIBSPILLWAY SIMGPU_DIR \"BUDGET...\" [streams|window-streams] -- ARG..." >&2; exit 2; }
prog=$1 lib=$2 simgpu=$3 budgets=$4
shift 4
streams=""
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    case $1 in
    streams) streams=all ;;
    window-streams) streams=window ;;
    *) echo "differ.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
[ $# -gt 0 ] && shift
pre=${SANITIZER_PRELOAD:-}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
num() { sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" "$2" | head -n 1; }
fail() { echo "FAIL: $*"; exit 1; }

# check LABEL OUT REPORT: the run's exit was 0 (in $rc), simgpu saw no
# hazard or fault.
check() {
    [ "$rc" = 0 ] || { cat "$2"; fail "$1: exit $rc"; }
    [ -s "$3" ] || fail "$1: no simgpu report"
    [ "$(num hazards "$3")" = 0 ] || { grep -A5 hazard_list "$3"; fail "$1: hazards"; }
    [ "$(num faults "$3")" = 0 ] || fail "$1: faults"
}

LD_PRELOAD=$pre LD_LIBRARY_PATH=$simgpu SIMGPU_MEM=1GiB SIMGPU_REPORT=$tmp/plain.json \
    "$prog" "$@" >"$tmp/plain.out" 2>&1
rc=$?
check "plain run" "$tmp/plain.out" "$tmp/plain.json"
want=$(grep '^result:' "$tmp/plain.out")
[ -n "$want" ] || fail "plain run printed no result"
echo "plain: $want"

seed=0
for chunk in 2MiB 16MiB default jitter window; do
    rewritten=0
    for budget in $budgets; do
        label="chunk $chunk, budget $budget"
        seed=$((seed + 1))
        case $chunk in
        default) set_ch="SIMGPU_JITTER=0" ;;
        jitter) set_ch="SIMGPU_JITTER=50" ;;
        window) set_ch="SPILLWAY_PREFETCH_BYTES=25%" ;;
        *) set_ch="SPILLWAY_CHUNK=$chunk" ;;
        esac
        env LD_PRELOAD="${pre:+$pre }$lib" LD_LIBRARY_PATH="$simgpu" SIMGPU_MEM=1GiB \
            SIMGPU_REPORT="$tmp/sg.json" SPILLWAY_REPORT="$tmp/sw.json" SPILLWAY_STATS_DIR="$tmp" \
            SIMGPU_SEED="$seed" SPILLWAY_GPU_BUDGET="$budget" "$set_ch" "$prog" "$@" >"$tmp/sw.out" 2>&1
        rc=$?
        check "$label" "$tmp/sw.out" "$tmp/sg.json"
        got=$(grep '^result:' "$tmp/sw.out")
        [ "$got" = "$want" ] || { cat "$tmp/sw.out"; fail "$label: '$got', plain '$want'"; }
        d=$(num demotions "$tmp/sw.json") w=$(num rewritten_launches "$tmp/sw.json")
        h=$(num launches_touching_host "$tmp/sw.json")
        [ $((${h:-0} + ${w:-0})) -gt 0 ] || fail "$label: no launch met host memory: the budget did not bind"
        rewritten=$((rewritten + ${w:-0}))
        echo "ok: $label: demotions $d, launches on host ${h:-0}, rewritten ${w:-0}, streamed $(num bytes_streamed "$tmp/sw.json") bytes"
    done
    [ -z "$streams" ] || { [ "$streams" = window ] && [ "$chunk" != window ]; } ||
        [ "$rewritten" -gt 0 ] ||
        fail "chunk $chunk: the window served no launch at any budget: rewriting was not tested"
done
echo "ok: $(basename "$prog") $*: every run gave the plain run's answer"

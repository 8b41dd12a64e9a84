#!/bin/sh
# Tests of the public headers, one case per run: test-api.sh CASE
#   budget          api-coop under spillway: the GPU budget cut at run time
#                   demotes, and the statistics show it; no byte lost
#   budget-plain    the same program without spillway: every call answers
#                   SPILLWAY_ENOTLOADED (-1) and the program runs on
#   keep-resident   a KEEP_RESIDENT range stays on the GPU under a budget of
#                   0 and a new allocation; wrong hints get their codes;
#                   withdrawn, the range is demoted like any other
#   stats-reader    api-statsread (spillway/stats.h only) reads the live
#                   stats file of a running api-coop
#   python          stats.py (ctypes) under spillway: budget and statistics
#   python-plain    stats.py without spillway: loaded=0, exit 0
#   readme          docs/api.md's C and Python examples (the fenced blocks of
#                   its "Cooperating programs" section), built and run with
#                   and without spillway
#   install         meson install --destdir; pkg-config --cflags spillway;
#                   api-coop built against the installed headers, run
# Paths come from meson (tests/api/meson.build) in API_* variables.
# Exit 0 pass, 1 fail, 77 skip.
set -u
case_=$1
tmp=$(mktemp -d) || exit 1
mkdir -m 700 "$tmp/stats" || exit 1
cpid=
cleanup() {
    if [ -n "$cpid" ]; then
        kill "$cpid" 2>/dev/null
        wait "$cpid" 2>/dev/null
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
    printf 'FAIL [%s]: %s\n' "$case_" "$*" >&2
    for f in out err; do
        [ -f "$tmp/$f" ] && { echo "--- std$f:" >&2; cat "$tmp/$f" >&2; }
    done
    exit 1
}

# run PRELOAD(0|1) PROGRAM ARGS...: on simgpu, small chunks, our own stats
# directory; stdout in $tmp/out, stderr in $tmp/err; returns the status.
run() {
    pre=$1
    shift
    # SANITIZER_PRELOAD (meson, in a sanitized build): the sanitizer's
    # runtime, first in LD_PRELOAD with spillway or without (python and
    # docs/api.md's programs are not sanitized, simgpu is).
    preload=${SANITIZER_PRELOAD:-}
    [ "$pre" = 1 ] && preload="${preload:+$preload }$API_LIBSPILLWAY"
    env -u LD_PRELOAD -u SPILLWAY_GPU_BUDGET -u SPILLWAY_REPORT \
        LD_LIBRARY_PATH="$API_SIMGPU_DIR" LD_PRELOAD="$preload" \
        SPILLWAY_STATS_DIR="$tmp/stats" SPILLWAY_CHUNK=2MiB SPILLWAY_MIN_ALLOC=2MiB \
        SPILLWAY_HOST_BUDGET=1GiB SIMGPU_MEM=1GiB \
        "$@" >"$tmp/out" 2>"$tmp/err"
}

# The value of key in $tmp/out ("key=value").
val() {
    sed -n "s/^$1=//p" "$tmp/out" | head -n 1
}

expect() {
    got=$(val "$1")
    [ "$got" = "$2" ] || fail "$1 is '$got', expected '$2'"
}

MIB=1048576
budget_case() {
    run 1 "$@" || fail "exit status $?"
    expect loaded 1
    expect api_version 1
    expect gpu_budget_none 1
    expect demotions_before 0
    expect device_before $((32 * MIB))
    expect budget_rc 0
    # 32 MiB on the GPU, 8 MiB allowed: 24 MiB of 2 MiB chunks demoted.
    expect demotions_after 12
    expect device_after $((8 * MIB))
    expect gpu_budget $((8 * MIB))
    expect lost 0
}

case $case_ in
budget)
    budget_case "$API_COOP" budget
    ;;
budget-plain)
    run 0 "$API_COOP" budget || fail "exit status $?"
    expect loaded 0
    expect budget_rc -1
    expect demotions_after 0
    expect lost 0
    ;;
keep-resident)
    run 1 "$API_COOP" keep || fail "exit status $?"
    expect hint_untracked -3
    expect hint_overlap -4
    expect hint_bad_value -2
    expect hint_empty -2
    expect hint_stream -5
    expect hint_keep 0
    expect phase_rc 0
    # Budget 0, but the kept 8 MiB stays: the budget is set, not reached.
    expect budget_rc -7
    expect device_after $((8 * MIB))
    expect host_after $((32 * MIB))
    expect unhint_rc 0
    expect budget_again_rc 0
    expect device_unhinted 0
    expect lost 0
    ;;
stats-reader)
    mkfifo "$tmp/in" || fail "mkfifo"
    run 1 "$API_COOP" wait <"$tmp/in" &
    cpid=$!
    exec 3>"$tmp/in"
    i=0
    until grep -q '^ready$' "$tmp/out" 2>/dev/null; do
        i=$((i + 1))
        [ $i -le 200 ] || fail "api-coop not ready"
        kill -0 "$cpid" 2>/dev/null || fail "api-coop died"
        sleep 0.05
    done
    pid=$(val pid)
    "$API_STATSREAD" "$tmp/stats/$pid.stats" >"$tmp/read" 2>&1 || {
        cat "$tmp/read" >&2
        fail "api-statsread failed"
    }
    exec 3>&-
    wait "$cpid" || fail "api-coop exit status $?"
    cpid=
    mv "$tmp/read" "$tmp/out"
    expect pid "$pid"
    expect comm api-coop
    [ "$(val version)" -gt 0 ] || fail "no version"
    expect tracked_bytes $((8 * MIB))
    expect tracked_allocs 1
    expect device_bytes $((8 * MIB))
    expect demotions 0
    grep -q '^descriptors_recognised=0$' "$tmp/out" || fail "the last field is missing"
    ;;
python)
    run 1 "$API_PYTHON" "$API_PY" || fail "exit status $?"
    expect loaded 1
    expect tracked_bytes $((32 * MIB))
    expect budget_rc 0
    expect demotions 12
    expect device_bytes $((8 * MIB))
    [ "$(val fields)" -ge 29 ] || fail "only $(val fields) statistics named"
    ;;
python-plain)
    run 0 "$API_PYTHON" "$API_PY" || fail "exit status $?"
    expect loaded 0
    ;;
readme)
    # block LANG: the first ```LANG block of docs/api.md's API section.
    block() {
        awk -v lang="$1" '/^## /{ insec = /^## Cooperating programs/ }
            insec && $0 == "```" lang { on = 1; next }
            on && $0 == "```" { exit }
            on { print }' "$API_README"
    }
    block c >"$tmp/example.c"
    block python >"$tmp/example.py"
    [ -s "$tmp/example.c" ] && [ -s "$tmp/example.py" ] || fail "README examples not found"
    # shellcheck disable=SC2086
    $API_CC -std=gnu11 -I"$API_INCLUDE" -isystem "$API_CUDA_INC" -o "$tmp/example" \
        "$tmp/example.c" -L"$API_SIMGPU_DIR" -lcuda -ldl 2>"$tmp/err" ||
        fail "the C example does not build"
    run 1 "$tmp/example" || fail "C example: exit status $?"
    grep -qx 'budget: 0, 192 MiB demoted, 128 MiB on the GPU' "$tmp/out" || fail "C example under spillway"
    run 0 "$tmp/example" || fail "C example without spillway: exit status $?"
    grep -qx 'spillway is not preloaded: nothing changes' "$tmp/out" || fail "C example without spillway"
    run 1 "$API_PYTHON" "$tmp/example.py" || fail "Python example: exit status $?"
    grep -qx 'demotions = 0' "$tmp/out" || fail "Python example under spillway"
    [ "$(grep -c ' = ' "$tmp/out")" -ge 29 ] || fail "Python example: too few statistics"
    run 0 "$API_PYTHON" "$tmp/example.py" || fail "Python example without spillway: exit status $?"
    grep -qx 'spillway is not preloaded' "$tmp/out" || fail "Python example without spillway"
    ;;
install)
    command -v pkg-config >/dev/null || exit 77
    dest=$tmp/dest
    meson install -C "$API_BUILD_ROOT" --destdir "$dest" --no-rebuild >"$tmp/install.log" 2>&1 ||
        fail "meson install failed: $(tail -5 "$tmp/install.log")"
    pc=$(find "$dest" -name spillway.pc | head -n 1)
    [ -n "$pc" ] || fail "no spillway.pc installed"
    prefix=$(sed -n 's/^prefix=//p' "$pc")
    cflags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$dest$prefix" \
        --cflags spillway) || fail "pkg-config --cflags spillway failed"
    preload=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$dest$prefix" \
        --variable=preload spillway)
    [ -f "$preload" ] || fail "the preload variable names '$preload', which is not installed"
    for h in spillway.h spillway/stats.h spillway/stats_fields.h; do
        [ -f "$dest$prefix/include/$h" ] || fail "$h not installed"
    done
    # The cooperating program, built from nothing but the installed headers
    # (no -I into the source tree), then run under the installed library.
    # shellcheck disable=SC2086
    $API_CC -std=gnu11 $cflags -isystem "$API_CUDA_INC" -o "$tmp/coop" "$API_COOP_SRC" \
        -L"$API_SIMGPU_DIR" -lcuda -ldl 2>"$tmp/err" || fail "cannot build against the installed headers"
    API_LIBSPILLWAY=$preload
    budget_case "$tmp/coop" budget
    ;;
*)
    fail "unknown case"
    ;;
esac
exit 0

#!/bin/sh
# Tests of the launcher, one case per run:
#   test-spillway.sh CASE SPILLWAY LIBSPILLWAY MLP SIMGPU_DIR
# SPILLWAY is build/tools/spillway, which must find LIBSPILLWAY in the build
# tree by itself; MLP is the demo program, run on simgpu (SIMGPU_DIR holds
# its libcuda). Exit 0 pass, 1 fail.
set -u
case_=$1
spillway=$2
lib=$(realpath "$3")
mlp=$4
simgpu_dir=$5

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD SPILLWAY_STATS_DIR SPILLWAY_REPORT SPILLWAY_GPU_BUDGET SPILLWAY_POLICY
# SANITIZER_PRELOAD (meson, in a sanitized build): the sanitizer's runtime,
# which must come first in LD_PRELOAD; the launcher keeps what LD_PRELOAD
# holds and appends the library, so "$first" starts every expected value.
first=
if [ -n "${SANITIZER_PRELOAD:-}" ]; then
    export LD_PRELOAD="$SANITIZER_PRELOAD"
    first="$SANITIZER_PRELOAD:"
fi

fail() {
    printf 'FAIL [%s]: %s\n' "$case_" "$*" >&2
    for f in out err; do
        [ -f "$tmp/$f" ] && { echo "--- std$f:" >&2; cat "$tmp/$f" >&2; }
    done
    exit 1
}
run() {
    "$spillway" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}
expect_rc() { [ "$rc" = "$1" ] || fail "exit status $rc, expected $1"; }
expect_out_exactly() { [ "$(cat "$tmp/out")" = "$1" ] || fail "stdout is not exactly: $1"; }

case $case_ in
bad-value)
    # The message is the library's own: compare with what the library says
    # of the same value when preloaded by hand.
    env SPILLWAY_GPU_BUDGET=20XB LD_PRELOAD="$first$lib" true 2>"$tmp/lib-err"
    [ $? -eq 2 ] || fail "the library did not refuse the value"
    run run --budget 20XB -- touch "$tmp/ran"
    expect_rc 2
    cmp -s "$tmp/err" "$tmp/lib-err" || fail "not the library's message: $(cat "$tmp/lib-err")"
    grep -qF 'SPILLWAY_GPU_BUDGET="20XB"' "$tmp/err" || fail "message does not name the value"
    [ ! -e "$tmp/ran" ] || fail "the command ran"
    # an inherited variable is checked too, before anything starts
    SPILLWAY_POLICY=fifo run run -- touch "$tmp/ran"
    expect_rc 2
    grep -qF 'SPILLWAY_POLICY="fifo"' "$tmp/err" || fail "inherited value not checked"
    [ ! -e "$tmp/ran" ] || fail "the command ran"
    ;;
bad-usage)
    run run --no-such-option 1 -- true
    expect_rc 2
    grep -qF "unknown option '--no-such-option'" "$tmp/err" || fail "no message naming the option"
    run run --budget
    expect_rc 2
    grep -qF -- "--budget needs a value" "$tmp/err" || fail "no message for a missing value"
    run run --budget 1GiB
    expect_rc 2
    grep -qF "no command to run" "$tmp/err" || fail "no message for a missing command"
    run frobnicate
    expect_rc 2
    ;;
dry-run)
    # flags from the table (the newest, --rewrite, too), the alias, and
    # the --name=value form; nothing is run
    run run --dry-run --budget 20GiB --policy=lru --rewrite 0 --report "$tmp/r.json" \
        -- touch "$tmp/ran"
    expect_rc 0
    expect_out_exactly "SPILLWAY_GPU_BUDGET=20GiB
SPILLWAY_REPORT=$tmp/r.json
SPILLWAY_POLICY=lru
SPILLWAY_REWRITE=0
LD_PRELOAD=$first$lib"
    [ ! -e "$tmp/ran" ] || fail "the command ran"
    ;;
help)
    # every variable of the library's table has its flag
    run run --help
    expect_rc 0
    for flag in --gpu-budget --host-budget --min-alloc --chunk --disable --log --log-file \
        --report --meminfo --policy --prefetch-bytes --rewrite --stats-dir --budget --dry-run; do
        grep -qE -- "^  $flag " "$tmp/out" || fail "help lacks $flag"
    done
    ;;
preload-appended)
    LD_PRELOAD=$first/opt/other.so run run --dry-run
    expect_rc 0
    expect_out_exactly "LD_PRELOAD=$first/opt/other.so:$lib"
    # and what the command really gets
    run run -- sh -c 'printf "%s\n" "$LD_PRELOAD"'
    expect_rc 0
    expect_out_exactly "$first$lib"
    ;;
exit-status)
    run run -- sh -c 'exit 7'
    expect_rc 7
    # exec'd, not a child: the shell's pid is the launcher's
    "$spillway" run -- sh -c 'echo $$ >"$1"; kill -TERM $$' sh "$tmp/pid" &
    pid=$!
    wait $pid
    rc=$?
    expect_rc 143
    [ "$(cat "$tmp/pid")" = "$pid" ] || fail "the command is not the launcher's process"
    run run -- "$tmp/no-such-command"
    expect_rc 127
    ;;
stat)
    run stat --help
    expect_rc 0
    grep -qF "usage: spillway-stat" "$tmp/out" || fail "not spillway-stat's help"
    ;;
demo)
    # The demo program, on a simulated GPU 2.7x too small, with no option:
    # it runs, and spillway (reached through the launcher alone) picked a
    # budget, demoted chunks and streamed them.
    LD_LIBRARY_PATH="$simgpu_dir" SIMGPU_MEM=24MiB run run --stats-dir "$tmp" \
        --report "$tmp/report.json" -- "$mlp" --layers 16 --width 1024 --steps 4
    expect_rc 0
    grep -qE '"demotions": [1-9]' "$tmp/report.json" || fail "no demotions in the report"
    grep -qE '"dev0_gpu_budget": [1-9]' "$tmp/report.json" || fail "no budget picked"
    grep -qE '"bytes_streamed": [1-9]' "$tmp/report.json" || fail "nothing streamed"
    ;;
*)
    fail "unknown case"
    ;;
esac
exit 0

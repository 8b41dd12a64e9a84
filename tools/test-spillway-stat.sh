#!/bin/sh
# Tests of the spillway-stat command, one case per run:
#   test-spillway-stat.sh CASE SPILLWAY_STAT STAT_FIXTURE
# stat-fixture (stat-fixture.c) publishes known values through the
# library's own stats code; each case checks what spillway-stat makes of
# them, or of a file spoiled on purpose. Exit 0 pass, 1 fail, 77 skip.
set -u
case_=$1
stat=$2
fixture=$3

tmp=$(mktemp -d) || exit 1
dir=$tmp/stats
mkdir -m 700 "$dir" || exit 1
fpid=
unset SPILLWAY_STATS_DIR XDG_RUNTIME_DIR SPILLWAY_REPORT

cleanup() {
    if [ -n "$fpid" ]; then
        kill "$fpid" 2>/dev/null
        wait "$fpid" 2>/dev/null
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

# Starts the fixture in the background (extra environment as arguments)
# and waits for its "ready".
start_fixture() {
    # a "ready" left by an earlier fixture must not be taken for this one's
    rm -f "$tmp/fixture.out" "$tmp/fixture.err"
    env SPILLWAY_STATS_DIR="$dir" "$@" "$fixture" >"$tmp/fixture.out" 2>"$tmp/fixture.err" &
    fpid=$!
    i=0
    until grep -q '^ready$' "$tmp/fixture.out" 2>/dev/null; do
        i=$((i + 1))
        [ $i -le 200 ] || fail "fixture not ready: $(cat "$tmp/fixture.err")"
        kill -0 "$fpid" 2>/dev/null || fail "fixture died: $(cat "$tmp/fixture.err")"
        sleep 0.05
    done
}

stop_fixture() {
    kill -TERM "$fpid" || fail "fixture already gone"
    wait "$fpid" || fail "fixture did not exit cleanly"
    fpid=
}

# A valid stats file of a process that is gone; prints its path.
stale_file() {
    SPILLWAY_STATS_DIR="$dir" "$fixture" --leave || fail "fixture --leave failed"
    ls "$dir"/*.stats
}

# A copy of a valid file under a made-up pid in a second directory, for the
# validation cases.
spoilt_file() {
    src=$(stale_file)
    mkdir -m 700 "$tmp/bad"
    cp "$src" "$tmp/bad/424242.stats" || fail "cp"
    echo "$tmp/bad/424242.stats"
}

run() {
    "$stat" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}
expect_rc() { [ "$rc" = "$1" ] || fail "exit status $rc, expected $1"; }
expect_out() { grep -qF -- "$1" "$tmp/out" || fail "stdout lacks: $1"; }
expect_out_re() { grep -qE -- "$1" "$tmp/out" || fail "stdout lacks a line like: $1"; }
expect_err_line() {
    [ "$(cat "$tmp/err")" = "$1" ] || fail "stderr is not exactly: $1"
}
# The exposition format is checked by Prometheus's own parser, not by us.
need_promtool() {
    command -v promtool >/dev/null || { echo "skip: promtool not found (Debian: prometheus)"; exit 77; }
}
count_out() { grep -cE -- "$1" "$tmp/out"; }

# Patches one byte of a file (offset, octal value).
poke() { printf '%b' "\\0$3" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null; }

case $case_ in
list)
    start_fixture
    run --dir "$dir"
    expect_rc 0
    expect_out_re '^ +PID +COMMAND +TRACKED +DEVICE +HOST +DEMOTIONS$'
    expect_out_re "^ +$fpid +stat-fixture +3\\.0 GiB +2\\.0 GiB +1\\.0 GiB +7\$"
    [ "$(wc -l <"$tmp/out")" -eq 2 ] || fail "expected a header and one process"
    [ ! -s "$tmp/err" ] || fail "unexpected stderr"
    ;;
pid-table)
    start_fixture
    run --dir "$dir" "$fpid"
    expect_rc 0
    expect_out "pid $fpid (stat-fixture)"
    expect_out_re '^FIELD +VALUE +PEAK +DESCRIPTION$'
    expect_out_re '^tracked_bytes +3\.0 GiB +4\.0 GiB +bytes in allocations spillway tracks$'
    expect_out_re '^device_bytes +2\.0 GiB +4\.0 GiB '
    expect_out_re '^host_bytes +1\.0 GiB +1\.0 GiB '
    expect_out_re '^tracked_allocs +3 +5 +live tracked allocations$'
    expect_out_re '^demotions +7 +- +chunks moved from the GPU to host memory$'
    expect_out_re '^bytes_demoted +224\.0 MiB +- '
    expect_out_re '^launches +1000 +- '
    expect_out_re '^failed_moves +0 +- '
    # device 0's rows; devices 1-7 hold nothing and are left out
    expect_out_re '^dev0_device_bytes +4\.0 GiB +4\.0 GiB '
    ! grep -q '^dev[1-7]_' "$tmp/out" || fail "rows of unused devices 1-7"
    [ "$(wc -l <"$tmp/out")" -eq 44 ] || fail "expected 2 header lines and 42 fields (63 less 7 unused devices' 3)"
    ;;
json)
    start_fixture
    run --dir "$dir" --json "$fpid"
    expect_rc 0
    expect_out "\"pid\": $fpid,"
    expect_out '"command": "stat-fixture",'
    expect_out '"version": 9,'
    expect_out '"tracked_bytes": 3221225472,'
    expect_out '"tracked_bytes_peak": 4294967296,'
    expect_out '"tracked_allocs_peak": 5,'
    expect_out '"bytes_demoted": 234881024,'
    expect_out '"launches": 1000,'
    expect_out '"failed_moves": 0'
    [ "$(count_out '^  "[a-z0-9_]+": [0-9]+,?$')" -eq 90 ] || fail "expected 2 + 63 + 25 numbers"
    if command -v python3 >/dev/null; then
        python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(len(d) != 91)' \
            "$tmp/out" || fail "not JSON with 91 keys"
    fi
    ;;
list-json)
    start_fixture
    run --dir "$dir" --json
    expect_rc 0
    if [ "$(head -n 1 "$tmp/out")" != "[" ] || [ "$(tail -n 1 "$tmp/out")" != "]" ]; then
        fail "not a JSON array"
    fi
    expect_out "    \"pid\": $fpid,"
    expect_out '    "host_bytes": 1073741824,'
    if command -v python3 >/dev/null; then
        python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (len(d) == 1 and d[0]["demotions"] == 7))' \
            "$tmp/out" || fail "not a JSON list of one process"
    fi
    rm -f "$dir"/*.stats
    run --dir "$dir" --json
    expect_rc 0
    [ "$(cat "$tmp/out")" = "[]" ] || fail "expected an empty array"
    ;;
report)
    start_fixture SPILLWAY_REPORT="$tmp/report.json"
    [ -f "$dir/$fpid.stats" ] || fail "no stats file while running"
    p=$fpid
    stop_fixture
    [ ! -e "$dir/$p.stats" ] || fail "stats file left after exit"
    grep -qF "\"pid\": $p," "$tmp/report.json" || fail "report lacks the pid"
    grep -qF '"tracked_bytes_peak": 4294967296,' "$tmp/report.json" || fail "report lacks a peak"
    grep -qF '"demotions": 7,' "$tmp/report.json" || fail "report lacks demotions"
    for f in "$tmp"/report.json.tmp*; do
        [ ! -e "$f" ] || fail "temporary report left behind: $f"
    done
    ;;
stale)
    f=$(stale_file)
    p=$(basename "$f" .stats)
    start_fixture
    run --dir "$dir"
    expect_rc 0
    expect_err_line "spillway-stat: removed $dir/$p.stats: process $p is gone"
    [ ! -e "$f" ] || fail "stale file still there"
    expect_out_re "^ +$fpid +stat-fixture "
    [ -e "$dir/$fpid.stats" ] || fail "live file removed"
    stop_fixture
    run --dir "$dir"
    expect_rc 0
    expect_out "no processes under spillway in $dir"
    ;;
watch-count)
    start_fixture
    run --dir "$dir" --watch 0.05 --count 3 "$fpid"
    expect_rc 0
    [ "$(count_out "^pid $fpid \\(stat-fixture\\)\$")" -eq 3 ] || fail "expected 3 refreshes"
    run --dir "$dir" --count 2
    expect_rc 0
    [ "$(count_out '^ +PID +COMMAND')" -eq 2 ] || fail "expected 2 refreshes of the list"
    ;;
watch-exit)
    start_fixture
    p=$fpid
    (sleep 0.5 && kill -TERM "$p") &
    run --dir "$dir" --watch 0.1 --count 100 "$p"
    expect_rc 0
    expect_out "process $p has exited"
    wait "$p" 2>/dev/null
    fpid=
    ;;
default-dir)
    # SPILLWAY_STATS_DIR, as the library reads it
    start_fixture
    SPILLWAY_STATS_DIR="$dir" "$stat" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    expect_rc 0
    expect_out_re "^ +$fpid +stat-fixture "
    stop_fixture
    # XDG_RUNTIME_DIR/spillway when that is a directory of ours
    # (an empty SPILLWAY_STATS_DIR means the default rule)
    mkdir -m 700 "$tmp/xdg"
    start_fixture SPILLWAY_STATS_DIR= XDG_RUNTIME_DIR="$tmp/xdg"
    [ -f "$tmp/xdg/spillway/$fpid.stats" ] || fail "library did not publish in XDG_RUNTIME_DIR"
    XDG_RUNTIME_DIR="$tmp/xdg" "$stat" "$fpid" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    expect_rc 0
    expect_out "pid $fpid (stat-fixture)"
    # a bad value of another option does not stop the tool
    XDG_RUNTIME_DIR="$tmp/xdg" SPILLWAY_CHUNK=0 "$stat" "$fpid" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    expect_rc 0
    ;;
log)
    # log.c, through the fixture: level filter, prefix, SPILLWAY_LOG_FILE
    start_fixture SPILLWAY_LOG=info SPILLWAY_LOG_FILE="$tmp/log"
    # (the fixture's fork child logs its own file's line too)
    [ "$(head -n 1 "$tmp/log")" = "spillway[$fpid]: live stats in $dir/$fpid.stats" ] ||
        fail "log file: $(cat "$tmp/log")"
    [ ! -s "$tmp/fixture.err" ] || fail "stderr used although the log file opened"
    stop_fixture
    start_fixture
    [ ! -s "$tmp/fixture.err" ] || fail "info message shown at the default level"
    stop_fixture
    start_fixture SPILLWAY_LOG=info SPILLWAY_LOG_FILE="$tmp/no/such/dir/log"
    expected="spillway[$fpid]: warning: cannot open SPILLWAY_LOG_FILE \"$tmp/no/such/dir/log\": No such file or directory; logging to stderr
spillway[$fpid]: live stats in $dir/$fpid.stats"
    [ "$(head -n 2 "$tmp/fixture.err")" = "$expected" ] || fail "stderr: $(cat "$tmp/fixture.err")"
    ;;
help)
    run --help
    expect_rc 0
    expect_out 'usage: spillway-stat [--dir DIR] [--json | --prometheus | --prometheus-file PATH]'
    expect_out '       spillway-stat PID --record FILE [--watch [SECONDS]] [--count N]'
    ;;
bad-option)
    run --frobnicate
    expect_rc 2
    expect_err_line "spillway-stat: unknown option '--frobnicate' (see spillway-stat --help)"
    run --count 0
    expect_rc 2
    expect_err_line "spillway-stat: --count 0: expected a whole number of at least 1"
    run --count=x
    expect_rc 2
    expect_err_line "spillway-stat: --count x: expected a whole number of at least 1"
    run --watch=soon
    expect_rc 2
    expect_err_line "spillway-stat: --watch soon: expected a number of seconds such as 1 or 0.5"
    run --watch 4321
    expect_rc 2
    expect_err_line "spillway-stat: --watch 4321: at most 3600 seconds (to watch PID 4321, write: spillway-stat 4321 --watch)"
    run --dir
    expect_rc 2
    expect_err_line "spillway-stat: --dir needs a value"
    ;;
bad-pid)
    run --dir "$dir" abc
    expect_rc 2
    expect_err_line "spillway-stat: not a process id: 'abc'"
    run --dir "$dir" 12x
    expect_rc 2
    expect_err_line "spillway-stat: not a process id: '12x'"
    run --dir "$dir" 0
    expect_rc 2
    expect_err_line "spillway-stat: not a process id: '0'"
    run --dir "$dir" 99999999999
    expect_rc 2
    expect_err_line "spillway-stat: not a process id: '99999999999'"
    run --dir "$dir" 1 2
    expect_rc 2
    expect_err_line "spillway-stat: one PID at most: '2'"
    ;;
no-such-pid)
    run --dir "$dir" 999999999
    expect_rc 2
    expect_err_line "spillway-stat: no spillway stats for process 999999999 in $dir (is it running under spillway? another --dir?)"
    ;;
bad-magic)
    f=$(spoilt_file)
    poke "$f" 0 130 # 'X'
    run --dir "$tmp/bad" 424242
    expect_rc 2
    expect_err_line "spillway-stat: $f: not a spillway stats file (bad magic)"
    ;;
bad-version)
    f=$(spoilt_file)
    poke "$f" 8 143 # version 99 (little-endian u32 at offset 8)
    run --dir "$tmp/bad" 424242
    expect_rc 2
    expect_err_line "spillway-stat: $f: stats format version 99, expected version 9 (spillway-stat and libspillway come from different builds)"
    ;;
bad-size)
    f=$(spoilt_file)
    size=$(wc -c <"$f")
    printf 'x' >>"$f"
    run --dir "$tmp/bad" 424242
    expect_rc 2
    expect_err_line "spillway-stat: $f: file is $((size + 1)) bytes, expected $size"
    head -c 10 "$f" >"$f.short" && mv "$f.short" "$f"
    run --dir "$tmp/bad" 424242
    expect_rc 2
    expect_err_line "spillway-stat: $f: 10 bytes, too small for a spillway stats file (expected $size)"
    ;;
bad-owner)
    [ "$(id -u)" = 0 ] || exit 77 # only root can give a file away
    f=$(spoilt_file)
    chown 65534 "$f" || exit 77
    run --dir "$tmp/bad" 424242
    expect_rc 2
    expect_err_line "spillway-stat: $f: owned by uid 65534, expected uid 0; refusing to read it"
    # in the list it is skipped, and not removed although its pid is gone
    run --dir "$tmp/bad"
    expect_rc 0
    expect_err_line "spillway-stat: skipping $f: owned by uid 65534, expected uid 0; refusing to read it"
    [ -e "$f" ] || fail "another user's file was removed"
    ;;
symlink)
    f=$(spoilt_file)
    ln -s "$f" "$tmp/bad/5.stats"
    run --dir "$tmp/bad" 5
    expect_rc 2
    expect_err_line "spillway-stat: $tmp/bad/5.stats: is a symbolic link; refusing to follow it"
    ;;
bad-dir)
    chmod 755 "$dir"
    run --dir "$dir"
    expect_rc 2
    expect_err_line "spillway-stat: stats directory $dir has mode 0755, expected 0700; refusing to use it"
    run --dir "$tmp/none"
    expect_rc 0
    expect_out "no processes under spillway ($tmp/none does not exist)"
    ;;
log-symlink)
    # SPILLWAY_LOG_FILE is opened with O_NOFOLLOW: a planted link is refused
    : >"$tmp/victim"
    ln -s "$tmp/victim" "$tmp/log"
    start_fixture SPILLWAY_LOG=info SPILLWAY_LOG_FILE="$tmp/log"
    [ ! -s "$tmp/victim" ] || fail "the log followed a symbolic link: $(cat "$tmp/victim")"
    grep -qF "cannot open SPILLWAY_LOG_FILE \"$tmp/log\": it is a symbolic link; refusing to follow it; logging to stderr" \
        "$tmp/fixture.err" || fail "no warning: $(cat "$tmp/fixture.err")"
    ;;
report-private)
    # the report's temporary file has a name no one can plant a link at
    # beforehand, and the report is the user's alone (0600)
    : >"$tmp/victim"
    start_fixture SPILLWAY_REPORT="$tmp/report.json"
    ln -s "$tmp/victim" "$tmp/report.json.tmp.$fpid"
    stop_fixture
    [ ! -s "$tmp/victim" ] || fail "the report was written through a planted link"
    grep -qF '"demotions": 7,' "$tmp/report.json" || fail "no report: $(cat "$tmp/fixture.err")"
    [ "$(stat -c %a "$tmp/report.json")" = 600 ] ||
        fail "report mode $(stat -c %a "$tmp/report.json"), expected 600"
    [ "$(ls "$tmp" | grep -c '^report\.json\.')" = 1 ] || fail "temporary files left: $(ls "$tmp")"
    ;;
comm-escape)
    # a process named with a terminal escape: shown escaped, never raw
    name=$(printf 'ev\033]0;x\007il')
    ln -s "$(realpath "$fixture")" "$tmp/$name"
    fixture="$tmp/$name"
    start_fixture
    run --dir "$dir"
    expect_rc 0
    expect_out_re "^ +$fpid +ev\\\\x1b]0;x\\\\x07il "
    run --dir "$dir" "$fpid"
    expect_rc 0
    expect_out "pid $fpid (ev\\x1b]0;x\\x07il)"
    if grep -q "$(printf '\033')" "$tmp/out"; then fail "an escape reached the output"; fi
    ;;
prometheus)
    need_promtool
    # every field, as promtool reads it: counters _total, gauges with a
    # _peak series, raw bytes, labelled pid and command; a process named
    # with a quote, a backslash and an escape still gives valid output
    name=$(printf 'a"b\\c\033d')
    ln -s "$(realpath "$fixture")" "$tmp/$name"
    fixture="$tmp/$name"
    start_fixture
    run --dir "$dir" --prometheus
    expect_rc 0
    promtool check metrics <"$tmp/out" >"$tmp/promtool" 2>&1 ||
        fail "promtool check metrics: $(cat "$tmp/promtool")"
    labels="pid=\"$fpid\",command=\"a\\\"b\\\\c\\\\x1bd\""
    expect_out "spillway_tracked_bytes{$labels} 3221225472"
    expect_out "spillway_tracked_bytes_peak{$labels} 4294967296"
    expect_out "spillway_demotions_total{$labels} 7"
    expect_out "spillway_bytes_demoted_total{$labels} 234881024"
    expect_out '# TYPE spillway_launches_total counter'
    expect_out '# TYPE spillway_tracked_allocs_peak gauge'
    expect_out '# HELP spillway_tracked_bytes bytes in allocations spillway tracks'
    # one sample for each field, and one more for each gauge's peak (as
    # many as --json has numbers, less pid and version), less those of
    # devices 1-7, which hold nothing: 3 fields and 2 gauge peaks each
    samples=$(count_out '^spillway_')
    ! grep -q '^spillway_dev[1-7]_' "$tmp/out" || fail "samples of unused devices 1-7"
    run --dir "$dir" --json "$fpid"
    [ "$samples" -eq $(($(count_out '^  "[a-z0-9_]+": [0-9]+,?$') - 2 - 7 * 5)) ] ||
        fail "$samples samples, not one per field and peak of device 0 and the process"
    # one process alone, by PID
    run --dir "$dir" --prometheus "$fpid"
    expect_rc 0
    expect_out "spillway_demotions_total{$labels} 7"
    ;;
prometheus-file)
    need_promtool
    start_fixture
    umask 022
    run --dir "$dir" --prometheus-file "$tmp/spillway.prom" --watch 0.05 --count 3
    expect_rc 0
    [ ! -s "$tmp/out" ] || fail "stdout is not empty"
    promtool check metrics <"$tmp/spillway.prom" >"$tmp/promtool" 2>&1 ||
        fail "promtool check metrics: $(cat "$tmp/promtool")"
    grep -qF "spillway_demotions_total{pid=\"$fpid\",command=\"stat-fixture\"} 7" \
        "$tmp/spillway.prom" || fail "the file lacks a sample"
    [ "$(stat -c %a "$tmp/spillway.prom")" = 644 ] || fail "not readable by the collector"
    for f in "$tmp"/spillway.prom.tmp*; do
        [ ! -e "$f" ] || fail "temporary file left behind: $f"
    done
    # a file that cannot be written: exit 1, saying which
    run --dir "$dir" --prometheus-file "$tmp/no-such-dir/spillway.prom"
    expect_rc 1
    grep -qF "$tmp/no-such-dir/spillway.prom" "$tmp/err" || fail "message does not name the file"
    ;;
record)
    # a timeline: a header, then one row of every field per refresh
    start_fixture
    run --dir "$dir" "$fpid" --record "$tmp/t.csv" --watch 0.05 --count 3
    expect_rc 0
    [ "$(wc -l <"$tmp/t.csv")" -eq 4 ] || fail "expected a header and 3 rows"
    head -n 1 "$tmp/t.csv" | grep -q '^time_s,tracked_bytes,device_bytes,' || fail "bad header"
    sed -n 2p "$tmp/t.csv" | grep -qE '^0\.[0-9]{3},3221225472,2147483648,1073741824,' ||
        fail "bad first row"
    # (--json has every field, each gauge's peak, and pid, command, version)
    run --dir "$dir" --json "$fpid"
    [ "$(head -n 1 "$tmp/t.csv" | tr ',' '\n' | wc -l)" -eq \
        $(($(grep -c '"[a-z0-9_]*": ' "$tmp/out") - $(grep -c '_peak"' "$tmp/out") - 2)) ] ||
        fail "not one column per field (and time)"
    # a picture of it, when gnuplot is there
    if command -v gnuplot >/dev/null; then
        sh "$(dirname "$0")/spillway-plot.sh" "$tmp/t.csv" "$tmp/t.png" 2>"$tmp/err" ||
            fail "spillway-plot.sh failed"
        [ "$(head -c 4 "$tmp/t.png" | od -An -c | tr -d ' ')" = '211PNG' ] || fail "not a PNG"
    fi
    run --dir "$dir" --record "$tmp/t.csv"
    expect_rc 2
    expect_err_line "spillway-stat: --record needs the PID of the process to record"
    ;;
truncated)
    # truncated while spillway-stat reads it (the file claims a group in
    # progress, so the reader keeps it mapped for about 100 ms): an error,
    # not SIGBUS. Skipped in a sanitized build (SANITIZER_PRELOAD set):
    # the sanitizer's start-up delays the reader past the 30 ms lead, so
    # the file is empty before it is opened and the case tests nothing.
    # On a loaded machine the reader may start after the lead, and find
    # the file already empty (another error, which tests nothing here):
    # then the case is tried again with a fresh file, up to 8 times. A
    # signal fails it at once.
    [ -z "${SANITIZER_PRELOAD:-}" ] || exit 77
    f=$(spoilt_file)
    want="spillway-stat: $f: truncated while being read"
    cp "$f" "$tmp/spoilt"
    for try in 1 2 3 4 5 6 7 8; do
        cp "$tmp/spoilt" "$f"
        poke "$f" 64 1 # seq odd
        (sleep 0.03 && : >"$f") &
        run --dir "$tmp/bad" 424242
        wait
        [ "$rc" -lt 128 ] || fail "killed by signal $((rc - 128))"
        [ "$(cat "$tmp/err")" = "$want" ] && break
        echo "try $try: the reader came late: $(cat "$tmp/err")"
    done
    expect_rc 2
    expect_err_line "$want"
    ;;
setuid)
    # setgid (AT_SECURE): SPILLWAY_LOG_FILE, SPILLWAY_REPORT and
    # SPILLWAY_STATS_DIR are ignored, and said so
    [ "$(id -u)" = 0 ] || exit 77 # only root can give the program another group
    cp "$fixture" "$tmp/fx" && chgrp 65534 "$tmp/fx" && chmod 2755 "$tmp/fx" || exit 77
    fixture="$tmp/fx"
    start_fixture SPILLWAY_LOG_FILE="$tmp/log" SPILLWAY_REPORT="$tmp/report.json"
    grep -q '^secure=1$' "$tmp/fixture.out" || exit 77 # a nosuid mount
    [ ! -e "$dir/$fpid.stats" ] || fail "SPILLWAY_STATS_DIR was used"
    stop_fixture
    [ ! -e "$tmp/log" ] || fail "SPILLWAY_LOG_FILE was used"
    [ ! -e "$tmp/report.json" ] || fail "SPILLWAY_REPORT was written"
    for v in SPILLWAY_LOG_FILE SPILLWAY_STATS_DIR SPILLWAY_REPORT; do
        grep -qF "warning: $v ignored in a setuid or setgid program" "$tmp/fixture.err" ||
            fail "no warning about $v: $(cat "$tmp/fixture.err")"
    done
    ;;
*)
    fail "unknown case"
    ;;
esac
exit 0

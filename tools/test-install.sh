#!/bin/sh
# meson install into a --destdir, then use what was installed:
#   test-install.sh MESON BUILD_DIR MLP SIMGPU_DIR
# The installed launcher must find the installed library by itself and run
# the demo program under it (on simgpu); every manual page must render with
# no warning from man, and spillway(7) must name every variable the
# launcher knows. Exit 0 pass, 1 fail.
set -u
meson=$1
build=$2
mlp=$3
simgpu_dir=$4

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD SPILLWAY_STATS_DIR SPILLWAY_REPORT
# SANITIZER_PRELOAD (meson, in a sanitized build): the sanitizer's runtime,
# which must come first in LD_PRELOAD where the installed launcher runs;
# the launcher appends the library. Only there: meson and man are not
# ours to run under a sanitizer.
first=${SANITIZER_PRELOAD:+$SANITIZER_PRELOAD:}
launch() {
    if [ -n "$first" ]; then
        LD_PRELOAD=$SANITIZER_PRELOAD "$bin" "$@"
    else
        "$bin" "$@"
    fi
}

fail() {
    printf 'FAIL [install]: %s\n' "$*" >&2
    for f in "$tmp"/log "$tmp"/err; do
        [ -s "$f" ] && { echo "--- $f:" >&2; cat "$f" >&2; }
    done
    exit 1
}

"$meson" install -C "$build" --destdir "$tmp/root" --no-rebuild >"$tmp/log" 2>&1 ||
    fail "meson install failed"
bin=$(find "$tmp/root" -path '*/bin/spillway' -type f)
[ -x "$bin" ] || fail "no launcher installed in a bin directory"
[ -x "$(dirname "$bin")/spillway-stat" ] || fail "spillway-stat not installed beside it"
lib=$(find "$tmp/root" -name libspillway.so -type f)
[ -n "$lib" ] || fail "no library installed"

# the installed launcher finds the installed library, not the build tree's
launch run --dry-run --budget 1GiB >"$tmp/log" 2>&1 || fail "dry run failed"
[ "$(cat "$tmp/log")" = "SPILLWAY_GPU_BUDGET=1GiB
LD_PRELOAD=$first$(realpath "$lib")" ] || fail "dry run does not preload the installed library"

# the demo program, on a simulated GPU too small for it
LD_LIBRARY_PATH="$simgpu_dir" SIMGPU_MEM=24MiB launch run --stats-dir "$tmp" \
    --report "$tmp/report.json" -- "$mlp" --layers 16 --width 1024 --steps 4 >"$tmp/log" 2>&1 ||
    fail "the demo program failed under the installed launcher"
grep -qE '"demotions": [1-9]' "$tmp/report.json" || fail "nothing was offloaded"

# every page renders, with no warning, in its section
for page in man1/spillway.1 man1/spillway-stat.1 man7/spillway.7; do
    f=$(find "$tmp/root" -path "*/man/$page")
    [ -n "$f" ] || fail "$page not installed"
    MANWIDTH=80 MANPAGER=cat man --warnings -l "$f" >"$tmp/$(basename "$page").txt" 2>"$tmp/err" ||
        fail "man -l $page failed"
    [ ! -s "$tmp/err" ] || fail "man -l $page warned"
    grep -q '^NAME' "$tmp/$(basename "$page").txt" || fail "$page has no NAME section"
done
# spillway(7) lists every variable of the launcher's (that is, the table's)
for v in $(launch run --help | grep -o 'SPILLWAY_[A-Z_]*:' | tr -d :); do
    grep -q "^       $v\$" "$tmp/spillway.7.txt" || fail "spillway(7) lacks $v"
done
exit 0

#!/bin/sh
# The sanitizer builds and their test runs (docs/reliability.md,
# Sanitizers). Each build is a tree of its own beside build/:
#   build-asan  -Db_sanitize=address,undefined: the whole test suite, the
#               preload-true test included (/bin/true with the ASan runtime
#               and libspillway preloaded);
#   build-tsan  -Db_sanitize=thread: the tests whose programs run threads
#               against spillway (TSAN_TESTS below).
# meson hands each test the runtime to preload first and the sanitizers'
# options (meson.build: the "sanitizers" test setup); a finding ends the
# process with exit status 66, so the test fails. The suppressions, each
# with its reason, are in tests/sanitizers/.
#
# Usage: tools/sanitize.sh [asan|tsan|all]   (default all)
# Environment: SANITIZE_JOBS (tests run side by side, default 2),
# SANITIZE_TIMEOUT_MULTIPLIER (default 8: sanitized programs run several
# times slower than plain ones, and the suite's limits are set for plain;
# the unit suite took 290 to over 480 s under ASan on a loaded 2-core
# machine, against its 120 s limit).
# Exits 0 when every run passed, 1 when a build or a test failed, 2 on a
# bad argument.
set -eu
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"

what=${1:-all}
jobs=${SANITIZE_JOBS:-2}
mult=${SANITIZE_TIMEOUT_MULTIPLIER:-8}

# The threaded tests: sg-mt's four threads under spillway, the real
# runtime's threads program (shared and static cudart), and a streams
# program whose work simgpu's worker threads run beside the application's.
TSAN_TESTS="spillway-threads cudart-threads-shared cudart-threads-static app-streams-copy
preload-true"

# setup DIR SANITIZE: a build tree with -Db_sanitize=SANITIZE, made or
# reconfigured; returns meson's failure.
setup() {
    if [ -f "$1/build.ninja" ]; then
        meson configure "$1" -Db_sanitize="$2"
    else
        meson setup "$1" -Db_sanitize="$2"
    fi
}

# run_suite DIR [TEST...]: builds what the tests need and runs them;
# returns 1 when meson test fails.
run_suite() {
    dir=$1
    shift
    start=$(date +%s)
    status=0
    meson test -C "$dir" --num-processes "$jobs" --timeout-multiplier "$mult" \
        --print-errorlogs "$@" || status=$?
    echo "sanitize.sh: $dir: $(($(date +%s) - start)) s, meson test status $status"
    [ "$status" = 0 ] || return 1
}

# The failure-injection sweeps (test_failpaths.c, about 1,900 runs) fail
# every 8th of their points here: each run is several times slower under
# ASan, and the plain suite sweeps them all.
asan() {
    setup build-asan address,undefined || return 1
    SWT_FAIL_SAMPLE=${SWT_FAIL_SAMPLE:-8}
    export SWT_FAIL_SAMPLE
    run_suite build-asan
}

tsan() {
    setup build-tsan thread || return 1
    # shellcheck disable=SC2086 # one test name per word
    run_suite build-tsan $TSAN_TESTS
}

case $what in
asan) asan ;;
tsan) tsan ;;
all)
    failed=0
    asan || failed=1
    tsan || failed=1
    exit "$failed"
    ;;
*)
    echo "usage: tools/sanitize.sh [asan|tsan|all]" >&2
    exit 2
    ;;
esac

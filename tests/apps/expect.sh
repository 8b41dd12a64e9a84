#!/bin/sh
# expect.sh STATUS TEXT COMMAND [ARG...]
#
# Run COMMAND, show its output, and succeed only if it exited with STATUS
# and its output (stdout and stderr together) contains TEXT, a fixed
# string.  meson's should_fail would accept any failure, a crash included;
# this accepts only the failure the test is about.  A command killed by a
# signal reads as status 128+n, so a crash never passes for an exit status.
set -u

if [ $# -lt 3 ]; then
    echo "usage: expect.sh STATUS TEXT COMMAND [ARG...]" >&2
    exit 2
fi
want_status=$1
want_text=$2
shift 2

out=$("$@" 2>&1)
status=$?
printf '%s\n' "$out"

if [ "$status" -ne "$want_status" ]; then
    echo "expect.sh: '$*' exited with status $status, expected $want_status" >&2
    exit 1
fi
case $out in
*"$want_text"*) ;;
*)
    echo "expect.sh: output of '$*' does not contain '$want_text'" >&2
    exit 1
    ;;
esac
echo "expect.sh: ok: status $status and '$want_text' seen"

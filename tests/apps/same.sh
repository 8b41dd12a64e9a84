#!/bin/sh
# same.sh PROGRAM ARG... --vs ARG...
#
# Run PROGRAM twice, with the arguments before --vs and then with those
# after it, and succeed only if both runs exit 0 with result=match and
# print the same checksum.  The checksum depends only on the model, its
# inputs and the steps (weights, updates included), so a layout, a stream
# or a graph option that changed the arithmetic shows up here even if each
# run agrees with its own host reference.
set -u

if [ $# -lt 2 ]; then
    echo "usage: same.sh PROGRAM ARG... --vs ARG..." >&2
    exit 2
fi
prog=$1
shift
a=""
while [ $# -gt 0 ] && [ "$1" != "--vs" ]; do
    a="$a $1"
    shift
done
if [ $# -eq 0 ]; then
    echo "same.sh: no --vs" >&2
    exit 2
fi
shift

# The options are plain words (no spaces), so word splitting is safe here.
# shellcheck disable=SC2086
out_a=$("$prog" $a 2>&1) || { printf '%s\n' "$out_a"; echo "same.sh: '$prog$a' failed" >&2; exit 1; }
out_b=$("$prog" "$@" 2>&1) || { printf '%s\n' "$out_b"; echo "same.sh: '$prog $*' failed" >&2; exit 1; }
printf '%s\n%s\n' "$out_a" "$out_b"

sum() {
    printf '%s\n' "$1" | sed -n 's/.* checksum=\(0x[0-9a-f]*\) result=match.*/\1/p'
}
sum_a=$(sum "$out_a")
sum_b=$(sum "$out_b")
if [ -z "$sum_a" ] || [ "$sum_a" != "$sum_b" ]; then
    echo "same.sh: checksums differ or no match: '${sum_a:-none}' and '${sum_b:-none}'" >&2
    exit 1
fi
echo "same.sh: ok: both $sum_a"

#!/bin/sh
# The wheel (pyproject.toml), built and used the way a user would:
#   test-wheel.sh SOURCE_ROOT MLP SIMGPU_DIR
# 1. pip wheel --no-build-isolation from a clean copy of the source (the
#    files git knows and the new ones it does not ignore; no build tree);
# 2. every ELF file in it needs nothing beyond glibc (readelf's NEEDED), so
#    it links no CUDA library and auditwheel can give it a manylinux tag;
# 3. a fresh venv, and pip install --no-index of the wheel into it;
# 4. from that venv's PATH: `spillway run` runs the demo program on a
#    simulated GPU too small for it, with the right answer, while
#    spillway.stats(pid) reads its statistics and agrees with spillway-stat;
#    `python -m spillway` is the launcher; the control API works inside a
#    Python process under spillway and is a warned no-op outside one; a
#    missing or corrupt stats file gives an error naming it.
# The Python used is the first of $PYTHON, python3 and /usr/bin/python3
# that has venv, pip and mesonpy (Debian: python3-venv python3-pip
# python3-mesonpy). Exit 0 pass, 1 fail, 77 skip: no such Python, or a
# sanitized build (its programs need the sanitizer's runtime, which the
# wheel's unsanitized library and Python have no use for).
set -u
src=$1
mlp=$(realpath "$2") || exit 1
simgpu_dir=$3

[ -z "${SANITIZER_PRELOAD:-}" ] || { echo "skip: a sanitized build"; exit 77; }
py=
for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if "$p" -c 'import ensurepip, mesonpy, pip, venv' >/dev/null 2>&1; then
        py=$p
        break
    fi
done
[ -n "$py" ] || { echo "skip: no python3 with venv, pip and mesonpy"; exit 77; }

tmp=$(mktemp -d /tmp/wheel-test.XXXXXX) || exit 1
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
unset LD_PRELOAD SPILLWAY_STATS_DIR SPILLWAY_REPORT SPILLWAY_GPU_BUDGET PYTHONPATH

fail() {
    printf 'FAIL [wheel]: %s\n' "$*" >&2
    for f in "$tmp"/log "$tmp"/out "$tmp"/err; do
        [ -s "$f" ] && { echo "--- $f:" >&2; tail -n 40 "$f" >&2; }
    done
    exit 1
}

# 1. the wheel, from a clean copy
mkdir "$tmp/src" "$tmp/dist" "$tmp/whl" || exit 1
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$src" ls-files -z -c -o --exclude-standard >"$tmp/files" || fail "git ls-files"
    tar -C "$src" --null -T "$tmp/files" --ignore-failed-read -cf - 2>/dev/null |
        tar -C "$tmp/src" -xf - || fail "cannot copy the source"
else
    tar -C "$src" --exclude='./build*' -cf - . | tar -C "$tmp/src" -xf - ||
        fail "cannot copy the source"
fi
"$py" -m pip wheel --no-build-isolation --no-deps --no-index --no-cache-dir \
    -w "$tmp/dist" "$tmp/src" >"$tmp/log" 2>&1 || fail "pip wheel failed"
whl=$(ls "$tmp"/dist/spillway-*.whl 2>/dev/null)
[ -n "$whl" ] || fail "no wheel made"
case $whl in
*-py3-none-linux_*.whl) ;;
*) fail "$whl: expected the tag py3-none-linux_<arch> (no Python ABI: no extension)" ;;
esac

# 2. nothing beyond glibc
"$py" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$whl" "$tmp/whl" || fail "cannot unpack $whl"
elves=0
for f in $(find "$tmp/whl" -type f); do
    [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
    elves=$((elves + 1))
    for lib in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        echo "$lib" | grep -qE '^(lib(c|m|dl|pthread|rt)\.so\.[0-9]+|ld-linux[-a-z0-9_.]*\.so\.[0-9]+)$' ||
            fail "${f#"$tmp"/whl/} needs $lib, which is not part of glibc"
    done
done
[ "$elves" -eq 3 ] || fail "expected 3 ELF files (library, launcher, spillway-stat), found $elves"

# 3. a fresh venv
"$py" -m venv "$tmp/venv" >"$tmp/log" 2>&1 || fail "python -m venv failed"
"$tmp/venv/bin/python" -m pip install --no-index --no-cache-dir "$whl" >"$tmp/log" 2>&1 ||
    fail "pip install of the wheel failed"
PATH="$tmp/venv/bin:$PATH"
export PATH
[ "$(command -v spillway)" = "$tmp/venv/bin/spillway" ] || fail "spillway is not on the venv's PATH"
[ "$(command -v spillway-stat)" = "$tmp/venv/bin/spillway-stat" ] ||
    fail "spillway-stat is not on the venv's PATH"
# The venv's Python, not one the caller's PATH prefers.
python=$tmp/venv/bin/python

# 4. the launcher finds the installed library; python -m spillway is it
spillway run --dry-run --budget 1GiB >"$tmp/out" 2>&1 || fail "dry run failed"
lib=$(realpath "$tmp/venv/lib/spillway/libspillway.so")
[ "$(cat "$tmp/out")" = "SPILLWAY_GPU_BUDGET=1GiB
LD_PRELOAD=$lib" ] || fail "the dry run does not preload the installed library"
"$python" -m spillway run --dry-run --budget 1GiB >"$tmp/err" 2>&1 || fail "python -m spillway run"
cmp -s "$tmp/out" "$tmp/err" || fail "python -m spillway run is not the launcher"
"$python" -m spillway run --no-such-option >"$tmp/out" 2>&1
[ $? -eq 2 ] && grep -q "unknown option '--no-such-option'" "$tmp/out" ||
    fail "python -m spillway: not the launcher's message and status for a bad option"

# The demo program on a simulated GPU of 24 MiB (its model is 64 MiB), read
# live through spillway.stats(pid) from the venv's Python.
stats=$tmp/stats
mkdir -m 700 "$stats" || exit 1
LD_LIBRARY_PATH="$simgpu_dir" SIMGPU_MEM=24MiB spillway run --stats-dir "$stats" \
    --report "$tmp/report.json" -- "$mlp" --layers 16 --width 1024 --steps 300 \
    >"$tmp/out" 2>"$tmp/err" &
pid=$!
"$python" - "$pid" "$stats" >"$tmp/log" 2>&1 <<'EOF' || fail "spillway.stats(pid) of the demo program"
import json, subprocess, sys, time

import spillway
from spillway import _format

pid, d = int(sys.argv[1]), sys.argv[2]
deadline = time.monotonic() + 60
while True:
    try:
        s = spillway.stats(pid, directory=d)
        if s["bytes_streamed"] > 0:
            break
    except spillway.NoStatsError:
        pass  # not published yet: the file appears at cuInit
    assert time.monotonic() < deadline, "nothing streamed within 60 s"
    time.sleep(0.02)
MIB = 1 << 20
assert s["pid"] == pid and s["command"] == "mlp", s
assert s["version"] == spillway.STATS_VERSION
assert s["tracked_bytes"] >= 64 * MIB, s["tracked_bytes"]  # the weights, at least
assert 0 < s["dev0_gpu_budget"] <= 24 * MIB, s["dev0_gpu_budget"]  # picked, under the GPU
assert s["demotions"] > 0 and s["launches"] > 0
assert s["device_bytes_peak"] >= s["device_bytes"]
# spillway-stat, read after: the same keys, and no counter went back.
j = json.loads(subprocess.run(["spillway", "stat", "--dir", d, "--json", str(pid)],
                              check=True, capture_output=True, text=True).stdout)
assert set(s) - {"start_time"} == set(j), set(s) ^ set(j)
for name, _unit, gauge, _off, _peak in _format.STATS_FIELDS:
    assert gauge or j[name] >= s[name], (name, s[name], j[name])
print("bytes_streamed", s["bytes_streamed"])
EOF
wait "$pid" || fail "the demo program failed under spillway (status $?)"
pid=
grep -q 'result=match' "$tmp/out" || fail "the demo program's answer is wrong"
grep -qE '"bytes_streamed": [1-9]' "$tmp/report.json" || fail "nothing streamed in the report"

# Errors name the file and what is wrong.
"$python" - "$stats" >"$tmp/log" 2>&1 <<'EOF' || fail "stats files that are missing or corrupt"
import os, struct, sys

import spillway
from spillway import _format

d = sys.argv[1]


def error(pid):
    try:
        spillway.stats(pid, directory=d)
    except spillway.StatsError as e:
        return e
    raise AssertionError(f"{pid}: no error")


e = error(999999)  # no such file: the demo's is gone too, removed at exit
assert isinstance(e, FileNotFoundError) and f"{d}/999999.stats" in str(e), e
for pid, data, what in [
        (11, b"x" * _format.STATS_SIZE, "bad magic"),
        (12, b"SPILLWAY" + struct.pack("=I", 7) + bytes(_format.STATS_SIZE - 12), "version 7"),
        (13, b"SPILLWAY", "too small"),
        (14, b"SPILLWAY" + struct.pack("=III", _format.STATS_VERSION, _format.STATS_SIZE,
                                       _format.STATS_NFIELDS)
         + bytes(_format.STATS_SIZE - 20 + 8), "expected %d" % _format.STATS_SIZE)]:
    path = f"{d}/{pid}.stats"
    with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
        f.write(data)
    e = error(pid)
    assert str(e).startswith(path + ": ") and what in str(e), e
os.symlink(f"{d}/11.stats", f"{d}/15.stats")
assert "symbolic link" in str(error(15))
EOF

# The control API, inside a Python process under spillway and without it.
LD_LIBRARY_PATH="$simgpu_dir" spillway run --stats-dir "$stats" --budget 32MiB -- \
    "$python" - >"$tmp/log" 2>&1 <<'EOF' || fail "the control API under spillway"
import ctypes, os

import spillway

assert ctypes.CDLL(None).cuInit(0) == 0  # the stats file appears at the first CUDA call
q = spillway.query()
assert q["api_version"] == spillway.API_VERSION and q["gpu_budget"] == 32 << 20, q
assert spillway.set_budgets(gpu=16 << 20) == spillway.OK
assert spillway.query()["gpu_budget"] == 16 << 20
try:
    spillway.hint(4096, 4096)
    raise AssertionError("a hint on untracked memory was accepted")
except spillway.SpillwayError as e:
    assert e.code == spillway.ENOTTRACKED, e
assert spillway.phase() == spillway.OK
s = spillway.stats()  # this process's own, from SPILLWAY_STATS_DIR
assert s["pid"] == os.getpid() and s["version"] == spillway.STATS_VERSION, s
EOF
"$python" -W error::RuntimeWarning -c 'import spillway; spillway.set_budgets(1)' \
    >"$tmp/log" 2>&1 && fail "no warning without spillway"
grep -q 'spillway is not preloaded' "$tmp/log" || fail "the warning does not say spillway is not preloaded"
"$python" - >"$tmp/log" 2>&1 <<'EOF' || fail "the control API without spillway"
import warnings

import spillway

with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    assert spillway.query() is None
    assert spillway.set_budgets(1 << 30) == spillway.ENOTLOADED
    assert spillway.phase() == spillway.ENOTLOADED
assert len(w) == 3 and all(issubclass(x.category, RuntimeWarning) for x in w), w
EOF
exit 0

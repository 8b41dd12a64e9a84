"""The live stats file of a process under spillway (include/spillway/stats.h),
found and checked the way spillway-stat does it (src/stats_file.c).

A stats file is input: another build's, a truncated or a planted one must
give a clear error naming the file, never wrong numbers. The layout comes
from _format.py, which the build writes from the header itself.
"""
import mmap
import os
import stat as st
import struct
import time
import warnings

from . import _format as F

# A reader waits this long for a writer to leave a group of updates; groups
# last nanoseconds, so only a writer stopped inside one makes it wait.
_PATIENCE_S = 0.1
_SEQ_WORD = F.STATS_OFF_SEQ // 8


class StatsError(Exception):
    """A stats file that cannot be read, or is not one this module knows.
    The message starts with the path; `path` holds it."""

    def __init__(self, path, what):
        super().__init__(f"{path}: {what}")
        self.path = path


class NoStatsError(StatsError, FileNotFoundError):
    """No stats file for the process: it is not under spillway, has made no
    CUDA call yet (the file appears at cuInit), has exited, or publishes in
    another directory (SPILLWAY_STATS_DIR)."""


def _is_our_dir(path):
    try:
        s = os.lstat(path)
    except OSError:
        return False
    return st.S_ISDIR(s.st_mode) and s.st_uid == os.geteuid()


def stats_dir():
    """The library's directory rule: $SPILLWAY_STATS_DIR when set, else
    $XDG_RUNTIME_DIR/spillway when XDG_RUNTIME_DIR is a directory of ours,
    else /tmp/spillway-<euid>."""
    configured = os.environ.get("SPILLWAY_STATS_DIR")
    if configured:
        return configured
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and _is_our_dir(xdg):
        return os.path.join(xdg, "spillway")
    return f"/tmp/spillway-{os.geteuid()}"


def _check_dir(d):
    # What the library made: a real directory of ours, mode 0700. Another
    # user's directory could hold files made to be misread.
    try:
        s = os.lstat(d)
    except OSError as e:
        raise StatsError(d, f"stats directory: {e.strerror}") from None
    if st.S_ISLNK(s.st_mode):
        raise StatsError(d, "stats directory is a symbolic link; refusing to use it")
    if not st.S_ISDIR(s.st_mode):
        raise StatsError(d, "stats directory is not a directory")
    if s.st_uid != os.geteuid():
        raise StatsError(d, f"stats directory is owned by uid {s.st_uid}, not by uid "
                            f"{os.geteuid()}; refusing to use it")
    if st.S_IMODE(s.st_mode) != 0o700:
        raise StatsError(d, f"stats directory has mode {st.S_IMODE(s.st_mode):04o}, "
                            "expected 0700; refusing to use it")


def _open(path, pid):
    """The checked file's descriptor, in sw_statsfile_open's order."""
    want = F.STATS_SIZE
    try:
        # O_NONBLOCK: a FIFO planted under a stats name must not hang us.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise NoStatsError(path, f"no spillway stats for process {pid} (is it running under "
                                 "spillway, and has it made a CUDA call? another "
                                 "SPILLWAY_STATS_DIR?)") from None
    except OSError as e:
        if e.errno == getattr(os, "ELOOP", 40):
            raise StatsError(path, "is a symbolic link; refusing to follow it") from None
        raise StatsError(path, e.strerror) from None
    try:
        s = os.fstat(fd)
        if not st.S_ISREG(s.st_mode):
            raise StatsError(path, "not a regular file")
        if s.st_uid != os.geteuid():
            raise StatsError(path, f"owned by uid {s.st_uid}, expected uid {os.geteuid()}; "
                                   "refusing to read it")
        h = os.pread(fd, F.STATS_HEADER_SIZE, 0)
        if s.st_size < F.STATS_HEADER_SIZE or len(h) != F.STATS_HEADER_SIZE:
            raise StatsError(path, f"{s.st_size} bytes, too small for a spillway stats file "
                                   f"(expected {want})")
        if h[:8] != F.STATS_MAGIC:
            raise StatsError(path, "not a spillway stats file (bad magic)")
        version, size, nfields = struct.unpack_from("=III", h, F.STATS_OFF_VERSION)
        if version != F.STATS_VERSION:
            raise StatsError(path, f"stats format version {version}, expected version "
                                   f"{F.STATS_VERSION} (this module and libspillway come "
                                   "from different builds)")
        if size != want or nfields != F.STATS_NFIELDS:
            raise StatsError(path, f"header says {size} bytes and {nfields} fields, expected "
                                   f"{want} and {F.STATS_NFIELDS}")
        if s.st_size != want:
            raise StatsError(path, f"file is {s.st_size} bytes, expected {want}")
        return fd
    except BaseException:
        os.close(fd)
        raise


def _snapshot(fd, path):
    """Every word of the file, by the seqlock (stats.h, "Reading"): seq even
    and unchanged around the copy. Returns (words, consistent).

    Each word is read by one aligned 8-byte load (memoryview's "Q" items),
    so a lone counter is never seen half-written. CPython has no fences:
    x86 keeps loads in order, which the protocol's acquire loads rely on.
    The mapping is never written to; only a process of the same user could
    truncate the file under it (the library never does)."""
    with mmap.mmap(fd, F.STATS_SIZE, mmap.MAP_SHARED, mmap.PROT_READ) as m:
        words = memoryview(m).cast("Q")
        try:
            deadline = None
            tries = 0
            while True:
                s1 = words[_SEQ_WORD]
                if not s1 & 1:
                    copy = words.tolist()
                    if words[_SEQ_WORD] == s1:
                        return copy, True
                tries += 1
                if tries < 64:
                    continue
                if deadline is None:
                    deadline = time.monotonic() + _PATIENCE_S
                elif time.monotonic() > deadline:
                    return words.tolist(), False
                time.sleep(50e-6)
        finally:
            words.release()


def stats(pid=None, directory=None):
    """The statistics of process pid (default: this process), a dict with
    the keys of `spillway-stat --json PID`: pid, command, version, then every
    field of include/spillway/stats_fields.h, a gauge's peak as <name>_peak;
    and start_time (the process's start, in clock ticks after boot).

    directory: where to look (default: stats_dir(), the library's rule).
    Raises NoStatsError (a FileNotFoundError) when there is no file, and
    StatsError when the file or its directory fails a check; both name the
    path and what is wrong. A process stopped in the middle of an update
    gives its figures with a RuntimeWarning: they may not add up."""
    pid = os.getpid() if pid is None else pid
    if isinstance(pid, bool) or not isinstance(pid, int) or not 0 < pid < 2**31:
        raise ValueError(f"not a process id: {pid!r}")
    d = directory or stats_dir()
    path = os.path.join(d, f"{pid}.stats")
    if not os.path.lexists(path):
        raise NoStatsError(path, f"no spillway stats for process {pid} (is it running under "
                                 "spillway, and has it made a CUDA call? another "
                                 "SPILLWAY_STATS_DIR?)")
    _check_dir(d)
    fd = _open(path, pid)
    try:
        words, consistent = _snapshot(fd, path)
    finally:
        os.close(fd)
    raw = struct.pack(f"={len(words)}Q", *words)
    if not consistent:
        warnings.warn(f"{path}: process {pid} is stopped mid-update; figures may not add up",
                      RuntimeWarning, stacklevel=2)
    comm = raw[F.STATS_OFF_COMM:F.STATS_OFF_COMM + F.STATS_COMM_LEN].split(b"\0", 1)[0]
    out = {
        "pid": struct.unpack_from("=i", raw, F.STATS_OFF_PID)[0],
        "command": comm.decode("utf-8", "backslashreplace"),
        "version": struct.unpack_from("=I", raw, F.STATS_OFF_VERSION)[0],
        "start_time": words[F.STATS_OFF_START_TIME // 8],
    }
    for name, _unit, gauge, value_off, peak_off in F.STATS_FIELDS:
        value = words[value_off // 8]
        out[name] = value
        if gauge:
            # The peak is raised just after the value: never show it below.
            peak = words[peak_off // 8]
            out[name + "_peak"] = value if _signed(value) > _signed(peak) else peak
    return out


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v

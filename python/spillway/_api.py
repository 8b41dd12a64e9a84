"""The control API (include/spillway.h) through ctypes: the entry points are
looked up in the process itself (ctypes.CDLL(None), dlsym RTLD_DEFAULT),
where libspillway is when it is preloaded. Without it every call is a no-op
that says so with a RuntimeWarning, as the C header's loader returns
SPILLWAY_ENOTLOADED: a program keeps working unchanged when run without
spillway.
"""
import ctypes
import warnings

from . import _format as F

_CODES = {F.OK: "OK", F.ENOTLOADED: "ENOTLOADED", F.EINVAL: "EINVAL",
          F.ENOTTRACKED: "ENOTTRACKED", F.EOVERLAP: "EOVERLAP", F.ENOTSUP: "ENOTSUP",
          F.EBUSY: "EBUSY", F.EPARTIAL: "EPARTIAL"}
_WHY = {
    F.EINVAL: "a bad argument",
    F.ENOTTRACKED: "the range starts outside every tracked allocation",
    F.EOVERLAP: "the range runs past the end of its allocation",
    F.ENOTSUP: "not supported by this version of libspillway",
    F.EBUSY: "a stream capture is in progress: nothing changed; retry after it ends",
}


class SpillwayError(Exception):
    """A call the library refused; `code` is its SPILLWAY_E* status."""

    def __init__(self, call, code):
        name = _CODES.get(code, str(code))
        super().__init__(f"{call}: SPILLWAY_{name}: {_WHY.get(code, 'unknown status')}")
        self.code = code


_sizes = {4: ctypes.c_uint32, 8: ctypes.c_uint64}


class _Info(ctypes.Structure):
    _fields_ = [(name, _sizes[size]) for name, _off, size in F.INFO_FIELDS]


# The generated offsets are the C compiler's: ctypes must agree.
assert ctypes.sizeof(_Info) == F.INFO_SIZE and all(
    getattr(_Info, name).offset == off for name, off, _ in F.INFO_FIELDS)

_SIGNATURES = {
    "spillway_query": [ctypes.POINTER(_Info)],
    "spillway_set_budgets": [ctypes.c_uint64, ctypes.c_uint64],
    "spillway_hint": [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int],
    "spillway_phase": [],
}
_found = {}


def _entry(name):
    """libspillway's entry point `name`, or None with a warning when it is
    not loaded. Found ones are kept; a miss is looked up again next time."""
    f = _found.get(name)
    if f is None:
        try:
            f = getattr(ctypes.CDLL(None), name)
        except AttributeError:
            warnings.warn(f"spillway is not preloaded in this process (start it with "
                          f"`spillway run`): spillway.{name[len('spillway_'):]}() does "
                          "nothing", RuntimeWarning, stacklevel=3)
            return None
        f.argtypes = _SIGNATURES[name]
        f.restype = ctypes.c_int
        _found[name] = f
    return f


def _status(call, rc, ok=(F.OK,)):
    if rc not in ok:
        raise SpillwayError(call, rc)
    return rc


def query():
    """The effective options and budgets, as a dict (spillway_info_t's
    fields, and its flags decoded); None when spillway is not loaded.
    gpu_budget may be BUDGET_NONE or BUDGET_UNKNOWN."""
    f = _entry("spillway_query")
    if f is None:
        return None
    info = _Info(size=ctypes.sizeof(_Info))
    _status("spillway_query", f(ctypes.byref(info)))
    out = {name: getattr(info, name) for name, _off, _size in F.INFO_FIELDS if name != "size"}
    out.update(disabled=bool(info.flags & F.INFO_DISABLED),
               tracking=bool(info.flags & F.INFO_TRACKING),
               learned=bool(info.flags & F.INFO_LEARNED),
               rewrite=bool(info.flags & F.INFO_REWRITE))
    return out


def set_budgets(gpu=F.BUDGET_KEEP, host=F.BUDGET_KEEP):
    """New GPU and host budgets, in bytes (BUDGET_KEEP leaves one as it is,
    BUDGET_NONE removes the GPU budget). A smaller GPU budget demotes at
    once. Returns OK, or EPARTIAL when kept-resident chunks hold the GPU
    above the new budget (it is still set); raises SpillwayError otherwise;
    ENOTLOADED when spillway is not loaded."""
    f = _entry("spillway_set_budgets")
    if f is None:
        return F.ENOTLOADED
    return _status("spillway_set_budgets", f(_bytes(gpu), _bytes(host)), (F.OK, F.EPARTIAL))


def hint(ptr, nbytes=None, kind=F.HINT_KEEP_RESIDENT):
    """Advice on [ptr, ptr + nbytes), inside one tracked allocation. ptr is
    an address, or a tensor (anything with data_ptr(); nbytes then defaults
    to its size). kind: HINT_KEEP_RESIDENT, or HINT_NONE to withdraw.
    Returns OK; raises SpillwayError when refused; ENOTLOADED when spillway
    is not loaded."""
    if hasattr(ptr, "data_ptr"):
        if nbytes is None:
            nbytes = ptr.element_size() * ptr.nelement()
        ptr = ptr.data_ptr()
    if nbytes is None:
        raise TypeError("hint: nbytes is needed with a plain address")
    f = _entry("spillway_hint")
    if f is None:
        return F.ENOTLOADED
    return _status("spillway_hint", f(_bytes(ptr), _bytes(nbytes), int(kind)))


def phase():
    """A new phase (prefill to decode): the learned schedule is dropped at
    once. Returns OK; ENOTLOADED when spillway is not loaded."""
    f = _entry("spillway_phase")
    if f is None:
        return F.ENOTLOADED
    return _status("spillway_phase", f())


def _bytes(v):
    v = int(v)
    if not 0 <= v < 1 << 64:
        raise ValueError(f"{v} is not a 64-bit unsigned value")
    return v

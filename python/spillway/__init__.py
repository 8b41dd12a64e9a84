"""spillway from Python: the statistics of a process running under spillway,
and the control API of include/spillway.h.

    import spillway
    spillway.stats()            # this process's statistics, as a dict
    spillway.stats(pid)         # another process's (of the same user)
    spillway.query()            # the effective options and budgets
    spillway.set_budgets(gpu=20 << 30)
    spillway.hint(tensor, kind=spillway.HINT_KEEP_RESIDENT)
    spillway.phase()

The program itself is started under spillway as any other is, by the
launcher installed with this package: `spillway run -- python train.py`
(or `python -m spillway run -- ...`, the same). The control calls reach
libspillway in the process itself through ctypes; without it they change
nothing, say so with a RuntimeWarning, and return ENOTLOADED (query: None).
"""
from ._api import SpillwayError, hint, phase, query, set_budgets
from ._format import (API_VERSION, BUDGET_KEEP, BUDGET_NONE, BUDGET_UNKNOWN, EBUSY, EINVAL,
                      ENOTLOADED, ENOTSUP, ENOTTRACKED, EOVERLAP, EPARTIAL, HINT_KEEP_RESIDENT,
                      HINT_NEVER_STREAM, HINT_NONE, HINT_READ_ONLY, HINT_STREAM, OK,
                      STATS_VERSION)
from ._stats import NoStatsError, StatsError, stats, stats_dir

__all__ = [
    "API_VERSION", "BUDGET_KEEP", "BUDGET_NONE", "BUDGET_UNKNOWN", "EBUSY", "EINVAL",
    "ENOTLOADED", "ENOTSUP", "ENOTTRACKED", "EOVERLAP", "EPARTIAL", "HINT_KEEP_RESIDENT",
    "HINT_NEVER_STREAM", "HINT_NONE", "HINT_READ_ONLY", "HINT_STREAM", "NoStatsError", "OK",
    "STATS_VERSION", "SpillwayError", "StatsError", "hint", "phase", "query", "set_budgets",
    "stats", "stats_dir",
]

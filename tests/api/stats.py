#!/usr/bin/env python3
"""A cooperating program in Python: through ctypes alone (no build step, no
binding), it uses the control API of include/spillway.h and reads its own
statistics. It also drives simgpu's libcuda through ctypes, so the numbers
are real ones: four 8 MiB allocations, then the GPU budget cut to 8 MiB.

Prints "key=value" lines for test-api.sh. Without spillway preloaded it
prints "loaded=0" and exits 0: the API is optional. Exit 2 on a CUDA error.
"""
import ctypes
import sys

MIB = 1 << 20
KEEP = (1 << 64) - 1  # SPILLWAY_BUDGET_KEEP

proc = ctypes.CDLL(None)  # the process itself: libspillway when preloaded
try:
    stat_fn = proc.spillway_stat
except AttributeError:
    print("loaded=0")
    sys.exit(0)
print("loaded=1")
stat_fn.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64),
                    ctypes.POINTER(ctypes.c_uint64)]
stat_fn.restype = ctypes.c_int
proc.spillway_stat_name.argtypes = [ctypes.c_uint32]
proc.spillway_stat_name.restype = ctypes.c_char_p
proc.spillway_set_budgets.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
proc.spillway_set_budgets.restype = ctypes.c_int


def stat(name):
    value, peak = ctypes.c_uint64(), ctypes.c_uint64()
    if stat_fn(name.encode(), ctypes.byref(value), ctypes.byref(peak)) != 0:
        raise KeyError(name)
    return value.value


def cu(rc, call):
    if rc != 0:
        print(f"stats.py: CUDA error {rc} in {call}", file=sys.stderr)
        sys.exit(2)


cuda = ctypes.CDLL("libcuda.so.1")
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
cu(cuda.cuInit(0), "cuInit")
cu(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
cu(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
cu(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
ptrs = []
for _ in range(4):
    p = ctypes.c_uint64()
    cu(cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(8 * MIB)), "cuMemAlloc")
    ptrs.append(p)

names = []
while (n := proc.spillway_stat_name(len(names))) is not None:
    names.append(n.decode())
print(f"fields={len(names)}")
print(f"tracked_bytes={stat('tracked_bytes')}")
print(f"budget_rc={proc.spillway_set_budgets(8 * MIB, KEEP)}")
print(f"demotions={stat('demotions')}")
print(f"device_bytes={stat('device_bytes')}")
for p in ptrs:
    cu(cuda.cuMemFree_v2(p), "cuMemFree")

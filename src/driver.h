/*
 * The driver layer, the bottom of spillway's mechanism: the real driver's
 * table, the gate with its armed count, the count of captures, and the
 * options. It calls nothing of spillway's above it. Layers, each with its
 * header including the one below (tools/check-layers.py keeps them so):
 *   api.h        hooks, runtime wrappers, start-up
 *   residency.h  the table, budgets, moves, the launch path, the windows
 *   device.h     VMM, devices, spillway's kernels, the application's streams
 *   driver.h     this
 * sw.h, the pure core's, is below them all and never sees cuda.h.
 */
#ifndef SW_DRIVER_H
#define SW_DRIVER_H


#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>

/* cuda.h names the stream memory operations' _v2 forms by their plain
 * names; the plain names are the deprecated v1 forms, which the driver
 * still exports and hands a runtime older than 11.7: hooks.def wraps them
 * under their own names. */
#undef cuStreamWriteValue32
#undef cuStreamWriteValue64
#undef cuStreamWaitValue32
#undef cuStreamWaitValue64
#undef cuStreamBatchMemOp

#include "sw.h"

#define SW_EXPORT __attribute__((visibility("default")))

/* For the few functions that may run before anything in the process is
 * ready (the dlsym override and what it calls): a sanitizer runtime calls
 * dlsym while it starts, before it has mapped the shadow memory that
 * instrumented code writes to, so these functions are left
 * uninstrumented. */
#define SW_UNSANITIZED __attribute__((no_sanitize("address", "undefined", "thread")))

/* Driver functions spillway calls on its own behalf but does not wrap. */
#define SW_USES(X)                                                          \
    X(cuMemSetAccess)                                                       \
    X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemGetAllocationGranularity) \
    X(cuDeviceGetAttribute) X(cuDeviceTotalMem_v2) X(cuCtxGetDevice)        \
    X(cuCtxSynchronize) X(cuStreamSynchronize)                              \
    X(cuFuncGetParamInfo) X(cuKernelGetParamInfo) X(cuGetErrorName)        \
    X(cuStreamGetFlags) X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) \
    X(cuStreamWaitEvent) X(cuModuleLoadData) X(cuMemAllocHost_v2) X(cuMemFreeHost) X(cuStreamIsCapturing) \
    X(cuEventQuery) X(cuEventDestroy_v2) X(cuDeviceGetMemPool) X(cuDeviceGetCount)         \
    X(cuDeviceCanAccessPeer) X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuCtxSynchronize_v2) \
    X(cuStreamGetCtx) X(cuGraphKernelNodeGetParams_v2) X(cuEventElapsedTime_v2)

/* ---- the one table of real driver entry points (driver.c) ---- */
typedef struct {
#define SW_HOOK(ret, sym, params, call) ret (*sym) params;
#include "hooks.def"
#undef SW_HOOK
#define SW_USE(sym) __typeof__(&sym) sym;
    SW_USES(SW_USE)
#undef SW_USE
} sw_real_t;

/* The real driver, resolved on first use (loads libcuda.so.1 then, never
 * before). Returns a table whose entries may be NULL where the driver lacks
 * a function; every wrapper checks before calling. */
const sw_real_t *sw_real(void);
#define SW_REAL(sym) (sw_real()->sym)
/* The real dlsym, found with dlvsym: never loads the driver, takes no
 * lock and needs no start-up, so it works from any constructor and from a
 * sanitizer runtime's own start. NULL only when libc has no dlsym under
 * either version it is looked for (then resolution finds nothing). */
SW_UNSANITIZED void *(*sw_real_dlsym(void))(void *, const char *);
/* libcuda's handle once resolved, else NULL. */
void *sw_driver_handle(void);
/* The name of a CUresult, for logs. */
const char *sw_cu_name(CUresult r);

/* ---- the gate (driver.c) ----
 * Every hooked call that issues device work holds the gate shared while it
 * issues; spillway holds it exclusively while it changes any mapping. See
 * vmm.c for why this, with a device synchronization, makes unmapping safe.
 * sw_gate_rd returns false, taking nothing, while no allocation is tracked
 * (nothing can then be unmapped under the caller). */
bool sw_gate_rd(void);
/* Adds delta to the count of tracked allocations that arms the gate (residency
 * keeps it, alloc.c); returns the new count. */
int sw_gate_arm(int delta);
/* The count goes to 0: a fork child tracks nothing of its own. */
void sw_gate_disarm(void);
/* Whether any allocation is tracked (the gate is armed). */
bool sw_tracking_any(void);
/* The real function, for calls that issue no device work (no gate);
 * CUDA_ERROR_NOT_FOUND where the driver lacks it. */
#define SW_CALL(sym, args) (SW_REAL(sym) ? SW_REAL(sym) args : CUDA_ERROR_NOT_FOUND)
/* ---- opts.c: the options, read once at first use ---- */
const sw_options_t *sw_opts(void);

/* driver.c keeps the count: sw_capture_begun counts a begun capture,
 * sw_capture_over uncounts one (never below zero). */
void sw_capture_begun(CUresult r);
void sw_capture_over(void);
/* Some stream of the process is capturing (a count of captures begun and
 * not ended); remap.c's stream_capturing asks about one stream. */
bool sw_capturing(void);

#endif

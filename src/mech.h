/*
 * The mechanism layer's header: the parts of spillway that call the real
 * driver. Kept apart from sw.h so the pure core never sees cuda.h.
 */
#ifndef SW_MECH_H
#define SW_MECH_H

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>

#include "sw.h"

#define SW_EXPORT __attribute__((visibility("default")))

/* Driver functions spillway calls on its own behalf but does not wrap. */
#define SW_USES(X)                                                          \
    X(cuMemCreate) X(cuMemRelease) X(cuMemMap) X(cuMemUnmap) X(cuMemSetAccess) \
    X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemGetAllocationGranularity) \
    X(cuDeviceGetAttribute) X(cuDeviceTotalMem_v2) X(cuCtxGetDevice)        \
    X(cuCtxSynchronize) X(cuStreamSynchronize)                              \
    X(cuFuncGetParamInfo) X(cuKernelGetParamInfo) X(cuGetErrorName)        \
    X(cuStreamGetFlags) X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) \
    X(cuStreamWaitEvent) X(cuModuleLoadData) X(cuMemAllocHost_v2) X(cuStreamIsCapturing) \
    X(cuEventQuery) X(cuEventDestroy_v2)

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
/* The real dlsym, found with dlvsym: never loads the driver. */
void *(*sw_real_dlsym(void))(void *, const char *);
/* libcuda's handle once resolved, else NULL. */
void *sw_driver_handle(void);
/* Swaps a real driver pointer for spillway's wrapper of exactly that
 * variant; other pointers are returned unchanged. */
void *sw_route(void *real_fn);
CUresult sw_route_result(CUresult r, void **pfn);
/* The name of a CUresult, for logs. */
const char *sw_cu_name(CUresult r);

/* ---- the gate (driver.c) ----
 * Every hooked call that issues device work holds the gate shared while it
 * issues; spillway holds it exclusively while it changes any mapping. See
 * vmm.c for why this, with a device synchronization, makes unmapping safe.
 * sw_gate_rd returns false, taking nothing, while no allocation is tracked
 * (nothing can then be unmapped under the caller). */
bool sw_gate_rd(void);
#define SW_GATED(sym, args)                              \
    ({                                                   \
        bool gated_ = sw_gate_rd();                      \
        CUresult r_ = SW_REAL(sym) ? SW_REAL(sym) args   \
                                   : CUDA_ERROR_NOT_FOUND; \
        if (gated_)                                      \
            sw_gate_unrd();                              \
        r_;                                              \
    })

/* ---- init.c ---- */
const sw_options_t *sw_opts(void);
CUresult sw_on_init(unsigned int flags);
/* Started once after the driver's cuInit succeeded: logging, stats. */
void sw_start(void);

/* ---- alloc.c: tracked allocations ---- */
CUresult sw_mem_alloc(CUdeviceptr *dptr, size_t bytesize);
CUresult sw_mem_free(CUdeviceptr dptr);
CUresult sw_mem_get_info(size_t *free, size_t *total);
CUresult sw_mem_get_range(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr);
CUresult sw_pointer_attr(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);
CUresult sw_pointer_attrs(unsigned int n, CUpointer_attribute *attributes, void **data,
                          CUdeviceptr ptr);
/* The table and budget state; callers hold the gate (shared to read,
 * exclusive to change). */
sw_table_t *sw_tracked(void);
bool sw_tracking_any(void);
uint64_t sw_device_room(void);   /* budget left for device chunks; UINT64_MAX: none set */
bool sw_budget_set(void);
/* fork.c's child handler: a child of a process that tracked memory forgets
 * it and passes every allocation through (the parent's CUDA state is not
 * the child's). One thread runs then; can't fail. */
void sw_alloc_fork_child(void);
/* Moves chunk c to `to`, after the device was synchronized under the
 * exclusive gate (sw_safe_sync). Keeps the byte counts. Failure leaves c
 * exactly as it was. */
CUresult sw_move(sw_chunk_t *c, sw_where_t to);
/* The device synchronization that makes unmapping safe; counted. Gate
 * held exclusively. */
CUresult sw_safe_sync(void);

/* The control API's requests (api.c; codes and meanings: include/spillway.h).
 * sw_budgets_get: the effective budgets (SPILLWAY_BUDGET_NONE/UNKNOWN as
 * there), and whether they are resolved yet; can't fail.
 * sw_budgets_change: spillway_set_budgets; a shrunk GPU budget demotes
 * under the exclusive gate, never during a capture (EBUSY, nothing
 * changed). sw_hint_range: spillway_hint; a wrong range or hint changes
 * nothing. sw_phase: drops the learned schedule; can't fail. */
void sw_budgets_get(uint64_t *gpu, uint64_t *host, bool *resolved);
int sw_budgets_change(uint64_t gpu, uint64_t host);
int sw_hint_range(uint64_t ptr, uint64_t bytes, int hint);
void sw_phase(void);

/* v rounded up to a multiple of a (a > 0): sizes to granularities. */
static inline uint64_t sw_round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

/* ---- vmm.c: chunks on the real driver ---- */
typedef struct {
    CUdevice device;
    uint64_t granularity;      /* common multiple of the device and host granularities */
    uint64_t chunk;            /* SPILLWAY_CHUNK rounded up to the granularity */
    bool host_ok;              /* pinned host VMM memory is available */
} sw_vmm_info_t;
/* Probes the device once: VMM support, granularities, which host location
 * works. Returns NULL when VMM cannot be used (spillway then passes
 * allocations through). */
const sw_vmm_info_t *sw_vmm_setup(void);
CUresult sw_vmm_reserve(uint64_t size, CUdeviceptr *va);
void sw_vmm_unreserve(CUdeviceptr va, uint64_t size);
/* Backs c (c->va, c->size set) with a new handle at `where`; maps it with
 * device access. On failure c has no mapping and nothing leaked. */
CUresult sw_vmm_back(sw_chunk_t *c, sw_where_t where);
/* Unmaps and releases c's backing. */
void sw_vmm_unback(sw_chunk_t *c);
/* The primitives prefetch.c builds on. map_at maps h at [va, va+size)
 * with device access, or leaves nothing mapped. */
CUresult sw_vmm_map(CUdeviceptr va, uint64_t size, uint64_t h);
CUresult sw_vmm_unmap(CUdeviceptr va, uint64_t size);
/* Points [va, +size) at handle `to` instead of `from` (safety rule
 * applies). On failure va still maps `from`: if `to` cannot be mapped,
 * `from` is mapped back, and if even that fails the error says which
 * handle holds the bytes. */
CUresult sw_vmm_remap(CUdeviceptr va, uint64_t size, uint64_t from, uint64_t to);
CUresult sw_vmm_create(sw_where_t where, uint64_t size, uint64_t *h);
void sw_vmm_release(uint64_t h);
/* spillway's own stream (non-blocking, created on first use). */
CUresult sw_vmm_stream(CUstream *s);
/* Waits for st; if that fails, for the whole device. *pending: both
 * failed, so st's work may still be running and nothing it touches may
 * be unmapped or released. */
CUresult sw_vmm_wait(CUstream st, bool *pending);
/* Copies c's bytes into a new handle at `to` and remaps c->va onto it;
 * the old handle is released only once the new mapping has access. Any
 * failure restores the old mapping: no data is lost.
 *   keep_copy  on a promotion, keep the host handle as c->home, with the
 *              fingerprint of the bytes copied (if one can be taken);
 *   *copied    false when a chunk with a copy went home by a remap, its
 *              fingerprint unchanged; a changed one is copied, and its
 *              old copy released. */
CUresult sw_vmm_move(sw_chunk_t *c, sw_where_t to, bool keep_copy, bool *copied);

/* ---- pool.c: handles moves released, kept for the next move ----
 * Gate held exclusively for all three; see pool.c for the accounting.
 * sw_pool_take: a pooled handle of exactly `size` at `where` (*h), or
 * false. sw_pool_give: h, mapped nowhere and no chunk's, is kept, or
 * released when the pool is full; can't fail. sw_pool_drain: releases
 * every handle pooled at `where`. */
bool sw_pool_take(sw_where_t where, uint64_t size, uint64_t *h);
void sw_pool_give(sw_where_t where, uint64_t size, uint64_t h);
void sw_pool_drain(sw_where_t where);

/* ---- fingerprint.c: knowing a chunk unchanged, exactly ----
 * Gate held exclusively for all three. sw_fp_ready loads the kernel on
 * first use; false when it cannot (then nothing is known unchanged). */
bool sw_fp_ready(void);
/* A fingerprint is two words (fingerprint.cu). */
#define SW_FP_BYTES 16
/* Queues the fingerprint of [src, +bytes) into the device words at out. */
CUresult sw_fp_queue(CUdeviceptr src, uint64_t bytes, CUdeviceptr out, CUstream st);
/* Takes it on spillway's stream and waits for it (sw_vmm_wait: on
 * *pending the kernel may still be reading src). */
CUresult sw_fp_take(CUdeviceptr src, uint64_t bytes, uint64_t out[2], bool *pending);

/* ---- prefetch.c: the streaming window ----
 * A pool of device slots, filled from chunks' host copies on spillway's
 * stream, at commit points where the application's streams are quiet. */
bool sw_prefetch_on(void);
/* Sets up the pool once a GPU budget is known; returns the bytes it took. */
uint64_t sw_prefetch_setup(uint64_t budget);
/* Notes a stream the application launches on (its own, non-blocking ones
 * must be synchronized and made to wait at commit points). */
void sw_prefetch_note_stream(CUstream s);
/* The stream hooks: every stream is classified when it is made, before
 * anything is tracked, and retired when destroyed: the next commit point
 * waits for the work it still had queued. */
CUresult sw_note_stream(CUresult r, CUstream *s);
CUresult sw_forget_stream(CUstream s, CUresult (*destroy)(CUstream));
/* A commit point for launch `now`, which touches the host chunks at the
 * addresses in need[0..n): gate held exclusively. Brings them and the
 * chunks predicted next into the window. */
void sw_prefetch_commit(const uint64_t *need, int n, uint64_t now);
void sw_prefetch_unmirror(sw_chunk_t *c);
/* Releases a window chunk's slot and home when its allocation is freed
 * (after the free's synchronization). */
void sw_prefetch_forget(sw_chunk_t *c);

/* The link the cost-model verdicts assume (docs/cuda-facts.md §4: H2D DMA and
 * zero-copy on PCIe Gen5; §3: unmap + map + set access, twice, on an
 * A100), until tests/gpu measures this machine's. */
#define SW_LINK_DEFAULT {.h2d_gbps = 50, .zerocopy_gbps = 35, .move_ns = 127000}
/* The learned period, recomputed at most every 64 launches. */
uint64_t sw_period(uint64_t now);

/* ---- launch.c ---- */
enum { SW_HANDLE_FUNC = 1, SW_HANDLE_KERNEL = 2 };
/* A function or kernel handle *h of `kind` from module or library owner. */
CUresult sw_note_handle(CUresult r, void **h, int kind, void *owner);
/* The CUfunction of a CUkernel: it belongs to the kernel's library. */
CUresult sw_note_kernel_function(CUresult r, CUfunction *f, CUkernel k);
/* Unloads module or library `owner` with `unload`, under the gate held
 * exclusively, and forgets the parameter layouts of its handles. */
CUresult sw_unload(CUresult (*unload)(void *), void *owner);
typedef CUresult (*sw_launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*sw_launch_ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
CUresult sw_launch(sw_launch_fn real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                   unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s,
                   void **params, void **extra);
typedef CUresult (*sw_coop_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **);
CUresult sw_launch_cooperative(sw_coop_fn real, CUfunction f, unsigned gx, unsigned gy,
                               unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                               CUstream s, void **params);
CUresult sw_launch_ex(sw_launch_ex_fn real, const CUlaunchConfig *config, CUfunction f,
                      void **params, void **extra);
/* Scans a launch's arguments and stamps the chunks hit; gate held shared. */
void sw_mark(CUfunction f, void **params, void **extra, CUstream s);
/* A copy of n bytes from host memory src to the device: a small one may
 * be a table of pointers, so every tracked chunk one of its words points
 * into is marked `pointed` (learned policy only). Takes the gate shared. */
void sw_note_pointers(const void *src, size_t n);
/* The sequence number of the latest launch seen. */
uint64_t sw_launch_now(void);
/* A capture begins with writers excluded, so that no move that checked
 * sw_capturing() under the exclusive gate can synchronize inside it. */
#define SW_CAPTURE_BEGIN(sym, args)                                     \
    ({                                                                  \
        sw_gate_lock_writers();                                         \
        CUresult r_ = SW_REAL(sym) ? SW_REAL(sym) args : CUDA_ERROR_NOT_FOUND; \
        sw_capture_begun(r_);                                           \
        sw_gate_unlock_writers();                                       \
        r_;                                                             \
    })
void sw_capture_begun(CUresult r);
/* Ends a capture with `end` (cuStreamEndCapture or its _ptsz form, as
 * per_thread says), and uncounts it when the stream is no longer
 * capturing afterwards, whatever the result. */
CUresult sw_capture_end(CUresult (*end)(CUstream, CUgraph *), CUstream s, CUgraph *g,
                        bool per_thread);
/* Some stream of the process is capturing (a count of captures begun and
 * not ended); prefetch.c's stream_capturing asks about one stream. */
bool sw_capturing(void);

/* ---- runtime.c: the shared CUDA runtime ----
 * The runtime may reach the driver through wrapped public entry points or
 * through private ones. Its wrappers therefore do the work themselves and
 * mark this thread while they call into the runtime, so that a driver
 * wrapper reached from inside does not do it a second time. */
typedef struct {
    bool inside;   /* a runtime wrapper is calling the real runtime */
    bool gated;    /* ... holding the gate shared */
    bool handled;  /* the work was done (scan, meminfo adjustment) */
} sw_rt_state_t;
sw_rt_state_t *sw_rt_state(void);
enum { SW_RT_LEGACY, SW_RT_PTSZ };
/* The address an exported runtime wrapper returns to: the code that called
 * it, whose own runtime is the one to forward to. */
#define SW_CALLER __builtin_return_address(0)
cudaError_t sw_rt_malloc(const void *caller, void **p, size_t size);
cudaError_t sw_rt_free(const void *caller, void *p);
cudaError_t sw_rt_mem_get_info(const void *caller, size_t *free, size_t *total);
cudaError_t sw_rt_launch(const void *caller, int variant, const void *func, dim3 grid, dim3 block,
                         void **args, size_t shmem, cudaStream_t stream);
cudaError_t sw_rt_launch_ex(const void *caller, int variant, const cudaLaunchConfig_t *config,
                            const void *func, void **args);
/* alloc.c helpers the runtime wrappers share */
bool sw_is_tracked_base(CUdeviceptr p);
void sw_meminfo_adjust(size_t *free, size_t *total);

#endif

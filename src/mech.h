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
    X(cuStreamGetCtx) X(cuGraphKernelNodeGetParams_v2)

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
/* The same for a copy or memset on stream st that reads [s, +sn) and
 * writes [d, +dn) (0 lengths: none): window copies of those ranges go
 * home first (window.c). SW_GATED_IO_ALL: ranges unknown, all go home. */
#define SW_GATED_IO(sym, args, st, d, dn, s, sn)         \
    ({                                                   \
        bool gated_ = sw_gate_rd();                      \
        if (gated_ && sw_window_busy()) {                \
            sw_window_touch((d), (dn), (st));            \
            sw_window_touch((s), (sn), (st));            \
        }                                                \
        CUresult r_ = SW_REAL(sym) ? SW_REAL(sym) args   \
                                   : CUDA_ERROR_NOT_FOUND; \
        if (gated_)                                      \
            sw_gate_unrd();                              \
        r_;                                              \
    })
#define SW_GATED_IO_ALL(sym, args, st)                   \
    ({                                                   \
        bool gated_ = sw_gate_rd();                      \
        if (gated_)                                      \
            sw_window_flush(st);                         \
        CUresult r_ = SW_REAL(sym) ? SW_REAL(sym) args   \
                                   : CUDA_ERROR_NOT_FOUND; \
        if (gated_)                                      \
            sw_gate_unrd();                              \
        r_;                                              \
    })
/* The same for cuStreamBatchMemOp: the words its n operations reach. */
#define SW_GATED_MEMOPS(sym, args, st, n, ops)           \
    ({                                                   \
        bool gated_ = sw_gate_rd();                      \
        if (gated_ && sw_window_busy())                  \
            sw_window_touch_memops((n), (ops), (st));    \
        CUresult r_ = SW_REAL(sym) ? SW_REAL(sym) args   \
                                   : CUDA_ERROR_NOT_FOUND; \
        if (gated_)                                      \
            sw_gate_unrd();                              \
        r_;                                              \
    })
#define SW_GATED(sym, args)                              \
    ({                                                   \
        bool gated_ = sw_gate_rd();                      \
        CUresult r_ = SW_REAL(sym) ? SW_REAL(sym) args   \
                                   : CUDA_ERROR_NOT_FOUND; \
        if (gated_)                                      \
            sw_gate_unrd();                              \
        r_;                                              \
    })

/* The real function, for calls that issue no device work (no gate);
 * CUDA_ERROR_NOT_FOUND where the driver lacks it. */
#define SW_CALL(sym, args) (SW_REAL(sym) ? SW_REAL(sym) args : CUDA_ERROR_NOT_FOUND)
/* The real function when `check` says CUDA_SUCCESS, else check's answer
 * (graphnodes.c). */
#define SW_NODE_CHECKED(check, sym, args)                            \
    ({                                                               \
        CUresult c_ = (check);                                       \
        c_ == CUDA_SUCCESS ? SW_CALL(sym, args) : c_;                \
    })
/* sw_graph_kernel_check for kernel node parameters p (NULL: the driver's
 * answer), whose CUkernel is `kern` (NULL in the first version). */
#define SW_KERNEL_NODE(call, p, was, kern)                                         \
    ((p) ? sw_graph_kernel_check(#call, (p)->func, (kern),                         \
                                 (p)->kernelParams, (p)->extra, (was))             \
         : CUDA_SUCCESS)

/* ---- init.c ---- */
const sw_options_t *sw_opts(void);
CUresult sw_on_init(unsigned int flags);
/* Started once after the driver's cuInit succeeded: logging, stats. */
void sw_start(void);

/* ---- untracked.c: what spillway does not manage, by route ---- */
typedef enum {
#define SW_ROUTE_ENUM(X, name, help) SW_ROUTE_##name,
    SW_PASSTHROUGH_ROUTES(SW_ROUTE_ENUM, _)
#undef SW_ROUTE_ENUM
    SW_ROUTE_COUNT
} sw_route_t;
/* Counts bytes handed out untracked by route; the first time a route is
 * taken it is named once, at info level. Can't fail. */
void sw_untracked(sw_route_t route, uint64_t bytes);
/* cuMemAllocManaged and cuMemAllocPitch: the driver's, counted. */
CUresult sw_alloc_managed(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
CUresult sw_alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                        unsigned int elemsize);

/* ---- ordered.c: the stream-ordered allocator ----
 * cuMemAllocAsync/cuMemAllocFromPoolAsync of at least SPILLWAY_MIN_ALLOC
 * are tracked like cuMemAlloc; cuMemFreeAsync of tracked memory is
 * released once its stream has reached the free. The pool hooks keep
 * track of pools whose memory spillway must not replace. */
CUresult sw_mem_alloc_async(CUresult (*real)(CUdeviceptr *, size_t, CUstream), CUdeviceptr *dptr,
                            size_t bytesize, CUstream st);
CUresult sw_mem_alloc_from_pool(CUresult (*real)(CUdeviceptr *, size_t, CUmemoryPool, CUstream),
                                CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream st);
CUresult sw_mem_free_async(CUresult (*real)(CUdeviceptr, CUstream), CUdeviceptr dptr, CUstream st);
CUresult sw_mempool_created(CUresult r, const CUmemoryPool *pool, const CUmemPoolProps *props);
CUresult sw_mempool_destroy(CUmemoryPool pool);
CUresult sw_mempool_trim(CUmemoryPool pool, size_t keep);
/* Releases the stream-ordered frees whose streams have reached them;
 * with wait, waits for every pending one first. Returns how many were
 * released. Takes the gate itself: never call it holding the gate. */
size_t sw_ordered_reap(bool wait);
/* Whether any stream-ordered free is pending. */
bool sw_ordered_any(void);
/* Whether a stream-ordered free of the allocation based at va is pending
 * (a second free of it is the application's error). */
bool sw_ordered_pending(CUdeviceptr va);

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
uint64_t sw_device_room(int dev); /* budget left for dev's chunks; UINT64_MAX: none set */
bool sw_budget_set(void);         /* some device has a budget */
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

/* The tracked path of every allocation route: tracks bytesize bytes at
 * *dptr, or declines with CUDA_ERROR_NOT_SUPPORTED and *route saying why
 * (nothing done: the caller passes the allocation to the driver). Out of
 * memory only when neither device nor host memory could take it, with
 * nothing leaked. Stream-ordered frees that have completed are released
 * first, and waited for when the memory is short (ordered.c). */
CUresult sw_try_track(CUdeviceptr *dptr, size_t bytesize, sw_route_t *route);
/* Allocates through `again` untracked, counted under route; when the
 * driver answers out of memory, tracked chunks make room (completed
 * stream-ordered frees first, then demotions) and it is asked again. */
typedef CUresult (*sw_alloc_again_t)(CUdeviceptr *dptr, size_t bytesize, void *ctx);
CUresult sw_passthrough(sw_route_t route, CUdeviceptr *dptr, size_t bytesize,
                        sw_alloc_again_t again, void *ctx);
/* Frees the tracked allocations based at v[0..n) with one synchronization
 * (the safety rule's). Those no longer tracked are skipped. On a failed
 * synchronization nothing is freed (the bytes stay mapped, nothing lost). */
CUresult sw_mem_free_tracked(const CUdeviceptr *v, size_t n);

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
/* Waits for st; if that fails, for every context. *pending: both
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

/* ---- devices.c: what spillway keeps per device (the essay there) ----
 * The gate is held exclusively to change anything; launches read rooms
 * and bytes under the shared hold. */
/* The current context's device; -1 when none is current. Can't fail. */
int sw_dev_current(void);
/* The first device tracked (vmm.c's, the remapping window's); -1 before any. */
int sw_dev_home(void);
/* The current device, made ready for a tracked allocation (probed once,
 * its budget resolved, the current context recorded for the safety
 * rule): its ordinal, or -1 when spillway cannot track there (no
 * context, no VMM, too many contexts): the allocation then passes
 * through. *fresh: the device was made ready by this call. Gate held
 * exclusively. */
int sw_dev_ready(const sw_vmm_info_t *vi, bool *fresh);
/* The cuCtxEnablePeerAccess hook: calls the driver and, on success,
 * records the current context, whose kernels may now reach its peer's
 * tracked chunks, for the safety synchronization. The driver's result. */
CUresult sw_enable_peer(CUcontext peer, unsigned int flags);
/* Budget left on dev for its device chunks; UINT64_MAX: no budget. */
uint64_t sw_dev_room(int dev);
bool sw_dev_any_budget(void);
/* dev's budget into *budget; false when it has none. */
bool sw_dev_budget(int dev, uint64_t *budget);
/* dev's budget was picked from its free memory, not given. */
bool sw_dev_budget_picked(int dev);
/* dev has a budget and its window was not made yet, nor failed to be
 * (a picked budget makes it only when the budget first binds). */
bool sw_dev_window_due(int dev);
void sw_dev_window_tried(int dev);
void sw_dev_window_untried(int dev);
uint64_t sw_dev_bytes(int dev);
/* dev's resident bytes change by delta: its count, device_bytes and
 * devN_device_bytes move together. Can't fail. */
void sw_dev_bytes_add(int dev, int64_t delta);
/* Device dev's field of a per-device group, named by device 0's. */
sw_stat_id_t sw_dev_stat(int dev, sw_stat_id_t dev0_field);
/* spillway_set_budgets: every tracked device gets the same budget. */
void sw_dev_set_budgets(bool set, uint64_t budget);
/* The next tracked device after `after` (-1: the first); -1 at the end. */
int sw_dev_next(int after);
/* dev's device-handle properties, and the access list its mappings get
 * (dev and the devices that can reach it as peers). */
const CUmemAllocationProp *sw_dev_prop(int dev);
size_t sw_dev_access(int dev, const CUmemAccessDesc **desc);
/* The stream moves of dev's chunks copy on into *st: home's is spillway's
 * own stream (sw_vmm_stream), another device's the one made in its
 * context when it was first seen. */
CUresult sw_dev_copy_stream(int dev, CUstream *st);
/* Up to max of the contexts recorded (all devices) into out: how many. */
#define SW_MAX_CONTEXTS (SW_MAX_DEVICES * 8)
int sw_dev_contexts(CUcontext *out, int max);
/* The safety rule's synchronization: the current context, then every
 * other context recorded (devices.c). The first failure is returned;
 * nothing may then be unmapped. */
CUresult sw_dev_sync_all(void);

/* ---- appvmm.c: the application's own VMM handles ----
 * The hooks of cuMemCreate, cuMemMap, cuMemUnmap, cuMemRelease,
 * cuMemRetainAllocationHandle, cuMemGetAllocationPropertiesFromHandle and
 * cuMemExportToShareableHandle. Each answers as the driver would; a
 * handle spillway stands in for is moved like any tracked chunk while it
 * is mapped once, whole. */
CUresult sw_app_create(CUmemGenericAllocationHandle *out, size_t size,
                       const CUmemAllocationProp *prop, unsigned long long flags);
CUresult sw_app_map(CUdeviceptr va, size_t size, size_t offset, CUmemGenericAllocationHandle key,
                    unsigned long long flags);
CUresult sw_app_unmap(CUdeviceptr va, size_t size);
CUresult sw_app_release(CUmemGenericAllocationHandle key);
CUresult sw_app_retain(CUmemGenericAllocationHandle *out, void *addr);
CUresult sw_app_props(CUmemAllocationProp *prop, CUmemGenericAllocationHandle key);
CUresult sw_app_export(void *shareable, CUmemGenericAllocationHandle key,
                       CUmemAllocationHandleType type, unsigned long long flags);
/* What appvmm.c needs of alloc.c; gate held exclusively for all.
 * sw_alloc_ready: the VMM and budget state, resolved on first use, and
 * the current device (*dev); NULL when spillway is off or cannot track
 * there. sw_room_for: room under dev's budget for size bytes, demoting
 * dev's chunks to make it; false when even that cannot. sw_demote_some:
 * demotes about need bytes of dev's; the bytes freed.
 * sw_alloc_register: puts a built allocation in the table (-1: out of
 * memory or overlap, nothing changed); sw_alloc_unregister: takes it out,
 * its window copies and host copies dropped, its handles kept. */
const sw_vmm_info_t *sw_alloc_ready(int *dev);
bool sw_room_for(int dev, uint64_t size, bool *synced);
uint64_t sw_demote_some(int dev, uint64_t need, bool *synced);
int sw_alloc_register(sw_alloc_t *a);
void sw_alloc_unregister(sw_alloc_t *a);

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
 * One module per device. sw_fp_ready(dev) loads dev's on first use, while
 * dev is current; false when it cannot (then nothing is known unchanged).
 * Kernels are queued on streams of dev. The window's lock or the gate
 * held exclusively orders the loads. */
bool sw_fp_ready(int dev);
/* A fingerprint is two words (fingerprint.cu). */
#define SW_FP_BYTES 16
/* Queues the fingerprint of [src, +bytes) into the device words at out. */
CUresult sw_fp_queue(int dev, CUdeviceptr src, uint64_t bytes, CUdeviceptr out, CUstream st);
/* Takes it with dev's module on dev's copy stream and waits for it
 * (sw_vmm_wait: on *pending the kernel may still be reading src). */
CUresult sw_fp_take(int dev, CUdeviceptr src, uint64_t bytes, uint64_t out[2], bool *pending);

/* Queues spillway_copy_if_changed (fingerprint.cu): copies [src, +bytes)
 * to dst when the fingerprints at fp_home and fp_now differ, and then sets
 * the 32-bit word at `changed`. NOT_FOUND without the kernel. */
CUresult sw_fp_copy_if_changed(int dev, CUdeviceptr src, CUdeviceptr dst, uint64_t bytes,
                               CUdeviceptr fp_home, CUdeviceptr fp_now, CUdeviceptr changed,
                               CUstream st);

/* spillway_unwindow's one parameter (fingerprint.cu, and simgpu's
 * built-in, field for field): in the spans, every 8-byte word holding an
 * address in [copy[k], +copy_len[k]) is put back to home[k] at the same
 * offset, and found[unit[k]] is set. */
#define SW_UNWINDOW_SPANS 8
#define SW_UNWINDOW_COPIES 16
typedef struct {
    uint64_t lo[SW_UNWINDOW_SPANS], len[SW_UNWINDOW_SPANS];
    uint64_t copy[SW_UNWINDOW_COPIES], copy_len[SW_UNWINDOW_COPIES], home[SW_UNWINDOW_COPIES];
    uint32_t unit[SW_UNWINDOW_COPIES];
    uint32_t nspans, ncopies;
    uint32_t *found;
} sw_unwindow_t;
_Static_assert(sizeof(sw_unwindow_t) == 592, "spillway_unwindow's parameter is 592 bytes");
/* Queues spillway_unwindow(*a) on st. NOT_FOUND without the kernel. */
CUresult sw_fp_unwindow(int dev, const sw_unwindow_t *a, CUstream st);

/* ---- streams.c: the application's streams ----
 * Every stream is classified when it is made or first launched on, and
 * retired when destroyed (the next ordering waits for the work it still
 * had queued). Calls only the driver. */
typedef struct {
    void **v;
    int n, cap;
} sw_list_t;
void sw_streams_note(CUstream s);
/* The stream hooks. */
CUresult sw_note_stream(CUresult r, CUstream *s);
CUresult sw_forget_stream(CUstream s, CUresult (*destroy)(CUstream));
/* A non-blocking stream could not be listed: orderings fall back to
 * synchronizing. */
bool sw_streams_unordered(void);
/* st waits, on the GPU, for all the work the application has issued: the
 * legacy stream (every blocking stream) of the current context and of
 * every context devices.c recorded, every non-blocking stream, and the
 * queued work of streams destroyed since; an event of each stream's
 * context is recorded on it. No host wait; false if st could not be
 * ordered so. *waited takes the destroyed streams' events, for
 * sw_streams_release once st has been waited for (done) or not; NULL
 * leaves them for the next ordering. Gate held (shared is enough). */
bool sw_streams_order_all(CUstream st, sw_list_t *waited);
void sw_streams_release(sw_list_t *waited, bool done);
/* sw_streams_order_all, leaving destroyed streams' events in place. */
CUresult sw_streams_order(CUstream st);
/* Everything the application issues from now on waits for ev, on the GPU;
 * a non-blocking stream first seen later waits for it then. */
void sw_streams_wait(CUevent ev);

/* ---- prefetch.c: the remapping window (SPILLWAY_REWRITE=0) ----
 * A pool of device slots, filled from chunks' host copies on spillway's
 * stream, at commit points where the application's streams are quiet. */
bool sw_prefetch_on(void);
/* Sets up the pool once a GPU budget is known; returns the bytes it took. */
uint64_t sw_prefetch_setup(uint64_t budget);
/* A commit point for launch `now`, which touches the host chunks at the
 * addresses in need[0..n): gate held exclusively. Brings them and the
 * chunks predicted next into the window. */
void sw_prefetch_commit(const uint64_t *need, int n, uint64_t now);
void sw_prefetch_unmirror(sw_chunk_t *c);
/* Releases a window chunk's slot and home when its allocation is freed
 * (after the free's synchronization). */
void sw_prefetch_forget(sw_chunk_t *c);


/* ---- window.c: the streaming windows (SPILLWAY_REWRITE=1, the default) ----
 * One per device: its memory, made once; host ranges of its chunks are
 * copied into it on spillway's stream and launches in its context are
 * rewritten to read the copies. Every function takes the windows' own
 * locks; callers hold the gate (shared is enough). */
#define SW_WINDOW_MAX_USES 16 /* copies one launch may read */
/* Some device has a window. */
bool sw_window_on(void);
uint64_t sw_window_size(int dev); /* 0: dev has none */
/* The device whose window serves launches in the current context; -1
 * when none does (another context, or no window there). */
int sw_window_here(void);
/* Makes dev's window, in the current context (dev's), out of dev's GPU
 * budget, for the allocations of t: the bytes it took (0: none made). */
uint64_t sw_window_setup(int dev, uint64_t budget, const sw_table_t *t);
/* Frees dev's window: its bytes (0: none, or a graph holds copies in it,
 * or a capture is on). Gate held exclusively, and the device synchronized
 * since the last work was issued (the safety rule's synchronization). */
uint64_t sw_window_release(int dev);
/* Whether [start, +len) may be streamed by dev's window: every chunk dev's
 * and on the host. */
bool sw_window_streamable(int dev, uint64_t start, uint64_t len);
/* Launch `now` on s, in dev's context, names the host range [start, +len),
 * streamable, in a loop of `period` launches (0: unknown): true and
 * *copy (the copy's address, for start) when it may read the window copy
 * instead. s then waits for the copy on the GPU; the caller launches and
 * calls sw_window_read(s) before releasing the gate. false: read in place
 * (any copy of an overlapping range dropped first, s ordered after it):
 * also for a range that does not recur with the loop, since a copy it
 * does not repay is a copy wasted. */
bool sw_window_use(int dev, uint64_t start, uint64_t len, uint64_t now, uint64_t period,
                   CUstream s, uint64_t *copy);
/* The launch will not read the copy of the range at start after all
 * (its arguments could not be pointed at it): the copy goes home, with s
 * after it, and is not counted as read. */
void sw_window_unuse(uint64_t start, CUstream s);
/* The spans the launch sw_window_use is serving could write, besides the
 * ranges it names (SW_UNWINDOW_SPANS at most): after it, a window address
 * found stored in them is put back to its home (sw_window_read). */
void sw_window_spans(const uint64_t *lo, const uint64_t *len, int n);
/* Whether dev's window can put stored window addresses back: without
 * that, a launch that could store one is not served. */
bool sw_window_guarded(int dev);
/* After the launch: puts back window addresses it stored in its spans,
 * and records that s reads the copies sw_window_use gave this thread.
 * Cheap when there are none. */
void sw_window_read(CUstream s);
/* Whether any window has had a range (a hint, read without the lock). */
bool sw_window_busy(void);
/* Whether addr lies in a streaming window's memory. */
bool sw_window_holds(uint64_t addr);
/* Work on s is about to read or write home in [lo, +len) in place (a copy,
 * a memset, a launch not rewritten, a move): overlapping copies go home
 * first, with s after them, and home's fingerprint is forgotten. */
void sw_window_touch(uint64_t lo, uint64_t len, CUstream s);
/* sw_window_touch for the words n stream memory operations reach. */
void sw_window_touch_memops(unsigned n, const CUstreamBatchMemOpParams *ops, CUstream s);
/* The same for every copy (a graph launch, a capture, a 2D or 3D copy:
 * work whose ranges spillway does not know). */
void sw_window_flush(CUstream s);
/* [lo, +len) is being freed, after a synchronization: its copies and
 * ranges are dropped, nothing goes home. */
void sw_window_forget(uint64_t lo, uint64_t len);
/* Captures (window.c, "captures"): before a capture begins on s, every
 * copy goes home; once it has begun (r: the begin's result), the window
 * serves launches on s by copies issued into the capture; before it ends,
 * those copies go home inside it and spillway's capture stream rejoins s;
 * sw_window_capture_ends says true when a step the graph needs could not
 * be issued into it (the capture was made to fail, see break_capture).
 * sw_window_replay launches graph g on s after the window's earlier work
 * and the previous replay. */
void sw_window_capture_begins(CUstream s);
void sw_window_captured(CUstream s, CUresult r);
bool sw_window_capture_ends(CUstream s);
CUresult sw_window_replay(CUresult (*launch)(CUgraphExec, CUstream), CUgraphExec g, CUstream s);

/* The link the cost-model verdicts assume (docs/cuda-facts.md §4: H2D DMA and
 * zero-copy on PCIe Gen5; §3: unmap + map + set access, twice, on an
 * A100), until tests/gpu measures this machine's. */
#define SW_LINK_DEFAULT {.h2d_gbps = 50, .zerocopy_gbps = 35, .move_ns = 127000}
/* The learned period, recomputed at most every 64 launches. */
uint64_t sw_period(uint64_t now);

/* ---- graphnodes.c: kernel nodes given arguments after a capture ---- */
/* CUDA_SUCCESS when a kernel node's new arguments (func, or kern when
 * func is NULL; kernelParams or extra) hold no streaming-window address
 * that node `was` (NULL: a new node) does not hold already; else
 * CUDA_ERROR_INVALID_VALUE, said in the log naming `call`. */
CUresult sw_graph_kernel_check(const char *call, CUfunction func, CUkernel kern, void **params,
                               void **extra, CUgraphNode was);
/* The same for a generic node's parameters; other node types pass. */
CUresult sw_graph_node_check(const char *call, const CUgraphNodeParams *p, CUgraphNode was);

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
/* Scans a launch's arguments and stamps the chunks hit; gate held shared.
 * Ranges the streaming window serves are rewritten: *params or *extra then
 * point at a per-thread copy of the arguments, good until this thread's
 * next launch, and the caller calls sw_window_read(s) after launching. */
void sw_mark(CUfunction f, void ***params, void ***extra, CUstream s);
/* A copy of n bytes from host memory src to the device: a small one may
 * be a table of pointers, so every tracked chunk one of its words points
 * into is marked `pointed` (learned policy only). Takes the gate shared. */
void sw_note_pointers(const void *src, size_t n);
/* The parameter layout of a function or kernel handle; NULL: unknown. */
const sw_layout_t *sw_layout(CUfunction f);
/* The sequence number of the latest launch seen. */
uint64_t sw_launch_now(void);
/* A capture begins with writers excluded, so that no move that checked
 * sw_capturing() under the exclusive gate can synchronize inside it. */
#define SW_CAPTURE_BEGIN(sym, args)                                     \
    ({                                                                  \
        sw_window_capture_begins(hStream);                              \
        sw_gate_lock_writers();                                         \
        CUresult r_ = SW_REAL(sym) ? SW_REAL(sym) args : CUDA_ERROR_NOT_FOUND; \
        sw_capture_begun(r_);                                           \
        sw_window_captured(hStream, r_);                                \
        sw_gate_unlock_writers();                                       \
        r_;                                                             \
    })
/* driver.c keeps the count: sw_capture_begun counts a begun capture,
 * sw_capture_over uncounts one (never below zero). */
void sw_capture_begun(CUresult r);
void sw_capture_over(void);
/* Ends a capture with `end` (cuStreamEndCapture or its _ptsz form, as
 * per_thread says), and uncounts it when the stream is no longer
 * capturing afterwards, whatever the result. */
CUresult sw_capture_end(CUresult (*end)(CUstream, CUgraph *), CUstream s, CUgraph *g,
                        bool per_thread);
/* Some stream of the process is capturing (a count of captures begun and
 * not ended); prefetch.c's stream_capturing asks about one stream. */
bool sw_capturing(void);

/* ---- tensormap.c: TMA descriptors spillway saw made ----
 * The table (core/tmap.c) of every descriptor a cuTensorMapEncode* or
 * cuTensorMapReplaceAddress call returned, with its global address; NULL
 * until the first one. Launches look descriptors up in it with
 * sw_tmap_locate (launch.c; so may a rewriter, to find where in the
 * arguments each recognised descriptor lies). */
sw_tmap_t *sw_tmaps(void);
/* The encode hooks: r is the real encode's result. On success records
 * desc -> (addr, the tensor's extent from rank, dim and strides in bytes,
 * 0 when unknown); returns r. Can't fail: a table that cannot be made
 * only logs, and the descriptor is then not recognised. */
CUresult sw_tmap_encoded(CUresult r, const CUtensorMap *desc, CUtensorMapDataType type,
                         cuuint32_t rank, const void *addr, const cuuint64_t *dim,
                         const cuuint64_t *strides);
/* The cuTensorMapReplaceAddress hook: calls real (NULL: returns
 * CUDA_ERROR_NOT_FOUND) and, on success, records the new bytes -> addr,
 * with the size recorded for the old bytes. Returns real's result. */
CUresult sw_tmap_replace(CUresult (*real)(CUtensorMap *, void *), CUtensorMap *desc, void *addr);
/* For a rewriter: desc (128 bytes, any alignment) made to point at
 * new_addr, written to out (128 bytes, 64-byte aligned) by the real
 * cuTensorMapReplaceAddress on a private copy; the result is not
 * recorded. Returns CUDA_SUCCESS; or, with out untouched,
 * CUDA_ERROR_INVALID_VALUE for a NULL or misaligned argument,
 * CUDA_ERROR_NOT_FOUND where the driver lacks cuTensorMapReplaceAddress,
 * or the driver's error (new_addr misaligned for the tensor, desc not a
 * descriptor). */
CUresult sw_tmap_retarget(const void *desc, uint64_t new_addr, void *out);

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
/* What p is to the table, looked up under the shared gate: a tracked
 * base, inside a tracked allocation but not its base, or neither. */
typedef enum { SW_FREE_UNTRACKED, SW_FREE_INSIDE, SW_FREE_TRACKED } sw_free_kind_t;
sw_free_kind_t sw_free_kind(CUdeviceptr p);
void sw_meminfo_adjust(size_t *free, size_t *total);

#endif

/*
 * The device layer: VMM primitives, what is kept per device, the handle
 * pool, spillway's kernels (the fingerprint) and the application's
 * streams. Calls only the driver layer (driver.h).
 */
#ifndef SW_DEVICE_H
#define SW_DEVICE_H

#include "driver.h"

/* ---- timers.c: work timed on the GPU, never waited for ---- */
typedef struct sw_timers sw_timers_t;
/* A ring of timers; NULL where the driver cannot time events. */
sw_timers_t *sw_timers_new(void);
void sw_timers_free(sw_timers_t *ts);
/* Starts a timer on s (an event recorded there) that settles with `tag`:
 * its index, or -1 (none free, or the driver refused). Every timer
 * started must be stopped or dropped. */
int sw_timer_start(sw_timers_t *ts, uint64_t tag, CUstream s);
/* Stops timer i on s: after the work issued there since its start. */
void sw_timer_stop(sw_timers_t *ts, int i, CUstream s);
/* Drops timer i: the work it was to time was not issued. */
void sw_timer_drop(sw_timers_t *ts, int i);
/* Hands done() each timer, oldest first, whose end has passed, with the
 * milliseconds it timed (negative: it failed or was dropped), and frees
 * it; stops at the first one not done yet. Never waits. */
void sw_timers_settle(sw_timers_t *ts, void (*done)(uint64_t tag, float ms, void *arg),
                      void *arg);

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
 * device access. On failure c has no mapping and nothing leaked. Here and
 * in sw_vmm_move only c's handles change: where c lies is placement's to
 * record (place.c). */
CUresult sw_vmm_back(sw_chunk_t *c, sw_where_t where);
/* Unmaps and releases c's backing. */
void sw_vmm_unback(sw_chunk_t *c);
/* The primitives remap.c builds on. map_at maps h at [va, va+size)
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
/* Copies c's bytes into a new handle at `to` (c->where still says where
 * they are) and remaps c->va onto it;
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
/* sw_dev_budget, or before dev's first tracked allocation the budget set
 * for it (SPILLWAY_GPU_BUDGET, spillway_set_budgets); a picked one is
 * known only from then. */
bool sw_dev_budget_meant(int dev, uint64_t *budget);
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
/* spillway's own stream (non-blocking, created on first use). */
CUresult sw_dev_own_stream(CUstream *s);
/* The stream moves of dev's chunks copy on into *st: home's is spillway's
 * own stream (sw_dev_own_stream), another device's the one made in its
 * context when it was first seen. */
CUresult sw_dev_copy_stream(int dev, CUstream *st);
/* Waits for st; if that fails, for every context. *pending: both
 * failed, so st's work may still be running and nothing it touches may
 * be unmapped or released. */
CUresult sw_dev_wait(CUstream st, bool *pending);
/* Up to max of the contexts recorded (all devices) into out: how many. */
#define SW_MAX_CONTEXTS (SW_MAX_DEVICES * 8)
int sw_dev_contexts(CUcontext *out, int max);
/* The safety rule's synchronization: the current context, then every
 * other context recorded (devices.c). The first failure is returned;
 * nothing may then be unmapped. */
CUresult sw_dev_sync_all(void);

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
 * (sw_dev_wait: on *pending the kernel may still be reading src). */
CUresult sw_fp_take(int dev, CUdeviceptr src, uint64_t bytes, uint64_t out[2], bool *pending);

/* Queues spillway_copy_if_changed (fingerprint.cu): copies [src, +bytes)
 * to dst when the fingerprints at fp_home and fp_now differ, and then sets
 * the 32-bit word at `changed`. NOT_FOUND without the kernel. */
CUresult sw_fp_copy_if_changed(int dev, CUdeviceptr src, CUdeviceptr dst, uint64_t bytes,
                               CUdeviceptr fp_home, CUdeviceptr fp_now, CUdeviceptr changed,
                               CUstream st);

/* Queues spillway_way_home (fingerprint.cu): the fingerprint of [src,
 * +bytes) summed into the three zeroed words at acc, and on a difference
 * from the one at fp_home a copy to dst, the 32-bit word at `changed` set
 * and fp_home made the new one; acc is left zero. NOT_FOUND without the
 * kernel. */
#define SW_FP_ACC_BYTES 24
CUresult sw_fp_way_home(int dev, CUdeviceptr src, CUdeviceptr dst, uint64_t bytes,
                        CUdeviceptr fp_home, CUdeviceptr acc, CUdeviceptr changed, CUstream st);

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
/* spillway_unwindow_home's one parameter: spillway_unwindow's, then
 * spillway_way_home's six, in one kernel: the words of spans inside [src,
 * +bytes) put back as they are hashed. bytes must be a multiple of 8, and
 * no span may reach [dst, +bytes). */
typedef struct {
    sw_unwindow_t uw;
    uint64_t src, dst, bytes, fp_home, acc, changed;
} sw_unwindow_home_t;
_Static_assert(sizeof(sw_unwindow_home_t) == 640, "spillway_unwindow_home's parameter is 640 bytes");
/* Queues spillway_unwindow_home(*a) on st. NOT_FOUND without the kernel. */
CUresult sw_fp_unwindow_home(int dev, const sw_unwindow_home_t *a, CUstream st);

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

#endif

/*
 * Tracked allocations: cuMemAlloc/cuMemFree, plus the budgets that decide
 * where chunks live. The questions applications ask about pointers are
 * ptrinfo.c's, the control API's requests control.c's, and the streaming
 * window's room in each budget winroom.c's.
 *
 * An allocation of at least SPILLWAY_MIN_ALLOC becomes a reservation tiled
 * by chunks of at most SPILLWAY_CHUNK. Before creating it, spillway makes
 * room under SPILLWAY_GPU_BUDGET by demoting the least recently used
 * chunks; when the driver still answers out of memory it demotes more and
 * retries; chunks that cannot fit on the device are born in host memory.
 * Only when host memory (SPILLWAY_HOST_BUDGET) is exhausted too does the
 * application get the driver's CUDA_ERROR_OUT_OF_MEMORY, with nothing
 * leaked. Allocations made during a stream capture, below MIN_ALLOC, on
 * a device spillway cannot track, or while VMM is unusable pass through
 * untouched, counted by route (untracked.c). Every device is tracked on
 * its own terms: its budget, its chunks, its victims (devices.c says what
 * is per device and why). The stream-ordered allocator (ordered.c) and
 * the application's own handles (appvmm.c) come through here too. The
 * table, the host budget and the moves themselves are placement's
 * (place.c), below this file.
 */
#include "residency.h"

#include "spillway.h"

#include <stdlib.h>
#include <string.h>

#define MAX_VICTIMS 4096

static bool fork_child;                /* see sw_alloc_fork_child */
/* Budgets a program set (spillway_set_budgets) before the first tracked
 * allocation resolved the options' ones; SPILLWAY_BUDGET_KEEP: none. */
static uint64_t gpu_pending = SPILLWAY_BUDGET_KEEP, host_pending = SPILLWAY_BUDGET_KEEP;
/* The stream-ordered allocator's pending frees (ordered.c, above this
 * file): it hands its functions down before it pends the first one, and
 * until then none is pending. */
static const sw_pending_frees_t *ordered_frees;

void sw_budgets_pend(uint64_t gpu, uint64_t host)
{
    if (gpu != SPILLWAY_BUDGET_KEEP)
        gpu_pending = gpu;
    if (host != SPILLWAY_BUDGET_KEEP)
        host_pending = host;
}

void sw_budgets_pending(uint64_t *gpu, uint64_t *host)
{
    *gpu = gpu_pending;
    *host = host_pending;
}

void sw_alloc_pending_frees(const sw_pending_frees_t *f)
{
    __atomic_store_n(&ordered_frees, f, __ATOMIC_RELEASE);
}

static size_t reap_frees(bool wait)
{
    const sw_pending_frees_t *f = __atomic_load_n(&ordered_frees, __ATOMIC_ACQUIRE);
    return f ? f->reap(wait) : 0;
}

static bool frees_pending(void)
{
    const sw_pending_frees_t *f = __atomic_load_n(&ordered_frees, __ATOMIC_ACQUIRE);
    return f && f->any();
}

static bool free_pending(CUdeviceptr va)
{
    const sw_pending_frees_t *f = __atomic_load_n(&ordered_frees, __ATOMIC_ACQUIRE);
    return f && f->pending(va);
}

/* Makes the current device ready for a tracked allocation: the table and
 * the host budget once, and each device, when it is first seen, its own
 * budget (devices.c) and its window, out of that budget. Returns the
 * device, or -1 when the allocation must pass through. */
static int ready(const sw_vmm_info_t **vi)
{
    *vi = sw_vmm_setup();
    if (!*vi)
        return -1;
    bool first = sw_dev_home() < 0, fresh;
    int dev = sw_dev_ready(*vi, &fresh);
    if (dev < 0)
        return -1;
    const sw_options_t *o = sw_opts();
    if (first) {
        /* What exists once is made with the first device. */
        sw_set_host_budget(host_pending != SPILLWAY_BUDGET_KEEP
                               ? host_pending
                               : sw_amount_resolve(&o->host_budget, sw_physical_ram()));
        sw_place_table(sw_table_new((*vi)->granularity));
        sw_info("budgets: host %llu bytes", (unsigned long long)sw_host_budget());
    }
    if (!sw_tracked())
        return -1;
    /* A given budget's window of a given size (or the remapping one) is
     * made now; any other when its budget first binds (sw_room_for): a
     * program that fits loses no memory to it, and a fitted one sees the
     * allocations it is fitted to. */
    if (fresh && !sw_dev_budget_picked(dev) && !sw_winroom_fitted())
        sw_winroom_make(dev);
    return dev;
}


/* Demotes cold chunks of device dev until `need` of its bytes are free
 * (or no candidate is left). Gate held exclusively; synchronizes once,
 * first. Returns the bytes freed. */
static uint64_t demote(int dev, uint64_t need, bool *synced)
{
    static sw_chunk_t *victims[MAX_VICTIMS];
    uint64_t would;
    size_t n = sw_opts()->policy == SW_POLICY_LEARNED
                   ? sw_policy_victims_learned(sw_tracked(), need, sw_launch_now(),
                                               sw_winroom_keep, &dev, victims, MAX_VICTIMS,
                                               &would)
                   : sw_policy_victims(sw_tracked(), need, sw_winroom_keep, &dev, victims,
                                       MAX_VICTIMS, &would);
    if (n == 0)
        return 0;
    /* Pooled device handles are memory the room is wanted for: they go
     * first (pool.c). The victims' handles are pooled again, for the
     * caller to take or drain. */
    sw_pool_drain(SW_ON_DEVICE);
    if (!*synced) {
        CUresult r = sw_safe_sync();
        if (r != CUDA_SUCCESS) {
            sw_debug("no demotion: synchronization failed (%s)", sw_cu_name(r));
            return 0;
        }
        *synced = true;
    }
    uint64_t freed = 0;
    for (size_t i = 0; i < n; i++)
        if (sw_move(victims[i], SW_ON_HOST) == CUDA_SUCCESS)
            freed += victims[i]->size;
    return freed;
}

/* Backs one new chunk: on the device if the budget allows (making room
 * first), else in host memory. */
static CUresult back_chunk(sw_chunk_t *c, bool *synced, bool *recovered)
{
    int dev = c->alloc->dev;
    if (sw_room_for(dev, c->size, synced)) {
        CUresult r = sw_place_born(c, SW_ON_DEVICE);
        if (r == CUDA_ERROR_OUT_OF_MEMORY && sw_demote_some(dev, c->size, synced) > 0) {
            r = sw_place_born(c, SW_ON_DEVICE);
            *recovered = r == CUDA_SUCCESS;
        }
        if (r != CUDA_ERROR_OUT_OF_MEMORY)
            return r;
        *recovered = true; /* the host is the fallback for the device's OOM */
    }
    if (!sw_host_room_for(c->size))
        return CUDA_ERROR_OUT_OF_MEMORY;
    return sw_place_born(c, SW_ON_HOST);
}

static void release_chunks(sw_alloc_t *a, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        sw_chunk_t *c = &a->chunks[i];
        sw_place_gone(c);
        sw_drop_copy(c);
        sw_vmm_unback(c);
    }
    sw_segment_free(a);
}


/* The largest power of two, at least the granularity and at most the
 * default chunk, that budget holds `share` times. */
static uint64_t chunk_held(uint64_t budget, uint64_t share, const sw_vmm_info_t *vi)
{
    uint64_t c = vi->granularity;
    while (2 * c <= budget / share && 2 * c <= vi->chunk)
        c *= 2;
    return c;
}

/* The chunks an allocation of `size` bytes on dev is cut to:
 * SPILLWAY_CHUNK; left at its default, never more than an eighth of dev's
 * budget (the largest power of two it holds eight times, at most the
 * default's 32 MiB), since a chunk big beside the budget strands the room
 * left beside the whole chunks it holds (7.56 MiB layers four to a 32 MiB
 * segment under 121 MiB: three segments resident, 25 MiB held by none,
 * 1.45x the link bound; in 8 MiB chunks 1.18x).
 *
 * An allocation no bigger than that, nor than half the default chunk (16
 * MiB), a tensor of its own, is one chunk: it moves whole, in one copy
 * and one set of VMM calls (about 60 us a handle on an H100; in 2 MiB
 * chunks, MoE's 4 MiB experts each moved twice: 1.57x a step early on).
 * A bigger one of at most 32 MiB (a tensor, or an allocator segment of a
 * few) is cut to the smaller of the two under a budget of two default
 * chunks or more. No finer: in 2 MiB chunks, 16 MiB layers each in a 20
 * MiB segment under 160 MiB moved ten pieces a segment (1.46x the link
 * bound against 1.34x). No coarser: whole, under the budgets of real GPUs,
 * a 20 MiB segment of PyTorch's held its slack resident with its tensors
 * (two 8 MiB layers to a segment, 120 under 384 MiB: 1.31x against 1.16x
 * in 16 MiB chunks; 64 x 16 MiB, one to a segment, under 512 MiB: 1.38x
 * against 1.14x; simgpu, 2026-12-03), where a 25 MiB expert of a mixture
 * moved in two pieces cost its step 3%. Anything bigger (a buffer of many
 * tensors; under a smaller budget, a segment too) is cut to the largest
 * power of two the budget holds 64 times, so that residency follows the
 * tensors in it rather than their slack (36 MiB over layers of 4.5 to 7
 * MiB, the odd ones alone in 8 MiB segments, held 4.75 MiB of slack in 4
 * MiB chunks: 1.27x the bound, in 2 MiB ones 1.18x).
 *
 * Not for SPILLWAY_POLICY=lru, which brings chunks back on demand, one
 * fault each, and keeps 32 MiB chunks under a budget that holds two (one
 * buffer of 4 MiB layers took 1.7x as long a step in 2 MiB chunks). The
 * remapping window's slots are chunks: not there either. */
static uint64_t chunk_for(int dev, uint64_t size, const sw_vmm_info_t *vi)
{
    uint64_t budget;
    if (sw_opts()->chunk_given || !sw_opts()->rewrite || !sw_dev_budget(dev, &budget) ||
        budget == 0)
        return vi->chunk;
    uint64_t eighth = chunk_held(budget, 8, vi), half = chunk_held(vi->chunk, 2, vi);
    bool roomy = budget >= 2 * vi->chunk;
    if (sw_opts()->policy != SW_POLICY_LEARNED)
        return roomy ? vi->chunk : eighth;
    uint64_t whole = eighth < half ? eighth : half;
    if (size <= whole || (size <= vi->chunk && roomy))
        return whole;
    return chunk_held(budget, 64, vi);
}

/* Whether a's last chunk of `chunk` bytes would hold more than one
 * granule, the last of them partly filled: that granule is then a chunk
 * of its own, so that residency can hold the rest without it. A 3.06 MiB
 * layer in one 4 MiB chunk cost 4 MiB of budget for 3.06 of data; in
 * a 2 MiB head and a 2 MiB tail holding 1.06, packing keeps heads
 * resident and tails home. */
static bool tail_split(uint64_t size, uint64_t reserved, uint64_t granularity, uint64_t chunk,
                       uint32_t n)
{
    return size % granularity != 0 && reserved - (uint64_t)(n - 1) * chunk > granularity;
}

static sw_alloc_t *alloc_new(uint64_t size, uint64_t granularity, uint64_t chunk)
{
    if (size > UINT64_MAX - granularity)
        return NULL; /* no rounding: the driver will answer */
    uint64_t reserved = sw_round_up(size, granularity);
    uint32_t n = (uint32_t)((reserved + chunk - 1) / chunk);
    if (tail_split(size, reserved, granularity, chunk, n))
        n++;
    sw_alloc_t *a = calloc(1, sizeof *a);
    if (!a || !(a->chunks = calloc(n, sizeof *a->chunks))) {
        free(a);
        return NULL;
    }
    a->size = size;
    a->reserved = reserved;
    a->nchunks = n;
    return a;
}

/* The tracked path, on device dev; gate held exclusively. */
static CUresult track(CUdeviceptr *dptr, size_t bytesize, const sw_vmm_info_t *vi, int dev)
{
    uint64_t chunk = chunk_for(dev, bytesize, vi);
    sw_alloc_t *a = alloc_new(bytesize, vi->granularity, chunk);
    if (!a)
        return CUDA_ERROR_NOT_SUPPORTED;
    a->dev = dev;
    CUdeviceptr va;
    CUresult r = sw_vmm_reserve(a->reserved, &va);
    a->va = va;
    a->born = sw_launch_now();
    if (r != CUDA_SUCCESS) {
        free(a->chunks);
        free(a);
        return r;
    }
    bool synced = false, recovered = false;
    bool split = a->nchunks > (a->reserved + chunk - 1) / chunk; /* alloc_new's tail_split */
    uint32_t backed = 0;
    for (; backed < a->nchunks; backed++) {
        sw_chunk_t *c = &a->chunks[backed];
        c->va = a->va + (uint64_t)backed * chunk;
        c->size = backed + 1 < a->nchunks ? chunk : a->reserved - (uint64_t)backed * chunk;
        if (split && backed + 1 == a->nchunks) {
            c->va = a->va + a->reserved - vi->granularity;
            c->size = vi->granularity;
        } else if (split && backed + 2 == a->nchunks) {
            c->size = a->reserved - vi->granularity - (uint64_t)backed * chunk;
        }
        c->alloc = a;
        c->index = backed;
        c->slot = -1;
        if ((r = back_chunk(c, &synced, &recovered)) != CUDA_SUCCESS)
            break;
    }
    if (r == CUDA_SUCCESS && sw_table_insert(sw_tracked(), a) != 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r != CUDA_SUCCESS) {
        release_chunks(a, backed);
        sw_vmm_unreserve(a->va, a->reserved);
        free(a->chunks);
        free(a);
        return r;
    }
    sw_gate_arm(1);
    sw_stat_add(SW_STAT_tracked_bytes, (int64_t)a->reserved);
    sw_stat_add(SW_STAT_tracked_allocs, 1);
    if (recovered)
        sw_stat_add(SW_STAT_oom_recoveries, 1);
    *dptr = a->va;
    return CUDA_SUCCESS;
}


/* ---- the application's own handles (appvmm.c); gate held exclusively ---- */

const sw_vmm_info_t *sw_alloc_ready(int *dev)
{
    const sw_vmm_info_t *vi;
    if (sw_opts()->disable || fork_child || (*dev = ready(&vi)) < 0)
        return NULL;
    return vi;
}

bool sw_room_for(int dev, uint64_t size, bool *synced)
{
    uint64_t room = sw_dev_room(dev);
    if (room < size && !sw_capturing() && sw_dev_window_due(dev)) {
        /* The budget binds for the first time: its fitted window is
         * made now, after room for it was made, and the pool let go, so
         * that the device has the bytes. Where no room could be made
         * (the only chunks on the device are the ones being allocated),
         * it is made at a later binding: made anyway, it would hold the
         * device over its budget. */
        uint64_t budget = 0, want, slot;
        sw_dev_budget(dev, &budget);
        want = sw_winroom_bytes(dev, budget, &slot);
        if (want > room)
            demote(dev, want - room, synced);
        sw_pool_drain(SW_ON_DEVICE);
        if (sw_dev_room(dev) >= want)
            sw_winroom_make(dev);
        room = sw_dev_room(dev);
    }
    if (room < size && !sw_capturing())
        room += demote(dev, size - room, synced);
    return room >= size;
}

uint64_t sw_demote_some(int dev, uint64_t need, bool *synced)
{
    return sw_capturing() ? 0 : demote(dev, need, synced);
}

int sw_alloc_register(sw_alloc_t *a)
{
    if (sw_table_insert(sw_tracked(), a) != 0)
        return -1;
    sw_gate_arm(1);
    return 0;
}

void sw_alloc_unregister(sw_alloc_t *a)
{
    sw_window_kind()->forget(a);
    sw_table_remove(sw_tracked(), a);
    for (uint32_t i = 0; i < a->nchunks; i++)
        sw_drop_copy(&a->chunks[i]);
    sw_segment_free(a);
    if (sw_gate_arm(-1) == 0) {
        sw_pool_drain(SW_ON_DEVICE);
        sw_pool_drain(SW_ON_HOST);
    }
}

/* An allocation spillway does not track still competes with tracked
 * chunks for the device: when the driver refuses it for lack of memory,
 * completed stream-ordered frees are released, then tracked chunks make
 * room, as they would for a tracked allocation, until the driver accepts
 * or nothing more can be demoted. Failure: the driver's own answer. */
CUresult sw_passthrough(sw_route_t route, CUdeviceptr *dptr, size_t bytesize,
                        sw_alloc_again_t again, void *ctx)
{
    sw_stat_add(SW_STAT_passthrough_allocs, 1);
    CUresult r = again(dptr, bytesize, ctx);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && dptr && !sw_opts()->disable && !sw_capturing() &&
        sw_tracking_any() && reap_frees(true) > 0)
        r = again(dptr, bytesize, ctx);
    if (r != CUDA_ERROR_OUT_OF_MEMORY || !dptr || sw_opts()->disable || sw_capturing() ||
        !sw_tracking_any()) {
        if (r == CUDA_SUCCESS)
            sw_untracked(route, bytesize);
        return r;
    }
    sw_gate_wr();
    const sw_vmm_info_t *vi;
    bool synced = false;
    /* The device the driver refused: only its chunks make room for it. */
    int dev = ready(&vi);
    uint64_t need = dev >= 0 ? sw_round_up(bytesize ? bytesize : 1, vi->granularity) : 0;
    /* The driver needs the memory the victims leave: their handles, which
     * the moves pooled, are released before each retry. */
    while (r == CUDA_ERROR_OUT_OF_MEMORY && need && demote(dev, need, &synced) > 0) {
        sw_pool_drain(SW_ON_DEVICE);
        r = again(dptr, bytesize, ctx);
    }
    /* Without a budget given, the window was spillway's choice: memory
     * the program, run alone, would have had. It goes, for good, before
     * the driver's refusal reaches the program. */
    if (r == CUDA_ERROR_OUT_OF_MEMORY && need && sw_winroom_release_picked(dev, false, &synced))
        r = again(dptr, bytesize, ctx);
    sw_gate_unwr();
    if (r == CUDA_SUCCESS) {
        sw_stat_add(SW_STAT_oom_recoveries, 1);
        sw_untracked(route, bytesize);
    }
    return r;
}

static CUresult alloc_again(CUdeviceptr *dptr, size_t bytesize, void *ctx)
{
    return SW_CALL(cuMemAlloc_v2, (dptr, bytesize));
}

/* Tracks under the exclusive gate; declines (NOT_SUPPORTED, *route) when
 * the allocation is not one spillway can take. */
static CUresult track_or_decline(CUdeviceptr *dptr, size_t bytesize, sw_route_t *route)
{
    const sw_vmm_info_t *vi;
    sw_gate_wr();
    CUresult r = CUDA_ERROR_NOT_SUPPORTED;
    int dev = ready(&vi);
    /* VMM usable but not on this device (no context, too many): its own
     * route; VMM unusable: spillway is off. */
    *route = dev < 0 && vi ? SW_ROUTE_device : SW_ROUTE_off;
    if (dev >= 0) {
        r = track(dptr, bytesize, vi, dev);
        /* Anything but out-of-memory (an impossible size, say) is for
         * the driver to answer, in its own words. */
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_OUT_OF_MEMORY)
            r = CUDA_ERROR_NOT_SUPPORTED;
    }
    /* Device handles that demotions pooled and the new chunks did not
     * take are device memory no count shows: none outlives the hold. */
    sw_pool_drain(SW_ON_DEVICE);
    sw_gate_unwr();
    return r;
}

/* Whether the current device's budget has less than bytesize left, read
 * under the shared gate (the budgets change under the exclusive one). */
static bool room_short(uint64_t bytesize)
{
    sw_gate_rd_always();
    int dev = sw_dev_current();
    bool short_of = dev >= 0 && sw_dev_room(dev) < bytesize;
    sw_gate_unrd();
    return short_of;
}

CUresult sw_try_track(CUdeviceptr *dptr, size_t bytesize, sw_route_t *route)
{
    const sw_options_t *o = sw_opts();
    *route = bytesize < o->min_alloc ? SW_ROUTE_small
             : sw_capturing()        ? SW_ROUTE_capture
                                     : SW_ROUTE_off;
    if (o->disable || !dptr || bytesize < o->min_alloc || sw_capturing() || fork_child)
        return CUDA_ERROR_NOT_SUPPORTED;
    /* Memory freed in stream order and already reached is released
     * before more is taken; when the budget is short, it is waited for:
     * cheaper than demoting live chunks, which synchronizes anyway. */
    reap_frees(frees_pending() && room_short(bytesize));
    CUresult r = track_or_decline(dptr, bytesize, route);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && reap_frees(true) > 0)
        r = track_or_decline(dptr, bytesize, route);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        sw_info("allocation of %zu bytes failed: %s", bytesize, sw_cu_name(r));
    return r;
}

CUresult sw_mem_alloc(CUdeviceptr *dptr, size_t bytesize)
{
    sw_route_t route;
    CUresult r = sw_try_track(dptr, bytesize, &route);
    return r == CUDA_ERROR_NOT_SUPPORTED ? sw_passthrough(route, dptr, bytesize, alloc_again, NULL)
                                         : r;
}


/* The table stays (its handles are the parent's; releasing them would
 * only fail): with tracking at 0 no hook looks at it again. */
void sw_alloc_fork_child(void)
{
    if (!sw_tracked())
        return;
    fork_child = true;
    sw_gate_disarm();
}

/* Releases a, found in the table; gate held exclusively, device
 * synchronized (the safety rule's synchronization for the unmaps). */
static void free_tracked(sw_alloc_t *a)
{
    sw_window_kind()->forget(a);
    sw_table_remove(sw_tracked(), a);
    release_chunks(a, a->nchunks);
    sw_vmm_unreserve(a->va, a->reserved);
    /* With nothing tracked, nothing will move: the pools go too, and a
     * window spillway chose to make (a picked budget), which the next
     * binding makes again, so a program that freed everything holds
     * nothing through spillway. */
    if (sw_gate_arm(-1) == 0) {
        bool synced = true; /* the caller's synchronization */
        sw_pool_drain(SW_ON_DEVICE);
        sw_pool_drain(SW_ON_HOST);
        for (int dev = sw_dev_next(-1); dev >= 0; dev = sw_dev_next(dev))
            sw_winroom_release_picked(dev, true, &synced);
    }
    sw_stat_add(SW_STAT_tracked_bytes, -(int64_t)a->reserved);
    sw_stat_add(SW_STAT_tracked_allocs, -1);
    free(a->chunks);
    free(a);
}

CUresult sw_mem_free_tracked(const CUdeviceptr *v, size_t n)
{
    sw_gate_wr();
    /* cuMemFree synchronizes the device; this keeps that behaviour, and
     * is the safety rule's synchronization for the unmaps. */
    CUresult r = sw_tracked() ? sw_safe_sync() : CUDA_SUCCESS;
    for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
        sw_alloc_t *a = sw_table_find_base(sw_tracked(), v[i]);
        if (a)
            free_tracked(a);
    }
    sw_gate_unwr();
    return r;
}

CUresult sw_mem_free(CUdeviceptr dptr)
{
    /* Only a tracked allocation needs the gate exclusively: the lookup
     * takes it shared, so freeing untracked memory never waits for, nor
     * holds up, the launches of other threads. */
    switch (sw_free_kind(dptr)) {
    case SW_FREE_UNTRACKED:
        return SW_CALL(cuMemFree_v2, (dptr));
    case SW_FREE_INSIDE:
        return CUDA_ERROR_INVALID_VALUE; /* inside a tracked block, not its base */
    case SW_FREE_TRACKED:
        break;
    }
    /* Already freed in stream order: a second free, the driver's error. */
    if (free_pending(dptr))
        return CUDA_ERROR_INVALID_VALUE;
    sw_gate_wr();
    /* Looked up again: another thread may have freed it in between, and
     * then the driver gives its own answer to a second free. */
    bool gone = !sw_table_find_base(sw_tracked(), dptr);
    sw_gate_unwr();
    return gone ? SW_CALL(cuMemFree_v2, (dptr)) : sw_mem_free_tracked(&dptr, 1);
}

/*
 * Tracked allocations: cuMemAlloc/cuMemFree and the questions applications
 * ask about pointers, plus the budgets that decide where chunks live.
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

bool sw_budget_set(void) { return sw_dev_any_budget(); }

uint64_t sw_device_room(int dev)
{
    return sw_dev_room(dev);
}

typedef struct {
    int dev;
    uint64_t want, largest;
} extent_t;

static void largest_fitting(sw_alloc_t *a, void *arg)
{
    extent_t *e = arg;
    if (a->dev == e->dev && a->size <= e->want && a->size > e->largest)
        e->largest = a->size;
}

/* The streaming window's bytes out of dev's budget: SPILLWAY_PREFETCH_BYTES
 * of it; with that option not given, fitted to the largest allocation it
 * could stream (sw_policy_window_fit): such a window is made when the
 * budget first binds, once the program's allocations so far are known,
 * and a window larger than the copies it can hold takes residency for
 * nothing (the H200's decode gave four 128 MiB layers' room to a window
 * two copies fill). Gate held exclusively. */
static bool window_fitted(void)
{
    return !sw_opts()->prefetch_bytes.set && sw_opts()->rewrite;
}

/* Whether spillway chose the size of dev's window (a device's window
 * exists for dev >= 0 only), and so may give it back or make it anew: a
 * window of a size the user gave is kept, they asked for it. */
static bool window_ours(int dev)
{
    return dev >= 0 && (window_fitted() || sw_dev_budget_picked(dev));
}

static uint64_t window_bytes(int dev, uint64_t budget, uint64_t *slot)
{
    const sw_options_t *o = sw_opts();
    extent_t e = {.dev = dev, .want = sw_amount_resolve(&o->prefetch_bytes, budget)};
    *slot = e.want;
    if (!window_fitted() || !sw_tracked())
        return e.want;
    sw_table_each(sw_tracked(), largest_fitting, &e);
    /* The window's size is rounded down to SW_WINDOW_ALIGN: the extent
     * is rounded up to it, or the copies it was fitted to would not fit.
     * A window fitted to two copies streams nothing bigger than one: a
     * bigger range would fill it alone, each copy then waiting for the
     * launches of the one before (4 MiB layers, the odd ones in 8 MiB
     * segments, at batch 16 and compute about equal to copy: 2.04x the
     * all-resident step with the segments streamed, 1.20x without). */
    *slot = sw_round_up(e.largest, SW_WINDOW_ALIGN);
    return sw_policy_window_fit(e.want, *slot, budget);
}

/* Makes dev's window out of its budget, if it has one: the streaming
 * window is per device; the remapping one (SPILLWAY_REWRITE=0) is the
 * first device's alone. Once, whether it could be made or not. */
static void make_window(int dev)
{
    uint64_t budget;
    if (!sw_dev_window_due(dev) || !sw_dev_budget(dev, &budget))
        return;
    sw_dev_window_tried(dev);
    uint64_t made = 0, slot, size = window_bytes(dev, budget, &slot);
    if (sw_opts()->rewrite)
        made = sw_window_setup(dev, size, slot, sw_tracked());
    else if (dev == sw_dev_home())
        made = sw_remap_setup(budget);
    sw_place_count(dev, SW_ON_DEVICE, (int64_t)made);
}

/* Gives dev's window back, its bytes leaving the device's count. The
 * device is synchronized first unless *synced says it is. Its bytes (0:
 * none, or it could not go). Gate held exclusively. */
static uint64_t give_window_back(int dev, bool *synced)
{
    if (!sw_window_size(dev))
        return 0;
    if (!*synced) {
        if (sw_safe_sync() != CUDA_SUCCESS)
            return 0;
        *synced = true;
    }
    uint64_t bytes = sw_window_release(dev);
    if (bytes)
        sw_place_count(dev, SW_ON_DEVICE, -(int64_t)bytes);
    return bytes;
}

/* Gives dev's window back if spillway chose to make it (a picked budget):
 * again, for the next binding to make anew; else for good. */
static uint64_t release_picked_window(int dev, bool again, bool *synced)
{
    if (!sw_dev_budget_picked(dev))
        return 0;
    uint64_t bytes = give_window_back(dev, synced);
    if (bytes && again)
        sw_dev_window_untried(dev);
    return bytes;
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
    if (fresh && !sw_dev_budget_picked(dev) && !window_fitted())
        make_window(dev);
    return dev;
}

/* Chunks in the prefetch window are not the policy's to demote, and
 * another device's chunks make no room on *dev. */
static bool in_window(const sw_chunk_t *c, void *dev)
{
    return c->slot >= 0 || c->alloc->dev != *(const int *)dev;
}

/* Demotes cold chunks of device dev until `need` of its bytes are free
 * (or no candidate is left). Gate held exclusively; synchronizes once,
 * first. Returns the bytes freed. */
static uint64_t demote(int dev, uint64_t need, bool *synced)
{
    static sw_chunk_t *victims[MAX_VICTIMS];
    uint64_t would;
    size_t n = sw_opts()->policy == SW_POLICY_LEARNED
                   ? sw_policy_victims_learned(sw_tracked(), need, sw_launch_now(), in_window, &dev,
                                               victims, MAX_VICTIMS, &would)
                   : sw_policy_victims(sw_tracked(), need, in_window, &dev, victims, MAX_VICTIMS, &would);
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
        if (c->slot >= 0 || c->mirrored) {
            sw_remap_forget(c);
            sw_vmm_release(c->handle);
        } else {
            sw_vmm_unback(c);
        }
    }
    if (a->mirror)
        sw_vmm_unreserve(a->mirror, a->reserved);
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
 * SPILLWAY_CHUNK; left at its default, one chunk where the allocation
 * fits in the default's 32 MiB, or where dev's budget could not hold two
 * of those, in the largest power of two the budget holds eight times: a
 * tensor of its own moves whole, in one copy and one set of VMM calls
 * (about 60 us a handle on an H100; in 2 MiB chunks, MoE's 4 MiB experts
 * each moved twice: 1.57x a step early on). A bigger allocation (a
 * buffer of many tensors; under a budget below 64 MiB, a segment too) is
 * cut to the largest power of two the budget holds 64 times, so that
 * residency follows the tensors in it: whole chunks are held, and a
 * chunk big beside the budget strands room a tensor only partly fills
 * (a 16 MiB budget kept only the 8 MiB tail of a 40 MiB buffer resident;
 * 36 MiB over layers of 4.5 to 7 MiB, the odd ones alone in 8 MiB
 * segments, held 4.75 MiB of slack in 4 MiB chunks: 1.27x the bound, in
 * 2 MiB ones 1.18x). Not for SPILLWAY_POLICY=lru, which brings chunks
 * back on demand, one fault each: one buffer of 4 MiB layers took 1.7x
 * as long a step in 2 MiB chunks. The remapping window's slots are
 * chunks: not there. */
static uint64_t chunk_for(int dev, uint64_t size, const sw_vmm_info_t *vi)
{
    uint64_t budget;
    if (sw_opts()->chunk_given || !sw_opts()->rewrite || !sw_dev_budget(dev, &budget) ||
        budget == 0)
        return vi->chunk;
    uint64_t whole = budget >= 2 * vi->chunk ? vi->chunk : chunk_held(budget, 8, vi);
    if (size <= whole || sw_opts()->policy != SW_POLICY_LEARNED)
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

/* Brings host chunks of dev in while its budget has room, the next used
 * first: room a window gave back, which launches read in place or graph
 * replays may never ask for. Gate held exclusively, device synchronized. */
static bool not_fillable(const sw_chunk_t *c, void *dev)
{
    return c->fixed || in_window(c, dev);
}

/* Fills dev's free room with the host chunks used next in the loop of
 * `period`; with none learned (0), with any, those used before first. */
static void fill_room(int dev, uint64_t now, uint64_t period)
{
    static sw_chunk_t *in[MAX_VICTIMS];
    uint64_t room = sw_device_room(dev);
    size_t n = period ? sw_policy_prefetch(sw_tracked(), now, period, room, not_fillable, &dev,
                                           in, MAX_VICTIMS)
                      : sw_policy_fill(sw_tracked(), now, room, not_fillable, &dev, in,
                                       MAX_VICTIMS);
    for (size_t i = 0; i < n && sw_move(in[i], SW_ON_DEVICE) == CUDA_SUCCESS; i++)
        ;
    sw_pool_drain(SW_ON_DEVICE);
}

/* Gives dev's window back and, for size > 0, makes it anew at that size
 * (ranges up to slot); the room it leaves is filled at once with the host
 * chunks used next. The bytes given back (0: it could not go); *made:
 * the new window's. Gate held exclusively. */
static uint64_t refit(int dev, uint64_t size, uint64_t slot, uint64_t now, uint64_t period,
                      bool *synced, uint64_t *made)
{
    uint64_t bytes = give_window_back(dev, synced);
    *made = 0;
    if (!bytes)
        return 0;
    if (size) {
        *made = sw_window_setup(dev, size, slot, sw_tracked());
        sw_place_count(dev, SW_ON_DEVICE, (int64_t)*made);
    }
    fill_room(dev, now, period);
    return bytes;
}

/* Acts on the verdict `why` on dev's window: one bigger than two of the
 * longest ranges it copies is made anew at that size, each byte it gives
 * up a weight byte that no longer crosses the link every loop (on the
 * H200, 64 x 32 MiB layers: a 128 MiB window 1.10x the link bound, 64 MiB
 * 1.06x); any other is given back. Gate held exclusively. */
static void answer(int dev, sw_window_worth_t why, uint64_t now, uint64_t period, bool *synced)
{
    uint64_t slot = why == SW_WINDOW_OVERSIZED ? sw_window_fits(dev) : 0, made;
    uint64_t bytes = refit(dev, 2 * slot, slot, now, period, synced, &made);
    if (!bytes)
        return;
    if (made)
        sw_info("device %d: the streaming window is two copies of the longest range it "
                "copies now, %llu bytes: %llu are the resident set's",
                dev, (unsigned long long)made, (unsigned long long)(bytes - made));
    else
        sw_info("device %d: the streaming window %s: its %llu bytes are the resident set's now",
                dev,
                why == SW_WINDOW_IDLE       ? "served nothing for a loop"
                : why == SW_WINDOW_UNREPAID ? "copied too little in a loop to repay its room "
                                              "(resident, its bytes save more)"
                : why == SW_WINDOW_LOOPLESS ? "found no loop the memory agrees on, nothing to "
                                              "copy ahead of"
                                            : "could not be made smaller",
                (unsigned long long)bytes);
}

/* A capture's copies go one at a time, so its window needs one range's
 * room, where it needs any (sw_worth_capture), and every byte more is a
 * weight byte crossing the link at each replay: 20 x 16 MiB layers under
 * a 128 MiB budget, a graph of one step, 1.31x the link bound with two
 * copies' room, 1.22x with one, 1.13x with none; 20 x 64 MiB under 512
 * MiB 1.27x, 1.18x; 20 x 4 MiB at batch 256 1.73x, 1.63x (2026-11-27,
 * simgpu). Made anew before the first capture it serves: not inside one
 * (a synchronization would break it), nor once a graph holds its copies.
 * Eager work after it streams in that room too. */
void sw_capture_prepare(CUstream s)
{
    uint64_t room;
    if (sw_window_on() && sw_gate_rd()) {
        int dev = sw_window_here();
        if (window_ours(dev) && !sw_capturing() && sw_window_capture_room(dev, &room)) {
            sw_gate_wr();
            bool synced = false;
            uint64_t made, bytes = 0, now = sw_launch_now();
            if (!sw_capturing() && sw_window_here() == dev && sw_window_capture_room(dev, &room))
                bytes = refit(dev, room, room, now, sw_period(now), &synced, &made);
            if (bytes && made)
                sw_info("device %d: a capture's copies go one at a time: the streaming window "
                        "is one range, %llu bytes: %llu are the resident set's",
                        dev, (unsigned long long)made, (unsigned long long)(bytes - made));
            else if (bytes)
                sw_info("device %d: a capture's copies go one at a time, and %s: the capture "
                        "reads in place, the streaming window's %llu bytes are the resident "
                        "set's",
                        dev,
                        room ? "the window could not be made smaller"
                             : "no range it copies was timed slower read in place than copied",
                        (unsigned long long)bytes);
            sw_gate_unwr();
        }
        sw_gate_unrd();
    }
    sw_window_capture_begins(s);
}

/* Launches between questions: idleness takes loops to show, but a window
 * not worth its room is best given back before the program's steps settle. */
#define RECLAIM_EVERY 16

void sw_window_reclaim(bool replay)
{
    static uint64_t asked;
    uint64_t now = sw_launch_now();
    if (!sw_window_on() || sw_capturing() ||
        (!replay && now - __atomic_load_n(&asked, __ATOMIC_RELAXED) < RECLAIM_EVERY))
        return;
    __atomic_store_n(&asked, now, __ATOMIC_RELAXED);
    if (!sw_gate_rd())
        return;
    /* Judged only in a loop most of the memory agrees on: a window
     * judged while the loop is still being learned has served nothing
     * yet (sw_learn_period). With none agreed on, the loop the gaps
     * suggest says how long to wait for one (SW_WINDOW_LOOPLESS). */
    uint64_t period = sw_agreed_period(now), guess = sw_period(now);
    int dev = sw_window_here();
    if (window_ours(dev) && sw_window_worth(dev, now, period, guess) != SW_WINDOW_WORTH) {
        sw_gate_wr();
        bool synced = false;
        sw_window_worth_t why;
        if (!sw_capturing() && sw_window_here() == dev &&
            (why = sw_window_worth(dev, now, period, guess)) != SW_WINDOW_WORTH)
            answer(dev, why, now, period, &synced);
        sw_gate_unwr();
    }
    sw_gate_unrd();
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
    uint64_t room = sw_device_room(dev);
    if (room < size && !sw_capturing() && sw_dev_window_due(dev)) {
        /* The budget binds for the first time: its fitted window is
         * made now, after room for it was made, and the pool let go, so
         * that the device has the bytes. Where no room could be made
         * (the only chunks on the device are the ones being allocated),
         * it is made at a later binding: made anyway, it would hold the
         * device over its budget. */
        uint64_t budget = 0, want, slot;
        sw_dev_budget(dev, &budget);
        want = window_bytes(dev, budget, &slot);
        if (want > room)
            demote(dev, want - room, synced);
        sw_pool_drain(SW_ON_DEVICE);
        if (sw_device_room(dev) >= want)
            make_window(dev);
        room = sw_device_room(dev);
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
    sw_window_forget(a->va, a->reserved);
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
    if (r == CUDA_ERROR_OUT_OF_MEMORY && need && release_picked_window(dev, false, &synced))
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
    bool short_of = dev >= 0 && sw_device_room(dev) < bytesize;
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

sw_free_kind_t sw_free_kind(CUdeviceptr dptr)
{
    if (!sw_gate_rd())
        return SW_FREE_UNTRACKED;
    sw_chunk_t *c = sw_tracked() ? sw_table_lookup(sw_tracked(), dptr) : NULL;
    /* An application's own mapping is the driver's to refuse to free. */
    sw_free_kind_t k = !c || c->alloc->app   ? SW_FREE_UNTRACKED
                       : c->alloc->va == dptr ? SW_FREE_TRACKED
                                              : SW_FREE_INSIDE;
    sw_gate_unrd();
    return k;
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
    sw_window_forget(a->va, a->reserved);
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
            release_picked_window(dev, true, &synced);
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

bool sw_is_tracked_base(CUdeviceptr p)
{
    return sw_free_kind(p) == SW_FREE_TRACKED;
}

/* The tracked allocation whose reservation holds p, read under the gate.
 * Its size is the one asked for: p at or past base + size is in the
 * rounding behind it, which belongs to no allocation. */
static bool tracked_range(CUdeviceptr p, CUdeviceptr *base, size_t *size, int *dev)
{
    if (!sw_gate_rd())
        return false;
    sw_chunk_t *c = sw_tracked() ? sw_table_lookup(sw_tracked(), p) : NULL;
    /* An application's own mapping: the driver knows it as well, since
     * the same address always maps one of its handles. */
    if (c && c->alloc->app)
        c = NULL;
    if (c) {
        *base = c->alloc->va;
        *size = c->alloc->size;
        *dev = c->alloc->dev;
    }
    sw_gate_unrd();
    return c != NULL;
}

/* The contract, the same as simgpu's for a plain cuMemAlloc: the range is
 * the size asked for, and a pointer into the rounding is in no
 * allocation. (What the real driver says of the rounding is open:
 * docs/gpu-facts.md.) */
CUresult sw_mem_get_range(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CUdeviceptr base;
    size_t size;
    int dev;
    if (!tracked_range(dptr, &base, &size, &dev))
        return SW_REAL(cuMemGetAddressRange_v2)(pbase, psize, dptr);
    if (dptr >= base + size)
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = base;
    if (psize)
        *psize = size;
    return CUDA_SUCCESS;
}

/* Answers one attribute of a pointer into a tracked allocation as the
 * application's cuMemAlloc would have: one device allocation, whichever
 * chunk is under the pointer and wherever it lives. False: not ours to
 * answer (not tracked, or an attribute the driver answers as well). */
static bool tracked_attr(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    CUdeviceptr base;
    size_t size;
    int dev;
    if (!data || !tracked_range(ptr, &base, &size, &dev) || ptr >= base + size)
        return false;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = CU_MEMORYTYPE_DEVICE;
        return true;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = base;
        return true;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = size;
        return true;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = base;
        return true;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(int *)data = 1;
        return true;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = dev; /* the device it was allocated on, wherever it lives */
        return true;
    default:
        return false;
    }
}

CUresult sw_pointer_attr(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    if (tracked_attr(data, attribute, ptr))
        return CUDA_SUCCESS;
    return SW_REAL(cuPointerGetAttribute) ? SW_REAL(cuPointerGetAttribute)(data, attribute, ptr)
                                          : CUDA_ERROR_NOT_FOUND;
}

CUresult sw_pointer_attrs(unsigned int n, CUpointer_attribute *attributes, void **data,
                          CUdeviceptr ptr)
{
    /* The driver answers first (and judges the arguments); then the
     * answers about the allocation are made the allocation's. */
    if (!SW_REAL(cuPointerGetAttributes))
        return CUDA_ERROR_NOT_FOUND;
    CUresult r = SW_REAL(cuPointerGetAttributes)(n, attributes, data, ptr);
    for (unsigned int i = 0; r == CUDA_SUCCESS && i < n; i++)
        tracked_attr(data[i], attributes[i], ptr);
    return r;
}

/* ---- the control API's requests (api.c, include/spillway.h) ---------------- */

void sw_budgets_get(uint64_t *gpu, uint64_t *host, bool *resolved)
{
    sw_gate_rd_always();
    *resolved = sw_tracked() != NULL;
    uint64_t b;
    if (sw_tracked()) {
        /* Budgets are per device; the first device's stands for them all
         * (spillway_set_budgets sets every device's alike). */
        *gpu = sw_dev_budget(sw_dev_home(), &b) ? b : SPILLWAY_BUDGET_NONE;
        *host = sw_host_budget();
    } else {
        /* Not resolved yet: a percentage of the device is not known. */
        const sw_options_t *o = sw_opts();
        *gpu = gpu_pending != SPILLWAY_BUDGET_KEEP ? gpu_pending
               : !o->gpu_budget.set               ? SPILLWAY_BUDGET_NONE
               : o->gpu_budget.is_percent         ? SPILLWAY_BUDGET_UNKNOWN
                                                  : o->gpu_budget.bytes;
        *host = host_pending != SPILLWAY_BUDGET_KEEP
                    ? host_pending
                    : sw_amount_resolve(&o->host_budget, sw_physical_ram());
    }
    sw_gate_unrd();
}

int sw_budgets_change(uint64_t gpu, uint64_t host)
{
    if (gpu == SPILLWAY_BUDGET_UNKNOWN || host == SPILLWAY_BUDGET_NONE ||
        host == SPILLWAY_BUDGET_UNKNOWN)
        return SPILLWAY_EINVAL;
    sw_gate_wr();
    /* No capture can begin while the gate is held exclusively
     * (SW_CAPTURE_BEGIN), so this answer holds until sw_gate_unwr. */
    if (sw_capturing()) {
        sw_gate_unwr();
        return SPILLWAY_EBUSY;
    }
    if (!sw_tracked()) {
        /* Every device seen from now on gets it (devices.c). */
        if (gpu != SPILLWAY_BUDGET_KEEP) {
            gpu_pending = gpu;
            sw_dev_set_budgets(gpu != SPILLWAY_BUDGET_NONE, gpu != SPILLWAY_BUDGET_NONE ? gpu : 0);
        }
        if (host != SPILLWAY_BUDGET_KEEP)
            host_pending = host;
        sw_gate_unwr();
        return SPILLWAY_OK;
    }
    if (gpu != SPILLWAY_BUDGET_KEEP)
        sw_dev_set_budgets(gpu != SPILLWAY_BUDGET_NONE, gpu != SPILLWAY_BUDGET_NONE ? gpu : 0);
    if (host != SPILLWAY_BUDGET_KEEP)
        sw_set_host_budget(host);
    int rc = SPILLWAY_OK;
    /* The same path an allocation takes to make room, device by device:
     * victims by the policy (resident chunks are none), one
     * synchronization first. */
    bool synced = false;
    uint64_t budget;
    for (int dev = sw_dev_next(-1); dev >= 0; dev = sw_dev_next(dev)) {
        uint64_t used = sw_dev_bytes(dev);
        if (!sw_dev_budget(dev, &budget) || used <= budget)
            continue;
        demote(dev, used - budget, &synced);
        sw_pool_drain(SW_ON_DEVICE);
        if (sw_dev_bytes(dev) > budget)
            rc = SPILLWAY_EPARTIAL;
    }
    sw_info("budgets changed: gpu %s%llu bytes, host %llu bytes",
            gpu == SPILLWAY_BUDGET_KEEP ? "(kept) " : gpu == SPILLWAY_BUDGET_NONE ? "(none) " : "",
            (unsigned long long)(gpu < SPILLWAY_BUDGET_NONE ? gpu : 0),
            (unsigned long long)sw_host_budget());
    sw_gate_unwr();
    return rc;
}

int sw_hint_range(uint64_t ptr, uint64_t bytes, int hint)
{
    if (bytes == 0 || hint < SPILLWAY_HINT_NONE || hint > SPILLWAY_HINT_READ_ONLY)
        return SPILLWAY_EINVAL;
    sw_gate_wr();
    sw_chunk_t *c = sw_tracked() && sw_tracking_any() ? sw_table_lookup(sw_tracked(), ptr) : NULL;
    sw_alloc_t *a = c ? c->alloc : NULL;
    int rc = SPILLWAY_OK;
    if (!a || ptr >= a->va + a->size)
        rc = SPILLWAY_ENOTTRACKED; /* the rounding behind an allocation is no one's */
    else if (bytes > a->va + a->size - ptr)
        rc = SPILLWAY_EOVERLAP;
    else if (hint != SPILLWAY_HINT_NONE && hint != SPILLWAY_HINT_KEEP_RESIDENT)
        rc = SPILLWAY_ENOTSUP;
    else
        for (uint32_t i = c->index; i < a->nchunks && a->chunks[i].va < ptr + bytes; i++)
            a->chunks[i].resident = hint == SPILLWAY_HINT_KEEP_RESIDENT;
    sw_gate_unwr();
    return rc;
}

void sw_phase(void)
{
    sw_gate_wr();
    if (sw_tracked())
        sw_learn_forget(sw_tracked());
    sw_gate_unwr();
}

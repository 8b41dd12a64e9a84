/*
 * Placement: the table of tracked allocations, the host budget, and every
 * change of where a chunk lies (born, moved, slotted, gone) with the
 * byte counts it changes: nothing else writes a chunk's place. Beside
 * them, what every residency file reads: the launch clock and the learned
 * loop period. Above it sit the allocators (alloc.c, appvmm.c), the
 * remapping window (remap.c) and the launch path (launch.c); below it
 * the streaming window, VMM and the devices. Nothing here calls up: the
 * remapping window, which must drop a chunk's mirror before the chunk
 * moves, hands its function down (sw_place_before_move).
 */
#include "residency.h"

#include <unistd.h>

static sw_table_t *table;         /* gate held to use */
static uint64_t host_budget;      /* resolved at first use; GPU budgets: devices.c */
static uint64_t launch_seq;       /* launches seen (atomic) */
static void (*before_move)(sw_chunk_t *); /* the remapping window's, or NULL */

sw_table_t *sw_tracked(void) { return table; }
void sw_place_table(sw_table_t *t) { table = t; }
uint64_t sw_host_budget(void) { return host_budget; }
void sw_set_host_budget(uint64_t bytes) { host_budget = bytes; }

void sw_place_before_move(void (*fn)(sw_chunk_t *))
{
    __atomic_store_n(&before_move, fn, __ATOMIC_RELEASE);
}

uint64_t sw_physical_ram(void)
{
    return (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
}

static uint64_t host_room(void)
{
    uint64_t used = sw_stat_get(SW_STAT_host_bytes) + sw_stat_get(SW_STAT_host_copy_bytes);
    return used >= host_budget ? 0 : host_budget - used;
}

void sw_drop_copy(sw_chunk_t *c)
{
    if (c->home && c->slot < 0) {
        sw_vmm_release(c->home);
        c->home = 0;
        sw_stat_add(SW_STAT_host_copy_bytes, -(int64_t)c->size);
    }
}

/* Host copies kept of device chunks are a saving, not data: they give way
 * to anything that needs host memory. */
static void drop_copies(sw_alloc_t *a, void *need)
{
    for (uint32_t i = 0; i < a->nchunks && host_room() < *(uint64_t *)need; i++)
        sw_drop_copy(&a->chunks[i]);
}

bool sw_host_room_for(uint64_t need)
{
    if (host_room() < need)
        sw_table_each(table, drop_copies, &need);
    return host_room() >= need;
}

CUresult sw_safe_sync(void)
{
    sw_stat_add(SW_STAT_safety_syncs, 1);
    return sw_dev_sync_all();
}

void sw_place_count(int dev, sw_where_t where, int64_t bytes)
{
    if (where == SW_ON_DEVICE)
        sw_dev_bytes_add(dev, bytes);
    else
        sw_stat_add(SW_STAT_host_bytes, bytes);
}

/* c's address maps another handle: where it lies, in which slot, and a
 * change its allocation's walks (marks.c, clean) must notice. */
static void settle(sw_chunk_t *c, sw_where_t where, int slot)
{
    c->where = where;
    c->slot = slot;
    c->alloc->moved++;
}

CUresult sw_place_born(sw_chunk_t *c, sw_where_t where)
{
    CUresult r = sw_vmm_back(c, where);
    if (r != CUDA_SUCCESS)
        return r;
    settle(c, where, -1);
    sw_place_count(c->alloc->dev, where, (int64_t)c->size);
    return CUDA_SUCCESS;
}

void sw_place_gone(const sw_chunk_t *c)
{
    bool device = c->where == SW_ON_DEVICE && c->slot < 0;
    sw_place_count(c->alloc->dev, device ? SW_ON_DEVICE : SW_ON_HOST, -(int64_t)c->size);
}

void sw_place_slotted(sw_chunk_t *c, int slot, uint64_t handle)
{
    c->home = c->handle;
    c->handle = handle;
    settle(c, SW_ON_DEVICE, slot);
}

void sw_place_unslotted(sw_chunk_t *c)
{
    c->handle = c->home;
    c->home = 0;
    settle(c, SW_ON_HOST, -1);
}

/* Moves c and keeps the byte counts; failure leaves c as it was. The
 * learned policy keeps a promoted chunk's host copy, so that demoting it
 * unchanged moves no byte; LRU, the baseline, copies both ways. */
CUresult sw_move(sw_chunk_t *c, sw_where_t to)
{
    bool down = to == SW_ON_HOST;
    if (c->fixed)
        return CUDA_ERROR_NOT_PERMITTED; /* its handle is mapped elsewhere, or exported */
    /* A chunk with a copy needs no more host memory to go home. */
    if (down && !c->home && !sw_host_room_for(c->size))
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* Home changes place: a window copy of it goes home first, on
     * spillway's stream, where the move's own copy follows it. */
    sw_window_touch(c->va, c->size, CU_STREAM_LEGACY);
    /* The move releases c's current handle: its mirror must go first (it
     * is mapped again, from the new host handle, when next needed). */
    void (*unmirror)(sw_chunk_t *) = __atomic_load_n(&before_move, __ATOMIC_ACQUIRE);
    if (unmirror)
        unmirror(c);
    if (c->mirrored)
        return CUDA_ERROR_UNKNOWN;
    bool had_copy = c->home != 0, copied;
    int dev = c->alloc->dev;
    CUresult r = sw_vmm_move(c, to, sw_opts()->policy == SW_POLICY_LEARNED, &copied);
    int64_t n = (int64_t)c->size;
    if (had_copy != (c->home != 0))
        sw_stat_add(SW_STAT_host_copy_bytes, had_copy ? -n : n);
    if (r != CUDA_SUCCESS) {
        sw_stat_add(SW_STAT_failed_moves, 1);
        sw_debug("moving chunk 0x%llx failed: %s", (unsigned long long)c->va, sw_cu_name(r));
        return r;
    }
    settle(c, to, c->slot);
    sw_stats_batch_begin(); /* readers see the bytes moved all at once */
    sw_place_count(dev, SW_ON_DEVICE, down ? -n : n);
    sw_place_count(dev, SW_ON_HOST, down ? n : -n);
    sw_stat_add(down ? SW_STAT_demotions : SW_STAT_promotions, 1);
    sw_stat_add(down ? SW_STAT_bytes_demoted : SW_STAT_bytes_promoted, n);
    if (down && copied)
        sw_stat_add(SW_STAT_bytes_written_back, n);
    sw_stats_batch_end();
    sw_debug("chunk 0x%llx +%llu moved to the %s at launch %llu", (unsigned long long)c->va,
             (unsigned long long)c->size, down ? "host" : "device",
             (unsigned long long)sw_launch_now());
    return CUDA_SUCCESS;
}

bool sw_trade(const sw_pack_t *m)
{
    for (size_t i = 0; i < m->nout; i++)
        if (sw_move(m->out[i], SW_ON_HOST) != CUDA_SUCCESS)
            return false;
    for (size_t i = 0; i < m->nin; i++)
        if (sw_move(m->in[i], SW_ON_DEVICE) != CUDA_SUCCESS)
            return false;
    return true;
}

bool sw_used_at(const sw_chunk_t *c, void *now)
{
    return sw_learn_state(c).last_use == *(const uint64_t *)now;
}

uint64_t sw_launch_now(void)
{
    return __atomic_load_n(&launch_seq, __ATOMIC_RELAXED);
}

uint64_t sw_launch_next(void)
{
    return __atomic_add_fetch(&launch_seq, 1, __ATOMIC_RELAXED);
}

static bool period_agreed; /* the cached period's (sw_learn_period), relaxed atomic */

uint64_t sw_spacing_doubled(uint64_t every, unsigned times, uint64_t loop)
{
    for (unsigned i = 0; i < times && 2 * every <= loop; i++)
        every *= 2;
    return every;
}

/* Launches between two computations of the period: twice a loop, at most
 * every 8 and, while it moves, at least every 64. While the first loops
 * are learned the period moves (a load pass before the loop spreads the
 * first gaps over the loop's length), and a value kept for longer than
 * half a loop is judged by: 20 layers after a load pass kept the first
 * loop's 21 through the second, where the loop was 40, and lost their
 * window. Once `steady` computations in a row agreed on the same period,
 * the spacing doubles with each, up to a loop: each sorts every chunk's
 * gap, and 600 layers of 2.25 MiB, 1,200 chunks, paid 5,400 instructions
 * a launch for computations every 64 launches that found the same loop
 * (steps 5-6; simgpu, 2026-12-03). */
static uint64_t recompute_every(uint64_t period, unsigned steady)
{
    uint64_t every = period / 2;
    return sw_spacing_doubled(every < 8 ? 8 : every > 64 ? 64 : every, steady, period);
}

uint64_t sw_period(uint64_t now)
{
    /* sw_learn_period sorts every chunk's gap: not for every launch, but
     * twice a loop (recompute_every), every 8 while none is known.
     * Launches on several threads run this at once (the gate is only
     * shared), so the cache is read and written with relaxed atomics, and
     * one thread recomputes at a time: a thread may return a period one
     * recomputation old, which skews a prediction, never a result. */
    static uint64_t cached, at;
    static unsigned steady; /* computations in a row agreeing on the cached period */
    static bool computing; /* one thread recomputes; the others take the cache */
    uint64_t period = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    uint64_t last = __atomic_load_n(&at, __ATOMIC_RELAXED);
    unsigned same = __atomic_load_n(&steady, __ATOMIC_RELAXED);
    uint64_t every = recompute_every(period, same);
    if ((!last || (now - last >= every &&
                   now - last >= sw_table_walk_every(sw_tracked(), every))) &&
        !__atomic_exchange_n(&computing, true, __ATOMIC_ACQUIRE)) {
        bool agreed;
        uint64_t before = period;
        period = sw_learn_period(sw_tracked(), &agreed);
        __atomic_store_n(&steady, agreed && period == before ? same + (same < 64) : 0,
                         __ATOMIC_RELAXED);
        __atomic_store_n(&cached, period, __ATOMIC_RELAXED);
        __atomic_store_n(&period_agreed, agreed, __ATOMIC_RELAXED);
        __atomic_store_n(&at, now, __ATOMIC_RELAXED);
        /* The gauge is set from its own value: two threads at once would
         * both add the difference. */
        sw_stat_add(SW_STAT_learned_period,
                    (int64_t)period - (int64_t)sw_stat_get(SW_STAT_learned_period));
        __atomic_store_n(&computing, false, __ATOMIC_RELEASE);
    }
    return period;
}

uint64_t sw_agreed_period(uint64_t now)
{
    uint64_t period = sw_period(now);
    return __atomic_load_n(&period_agreed, __ATOMIC_RELAXED) ? period : 0;
}

/*
 * Handles a move released, kept for the next move of the same size.
 *
 * Each move of a chunk fills a new physical handle and releases the old
 * one. Under LRU a promotion is paired with a demotion, so the handle one
 * releases is the handle the next one creates: a device handle demoted
 * away is the one a promotion needs, a host handle promoted away the one
 * the next demotion needs. cuMemCreate is slow (193 µs on an A100,
 * docs/cuda-facts.md §3), so the pool keeps up to POOL_MAX released handles
 * per location and gives them back by size:
 *
 *      move down:  chunk [dev D] --copy--> [host H]   D -> pool(device)
 *      move up:    chunk [host H'] --copy--> [dev D]  D <- pool(device)
 *                                                     H' -> pool(host)
 *
 * Safety. Only a move's old handle comes here, where it was released
 * before the pool existed: after the chunk's new mapping has access, or a
 * host copy that no mapping uses. So a pooled handle is mapped nowhere
 * and holds no chunk's bytes. A move that fails releases the handle it
 * took, as it always did, rather than return it (it may still be mapped at
 * the staging range).
 *
 * Accounting. A pooled handle's bytes left the chunk counts (device_bytes,
 * host_bytes, host_copy_bytes) when it came here; pool_device_bytes and
 * pool_host_bytes show them. The budgets still bound what is really held,
 * because the pool gives way: every chunk or window handle spillway
 * creates comes from sw_pool_take or, on a miss, after sw_pool_drain of
 * that location (vmm.c, create). So at every creation
 *      chunk bytes + pooled bytes + new size
 *          = chunk bytes + new size <= budget       (the callers' room check)
 * and a reuse or a pooling leaves the sum where it was: pooled host
 * handles count against SPILLWAY_HOST_BUDGET that way.
 * Device handles go further: none outlives the exclusive hold that pooled
 * it (promote.c and alloc.c drain the device pool before they let the gate
 * go), since device memory that no count shows would shrink what the
 * driver gives everyone else: untracked allocations, other processes,
 * cuMemGetInfo. A promotion takes the handle its victim's demotion
 * pooled in the same hold, so nothing is lost by that. Demoting for room
 * and retrying the driver after out-of-memory release the device pool
 * first (alloc.c): the pool never causes an out-of-memory. Both pools are
 * released when the last tracked allocation is freed.
 *
 * Every function here is called with the gate held exclusively (moves,
 * allocations and frees are), which is the pool's lock.
 */
#include "device.h"

#define POOL_MAX 4

typedef struct {
    uint64_t size;
    uint64_t handle;
} pooled_t;

static pooled_t pool[2][POOL_MAX]; /* [SW_ON_DEVICE / SW_ON_HOST] */
static int pooled[2];

static sw_stat_id_t gauge(sw_where_t where)
{
    return where == SW_ON_DEVICE ? SW_STAT_pool_device_bytes : SW_STAT_pool_host_bytes;
}

bool sw_pool_take(sw_where_t where, uint64_t size, uint64_t *h)
{
    pooled_t *p = pool[where];
    for (int i = pooled[where] - 1; i >= 0; i--) {
        if (p[i].size != size)
            continue;
        *h = p[i].handle;
        p[i] = p[--pooled[where]];
        sw_stat_add(gauge(where), -(int64_t)size);
        sw_stat_add(SW_STAT_handles_reused, 1);
        return true;
    }
    return false;
}

void sw_pool_give(sw_where_t where, uint64_t size, uint64_t h)
{
    if (pooled[where] == POOL_MAX) {
        SW_REAL(cuMemRelease)(h);
        return;
    }
    pool[where][pooled[where]++] = (pooled_t){.size = size, .handle = h};
    sw_stat_add(gauge(where), (int64_t)size);
}

void sw_pool_drain(sw_where_t where)
{
    while (pooled[where] > 0) {
        pooled_t *p = &pool[where][--pooled[where]];
        SW_REAL(cuMemRelease)(p->handle);
        sw_stat_add(gauge(where), -(int64_t)p->size);
    }
}

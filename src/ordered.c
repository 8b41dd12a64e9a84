/*
 * The stream-ordered allocator: cuMemAllocAsync, cuMemAllocFromPoolAsync,
 * cuMemFreeAsync, as cudaMallocAsync and PyTorch's cudaMallocAsync
 * backend reach them.
 *
 * Allocations of at least SPILLWAY_MIN_ALLOC are tracked exactly as
 * cuMemAlloc's are (alloc.c): a reservation of chunks, usable at once,
 * which is all a stream-ordered allocation promises and more. Not tracked
 * (counted by route, untracked.c): allocations during a capture, which
 * become the graph's memory nodes; smaller ones; and those from a pool
 * whose memory spillway must not replace, because another process may
 * import it (handle types requested) or it is not device memory.
 *
 * A stream-ordered free must not let the memory go before the work queued
 * ahead of it on its stream has finished. The free records an event on
 * the stream and leaves the allocation in the table, pending:
 *
 *   cuMemFreeAsync(p, s) --> pending {p, event on s} --> reaped: freed
 *                                                        (alloc.c, which
 *                                                        synchronizes)
 *
 * Pending frees are reaped at the next tracked allocation once their
 * event has completed, and waited for when the memory is short (cheaper
 * than demoting live chunks) or when the driver says out of memory, and
 * when the application trims a pool. Their memory stays counted until
 * then, as a pool's reserved memory would. A free of tracked memory
 * during a capture would be a graph node freeing memory the driver does
 * not know: the application gets CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
 * (README, known limits).
 *
 * Pool release thresholds and trimming keep their meaning for the memory
 * the pools hold; tracked allocations are never in a pool, and their
 * freed memory goes back once reached, as with a release threshold of 0.
 */
#include "residency.h"

#include <stdlib.h>

typedef struct {
    CUdeviceptr va;
    CUevent done;
} pending_t;

/* Pools created with properties spillway must not replace. */
typedef struct {
    CUmemoryPool pool;
    sw_route_t route;
} foreign_t;

static struct {
    pthread_mutex_t lock; /* both lists */
    pending_t *pending;
    size_t npending, cappending;
    foreign_t *foreign;
    size_t nforeign, capforeign;
    /* npending and nforeign as the hooks' fast paths read them, with no
     * lock (atomic): stored under the lock after each change. */
    size_t seen_pending, seen_foreign;
} ord = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Lock held. */
static void publish(void)
{
    __atomic_store_n(&ord.seen_pending, ord.npending, __ATOMIC_RELAXED);
    __atomic_store_n(&ord.seen_foreign, ord.nforeign, __ATOMIC_RELAXED);
}

/* Grows *v (of *cap elements of size sz) to hold one more; false on OOM
 * (nothing changed). */
static bool grow(void **v, size_t n, size_t *cap, size_t sz)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? 2 * *cap : 8;
    void *nv = realloc(*v, c * sz);
    if (!nv)
        return false;
    *v = nv;
    *cap = c;
    return true;
}

/* ---- pools ---- */

static sw_route_t pool_route(CUmemoryPool pool, bool *foreign)
{
    *foreign = false;
    sw_route_t route = SW_ROUTE_pool;
    pthread_mutex_lock(&ord.lock);
    for (size_t i = 0; i < ord.nforeign && !*foreign; i++)
        if (ord.foreign[i].pool == pool) {
            *foreign = true;
            route = ord.foreign[i].route;
        }
    pthread_mutex_unlock(&ord.lock);
    return route;
}

CUresult sw_mempool_created(CUresult r, const CUmemoryPool *pool, const CUmemPoolProps *props)
{
    if (r != CUDA_SUCCESS || !pool || !props)
        return r;
    bool device = props->allocType == CU_MEM_ALLOCATION_TYPE_PINNED &&
                  props->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
    if (device && props->handleTypes == CU_MEM_HANDLE_TYPE_NONE && props->usage == 0)
        return r;
    pthread_mutex_lock(&ord.lock);
    /* Listed, none of the pool's allocations is tracked: another process
     * may expect to import them, or the decompression engine to use them
     * (CU_MEM_POOL_CREATE_USAGE_HW_DECOMPRESS), which spillway's memory
     * cannot be. */
    if (grow((void **)&ord.foreign, ord.nforeign, &ord.capforeign, sizeof *ord.foreign))
        ord.foreign[ord.nforeign++] = (foreign_t){*pool, SW_ROUTE_pool};
    else
        sw_warn("out of memory listing memory pool %p: its allocations may be tracked, and "
                "then cannot be exported",
                (void *)*pool);
    publish();
    pthread_mutex_unlock(&ord.lock);
    return r;
}

CUresult sw_mempool_destroy(CUmemoryPool pool)
{
    pthread_mutex_lock(&ord.lock);
    for (size_t i = 0; i < ord.nforeign; i++)
        if (ord.foreign[i].pool == pool)
            ord.foreign[i] = ord.foreign[--ord.nforeign];
    publish();
    pthread_mutex_unlock(&ord.lock);
    return SW_CALL(cuMemPoolDestroy, (pool));
}

/* Trimming asks for memory back: the frees the streams have reached are
 * released too. */
CUresult sw_mempool_trim(CUmemoryPool pool, size_t keep)
{
    sw_ordered_reap(false);
    return SW_CALL(cuMemPoolTrimTo, (pool, keep));
}

/* The pool cuMemAllocAsync would use: the current device's. NULL when it
 * cannot be known (then it counts as the device's default). */
static CUmemoryPool current_pool(void)
{
    CUdevice d;
    CUmemoryPool p = NULL;
    if (SW_CALL(cuCtxGetDevice, (&d)) != CUDA_SUCCESS ||
        SW_CALL(cuDeviceGetMemPool, (&p, d)) != CUDA_SUCCESS)
        return NULL;
    return p;
}

static bool any_foreign(void)
{
    return __atomic_load_n(&ord.seen_foreign, __ATOMIC_RELAXED) > 0;
}

/* ---- allocations ---- */

typedef struct {
    CUresult (*alloc)(CUdeviceptr *, size_t, CUstream);
    CUresult (*from_pool)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    CUmemoryPool pool;
    CUstream st;
} async_call_t;

static CUresult async_again(CUdeviceptr *dptr, size_t bytesize, void *ctx)
{
    const async_call_t *c = ctx;
    if (c->from_pool)
        return c->from_pool(dptr, bytesize, c->pool, c->st);
    return c->alloc ? c->alloc(dptr, bytesize, c->st) : CUDA_ERROR_NOT_FOUND;
}

static CUresult alloc_async(const async_call_t *c, CUmemoryPool pool, CUdeviceptr *dptr,
                            size_t bytesize)
{
    bool foreign = false;
    sw_route_t route = any_foreign() ? pool_route(pool, &foreign) : SW_ROUTE_pool;
    CUresult r = foreign ? CUDA_ERROR_NOT_SUPPORTED : sw_try_track(dptr, bytesize, &route);
    if (r != CUDA_ERROR_NOT_SUPPORTED)
        return r;
    return sw_passthrough(route, dptr, bytesize, async_again, (void *)c);
}

CUresult sw_mem_alloc_async(CUresult (*real)(CUdeviceptr *, size_t, CUstream), CUdeviceptr *dptr,
                            size_t bytesize, CUstream st)
{
    async_call_t c = {.alloc = real, .st = st};
    return alloc_async(&c, any_foreign() ? current_pool() : NULL, dptr, bytesize);
}

CUresult sw_mem_alloc_from_pool(CUresult (*real)(CUdeviceptr *, size_t, CUmemoryPool, CUstream),
                                CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream st)
{
    async_call_t c = {.from_pool = real, .pool = pool, .st = st};
    /* A pool the driver does not know gets the driver's answer. */
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    return alloc_async(&c, pool, dptr, bytesize);
}

/* ---- frees ---- */

bool sw_ordered_any(void)
{
    return __atomic_load_n(&ord.seen_pending, __ATOMIC_RELAXED) > 0;
}

bool sw_ordered_pending(CUdeviceptr va)
{
    bool found = false;
    pthread_mutex_lock(&ord.lock);
    for (size_t i = 0; i < ord.npending && !found; i++)
        found = ord.pending[i].va == va;
    pthread_mutex_unlock(&ord.lock);
    return found;
}

static bool capturing(CUstream st)
{
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    return sw_capturing() && SW_CALL(cuStreamIsCapturing, (st, &cs)) == CUDA_SUCCESS &&
           cs != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* What alloc.c asks of the pending frees, handed down to it. */
static const sw_pending_frees_t frees = {sw_ordered_reap, sw_ordered_any, sw_ordered_pending};

/* Pends the free of tracked va behind the work queued on st. Failure:
 * the driver's error (nothing pending; the memory stays allocated). */
static CUresult pend(CUdeviceptr va, CUstream st)
{
    sw_alloc_pending_frees(&frees);
    CUevent ev;
    CUresult r = SW_CALL(cuEventCreate, (&ev, CU_EVENT_DISABLE_TIMING));
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = SW_CALL(cuEventRecord, (ev, st))) != CUDA_SUCCESS) {
        SW_CALL(cuEventDestroy_v2, (ev));
        return r;
    }
    pthread_mutex_lock(&ord.lock);
    bool listed = grow((void **)&ord.pending, ord.npending, &ord.cappending, sizeof *ord.pending);
    if (listed)
        ord.pending[ord.npending++] = (pending_t){va, ev};
    publish();
    pthread_mutex_unlock(&ord.lock);
    if (listed) {
        sw_stat_add(SW_STAT_ordered_frees_deferred, 1);
        return CUDA_SUCCESS;
    }
    /* No room to remember it: free it now, after the stream's work. */
    r = SW_CALL(cuEventSynchronize, (ev));
    SW_CALL(cuEventDestroy_v2, (ev));
    return r == CUDA_SUCCESS ? sw_mem_free_tracked(&va, 1) : r;
}

CUresult sw_mem_free_async(CUresult (*real)(CUdeviceptr, CUstream), CUdeviceptr dptr, CUstream st)
{
    switch (sw_free_kind(dptr)) {
    case SW_FREE_UNTRACKED:
        return real ? real(dptr, st) : CUDA_ERROR_NOT_FOUND;
    case SW_FREE_INSIDE:
        return CUDA_ERROR_INVALID_VALUE; /* not a base: the driver knows it no better */
    case SW_FREE_TRACKED:
        break;
    }
    if (sw_ordered_pending(dptr))
        return CUDA_ERROR_INVALID_VALUE; /* freed twice */
    if (capturing(st)) {
        sw_warn("cuMemFreeAsync of tracked memory 0x%llx during a stream capture is not supported",
                (unsigned long long)dptr);
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    CUresult r = pend(dptr, st);
    sw_ordered_reap(false);
    return r;
}

/* Takes the pending frees that are done (all of them, with wait) off the
 * list, into *out (malloc'd; NULL and 0 when none or out of memory);
 * their events are destroyed. Waiting happens outside the lock; a free
 * whose event cannot be waited for goes back on the list. */
static size_t take_done(bool wait, CUdeviceptr **out)
{
    pthread_mutex_lock(&ord.lock);
    size_t n = 0, m = ord.npending;
    pending_t *mine = malloc(m * sizeof *mine);
    CUdeviceptr *v = malloc(m * sizeof *v);
    for (size_t i = 0; mine && v && i < ord.npending;) {
        pending_t *p = &ord.pending[i];
        if (!wait && SW_CALL(cuEventQuery, (p->done)) != CUDA_SUCCESS) {
            i++;
            continue;
        }
        mine[n++] = *p;
        *p = ord.pending[--ord.npending];
    }
    publish();
    pthread_mutex_unlock(&ord.lock);
    size_t done = 0;
    for (size_t i = 0; i < n; i++) {
        if (wait && SW_CALL(cuEventSynchronize, (mine[i].done)) != CUDA_SUCCESS) {
            pthread_mutex_lock(&ord.lock);
            if (grow((void **)&ord.pending, ord.npending, &ord.cappending, sizeof *ord.pending))
                ord.pending[ord.npending++] = mine[i];
            publish();
            pthread_mutex_unlock(&ord.lock);
            continue; /* unlisted on OOM: it stays allocated, never lost */
        }
        SW_CALL(cuEventDestroy_v2, (mine[i].done));
        v[done++] = mine[i].va;
    }
    free(mine);
    *out = v;
    return done;
}

size_t sw_ordered_reap(bool wait)
{
    if (!sw_ordered_any() || !sw_tracking_any())
        return 0;
    CUdeviceptr *v;
    size_t n = take_done(wait, &v);
    if (n && sw_mem_free_tracked(v, n) != CUDA_SUCCESS) {
        /* The synchronization failed: they stay allocated, unlisted
         * (the device is then in error; nothing is lost). */
        sw_warn("releasing %zu stream-ordered frees failed", n);
        n = 0;
    }
    free(v);
    return n;
}

/*
 * Memory pools for the stream-ordered allocator (cuMemAllocAsync,
 * cuMemAllocFromPoolAsync), as the runtime's cudaMallocAsync,
 * cudaMallocFromPoolAsync and cudaMemPool* reach them.
 *
 * A pool here is bookkeeping: its attributes, and the bytes of its live
 * allocations (USED_MEM_*). The memory itself comes from the device like
 * cuMemAlloc's and goes back when the free is reached on its stream, so a
 * pool never holds freed memory: RESERVED_MEM_* equal USED_MEM_*, and
 * cuMemPoolTrimTo has nothing to release. Reuse across streams is not
 * modelled (every allocation is fresh memory), which is always safe.
 */
#include "sg.h"

#include <stdlib.h>
#include <string.h>

typedef struct sg_pool {
    CUmemPoolProps props;
    uint64_t release_threshold, used, used_high;
    int reuse[3]; /* FOLLOW_EVENT_DEPENDENCIES, ALLOW_OPPORTUNISTIC, ALLOW_INTERNAL_DEPENDENCIES */
} sg_pool_t;

typedef struct block {
    struct block *next;
    CUdeviceptr ptr;
    uint64_t size;
    sg_pool_t *pool;
} block_t;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static sg_pool_t default_pool = {.reuse = {1, 1, 1}};
static sg_pool_t *current_pool = &default_pool; /* cuDeviceSetMemPool */
static block_t *blocks;

static bool pool_ok(CUmemoryPool p)
{
    return p == (CUmemoryPool)&default_pool || sg_handle_kind(p) == SG_H_POOL;
}

CUresult sg_pool_check(CUmemoryPool *pool)
{
    sg_lock();
    bool ok = !*pool || pool_ok(*pool);
    sg_unlock();
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    if (!*pool) {
        pthread_mutex_lock(&pool_lock);
        *pool = (CUmemoryPool)current_pool;
        pthread_mutex_unlock(&pool_lock);
    }
    return CUDA_SUCCESS;
}

void sg_pool_note_alloc(CUmemoryPool pool, CUdeviceptr ptr, uint64_t size)
{
    block_t *b = malloc(sizeof *b);
    if (!b)
        return; /* only the USED_MEM counters lose this allocation */
    sg_pool_t *p = (sg_pool_t *)pool;
    pthread_mutex_lock(&pool_lock);
    *b = (block_t){blocks, ptr, size, p};
    blocks = b;
    p->used += size;
    if (p->used > p->used_high)
        p->used_high = p->used;
    pthread_mutex_unlock(&pool_lock);
}

void sg_pool_note_free(CUdeviceptr ptr)
{
    pthread_mutex_lock(&pool_lock);
    for (block_t **b = &blocks; *b; b = &(*b)->next)
        if ((*b)->ptr == ptr) {
            block_t *dead = *b;
            dead->pool->used -= dead->size;
            *b = dead->next;
            free(dead);
            break;
        }
    pthread_mutex_unlock(&pool_lock);
}

bool sg_pool_owns(CUdeviceptr ptr)
{
    pthread_mutex_lock(&pool_lock);
    block_t *b = blocks;
    while (b && b->ptr != ptr)
        b = b->next;
    pthread_mutex_unlock(&pool_lock);
    return b != NULL;
}

SG_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    SG_ENTER(cuDeviceGetDefaultMemPool, API);
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sg_device_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *pool_out = (CUmemoryPool)&default_pool;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    SG_ENTER(cuDeviceGetMemPool, API);
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sg_device_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&pool_lock);
    *pool = (CUmemoryPool)current_pool;
    pthread_mutex_unlock(&pool_lock);
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    SG_ENTER(cuDeviceSetMemPool, API);
    if (!sg_device_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    sg_lock();
    bool ok = pool && pool_ok(pool);
    sg_unlock();
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool_lock);
    current_pool = (sg_pool_t *)pool;
    pthread_mutex_unlock(&pool_lock);
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    SG_ENTER(cuMemPoolCreate, API);
    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (props->location.id != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    sg_pool_t *p = calloc(1, sizeof *p);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p->props = *props;
    p->reuse[0] = p->reuse[1] = p->reuse[2] = 1;
    sg_lock();
    sg_handle_add(p, SG_H_POOL);
    sg_unlock();
    *pool = (CUmemoryPool)p;
    return CUDA_SUCCESS;
}

/* Like the driver, a pool destroyed with allocations still live is freed
 * when they are; simgpu's pools own no memory, so only the handle goes
 * now and the blocks keep their counters until freed. */
SG_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    SG_ENTER(cuMemPoolDestroy, API);
    sg_lock();
    bool ok = sg_handle_kind(pool) == SG_H_POOL;
    if (ok)
        sg_handle_del(pool);
    sg_unlock();
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool_lock);
    bool live = false;
    for (block_t *b = blocks; b; b = b->next)
        live |= b->pool == (sg_pool_t *)pool;
    if (current_pool == (sg_pool_t *)pool)
        current_pool = &default_pool;
    pthread_mutex_unlock(&pool_lock);
    if (!live)
        free(pool);
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    SG_ENTER(cuMemPoolTrimTo, API);
    return sg_pool_check(&pool) == CUDA_SUCCESS && pool ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult attr(CUmemoryPool pool, CUmemPool_attribute a, void *value, bool set)
{
    if (!pool || !value || sg_pool_check(&pool) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    sg_pool_t *p = (sg_pool_t *)pool;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&pool_lock);
    switch (a) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: {
        int *v = &p->reuse[a - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
        if (set)
            *v = *(int *)value != 0;
        else
            *(int *)value = *v;
        break;
    }
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        if (set)
            p->release_threshold = *(cuuint64_t *)value;
        else
            *(cuuint64_t *)value = p->release_threshold;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        if (set)
            r = CUDA_ERROR_INVALID_VALUE;
        else
            *(cuuint64_t *)value = p->used;
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        /* Only a reset to zero may be set: the high-water mark restarts at the current use. */
        if (set && *(cuuint64_t *)value != 0)
            r = CUDA_ERROR_INVALID_VALUE;
        else if (set)
            p->used_high = p->used;
        else
            *(cuuint64_t *)value = p->used_high;
        break;
    default: r = CUDA_ERROR_INVALID_VALUE; break;
    }
    pthread_mutex_unlock(&pool_lock);
    return r;
}

SG_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute a, void *value)
{
    SG_ENTER(cuMemPoolSetAttribute, API);
    return attr(pool, a, value, true);
}

SG_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute a, void *value)
{
    SG_ENTER(cuMemPoolGetAttribute, API);
    return attr(pool, a, value, false);
}

SG_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                           CUstream hStream)
{
    SG_ENTER(cuMemAllocFromPoolAsync, API);
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    return sg_alloc_async(dptr, bytesize, pool, hStream, false);
}

SG_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                CUmemoryPool pool, CUstream hStream)
{
    SG_ENTER(cuMemAllocFromPoolAsync, API);
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    return sg_alloc_async(dptr, bytesize, pool, hStream, true);
}

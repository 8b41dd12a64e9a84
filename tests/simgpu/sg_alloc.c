/*
 * Ordinary allocations and pointer queries: cuMemAlloc/cuMemFree, pinned
 * host memory, the stream-ordered allocator, cuMemGetInfo,
 * cuMemGetAddressRange and cuPointerGetAttribute(s).
 *
 * cuMemFree and cuMemFreeHost synchronize the device first, as the real
 * ones do (cudaFree's well-known implicit synchronization), so freeing
 * memory that queued work uses is not a hazard through them.
 */
#include "sg.h"
#include <string.h>

/* Refuses a call that would synchronize during a capture. */
static CUresult sync_guard(void)
{
    sg_lock();
    CUresult r = sg_capture_guard(NULL);
    sg_unlock();
    return r;
}

static CUresult legacy_alloc(CUdeviceptr *dptr, size_t bytesize)
{
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    sg_mem_wrlock();
    int device = sg_current_device();
    CUresult r = sg_legacy_alloc(bytesize, device > 0 ? device : 0, dptr);
    sg_mem_unlock();
    return r;
}

SG_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    SG_ENTER(cuMemAlloc, API);
    CUresult r = sg_need_ctx();
    if (r == CUDA_SUCCESS)
        r = sync_guard();
    return r == CUDA_SUCCESS ? legacy_alloc(dptr, bytesize) : r;
}

/* Waits for all work, then frees: the driver's implicit synchronization. */
static CUresult sync_then(const char *call, uint64_t addr, uint64_t len)
{
    sg_lock();
    CUresult r = sg_capture_guard(NULL);
    if (r == CUDA_SUCCESS) {
        sg_ctx_sync();
        sg_check_hazard(call, addr, len);
        r = SG->sticky;
    }
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    SG_ENTER(cuMemFree, API);
    CUresult r = sg_need_ctx();
    /* Freeing NULL succeeds, as free(NULL) does; the runtime's
     * cudaFree(NULL), a common "make the context" idiom, relies on it. */
    if (r == CUDA_SUCCESS && dptr == 0)
        return CUDA_SUCCESS;
    CUdeviceptr base;
    uint64_t size = 0;
    if (r != CUDA_SUCCESS)
        return r;
    sg_mem_rdlock();
    bool known = sg_legacy_range(dptr, &base, &size) && base == dptr;
    sg_mem_unlock();
    if (!known)
        return CUDA_ERROR_INVALID_VALUE;
    r = sync_then("cuMemFree", dptr, size);
    if (r != CUDA_SUCCESS)
        return r;
    if (sg_gmem_free_sync(dptr))
        return CUDA_SUCCESS; /* a graph's memory: its use ends, the graph keeps it */
    sg_mem_wrlock();
    r = sg_legacy_free(dptr); /* fails if another thread freed it meanwhile */
    sg_mem_unlock();
    return r;
}

/* Stream-ordered allocation: the memory is usable at once (a simplification
 * of the pool), and a free takes effect when the stream reaches it. */
CUresult sg_alloc_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hs,
                        bool pt)
{
    CUresult r = sg_need_ctx();
    if (r == CUDA_SUCCESS)
        r = sg_pool_check(&pool);
    if (r != CUDA_SUCCESS)
        return r;
    sg_lock();
    sg_stream_t *s = sg_stream_get(hs, pt);
    bool captured = s && s->capture;
    sg_unlock();
    /* During a capture: a graph allocation, its address fixed for the graph. */
    if (captured)
        return sg_gmem_capture_alloc(dptr, bytesize, hs, pt);
    r = s ? legacy_alloc(dptr, bytesize) : CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS)
        sg_pool_note_alloc(pool, *dptr, bytesize);
    return r;
}

static CUresult free_async(CUdeviceptr dptr, CUstream hs, bool pt)
{
    CUresult r = sg_need_ctx();
    if (r != CUDA_SUCCESS)
        return r;
    CUdeviceptr base;
    uint64_t size;
    sg_mem_rdlock();
    bool known = sg_legacy_range(dptr, &base, &size) && base == dptr;
    sg_mem_unlock();
    if (!known)
        return CUDA_ERROR_INVALID_VALUE;
    sg_pool_note_free(dptr);
    sg_op_t *op = sg_op_new(SG_OP_FREE, "cuMemFreeAsync");
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->ranges[0] = (sg_range_t){.addr = dptr, .len = size, .write = true};
    op->nranges = 0; /* the free itself is not a reference to the memory */
    sg_lock();
    op->gmem = sg_gmem_get(dptr); /* a graph's memory: the free ends its use */
    sg_stream_t *s = sg_stream_get(hs, pt);
    r = s ? sg_submit(s, op) : CUDA_ERROR_INVALID_HANDLE;
    if (!s)
        sg_op_put(op);
    sg_unlock();
    return r;
}


SG_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    SG_ENTER(cuMemAllocAsync, API);
    return sg_alloc_async(dptr, bytesize, NULL, hStream, false);
}
SG_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    SG_ENTER(cuMemAllocAsync, API);
    return sg_alloc_async(dptr, bytesize, NULL, hStream, true);
}
SG_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    SG_ENTER(cuMemFreeAsync, API);
    return free_async(dptr, hStream, false);
}
SG_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    SG_ENTER(cuMemFreeAsync, API);
    return free_async(dptr, hStream, true);
}

SG_EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    SG_ENTER(cuMemGetInfo, API);
    if (!free || !total)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t used, peak;
    sg_mem_device_stats(sg_current_device() > 0 ? sg_current_device() : 0, &used, &peak);
    *total = SG->cfg.mem;
    *free = SG->cfg.mem - used;
    return CUDA_SUCCESS;
}

/* ---- pinned host memory ---- */

static CUresult host_alloc(void **pp, size_t bytesize)
{
    CUresult r = sg_need_ctx();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pp || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    sg_mem_wrlock();
    r = sg_pinned_alloc(bytesize, pp);
    sg_mem_unlock();
    return r;
}

SG_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    SG_ENTER(cuMemAllocHost, API);
    return host_alloc(pp, bytesize);
}

SG_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    SG_ENTER(cuMemHostAlloc, API);
    if (Flags & ~(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                  CU_MEMHOSTALLOC_WRITECOMBINED))
        return CUDA_ERROR_INVALID_VALUE;
    return host_alloc(pp, bytesize);
}

SG_EXPORT CUresult cuMemFreeHost(void *p)
{
    SG_ENTER(cuMemFreeHost, API);
    void *base;
    uint64_t size;
    sg_mem_rdlock();
    bool known = sg_pinned_find(p, &base, &size) && base == p;
    sg_mem_unlock();
    if (!known)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = sync_then("cuMemFreeHost", (uint64_t)p, size);
    if (r != CUDA_SUCCESS)
        return r;
    sg_mem_wrlock();
    r = sg_pinned_free(p);
    sg_mem_unlock();
    return r;
}

SG_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    SG_ENTER(cuMemHostGetDevicePointer, API);
    void *base;
    uint64_t size;
    if (!pdptr || Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    sg_mem_rdlock();
    bool known = sg_pinned_find(p, &base, &size);
    sg_mem_unlock();
    if (!known)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)p; /* unified addressing */
    return CUDA_SUCCESS;
}

/* ---- what a pointer is ---- */

typedef enum { PTR_NONE, PTR_DEVICE, PTR_PINNED } ptr_kind_t;

/* The allocation containing p: a cuMemAlloc block, a VMM mapping, or a
 * pinned block. */
static ptr_kind_t classify(uint64_t p, uint64_t *base, uint64_t *size)
{
    ptr_kind_t k = PTR_NONE;
    void *hb;
    CUdeviceptr lb;
    sg_mem_rdlock();
    sg_map_t *m;
    if (sg_legacy_range(p, &lb, size)) {
        *base = lb;
        k = PTR_DEVICE;
    } else if ((m = sg_map_find(p)) && !m->legacy) { /* a legacy map's tail is padding */
        *base = m->va;
        *size = m->size;
        k = PTR_DEVICE;
    } else if (sg_pinned_find((void *)p, &hb, size)) {
        *base = (uint64_t)hb;
        k = PTR_PINNED;
    }
    sg_mem_unlock();
    return k;
}

SG_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    SG_ENTER(cuMemGetAddressRange, API);
    uint64_t base, size;
    if (classify(dptr, &base, &size) == PTR_NONE)
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = base;
    if (psize)
        *psize = size;
    return CUDA_SUCCESS;
}

/* Legacy IPC shares what cuMemAlloc made, and nothing made by the VMM
 * calls (the driver's documentation) or by a pool (the driver answers
 * CUDA_ERROR_INVALID_VALUE for those). simgpu has one process: the
 * handle, the allocation's base and size, is never opened. */
SG_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr dptr)
{
    SG_ENTER(cuIpcGetMemHandle, API);
    CUdeviceptr base;
    uint64_t size;
    sg_mem_rdlock();
    bool legacy = sg_legacy_range(dptr, &base, &size);
    sg_mem_unlock();
    if (!h || !legacy || sg_pool_owns(base))
        return CUDA_ERROR_INVALID_VALUE;
    memset(h, 0, sizeof *h);
    memcpy(h->reserved, &base, sizeof base);
    memcpy(h->reserved + sizeof base, &size, sizeof size);
    return CUDA_SUCCESS;
}

/* Whether a network card could register ptr's memory (GPUDirect RDMA):
 * cuMemAlloc's device memory, or a handle made on a device with
 * gpuDirectRDMACapable. Host memory is not. */
static int rdma_capable(CUdeviceptr ptr)
{
    CUdeviceptr base;
    uint64_t size;
    sg_mem_rdlock();
    const sg_map_t *m = sg_map_find(ptr);
    int yes = sg_legacy_range(ptr, &base, &size) ||
              (m && !m->legacy && m->phys->loc == SG_LOC_DEVICE &&
               m->phys->prop.allocFlags.gpuDirectRDMACapable);
    sg_mem_unlock();
    return yes;
}

/* One attribute of ptr, as cuPointerGetAttribute answers it. */
static CUresult attr_of(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    uint64_t base, size;
    ptr_kind_t k = classify(ptr, &base, &size);
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    if (k == PTR_NONE)
        return attribute == CU_POINTER_ATTRIBUTE_MAPPED
                   ? (*(int *)data = 0, CUDA_SUCCESS)
                   : CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        sg_mem_rdlock();
        *(CUcontext *)data = sg_primary_ctx(sg_legacy_device(ptr));
        sg_mem_unlock();
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = k == PTR_DEVICE ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (k != PTR_PINNED)
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = (void *)ptr;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        sg_mem_rdlock();
        *(int *)data = sg_legacy_device(ptr); /* VMM and pinned memory: device 0 */
        sg_mem_unlock();
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = base;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = size;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(int *)data = 1;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: /* simgpu has no managed memory */
        *(unsigned *)data = 0;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = base;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
        *(int *)data = rdma_capable(ptr);
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

SG_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                         CUdeviceptr ptr)
{
    SG_ENTER(cuPointerGetAttribute, API);
    return attr_of(data, attribute, ptr);
}

/* The bytes an attribute's value takes; 0 for one simgpu does not know. */
static size_t attr_size(CUpointer_attribute attribute)
{
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        return sizeof(unsigned);
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_MAPPED:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
        return sizeof(int);
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        return sizeof(uint64_t);
    default:
        return 0;
    }
}

/* As the driver documents it: unlike the singular call, a pointer it does
 * not know is no error; what cannot be answered for ptr reads as zero. A
 * NULL data entry skips its attribute; an unknown attribute is an error. */
SG_EXPORT CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attributes,
                                          void **data, CUdeviceptr ptr)
{
    SG_ENTER(cuPointerGetAttributes, API);
    if (n && (!attributes || !data))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < n; i++) {
        size_t bytes = attr_size(attributes[i]);
        if (!bytes)
            return CUDA_ERROR_INVALID_VALUE;
        if (data[i] && attr_of(data[i], attributes[i], ptr) != CUDA_SUCCESS)
            memset(data[i], 0, bytes);
    }
    return CUDA_SUCCESS;
}

/*
 * Multicast objects (cuMulticast*), as NCCL's NVLS buffers, TensorRT-LLM
 * and nvFuser use them: an object made with cuMulticastCreate, each
 * device's memory bound into it (cuMulticastBindMem, cuMulticastBindAddr),
 * the object mapped at an address of its own with cuMemMap, released with
 * cuMemRelease. Memory from cuMemAlloc is not bound by address, as the
 * driver documents.
 *
 * simgpu has one device's worth of memory behind any object: the object
 * is its one member's bytes, so a mapping of it reads and writes the very
 * bytes the member's handle holds, as a multicast mapping on a GPU reaches
 * the memory bound into it. It is mapped only once a member is bound (on a
 * GPU it may be mapped before), and a second member is refused.
 */
#include "sg.h"

#define MAX_MC 16
#define MC_BASE 0x6d63000000000000ull /* ids apart from physical handles' */

typedef struct {
    uint64_t size;
    sg_phys_t *member; /* bound, one reference held; NULL: none */
    uint64_t member_off;
    bool live;
} mc_t;

static mc_t mcs[MAX_MC];

static const uint64_t mc_granularity = 2u << 20;

/* The object of handle h (memory lock held), or NULL. */
static mc_t *mc_find(uint64_t h)
{
    if (h < MC_BASE || h >= MC_BASE + MAX_MC || !mcs[h - MC_BASE].live)
        return NULL;
    return &mcs[h - MC_BASE];
}

bool sg_mc_is(uint64_t h)
{
    return h >= MC_BASE && h < MC_BASE + MAX_MC;
}

SG_EXPORT CUresult cuMulticastCreate(CUmemGenericAllocationHandle *mcHandle,
                                     const CUmulticastObjectProp *prop)
{
    SG_ENTER(cuMulticastCreate, API);
    if (!mcHandle || !prop || prop->numDevices == 0 || prop->size == 0 ||
        prop->size % mc_granularity)
        return CUDA_ERROR_INVALID_VALUE;
    sg_mem_wrlock();
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < MAX_MC; i++)
        if (!mcs[i].live) {
            mcs[i] = (mc_t){.size = prop->size, .live = true};
            *mcHandle = MC_BASE + (uint64_t)i;
            r = CUDA_SUCCESS;
            break;
        }
    sg_mem_unlock();
    return r;
}

SG_EXPORT CUresult cuMulticastAddDevice(CUmemGenericAllocationHandle mcHandle, CUdevice dev)
{
    SG_ENTER(cuMulticastAddDevice, API);
    sg_mem_rdlock();
    bool ok = mc_find(mcHandle) != NULL;
    sg_mem_unlock();
    return !ok ? CUDA_ERROR_INVALID_VALUE : dev < 0 || (uint64_t)dev >= SG->cfg.devices
                                               ? CUDA_ERROR_INVALID_DEVICE
                                               : CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMulticastGetGranularity(size_t *granularity,
                                             const CUmulticastObjectProp *prop,
                                             CUmulticastGranularity_flags option)
{
    SG_ENTER(cuMulticastGetGranularity, API);
    (void)option;
    if (!granularity || !prop)
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = mc_granularity;
    return CUDA_SUCCESS;
}

/* Binds [off, +size) of p at mcOffset of mc (memory lock held). */
static CUresult bind(mc_t *m, size_t mcOffset, sg_phys_t *p, uint64_t off, size_t size)
{
    if (!m || !p || m->member || size == 0 || mcOffset % mc_granularity || off % mc_granularity ||
        size % mc_granularity || mcOffset + size > m->size || off + size > p->size)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->loc != SG_LOC_DEVICE)
        return CUDA_ERROR_NOT_SUPPORTED; /* only device memory joins a multicast object */
    if (mcOffset > off)
        return CUDA_ERROR_INVALID_VALUE; /* one member: the object starts within it */
    m->member = p;
    m->member_off = off - mcOffset;
    p->refs++;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMulticastBindMem(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                                      CUmemGenericAllocationHandle memHandle, size_t memOffset,
                                      size_t size, unsigned long long flags)
{
    SG_ENTER(cuMulticastBindMem, API);
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    sg_mem_wrlock();
    sg_phys_t *p = sg_phys_find(memHandle);
    CUresult r = bind(mc_find(mcHandle), mcOffset, p && p->handle_refs > 0 ? p : NULL, memOffset,
                      size);
    sg_mem_unlock();
    return r;
}

SG_EXPORT CUresult cuMulticastBindAddr(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                                       CUdeviceptr memptr, size_t size, unsigned long long flags)
{
    SG_ENTER(cuMulticastBindAddr, API);
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    sg_mem_wrlock();
    sg_map_t *m = sg_map_find(memptr);
    /* Only cuMemCreate's memory (or a pool's) is bound by address. */
    CUresult r = !m || m->legacy || memptr + size > m->va + m->size
                     ? CUDA_ERROR_INVALID_VALUE
                     : bind(mc_find(mcHandle), mcOffset, m->phys, m->phys_off + (memptr - m->va),
                            size);
    sg_mem_unlock();
    return r;
}

/* Drops the member's reference (memory lock held). */
static void unbind(mc_t *m)
{
    if (m->member)
        sg_phys_put(m->member);
    m->member = NULL;
}

SG_EXPORT CUresult cuMulticastUnbind(CUmemGenericAllocationHandle mcHandle, CUdevice dev,
                                     size_t mcOffset, size_t size)
{
    SG_ENTER(cuMulticastUnbind, API);
    (void)mcOffset, (void)size;
    sg_mem_wrlock();
    mc_t *m = mc_find(mcHandle);
    if (m && dev >= 0 && (uint64_t)dev < SG->cfg.devices)
        unbind(m);
    sg_mem_unlock();
    return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult sg_mc_map(CUdeviceptr va, size_t size, uint64_t h)
{
    mc_t *m = mc_find(h);
    if (!m || !m->member || size > m->size || va % mc_granularity || size % mc_granularity ||
        !sg_va_reserved(va, size))
        return CUDA_ERROR_INVALID_VALUE;
    return sg_map_insert(va, size, m->member, m->member_off, false);
}

CUresult sg_mc_release(uint64_t h)
{
    mc_t *m = mc_find(h);
    if (!m)
        return CUDA_ERROR_INVALID_VALUE;
    unbind(m);
    m->live = false;
    return CUDA_SUCCESS;
}

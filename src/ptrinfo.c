/*
 * What an application asks about a pointer into a tracked allocation,
 * answered as its own cuMemAlloc would have been: one device allocation
 * of the size asked for, whichever chunk lies under the pointer and
 * wherever it lives (cuMemGetAddressRange, cuPointerGetAttribute(s)),
 * and whether a free names one. What cannot be answered so, a legacy IPC
 * handle, gets the driver's refusal and the reason.
 */
#include "residency.h"

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

/* Legacy IPC shares only what cuMemAlloc made; a tracked allocation is
 * made with the VMM calls, which it cannot share. The driver refuses it,
 * and the program, which asked cuMemAlloc for the memory, is told why
 * (once: PyTorch asks for every tensor it sends). */
CUresult sw_ipc_get_handle(CUipcMemHandle *h, CUdeviceptr dptr)
{
    static bool told;
    CUresult r = SW_REAL(cuIpcGetMemHandle) ? SW_REAL(cuIpcGetMemHandle)(h, dptr)
                                            : CUDA_ERROR_NOT_FOUND;
    CUdeviceptr base;
    size_t size;
    int dev;
    if (r != CUDA_SUCCESS && tracked_range(dptr, &base, &size, &dev) &&
        !__atomic_exchange_n(&told, true, __ATOMIC_RELAXED))
        sw_warn("cuIpcGetMemHandle(0x%llx) refused: spillway holds that allocation (%zu bytes) "
                "in VMM memory, which legacy CUDA IPC cannot share; SPILLWAY_MIN_ALLOC above "
                "its size leaves such allocations to the driver",
                (unsigned long long)dptr, size);
    return r;
}

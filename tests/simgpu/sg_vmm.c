/*
 * Virtual memory management: reserve, create, map, set access, unmap,
 * release. The rules follow the driver's documentation:
 *   - sizes, addresses and handles are multiples of the granularity of the
 *     handle's location;
 *   - cuMemMap's offset is 0, and a mapping lies inside a reservation and
 *     over nothing else;
 *   - cuMemUnmap removes whole mappings only;
 *   - a new mapping has no access until cuMemSetAccess;
 *   - a handle's bytes live until it is released and unmapped everywhere.
 * cuMemUnmap and cuMemAddressFree of memory that queued or running work
 * references are hazards (they would be faults or corruption on a GPU).
 * Each call costs its own host time only; none waits for the device.
 */
#include "sg.h"

#include <fcntl.h>
#include <string.h>

/* No VMM call waits for the device. cuMemUnmap returned in 0.17 ms on an
 * H100 while a kernel read the range, and that kernel then faulted with
 * CUDA_ERROR_ILLEGAL_ADDRESS (driver 580, 2026-11-26), so an unmap under
 * queued work is a hazard here. cuMemMap, cuMemSetAccess and cuMemUnmap of
 * a range no kernel uses returned in 3 to 56 us on an H200 beside a 500 ms
 * kernel on another stream (2026-11-30, docs/gpu-facts.md), so
 * cuMemSetAccess is not the synchronization NVIDIA's reference suggests:
 * simgpu had it wait for all queued device work until then. */

static uint64_t granularity_of(int loc)
{
    return loc == SG_LOC_DEVICE ? SG->cfg.granularity : SG->cfg.host_granularity;
}

/* The location a prop asks for, or a CUresult error (negative). */
static int loc_of(const CUmemAllocationProp *prop, CUresult *err)
{
    *err = CUDA_ERROR_INVALID_VALUE;
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return -1;
    switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        if (!sg_device_ok(prop->location.id)) {
            *err = CUDA_ERROR_INVALID_DEVICE;
            return -1;
        }
        return SG_LOC_DEVICE;
    case CU_MEM_LOCATION_TYPE_HOST:
        if (!SG->cfg.host_vmm) {
            *err = CUDA_ERROR_NOT_SUPPORTED;
            return -1;
        }
        return SG_LOC_HOST;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        if (!SG->cfg.host_numa_vmm) {
            *err = CUDA_ERROR_NOT_SUPPORTED;
            return -1;
        }
        if (prop->location.id != 0)
            return -1; /* one NUMA node, with CPUs */
        return SG_LOC_HOST;
    default:
        return -1;
    }
}

SG_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity,
                                                 const CUmemAllocationProp *prop,
                                                 CUmemAllocationGranularity_flags option)
{
    SG_ENTER(cuMemGetAllocationGranularity, API);
    CUresult err;
    int loc = loc_of(prop, &err);
    if (!granularity || loc < 0)
        return granularity ? err : CUDA_ERROR_INVALID_VALUE;
    *granularity = granularity_of(loc);
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                       CUdeviceptr addr, unsigned long long flags)
{
    SG_ENTER(cuMemAddressReserve, RESERVE);
    uint64_t g = SG->cfg.granularity;
    if (!ptr || size == 0 || size % g || (alignment & (alignment - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    sg_mem_wrlock();
    CUresult r = sg_va_reserve(size, alignment > g ? alignment : g, addr, ptr);
    sg_mem_unlock();
    return r;
}

SG_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    SG_ENTER(cuMemAddressFree, API);
    sg_lock();
    sg_check_hazard("cuMemAddressFree", ptr, size);
    sg_unlock();
    sg_mem_wrlock();
    CUresult r = sg_va_free(ptr, size);
    sg_mem_unlock();
    return r;
}

SG_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                               const CUmemAllocationProp *prop, unsigned long long flags)
{
    SG_ENTER(cuMemCreate, MEMCREATE);
    CUresult err;
    int loc = loc_of(prop, &err);
    if (!handle || loc < 0)
        return handle ? err : CUDA_ERROR_INVALID_VALUE;
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE &&
        (prop->requestedHandleTypes != 0 || prop->allocFlags.usage != 0 ||
         prop->allocFlags.gpuDirectRDMACapable))
        return CUDA_ERROR_INVALID_VALUE; /* host handles: no export, tile pool or RDMA */
    if (size == 0 || size % granularity_of(loc))
        return CUDA_ERROR_INVALID_VALUE;
    if (loc == SG_LOC_HOST)
        sg_charge_host_backed(SG->cfg.memcreate_ns, SG->cfg.host_memcreate_ns,
                              SG->cfg.host_memcreate_mib_ns, size);
    sg_phys_t *p;
    sg_mem_wrlock();
    CUresult r = sg_phys_create(size, loc, prop, &p);
    sg_mem_unlock();
    if (r == CUDA_SUCCESS)
        *handle = p->id;
    return r;
}

/* Drops one handle reference; the bytes go when no mapping holds them.
 * Freeing bytes that queued or running work was issued against is a
 * hazard (checked first: g.lock is never taken under the mem write lock). */
SG_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    SG_ENTER(cuMemRelease, API);
    if (sg_mc_is(handle)) {
        sg_mem_wrlock();
        CUresult r = sg_mc_release(handle);
        sg_mem_unlock();
        return r;
    }
    sg_mem_rdlock();
    sg_phys_t *p = sg_phys_find(handle);
    bool frees = p && p->handle_refs == 1 && p->refs == 1;
    bool host = p && p->loc == SG_LOC_HOST;
    uint64_t bytes = p ? p->size : 0;
    sg_mem_unlock();
    if (host)
        sg_charge_host_backed(SG->cfg.release_ns, SG->cfg.host_release_ns,
                              SG->cfg.host_release_mib_ns, bytes);
    if (frees) {
        sg_lock();
        sg_check_hazard_handle("cuMemRelease", handle);
        sg_unlock();
    }
    sg_mem_wrlock();
    p = sg_phys_find(handle);
    CUresult r = CUDA_SUCCESS;
    if (!p || p->handle_refs == 0)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (--p->handle_refs == 0)
        sg_phys_put(p);
    sg_mem_unlock();
    return r;
}

SG_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    SG_ENTER(cuMemRetainAllocationHandle, API);
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    sg_mem_wrlock();
    sg_map_t *m = sg_map_find((uint64_t)addr);
    CUresult r = CUDA_SUCCESS;
    if (!m || m->legacy) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        if (m->phys->handle_refs++ == 0)
            m->phys->refs++;
        *handle = m->phys->id;
    }
    sg_mem_unlock();
    return r;
}

SG_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                          CUmemGenericAllocationHandle handle)
{
    SG_ENTER(cuMemGetAllocationPropertiesFromHandle, API);
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    sg_mem_rdlock();
    sg_phys_t *p = sg_phys_find(handle);
    if (p)
        *prop = p->prop;
    sg_mem_unlock();
    return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SG_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                            CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    SG_ENTER(cuMemMap, MEMMAP);
    if (offset != 0 || flags != 0 || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    sg_mem_wrlock();
    if (sg_mc_is(handle)) {
        CUresult r = sg_mc_map(ptr, size, handle);
        sg_mem_unlock();
        return r;
    }
    sg_phys_t *p = sg_phys_find(handle);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (p && p->handle_refs > 0 && size <= p->size) {
        uint64_t g = granularity_of(p->loc);
        if (ptr % g == 0 && size % g == 0 && sg_va_reserved(ptr, size))
            r = sg_map_insert(ptr, size, p, 0, false);
    }
    sg_mem_unlock();
    return r;
}

SG_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    SG_ENTER(cuMemUnmap, UNMAP);
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    sg_check_hazard("cuMemUnmap", ptr, size);
    sg_unlock();
    sg_mem_wrlock();
    sg_map_t *m = sg_map_find(ptr);
    bool host = m && !m->legacy && m->phys->loc == SG_LOC_HOST;
    CUresult r = m && !m->legacy ? sg_map_remove(ptr, size) : CUDA_ERROR_INVALID_VALUE;
    sg_mem_unlock();
    if (r == CUDA_SUCCESS && host)
        sg_charge_host_backed(SG->cfg.unmap_ns, SG->cfg.host_unmap_ns, SG->cfg.host_unmap_mib_ns,
                              size);
    return r;
}

SG_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                  size_t count)
{
    SG_ENTER(cuMemSetAccess, SETACCESS);
    if (!desc || count == 0 || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    /* One access level for the mapping (the last device descriptor's),
     * and the set of devices it is granted to: a kernel on a device
     * outside the set faults (sg_mem_reachable). */
    int level = -1;
    unsigned grant = 0, revoke = 0;
    for (size_t i = 0; i < count; i++) {
        const CUmemLocation *l = &desc[i].location;
        if (l->type == CU_MEM_LOCATION_TYPE_DEVICE) {
            if (!sg_device_ok(l->id))
                return CUDA_ERROR_INVALID_DEVICE;
            switch (desc[i].flags) {
            case CU_MEM_ACCESS_FLAGS_PROT_NONE: level = SG_ACCESS_NONE; break;
            case CU_MEM_ACCESS_FLAGS_PROT_READ: level = SG_ACCESS_READ; break;
            case CU_MEM_ACCESS_FLAGS_PROT_READWRITE: level = SG_ACCESS_RW; break;
            default: return CUDA_ERROR_INVALID_VALUE;
            }
            if (level == SG_ACCESS_NONE)
                revoke |= 1u << l->id;
            else
                grant |= 1u << l->id;
        } else if (l->type != CU_MEM_LOCATION_TYPE_HOST &&
                   l->type != CU_MEM_LOCATION_TYPE_HOST_NUMA) {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    sg_mem_wrlock();
    sg_map_t *m = sg_map_find(ptr);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    bool host = m && !m->legacy && m->phys->loc == SG_LOC_HOST;
    if (m && !m->legacy && m->va == ptr &&
        sg_map_set_access(ptr, size, level < 0 ? m->access : level, grant, revoke) == 0)
        r = CUDA_SUCCESS;
    sg_mem_unlock();
    if (r == CUDA_SUCCESS && host)
        sg_charge_host_backed(SG->cfg.setaccess_ns, SG->cfg.host_setaccess_ns,
                              SG->cfg.host_setaccess_mib_ns, size);
    return r;
}

SG_EXPORT CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
                                  CUdeviceptr ptr)
{
    SG_ENTER(cuMemGetAccess, API);
    if (!flags || !location)
        return CUDA_ERROR_INVALID_VALUE;
    sg_mem_rdlock();
    sg_map_t *m = sg_map_find(ptr);
    if (m)
        *flags = m->access == SG_ACCESS_RW     ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                 : m->access == SG_ACCESS_READ ? CU_MEM_ACCESS_FLAGS_PROT_READ
                                               : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    sg_mem_unlock();
    return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Export to a POSIX file descriptor, the one type simgpu offers: allowed
 * only for a handle created asking for it (as the driver requires), and
 * answered with a descriptor of /dev/null, which is all a process of its
 * own could share. */
SG_EXPORT CUresult cuMemExportToShareableHandle(void *shareableHandle,
                                                CUmemGenericAllocationHandle handle,
                                                CUmemAllocationHandleType handleType,
                                                unsigned long long flags)
{
    SG_ENTER(cuMemExportToShareableHandle, API);
    if (!shareableHandle || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED;
    sg_mem_rdlock();
    sg_phys_t *p = sg_phys_find(handle);
    bool ok = p && p->handle_refs > 0 && (p->prop.requestedHandleTypes & handleType);
    sg_mem_unlock();
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *(int *)shareableHandle = fd;
    return CUDA_SUCCESS;
}

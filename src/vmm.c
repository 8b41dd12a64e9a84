/*
 * Chunks on the real driver: reserve, back, move, unback.
 *
 * A tracked allocation is one address reservation, tiled by chunks. Each
 * chunk is one physical handle mapped at its place, either device memory
 * or pinned host memory (CU_MEM_LOCATION_TYPE_HOST, or HOST_NUMA node 0
 * where that is what the driver offers). Both are mapped with device
 * read/write access, so a kernel reads and writes a host chunk correctly,
 * over PCIe, at the same address:
 *
 *      reservation  [ chunk 0 | chunk 1 | chunk 2 | chunk 3 ]
 *      backing         dev      host      dev       host
 *
 * THE SAFETY RULE. spillway unmaps a range only
 *   1. while holding the gate exclusively, and
 *   2. after cuCtxSynchronize, called under that same hold, returned
 *      CUDA_SUCCESS, for every context that may use the range: with
 *      several devices or contexts, each one recorded (devices.c,
 *      sw_dev_sync_all).
 * Every hooked call that issues device work (launches, graph launches,
 * copies, memsets) holds the gate shared while it issues. So when the
 * unmap happens, all work issued before it has finished, and none can be
 * issued until the new mapping, with access, is in place. This does not
 * depend on seeing which memory a kernel touches: a kernel that reaches a
 * chunk through a pointer stored in device memory has finished too.
 * Moving a chunk copies its bytes under the same hold, so no kernel writes
 * them during the copy. The old handle is released only after the new
 * mapping has access; any failure before that remaps the old handle, so no
 * byte is lost and the application sees the driver's own error. A
 * released handle may be kept in the pool (pool.c) for the next move:
 * only a handle released here on success, which no mapping uses, and a
 * pooled handle is never mapped until a move or allocation takes it.
 * Under stream capture a synchronization is forbidden, so nothing moves.
 */
#include "device.h"

#include <string.h>

/* The probe's answer. Only a definite one is kept: an allocation made
 * before any context is current, or after a failed cuInit, must not turn
 * tracking off for the rest of the process. */
typedef enum { PROBE_AGAIN, PROBE_USABLE, PROBE_UNUSABLE } probe_t;

static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;
static probe_t probed; /* atomic; PROBE_AGAIN until a definite answer */
static sw_vmm_info_t info;
static CUmemAllocationProp dev_prop, host_prop;
static CUdeviceptr staging;      /* a spare range to fill a new handle through */
static uint64_t staging_size;

static CUresult create_as(sw_where_t where, int dev, uint64_t size,
                          const CUmemAllocationProp *dprop, CUmemGenericAllocationHandle *h);

static uint64_t gran_of(const CUmemAllocationProp *p)
{
    size_t g = 0;
    if (SW_REAL(cuMemGetAllocationGranularity)(&g, p, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
        CUDA_SUCCESS)
        return 0;
    return g;
}

/* Tries a host location by creating (and releasing) one small handle:
 * attributes may be missing on older drivers, and HOST_NUMA creation has
 * crashed or failed on some (docs/cuda-facts.md §3). */
static bool host_location_works(CUmemLocationType type)
{
    host_prop = (CUmemAllocationProp){.type = CU_MEM_ALLOCATION_TYPE_PINNED};
    host_prop.location.type = type;
    host_prop.location.id = 0;
    uint64_t g = gran_of(&host_prop);
    CUmemGenericAllocationHandle h;
    if (!g || SW_REAL(cuMemCreate)(&h, g, &host_prop, 0) != CUDA_SUCCESS)
        return false;
    SW_REAL(cuMemRelease)(h);
    return true;
}

static probe_t setup(void)
{
    const sw_real_t *r = sw_real();
    int vmm = 0;
    if (!r->cuMemCreate || !r->cuMemMap || !r->cuCtxGetDevice || !r->cuDeviceGetAttribute) {
        sw_warn("the driver has no virtual memory management: allocations pass through");
        return PROBE_UNUSABLE;
    }
    CUresult e = r->cuCtxGetDevice(&info.device);
    if (e == CUDA_SUCCESS)
        e = r->cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                    info.device);
    if (e != CUDA_SUCCESS) {
        /* No context yet, or cuInit failed: the driver answers this
         * allocation, and the next one probes again. */
        sw_debug("cannot probe the device yet (%s): this allocation passes through",
                 sw_cu_name(e));
        return PROBE_AGAIN;
    }
    if (!vmm) {
        sw_warn("device %d has no virtual memory management: allocations pass through",
                info.device);
        return PROBE_UNUSABLE;
    }
    dev_prop = (CUmemAllocationProp){.type = CU_MEM_ALLOCATION_TYPE_PINNED};
    dev_prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    dev_prop.location.id = info.device;
    uint64_t g = gran_of(&dev_prop);
    info.host_ok = host_location_works(CU_MEM_LOCATION_TYPE_HOST) ||
                   host_location_works(CU_MEM_LOCATION_TYPE_HOST_NUMA);
    if (!g || !info.host_ok) {
        sw_warn("pinned host VMM memory is not available: allocations pass through");
        return PROBE_UNUSABLE;
    }
    uint64_t hg = gran_of(&host_prop);
    info.granularity = g > hg ? g : hg; /* both powers of two */
    info.chunk = sw_round_up(sw_opts()->chunk, info.granularity);
    staging_size = info.chunk;
    if ((e = SW_REAL(cuMemAddressReserve)(&staging, staging_size, 0, 0, 0)) != CUDA_SUCCESS) {
        sw_debug("cannot reserve a staging range yet (%s): this allocation passes through",
                 sw_cu_name(e));
        return PROBE_AGAIN;
    }
    sw_info("device %d: granularity %llu, host memory via %s", info.device,
            (unsigned long long)info.granularity,
            host_prop.location.type == CU_MEM_LOCATION_TYPE_HOST ? "HOST" : "HOST_NUMA");
    return PROBE_USABLE;
}

const sw_vmm_info_t *sw_vmm_setup(void)
{
    probe_t p = __atomic_load_n(&probed, __ATOMIC_ACQUIRE);
    if (p == PROBE_AGAIN) {
        pthread_mutex_lock(&setup_lock);
        if ((p = probed) == PROBE_AGAIN)
            __atomic_store_n(&probed, p = setup(), __ATOMIC_RELEASE);
        pthread_mutex_unlock(&setup_lock);
    }
    return p == PROBE_USABLE ? &info : NULL;
}

CUresult sw_vmm_reserve(uint64_t size, CUdeviceptr *va)
{
    return SW_REAL(cuMemAddressReserve)(va, size, 0, 0, 0);
}

void sw_vmm_unreserve(CUdeviceptr va, uint64_t size)
{
    SW_REAL(cuMemAddressFree)(va, size);
}

/* Read and write access for dev's chunks: dev and the devices that can
 * reach it as peers (devices.c: why the peers are named up front). */
static CUresult grant(CUdeviceptr va, uint64_t size, int dev)
{
    const CUmemAccessDesc *d;
    size_t n = sw_dev_access(dev, &d);
    return SW_REAL(cuMemSetAccess)(va, size, d, n);
}

/* Maps handle h at va with access for dev's chunks; on failure nothing
 * stays mapped. */
static CUresult map_at(CUdeviceptr va, uint64_t size, CUmemGenericAllocationHandle h, int dev)
{
    CUresult r = SW_REAL(cuMemMap)(va, size, 0, h, 0);
    if (r != CUDA_SUCCESS)
        return r;
    r = grant(va, size, dev);
    if (r != CUDA_SUCCESS)
        SW_REAL(cuMemUnmap)(va, size);
    return r;
}

/* Every handle spillway makes comes from here: one a move released, if
 * the pool holds one of this size at `where`, else a new one, made only
 * after the pool at `where` gave its handles back (pool.c: why the
 * budgets still bound what is held). The pool holds home's device
 * handles only: another device's are made, and released, each time. */
static CUresult create(sw_where_t where, int dev, uint64_t size, CUmemGenericAllocationHandle *h)
{
    return create_as(where, dev, size, NULL, h);
}

/* The same, for a chunk whose device handles must have the application's
 * properties (dprop: an application's own handle, which it may export):
 * those never come from the pool, whose handles are spillway's. */
static CUresult create_as(sw_where_t where, int dev, uint64_t size,
                          const CUmemAllocationProp *dprop, CUmemGenericAllocationHandle *h)
{
    if (where == SW_ON_DEVICE && dprop) {
        sw_pool_drain(where);
        return SW_REAL(cuMemCreate)(h, size, dprop, 0);
    }
    uint64_t p;
    if (where == SW_ON_DEVICE && dev != info.device)
        return SW_REAL(cuMemCreate)(h, size, sw_dev_prop(dev), 0);
    if (sw_pool_take(where, size, &p)) {
        *h = p;
        return CUDA_SUCCESS;
    }
    sw_pool_drain(where);
    return SW_REAL(cuMemCreate)(h, size, where == SW_ON_DEVICE ? &dev_prop : &host_prop, 0);
}

/* Gives a handle no mapping uses to the pool, or releases it where the
 * pool does not keep its kind (another device's). */
static void give(sw_where_t where, int dev, uint64_t size, uint64_t h)
{
    if (where == SW_ON_DEVICE && dev != info.device)
        SW_REAL(cuMemRelease)(h);
    else
        sw_pool_give(where, size, h);
}

CUresult sw_vmm_back(sw_chunk_t *c, sw_where_t where)
{
    CUmemGenericAllocationHandle h;
    CUresult r = create_as(where, c->alloc->dev, c->size, c->alloc->dev_prop, &h);
    if (r != CUDA_SUCCESS)
        return r;
    r = map_at(c->va, c->size, h, c->alloc->dev);
    if (r != CUDA_SUCCESS) {
        SW_REAL(cuMemRelease)(h);
        return r;
    }
    c->handle = h;
    return CUDA_SUCCESS;
}

void sw_vmm_unback(sw_chunk_t *c)
{
    SW_REAL(cuMemUnmap)(c->va, c->size);
    SW_REAL(cuMemRelease)(c->handle);
    c->handle = 0;
}

CUresult sw_vmm_map(CUdeviceptr va, uint64_t size, uint64_t h)
{
    return map_at(va, size, h, info.device);
}

CUresult sw_vmm_unmap(CUdeviceptr va, uint64_t size)
{
    return SW_REAL(cuMemUnmap)(va, size);
}

static CUresult remap(CUdeviceptr va, uint64_t size, uint64_t from, uint64_t to, int dev)
{
    CUresult e = SW_REAL(cuMemUnmap)(va, size);
    if (e != CUDA_SUCCESS)
        return e; /* still mapping from */
    e = map_at(va, size, to, dev);
    /* The address must map something: put the old handle back, which
     * still holds every byte. */
    if (e != CUDA_SUCCESS && map_at(va, size, from, dev) != CUDA_SUCCESS)
        sw_error("chunk 0x%llx lost its mapping (%s): its data is in handle %llu",
                 (unsigned long long)va, sw_cu_name(e), (unsigned long long)from);
    return e;
}

CUresult sw_vmm_remap(CUdeviceptr va, uint64_t size, uint64_t from, uint64_t to)
{
    return remap(va, size, from, to, info.device);
}

CUresult sw_vmm_create(sw_where_t where, uint64_t size, uint64_t *h)
{
    CUmemGenericAllocationHandle g;
    CUresult r = create(where, info.device, size, &g);
    if (r == CUDA_SUCCESS)
        *h = g;
    return r;
}

void sw_vmm_release(uint64_t h)
{
    SW_REAL(cuMemRelease)(h);
}

/* Copies size bytes from src to dst, dev's chunk, on spillway's stream
 * for dev (devices.c) and waits. *pending as for sw_dev_wait; the move is
 * abandoned on any failure. */
static CUresult copy(CUdeviceptr dst, CUdeviceptr src, uint64_t size, int dev, bool *pending)
{
    CUstream st;
    *pending = false;
    CUresult e = sw_dev_copy_stream(dev, &st);
    if (e == CUDA_SUCCESS)
        e = SW_REAL(cuMemcpyDtoDAsync_v2)(dst, src, size, st);
    if (e == CUDA_SUCCESS)
        e = sw_dev_wait(st, pending);
    return e;
}

/* Takes a fresh staging range when the old one must stay as it is. */
static void replace_staging(void)
{
    if (SW_REAL(cuMemAddressReserve)(&staging, staging_size, 0, 0, 0) != CUDA_SUCCESS)
        staging_size = 0; /* the next move tries again (staging_fits) */
}

/* A chunk larger than the staging range (an application's own handle,
 * appvmm.c) gets a range of its size in its place: nothing is mapped in
 * the old one between moves. False: no range (the move is off). */
static bool staging_fits(uint64_t size)
{
    if (size <= staging_size)
        return true;
    CUdeviceptr va;
    if (SW_REAL(cuMemAddressReserve)(&va, size, 0, 0, 0) != CUDA_SUCCESS)
        return false;
    if (staging_size)
        SW_REAL(cuMemAddressFree)(staging, staging_size);
    staging = va;
    staging_size = size;
    return true;
}

/* Sends c, on the device with an exact host copy, home by a remap if its
 * fingerprint shows it unchanged since the copy was made: *went. Else it
 * is still on the device, mapped as before (or, if even restoring failed,
 * said so: its bytes are in c->handle). An error: the fingerprint kernel
 * may still be reading c, so nothing may be unmapped. */
static CUresult home_unchanged(sw_chunk_t *c, bool *went)
{
    uint64_t now[2];
    bool pending;
    *went = false;
    CUresult e = sw_fp_take(c->alloc->dev, c->va, c->size, now, &pending);
    if (pending)
        return e;
    if (e != CUDA_SUCCESS || memcmp(now, c->home_fp, SW_FP_BYTES) != 0 ||
        remap(c->va, c->size, c->handle, c->home, c->alloc->dev) != CUDA_SUCCESS)
        return CUDA_SUCCESS;
    give(SW_ON_DEVICE, c->alloc->dev, c->size, c->handle); /* unmapped by the remap */
    c->handle = c->home;
    c->home = 0;
    *went = true;
    return CUDA_SUCCESS;
}

/* Caller holds the gate exclusively and has synchronized (the rule). */
CUresult sw_vmm_move(sw_chunk_t *c, sw_where_t to, bool keep_copy, bool *copied)
{
    *copied = false;
    if (to == SW_ON_HOST && c->home) {
        bool went;
        CUresult e = home_unchanged(c, &went);
        if (e != CUDA_SUCCESS || went)
            return e;
        /* Changed (or unknowable): the copy below replaces it, likely in
         * this very handle, taken back from the pool (no mapping uses a
         * home of a chunk on the device: sw_move unmirrored c). */
        sw_pool_give(SW_ON_HOST, c->size, c->home);
        c->home = 0;
    }
    CUmemGenericAllocationHandle h;
    uint64_t fp[2] = {0, 0};
    if (!staging_fits(c->size))
        return CUDA_ERROR_INVALID_VALUE;
    /* A copy is checked with the fingerprint kernel of the chunk's own
     * device, on its stream (fingerprint.c). */
    keep_copy = keep_copy && to == SW_ON_DEVICE;
    int dev = c->alloc->dev;
    CUresult r = create_as(to, dev, c->size, c->alloc->dev_prop, &h);
    if (r != CUDA_SUCCESS)
        return r;
    /* Fill the new handle through the staging range. */
    r = map_at(staging, c->size, h, dev);
    if (r == CUDA_SUCCESS) {
        bool pending;
        r = copy(staging, c->va, c->size, dev, &pending);
        /* The old handle stays as the copy only if its bytes are known. */
        if (r == CUDA_SUCCESS && keep_copy) {
            CUresult f = sw_fp_take(dev, staging, c->size, fp, &pending);
            if (pending)
                r = f; /* the move is off, as for a copy never waited for */
            else if (f != CUDA_SUCCESS)
                keep_copy = false;
        }
        if (pending) {
            /* The copy (or the fingerprint) may still read the staging
             * range: it stays mapped, abandoned, rather than be unmapped
             * under that work. h is released: its memory lives on only
             * through that mapping. c still maps its old handle, with every
             * byte, and the move fails. */
            sw_error("a copy could not be waited for: abandoning %llu bytes of staging",
                     (unsigned long long)c->size);
            SW_REAL(cuMemRelease)(h);
            replace_staging();
            return r;
        }
        CUresult u = SW_REAL(cuMemUnmap)(staging, c->size);
        if (u != CUDA_SUCCESS) {
            /* The staging range is stuck with h mapped: this move is off,
             * and the next one gets a fresh range (the old one leaks). */
            sw_warn("cannot unmap the staging range (%s): taking a new one", sw_cu_name(u));
            replace_staging();
            r = u;
        }
    }
    if (r == CUDA_SUCCESS)
        r = remap(c->va, c->size, c->handle, h, dev);
    if (r != CUDA_SUCCESS) {
        SW_REAL(cuMemRelease)(h);
        return r; /* c still mapped to its old handle */
    }
    if (keep_copy) {
        c->home = c->handle;
        memcpy(c->home_fp, fp, SW_FP_BYTES);
    } else {
        /* The old handle, unmapped by the remap, serves the next move. */
        give(c->where, dev, c->size, c->handle);
    }
    c->handle = h;
    *copied = true;
    return CUDA_SUCCESS;
}

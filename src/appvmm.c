/*
 * The application's own VMM: cuMemCreate, cuMemMap, cuMemUnmap,
 * cuMemRelease and the calls that ask about handles, as PyTorch's
 * expandable segments, vLLM's cumem allocator and torch_memory_saver use
 * them (one reservation of their own, grown and shrunk by mapping and
 * unmapping handles they create).
 *
 * To move those bytes spillway must be free to change the physical memory
 * behind an address the application mapped itself. The design: the
 * application never holds a real handle. cuMemCreate makes the real one
 * (on the device if the budget allows, else in pinned host memory) and
 * answers with a handle of spillway's, the address of a record:
 *
 *   the application's handle --> record { props, size, references,
 *                                         the real handle and where it is
 *                                         while unmapped, or the mapping }
 *   its mapping (cuMemMap, whole handle, once) --> a tracked allocation
 *                                         of one chunk at the application's
 *                                         address, moved like any other
 *
 * Each chunk is one whole handle, so a handle keeps one real handle that
 * can be exported, and the properties it was made with: its device
 * handles are always made with the application's own properties (vmm.c
 * create_as), so a handle that went to host memory and back can still be
 * exported. The alternative, letting the application's handles through
 * and remapping their addresses behind its back, would leave it holding a
 * handle whose bytes spillway had moved elsewhere: a cuMemMap of it at a
 * second address, or an export, would show stale memory.
 *
 * What keeps working, and how:
 *   cuMemMap of a handle a second time, or of part of it: the real handle
 *     is mapped there too and the handle is pinned (never moved again);
 *   cuMemUnmap: the mapping leaves the table (after the safety rule's
 *     synchronization: window copies go home first); the handle keeps its
 *     bytes, wherever they are;
 *   cuMemRelease: the last reference releases the real handle, or, while
 *     it is mapped, at its unmap (the driver's rule);
 *   cuMemRetainAllocationHandle: a tracked address answers the
 *     application's handle, with one more reference (one cuMemAlloc gave
 *     answers as the driver does for such memory: sw_app_retain);
 *   cuMemGetAllocationPropertiesFromHandle: the properties it was made
 *     with;
 *   cuMemExportToShareableHandle: the handle is brought to the device and
 *     pinned there, then the real one is exported (another process then
 *     shares its memory, which must not move);
 *   cuMulticastBindMem, cuMulticastBindAddr (NCCL's NVLS buffers): the
 *     same, then the real handle, or the address, is bound.
 * Not tracked (counted as passthrough_bytes_vmm): host or other-device
 * handles, tile pools, decompression or GPUDirect RDMA memory (trackable),
 * sizes or addresses off the VMM granularity, and everything
 * under SPILLWAY_REWRITE=0 (the remapping window does not write back a
 * slot whose address the application unmaps). Imported handles are real
 * ones: they pass through. Access granted to other devices (peers) is
 * not carried over when a chunk moves (README, known limits).
 *
 * Every record change is made holding the gate exclusively, as is every
 * table change.
 */
#include "residency.h"

#include <stdlib.h>
#include <string.h>

#define HASH_NONFATAL_OOM 1
static bool hash_oom;
#define uthash_nonfatal_oom(obj) (hash_oom = true)
#include <uthash.h>

typedef struct app_handle {
    uint64_t key;               /* what the application holds: this record's address */
    CUmemAllocationProp prop;
    int dev;                    /* the device it is memory of */
    uint64_t size;
    int refs;                   /* cuMemCreate's, and each cuMemRetainAllocationHandle */
    uint64_t real;              /* while unmapped: the real handle, */
    sw_where_t where;           /* and where it is */
    sw_alloc_t *mapping;        /* the tracked mapping, or NULL */
    bool pinned;                /* mapped twice, partly, or exported: never moves */
    UT_hash_handle hh;
} app_handle_t;

static app_handle_t *handles; /* gate held exclusively */
static int nhandles;          /* records in it (atomic: read with no gate) */

/* While spillway holds no record, every call is the driver's alone, with
 * no gate: other libraries (NCCL, say) use these calls too. A record
 * being made holds the gate, so a call that misses it is one that could
 * not have named it yet. */
static bool any_handles(void)
{
    return __atomic_load_n(&nhandles, __ATOMIC_ACQUIRE) > 0;
}

static app_handle_t *find(uint64_t key)
{
    app_handle_t *h;
    HASH_FIND(hh, handles, &key, sizeof key, h);
    return h;
}

/* The real handle behind h now, and where it is. */
static uint64_t real_of(const app_handle_t *h, sw_where_t *where)
{
    if (h->mapping) {
        const sw_chunk_t *c = &h->mapping->chunks[0];
        *where = c->where;
        return c->handle;
    }
    *where = h->where;
    return h->real;
}

static void count(int dev, sw_where_t where, int64_t bytes)
{
    sw_stats_batch_begin();
    sw_place_count(dev, where, bytes);
    sw_stat_add(SW_STAT_tracked_bytes, bytes);
    sw_stat_add(SW_STAT_tracked_allocs, bytes > 0 ? 1 : -1);
    sw_stats_batch_end();
}

/* ---- cuMemCreate ---- */

/* Whether spillway can stand in for a handle of these properties. Not
 * for memory made for an engine that reaches it behind spillway's back,
 * by handle or by physical page: a tile pool (mapped into sparse arrays
 * with cuMemMapArrayAsync), the decompression engine's memory, or memory
 * asked to be GPUDirect RDMA capable (a network card registers it
 * through nvidia-peermem, which no CUDA call shows). Those are the
 * driver's, untracked. */
static bool trackable(const CUmemAllocationProp *p, size_t size, unsigned long long flags,
                      const sw_vmm_info_t *vi, int dev)
{
    return p && flags == 0 && p->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
           p->location.type == CU_MEM_LOCATION_TYPE_DEVICE && p->location.id == dev &&
           p->allocFlags.compressionType == 0 && p->allocFlags.usage == 0 &&
           !p->allocFlags.gpuDirectRDMACapable && !p->win32HandleMetaData && size > 0 &&
           size % vi->granularity == 0 && sw_opts()->rewrite;
}

/* Makes the real handle: on the device when the budget has room (making
 * it by demotion), else in pinned host memory. */
static CUresult make_real(int dev, const CUmemAllocationProp *prop, size_t size, uint64_t *real,
                          sw_where_t *where)
{
    bool synced = false;
    CUmemGenericAllocationHandle h;
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (sw_room_for(dev, size, &synced)) {
        r = SW_CALL(cuMemCreate, (&h, size, prop, 0));
        if (r == CUDA_ERROR_OUT_OF_MEMORY && sw_demote_some(dev, size, &synced) > 0) {
            sw_pool_drain(SW_ON_DEVICE);
            r = SW_CALL(cuMemCreate, (&h, size, prop, 0));
        }
    }
    sw_pool_drain(SW_ON_DEVICE);
    if (r == CUDA_SUCCESS) {
        *real = h;
        *where = SW_ON_DEVICE;
        return r;
    }
    if (r != CUDA_ERROR_OUT_OF_MEMORY)
        return r;
    *where = SW_ON_HOST;
    return sw_vmm_create(SW_ON_HOST, size, real);
}

CUresult sw_app_create(CUmemGenericAllocationHandle *out, size_t size,
                       const CUmemAllocationProp *prop, unsigned long long flags)
{
    if (!out || !prop)
        return SW_CALL(cuMemCreate, (out, size, prop, flags));
    sw_gate_wr();
    int dev = -1;
    const sw_vmm_info_t *vi = sw_alloc_ready(&dev);
    app_handle_t *h = NULL;
    CUresult r = CUDA_ERROR_NOT_SUPPORTED;
    if (vi && trackable(prop, size, flags, vi, dev) && (h = calloc(1, sizeof *h))) {
        h->prop = *prop;
        h->dev = dev;
        h->size = size;
        h->refs = 1;
        h->key = (uint64_t)(uintptr_t)h;
        r = make_real(dev, prop, size, &h->real, &h->where);
        hash_oom = false;
        if (r == CUDA_SUCCESS)
            HASH_ADD(hh, handles, key, sizeof h->key, h);
        if (r == CUDA_SUCCESS && hash_oom) {
            sw_vmm_release(h->real);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
        if (r == CUDA_SUCCESS) {
            __atomic_add_fetch(&nhandles, 1, __ATOMIC_RELEASE);
            count(dev, h->where, (int64_t)size);
            *out = h->key;
        } else {
            free(h);
        }
    }
    sw_gate_unwr();
    if (r != CUDA_ERROR_NOT_SUPPORTED)
        return r;
    r = SW_CALL(cuMemCreate, (out, size, prop, flags));
    if (r == CUDA_SUCCESS)
        sw_untracked(SW_ROUTE_vmm, size);
    return r;
}

/* ---- mappings ---- */

/* A tracked allocation of one chunk: the whole handle at va. */
static sw_alloc_t *track_mapping(app_handle_t *h, CUdeviceptr va)
{
    sw_alloc_t *a = calloc(1, sizeof *a);
    if (!a || !(a->chunks = calloc(1, sizeof *a->chunks))) {
        free(a);
        return NULL;
    }
    a->va = va;
    a->size = a->reserved = h->size;
    a->nchunks = 1;
    a->born = sw_launch_now();
    a->app = h;
    a->dev = h->dev;
    a->dev_prop = &h->prop;
    sw_chunk_t *c = &a->chunks[0];
    *c = (sw_chunk_t){.va = va, .size = h->size, .where = h->where, .handle = h->real,
                      .alloc = a, .slot = -1, .fixed = h->pinned};
    if (sw_alloc_register(a) != 0) {
        free(a->chunks);
        free(a);
        return NULL;
    }
    return a;
}

static void pin(app_handle_t *h)
{
    h->pinned = true;
    if (h->mapping)
        h->mapping->chunks[0].fixed = true;
}

CUresult sw_app_map(CUdeviceptr va, size_t size, size_t offset, CUmemGenericAllocationHandle key,
                    unsigned long long flags)
{
    if (!any_handles())
        return SW_CALL(cuMemMap, (va, size, offset, key, flags));
    sw_gate_wr();
    app_handle_t *h = find(key);
    sw_where_t where;
    CUresult r = SW_CALL(cuMemMap, (va, size, offset, h ? real_of(h, &where) : key, flags));
    if (h && r == CUDA_SUCCESS) {
        int dev;
        const sw_vmm_info_t *vi = sw_alloc_ready(&dev);
        bool whole = offset == 0 && size == h->size && vi && va % vi->granularity == 0;
        if (whole && !h->mapping && !h->pinned && (h->mapping = track_mapping(h, va)))
            h->real = 0;
        else
            pin(h); /* mapped where spillway cannot follow it: it stays put */
    }
    sw_gate_unwr();
    return r;
}

/* Gives h its real handle back from its mapping, which leaves the table.
 * Window copies go home first and the device is synchronized (the
 * safety rule: the address will be unmapped). Failure: the
 * synchronization's, with nothing changed. */
static CUresult untrack_mapping(app_handle_t *h)
{
    sw_alloc_t *a = h->mapping;
    sw_window_touch(a->va, a->size, CU_STREAM_LEGACY);
    CUresult r = sw_safe_sync();
    if (r != CUDA_SUCCESS)
        return r;
    sw_alloc_unregister(a);
    h->real = a->chunks[0].handle;
    h->where = a->chunks[0].where;
    h->mapping = NULL;
    free(a->chunks);
    free(a);
    return CUDA_SUCCESS;
}

/* Releases h's real handle and the record once the application holds no
 * reference and no tracked mapping uses it. An untracked mapping (of a
 * pinned handle) may remain: the driver keeps the memory until it is
 * unmapped. */
static void release_if_done(app_handle_t *h)
{
    if (h->refs > 0 || h->mapping)
        return;
    count(h->dev, h->where, -(int64_t)h->size);
    sw_vmm_release(h->real);
    HASH_DELETE(hh, handles, h);
    __atomic_sub_fetch(&nhandles, 1, __ATOMIC_RELEASE);
    free(h);
}

/* Records of tracked mappings in [lo, hi), a batch at a time. */
typedef struct {
    uint64_t lo, hi;
    app_handle_t *found[64];
    int n;
} overlap_t;

static void collect(sw_alloc_t *a, void *arg)
{
    overlap_t *o = arg;
    if (a->app && a->va < o->hi && o->lo < a->va + a->size && o->n < 64)
        o->found[o->n++] = a->app;
}

CUresult sw_app_unmap(CUdeviceptr va, size_t size)
{
    if (!any_handles())
        return SW_CALL(cuMemUnmap, (va, size));
    sw_gate_wr();
    CUresult r = CUDA_SUCCESS;
    overlap_t o = {.lo = va, .hi = va + size};
    do {
        o.n = 0;
        if (handles && sw_tracked())
            sw_table_each(sw_tracked(), collect, &o);
        /* A handle the application already released goes now: the
         * driver keeps its memory until the unmap below. */
        for (int i = 0; i < o.n && r == CUDA_SUCCESS; i++)
            if ((r = untrack_mapping(o.found[i])) == CUDA_SUCCESS)
                release_if_done(o.found[i]);
    } while (r == CUDA_SUCCESS && o.n > 0);
    if (r == CUDA_SUCCESS)
        r = SW_CALL(cuMemUnmap, (va, size));
    sw_gate_unwr();
    return r;
}

CUresult sw_app_release(CUmemGenericAllocationHandle key)
{
    if (!any_handles())
        return SW_CALL(cuMemRelease, (key));
    sw_gate_wr();
    app_handle_t *h = find(key);
    CUresult r = CUDA_SUCCESS;
    if (!h)
        r = SW_CALL(cuMemRelease, (key));
    else if (h->refs <= 0)
        r = CUDA_ERROR_INVALID_VALUE;
    else {
        h->refs--;
        release_if_done(h);
    }
    sw_gate_unwr();
    return r;
}

/* ---- questions about handles ---- */

/* A tracked address the application mapped answers its handle. One it
 * got from cuMemAlloc answers as the driver does for memory no cuMemMap
 * made, CUDA_ERROR_INVALID_VALUE: the real handle under it is one of
 * spillway's chunks, which it moves, pools and maps elsewhere, so a
 * program that mapped or exported it would share bytes that change. */
CUresult sw_app_retain(CUmemGenericAllocationHandle *out, void *addr)
{
    if (!sw_tracking_any())
        return SW_CALL(cuMemRetainAllocationHandle, (out, addr));
    sw_gate_wr();
    sw_table_t *t = sw_tracked();
    sw_chunk_t *c = t && out ? sw_table_lookup(t, (uint64_t)(uintptr_t)addr) : NULL;
    app_handle_t *h = c ? c->alloc->app : NULL;
    CUresult r = CUDA_SUCCESS;
    if (h) {
        h->refs++;
        *out = h->key;
    } else if (c) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        r = SW_CALL(cuMemRetainAllocationHandle, (out, addr));
    }
    sw_gate_unwr();
    return r;
}

CUresult sw_app_props(CUmemAllocationProp *prop, CUmemGenericAllocationHandle key)
{
    if (!any_handles())
        return SW_CALL(cuMemGetAllocationPropertiesFromHandle, (prop, key));
    sw_gate_wr();
    app_handle_t *h = find(key);
    if (h && prop)
        *prop = h->prop;
    sw_gate_unwr();
    return h ? (prop ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE)
             : SW_CALL(cuMemGetAllocationPropertiesFromHandle, (prop, key));
}

/* Brings an unmapped host handle to the device through a range of its
 * own, as a move would (vmm.c): on failure it is where it was. */
static CUresult promote_unmapped(app_handle_t *h)
{
    CUdeviceptr va;
    CUresult r = sw_vmm_reserve(h->size, &va);
    if (r != CUDA_SUCCESS)
        return r;
    sw_alloc_t a = {.va = va, .size = h->size, .reserved = h->size, .nchunks = 1,
                    .dev = h->dev, .dev_prop = &h->prop};
    sw_chunk_t c = {.va = va, .size = h->size, .where = SW_ON_HOST, .handle = h->real,
                    .alloc = &a, .slot = -1};
    a.chunks = &c;
    bool copied;
    if ((r = sw_vmm_map(va, h->size, h->real)) == CUDA_SUCCESS) {
        r = sw_vmm_move(&c, SW_ON_DEVICE, false, &copied);
        sw_vmm_unmap(va, h->size);
    }
    sw_vmm_unreserve(va, h->size);
    if (r == CUDA_SUCCESS) {
        h->real = c.handle;
        h->where = SW_ON_DEVICE;
    }
    return r;
}

static CUresult promote(void *arg)
{
    app_handle_t *h = arg;
    return h->mapping ? sw_move(&h->mapping->chunks[0], SW_ON_DEVICE) : promote_unmapped(h);
}

static CUresult promote_chunk(void *arg)
{
    return sw_move(arg, SW_ON_DEVICE);
}

/* Makes room for size bytes on dev, over the budget if need be, and
 * moves them there with move(arg); once more after demoting others when
 * the device itself is full. */
static CUresult to_device(int dev, uint64_t size, CUresult (*move)(void *), void *arg)
{
    bool synced = false;
    sw_room_for(dev, size, &synced); /* else over the budget: it must go */
    CUresult r = synced ? CUDA_SUCCESS : sw_safe_sync();
    if (r == CUDA_SUCCESS)
        r = move(arg);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && sw_demote_some(dev, size, &synced) > 0) {
        sw_pool_drain(SW_ON_DEVICE);
        r = move(arg);
    }
    return r;
}

/* Exported memory is shared with whoever imports it: it goes to the
 * device, over the budget if need be, and stays there. */
static CUresult pin_on_device(app_handle_t *h)
{
    CUresult r = CUDA_SUCCESS;
    sw_where_t where;
    real_of(h, &where);
    if (where == SW_ON_HOST) {
        r = to_device(h->dev, h->size, promote, h);
        if (r == CUDA_SUCCESS && !h->mapping) {
            sw_place_count(h->dev, SW_ON_HOST, -(int64_t)h->size);
            sw_place_count(h->dev, SW_ON_DEVICE, (int64_t)h->size);
        }
    }
    if (r == CUDA_SUCCESS)
        pin(h);
    return r;
}

/* The next tracked chunk at or after *p and before end, *p then past
 * it; NULL when there is none. Gate held exclusively. */
static sw_chunk_t *next_chunk(uint64_t *p, uint64_t end)
{
    sw_table_t *t = sw_tracked();
    int dev;
    const sw_vmm_info_t *vi = sw_alloc_ready(&dev);
    for (; t && vi && *p < end; *p = (*p | (vi->granularity - 1)) + 1) {
        sw_chunk_t *c = sw_table_lookup(t, *p);
        if (c) {
            *p = c->va + c->size;
            return c;
        }
    }
    return NULL;
}

/* Pins every tracked chunk in [ptr, +size) on the device as an export
 * does: the application's handles mapped there, and spillway's own
 * chunks, which then never move and are never copied into the streaming
 * window (a device writing home behind a copy would leave it stale). A
 * chunk in a remapping slot cannot be pinned: CUDA_ERROR_NOT_SUPPORTED. */
static CUresult pin_range(uint64_t ptr, uint64_t size)
{
    CUresult r = CUDA_SUCCESS;
    sw_chunk_t *c;
    sw_window_touch(ptr, size, CU_STREAM_LEGACY);
    for (uint64_t p = ptr; r == CUDA_SUCCESS && (c = next_chunk(&p, ptr + size));) {
        if (c->alloc->app)
            r = pin_on_device(c->alloc->app);
        else if (c->slot >= 0)
            r = CUDA_ERROR_NOT_SUPPORTED;
        else if (c->where == SW_ON_HOST)
            r = to_device(c->alloc->dev, c->size, promote_chunk, c);
        if (r == CUDA_SUCCESS)
            c->fixed = true;
    }
    return r;
}

/* A dma-buf of [ptr, +size) hands its physical memory to another device
 * (a network card): it is pinned on the device first. */
CUresult sw_app_dmabuf(void *handle, CUdeviceptr ptr, size_t size, CUmemRangeHandleType type,
                       unsigned long long flags)
{
    if (!sw_tracking_any())
        return SW_CALL(cuMemGetHandleForAddressRange, (handle, ptr, size, type, flags));
    sw_gate_wr();
    CUresult r = pin_range(ptr, size);
    if (r == CUDA_SUCCESS)
        r = SW_CALL(cuMemGetHandleForAddressRange, (handle, ptr, size, type, flags));
    sw_gate_unwr();
    return r;
}

/* The real handle behind the application's key, its bytes pinned on the
 * device first; a key spillway did not make is real already. Gate held
 * exclusively. */
static CUresult pinned_real(CUmemGenericAllocationHandle key, CUmemGenericAllocationHandle *real)
{
    app_handle_t *h = find(key);
    sw_where_t where;
    CUresult r = h ? pin_on_device(h) : CUDA_SUCCESS;
    *real = h ? real_of(h, &where) : key;
    return r;
}

CUresult sw_app_export(void *shareable, CUmemGenericAllocationHandle key,
                       CUmemAllocationHandleType type, unsigned long long flags)
{
    if (!any_handles())
        return SW_CALL(cuMemExportToShareableHandle, (shareable, key, type, flags));
    sw_gate_wr();
    CUmemGenericAllocationHandle real;
    CUresult r = pinned_real(key, &real);
    if (r == CUDA_SUCCESS)
        r = SW_CALL(cuMemExportToShareableHandle, (shareable, real, type, flags));
    sw_gate_unwr();
    return r;
}

/* Memory bound into a multicast object is reached through the object's
 * mapping and by every device bound into it: like exported memory, it
 * goes to the device and stays there, and the driver is given the real
 * handle (the application's means nothing to it). */
CUresult sw_app_bind_mem(CUmemGenericAllocationHandle mc, size_t mc_off,
                         CUmemGenericAllocationHandle key, size_t off, size_t size,
                         unsigned long long flags)
{
    if (!any_handles())
        return SW_CALL(cuMulticastBindMem, (mc, mc_off, key, off, size, flags));
    sw_gate_wr();
    CUmemGenericAllocationHandle real;
    CUresult r = pinned_real(key, &real);
    if (r == CUDA_SUCCESS)
        r = SW_CALL(cuMulticastBindMem, (mc, mc_off, real, off, size, flags));
    sw_gate_unwr();
    return r;
}

/* The same by address, for every handle mapped in the range. Memory
 * spillway tracks that the application did not map itself is spillway's
 * own handles: it is refused as the driver refuses cuMemAlloc's memory,
 * CUDA_ERROR_INVALID_VALUE. */
CUresult sw_app_bind_addr(CUmemGenericAllocationHandle mc, size_t mc_off, CUdeviceptr ptr,
                          size_t size, unsigned long long flags)
{
    if (!sw_tracking_any())
        return SW_CALL(cuMulticastBindAddr, (mc, mc_off, ptr, size, flags));
    sw_gate_wr();
    sw_chunk_t *c, *foreign = NULL;
    for (uint64_t p = ptr; !foreign && (c = next_chunk(&p, ptr + size));)
        foreign = c->alloc->app ? NULL : c;
    static bool told;
    if (foreign && !told) {
        told = true;
        sw_warn("cuMulticastBindAddr(0x%llx) refused: spillway holds memory there and moves it "
                "(cuMemAllocAsync's below SPILLWAY_MIN_ALLOC is left to the driver)",
                (unsigned long long)ptr);
    }
    CUresult r = foreign ? CUDA_ERROR_INVALID_VALUE : pin_range(ptr, size);
    if (r == CUDA_SUCCESS)
        r = SW_CALL(cuMulticastBindAddr, (mc, mc_off, ptr, size, flags));
    sw_gate_unwr();
    return r;
}

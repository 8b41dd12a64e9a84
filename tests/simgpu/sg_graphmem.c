/*
 * Graph memory nodes: cuMemAllocAsync and cuMemFreeAsync during a stream
 * capture, as the driver documents them (CUDA Programming Guide, "Graph
 * Memory Nodes").
 *
 * Outside a capture, cuMemAllocAsync hands out fresh memory and the free
 * releases it when its stream reaches it. Captured the same way, the first
 * replay's free node released the memory and every later replay's kernels
 * touched a freed address (CUDA_ERROR_ILLEGAL_ADDRESS). The driver instead
 * gives a captured allocation a virtual address fixed for the graph's
 * life: the alloc node makes it usable, the free node (captured in the
 * same graph, or a cuMemFreeAsync/cuMemFree after the launch) ends its
 * use, and every replay reuses the same address.
 *
 * Here the memory is made at capture (a cuMemAlloc-like block, so the
 * device's memory is charged for the graph's whole life) with no access:
 * nothing may touch it before an alloc node runs. An alloc node grants
 * read/write access when a stream reaches it; a free node revokes it, so
 * work that uses the address after the graph freed it faults, as on a
 * GPU. Every op that stands for the allocation (the graph's nodes, an
 * exec's copies, a replay's copies in flight, a later cuMemFreeAsync)
 * holds a reference; when the last goes and the allocation is not in use,
 * the memory is released on simgpu's service stream, whose worker may take
 * the memory lock for writing (g.lock is held where references drop). An
 * allocation still in use when its graph goes (no free node) stays until
 * a cuMemFreeAsync or cuMemFree ends it, as the driver's does.
 *
 * Not modelled: a relaunch while the allocation from the previous launch
 * is still live is not refused (the driver returns
 * CUDA_ERROR_INVALID_VALUE); graph memory counts as device memory, not in
 * a separate graph pool (cuDeviceGetGraphMemAttribute is not provided).
 */
#include "sg.h"

#include <stdlib.h>

typedef struct sg_gmem {
    struct sg_gmem *next;
    CUdeviceptr addr;
    uint64_t size;
    int refs;  /* ops standing for it */
    bool live; /* an alloc node ran since the last free */
} gmem_t;

static gmem_t *gmems; /* under g.lock */

/* Read/write access on, or off, for the allocation's one mapping. */
static void set_access(CUdeviceptr addr, bool on)
{
    sg_mem_wrlock();
    sg_map_t *m = sg_map_find(addr);
    if (m)
        m->access = on ? SG_ACCESS_RW : SG_ACCESS_NONE;
    sg_mem_unlock();
}

CUresult sg_gmem_capture_alloc(CUdeviceptr *dptr, size_t bytesize, CUstream hs, bool pt)
{
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    gmem_t *g = calloc(1, sizeof *g);
    sg_op_t *op = sg_op_new(SG_OP_MEM_ALLOC, "cuMemAllocAsync");
    if (!g || !op) {
        free(g);
        free(op);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    int device = sg_current_device();
    CUdeviceptr va;
    sg_mem_wrlock();
    CUresult r = sg_legacy_alloc(bytesize, device > 0 ? device : 0, &va);
    if (r == CUDA_SUCCESS)
        sg_map_find(va)->access = SG_ACCESS_NONE; /* until an alloc node runs */
    sg_mem_unlock();
    if (r != CUDA_SUCCESS) {
        free(g);
        free(op);
        return r;
    }
    g->addr = va;
    g->size = bytesize;
    /* The node's range is where the allocation lies, not a use of it. */
    op->ranges[0] = (sg_range_t){.addr = va, .len = bytesize, .write = true};
    op->nranges = 0;
    sg_lock();
    g->next = gmems;
    gmems = g;
    op->gmem = g;
    g->refs = 1;
    sg_stream_t *s = sg_stream_get(hs, pt);
    /* A capture that ended or broke since the caller looked: the op is
     * dropped, and with it the memory. */
    if (s && s->capture) {
        r = sg_submit(s, op);
    } else {
        sg_op_put(op);
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    sg_unlock();
    if (r == CUDA_SUCCESS)
        *dptr = va;
    return r;
}

gmem_t *sg_gmem_get(CUdeviceptr p)
{
    for (gmem_t *g = gmems; g; g = g->next)
        if (g->addr == p) {
            g->refs++;
            return g;
        }
    return NULL;
}

void sg_gmem_ref(gmem_t *g)
{
    g->refs++;
}

static void unlink_gmem(gmem_t *g)
{
    for (gmem_t **p = &gmems; *p; p = &(*p)->next)
        if (*p == g) {
            *p = g->next;
            break;
        }
}

void sg_gmem_put(gmem_t *g)
{
    if (--g->refs > 0 || g->live)
        return; /* still the graph's, or in use until someone frees it */
    unlink_gmem(g);
    sg_op_t *op = sg_op_new(SG_OP_FREE, "graph memory release");
    if (op) { /* else the memory stays: a leak, never a fault */
        op->ranges[0] = (sg_range_t){.addr = g->addr, .len = g->size, .write = true};
        sg_service(op);
    }
    free(g);
}

void sg_gmem_run(gmem_t *g, bool alloc)
{
    sg_lock();
    g->live = alloc;
    CUdeviceptr addr = g->addr;
    sg_unlock();
    set_access(addr, alloc);
}

bool sg_gmem_free_sync(CUdeviceptr p)
{
    sg_lock();
    gmem_t *g = NULL;
    for (gmem_t *it = gmems; it; it = it->next)
        if (it->addr == p)
            g = it;
    bool held = g && g->refs > 0;
    if (g && held)
        g->live = false;
    else if (g)
        unlink_gmem(g); /* no graph holds it: the caller frees it */
    sg_unlock();
    if (held)
        set_access(p, false);
    else
        free(g);
    return held;
}

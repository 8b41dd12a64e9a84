/*
 * Several devices: what spillway keeps per device, and why.
 *
 * A process may allocate on every GPU it has (a tensor-parallel server
 * drives eight). Under UVA every allocation, whatever its device, has an
 * address of its own in one address space, so spillway keeps ONE table of
 * tracked allocations, looked up by address as before, and each
 * allocation remembers its device (sw_alloc_t.dev). What is per device
 * lives here:
 *
 *      device   budget  bytes on it   VMM location   access granted to   contexts
 *      ------   ------  -----------   ------------   -----------------   --------
 *        0      20 GiB    19.5 GiB    DEVICE id 0     0 + its peers      ctx0
 *        1      30 GiB    12.0 GiB    DEVICE id 1     1 + its peers      ctx1, ctx1'
 *
 * Decisions:
 * - Budgets. SPILLWAY_GPU_BUDGET gives each device its own (an amount for
 *   every device, or "D:amount" entries; core/options.c); a percentage is
 *   of that device's memory. Each device's tracked bytes are counted apart
 *   and a device's room is its budget less its own bytes, so victims for a
 *   device are chosen among its own chunks only (alloc.c passes a keep()
 *   that spares every other device's). spillway_set_budgets sets every
 *   device's budget at once.
 * - Handles. A chunk's device handle is created with its device's
 *   location, and every mapping of a chunk, device or host, grants access
 *   to its device and to every device that cuDeviceCanAccessPeer says can
 *   reach it. Without spillway a cuMemAlloc pointer is usable from a peer
 *   once the peer enabled access; a VMM mapping is usable only by the
 *   devices cuMemSetAccess named, whatever peer access says, so the grant
 *   must name the peers up front for the program to keep working.
 * - The safety rule. cuCtxSynchronize waits for the current context only,
 *   and a chunk may be in use by work of any context that can reach it:
 *   the one it was allocated in, another context of its device, a peer's.
 *   So spillway records every context it sees allocate a tracked
 *   allocation, or enable peer access (the only way a peer's kernel may
 *   reach cuMemAlloc memory), and the safety synchronization waits for
 *   all of them: the current context as before, then each other recorded
 *   one (cuCtxSynchronize_v2). One device with one context makes the
 *   call it always made, and asks which context is current. A context that no longer exists
 *   (INVALID_CONTEXT, CONTEXT_IS_DESTROYED) has no work left and is
 *   forgotten; any other failure fails the synchronization, and nothing
 *   moves. A device whose context table is full is not tracked (its
 *   allocations pass through), since a context spillway cannot wait for
 *   would break the rule.
 * - Copies. Moving a chunk copies it on a stream of its own device's
 *   context (made at its first tracked allocation): a copy issued to a
 *   stream of another device is allowed by CUDA, and so the copy engine of
 *   the chunk's own device does the work, with no peer path needed.
 * - Windows and kept copies. Each device gets its own streaming window
 *   (window.c), out of its own budget, and its own fingerprint module (a
 *   module and its kernels belong to one context), which checks both its
 *   window's copies and the host copies kept of its promoted chunks; all
 *   are made in the context current at its first tracked allocation, and
 *   work on its copy stream above. A launch is served by the window of
 *   its context's device, with that device's chunks only: an event may be
 *   recorded only on a stream of its own device, and a kernel launched
 *   only in its own context.
 * - What stays on the first device. The first device spillway tracks (the
 *   one vmm.c probed) keeps what exists once: the remapping window
 *   (SPILLWAY_REWRITE=0) and the pool of released device handles
 *   (another device's released handles are released at once).
 * - Statistics. device_bytes and bytes_streamed stay the sums;
 *   devN_device_bytes, devN_gpu_budget and devN_bytes_streamed
 *   (stats_fields.h) give each device's share and budget.
 *
 * All state below changes with the gate held exclusively (allocations,
 * moves, frees, budget changes, the peer-access hook); launches read a
 * device's bytes and budget under the shared hold, as they did the
 * process-wide ones.
 */
#include "device.h"

#define MAX_CTX (SW_MAX_CONTEXTS / SW_MAX_DEVICES) /* contexts recorded per device */

typedef struct {
    int state;                 /* DEV_* */
    bool budget_set;
    bool budget_auto;          /* picked by resolve_budget, not given */
    bool window_tried;         /* its window was made, or could not be */
    uint64_t budget;
    uint64_t bytes;            /* tracked bytes resident on it, the window included */
    CUmemAllocationProp prop;  /* device handles' location */
    CUmemAccessDesc access[SW_MAX_DEVICES];
    int naccess;
    CUstream stream;           /* copies of moves, in its own context */
    CUcontext ctx[MAX_CTX];
    int nctx;
} sw_devstate_t;

enum { DEV_UNSEEN, DEV_READY, DEV_UNUSABLE };

static sw_devstate_t devs[SW_MAX_DEVICES];
static int home = -1;             /* the first device: vmm.c's, the remapping window's */
static int nctx_total;            /* contexts recorded, all devices */
static bool any_budget;
/* A budget spillway_set_budgets gave: every device's, those seen later
 * too, in place of the options'. */
static bool override, override_set;
static uint64_t override_budget;

static bool valid(int dev)
{
    return dev >= 0 && dev < SW_MAX_DEVICES;
}

int sw_dev_current(void)
{
    CUdevice d;
    if (SW_CALL(cuCtxGetDevice, (&d)) != CUDA_SUCCESS)
        return -1;
    return d;
}

int sw_dev_home(void)
{
    return home;
}

/* The stats mirror of one device's figures: a group of fields per
 * device, in a fixed order (stats_fields.h). */
#define DEV_STATS (SW_STAT_dev1_device_bytes - SW_STAT_dev0_device_bytes)
_Static_assert(SW_STAT_dev7_bytes_streamed == SW_STAT_dev0_bytes_streamed + 7 * DEV_STATS,
               "per-device stats groups");

sw_stat_id_t sw_dev_stat(int dev, sw_stat_id_t dev0_field)
{
    return (sw_stat_id_t)(dev0_field + DEV_STATS * dev);
}

static void publish_budget(int dev)
{
    sw_stat_id_t id = sw_dev_stat(dev, SW_STAT_dev0_gpu_budget);
    uint64_t now = devs[dev].budget_set ? devs[dev].budget : 0;
    sw_stat_add(id, (int64_t)now - (int64_t)sw_stat_get(id));
}

/* Records ctx for dev unless it is there already; false when the table
 * is full (the caller must then not track: the rule could not wait). */
static bool note_ctx(int dev, CUcontext ctx)
{
    sw_devstate_t *d = &devs[dev];
    for (int i = 0; i < d->nctx; i++)
        if (d->ctx[i] == ctx)
            return true;
    if (d->nctx == MAX_CTX)
        return false;
    d->ctx[d->nctx++] = ctx;
    nctx_total++;
    return true;
}

/* Who may reach dev's memory: dev, and each device the driver says can
 * access it as a peer. Failure of a query only leaves that peer out. */
static void find_access(int dev)
{
    sw_devstate_t *d = &devs[dev];
    int count = 0;
    SW_CALL(cuDeviceGetCount, (&count));
    d->naccess = 0;
    for (int p = -1; p < count && p < SW_MAX_DEVICES; p++) {
        int who = p < 0 ? dev : p, can = p < 0;
        if (p == dev ||
            (p >= 0 && SW_CALL(cuDeviceCanAccessPeer, (&can, p, dev)) != CUDA_SUCCESS))
            can = 0;
        if (!can)
            continue;
        CUmemAccessDesc *a = &d->access[d->naccess++];
        *a = (CUmemAccessDesc){.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
        a->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        a->location.id = who;
    }
}

/* The headroom a picked budget leaves of a device's total: cuBLAS
 * workspaces, NCCL buffers, activations below SPILLWAY_MIN_ALLOC. */
#define AUTO_HEADROOM_SHIFT 4 /* a sixteenth */

/* The budget given for dev: spillway_set_budgets', or the options'
 * amount, resolved against the device's total memory. false (*budget 0):
 * none given. */
static bool given_budget(int dev, uint64_t *budget)
{
    if (override) {
        *budget = override_budget;
        return override_set;
    }
    const sw_amount_t *a = sw_gpu_budget_of(sw_opts(), dev);
    size_t total = 0;
    *budget = 0;
    if (!a->set)
        return false;
    SW_CALL(cuDeviceTotalMem_v2, (&total, dev));
    *budget = sw_amount_resolve(a, total);
    return true;
}

/* dev's budget: the one given; none given, what the device has free as it
 * is first tracked (the current context is dev's) less a sixteenth of its
 * total; "none": no budget. */
static void resolve_budget(int dev)
{
    sw_devstate_t *d = &devs[dev];
    d->budget_set = given_budget(dev, &d->budget);
    if (d->budget_set || override || sw_opts()->gpu_budget_off)
        return;
    size_t total = 0, avail = 0, all = 0;
    SW_CALL(cuDeviceTotalMem_v2, (&total, dev));
    uint64_t headroom = (uint64_t)total >> AUTO_HEADROOM_SHIFT;
    if (SW_CALL(cuMemGetInfo_v2, (&avail, &all)) != CUDA_SUCCESS || avail <= headroom) {
        sw_info("device %d: no GPU budget picked (%llu bytes free of %llu): demotion only on "
                "out-of-memory",
                dev, (unsigned long long)avail, (unsigned long long)total);
        return;
    }
    d->budget_set = d->budget_auto = true;
    d->budget = avail - headroom;
    sw_info("device %d: GPU budget %llu bytes, picked: %llu free of %llu at its first tracked "
            "allocation, less a sixteenth of the total (SPILLWAY_GPU_BUDGET sets it; none: "
            "none)",
            dev, (unsigned long long)d->budget, (unsigned long long)avail,
            (unsigned long long)total);
}

/* Probes a device other than home: VMM support, a granularity that
 * divides the one chunks are cut to, and a stream of its own. DEV_READY
 * when usable; DEV_UNUSABLE for good; DEV_UNSEEN to try again next time
 * (no stream could be made). */
static int probe(int dev, const sw_vmm_info_t *vi)
{
    int vmm = 0;
    size_t g = 0;
    sw_devstate_t *d = &devs[dev];
    if (SW_CALL(cuDeviceGetAttribute,
                (&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev)) !=
            CUDA_SUCCESS ||
        !vmm ||
        SW_CALL(cuMemGetAllocationGranularity,
                (&g, &d->prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)) != CUDA_SUCCESS ||
        !g || vi->granularity % g) {
        sw_warn("device %d: no usable virtual memory management: its allocations pass through",
                dev);
        return DEV_UNUSABLE;
    }
    if (SW_CALL(cuStreamCreate, (&d->stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
        d->stream = NULL;
        sw_debug("device %d: no stream of its own yet: this allocation passes through", dev);
        return DEV_UNSEEN;
    }
    return DEV_READY;
}

int sw_dev_ready(const sw_vmm_info_t *vi, bool *fresh)
{
    *fresh = false;
    int dev = sw_dev_current();
    CUcontext ctx = NULL;
    if (!valid(dev) || SW_CALL(cuCtxGetCurrent, (&ctx)) != CUDA_SUCCESS || !ctx)
        return -1;
    sw_devstate_t *d = &devs[dev];
    if (d->state == DEV_UNSEEN) {
        d->prop = (CUmemAllocationProp){.type = CU_MEM_ALLOCATION_TYPE_PINNED};
        d->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        d->prop.location.id = dev;
        if (home < 0 && dev != vi->device)
            return -1; /* home is vmm.c's device: it must come first */
        if (dev != vi->device && (d->state = probe(dev, vi)) != DEV_READY)
            return -1;
        if (home < 0)
            home = dev;
        find_access(dev);
        resolve_budget(dev);
        any_budget |= d->budget_set;
        publish_budget(dev);
        d->state = DEV_READY;
        *fresh = true;
        sw_info("device %d: budget %s%llu bytes, reachable by %d device(s)", dev,
                d->budget_set ? "" : "(none) ", (unsigned long long)d->budget, d->naccess);
    }
    if (d->state != DEV_READY || !note_ctx(dev, ctx))
        return -1;
    return dev;
}

CUresult sw_enable_peer(CUcontext peer, unsigned int flags)
{
    CUresult r = SW_CALL(cuCtxEnablePeerAccess, (peer, flags));
    if (r != CUDA_SUCCESS || sw_opts()->disable)
        return r;
    int dev = sw_dev_current();
    CUcontext ctx = NULL;
    if (!valid(dev) || SW_CALL(cuCtxGetCurrent, (&ctx)) != CUDA_SUCCESS || !ctx)
        return r;
    sw_gate_wr();
    bool noted = note_ctx(dev, ctx);
    sw_gate_unwr();
    if (!noted)
        sw_warn("device %d: more than %d contexts; one that enabled peer access is not waited "
                "for before moves",
                dev, MAX_CTX);
    return r;
}

uint64_t sw_dev_room(int dev)
{
    if (!valid(dev) || !devs[dev].budget_set)
        return UINT64_MAX;
    uint64_t used = __atomic_load_n(&devs[dev].bytes, __ATOMIC_RELAXED);
    return used >= devs[dev].budget ? 0 : devs[dev].budget - used;
}

bool sw_dev_any_budget(void)
{
    return any_budget;
}

bool sw_dev_budget_picked(int dev)
{
    return valid(dev) && devs[dev].budget_set && devs[dev].budget_auto;
}

bool sw_dev_window_due(int dev)
{
    return valid(dev) && devs[dev].budget_set && !devs[dev].window_tried;
}

void sw_dev_window_tried(int dev)
{
    if (valid(dev))
        devs[dev].window_tried = true;
}

void sw_dev_window_untried(int dev)
{
    if (valid(dev))
        devs[dev].window_tried = false;
}

bool sw_dev_budget(int dev, uint64_t *budget)
{
    if (!valid(dev) || !devs[dev].budget_set)
        return false;
    *budget = devs[dev].budget;
    return true;
}

bool sw_dev_budget_meant(int dev, uint64_t *budget)
{
    if (sw_dev_budget(dev, budget))
        return true;
    return valid(dev) && devs[dev].state == DEV_UNSEEN && given_budget(dev, budget);
}

uint64_t sw_dev_bytes(int dev)
{
    return valid(dev) ? __atomic_load_n(&devs[dev].bytes, __ATOMIC_RELAXED) : 0;
}

void sw_dev_bytes_add(int dev, int64_t delta)
{
    if (!valid(dev))
        return;
    __atomic_add_fetch(&devs[dev].bytes, (uint64_t)delta, __ATOMIC_RELAXED);
    sw_stat_add(SW_STAT_device_bytes, delta);
    sw_stat_add(sw_dev_stat(dev, SW_STAT_dev0_device_bytes), delta);
}

void sw_dev_set_budgets(bool set, uint64_t budget)
{
    override = true;
    override_set = set;
    override_budget = set ? budget : 0;
    any_budget = set;
    for (int dev = 0; dev < SW_MAX_DEVICES; dev++) {
        if (devs[dev].state != DEV_READY)
            continue;
        devs[dev].budget_set = set;
        devs[dev].budget_auto = false;
        devs[dev].budget = set ? budget : 0;
        publish_budget(dev);
    }
}

int sw_dev_next(int after)
{
    for (int dev = after + 1; dev < SW_MAX_DEVICES; dev++)
        if (devs[dev].state == DEV_READY)
            return dev;
    return -1;
}

const CUmemAllocationProp *sw_dev_prop(int dev)
{
    return &devs[dev].prop;
}

size_t sw_dev_access(int dev, const CUmemAccessDesc **desc)
{
    *desc = devs[dev].access;
    return (size_t)devs[dev].naccess;
}

CUresult sw_dev_own_stream(CUstream *s)
{
    static CUstream own; /* made once, on first use; never destroyed */
    CUresult e = CUDA_SUCCESS;
    if (!own)
        e = SW_REAL(cuStreamCreate)(&own, CU_STREAM_NON_BLOCKING);
    *s = own;
    return e;
}

CUresult sw_dev_copy_stream(int dev, CUstream *st)
{
    if (dev == home)
        return sw_dev_own_stream(st);
    *st = devs[dev].stream;
    return CUDA_SUCCESS;
}

CUresult sw_dev_wait(CUstream st, bool *pending)
{
    CUresult e = SW_REAL(cuStreamSynchronize)(st);
    /* The work may still be queued: wait for every context (st may be
     * another device's than the current one). */
    *pending = e != CUDA_SUCCESS && sw_dev_sync_all() != CUDA_SUCCESS;
    return e;
}

int sw_dev_contexts(CUcontext *out, int max)
{
    int n = 0;
    for (int dev = 0; dev < SW_MAX_DEVICES; dev++)
        for (int i = 0; i < devs[dev].nctx && n < max; i++)
            out[n++] = devs[dev].ctx[i];
    return n;
}

/* Waits for ctx; a context that is gone has nothing left to wait for. */
static CUresult sync_ctx(sw_devstate_t *d, int i, CUcontext current)
{
    CUcontext ctx = d->ctx[i];
    if (ctx == current)
        return CUDA_SUCCESS;
    CUresult r;
    if (SW_REAL(cuCtxSynchronize_v2)) {
        r = SW_REAL(cuCtxSynchronize_v2)(ctx);
    } else {
        /* Older drivers: make it current for the call, then put back. */
        r = SW_CALL(cuCtxSetCurrent, (ctx));
        if (r == CUDA_SUCCESS) {
            r = SW_REAL(cuCtxSynchronize)();
            SW_CALL(cuCtxSetCurrent, (current));
        }
    }
    if (r == CUDA_ERROR_INVALID_CONTEXT || r == CUDA_ERROR_CONTEXT_IS_DESTROYED) {
        d->ctx[i] = d->ctx[--d->nctx];
        nctx_total--;
        return CUDA_SUCCESS;
    }
    return r;
}

CUresult sw_dev_sync_all(void)
{
    CUresult r = SW_REAL(cuCtxSynchronize)();
    /* Even one recorded context may not be the current one (a free made
     * from a thread whose context is another device's). */
    if (r != CUDA_SUCCESS || nctx_total == 0)
        return r;
    CUcontext current = NULL;
    if ((r = SW_CALL(cuCtxGetCurrent, (&current))) != CUDA_SUCCESS)
        return r;
    for (int dev = 0; dev < SW_MAX_DEVICES; dev++)
        for (int i = devs[dev].nctx - 1; i >= 0; i--)
            if ((r = sync_ctx(&devs[dev], i, current)) != CUDA_SUCCESS)
                return r;
    return CUDA_SUCCESS;
}

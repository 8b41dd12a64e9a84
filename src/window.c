/*
 * The streaming window: device memory mapped once and sized in bytes.
 * Ranges of host-resident memory are copied into it ahead of the kernels
 * that read them, and those kernels get their arguments rewritten to point
 * at the copy. No mapping changes, and the host never waits.
 *
 * One window per device (devices.c, "Windows"), all as below: its memory,
 * its streams and events are made in the context of its device's first
 * tracked allocation, and it serves the launches in that context with
 * that device's chunks. Work that writes a home in place may come from
 * any device (a peer copy), so touches and flushes ask every window: a
 * stream may wait for another device's events, though it may record
 * only its own device's.
 *
 *   window (device, made once):   [ e3 | e4 | e5 |  free  | e1 | e2 ]
 *                                                 ^ head: the next copy
 *   a range's own address:        still maps its home (host memory)
 *
 * ORDER, all on the GPU, by events:
 *   fill   spillway's stream st waits for the application's streams (so
 *          the copy reads home after every write issued to it) and for
 *          the readers of what the space held, copies home -> window,
 *          records `filled`;
 *   read   the launch's stream s waits for `filled`, the launch runs with
 *          its rewritten arguments;
 *   home   right after it, on s, the copy goes home if the launch changed
 *          it: spillway_way_home takes its fingerprint, compares it with
 *          home's and copies only on a difference, in one kernel, at one
 *          block's speed (fingerprint.cu); a range found written once (a
 *          training step) goes by spillway_fingerprint and
 *          spillway_copy_if_changed, which copies with the whole grid: in
 *          one step most launches only read it (the forward pass), and
 *          asking costs a pass over the copy at device speed where
 *          copying it home costs all of it over the link. Then `read[s]`
 *          is recorded.
 * So home is current as soon as the launch's stream has passed it: any
 * work the application orders after the launch, on any stream, by any
 * pointer, reads right bytes at home. The copies home of one range are
 * chained across streams (`homed`), so two streams never update its
 * fingerprint at once.
 *
 * WHY IT STAYS CORRECT. The range's own address keeps mapping its home, so
 * a kernel that reaches it through a pointer spillway cannot see reads the
 * right bytes in place. Writes to home in place (a copy, a memset, a
 * launch not rewritten, a move) drop the window copy first, after the
 * fills that read home, and home's fingerprint is forgotten
 * (sw_window_touch). Not covered (README, known limits): a kernel writing
 * home through a pointer spillway cannot see while the range has a copy
 * in the window (later rewritten launches read the old copy), and a kernel
 * that stores an argument pointer, a window address then, for a later
 * kernel.
 *
 * WHAT IS STREAMED. A whole tracked allocation an argument points into,
 * anywhere: CUDA promises a kernel every byte of it, so a copy of less
 * would be a guess a fused weight or an interior pointer runs off. It is
 * streamed when its chunks are on the host (all, or some with the rest on
 * the device, which the copy takes device to device), it fits in the window,
 * it recurs with the launch loop (one of its last visits began one
 * period back, or ended there; one just moved to the host, by its chunks'
 * learned loop; in a capture, any, since a graph is replayed as a loop), and the
 * tensors its launches name span it whole: over each of its last two
 * visits (its uses within a quarter of the loop of each other); each
 * launch alone in a capture, where a copy serves one launch, and for a
 * range its readers write, whose copy goes home whole after each launch
 * that changes it. A segment holding a tensor only a pointer table
 * reaches, or one layer of which an update writes, is read in place
 * instead: its copy would move every byte of it, where reading in place
 * moves only what the kernels read (as fast as a copy for a kernel that
 * reads each byte once; a GEMM that re-reads its weight pays the re-reads
 * over the link: README, known limits).
 * Every argument word into it keeps its offset into the copy (serve.c).
 * One copy per allocation means no two copies hold the same bytes. An
 * allocation bigger than the window keeps its own address: it is
 * resident, or read in place. A copy the loop does not repay
 * is a copy wasted: the rest (a random pick of experts) are read in place
 * until popular enough to become resident (promote.c). So may a range
 * whose copies its readers change, which goes home after every use (a
 * GEMM library's workspace): serve.c asks at each served use whether it
 * should be resident instead (*written of sw_window_use). A range a pointer
 * table in device memory also reaches, whose launches name all of it, is
 * streamed too: its copy goes home right after each launch, before
 * anything ordered after it reads the table. A window that serves nothing
 * for a loop, or copies less in one than five times its size (the link
 * then carries less with its room resident), is given back to the
 * resident set (sw_window_worth, winroom.c). The order ranges are used in
 * is learned as a successor chain: after range u, the ranges used after u
 * last time are copied ahead, as far as the window goes without evicting
 * a copy that was made ahead and not read yet, or one the chain meets on
 * the way (window_copy.c, sw_win_copy_ahead). A range's use that begins a
 * visit and its uses later in the visit each keep their own successor.
 * A copy is no slower than reading in place (55 against 50 GB/s on an
 * H100's PCIe Gen5, docs/gpu-facts.md), and a kernel re-reading its
 * weight (a GEMM, once per tile row) reads it at HBM speed, so a
 * recurring range the chain did not predict is still copied when its
 * launch comes. Unless measured
 * otherwise: each range's first visits are read in place, and its first
 * copies made and ways home queued, with events timing them on the GPU
 * (timers.c, core/cost.c); a range a visit read in place faster than a
 * visit served takes (the longer of its copy, costing at most its link
 * bytes at the best rate any copy reached: one timed beside kernels
 * reading host memory is slowed by them, and its launches' ways home, on
 * their stream) is read in place from then on. That is a copy carrying
 * bytes no kernel reads (a 16 MiB tensor alone in a 20 MiB allocator
 * segment: 337.5 us in place against 381.3 us copied on simgpu), which
 * the pointers cannot show, or a segment of many small tensors mostly
 * resident, whose launches would each pay a way home over all of it.
 *
 * LOCKING. One mutex per window, `lock`, guards everything in it; `wins`
 * is written only under the gate held exclusively. Callers hold the gate
 * (shared or exclusive), so no chunk moves meanwhile.
 *
 * FILES. window.c (this one): each device's window, made, weighed and
 * given back; window_use.c: the launch path; window_copy.c: the copies;
 * window_cost.c: the two ways timed; window_touch.c: home written in
 * place; window_capture.c: captures and replays. Their shared state:
 * window.h.
 */
#include "window.h"

#include <stdlib.h>
#include <string.h>

/* Each device's window (NULL: none), made when the device's budget first
 * binds, or at its first tracked allocation when its size is given
 * (winroom.c). Written under the exclusive gate, read under the shared one. */
static win_t *wins[SW_MAX_DEVICES];
static bool any_on;   /* some window is on */

win_t *sw_win_get(int dev)
{
    return dev >= 0 && dev < SW_MAX_DEVICES ? __atomic_load_n(&wins[dev], __ATOMIC_ACQUIRE)
                                            : NULL;
}

bool sw_window_on(void)
{
    return __atomic_load_n(&any_on, __ATOMIC_RELAXED);
}

uint64_t sw_window_size(int dev)
{
    win_t *w = sw_win_get(dev);
    return w ? w->size : 0;
}

int sw_window_here(void)
{
    CUcontext ctx = NULL;
    if (!sw_window_on() || SW_CALL(cuCtxGetCurrent, (&ctx)) != CUDA_SUCCESS || !ctx)
        return -1;
    for (int dev = 0; dev < SW_MAX_DEVICES; dev++) {
        win_t *w = sw_win_get(dev);
        if (w && w->ctx == ctx)
            return dev;
    }
    return -1;
}

/* Frees what w's fingerprints hold, all or what was made of it: true
 * when every free succeeded. */
static bool fp_free(win_t *w)
{
    const sw_real_t *r = sw_real();
    bool ok = !w->fp || r->cuMemFree_v2(w->fp) == CUDA_SUCCESS;
    ok &= !w->changed || r->cuMemFreeHost(w->changed) == CUDA_SUCCESS;
    ok &= !w->escaped || r->cuMemFreeHost(w->escaped) == CUDA_SUCCESS;
    w->fp = 0;
    w->changed = w->escaped = NULL;
    return ok;
}

/* Makes w's memory, streams and events in the current context, dev's;
 * false, with nothing left allocated, when one cannot be made. */
static bool make(win_t *w, int dev, uint64_t size)
{
    const sw_real_t *r = sw_real();
    if (r->cuCtxGetCurrent(&w->ctx) != CUDA_SUCCESS || !w->ctx)
        return false;
    if (r->cuMemAlloc_v2(&w->base, size) != CUDA_SUCCESS) {
        sw_warn("device %d: cannot allocate a %llu-byte streaming window: streaming is off there",
                dev, (unsigned long long)size);
        return false;
    }
    /* The capture stream is made now: a capture in the global mode may
     * not make one. Without it captures read in place. */
    if (r->cuStreamCreate(&w->cst, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        w->cst = NULL;
    /* Copies go on the stream moves of dev's chunks use: a move's copy
     * follows every window copy of its home on the GPU (sw_move). */
    if (sw_dev_copy_stream(dev, &w->st) == CUDA_SUCCESS &&
        r->cuEventCreate(&w->replayed, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS) {
        if (r->cuEventCreate(&w->done, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS)
            return true;
        r->cuEventDestroy_v2(w->replayed);
    }
    if (w->cst)
        r->cuStreamDestroy_v2(w->cst);
    r->cuMemFree_v2(w->base);
    sw_warn("device %d: cannot set up the streaming window: streaming is off there", dev);
    return false;
}

uint64_t sw_window_setup(int dev, uint64_t size, uint64_t slot, const sw_table_t *t)
{
    const sw_options_t *o = sw_opts();
    const sw_real_t *r = sw_real();
    size -= size % SW_WINDOW_ALIGN;
    if (o->policy != SW_POLICY_LEARNED || size == 0 || sw_win_get(dev) || dev < 0 ||
        dev >= SW_MAX_DEVICES)
        return 0;
    win_t *w = calloc(1, sizeof *w);
    if (!w || !make(w, dev, size)) {
        free(w);
        return 0;
    }
    pthread_mutex_init(&w->lock, NULL);
    w->dev = dev;
    w->last = -1;
    w->timers = sw_timers_new();
    /* Fingerprints need their sums zeroed before any way home: waited
     * for here, which no capture may see (made in one, a window sends
     * every copy home whole). */
    w->fp_on = !sw_capturing() && sw_fp_ready(dev) &&
              r->cuMemAlloc_v2(&w->fp, (size_t)MAX_UNITS * FP_UNIT_BYTES) == CUDA_SUCCESS &&
              r->cuMemsetD8Async(w->fp, 0, (size_t)MAX_UNITS * FP_UNIT_BYTES, w->st) ==
                  CUDA_SUCCESS &&
              r->cuStreamSynchronize(w->st) == CUDA_SUCCESS &&
              r->cuMemAllocHost_v2((void **)&w->changed, MAX_UNITS * sizeof *w->changed) ==
                  CUDA_SUCCESS &&
              r->cuMemAllocHost_v2((void **)&w->escaped, MAX_UNITS * sizeof *w->escaped) ==
                  CUDA_SUCCESS;
    if (w->fp_on) {
        memset(w->changed, 0, MAX_UNITS * sizeof *w->changed);
        memset(w->escaped, 0, MAX_UNITS * sizeof *w->escaped);
    } else {
        fp_free(w);
    }
    for (int i = 0; i < MAX_ENTRIES; i++)
        w->entries[i].unit = -1;
    w->top = 0;
    w->side = w->st;
    w->table = t;
    w->size = size;
    w->slot = slot && slot < size ? slot : size;
    __atomic_store_n(&wins[dev], w, __ATOMIC_RELEASE);
    __atomic_store_n(&any_on, true, __ATOMIC_RELAXED);
    sw_info("device %d: streaming window: %llu bytes%s", dev, (unsigned long long)size,
            w->fp_on ? "" : " (no fingerprints: every copy goes home)");
    return size;
}

bool sw_window_streamable(int dev, uint64_t start, uint64_t len)
{
    const win_t *w = sw_win_get(dev);
    return w && sw_win_streamable(w, start, len);
}

/* Frees everything w holds but the device's copy stream, which moves
 * share. No launch is in flight (the gate is held exclusively), so no
 * thread's pending entries name w. */
static void teardown(win_t *w)
{
    const sw_real_t *r = sw_real();
    bool ok = !w->base || r->cuMemFree_v2(w->base) == CUDA_SUCCESS;
    ok &= fp_free(w);
    if (!ok)
        sw_warn("device %d: the streaming window's memory could not all be freed", w->dev);
    for (int i = 0; i < MAX_ENTRIES; i++) {
        entry_t *e = &w->entries[i];
        if (e->filled)
            r->cuEventDestroy_v2(e->filled);
        for (int k = 0; k < READERS; k++)
            if (e->read[k])
                r->cuEventDestroy_v2(e->read[k]);
    }
    for (int i = 0; i < w->nunits; i++)
        if (w->units[i].homed)
            r->cuEventDestroy_v2(w->units[i].homed);
    sw_timers_free(w->timers);
    r->cuEventDestroy_v2(w->replayed);
    r->cuEventDestroy_v2(w->done);
    if (w->cst)
        r->cuStreamDestroy_v2(w->cst);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* The next window after device *dev's, *dev moved to its device; NULL
 * after the last: for (int d = -1; (w = sw_win_next(&d));) */
win_t *sw_win_next(int *dev)
{
    while (++*dev < SW_MAX_DEVICES) {
        win_t *w = sw_win_get(*dev);
        if (w)
            return w;
    }
    return NULL;
}

sw_worth_t sw_window_last_loop(int dev)
{
    win_t *w = sw_win_get(dev);
    sw_worth_t j = {.copies = 2};
    if (!w)
        return j;
    pthread_mutex_lock(&w->lock);
    j = w->worth;
    pthread_mutex_unlock(&w->lock);
    return j;
}

bool sw_window_capture_room(int dev, uint64_t *room)
{
    win_t *w = sw_win_get(dev);
    if (!w)
        return false;
    pthread_mutex_lock(&w->lock);
    /* Held copies fix the window whatever the ranges' times say. */
    bool changes = !w->graphs && !w->origin;
    if (changes) {
        const sw_worth_ask_t q = {.repaid = sw_win_repaid, .arg = w};
        *room = sw_worth_capture(&q, w->slot < w->size ? w->slot : w->size);
        changes = *room != w->size;
    }
    pthread_mutex_unlock(&w->lock);
    return changes;
}

/* The question about w at launch now; w->lock held. */
static sw_worth_ask_t ask(win_t *w, uint64_t now, uint64_t period, uint64_t guess)
{
    const sw_vmm_info_t *vi = sw_vmm_setup();
    uint64_t budget;
    return (sw_worth_ask_t){
        .now = now,
        .period = period,
        .guess = guess,
        .size = w->size,
        .align = SW_WINDOW_ALIGN,
        .budget = sw_dev_budget(w->dev, &budget) ? budget : 0,
        .granule = vi ? vi->granularity : 0,
        .served_at = __atomic_load_n(&w->served_at, __ATOMIC_RELAXED),
        .graphs = w->graphs,
        .repaid = sw_win_repaid,
        .served = sw_win_served_share,
        .copyable = sw_win_copyable,
        .arg = w,
    };
}

sw_window_worth_t sw_window_worth(int dev, uint64_t now, uint64_t period, uint64_t guess)
{
    win_t *w = sw_win_get(dev);
    if (!w)
        return SW_WINDOW_WORTH;
    if (__atomic_load_n(&w->idle_replays, __ATOMIC_RELAXED) >= SW_WINDOW_IDLE_LOOPS)
        return SW_WINDOW_IDLE;
    pthread_mutex_lock(&w->lock);
    const sw_worth_ask_t q = ask(w, now, period, guess);
    sw_window_worth_t why = sw_worth_judge(&w->worth, &q);
    pthread_mutex_unlock(&w->lock);
    return why;
}

void sw_window_residency_moved(int dev, uint64_t now, uint64_t period)
{
    win_t *w = sw_win_get(dev);
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    const sw_worth_ask_t q = ask(w, now, period, 0);
    if (sw_worth_on_pace(&w->worth, &q))
        sw_worth_moved(&w->worth);
    pthread_mutex_unlock(&w->lock);
}

/* Takes dev's window w from the table and frees it. */
static void unpublish(int dev, win_t *w)
{
    __atomic_store_n(&wins[dev], NULL, __ATOMIC_RELEASE);
    /* With no window left, launches stop noting what they name for one. */
    int d = -1;
    __atomic_store_n(&any_on, sw_win_next(&d) != NULL, __ATOMIC_RELAXED);
    teardown(w);
}

/* dev's window with its copies dropped, to be freed or made anew; NULL
 * where it may not be: a graph holds copies, a capture is on, or a launch
 * holds copies or a timer of it (holders: this thread's, or another's
 * that set its shared hold on the gate aside to move a chunk mid-launch,
 * sw_gate_wr, and reads them after). Every launch that read a copy sent
 * it home right after, and the device has finished: home is current, the
 * copies can simply go. */
static win_t *emptied(int dev)
{
    win_t *w = sw_win_get(dev);
    if (!w || w->graphs || w->origin || sw_capturing() ||
        __atomic_load_n(&w->holders, __ATOMIC_ACQUIRE))
        return NULL;
    for (int i = 0; i < w->top; i++)
        if (w->entries[i].unit >= 0)
            sw_win_drop_entry(w, &w->entries[i]);
    return w;
}

uint64_t sw_window_release(int dev)
{
    win_t *w = emptied(dev);
    if (!w)
        return 0;
    uint64_t size = w->size;
    unpublish(dev, w);
    sw_info("device %d: streaming window released (%llu bytes)", dev, (unsigned long long)size);
    return size;
}

uint64_t sw_window_resize(int dev, uint64_t size, uint64_t slot, bool short_launches,
                          uint64_t lead)
{
    const sw_real_t *r = sw_real();
    size -= size % SW_WINDOW_ALIGN;
    win_t *w = size ? emptied(dev) : NULL;
    if (!w)
        return 0;
    pthread_mutex_lock(&w->lock);
    /* The old memory goes first: the two together could pass the budget. */
    bool freed = r->cuMemFree_v2(w->base) == CUDA_SUCCESS;
    w->base = 0;
    if (!freed || r->cuMemAlloc_v2(&w->base, size) != CUDA_SUCCESS) {
        w->base = 0;
        pthread_mutex_unlock(&w->lock);
        unpublish(dev, w);
        sw_warn("device %d: cannot make the streaming window anew at %llu bytes: streaming is "
                "off there",
                dev, (unsigned long long)size);
        return 0;
    }
    w->size = size;
    w->slot = slot && slot < size ? slot : size;
    w->head = 0;
    w->worth = (sw_worth_t){0};
    w->short_launches = short_launches;
    w->lead = lead;
    pthread_mutex_unlock(&w->lock);
    sw_info("device %d: streaming window: %llu bytes, made anew (its ranges' order and costs "
            "kept)",
            dev, (unsigned long long)size);
    return size;
}

bool sw_window_holds(uint64_t addr)
{
    win_t *w;
    for (int d = -1; (w = sw_win_next(&d));)
        if (addr - w->base < w->size)
            return true;
    return false;
}

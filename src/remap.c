/*
 * The remapping window (SPILLWAY_REWRITE=0), the alternative to window.c's
 * streaming window: chunks that do not fit in the GPU budget pass through
 * a small pool of device slots, copied in on spillway's own stream ahead
 * of the kernels that read them, and the chunk's own address is remapped
 * to its slot, so no argument is rewritten and a pointer found any way at
 * all reads the copy; the price is an unmap at each commit point, under
 * the safety rule.
 *
 *   budget = resident chunks (own device handles) + window (the slots)
 *
 *   chunk address  ──mapped──►  slot handle        while in the window
 *                  ──mapped──►  host handle (home) otherwise
 *   mirror address ──mapped──►  host handle        always, once streamed
 *
 * THE COMMIT POINT. Moving a chunk's address between its home and a slot
 * is an unmap, so it follows the safety rule (vmm.c), with one refinement:
 * the host waits for the application's work through spillway's own
 * stream, not with cuCtxSynchronize. Under the exclusive gate:
 *   1. spillway's stream waits, on the GPU, for the application's work: an
 *      event on the legacy stream (which waits for every blocking stream,
 *      the per-thread ones included), one on every non-blocking stream the
 *      application made or launched on, however many, and the last work
 *      of every stream destroyed since the previous commit (recorded just
 *      before cuStreamDestroy, which returns with work queued). Then it
 *      fingerprints the slots about to be emptied and reads them back, and
 *      the host waits once, for all of that. Earlier copies cost nothing
 *      more: the application's work already waits for them (step 4);
 *   2. for each chunk to bring in, queue a copy from its mirror address to
 *      a slot: a free one, or the one whose chunk is used furthest ahead,
 *      whose bytes are copied back home first on the same stream, unless
 *      its fingerprint shows it unchanged;
 *   3. then remap: each evicted chunk's address to its home, each new
 *      chunk's to its slot. The copies are all queued first so the link
 *      works while the host remaps; if an evicted chunk's remap fails, its
 *      address still maps the slot, and a copy from home puts its bytes
 *      back before anything can read them;
 *   4. record one event after all those copies, and make the legacy stream
 *      and every non-blocking application stream wait for it.
 * From then on every kernel, whatever memory it reaches and however it
 * found the address, runs after the bytes arrived: ordering is enforced on
 * the GPU, and the host blocks only once, in step 1. The copies read the
 * mirror, which no application kernel can reach, so remapping the chunk's
 * address while they are queued is safe.
 *
 * WRITE-BACK. A chunk leaving the window is copied home only if the GPU
 * changed it: spillway's own kernel (fingerprint.cu) takes a 128-bit
 * fingerprint of the slot when it is filled and again before it is
 * emptied. A change within one word always changes it; any other change
 * is missed with probability about 2^-128 (fingerprint.cu says why).
 * Where the kernel cannot be loaded, every chunk is copied home.
 *
 * Commit points happen only on the launch path, on the application's
 * thread, when a launch touches a host chunk. There is no background
 * thread: a commit needs the gate exclusively anyway, and doing it in call
 * order keeps simgpu's virtual time, and so the benchmarks, deterministic.
 */
#include "residency.h"

#include <stdlib.h>
#include <string.h>


#define MAX_SLOTS 256
#define MAX_BATCH 64

typedef struct {
    uint64_t handle;      /* device memory, made once */
    CUdeviceptr stage;    /* where it is always mapped, for the copies */
    sw_chunk_t *c;        /* the chunk whose address maps it, or NULL */
    bool fp_filled;       /* its fingerprint was taken when filled */
} slot_t;

static struct {
    bool on;
    uint64_t slot_size;
    int nslots;
    slot_t slots[MAX_SLOTS];
    CUdeviceptr stage_base;
    CUevent batch_ev;
    bool fp_on;            /* fingerprints can be taken: else always write back */
    CUdeviceptr fp_dev;    /* per slot: the fingerprint when filled, then before emptied */
    uint64_t *fp_host;     /* pinned copy of fp_dev */
} pf;

/* The fingerprints' buffers, per slot; without them the window still
 * works, copying every chunk home. */
static void fingerprint_setup(void)
{
    const sw_real_t *r = sw_real();
    size_t bytes = 2 * MAX_SLOTS * SW_FP_BYTES;
    pf.fp_on = sw_fp_ready(sw_dev_home()) &&
               r->cuMemAlloc_v2(&pf.fp_dev, bytes) == CUDA_SUCCESS &&
               r->cuMemAllocHost_v2((void **)&pf.fp_host, bytes) == CUDA_SUCCESS;
}

static CUdeviceptr fp_slot(int si, int which)
{
    return pf.fp_dev + (uint64_t)(2 * si + which) * SW_FP_BYTES;
}

/* Whether slot si's two fingerprints, read back, agree. */
static bool fp_same(int si)
{
    const uint64_t *f = pf.fp_host + 2 * si * (SW_FP_BYTES / sizeof(uint64_t));
    return memcmp(f, f + SW_FP_BYTES / sizeof(uint64_t), SW_FP_BYTES) == 0;
}

bool sw_remap_on(void)
{
    return pf.on;
}

static void unmirror(sw_chunk_t *c);

uint64_t sw_remap_setup(uint64_t budget)
{
    const sw_options_t *o = sw_opts();
    const sw_vmm_info_t *vi = sw_vmm_setup();
    if (o->policy != SW_POLICY_LEARNED || !vi)
        return 0;
    pf.slot_size = vi->chunk;
    uint64_t window = sw_amount_resolve(&o->prefetch_bytes, budget);
    int n = (int)(window / pf.slot_size);
    if (n > MAX_SLOTS)
        n = MAX_SLOTS;
    if (n < 2) {
        if (window)
            sw_info("prefetch window %llu bytes holds fewer than 2 chunks: prefetch is off",
                    (unsigned long long)window);
        return 0;
    }
    const sw_real_t *r = sw_real();
    if (r->cuEventCreate(&pf.batch_ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS ||
        sw_vmm_reserve((uint64_t)n * pf.slot_size, &pf.stage_base) != CUDA_SUCCESS) {
        sw_warn("cannot set up the prefetch window: prefetch is off");
        return 0;
    }
    int made = 0;
    for (; made < n; made++) {
        slot_t *s = &pf.slots[made];
        s->stage = pf.stage_base + (uint64_t)made * pf.slot_size;
        if (sw_vmm_create(SW_ON_DEVICE, pf.slot_size, &s->handle) != CUDA_SUCCESS)
            break;
        if (sw_vmm_map(s->stage, pf.slot_size, s->handle) != CUDA_SUCCESS) {
            sw_vmm_release(s->handle);
            break;
        }
    }
    if (made < 2) {
        for (int i = 0; i < made; i++) {
            sw_vmm_unmap(pf.slots[i].stage, pf.slot_size);
            sw_vmm_release(pf.slots[i].handle);
        }
        sw_warn("cannot create prefetch slots: prefetch is off");
        return 0;
    }
    pf.nslots = made;
    pf.on = true;
    sw_place_before_move(unmirror);
    fingerprint_setup();
    sw_info("prefetch window: %d slots of %llu bytes", made, (unsigned long long)pf.slot_size);
    return (uint64_t)made * pf.slot_size;
}

/* ---- moving chunks in and out of slots (gate held exclusively) ---- */

static CUdeviceptr mirror_of(const sw_chunk_t *c)
{
    return c->alloc->mirror + (c->va - c->alloc->va);
}

/* Maps c's host handle at its mirror address, reserving the mirror of its
 * allocation on first use. */
static CUresult ensure_mirror(sw_chunk_t *c)
{
    sw_alloc_t *a = c->alloc;
    CUresult e = CUDA_SUCCESS;
    if (!a->mirror) {
        CUdeviceptr m;
        e = sw_vmm_reserve(a->reserved, &m);
        if (e != CUDA_SUCCESS)
            return e;
        a->mirror = m;
    }
    if (!c->mirrored && (e = sw_vmm_map(mirror_of(c), c->size, c->handle)) == CUDA_SUCCESS)
        c->mirrored = true;
    return e;
}

/* Phase 1 of filling slot si with c: queue the copies, so the link starts
 * at once. The victim's bytes go home first if the GPU changed them, then
 * c's bytes overwrite the slot. The victim's address still maps the slot
 * until phase 2, and nothing reads it meanwhile: the gate is held and the
 * application synchronized. *fp: c's fingerprint was queued too. */
static CUresult queue_fill(int si, sw_chunk_t *c, bool changed, CUstream st, bool *fp)
{
    slot_t *s = &pf.slots[si];
    CUresult e = CUDA_SUCCESS;
    if (s->c && changed) {
        e = SW_REAL(cuMemcpyDtoDAsync_v2)(mirror_of(s->c), s->stage, s->c->size, st);
        if (e != CUDA_SUCCESS)
            return e;
        sw_stat_add(SW_STAT_bytes_written_back, (int64_t)s->c->size);
    }
    e = ensure_mirror(c);
    if (e == CUDA_SUCCESS)
        e = SW_REAL(cuMemcpyDtoDAsync_v2)(s->stage, mirror_of(c), c->size, st);
    *fp = e == CUDA_SUCCESS && pf.fp_on &&
          sw_fp_queue(sw_dev_home(), s->stage, c->size, fp_slot(si, 0), st) == CUDA_SUCCESS;
    return e;
}

/* A victim whose address could not go home still maps slot s, which phase
 * 1 overwrote: its own bytes come back from home, where they are (kept
 * unchanged, or written back earlier on the same stream). */
static void restore(slot_t *s, CUstream st)
{
    s->fp_filled = false; /* the fill fingerprint is now the other chunk's */
    if (SW_REAL(cuMemcpyDtoDAsync_v2)(s->stage, mirror_of(s->c), s->c->size, st) != CUDA_SUCCESS)
        sw_error("chunk 0x%llx maps a slot holding another chunk's bytes; its own are in its "
                 "host handle %llu",
                 (unsigned long long)s->c->va, (unsigned long long)s->c->home);
}

/* Phase 2: the victim's address goes home, then c's comes to the slot.
 * Without a victim's remap c stays home and the victim in the slot. */
static CUresult settle_fill(int si, sw_chunk_t *c, bool fp, CUstream st)
{
    slot_t *s = &pf.slots[si];
    sw_chunk_t *v = s->c;
    CUresult e;
    if (v) {
        if ((e = sw_vmm_remap(v->va, v->size, s->handle, v->home)) != CUDA_SUCCESS) {
            restore(s, st);
            return e;
        }
        sw_place_unslotted(v);
        s->c = NULL;
    }
    if ((e = sw_vmm_remap(c->va, c->size, c->handle, s->handle)) != CUDA_SUCCESS)
        return e;
    sw_place_slotted(c, si, s->handle);
    s->c = c;
    s->fp_filled = fp; /* without it, the slot will be copied home */
    return CUDA_SUCCESS;
}

/* ---- one commit's plan ----
 * Every slot is planned before anything moves, so the victims'
 * fingerprints are read back with one wait, and the application is
 * synchronized only when something will move. */
typedef struct {
    uint64_t now, period;
    sw_chunk_t *fill[MAX_BATCH]; /* into slot[i] */
    int slot[MAX_BATCH];
    int nfill, needed;           /* the first `needed` fills are for this launch */
    sw_chunk_t *hot[MAX_BATCH];  /* resident in place of cold[i], which goes home */
    sw_chunk_t *cold[MAX_BATCH];
    int nswap;
    bool planned[MAX_SLOTS];
} plan_t;

static bool in_plan(const plan_t *p, const sw_chunk_t *c)
{
    for (int i = 0; i < p->nfill; i++)
        if (p->fill[i] == c)
            return true;
    for (int i = 0; i < p->nswap; i++)
        if (p->hot[i] == c || p->cold[i] == c)
            return true;
    return false;
}

static void plan_fill(plan_t *p, sw_chunk_t *c, int si)
{
    p->fill[p->nfill] = c;
    p->slot[p->nfill++] = si;
    p->planned[si] = true;
}

/* A slot for a chunk whose next use is `next`: a free one, else the one
 * whose chunk is used furthest ahead, provided that is later than `next`
 * (Belady: never evict what is needed sooner than what comes in), never
 * one this launch uses, and never one already planned. -1: none. */
static int plan_slot(const plan_t *p, uint64_t next)
{
    int best = -1;
    uint64_t far = 0;
    for (int i = 0; i < pf.nslots; i++) {
        sw_chunk_t *c = pf.slots[i].c;
        if (p->planned[i])
            continue;
        if (!c)
            return i;
        if (sw_learn_state(c).last_use == p->now)
            continue;
        uint64_t n = sw_learn_next_use(c, p->now);
        if (best < 0 || n > far) {
            best = i;
            far = n;
        }
    }
    return best >= 0 && far > next ? best : -1;
}

/* Whether c follows the loop: its gap is within 1/8 of the period. Only
 * such chunks are streamed through the window, since a copy predicted
 * wrongly is a copy wasted; the rest (a random pick of experts, say) are
 * read in place until they prove popular (displace()). */
static bool periodic(const sw_chunk_t *c, uint64_t period)
{
    uint64_t gap = sw_learn_state(c).gap;
    if (!period || !gap)
        return false;
    uint64_t d = gap > period ? gap - period : period - gap;
    return d * 8 <= period;
}

/* keep() for the prefetch choice: skip what the plan holds already and
 * what does not follow the loop. */
static bool not_for_window(const sw_chunk_t *c, void *arg)
{
    const plan_t *p = arg;
    return !periodic(c, p->period) || in_plan(p, c) || c->alloc->dev != sw_dev_home();
}

/* keep() for displacement: what this launch uses, and what the plan moves
 * already, stays. */
static bool spare(const sw_chunk_t *c, void *arg)
{
    const plan_t *p = arg;
    /* The slots are home's memory: another device's chunks stay out of
     * every plan (devices.c). */
    return c->alloc->dev != sw_dev_home() || sw_learn_state(c).last_use == p->now || (c->slot >= 0 && p->planned[c->slot]) || in_plan(p, c);
}

/* Displacement: a needed chunk off the loop comes to the device only once
 * it is popular, in a free slot, or else in place of the coldest device
 * chunk (sw_policy_displace): a window chunk, whose slot it takes, or a
 * resident one, which goes home. The popular chunks of a skewed pattern
 * (mixture-of-experts) so gather on the device one needed chunk at a
 * time, each copy replacing a read in place this launch would make
 * anyway. */
static void displace(plan_t *p, sw_chunk_t *c)
{
    if (sw_learn_state(c).uses < SW_HOT_USES)
        return;
    for (int i = 0; i < pf.nslots; i++)
        if (!pf.slots[i].c && !p->planned[i]) {
            plan_fill(p, c, i);
            return;
        }
    sw_chunk_t *v = sw_policy_displace(sw_tracked(), c, p->now, spare, p);
    if (!v)
        return;
    if (v->slot >= 0) {
        plan_fill(p, c, v->slot);
    } else {
        p->hot[p->nswap] = c;
        p->cold[p->nswap++] = v;
    }
}

/* keep() for adoption: all but a resident chunk the window could stream
 * instead (it follows the loop and fits a slot), and what spare() keeps. */
static bool not_streamable(const sw_chunk_t *c, void *arg)
{
    const plan_t *p = arg;
    return c->slot >= 0 || c->size > pf.slot_size || !periodic(c, p->period) || spare(c, arg);
}

/* Adoption: a chunk device memory points at and no argument names is read
 * through that pointer, where the window cannot follow (sw_policy_unseen).
 * It takes the resident place of the loop chunk used furthest ahead, which
 * the window streams from then on. One trade per commit point. */
static void adopt(plan_t *p)
{
    sw_chunk_t *in = sw_policy_unseen(sw_tracked()), *out;
    uint64_t freed;
    if (!in || in->alloc->dev != sw_dev_home() || p->nswap >= MAX_BATCH ||
        sw_policy_victims_learned(sw_tracked(), in->size, p->now, not_streamable, p, &out, 1,
                                  &freed) != 1 ||
        freed < in->size)
        return;
    p->hot[p->nswap] = in;
    p->cold[p->nswap++] = out;
}

/* What the launch at now needs (host chunks need[0..n)) and what the
 * schedule says comes next. */
static void plan(plan_t *p, const uint64_t *need, int n)
{
    static const sw_link_t link = SW_LINK_DEFAULT;
    uint64_t window = (uint64_t)pf.nslots * pf.slot_size;
    for (int i = 0; i < n && p->nfill < MAX_BATCH && p->nswap < MAX_BATCH; i++) {
        sw_chunk_t *c = sw_table_lookup(sw_tracked(), need[i]);
        if (!c || c->where != SW_ON_HOST || c->slot >= 0 || c->size > pf.slot_size ||
            c->alloc->dev != sw_dev_home())
            continue;
        if (!periodic(c, p->period)) {
            displace(p, c);
            continue;
        }
        /* A loop chunk read too rarely to repay a copy stays where it is;
         * what this launch needs comes in whatever the schedule says. */
        int si;
        if (sw_policy_on_touch_learned(c, pf.slot_size, false, p->period, &link) ==
                SW_VERDICT_PROMOTE &&
            (si = plan_slot(p, 0)) >= 0)
            plan_fill(p, c, si);
    }
    p->needed = p->nfill;
    adopt(p);
    uint64_t bytes = (uint64_t)p->nfill * pf.slot_size;
    /* Then what the schedule says comes next, within one period. */
    if (p->nfill && bytes < window && p->nfill < MAX_BATCH) {
        sw_chunk_t *more[MAX_BATCH];
        size_t k = sw_policy_prefetch(sw_tracked(), p->now, p->period, window - bytes,
                                      not_for_window, p, more, (size_t)(MAX_BATCH - p->nfill));
        for (size_t i = 0; i < k; i++) {
            int si;
            if (more[i]->size > pf.slot_size)
                continue;
            if ((si = plan_slot(p, sw_learn_next_use(more[i], p->now))) < 0)
                break; /* the window holds only chunks needed sooner */
            plan_fill(p, more[i], si);
        }
    }
}

/* Step 1, with the victims' fingerprints. spillway's stream waits for the
 * application's work (sw_streams_order_all), takes the fingerprints of the
 * slots about to be emptied and reads them back; then the host waits once,
 * for all of it. A slot counts as unchanged only if both its fingerprints
 * were taken and read back and they agree (*read_back, emptied_fp[slot]);
 * anything less copies it home. Where st cannot be ordered so, the host
 * synchronizes every context first (the safety rule's wait). Fails, and
 * nothing may move, only if no wait succeeded. */
static CUresult sync_and_read_back(const plan_t *p, CUstream st, bool *emptied_fp, bool *read_back)
{
    const sw_real_t *r = sw_real();
    sw_list_t waited;
    sw_stat_add(SW_STAT_safety_syncs, 1);
    bool ordered = sw_streams_order_all(st, &waited);
    CUresult e = ordered ? CUDA_SUCCESS : sw_dev_sync_all();
    *read_back = false;
    for (int i = 0; i < p->nfill && pf.fp_on && e == CUDA_SUCCESS; i++) {
        slot_t *s = &pf.slots[p->slot[i]];
        if (s->c && s->fp_filled &&
            sw_fp_queue(sw_dev_home(), s->stage, s->c->size, fp_slot(p->slot[i], 1), st) ==
                CUDA_SUCCESS)
            *read_back = emptied_fp[p->slot[i]] = true;
    }
    if (*read_back &&
        r->cuMemcpyDtoHAsync_v2(pf.fp_host, pf.fp_dev, 2 * SW_FP_BYTES * (size_t)pf.nslots,
                                st) != CUDA_SUCCESS)
        *read_back = false;
    if (e == CUDA_SUCCESS && (ordered || *read_back) &&
        (e = r->cuStreamSynchronize(st)) != CUDA_SUCCESS) {
        *read_back = false;
        e = sw_dev_sync_all();
    }
    sw_streams_release(&waited, e == CUDA_SUCCESS);
    return e;
}

void sw_remap_commit(const uint64_t *need, int n, uint64_t now)
{
    plan_t p = {.now = now, .period = sw_period(now)};
    plan(&p, need, n);
    CUstream st;
    bool emptied_fp[MAX_SLOTS] = {0}, read_back;
    if ((p.nfill == 0 && p.nswap == 0) || sw_dev_own_stream(&st) != CUDA_SUCCESS ||
        sync_and_read_back(&p, st, emptied_fp, &read_back) != CUDA_SUCCESS)
        return;
    for (int i = 0; i < p.nswap; i++) {
        if (sw_move(p.cold[i], SW_ON_HOST) != CUDA_SUCCESS ||
            sw_move(p.hot[i], SW_ON_DEVICE) != CUDA_SUCCESS)
            break;
        sw_debug("launch %llu: 0x%llx (heat %u) resident instead of 0x%llx (heat %u)",
                 (unsigned long long)now, (unsigned long long)p.hot[i]->va,
                 sw_learn_heat(p.hot[i], now), (unsigned long long)p.cold[i]->va,
                 sw_learn_heat(p.cold[i], now));
    }
    const sw_real_t *r = sw_real();
    /* Every copy is queued before any remap, so the link is busy while
     * the host remaps. */
    bool fp[MAX_BATCH];
    int nq = 0;
    for (; nq < p.nfill; nq++) {
        int si = p.slot[nq];
        bool unchanged = read_back && emptied_fp[si] && fp_same(si);
        if (queue_fill(si, p.fill[nq], !unchanged, st, &fp[nq]) != CUDA_SUCCESS) {
            sw_stat_add(SW_STAT_failed_moves, 1);
            break;
        }
    }
    for (int i = 0; i < nq; i++) {
        if (settle_fill(p.slot[i], p.fill[i], fp[i], st) != CUDA_SUCCESS) {
            sw_stat_add(SW_STAT_failed_moves, 1);
            continue;
        }
        sw_debug("launch %llu: chunk 0x%llx into slot %d (%s)", (unsigned long long)now,
                 (unsigned long long)p.fill[i]->va, p.slot[i], i < p.needed ? "needed now" : "ahead");
        sw_stat_add(i < p.needed ? SW_STAT_prefetch_late : SW_STAT_prefetches, 1);
        sw_stat_add(SW_STAT_bytes_promoted, (int64_t)p.fill[i]->size);
    }
    if (nq == 0)
        return; /* nothing the application must wait for */
    /* A stream in no list cannot be made to wait: the copies finish here. */
    if (sw_streams_unordered() &&
        r->cuStreamSynchronize(st) != CUDA_SUCCESS)
        sw_error("cannot order the application after spillway's copies");
    if (r->cuEventRecord(pf.batch_ev, st) == CUDA_SUCCESS) {
        sw_streams_wait(pf.batch_ev);
    } else if (r->cuStreamSynchronize(st) != CUDA_SUCCESS) /* then wait here */
        sw_error("cannot order the application after spillway's copies");
}

/* Unmaps c's mirror mapping: before anything releases or replaces c's host
 * handle, or the mirror would keep showing the old bytes. Placement calls
 * it before every move (sw_place_before_move). */
static void unmirror(sw_chunk_t *c)
{
    if (c->mirrored && sw_vmm_unmap(mirror_of(c), c->size) == CUDA_SUCCESS)
        c->mirrored = false;
}

/* a is being freed: each chunk in a slot gives it back, its address
 * still mapping the slot until the caller unmaps it and releases its
 * handle (home again); the mirror goes. */
void sw_remap_forget(sw_alloc_t *a)
{
    for (uint32_t i = 0; i < a->nchunks; i++) {
        sw_chunk_t *c = &a->chunks[i];
        if (c->slot >= 0) {
            pf.slots[c->slot].c = NULL;
            sw_place_unslotted(c);
        }
        unmirror(c);
    }
    if (a->mirror) {
        sw_vmm_unreserve(a->mirror, a->reserved);
        a->mirror = 0;
    }
}

/*
 * The streaming window's copies: the ranges it has met (units), its space
 * as a ring of copies (entries), a fill on the copies' stream after the
 * application's work, the chain of copies made ahead, dropping copies
 * that work on home would make stale, and each copy's way home after the
 * launch that read it. The order all of this keeps on the GPU: window.c.
 */
#include "window.h"

static bool any_unit; /* some window has had a range (sw_window_busy) */

/* Forgets e's copy without sending it home (its range is being freed, or
 * a capture that failed made it). Lock held. */

void sw_win_drop_entry(win_t *w, entry_t *e)
{
    w->units[e->unit].entry = -1;
    sw_stat_add(SW_STAT_window_bytes, -(int64_t)w->units[e->unit].len);
    e->unit = -1;
    e->nread = 0;
    e->ahead = false;
    e->stale = false;
    w->unfinished -= e->rest_len > 0;
    e->rest_len = 0;
    e->nblockers = 0;
    e->timed = false;
    __atomic_sub_fetch(&w->live, 1, __ATOMIC_RELAXED);
}

/* A step the capture's graph needs could not be issued into it (a copy
 * home, a fence): a replay would lose bytes or race. The capture must
 * fail: synchronizing a capturing stream is invalid and invalidates it
 * (docs/cuda-facts.md), so the driver itself ends it with
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED; should it not, sw_capture_end
 * answers that (sw_window_capture_ends). Lock held. */
void sw_win_break_capture(win_t *w)
{
    w->broken = true;
    SW_REAL(cuStreamSynchronize)(w->origin);
}

/* Work queued on the copies' stream that reads home is past the point
 * where a fence could be recorded after it: nothing would order a later
 * write of home after it. Eagerly the host waits for it; in a capture it
 * cannot. Lock held. */
static void unfenced(win_t *w)
{
    if (w->origin)
        sw_win_break_capture(w);
    else if (SW_REAL(cuStreamSynchronize)(w->side) != CUDA_SUCCESS)
        sw_error("cannot wait for a window copy: a write of its home may race with it");
}

/* Whether [start, +len) may be copied into w: no bigger than a slot
 * (asked first, so a big one is not walked chunk by chunk), w's device's
 * chunks, some of them on the host and the rest on the device. A range
 * partly resident is copied whole too (the extent rule), its resident
 * chunks at device speed: read in place, a GEMM would re-read its host
 * part once per tile row (the H200's prefill, 2026-11-28: chunk moves left
 * 128 MiB layers half resident, read in place every step at 1.84x the
 * link bound). Asked of a launch's ranges and of the ones copied ahead
 * alike. */
bool sw_win_streamable(const win_t *w, uint64_t start, uint64_t len)
{
    if (len > w->slot)
        return false;
    bool host = false;
    for (uint64_t p = start; p < start + len;) {
        const sw_chunk_t *c = sw_table_lookup(w->table, p);
        /* A fixed chunk's handle is mapped elsewhere too (appvmm.c): a
         * write through that address would leave a copy stale. A chunk
         * of another device is streamed by that device's window. */
        if (!c || c->slot >= 0 || c->fixed || c->alloc->dev != w->dev)
            return false;
        host |= c->where == SW_ON_HOST;
        p = c->va + c->size;
    }
    return host;
}

/* Copies len bytes between home at `home` and a window copy, into home
 * when `to_home`, on s (NULL: synchronously): one copy per run of home's
 * chunks in one place, so that no single copy spans host and device
 * memory. The driver's answer to the first copy that failed, if any. */
static CUresult copy_runs(const win_t *w, uint64_t home, CUdeviceptr copy, uint64_t len,
                          bool to_home, CUstream s)
{
    const sw_real_t *r = sw_real();
    for (uint64_t p = home; p < home + len;) {
        const sw_chunk_t *c = sw_table_lookup(w->table, p);
        sw_where_t where = c ? c->where : SW_ON_HOST;
        uint64_t end = p;
        while (end < home + len) {
            const sw_chunk_t *n = sw_table_lookup(w->table, end);
            if ((n ? n->where : SW_ON_HOST) != where)
                break;
            end = n ? n->va + n->size : home + len;
        }
        if (end > home + len)
            end = home + len;
        CUdeviceptr at = copy + (p - home), to = to_home ? p : at, from = to_home ? at : p;
        CUresult res = s ? r->cuMemcpyDtoDAsync_v2(to, from, end - p, s)
                         : r->cuMemcpyDtoD_v2(to, from, end - p);
        if (res != CUDA_SUCCESS)
            return res;
        p = end;
    }
    return CUDA_SUCCESS;
}

bool sw_window_busy(void)
{
    return __atomic_load_n(&any_unit, __ATOMIC_RELAXED);
}

/* ---- units ---- */

/* Live units are found by their start through w->unit_at, open addressing
 * with linear probing, at most half full: a walk over the units cost a
 * streaming decode 537 instructions a launch among 600 allocations
 * (simgpu, 2026-12-03). */
#define UNIT_SLOT_MASK ((1u << UNIT_SLOTS_LOG2) - 1)

static uint32_t home_slot(uint64_t start)
{
    return (uint32_t)((start >> 12) * 0x9E3779B97F4A7C15ull >> (64 - UNIT_SLOTS_LOG2));
}

int sw_win_unit_find(win_t *w, uint64_t start)
{
    for (uint32_t s = home_slot(start);; s = (s + 1) & UNIT_SLOT_MASK) {
        int ui = w->unit_at[s] - 1;
        if (ui < 0 || w->units[ui].start == start)
            return ui;
    }
}

/* Takes unit ui, live, out of the index: its slot is emptied and each
 * entry after it in the same run that may move back to it does, so that
 * no probe stops short of an entry (backward-shift deletion). */
static void unindex(win_t *w, int ui)
{
    uint32_t i = home_slot(w->units[ui].start);
    while (w->unit_at[i] != ui + 1)
        i = (i + 1) & UNIT_SLOT_MASK;
    for (uint32_t j = (i + 1) & UNIT_SLOT_MASK; w->unit_at[j]; j = (j + 1) & UNIT_SLOT_MASK) {
        uint32_t k = home_slot(w->units[w->unit_at[j] - 1].start);
        /* An entry whose home lies cyclically in (i, j] stays. */
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
            continue;
        w->unit_at[i] = w->unit_at[j];
        i = j;
    }
    w->unit_at[i] = 0;
}

void sw_win_unit_end(win_t *w, int ui)
{
    unindex(w, ui);
    w->units[ui].live = false;
}

int sw_win_unit_get(win_t *w, uint64_t start, uint64_t len)
{
    int ui = sw_win_unit_find(w, start);
    if (ui >= 0)
        return ui;
    for (ui = 0; ui < w->nunits && w->units[ui].live; ui++)
        ;
    if (ui == MAX_UNITS)
        return -1;
    if (ui == w->nunits)
        __atomic_store_n(&w->nunits, w->nunits + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&any_unit, true, __ATOMIC_RELAXED);
    /* A dead unit's event is kept for the new one (teardown destroys it),
     * not dropped: with homed_on NULL nothing waits on its old record. A
     * new id: the old one's timers still out settle into nothing. */
    CUevent homed = w->units[ui].homed;
    w->units[ui] = (unit_t){.start = start, .len = len, .next = -1, .next_within = -1,
                            .entry = -1, .live = true, .homed = homed, .id = ++w->ids};
    uint32_t s = home_slot(start);
    while (w->unit_at[s])
        s = (s + 1) & UNIT_SLOT_MASK;
    w->unit_at[s] = (int16_t)(ui + 1);
    if (w->fp_on) {
        w->changed[ui] = 0;
        w->escaped[ui] = 0;
    }
    return ui;
}

/* ---- the copies (lock held) ---- */

/* The copies' stream waits for every stream the application issued work
 * on (home may be written by it); in a capture, for the capturing one. */
CUresult sw_win_after_app(win_t *w)
{
    if (!w->origin)
        return sw_streams_order(w->st);
    /* In a capture, cst joins it before every fill: a kernel node the
     * program changes after instantiation (graphnodes.c) may write any
     * home in place, and no capture can tell which. */
    const sw_real_t *r = sw_real();
    CUresult e = r->cuEventRecord(w->done, w->origin);
    if (e == CUDA_SUCCESS && (e = r->cuStreamWaitEvent(w->cst, w->done, 0)) == CUDA_SUCCESS) {
        w->cst_in = true;
    }
    return e;
}

/* Frees e's space for a fill on the copies' stream: that stream waits
 * for every launch that read e (and its copy home after it). Home is
 * current already. On failure e is kept and its space is not reused. */
CUresult sw_win_evict(win_t *w, entry_t *e)
{
    const sw_real_t *r = sw_real();
    CUresult c = CUDA_SUCCESS;
    for (int i = 0; i < e->nread && c == CUDA_SUCCESS; i++)
        c = r->cuStreamWaitEvent(w->side, e->read[i], 0);
    if (c == CUDA_SUCCESS)
        sw_win_drop_entry(w, e);
    return c;
}

/* Where a copy of u goes: at the head, or at the start where it would
 * run past the end; but in a window too small for two such copies, flush
 * with its end, so that it overlaps the copy before only in part, and
 * its other part, its lead, can be copied while that one is still read.
 * The ring's turn then puts each copy's lead at its start (placed at 0)
 * or at its end (flush). A range partly on the device whose lead would
 * hold fewer of its host bytes than its other end, at this copy and the
 * one before, is placed against the turn: its resident bytes copy at
 * device speed, and a lead of them would leave the link idle through the
 * launch before (20 x 64 MiB layers under 512 MiB, one made half
 * resident: 16942.6 us a step against 16499.8 where a window of 96 MiB
 * given put its host half in the lead; simgpu, 2026-12-01). So placed,
 * it overlaps the copy before whole and waits for its launch once, and
 * every copy after it takes the other turn: in a loop of an even number
 * of copies, for good; in one of an odd number, whose turns alternate,
 * the lead falls right every other loop, and it is never asked twice in
 * a row. */
static uint64_t place(win_t *w, unit_t *u)
{
    uint64_t len = u->len, span = sw_win_span(u);
    if (w->head + span <= w->size)
        return w->head;
    if (2 * span <= w->size)
        return 0;
    uint64_t flush = w->size - span, at = w->head < w->size ? flush : 0;
    if (u->linked == u->len || !flush)
        return at;
    /* the lead: at 0 its first `flush` bytes, flush with the end its last */
    uint64_t first = sw_win_host_bytes(w, u->start, flush);
    uint64_t last = sw_win_host_bytes(w, u->start + len - flush, flush);
    bool wrong = at ? last < first : first < last;
    bool turn = wrong && u->lead_resident;
    u->lead_resident = wrong && !turn;
    return turn ? (at ? 0 : flush) : at;
}

/* The copies in [at, +len) of the window, noted as fill's blockers; false
 * if one may not be pushed out: one copied ahead and not read yet while
 * `ahead` (a copy ahead never pushes out another one: the chain would
 * thrash), one about to be read (its read not recorded yet) unless
 * `may_wait`, or more than BLOCKERS. [*lo, *hi): the part of the copy
 * they lie in (empty: none); *pinned: one is about to be read. */
static bool in_the_way(win_t *w, uint64_t at, uint64_t len, bool ahead, bool may_wait,
                       entry_t *fill, uint64_t *lo, uint64_t *hi, bool *pinned)
{
    *lo = len;
    *hi = 0;
    *pinned = false;
    fill->nblockers = 0;
    for (int i = 0; i < w->top; i++) {
        const entry_t *o = &w->entries[i];
        const unit_t *ou = o->unit >= 0 ? &w->units[o->unit] : NULL;
        if (!ou || !overlaps(at, len, o->off, ou->len))
            continue;
        if ((ahead && o->ahead) || (o->pins && !may_wait) || fill->nblockers == BLOCKERS)
            return false;
        *pinned |= o->pins > 0;
        fill->blockers[fill->nblockers] = i;
        fill->blocker_ids[fill->nblockers++] = ou->id;
        uint64_t a = o->off > at ? o->off - at : 0;
        uint64_t b = o->off + ou->len < at + len ? o->off + ou->len - at : len;
        *lo = a < *lo ? a : *lo;
        *hi = b > *hi ? b : *hi;
    }
    if (*hi <= *lo)
        *lo = *hi = 0;
    return true;
}

/* Frees the space of fill's blockers for the rest of its copy: the
 * copies' stream waits for every launch that read one still there (and
 * its copy home). One gone since was dropped with only the stream
 * reading home in place ordered after its readers (sw_win_drop_overlaps):
 * the copies' stream then follows every application stream. */
static CUresult evict_blockers(win_t *w, entry_t *fill, uint64_t at, uint64_t len)
{
    bool gone = false;
    CUresult c = CUDA_SUCCESS;
    for (int k = 0; k < fill->nblockers && c == CUDA_SUCCESS; k++) {
        entry_t *o = &w->entries[fill->blockers[k]];
        if (o->unit >= 0 && w->units[o->unit].id == fill->blocker_ids[k] &&
            overlaps(at, len, o->off, w->units[o->unit].len))
            c = sw_win_evict(w, o);
        else
            gone = true;
    }
    fill->nblockers = 0;
    return c == CUDA_SUCCESS && gone ? sw_win_after_app(w) : c;
}

/* Copies [from, to) of u's range to its copy at `at`, on the copies' stream. */
static CUresult copy_part(win_t *w, const unit_t *u, uint64_t at, uint64_t from, uint64_t to)
{
    return to > from ? copy_runs(w, u->start + from, w->base + at + from, to - from, false, w->side)
                     : CUDA_SUCCESS;
}

/* The lowest entry free, so that the entries in use stay below w->top. */
static entry_t *free_entry(win_t *w)
{
    for (int i = 0; i < MAX_ENTRIES; i++) {
        entry_t *e = &w->entries[i];
        if (e->unit < 0 && !e->pins) {
            if (!e->filled && SW_REAL(cuEventCreate)(&e->filled, CU_EVENT_DISABLE_TIMING) !=
                                  CUDA_SUCCESS) {
                e->filled = NULL;
                return NULL;
            }
            if (i >= w->top)
                w->top = i + 1;
            return e;
        }
    }
    return NULL;
}

/* The end of a copy of ui at `at`, or of its first part: the fill
 * recorded, so that work writing home waits for what was copied; and,
 * once `whole`, home's fingerprint, the bytes just copied, taken from the
 * window at device speed, once (each copy home keeps it current,
 * sw_win_send_home; a graph takes it at every fill: a node changed after
 * capture may have written home in place since the last). False where
 * nothing can be ordered after the fill. */
static bool filled(win_t *w, entry_t *e, int ui, uint64_t at, bool whole)
{
    unit_t *u = &w->units[ui];
    if (whole && (!u->fp_known || w->origin) && w->fp_on)
        u->fp_known =
            sw_fp_queue(w->dev, w->base + at, u->len, fp_home(w, ui), w->side) == CUDA_SUCCESS;
    if (SW_REAL(cuEventRecord)(e->filled, w->side) == CUDA_SUCCESS)
        return true;
    /* Nothing reads the copy, and the next fill here follows it on the
     * same stream; but a write of home must not overtake it. */
    unfenced(w);
    return false;
}

/* Copies unit ui into the window (place); its entry, or NULL when there
 * is no room (in_the_way) or a call failed: the range is then read in
 * place, which is always correct. The part no other copy lies in is
 * copied first, so that the link need not wait for their readers: a
 * window of one copy and a part copies ahead while the copy before is
 * read. Where a copy there is still to be read, the rest of a copy ahead
 * waits for its read to be recorded (sw_win_finish_fills); where its
 * readers are recorded, the copies' stream waits for them between the
 * parts. A timed copy is made whole, after its blockers' readers, so
 * that its time holds no wait. */
entry_t *sw_win_fill(win_t *w, int ui, bool ahead)
{
    const sw_real_t *r = sw_real();
    unit_t *u = &w->units[ui];
    uint64_t at = place(w, u), lo, hi;
    bool timed = sw_win_can_time(w) && sw_cost_wants(&u->cost, SW_COST_COPY), pinned;
    entry_t *e = free_entry(w);
    if (!e || !in_the_way(w, at, u->len, ahead, ahead, e, &lo, &hi, &pinned))
        return NULL;
    /* In a capture, after the range's latest copy home in it. */
    if (w->origin && u->homed_on && r->cuStreamWaitEvent(w->side, u->homed, 0) != CUDA_SUCCESS)
        return NULL;
    uint64_t linked = sw_win_host_bytes(w, u->start, u->len);
    int timer = -1;
    CUresult c;
    /* A rest past a lead (sw_win_lead), in a window that holds a copy
     * beside the next one's lead (sw_win_holds_two): the copy's first part
     * outlasts the launch its rest waits for. A timed copy's first part
     * is then timed alone, its sample scaled to the whole copy by bytes,
     * and the copy waits no more than an untimed one. */
    bool short_rest =
        hi - lo <= u->len - sw_win_lead(w, u->len) && sw_win_holds_two(w, u->len);
    bool part_timed = timed && pinned && short_rest;
    if (timed && pinned && !part_timed) {
        c = CUDA_SUCCESS; /* all of it waits, and is timed then */
        lo = 0;
        hi = u->len;
    } else if (timed && !pinned) {
        c = evict_blockers(w, e, at, u->len);
        if (c == CUDA_SUCCESS)
            timer = sw_timer_start(w->timers, sw_win_tag(ui, u, SW_COST_COPY), w->side);
        if (c == CUDA_SUCCESS)
            c = copy_part(w, u, at, 0, u->len);
        lo = hi = 0;
    } else {
        if (part_timed)
            timer = sw_timer_start(w->timers, sw_win_tag_part(ui, u, u->len - (hi - lo)),
                                   w->side);
        c = copy_part(w, u, at, 0, lo);
        if (c == CUDA_SUCCESS)
            c = copy_part(w, u, at, hi, u->len);
        if (c == CUDA_SUCCESS && !pinned) {
            c = evict_blockers(w, e, at, u->len);
            if (c == CUDA_SUCCESS)
                c = copy_part(w, u, at, lo, hi);
            lo = hi = 0;
        }
    }
    if (c != CUDA_SUCCESS) {
        sw_timer_drop(w->timers, timer);
        return NULL;
    }
    sw_timer_stop(w->timers, timer, w->side);
    if (linked != u->linked) {
        sw_cost_forget(&u->cost, SW_COST_COPY); /* another placement: see sw_win_time_in_place */
        u->linked = linked;
    }
    if (linked < u->len && !u->said_partly) {
        sw_debug("range 0x%llx +%llu is partly on the device: %llu bytes of its copy cross "
                 "the link",
                 (unsigned long long)u->start, (unsigned long long)u->len,
                 (unsigned long long)linked);
        u->said_partly = true;
    }
    if (!filled(w, e, ui, at, hi == lo))
        return NULL;
    e->unit = ui;
    e->off = at;
    e->ahead = ahead;
    e->nread = 0;
    e->rest_at = lo;
    e->rest_len = hi - lo;
    w->unfinished += e->rest_len > 0;
    e->timed = timed && !part_timed && hi > lo;
    u->entry = (int)(e - w->entries);
    w->head = at + sw_win_span(u);
    __atomic_add_fetch(&w->live, 1, __ATOMIC_RELAXED);
    /* A copy whose rest waits for the launch before it idles the link
     * through that launch, as one made at its own launch does: it repays
     * only where the window was made one copy for launches short beside
     * a copy (a window fitted to one 8 MiB segment beside 5.06 MiB
     * layers, counting such copies, was kept: 24 layers under 49 MiB,
     * 1850.1 us a step against 1657.1 given back; simgpu, 2026-11-30),
     * or where the rest is short (short_rest). Not a bigger rest in a
     * window of two: 9 MiB layers in a 20 MiB window, each third copy
     * overlapping the first whole, kept a prefill's window two loops
     * longer, 4321.5 -> 5611.6 us a step. */
    bool made_ahead = ahead && (hi == lo || short_rest || w->short_launches);
    sw_worth_copied(&w->worth, u->len,
                    made_ahead || sw_win_place_ratio(w, u) > SW_COST_LINK_RATIO,
                    sw_win_holds_two(w, u->len));
    sw_stats_batch_begin();
    sw_stat_add(SW_STAT_window_bytes, (int64_t)u->len);
    sw_stat_add(SW_STAT_bytes_streamed, (int64_t)u->len);
    sw_stat_add(sw_dev_stat(w->dev, SW_STAT_dev0_bytes_streamed), (int64_t)u->len);
    sw_stat_add(ahead ? SW_STAT_prefetches : SW_STAT_prefetch_late, 1);
    sw_stats_batch_end();
    return e;
}

/* Whether the rest of e's copy may go now: no copy where it goes is
 * about to be read, nor still has launches of its visit to come, as many
 * as its visit before had (the layers of a segment, read one after
 * another, keep their copy). */
static bool rest_free(const win_t *w, const entry_t *e)
{
    for (int i = 0; i < w->top; i++) {
        const entry_t *o = &w->entries[i];
        const unit_t *ou = o->unit >= 0 && o != e ? &w->units[o->unit] : NULL;
        if (ou && overlaps(e->off + e->rest_at, e->rest_len, o->off, ou->len) &&
            (o->pins || ou->uses < ou->uses_last))
            return false;
    }
    return true;
}

/* The rests of fills in two parts whose space is free now: after the
 * readers of the copies there. A rest that cannot be queued leaves its
 * copy dropped (nothing reads it). Lock held. */
void sw_win_finish_fills(win_t *w)
{
    for (int i = 0; i < w->top && w->unfinished; i++) {
        entry_t *e = &w->entries[i];
        if (e->unit < 0 || !e->rest_len || !rest_free(w, e))
            continue;
        unit_t *u = &w->units[e->unit];
        int timer = -1;
        CUresult c = evict_blockers(w, e, e->off + e->rest_at, e->rest_len);
        if (c == CUDA_SUCCESS && e->timed)
            timer = sw_timer_start(w->timers, sw_win_tag(e->unit, u, SW_COST_COPY), w->side);
        if (c == CUDA_SUCCESS)
            c = copy_part(w, u, e->off, e->rest_at, e->rest_at + e->rest_len);
        if (c != CUDA_SUCCESS) {
            sw_timer_drop(w->timers, timer);
            sw_win_drop_entry(w, e);
            continue;
        }
        sw_timer_stop(w->timers, timer, w->side);
        e->rest_len = 0;
        w->unfinished--;
        if (!filled(w, e, e->unit, e->off, true))
            sw_win_drop_entry(w, e);
    }
}

/* Whether stream s may read e: it already does, or there is room to
 * record its read. */
bool sw_win_reader_ok(const entry_t *e, CUstream s)
{
    for (int i = 0; i < e->nread; i++)
        if (e->reader[i] == s)
            return true;
    return e->nread < READERS;
}

/* Whether launches' tensors spanning `parts` of a range read all of it,
 * near enough: else a copy would carry bytes only pointers spillway does
 * not see reach, if anything, and they read home anyway. */
bool sw_win_spans_all(uint64_t parts)
{
    return __builtin_popcountll(parts) >= SPANS_ALL;
}

/* Whether u's launches spanned it whole over each of its last two visits
 * (those not over yet count as whole). */
bool sw_win_spanned(const unit_t *u)
{
    return (!u->named_last || sw_win_spans_all(u->named_last)) &&
           (!u->named_prev || sw_win_spans_all(u->named_prev));
}

/* Whether a holds one tensor, as far as its learned starts tell. */
bool sw_win_one_tensor(const sw_alloc_t *a)
{
    return sw_segment_count(a) <= 1;
}

typedef struct {
    win_t *w;
    uint64_t now, room;
    int skip;            /* the unit being served */
    sw_alloc_t *best;
    uint64_t best_next;
} soonest_t;

/* Whether some of a is on the host: a tensor partly resident (its head
 * granules kept, its tail streamed) is copied too. */
static bool some_on_host(const sw_alloc_t *a)
{
    for (uint32_t i = 0; i < a->nchunks; i++)
        if (a->chunks[i].where == SW_ON_HOST)
            return true;
    return false;
}

static void find_soonest(sw_alloc_t *a, void *arg)
{
    soonest_t *f = arg;
    const sw_chunk_t *c = &a->chunks[0];
    if (a->dev != f->w->dev || !sw_win_one_tensor(a) || a->size > f->room ||
        !sw_learn_state(c).loop || !some_on_host(a))
        return;
    uint64_t next = sw_learn_next_use(c, f->now);
    if (next == UINT64_MAX || (f->best && next >= f->best_next))
        return;
    int ui = sw_win_unit_find(f->w, a->va);
    if (ui == f->skip || (ui >= 0 && (f->w->units[ui].entry >= 0 || f->w->units[ui].cheap)) ||
        !sw_win_streamable(f->w, a->va, a->size))
        return;
    f->best = a;
    f->best_next = next;
}

/* Where the chain does not know what comes after ui yet (a range that
 * has just moved to the host has no successor until the loop comes
 * round), the host allocation of one tensor its learned schedule says is
 * used soonest: its unit, or -1. */
static int soonest(win_t *w, int ui, uint64_t now, uint64_t room)
{
    soonest_t f = {.w = w, .now = now, .room = room, .skip = ui};
    sw_table_each(w->table, find_soonest, &f);
    return f.best ? sw_win_unit_get(w, f.best->va, f.best->size) : -1;
}

/* The unit used after u's coming use, as last time: one whose copy is in
 * the window is about to be read again within its visit, any other
 * begins a visit. A visit of one use, or of uses with nothing between
 * (the layers of a segment, one after another), knows only one. */
static int after(const unit_t *u, bool opens)
{
    int mine = opens ? u->next : u->next_within, other = opens ? u->next_within : u->next;
    return mine >= 0 ? mine : other;
}

/* Whether u's own launch would copy it (sw_window_use): not where its last
 * visits named it in part, or wrote it and one of their launches named it
 * in part, or where it reads faster in place. */
static bool would_copy(win_t *w, unit_t *u)
{
    return sw_win_spanned(u) && !(u->written && (u->parted & 6)) &&
           !sw_win_cheaper_in_place(w, u);
}

/* The chain: the ranges used after ui last time, copied ahead while the
 * window has room for them beside ui's copy; in a window too small for
 * two copies of ui, in ui's room too, where the next copy's rest waits
 * for ui's launch (sw_win_fill): one copy and a part's room is enough to
 * keep the link busy while each launch runs. A copy the chain meets in
 * the window is read before what follows it: its room is not there to
 * fill. */
void sw_win_copy_ahead(win_t *w, int ui, uint64_t now)
{
    uint64_t len = sw_win_span(&w->units[ui]), room = 2 * len <= w->size ? w->size - len : w->size;
    int v = after(&w->units[ui], w->units[ui].first);
    if (v < 0)
        v = soonest(w, ui, now, room);
    for (int k = 0; k < LOOKAHEAD && v >= 0 && v != ui; k++) {
        unit_t *u = &w->units[v];
        bool held = u->entry >= 0;
        int following = after(u, !held);
        if (held) {
            room -= u->len < room ? u->len : room;
        } else if (would_copy(w, u)) {
            if (u->len > room || !sw_win_streamable(w, u->start, u->len) ||
                !sw_win_fill(w, v, true))
                break;
            room -= u->len;
        }
        v = following;
    }
}

/* s comes after ev: on the GPU, or else, outside a capture, because the
 * host waited for ev. On failure (neither could be done) the driver's
 * last error. */
CUresult sw_win_order_after(win_t *w, CUstream s, CUevent ev)
{
    const sw_real_t *r = sw_real();
    CUresult c = r->cuStreamWaitEvent(s, ev, 0);
    if (c == CUDA_SUCCESS || w->origin)
        return c;
    return r->cuEventSynchronize(ev);
}

/* Home in [lo, lo + len) is about to be read or written in place by work
 * on s: every copy of an overlapping range but `keep` is dropped, with s
 * after its fill (which reads home) and after the launches that read it
 * (with their copies home). false, dropping nothing more, if s cannot be
 * ordered so; a copy about to be read (pinned) is left alone. */
bool sw_win_drop_overlaps(win_t *w, uint64_t lo, uint64_t len, int keep, CUstream s)
{
    for (int i = 0; i < w->top; i++) {
        entry_t *e = &w->entries[i];
        if (e->unit < 0 || e->unit == keep || e->pins ||
            !overlaps(lo, len, w->units[e->unit].start, w->units[e->unit].len))
            continue;
        if (sw_win_order_after(w, s, e->filled) != CUDA_SUCCESS)
            return false;
        for (int k = 0; k < e->nread; k++)
            if (e->reader[k] != s && sw_win_order_after(w, s, e->read[k]) != CUDA_SUCCESS)
                return false;
        /* Its space is free at once, but only s waited for its readers:
         * the next fill waits for every application stream, or in a
         * capture for the origin (sw_win_after_app). */
        sw_win_drop_entry(w, e);
    }
    return true;
}

/* sw_win_drop_overlaps for work about to write home in place: a copy it could
 * not drop would be read, stale, by later rewritten launches. A capture
 * is failed; eagerly only a wait that failed twice leaves one (logged). */
void sw_win_drop_for_write(win_t *w, uint64_t lo, uint64_t len, CUstream s)
{
    if (sw_win_drop_overlaps(w, lo, len, -1, s))
        return;
    if (w->origin)
        sw_win_break_capture(w);
    else
        sw_error("cannot order work after the window's copies of 0x%llx +%llu: they may go stale",
                 (unsigned long long)lo, (unsigned long long)len);
}

/* Whether e's way home is one kernel, spillway_way_home: its copy's home
 * fingerprint is known and it was never found written. */
bool sw_win_homes_in_one(const win_t *w, const entry_t *e)
{
    const unit_t *u = &w->units[e->unit];
    return w->fp_on && u->fp_known && !u->written;
}

/* Queues on s, right after the launch that read e, e's way home if that
 * launch changed it (see "home" in window.c), after the range's previous
 * copy home on another stream. uw, given only where
 * sw_win_homes_in_one(w, e), e's range is whole words and no span of uw
 * reaches its home: the stored-pointer look, in the same kernel. Lock
 * held. */
CUresult sw_win_send_home(win_t *w, entry_t *e, CUstream s, const sw_unwindow_t *uw)
{
    const sw_real_t *r = sw_real();
    int ui = e->unit;
    unit_t *u = &w->units[ui];
    CUdeviceptr copy = w->base + e->off;
    CUresult c = CUDA_SUCCESS;
    if (!u->homed && r->cuEventCreate(&u->homed, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
        u->homed = NULL;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (u->homed_on && u->homed_on != s)
        c = r->cuStreamWaitEvent(s, u->homed, 0);
    CUdeviceptr changed = (CUdeviceptr)(uintptr_t)&w->changed[ui];
    if (c == CUDA_SUCCESS && (!w->fp_on || !u->fp_known)) {
        c = copy_runs(w, u->start, copy, u->len, true, s);
        if (c == CUDA_SUCCESS) {
            sw_stat_add(SW_STAT_bytes_written_back, (int64_t)u->len);
            /* home's fingerprint is now the copy's: taken on the way */
            u->fp_known = w->fp_on &&
                          sw_fp_queue(w->dev, copy, u->len, fp_home(w, ui), s) == CUDA_SUCCESS;
        }
    } else if (c == CUDA_SUCCESS && sw_win_homes_in_one(w, e)) {
        /* One kernel, which copies home on a difference at one block's
         * speed: the first change found, after which u is written. */
        if (uw) {
            sw_unwindow_home_t a = {*uw, copy, u->start, u->len, fp_home(w, ui), fp_acc(w, ui),
                                    changed};
            c = sw_fp_unwindow_home(w->dev, &a, s);
        } else {
            c = sw_fp_way_home(w->dev, copy, u->start, u->len, fp_home(w, ui), fp_acc(w, ui),
                               changed, s);
        }
    } else if (c == CUDA_SUCCESS) {
        c = sw_fp_queue(w->dev, copy, u->len, fp_now(w, ui), s);
        if (c == CUDA_SUCCESS)
            c = sw_fp_copy_if_changed(w->dev, copy, u->start, u->len, fp_home(w, ui), fp_now(w, ui),
                                      changed, s);
        /* Home now holds the copy's bytes either way. */
        if (c == CUDA_SUCCESS)
            c = r->cuMemcpyDtoDAsync_v2(fp_home(w, ui), fp_now(w, ui), SW_FP_BYTES, s);
    }
    if (c == CUDA_SUCCESS && (c = r->cuEventRecord(u->homed, s)) == CUDA_SUCCESS)
        u->homed_on = s;
    return c;
}

/* sw_win_send_home could not queue e's way home on s, or only part of it: the
 * host takes it home itself, so no byte the launch wrote is lost. It
 * waits for the whole context, not only s: an earlier copy home of the
 * range on another stream (the chain sw_win_send_home could not wait for) must
 * not land after this one. Part of sw_win_send_home may have run, so home's
 * fingerprint is no longer known. In a capture nothing can wait: it
 * fails. Lock held. */
void sw_win_home_by_host(win_t *w, entry_t *e, CUstream s)
{
    const sw_real_t *r = sw_real();
    unit_t *u = &w->units[e->unit];
    u->fp_known = false;
    if (w->origin) {
        sw_win_break_capture(w);
        return;
    }
    /* A capture the window does not serve may run elsewhere: a context
     * synchronization would invalidate it, so then only s is waited for. */
    CUresult c = sw_capturing() ? r->cuStreamSynchronize(s) : r->cuCtxSynchronize();
    if (c == CUDA_SUCCESS)
        c = copy_runs(w, u->start, w->base + e->off, u->len, true, NULL);
    if (c != CUDA_SUCCESS)
        sw_error("range 0x%llx: its window copy at 0x%llx could not go home",
                 (unsigned long long)u->start, (unsigned long long)(w->base + e->off));
}

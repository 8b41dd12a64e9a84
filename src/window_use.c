/*
 * The streaming window at a launch: whether each range an argument points
 * into is served from a copy (sw_window_use: it recurs with the loop, the
 * launches name all of it, it fits, a copy pays), and after the launch is
 * issued, its copies' way home, the check for pointers stored into them,
 * and the reads recorded (sw_window_read). Per thread, `pending` holds what
 * the launch being issued reads.
 */
#include "window.h"

#include <string.h>

static __thread struct {
    /* The window the launch reads copies of or is timed by, its device's:
     * one at most, counted among its holders until sw_window_read (hold). */
    win_t *w;
    int n;
    int e[SW_WINDOW_MAX_USES];
    bool waited; /* one of them had not landed when the launch was issued */
    int nspans;  /* what else the launch could write (sw_window_spans) */
    bool timed;  /* w's timer `timer` times the launch, read in place */
    int timer;
    int served;  /* w's timer of the launch served, with its way home; -1 none */
    uint64_t lo[SW_UNWINDOW_SPANS], len[SW_UNWINDOW_SPANS];
} pending = {.served = -1}; /* entries the launch being issued on this thread reads */

/* Counts this thread's launch among w's holders, once. Lock held. */
static void hold(win_t *w)
{
    if (!pending.w) {
        pending.w = w;
        __atomic_add_fetch(&w->holders, 1, __ATOMIC_RELAXED);
    }
}

/* Times this launch of ui, read in place on s (window_cost.c), unless it
 * is timed already or holds another device's window. */
static void time_in_place(win_t *w, int ui, CUstream s)
{
    int i = sw_win_time_in_place(w, ui, s, !pending.timed && (!pending.w || pending.w == w));
    if (i < 0)
        return;
    pending.timed = true;
    pending.timer = i;
    hold(w);
}

/* Whether a visit of u begun `now` recurs with the loop: one of its
 * latest visits began one loop period back (within 1/8), or the one
 * before ended there, so it is worth a copy each time. Visits, not
 * launches, are remembered: the layers of a segment of many tensors, read
 * one after another, are one visit, and a loop ago lies past their uses;
 * and until the loop is known a visit has no end, so its first use may
 * lie two loops back where its last lies one. A range visited twice a
 * step (a weight read forward and updated) recurs too. A later use of the
 * visit takes its first's verdict. */
static bool one_loop(uint64_t gap, uint64_t period)
{
    uint64_t d = gap > period ? gap - period : period - gap;
    return period && d * 8 <= period;
}

static bool recurs(unit_t *u, uint64_t now, uint64_t period)
{
    if (!u->first)
        return u->recurring;
    bool yes = u->ended && one_loop(now - u->ended, period);
    for (int i = 0; i < RECALL && u->used[i] && period; i++)
        yes |= one_loop(now - u->used[i], period);
    memmove(u->used + 1, u->used, (RECALL - 1) * sizeof u->used[0]);
    u->used[0] = now;
    u->recurring = yes;
    return yes;
}

/* Whether u, a whole allocation, is read once a loop by its chunks' own
 * history (their learned loop): one just moved to the host streams from
 * its first use there, where u's record of uses starts empty. Not a
 * segment of several tensors a pointer table reaches part of: its copy
 * would carry the tensors only the table reads, which read home anyway
 * (window.c). 256 x 2 MiB layers eight to a 16 MiB segment, every one
 * named, under 288 MiB: 1.37x the link bound read in place, 1.29x so
 * streamed (simgpu, 2026-11-30). */
static bool loops_whole(const win_t *w, const unit_t *u, uint64_t period)
{
    const sw_chunk_t *c = sw_table_lookup(w->table, u->start);
    if (!c || c->alloc->va != u->start || c->alloc->size != u->len ||
        !one_loop(sw_learn_state(c).loop, period))
        return false;
    if (sw_win_one_tensor(c->alloc))
        return true;
    for (uint32_t i = 0; i < c->alloc->nchunks; i++)
        if (sw_chunk_pointed(&c->alloc->chunks[i]))
            return false;
    return true;
}

/* The launches of u's visit ending now, a loop of `period` known: where
 * uses joined it before any loop was known, it may span several loops,
 * and each had a share of them. A range read in place in the first step
 * and at the second's start counted two, one visit's: the rest of a copy
 * ahead over its copy waited for a second launch that never came, and
 * the copy was made again at its own launch (24 layers of 5.06 MiB under
 * 48 MiB: the fourth step 1746.6 us, 1624.0 with this and the chain's
 * fallback to partly resident tensors, window_copy.c; simgpu). A segment
 * of twenty tensors so spans two loops with forty. */
static uint16_t visit_share(const unit_t *u, uint64_t period)
{
    if (!u->unsplit)
        return u->uses;
    uint64_t loops = 1 + (u->latest - u->began + period / 2) / period;
    return (uint16_t)(u->uses / loops ? u->uses / loops : 1);
}

/* A use `now` of u, naming `parts`: a visit is the uses of u within a
 * quarter of the loop of each other (the layers of a segment, one after
 * another); what the two before named, and how many launches the one
 * before made, are kept. */
static void visit(unit_t *u, uint64_t parts, uint64_t now, uint64_t period)
{
    u->first = !u->latest;
    if (period && u->latest && now - u->latest > period / 4) {
        u->visits++;
        u->first = true;
        sw_win_session_end(u);
        u->named_prev = u->named_last;
        u->named_last = u->named;
        u->named = 0;
        u->parted = (uint8_t)(u->parted << 1 & 6);
        u->uses_last = visit_share(u, period);
        u->unsplit = false;
        u->uses = 0;
        u->ended = u->latest;
    }
    if (u->first)
        u->began = now;
    if (u->latest != now && u->uses < UINT16_MAX) {
        u->unsplit |= u->latest && !period;
        u->uses++;
    }
    u->latest = now;
    u->named |= parts;
    u->parted |= !sw_win_spans_all(parts);
}

bool sw_window_use(int dev, uint64_t start, uint64_t len, uint64_t parts, uint64_t now,
                   uint64_t period, CUstream s, uint64_t *copy, bool *written)
{
    win_t *w = sw_win_get(dev);
    /* One launch reads one window, its device's. */
    if (!w || (pending.w && pending.w != w))
        return false;
    pthread_mutex_lock(&w->lock);
    bool ok = false;
    /* In a capture, only the stream the window serves (w->origin). */
    if (sw_capturing() && w->origin != s) {
        pthread_mutex_unlock(&w->lock);
        return false;
    }
    sw_timers_settle(w->timers, sw_win_timed, w);
    int ui = sw_win_unit_get(w, start, len), timed_ui = -1;
    if (ui < 0 || pending.n == SW_WINDOW_MAX_USES)
        goto out;
    unit_t *u = &w->units[ui];
    if (u->len != len) { /* a new segment start split it: a new shape */
        if (u->entry >= 0 && w->entries[u->entry].pins)
            goto out;
        if (!sw_win_drop_overlaps(w, u->start, u->len, -1, s))
            goto out;
        u->len = len;
        u->fp_known = false;
        u->named = u->named_last = u->named_prev = 0; /* 64ths of another length */
        u->parted = 0;
    }
    if (w->fp_on && !u->written && __atomic_load_n(&w->changed[ui], __ATOMIC_RELAXED)) {
        u->written = true;
        sw_debug("range 0x%llx +%llu is written by its kernels: its copies go home when changed",
                 (unsigned long long)u->start, (unsigned long long)u->len);
    }
    if (w->fp_on && !u->escapes && __atomic_load_n(&w->escaped[ui], __ATOMIC_RELAXED)) {
        u->escapes = true;
        sw_info("allocation 0x%llx +%llu: a kernel stored a pointer into its window copy; it "
                "is read at its own address from now on",
                (unsigned long long)u->start, (unsigned long long)u->len);
    }
    /* A copy whose home was written while a launch on another thread held
     * it is older than home: it goes once that launch's way home is
     * queued (unpin), and until then home is read in place. */
    if (u->escapes || (u->entry >= 0 && w->entries[u->entry].stale))
        goto out;
    /* A copy ahead still in two parts is finished now if it can be; else
     * it is dropped, and this launch copies anew or reads in place. */
    if (u->entry >= 0 && w->entries[u->entry].rest_len) {
        sw_win_finish_fills(w);
        if (w->entries[u->entry].rest_len && !sw_win_drop_overlaps(w, start, len, -1, s))
            goto out;
    }
    if (!sw_win_drop_overlaps(w, start, len, ui, s))
        goto out;
    /* What a capture records is replayed as a loop by construction. A
     * copy already made serves every launch of the visit that made it
     * (the layers of a shared segment, one after another), recurring or
     * not: it is paid for. */
    visit(u, parts, now, period);
    /* Read in place below, the launch is timed (core/cost.c). */
    timed_ui = ui;
    if (!recurs(u, now, period) && u->entry < 0 && !w->origin && !loops_whole(w, u, period))
        goto out;
    /* A range its last visits' launches did not span whole (a segment whose
     * other tensors only a pointer table reaches) is read in place: a
     * copy moves all of it, and each tensor read at home moves only what
     * it reads. The same holds of each launch in a capture, where a copy
     * serves one launch, and of a range its readers write, whose copy
     * goes home whole after each launch that changes it (one layer's
     * update in a segment of five). */
    bool whole = w->origin || u->written ? sw_win_spans_all(parts) : sw_win_spanned(u);
    if (!whole)
        goto out;
    if (len > w->size)
        goto out;
    /* A copy made serves, paid for; none is made of a range a visit read
     * in place faster than its copy took. */
    if (u->entry < 0 && sw_win_cheaper_in_place(w, u))
        goto out;
    /* In a capture a copy serves the one launch it is made for: a node of
     * the graph may be changed after it is instantiated to write home in
     * place (cuGraphExecKernelNodeSetParams, graphnodes.c), and every later
     * node must then read what it wrote. So each use copies home again,
     * after the readers of the copy before (sw_win_evict). */
    if (w->origin && u->entry >= 0 && !w->entries[u->entry].pins &&
        sw_win_evict(w, &w->entries[u->entry]) != CUDA_SUCCESS)
        goto out;
    if (w->last >= 0 && w->last != ui) {
        unit_t *before = &w->units[w->last];
        *(before->first ? &before->next : &before->next_within) = ui;
    }
    w->last = ui;
    /* Every copy this use queues reads home after what the application
     * issued so far, which may write it. */
    bool ordered = sw_win_after_app(w) == CUDA_SUCCESS;
    if (u->entry < 0 && ordered)
        sw_win_fill(w, ui, false);
    entry_t *e = u->entry >= 0 ? &w->entries[u->entry] : NULL;
    if (!e || !sw_win_reader_ok(e, s))
        goto out;
    const sw_real_t *r = sw_real();
    /* In a capture nothing has run: the replay must always wait. */
    bool landed = !w->origin && r->cuEventQuery(e->filled) == CUDA_SUCCESS;
    if (!landed && r->cuStreamWaitEvent(s, e->filled, 0) != CUDA_SUCCESS)
        goto out;
    if (e->ahead)
        sw_stat_add(SW_STAT_prefetch_hits, 1);
    pending.waited |= !landed;
    e->ahead = false;
    e->pins++;
    pending.e[pending.n++] = u->entry;
    hold(w);
    *copy = w->base + e->off;
    *written = u->written;
    u->served_at = now;
    /* Its launch and way home, timed from here, after its copy landed
     * (window_cost.c, sw_win_served_share); a launch reading one copy. */
    if (pending.n == 1 && sw_win_can_time(w) && u->cost.seen[SW_COST_SERVED] < SERVED_SAMPLES)
        pending.served = sw_timer_start(w->timers, sw_win_tag(ui, u, SW_COST_SERVED), s);
    __atomic_store_n(&w->served_at, now, __ATOMIC_RELAXED);
    __atomic_store_n(&w->idle_replays, 0, __ATOMIC_RELAXED);
    ok = true;
    /* Not into a graph: a copy ahead is a guess, and a graph would make
     * it at every replay, reading an allocation its own kernels may never
     * use, which the program may have freed by then. */
    if (ordered && !w->origin)
        sw_win_copy_ahead(w, ui, now);
out:
    if (ok && w->units[ui].session && w->units[ui].session_visit == w->units[ui].visits)
        w->units[ui].broken = true; /* this visit reads a copy too */
    if (!ok && timed_ui >= 0)
        time_in_place(w, timed_ui, s);
    pthread_mutex_unlock(&w->lock);
    return ok;
}

/* A launch that was to read e has queued its way home, or will not read
 * it: a copy gone stale while pinned (sw_win_home_changed) goes now. */
static void unpin(win_t *w, entry_t *e)
{
    if (--e->pins || !e->stale)
        return;
    w->units[e->unit].fp_known = false;
    sw_win_drop_entry(w, e);
}

void sw_window_unuse(uint64_t start, CUstream s)
{
    win_t *w = pending.w;
    if (!pending.n)
        return;
    pthread_mutex_lock(&w->lock);
    int ui = sw_win_unit_find(w, start);
    int ei = ui >= 0 ? w->units[ui].entry : -1;
    for (int k = 0; ei >= 0 && k < pending.n; k++)
        if (pending.e[k] == ei) {
            pending.e[k] = pending.e[--pending.n];
            unpin(w, &w->entries[ei]);
            sw_win_drop_for_write(w, start, w->units[ui].len, s);
            break;
        }
    /* The launch reads home instead, and may write it: home's fingerprint
     * is no longer known, or a later copy that a served kernel brings
     * back to the old bytes would compare equal and not go home. */
    if (ui >= 0)
        sw_win_home_changed(w, ui);
    pthread_mutex_unlock(&w->lock);
}

void sw_window_spans(const uint64_t *lo, const uint64_t *len, int n)
{
    pending.nspans = n < SW_UNWINDOW_SPANS ? n : SW_UNWINDOW_SPANS;
    memcpy(pending.lo, lo, (size_t)pending.nspans * sizeof *lo);
    memcpy(pending.len, len, (size_t)pending.nspans * sizeof *len);
}

bool sw_window_guarded(int dev)
{
    const win_t *w = sw_win_get(dev);
    return w && w->fp_on;
}

/* ESCAPED POINTERS. A launch served from copies holds window addresses
 * in its arguments, and may store pointers derived from them (a grouped
 * GEMM's set-up kernel fills a table of per-expert pointers). A later
 * kernel reading that table would reach the copy after its space was
 * reused. So right after the launch, on its stream, spillway_unwindow
 * (in the first copy's way home, one kernel with it, where fusable():
 * one launch fewer after each served launch) puts every such address it
 * finds in the spans the launch could write (serve.c: 64 KiB from each
 * of its pointer arguments) back to the same offset in the copy's home,
 * which is current once the copy went home just after; and it flags the
 * unit, which is read at its own address from then on. Should the kernel
 * not be queued, the units are never served again, and the host cannot
 * put back what the launch may have stored: that is said. Lock held. */
static void unwindow(win_t *w, const sw_unwindow_t *a, CUstream s)
{
    if (sw_fp_unwindow(w->dev, a, s) == CUDA_SUCCESS)
        return;
    for (int k = 0; k < pending.n; k++)
        w->units[w->entries[pending.e[k]].unit].escapes = true;
    sw_error("cannot queue the check for pointers stored into window copies: a pointer a kernel "
             "stored may reach a reused copy");
}

/* The look's parameter for this thread's launch (pending). Lock held. */
static void unwindow_of(const win_t *w, sw_unwindow_t *a)
{
    *a = (sw_unwindow_t){.nspans = (uint32_t)pending.nspans, .found = w->escaped};
    for (int i = 0; i < pending.nspans; i++) {
        a->lo[i] = pending.lo[i];
        a->len[i] = pending.len[i];
    }
    for (int k = 0; k < pending.n; k++) {
        const entry_t *e = &w->entries[pending.e[k]];
        a->copy[k] = w->base + e->off;
        a->copy_len[k] = w->units[e->unit].len;
        a->home[k] = w->units[e->unit].start;
        a->unit[k] = (uint32_t)e->unit;
    }
    a->ncopies = (uint32_t)pending.n;
}

/* Whether the look can run in e's way home, one kernel with it
 * (spillway_unwindow_home): that is spillway_way_home, the copy is whole
 * words, so that the kernel's fingerprint puts back every span word in
 * it, and no span reaches its home, which the copy home overwrites. */
static bool fusable(const win_t *w, const entry_t *e, const sw_unwindow_t *a)
{
    const unit_t *u = &w->units[e->unit];
    if (!sw_win_homes_in_one(w, e) || u->len % 8)
        return false;
    for (uint32_t i = 0; i < a->nspans; i++)
        if (overlaps(a->lo[i], a->len[i], u->start, u->len))
            return false;
    return true;
}

/* The copies this thread's launch read (pending): s reads them now. */
static void read_copies(CUstream s, bool issued)
{
    win_t *w = pending.w;
    if (!pending.n) {
        pending.nspans = 0;
        if (pending.served >= 0) {
            pthread_mutex_lock(&w->lock);
            sw_timer_drop(w->timers, pending.served);
            pthread_mutex_unlock(&w->lock);
            pending.served = -1;
        }
        return;
    }
    const sw_real_t *r = sw_real();
    pthread_mutex_lock(&w->lock);
    int timer = sw_win_time_home(w, pending.e, pending.n, s);
    sw_unwindow_t look;
    const sw_unwindow_t *fused = NULL;
    if (pending.nspans) {
        unwindow_of(w, &look);
        if (fusable(w, &w->entries[pending.e[0]], &look))
            fused = &look;
        else
            unwindow(w, &look, s);
    }
    pending.nspans = 0;
    for (int k = 0; k < pending.n; k++) {
        entry_t *e = &w->entries[pending.e[k]];
        const sw_unwindow_t *uw = k == 0 ? fused : NULL;
        if (sw_win_send_home(w, e, s, uw) != CUDA_SUCCESS) {
            /* The look may not have run: alone, then (twice does no harm). */
            if (uw)
                unwindow(w, uw, s);
            sw_win_home_by_host(w, e, s);
        }
        int i = 0;
        while (i < e->nread && e->reader[i] != s)
            i++;
        if (i == e->nread) {
            if (!e->read[i] &&
                r->cuEventCreate(&e->read[i], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
                e->read[i] = NULL;
            e->reader[i] = s;
        }
        /* Without its read recorded, a fill could not wait for this launch
         * and its copy home: the host waits for them here instead (rare),
         * which in a capture fails it. */
        if (!e->read[i] || r->cuEventRecord(e->read[i], s) != CUDA_SUCCESS) {
            if (w->origin)
                sw_win_break_capture(w);
            else
                r->cuStreamSynchronize(s);
        } else if (i == e->nread) {
            e->nread++;
        }
        unpin(w, e);
    }
    /* Fills ahead waiting for these reads may go now. */
    sw_win_finish_fills(w);
    if (timer >= 0)
        sw_timer_stop(w->timers, timer, s);
    if (pending.served >= 0 && issued && pending.n == 1)
        sw_timer_stop(w->timers, pending.served, s);
    else if (pending.served >= 0)
        sw_timer_drop(w->timers, pending.served);
    pending.served = -1;
    sw_stat_add(SW_STAT_rewritten_launches, 1);
    if (pending.waited)
        sw_stat_add(SW_STAT_launches_waited, 1);
    pending.n = 0;
    pending.waited = false;
    pthread_mutex_unlock(&w->lock);
}

void sw_window_read(CUstream s, bool issued)
{
    win_t *held = pending.w;
    if (pending.timed) {
        pthread_mutex_lock(&held->lock);
        if (issued)
            sw_timer_stop(held->timers, pending.timer, s);
        else
            sw_timer_drop(held->timers, pending.timer);
        pthread_mutex_unlock(&held->lock);
        pending.timed = false;
    }
    read_copies(s, issued);
    /* The last touch of held: once its holders reach 0 it may be freed. */
    if (held) {
        pending.w = NULL;
        __atomic_sub_fetch(&held->holders, 1, __ATOMIC_RELEASE);
    }
}

/*
 * The streaming window: the two ways each range is read, timed on the GPU
 * with events (timers.c) and weighed by core/cost.c. A visit read in place
 * is timed launch by launch and summed; a copy, on its own. Its answers
 * decide which ranges are read in place (window_use.c, window_copy.c) and
 * how much a window must copy to repay its room (window.c).
 */
#include "window.h"

#include <math.h>

/* The bytes of [start, +len) on the host now: what its copy moves over
 * the link, and what a kernel reading all of it in place reads there. */
uint64_t sw_win_host_bytes(const win_t *w, uint64_t start, uint64_t len)
{
    uint64_t host = 0;
    for (uint64_t p = start; p < start + len;) {
        const sw_chunk_t *c = sw_table_lookup(w->table, p);
        if (!c)
            break;
        uint64_t end = c->va + c->size < start + len ? c->va + c->size : start + len;
        if (c->where == SW_ON_HOST)
            host += end - p;
        p = end;
    }
    return host;
}

/* Not in a capture: an event recorded there is a node of its graph, and
 * times nothing until a replay. */
bool sw_win_can_time(const win_t *w)
{
    return w->timers && !w->origin && !sw_capturing();
}

#define TAG_UNIT 0xffffu
#define TAG_ID 0xffffffu

#define TAG_SHARE 56 /* the bits of a part's share of its copy, in 255ths */

uint64_t sw_win_tag(int ui, const unit_t *u, sw_cost_kind_t k)
{
    return (uint64_t)ui | (uint64_t)(u->id & TAG_ID) << 16 | (uint64_t)u->session << 40 |
           (uint64_t)k << 48;
}

uint64_t sw_win_tag_part(int ui, const unit_t *u, uint64_t part)
{
    uint64_t share = part * 255 / u->len;
    return sw_win_tag(ui, u, SW_COST_COPY) | (share ? share : 1) << TAG_SHARE;
}

/* Ends u's session once its visit is over and every launch of it is
 * timed: the sum is a sample where none went untimed. */
void sw_win_session_end(unit_t *u)
{
    if (!u->session || u->session_visit == u->visits || u->settled < u->started)
        return;
    if (!u->broken && u->started)
        sw_cost_note(&u->cost, SW_COST_PLACE, u->sum_ms);
    u->session = 0;
}

/* Tells residency at most how far from its start a visit of u reads
 * (core/policy.c, sure_data), where u is an allocation timed read in
 * place while wholly on the host: a kernel reads host memory no faster
 * than the best copy moved it (SW_COST_LINK_RATIO), so in that time it
 * read no more than that copy's rate moves. Its bytes past that are
 * slack to residency: a 16 MiB layer alone in a 20 MiB segment, read in
 * place in 337.5 us where the segment's copy takes 381.3, kept its 4 MiB
 * tail resident beside it, eight layers in 160 MiB where ten fit. */
static void note_read_span(const win_t *w, const unit_t *u)
{
    if (!u->cost.seen[SW_COST_PLACE] || u->place_linked != u->len || !(w->copy_rate > 0))
        return;
    sw_chunk_t *c = sw_table_lookup(w->table, u->start);
    if (!c || c->alloc->va != u->start || c->alloc->size != u->len)
        return;
    double span = u->cost.best[SW_COST_PLACE] * w->copy_rate;
    __atomic_store_n(&c->alloc->read_span, span < (double)u->len ? (uint64_t)span : u->len,
                     __ATOMIC_RELAXED);
}

void sw_win_timed(uint64_t tag, float ms, void *arg)
{
    win_t *w = arg;
    int ui = (int)(tag & TAG_UNIT);
    sw_cost_kind_t k = (sw_cost_kind_t)(tag >> 48 & 0xff);
    unit_t *u = ui < w->nunits ? &w->units[ui] : NULL;
    if (!u || !u->live || (u->id & TAG_ID) != (tag >> 16 & TAG_ID))
        return;
    if (k == SW_COST_COPY) {
        if (tag >> TAG_SHARE)
            ms = ms * 255.0f / (float)(tag >> TAG_SHARE);
        sw_cost_note(&u->cost, SW_COST_COPY, ms);
        sw_cost_rate_note(&w->copy_rate, u->linked, ms);
        note_read_span(w, u);
        return;
    }
    if (k == SW_COST_HOME || k == SW_COST_SERVED) {
        sw_cost_note(&u->cost, k, ms);
        return;
    }
    if (u->session != (uint8_t)(tag >> 40))
        return;
    u->settled++;
    if (ms > 0)
        u->sum_ms += ms;
    else
        u->broken = true;
    sw_win_session_end(u);
    note_read_span(w, u);
}

/* Times this launch of ui, read in place on s, as part of the visit being
 * timed; a visit's first launch begins one where u wants a sample. One
 * timer a launch: a launch reading two host ranges counts for the first
 * (too long for it: the copy is favoured, as before timing). */
int sw_win_time_in_place(win_t *w, int ui, CUstream s, bool may)
{
    unit_t *u = &w->units[ui];
    if (!u->session) {
        if (!u->first)
            return -1;
        /* Samples of another placement of the range time other bytes:
         * a layer half resident reads half as much in place. */
        uint64_t host = sw_win_host_bytes(w, u->start, u->len);
        if (host != u->place_linked) {
            sw_cost_forget(&u->cost, SW_COST_PLACE);
            u->place_linked = host;
            u->cheap = false;
        }
        if (!sw_cost_wants(&u->cost, SW_COST_PLACE) || !sw_win_can_time(w) || !may)
            return -1;
        u->session = ++w->sessions ? w->sessions : ++w->sessions;
        u->session_visit = u->visits;
        u->started = u->settled = 0;
        u->sum_ms = 0;
        u->broken = false;
    } else if (u->session_visit != u->visits) {
        return -1; /* the visit before, still settling */
    }
    int i = sw_win_can_time(w) && may && u->started < UINT16_MAX
                ? sw_timer_start(w->timers, sw_win_tag(ui, u, SW_COST_PLACE), s)
                : -1;
    if (i < 0) {
        u->broken = true;
        return -1;
    }
    u->started++;
    return i;
}

/* Times the way home on s after a launch served from the copies of
 * entries[0..n), where it read one, whose range wants a sample: the
 * timer, or -1. A launch reading several copies pays their ways home
 * together, which no one range's sample should show. */
int sw_win_time_home(win_t *w, const int *entries, int n, CUstream s)
{
    if (n != 1 || !sw_win_can_time(w))
        return -1;
    int ui = w->entries[entries[0]].unit;
    unit_t *u = &w->units[ui];
    if (!sw_cost_wants(&u->cost, SW_COST_HOME))
        return -1;
    return sw_timer_start(w->timers, sw_win_tag(ui, u, SW_COST_HOME), s);
}

/* The launches of u's visits, each paying a way home when served: the
 * visit before's, or this one's if more. */
static uint32_t visit_uses(const unit_t *u)
{
    return u->uses > u->uses_last ? u->uses : u->uses_last;
}

/* Whether w has room for u's copy beside another as big: else each copy
 * of u waits for the readers of the one before. */
static bool ahead(const win_t *w, const unit_t *u)
{
    return sw_win_holds_two(w, u->len);
}

/* Whether u's two ways were timed with its range placed as it is now
 * (the bytes its copy carries over the link, linked). */
static bool placed_alike(const unit_t *u)
{
    return u->place_linked == u->linked;
}

/* u's time read in place over its copy's (sw_cost_ratio), where both
 * were timed with its range placed alike; 0 otherwise. */
double sw_win_place_ratio(const win_t *w, const unit_t *u)
{
    if (!placed_alike(u))
        return 0;
    return sw_cost_ratio(&u->cost, u->linked, w->copy_rate, visit_uses(u), ahead(w, u));
}

/* Whether u is read in place by its costs: a visit read there was faster
 * than one served from its copy. Said once. */
bool sw_win_cheaper_in_place(const win_t *w, unit_t *u)
{
    if (!placed_alike(u) ||
        !sw_cost_in_place(&u->cost, u->linked, w->copy_rate, visit_uses(u), ahead(w, u)))
        return false;
    if (!u->cheap) {
        double copy = sw_cost_copy_ms(&u->cost, u->linked, w->copy_rate);
        double home = sw_cost_home_ms(&u->cost, visit_uses(u));
        sw_stat_add(SW_STAT_ranges_read_in_place, 1);
        sw_info("device %d: allocation 0x%llx +%llu is read in place: a visit reads it there "
                "in %.1f us, its copy takes %.1f us and its %u launches' ways home %.1f us%s",
                w->dev, (unsigned long long)u->start, (unsigned long long)u->len,
                1e3 * u->cost.best[SW_COST_PLACE], 1e3 * copy, visit_uses(u), 1e3 * home,
                ahead(w, u) ? "" : ", one after the other (the window holds one copy)");
    }
    u->cheap = true;
    return true;
}


/* How many times its size w must copy a loop to repay its room, by the
 * ranges timed both ways (sw_cost_repaid), those read in place by their
 * costs too: they tell what the program's kernels are, and leaving them
 * out would leave a few slow samples to speak for them. Said when timing
 * lowers it. Lock held. */
double sw_win_repaid(void *arg)
{
    win_t *w = arg;
    int n = 0;
    for (int i = 0; i < w->nunits; i++) {
        const unit_t *u = &w->units[i];
        double ratio = u->live ? sw_win_place_ratio(w, u) : 0;
        if (ratio > 0)
            w->ratios[n++] = (float)ratio;
    }
    double times = sw_cost_repaid(w->ratios, n);
    if (times < SW_COST_REPAID && !w->said_repaid) {
        sw_info("device %d: the ranges the streaming window copies take longer read in place "
                "than the link rates make them: it repays its room from %.1f times its size "
                "copied a loop",
                w->dev, times);
        w->said_repaid = true;
    }
    return times;
}

/* The most w may copy in the loop of `period` before `now`
 * (sw_worth_ask_t.copyable): the bytes of each live range with any on
 * the host (a copy counts whole, sw_worth_copied, where part of it is
 * resident) not found faster read in place, times its visits begun in
 * that loop (at least one, as one not yet visited may be). Its ranges
 * are only those launches asked it to serve: one residency read in place
 * until now is none, so the sum is a bound only where the ranges found
 * faster in place outweigh it, and UINT64_MAX, no bound, elsewhere (9
 * checks of test_policies whose windows stream with gains failed without it:
 * a load pass's loop, the odd layers of two streams, 2026-12-02). Lock
 * held. */
uint64_t sw_win_copyable(void *arg, uint64_t now, uint64_t period)
{
    const win_t *w = arg;
    uint64_t bytes = 0, in_place = 0;
    for (int i = 0; i < w->nunits; i++) {
        const unit_t *u = &w->units[i];
        if (!u->live)
            continue;
        uint64_t visits = 0;
        for (int k = 0; k < RECALL && u->used[k] && u->used[k] + period > now; k++)
            visits++;
        uint64_t loop_bytes = u->len * (visits ? visits : 1);
        if (u->cheap)
            in_place += loop_bytes;
        else if (sw_win_host_bytes(w, u->start, u->len))
            bytes += loop_bytes;
    }
    return in_place > bytes ? bytes : UINT64_MAX;
}

/* The launches w served in the loop of `period` before `now`, each
 * timed with its way home on its stream once its copy landed (the
 * fastest sample of each range, times its visit's launches), over one
 * copy of the longest range they read at the best rate a copy reached:
 * how long the link would wait for them each loop in one copy's room
 * (SW_WORTH_ONE_COPY). Launches on several streams overlap, and count as
 * if they did not. HUGE_VAL where a range served in that loop was not
 * timed, or no copy was; and where a range was found faster read in
 * place: such a window may not repay its room, and a smaller one would
 * lower its own bar (25 x 16 MiB layers alone in 20 MiB segments under
 * 160 MiB: given back, 5852.2 us a step from step 9; kept at one copy,
 * 6438.0; simgpu, 2026-11-30). Lock held. */
sw_served_t sw_win_served_share(void *arg, uint64_t now, uint64_t period)
{
    const win_t *w = arg;
    sw_served_t s = {.share = HUGE_VAL, .most = HUGE_VAL};
    double ms = 0, visit, most_ms_per_byte = 0;
    const unit_t *longest = NULL;
    if (!(w->copy_rate > 0))
        return s;
    for (int i = 0; i < w->nunits; i++) {
        const unit_t *u = &w->units[i];
        if (u->live && u->cheap)
            return s;
        if (!u->live || !u->served_at || u->served_at + period < now)
            continue;
        if (!u->cost.seen[SW_COST_SERVED])
            return s;
        visit = (double)u->cost.best[SW_COST_SERVED] * visit_uses(u);
        ms += visit;
        if (visit / (double)u->len > most_ms_per_byte)
            most_ms_per_byte = visit / (double)u->len;
        if (!longest || u->len > longest->len)
            longest = u;
    }
    if (!longest)
        return s;
    const sw_chunk_t *c = sw_table_lookup(w->table, longest->start);
    s.longest = longest->len;
    s.grain = c ? c->size : 0;
    s.most = most_ms_per_byte * w->copy_rate;
    s.share = ms / ((double)longest->len / w->copy_rate);
    return s;
}

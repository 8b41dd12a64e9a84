/*
 * Residency policy: pure decisions over the table, returned as verdicts.
 * The mechanism (vmm.c, remap.c) acts on them; nothing here moves
 * memory.
 *
 * Two eviction orders over the same candidates (device chunks the current
 * launch does not hold):
 *
 *     LRU      oldest last use first        sw_policy_victims
 *     learned  furthest next use first      sw_policy_victims_learned
 *              (core/learn.c's schedule)
 *
 * Under a cyclic access pattern LRU evicts exactly the chunk needed next;
 * with a learned schedule the furthest next use is Belady's choice, the
 * optimum for a fixed cache. The same schedule tells prefetch which host
 * chunks are due soonest, and whether a touched host chunk will be read
 * often enough before it leaves to be worth one DMA.
 */
#include "../sw.h"

#include <stdlib.h>

typedef struct {
    sw_chunk_t **v;
    size_t n, cap;
    bool (*keep)(const sw_chunk_t *c, void *arg);
    void *arg;
    /* false: device chunks (eviction candidates); true: host chunks no
     * window slot holds (prefetch candidates). */
    bool host;
    bool oom;
} cands_t;

/* A device chunk policy may send home: not one the program asked to keep,
 * nor one that never moves. */
static bool could_go_home(const sw_chunk_t *c)
{
    return c->where == SW_ON_DEVICE && !c->resident && !c->fixed;
}

static bool wanted(const cands_t *cs, const sw_chunk_t *c)
{
    if (cs->host)
        return c->where == SW_ON_HOST && c->slot < 0;
    return could_go_home(c);
}

static void collect(sw_alloc_t *a, void *arg)
{
    cands_t *cs = arg;
    for (uint32_t i = 0; i < a->nchunks; i++) {
        sw_chunk_t *c = &a->chunks[i];
        if (!wanted(cs, c) || (cs->keep && cs->keep(c, cs->arg)))
            continue;
        if (cs->n == cs->cap) {
            size_t cap = cs->cap ? cs->cap * 2 : 256;
            sw_chunk_t **v = realloc(cs->v, cap * sizeof *v);
            if (!v) {
                cs->oom = true;
                return;
            }
            cs->v = v;
            cs->cap = cap;
        }
        cs->v[cs->n++] = c;
    }
}

/* Colder first: older last use, then fewer uses, then lower address. */
static int colder(const void *pa, const void *pb, void *unused)
{
    const sw_chunk_t *a = *(sw_chunk_t *const *)pa, *b = *(sw_chunk_t *const *)pb;
    const sw_sched_t sa = sw_learn_state(a), sb = sw_learn_state(b);
    if (sa.last_use != sb.last_use)
        return sa.last_use < sb.last_use ? -1 : 1;
    if (sa.uses != sb.uses)
        return sa.uses < sb.uses ? -1 : 1;
    return a->va < b->va ? -1 : a->va > b->va;
}

/* Needed later first: furthest predicted next use (unknown, UINT64_MAX,
 * is furthest), then fewer uses, then lower address. nowp: the uint64_t
 * launch sequence number the prediction is made at. */
static int later(const void *pa, const void *pb, void *nowp)
{
    const sw_chunk_t *a = *(sw_chunk_t *const *)pa, *b = *(sw_chunk_t *const *)pb;
    uint64_t now = *(const uint64_t *)nowp;
    uint64_t na = sw_learn_next_use(a, now), nb = sw_learn_next_use(b, now);
    if (na != nb)
        return na > nb ? -1 : 1;
    uint64_t ua = sw_learn_state(a).uses, ub = sw_learn_state(b).uses;
    if (ua != ub)
        return ua < ub ? -1 : 1;
    return a->va < b->va ? -1 : a->va > b->va;
}

/* A binary heap over v[0..n), first in order cmp at the root. Victims
 * are taken from it one at a time: building it is O(n) and each victim
 * O(log n), where sorting every candidate for the one or two chunks an
 * allocation needs cost O(n log n) each time. */
typedef struct {
    sw_chunk_t **v;
    size_t n;
    int (*cmp)(const void *, const void *, void *);
    void *ctx;
} heap_t;

static void sift_down(heap_t *h, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, best = i;
        if (l < h->n && h->cmp(&h->v[l], &h->v[best], h->ctx) < 0)
            best = l;
        if (r < h->n && h->cmp(&h->v[r], &h->v[best], h->ctx) < 0)
            best = r;
        if (best == i)
            return;
        sw_chunk_t *t = h->v[i];
        h->v[i] = h->v[best];
        h->v[best] = t;
        i = best;
    }
}

static void heap_build(heap_t *h)
{
    for (size_t i = h->n / 2; i-- > 0;)
        sift_down(h, i);
}

static sw_chunk_t *heap_pop(heap_t *h)
{
    sw_chunk_t *top = h->v[0];
    h->v[0] = h->v[--h->n];
    sift_down(h, 0);
    return top;
}

/* The shortest prefix, in order cmp, of the device chunks keep() does not
 * hold back that frees need bytes, cut to max. */
static size_t victims_by(const sw_table_t *t, uint64_t need,
                         bool (*keep)(const sw_chunk_t *c, void *arg), void *arg,
                         int (*cmp)(const void *, const void *, void *), void *ctx,
                         sw_chunk_t **out, size_t max, uint64_t *freed)
{
    *freed = 0;
    if (need == 0 || max == 0)
        return 0;
    cands_t cs = {.keep = keep, .arg = arg};
    sw_table_each(t, collect, &cs);
    /* On allocation failure the candidates found so far still give a
     * correct (if smaller) answer. */
    heap_t h = {.v = cs.v, .n = cs.n, .cmp = cmp, .ctx = ctx};
    heap_build(&h);
    size_t n = 0;
    while (h.n > 0 && n < max && *freed < need) {
        out[n] = heap_pop(&h);
        *freed += out[n++]->size;
    }
    free(cs.v);
    return n;
}

size_t sw_policy_victims(const sw_table_t *t, uint64_t need,
                         bool (*keep)(const sw_chunk_t *c, void *arg), void *arg,
                         sw_chunk_t **out, size_t max, uint64_t *freed)
{
    return victims_by(t, need, keep, arg, colder, NULL, out, max, freed);
}

size_t sw_policy_victims_learned(const sw_table_t *t, uint64_t need, uint64_t now,
                                 bool (*keep)(const sw_chunk_t *c, void *arg), void *arg,
                                 sw_chunk_t **out, size_t max, uint64_t *freed)
{
    return victims_by(t, need, keep, arg, later, &now, out, max, freed);
}

sw_verdict_t sw_policy_on_touch(const sw_chunk_t *c, uint64_t device_free, bool capturing)
{
    /* Promoting needs a device synchronization, which a capture forbids;
     * a fixed chunk never moves. */
    if (capturing || device_free < c->size || c->fixed)
        return SW_VERDICT_ZERO_COPY;
    return SW_VERDICT_PROMOTE;
}

/* Due sooner first: nearer predicted next use, then lower address. */
static int sooner(const void *pa, const void *pb, void *nowp)
{
    const sw_chunk_t *a = *(sw_chunk_t *const *)pa, *b = *(sw_chunk_t *const *)pb;
    uint64_t now = *(const uint64_t *)nowp;
    uint64_t na = sw_learn_next_use(a, now), nb = sw_learn_next_use(b, now);
    if (na != nb)
        return na < nb ? -1 : 1;
    return a->va < b->va ? -1 : a->va > b->va;
}

/* sw_policy_prefetch and sw_policy_fill: with `unknown`, chunks whose
 * next use is unknown come too, after the others. */
static size_t pick(const sw_table_t *t, uint64_t now, uint64_t horizon, bool unknown,
                   uint64_t bytes, bool (*keep)(const sw_chunk_t *c, void *arg), void *arg,
                   sw_chunk_t **out, size_t max)
{
    if (max == 0 || horizon == 0 || bytes == 0)
        return 0;
    cands_t cs = {.keep = keep, .arg = arg, .host = true};
    sw_table_each(t, collect, &cs);
    /* Only chunks due within the horizon. On allocation failure the
     * candidates found so far still give a correct (if shorter) list. */
    size_t m = 0;
    for (size_t i = 0; i < cs.n; i++) {
        uint64_t next = sw_learn_next_use(cs.v[i], now);
        if (next == UINT64_MAX ? unknown : next - now <= horizon) /* next > now always */
            cs.v[m++] = cs.v[i];
    }
    if (m > 1)
        qsort_r(cs.v, m, sizeof *cs.v, sooner, &now);
    /* Skip what does not fit rather than stop: a smaller chunk due a
     * little later still uses the copy engine's idle time. */
    size_t n = 0;
    for (size_t i = 0; i < m && n < max; i++) {
        if (cs.v[i]->size > bytes)
            continue;
        out[n++] = cs.v[i];
        bytes -= cs.v[i]->size;
    }
    free(cs.v);
    return n;
}

size_t sw_policy_prefetch(const sw_table_t *t, uint64_t now, uint64_t horizon, uint64_t bytes,
                          bool (*keep)(const sw_chunk_t *c, void *arg), void *arg,
                          sw_chunk_t **out, size_t max)
{
    /* An unknown next use is never due, whatever the horizon. */
    return pick(t, now, horizon, false, bytes, keep, arg, out, max);
}

size_t sw_policy_fill(const sw_table_t *t, uint64_t now, uint64_t bytes,
                      bool (*keep)(const sw_chunk_t *c, void *arg), void *arg, sw_chunk_t **out,
                      size_t max)
{
    return pick(t, now, UINT64_MAX, true, bytes, keep, arg, out, max);
}

typedef struct {
    const sw_chunk_t *hot;
    uint64_t now;
    bool (*keep)(const sw_chunk_t *c, void *arg);
    void *arg;
    sw_chunk_t *coldest;
    uint32_t coldest_heat;
} displace_t;

/* When the loop comes back to a chunk next (the start of its next
 * visit): due any moment when that lies up to an eighth of its loop in
 * the past (an estimate a little short), unknown (UINT64_MAX) when it
 * lies further back or no loop is known. */
static uint64_t next_visit(const sw_sched_t *s, uint64_t now)
{
    if (!s->loop || !s->visit || s->visit + s->loop + s->loop / 8 < now)
        return UINT64_MAX;
    return s->visit + s->loop;
}

static void find_coldest(sw_alloc_t *a, void *arg)
{
    displace_t *d = arg;
    bool young = d->now - a->born < SW_UNSEEN_GRACE;
    const sw_sched_t hs = sw_learn_state(d->hot);
    uint64_t hot_next = next_visit(&hs, d->now);
    for (uint32_t i = 0; i < a->nchunks; i++) {
        sw_chunk_t *c = &a->chunks[i];
        if (c->where != SW_ON_DEVICE || c->resident || c->fixed || c->size < d->hot->size)
            continue;
        const sw_sched_t s = sw_learn_state(c);
        if ((s.uses == 0 && (young || sw_chunk_pointed(c))) || (d->keep && d->keep(c, d->arg)))
            continue;
        /* Belady over visits: a chunk the loop comes back to before the
         * hot one's next visit is not its victim (in a cyclic scan the
         * coldest chunk is the one needed soonest). */
        if (hot_next != UINT64_MAX && next_visit(&s, d->now) < hot_next)
            continue;
        uint32_t h = sw_learn_heat(c, d->now);
        sw_chunk_t *b = d->coldest;
        uint64_t bl = b ? sw_learn_state(b).last_use : 0;
        if (!b || h < d->coldest_heat ||
            (h == d->coldest_heat && (s.last_use < bl || (s.last_use == bl && c->va < b->va)))) {
            d->coldest = c;
            d->coldest_heat = h;
        }
    }
}

sw_chunk_t *sw_policy_displace(const sw_table_t *t, const sw_chunk_t *hot, uint64_t now,
                               bool (*keep)(const sw_chunk_t *c, void *arg), void *arg)
{
    uint64_t heat = sw_learn_heat(hot, now);
    if (hot->where != SW_ON_HOST || hot->fixed || sw_learn_state(hot).uses < SW_HOT_USES)
        return NULL;
    displace_t d = {.hot = hot, .now = now, .keep = keep, .arg = arg};
    sw_table_each(t, find_coldest, &d);
    if (!d.coldest || heat <= d.coldest_heat || 2 * heat < 3 * (uint64_t)d.coldest_heat)
        return NULL;
    return d.coldest;
}

static void find_unseen(sw_alloc_t *a, void *arg)
{
    sw_chunk_t **best = arg;
    for (uint32_t i = 0; i < a->nchunks; i++) {
        sw_chunk_t *c = &a->chunks[i];
        if (c->where == SW_ON_HOST && c->slot < 0 && sw_chunk_pointed(c) && !c->fixed &&
            sw_learn_state(c).uses == 0 &&
            (!*best || c->va < (*best)->va))
            *best = c;
    }
}

sw_chunk_t *sw_policy_unseen(const sw_table_t *t)
{
    sw_chunk_t *best = NULL;
    sw_table_each(t, find_unseen, &best);
    return best;
}

/* ---- the data a chunk holds: adoption and packing ---- */

uint64_t sw_chunk_data(const sw_chunk_t *c)
{
    uint64_t end = c->alloc->va + c->alloc->size;
    if (end <= c->va)
        return 0;
    return end - c->va < c->size ? end - c->va : c->size;
}

/* Whether a's size is a tensor's, as far as can be told: one a granule
 * does not divide, as a program asks for a tensor of its own. An
 * allocator's segment (PyTorch's 20 MiB, an odd layer alone in 8 MiB)
 * has a round size, and bytes no tensor covers may fill its last chunks:
 * taken for full, an 8 MiB segment's second half holding 1.06 MiB of a
 * 5.06 MiB layer sent two layers' tails home (16 such layers, the odd
 * ones in 8 MiB segments, under 32 MiB: 1.33x -> 1.38x its bound). */
static bool tensor_sized(const sw_alloc_t *a)
{
    return a->nchunks &&
           sw_chunk_data(&a->chunks[a->nchunks - 1]) < a->chunks[a->nchunks - 1].size;
}

/* How far a's one tensor reads, as timed (sw_alloc_t's read_span), where
 * the one start learned is a's own; 0 otherwise, and where the span
 * reaches a's end: the time bounds the bytes read from above, and one
 * past the end bounds nothing. Taken for a tensor of a's size, a 20 MiB
 * layer filling its segment made every untimed segment of 12 or 15 MiB
 * layers count its tail as data (the sweep's 24 layers of 12-20 MiB, the
 * odd ones in 20 MiB segments, under 150 MiB: 1.207x -> 1.245x;
 * simgpu, 2026-12-02). */
static uint64_t timed_span(const sw_alloc_t *a)
{
    if (a->nbounds != 1 || a->bounds[0] != a->va)
        return 0;
    uint64_t span = __atomic_load_n(&a->read_span, __ATOMIC_RELAXED);
    return span < a->size ? span : 0;
}

/* The longest tensor length shown, and the longest timed span. */
typedef struct {
    uint64_t shown, timed;
} longest_t;

static void find_longest(sw_alloc_t *a, void *arg)
{
    longest_t *l = arg;
    uint64_t n = tensor_sized(a) ? a->size : a->spacing, span = timed_span(a);
    if (n > l->shown)
        l->shown = n;
    if (span > l->timed)
        l->timed = span;
}

/* The longest tensor the table shows: an allocation sized like one, or
 * the distance between two starts learned in a row; where none shows
 * one, how far a tensor alone in its allocation was timed to read (an
 * upper bound, so only where nothing exact is known: above the 5.06 MiB
 * of the layers alone in their allocations, the spans of GEMMs read in
 * place made untimed segments of such layers count their tails as data,
 * 1674.7 -> 1686.6 us a step at batch 16). 0: none shown. */
static uint64_t longest_tensor(const sw_table_t *t)
{
    longest_t l = {0, 0};
    sw_table_each(t, find_longest, &l);
    return l.shown ? l.shown : l.timed;
}

/* The bytes of c a tensor surely holds. All its data in an allocation
 * sized like a tensor, or of whose tensors nothing is known. In a
 * round-sized one (an allocator's segment, or a tensor of a round size)
 * the last tensor learned is taken to end as far past its start as the
 * longest distance between two of the allocation's starts, or with one
 * start learned, as the longest tensor the table shows (`longest`;
 * none shown: the allocation is taken for one tensor, as a 64 MiB layer
 * is); the bytes after it may be slack. Taken for full, the second half
 * of an 8 MiB segment holding 1.06 MiB of a 5.06 MiB layer stayed
 * resident where a full chunk of another layer read in place (16 such
 * layers, the odd ones in 8 MiB segments, under 32 MiB: 26.1 MiB of data
 * resident). */
static uint64_t sure_data(const sw_chunk_t *c, uint64_t longest)
{
    const sw_alloc_t *a = c->alloc;
    uint64_t data = sw_chunk_data(c);
    if (tensor_sized(a) || a->nbounds == 0 || c->va + c->size <= a->bounds[a->nbounds - 1])
        return data;
    uint64_t reach = a->nbounds > 1 ? a->spacing : longest, span = timed_span(a);
    if (span && (reach == 0 || span < reach))
        reach = span;
    if (reach == 0)
        return data;
    uint64_t end = a->bounds[a->nbounds - 1] + reach;
    reach = end > c->va ? end - c->va : 0;
    return reach < data ? reach : data;
}

/* Whether dev has a streaming window (window[dev] bytes; NULL: every
 * device has one). */
static bool has_window(const uint64_t *window, int dev)
{
    return !window || (dev >= 0 && dev < SW_MAX_DEVICES && window[dev]);
}

/* Whether only a pointer in device memory reaches c (pointed, never
 * named by an argument) where its device has a window, which cannot
 * stream it: read in place, not copied, while it is on the host. */
static bool table_only(const sw_chunk_t *c, const uint64_t *window)
{
    return sw_chunk_pointed(c) && sw_learn_state(c).uses == 0 &&
           has_window(window, c->alloc->dev);
}

/* What keeping c resident saves a loop, in bytes of copies: its sure
 * data, times SW_COST_LINK_RATIO where it is table_only(): its bytes then
 * cross at the zero-copy rate, where a named chunk's would be copied at
 * the full one. Placed first for being table-only alone, a 1.06 MiB tail
 * held a granule where a named layer's full 2 MiB head was copied every
 * step (28 layers of 3.06 MiB under 36 MiB: 60.6 MiB a step crossed, the
 * prefetch peer's exact layers 58.2). */
static double worth(const sw_chunk_t *c, uint64_t longest, const uint64_t *window)
{
    double data = (double)sure_data(c, longest);
    return table_only(c, window) ? data * SW_COST_LINK_RATIO : data;
}

sw_policy_worth_t sw_policy_worth_of(const sw_table_t *t, const uint64_t *window)
{
    return (sw_policy_worth_t){longest_tensor(t), window};
}

double sw_policy_worth(const sw_chunk_t *c, const sw_policy_worth_t *w)
{
    return worth(c, w->longest, w->window);
}

/* ---- adoption ---- */

typedef struct {
    uint64_t now;
    int dev;
    uint64_t window; /* dev's window's bytes */
} adopt_t;

/* keep() for adoption: all but a resident chunk of that device its window
 * could stream instead: one that arguments name in the loop (a known
 * gap), not used at this launch, and that fits the window. */
static bool not_streamable(const sw_chunk_t *c, void *arg)
{
    const adopt_t *a = arg;
    const sw_sched_t st = sw_learn_state(c);
    return c->alloc->dev != a->dev || c->size > a->window || !st.gap || st.last_use == a->now;
}

size_t sw_policy_adopt(const sw_table_t *t, uint64_t now, const uint64_t window[SW_MAX_DEVICES],
                       sw_chunk_t **in, sw_chunk_t **out)
{
    uint64_t freed;
    sw_chunk_t *c = sw_policy_unseen(t);
    *in = c;
    if (!c || c->alloc->dev < 0 || c->alloc->dev >= SW_MAX_DEVICES)
        return 0;
    adopt_t a = {now, c->alloc->dev, window[c->alloc->dev]};
    size_t n = sw_policy_victims_learned(t, c->size, now, not_streamable, &a, out, 1, &freed);
    if (n == 0 || freed < c->size)
        return 0;
    /* Not where the victim is worth more than the chunk adopted (a
     * layer's head for the tail of a table-only one): the link would
     * carry more each loop, not less. By data alone, adoption and
     * packing traded two chunks back and forth at every launch. */
    uint64_t longest = longest_tensor(t);
    if (worth(out[0], longest, window) > worth(c, longest, window)) {
        *in = NULL;
        return 0;
    }
    return 1;
}

sw_verdict_t sw_policy_on_touch_learned(const sw_chunk_t *c, uint64_t device_free,
                                        bool capturing, uint64_t period, const sw_link_t *link)
{
    /* The plain verdict's hard limits first: a capture, or no room. */
    if (sw_policy_on_touch(c, device_free, capturing) != SW_VERDICT_PROMOTE)
        return SW_VERDICT_ZERO_COPY;
    /* No link measured: nothing to weigh, the plain verdict. */
    if (!link)
        return SW_VERDICT_PROMOTE;
    /* A chunk read several times per period is read that many times while
     * it stays resident; one read per period when its schedule is unknown. */
    uint64_t uses = 1, gap = sw_learn_state(c).gap;
    if (period != 0 && gap != 0 && period / gap > 1)
        uses = period / gap;
    double size = (double)c->size;
    /* A zero bandwidth is an infinite cost; NaNs compare false, so a
     * broken link reads in place, which always works. */
    double in_place = (double)uses * size / link->zerocopy_gbps;
    double dma = size / link->h2d_gbps + link->move_ns;
    return in_place > dma ? SW_VERDICT_PROMOTE : SW_VERDICT_ZERO_COPY;
}

/* With one copy at a time, each copy waits for the launch the copy before
 * served and for spillway's own work after it (fingerprint, the check
 * for a change, the pointer check): about 20 us of GPU time on simgpu
 * (15-20 us a 4-8 MiB layer, four small kernels), in which the link
 * idles; at 55 GB/s that is about 1.1 MB of copy lost per streamed
 * extent. A second copy's room costs the resident set one extent, moved
 * once per loop instead. */

uint64_t sw_policy_window_fit(uint64_t want, uint64_t extent, uint64_t budget)
{
    /* No allocation known fits: a window would hold nothing, and take the
     * resident set's room until given back a loop later, moving chunks
     * twice (16 x 4 MiB layers in 8 MiB segments under 26 MiB: 1.49x
     * its bound with a 6.5 MiB window, 1.21x without). */
    if (extent == 0 || extent > want)
        return 0;
    uint64_t n = want / extent;
    /* Where want holds one copy, a second is worth its room when the
     * loop streams more extents than one extent's worth of those losses:
     * taking a model up to twice its budget, about budget / extent of
     * them, so when extent^2 < SW_SERIAL_BYTES * budget. Never past half
     * the budget. */
    if (n == 1 && extent <= budget / 4 &&
        (double)extent * (double)extent < (double)SW_SERIAL_BYTES * (double)budget)
        n = 2;
    return (n > 2 ? 2 : n) * extent;
}

/* 28 layers of 3.06 MiB under 34 MiB: a window of two copies, 6.125
 * MiB, left 27.875 MiB, 13 granules of residency; trimmed to 6 MiB it
 * leaves 14, and each copy's last 0.125 MiB waits for the launch before,
 * which a copy of 2.94 MiB outlasts (steps 8-15: 1172.8 -> 1137.1 us a
 * step; 24 layers of 5.06 MiB under 48 MiB 1653.8 -> 1619.3; simgpu,
 * 2026-11-30). */
uint64_t sw_policy_window_trim(uint64_t size, uint64_t slot, uint64_t budget, uint64_t granule)
{
    if (!granule || !slot || size >= budget || size <= slot)
        return size;
    uint64_t over = (budget - size) % granule, cut = over ? granule - over : 0;
    if (!cut || cut > slot / SW_WINDOW_TRIM || size - cut <= slot)
        return size;
    return size - cut;
}

/* ---- packing ---- */

/* Whether packing may move c: one only a pointer in device memory
 * reaches (no argument ever named it), or one the loop's arguments name
 * (its gap within 1/8 of the period). Any other stays where it is. */
static bool on_loop(const sw_chunk_t *c, uint64_t period)
{
    const sw_sched_t s = sw_learn_state(c);
    return (sw_chunk_pointed(c) && s.uses == 0) || (s.gap && sw_learn_same_period(period, s.gap));
}

typedef struct {
    uint64_t period;
    const uint64_t *room; /* sw_policy_into_room's, per device; NULL: packing */
    sw_chunk_t *in;
    const uint64_t *window; /* bytes of each device's window; NULL: every device has one */
    double in_worth;      /* worth(in), once found */
    uint64_t longest;     /* longest_tensor(), for sure_data */
    bool (*keep)(const sw_chunk_t *c, void *arg); /* the caller's */
    void *arg;
} pack_t;

/* The better chunk to bring in: the denser (worth over size: a trade
 * sends home chunks as big as it is), then the worthier, then the lower
 * address. By data alone, a 20 MiB segment holding 18 MiB was proposed
 * ahead of full 8 MiB heads of layers, and no trade paid for it, where a
 * head for four half-empty tails did (24 layers of 9 MiB, the odd ones in
 * 20 MiB segments). */
static bool fuller(const sw_chunk_t *a, const sw_chunk_t *b, const pack_t *p)
{
    double wa = worth(a, p->longest, p->window), wb = worth(b, p->longest, p->window);
    double fa = wa * (double)b->size, fb = wb * (double)a->size;
    if (fa != fb)
        return fa > fb;
    if (wa != wb)
        return wa > wb;
    return a->va < b->va;
}

/* The host chunk on the loop holding the most worth: for free room,
 * of those that fit its device's room. */
static void find_fullest(sw_alloc_t *a, void *arg)
{
    pack_t *p = arg;
    if (p->room && (a->dev < 0 || a->dev >= SW_MAX_DEVICES))
        return;
    for (uint32_t i = 0; i < a->nchunks; i++) {
        sw_chunk_t *c = &a->chunks[i];
        if (c->where != SW_ON_HOST || c->slot >= 0 || c->fixed || !on_loop(c, p->period) ||
            (p->room && c->size > p->room[a->dev]))
            continue;
        if (!p->in || fuller(c, p->in, p))
            p->in = c;
    }
}

sw_chunk_t *sw_policy_into_room(const sw_table_t *t, uint64_t period,
                                const uint64_t window[SW_MAX_DEVICES],
                                const uint64_t room[SW_MAX_DEVICES])
{
    pack_t p = {.period = period, .room = room, .window = window};
    bool any = false;
    for (int dev = 0; dev < SW_MAX_DEVICES; dev++)
        any |= room[dev] != 0;
    if (period && any) { /* a full budget, the usual case, walks nothing */
        p.longest = longest_tensor(t);
        sw_table_each(t, find_fullest, &p);
    }
    return p.in;
}

/* keep() for the chunks that could go home in the trade: the caller's,
 * and every chunk the trade must not take: one of another device, one a
 * remapping slot holds (its address maps the slot, not its own handle:
 * moved, it took another chunk's bytes, SPILLWAY_REWRITE=0 over 64 MiB
 * layers), one off the loop, and one worth as much as in. */
static bool not_packable(const sw_chunk_t *c, void *arg)
{
    const pack_t *p = arg;
    return c->alloc->dev != p->in->alloc->dev || c->slot >= 0 ||
           !on_loop(c, p->period) || worth(c, p->longest, p->window) >= p->in_worth ||
           (p->keep && p->keep(c, p->arg));
}

/* Less worth first, then lower address. */
static int emptier(const void *pa, const void *pb, void *pp)
{
    const pack_t *p = pp;
    const sw_chunk_t *a = *(sw_chunk_t *const *)pa, *b = *(sw_chunk_t *const *)pb;
    double wa = worth(a, p->longest, p->window), wb = worth(b, p->longest, p->window);
    if (wa != wb)
        return wa < wb ? -1 : 1;
    return a->va < b->va ? -1 : a->va > b->va;
}

/* ---- gathering: several host chunks for one emptier device chunk ---- */

typedef struct {
    const pack_t *p;
    sw_chunk_t *out;      /* the device chunk to send home */
} gather_t;

/* The emptiest device chunk packing could send home: by the density
 * fuller() weighs. */
static void find_emptiest(sw_alloc_t *a, void *arg)
{
    gather_t *g = arg;
    const pack_t *p = g->p;
    for (uint32_t i = 0; i < a->nchunks; i++) {
        sw_chunk_t *c = &a->chunks[i];
        if (!could_go_home(c) || c->slot >= 0 || !on_loop(c, p->period) ||
            (p->keep && p->keep(c, p->arg)))
            continue;
        if (!g->out || fuller(g->out, c, p))
            g->out = c;
    }
}

/* keep() for the host chunks that may come in its place: not fixed, of
 * its device, on the loop, no bigger. */
static bool not_gatherable(const sw_chunk_t *c, void *arg)
{
    const gather_t *g = arg;
    return c->fixed || c->alloc->dev != g->out->alloc->dev ||
           !on_loop(c, g->p->period) || c->size > g->out->size;
}

static int denser(const void *pa, const void *pb, void *pp)
{
    const sw_chunk_t *a = *(sw_chunk_t *const *)pa, *b = *(sw_chunk_t *const *)pb;
    return fuller(a, b, pp) ? -1 : fuller(b, a, pp) ? 1 : 0;
}

/* Where no chunk is worth the room of emptier ones, a chunk bigger than
 * the full ones on the host may be: the densest host chunks that fit in
 * the emptiest device chunk's room take it together, where they bring
 * SW_PACK_GAIN times its data. An 8 MiB segment (one chunk) holding a
 * 5.06 MiB layer stayed resident while the 4 MiB heads of other layers
 * read in place (32 such layers, odd ones in 8 MiB segments, under 64
 * MiB: 112.7 MiB a step read in place against the bound's 98). Not while
 * its device has a window, which may stream that chunk's range: gathered
 * while the window was still being judged, the trades and the window's
 * copies took 1.93x and 2.45x the bound in steps 5 and 6, where after
 * the window is given back one step pays the trades (2.82x). */
static bool gather(const sw_table_t *t, pack_t *p, sw_pack_t *trade, size_t max)
{
    gather_t g = {.p = p};
    sw_table_each(t, find_emptiest, &g);
    if (!g.out || has_window(p->window, g.out->alloc->dev))
        return false;
    cands_t cs = {.keep = not_gatherable, .arg = &g, .host = true};
    sw_table_each(t, collect, &cs);
    if (cs.n > 1)
        qsort_r(cs.v, cs.n, sizeof *cs.v, denser, p);
    uint64_t room = g.out->size;
    double in = 0;
    trade->nin = 0;
    for (size_t i = 0; i < cs.n && trade->nin < max; i++) {
        if (cs.v[i]->size > room)
            continue;
        trade->in[trade->nin++] = cs.v[i];
        room -= cs.v[i]->size;
        in += worth(cs.v[i], p->longest, p->window);
    }
    free(cs.v);
    if (trade->nin < 2 || in < SW_PACK_GAIN * worth(g.out, p->longest, p->window)) {
        trade->nin = 0;
        return false;
    }
    trade->out[0] = g.out;
    trade->nout = 1;
    return true;
}

bool sw_policy_pack(const sw_table_t *t, uint64_t period, const uint64_t window[SW_MAX_DEVICES],
                    bool (*keep)(const sw_chunk_t *c, void *arg), void *arg, sw_pack_t *trade,
                    size_t max)
{
    pack_t p = {.period = period, .window = window, .keep = keep, .arg = arg};
    trade->nin = trade->nout = 0;
    if (max > SW_PACK_MAX)
        max = SW_PACK_MAX;
    if (!period || max == 0)
        return false;
    p.longest = longest_tensor(t);
    sw_table_each(t, find_fullest, &p);
    if (!p.in)
        return false;
    p.in_worth = worth(p.in, p.longest, window);
    uint64_t freed;
    size_t n = victims_by(t, p.in->size, not_packable, &p, emptier, &p, trade->out, max, &freed);
    double out = 0;
    for (size_t i = 0; i < n; i++)
        out += worth(trade->out[i], p.longest, window);
    if (freed < p.in->size || out * SW_PACK_GAIN > p.in_worth)
        return gather(t, &p, trade, max);
    trade->in[0] = p.in;
    trade->nin = 1;
    trade->nout = n;
    return true;
}

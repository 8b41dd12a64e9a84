/*
 * Spreading: where in the loop the resident chunks lie.
 *
 * Under a cyclic loop every resident set of the same worth saves the link
 * the same bytes (Belady with bypass keeps whichever set it has), but not
 * the same time. The window copies a range or two ahead of its launch;
 * while a run of resident chunks' kernels runs, the link copies those and
 * then idles. Allocation order makes the first layers resident and the
 * rest streamed: one long resident run a loop, and the link idle through
 * most of it (256 layers of 2 MiB under 288 MiB on simgpu: 650 us of a
 * 5005 us step, 1.17x the link bound; spread, 1.02x). Spread among the
 * streamed chunks, each resident run's kernels run while a copy does.
 *
 * The measure is the launches from one streamed visit to the next, a
 * gap: the link idles where a gap's kernels outlast the copy ahead. The
 * sum of the squared gaps is least where the gaps are even, so a trade
 * sends home the resident chunk that splits the widest gap nearest its
 * middle (a and b launches either side: the sum falls by 2ab) and brings
 * in the streamed chunk of the same size, worth no less, whose two gaps
 * merge at the least cost (the sum rises by 2 * before * after, where the
 * gap the resident one splits is one of those two, its side next to the
 * one brought in), where the split gains SPREAD_GAIN times what the merge
 * costs, and something: each trade is two moves, a batch of them a
 * synchronization. The sum falls with every trade, so trades end.
 *
 * Only whole allocations trade (a tensor of its own, or an allocator's
 * segment), all their chunks at once, and only for one of the same
 * chunks: part of a tensor sent home would leave it partly resident,
 * copied whole all the same. An allocation of several chunks is one spot
 * where one launch visits all of them (a tensor bigger than a chunk:
 * 64 MiB layers in 16 MiB chunks, the prefill of a model with a GEMM a
 * layer, whose resident layers' compute the link sat out while it was one
 * run, 1.43x the link bound on simgpu); one whose chunks are visited
 * apart (a buffer of many tensors) is a spot per chunk, none of them
 * movable.
 *
 * Only a clean loop is spread: one where every chunk on it comes back
 * after exactly period launches. A training step reads each weight
 * forward and writes it in its update, two visits a step, and the period
 * learned is about half a step, which the chunks' own loops straddle
 * (27 to 33 launches about a period of 29 to 32): places measured against
 * it moved between asks, and the trades undid each other every loop (20
 * layers of 16 MiB, batch 16, --train: 9.7 ms a step without spreading,
 * 16.0 with its trades).
 */
#include "../sw.h"

#include <stdlib.h>

#define SPREAD_GAIN 2
#define SPREAD_TRIES 8 /* the widest splits tried for a partner */

typedef struct {
    sw_chunk_t *c;    /* its first chunk */
    sw_alloc_t *a;    /* the allocation it is whole, or NULL: c alone */
    uint64_t at;      /* where its visits start in the loop: [0, period) */
    bool streamed;    /* on the host, some of it: copied into the window, or read in place */
    bool movable;     /* may trade (then a is set) */
    uint64_t before;  /* launches since the streamed visit before it */
    uint64_t after;   /* launches to the next streamed visit */
} spot_t;

typedef struct {
    uint64_t now, period;
    int dev;
    bool (*keep)(const sw_chunk_t *c, void *arg);
    void *arg;
    spot_t *v;
    size_t n, cap;
    bool oom;
    bool ragged; /* a chunk on the loop whose own loop is not period exactly */
} spots_t;

/* Visited in the latest loop (its visit is no staler than a loop and an
 * eighth) and coming back each loop. */
static bool in_loop(const sw_sched_t *s, uint64_t now, uint64_t period)
{
    return s->visit && s->loop && sw_learn_same_period(period, s->loop) &&
           now - s->visit <= period + period / 8;
}

static bool movable(const sw_chunk_t *c, const spots_t *sp)
{
    if (c->fixed || c->resident || c->slot >= 0)
        return false;
    return c->where == SW_ON_HOST || !sp->keep || !sp->keep(c, sp->arg);
}

static bool placed(const sw_chunk_t *c, const sw_sched_t *s, spots_t *sp)
{
    if ((c->where != SW_ON_HOST && c->where != SW_ON_DEVICE) || !in_loop(s, sp->now, sp->period))
        return false;
    sp->ragged |= s->loop != sp->period;
    return true;
}

static void add(spots_t *sp, spot_t spot)
{
    if (sp->n == sp->cap) {
        size_t cap = sp->cap ? sp->cap * 2 : 256;
        spot_t *v = realloc(sp->v, cap * sizeof *v);
        if (!v) {
            sp->oom = true;
            return;
        }
        sp->v = v;
        sp->cap = cap;
    }
    sp->v[sp->n++] = spot;
}

static uint64_t place_of(const sw_sched_t *s, const spots_t *sp)
{
    return sp->period - 1 - (sp->now - s->visit) % sp->period;
}

/* a as one spot, if one launch visits every chunk of it (a tensor) and
 * a trade could move them all; movable where they lie alike. */
static bool add_whole(sw_alloc_t *a, spots_t *sp)
{
    if (a->nchunks > SW_TRADE_MAX)
        return false;
    const sw_sched_t first = sw_learn_state(&a->chunks[0]);
    bool host = false, device = false, movable_all = true;
    for (uint32_t i = 0; i < a->nchunks; i++) {
        const sw_chunk_t *c = &a->chunks[i];
        const sw_sched_t s = sw_learn_state(c);
        if (!placed(c, &s, sp) || s.visit != first.visit)
            return false;
        host |= c->where == SW_ON_HOST || c->slot >= 0;
        device |= c->where == SW_ON_DEVICE && c->slot < 0;
        movable_all &= movable(c, sp);
    }
    add(sp, (spot_t){.c = &a->chunks[0],
                     .a = a,
                     .at = place_of(&first, sp),
                     .streamed = host,
                     .movable = movable_all && !(host && device)});
    return true;
}

static void collect(sw_alloc_t *a, void *arg)
{
    spots_t *sp = arg;
    if (a->dev != sp->dev || sp->oom || add_whole(a, sp))
        return;
    for (uint32_t i = 0; i < a->nchunks && !sp->oom; i++) {
        sw_chunk_t *c = &a->chunks[i];
        const sw_sched_t s = sw_learn_state(c);
        if (placed(c, &s, sp))
            add(sp, (spot_t){.c = c,
                             .at = place_of(&s, sp),
                             .streamed = c->where == SW_ON_HOST || c->slot >= 0});
    }
}

static int by_place(const void *pa, const void *pb)
{
    const spot_t *a = pa, *b = pb;
    if (a->at != b->at)
        return a->at < b->at ? -1 : 1;
    return a->c->va < b->c->va ? -1 : a->c->va > b->c->va;
}

/* Fills before and after, the spots sorted by place on the circle of
 * period launches; returns how many are streamed. */
static size_t measure(spot_t *v, size_t n, uint64_t period)
{
    size_t first = n, streamed = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].streamed) {
            if (first == n)
                first = i;
            streamed++;
        }
    if (streamed == 0)
        return 0;
    /* Once round from the first streamed spot, forwards then back, in
     * launches of the loop unrolled from there. */
    uint64_t prev = v[first].at;
    for (size_t k = 1; k <= n; k++) {
        spot_t *s = &v[(first + k) % n];
        uint64_t at = s->at + (first + k >= n ? period : 0);
        s->before = at - prev;
        if (s->streamed)
            prev = at;
    }
    uint64_t next = v[first].at + period;
    for (size_t k = n; k-- > 0;) {
        spot_t *s = &v[(first + k) % n];
        uint64_t at = s->at + (first + k >= n ? period : 0);
        s->after = next - at;
        if (s->streamed)
            next = at;
    }
    return streamed;
}

static int wider_split(const void *pa, const void *pb)
{
    const spot_t *a = *(spot_t *const *)pa, *b = *(spot_t *const *)pb;
    uint64_t sa = a->before * a->after, sb = b->before * b->after;
    if (sa != sb)
        return sa > sb ? -1 : 1;
    return a->c->va < b->c->va ? -1 : a->c->va > b->c->va;
}

/* Whether a and b, whole allocations, are cut into chunks alike: a trade
 * of one for the other leaves every budget as it was. */
static bool same_chunks(const sw_alloc_t *a, const sw_alloc_t *b)
{
    if (a->nchunks != b->nchunks)
        return false;
    for (uint32_t i = 0; i < a->nchunks; i++)
        if (a->chunks[i].size != b->chunks[i].size)
            return false;
    return true;
}

static double worth(const sw_alloc_t *a, const sw_policy_worth_t *w)
{
    double sum = 0;
    for (uint32_t i = 0; i < a->nchunks; i++)
        sum += sw_policy_worth(&a->chunks[i], w);
    return sum;
}

/* The streamed partner for resident r, which splits the gap from the
 * streamed visit r->before launches back to the one r->after ahead: of
 * its size and worth no less, whose merge costs least; NULL: none pays.
 * Brought in, h joins its two gaps, before * after; where h ends r's
 * gap, the side of it facing h is what remains of that gap once r splits
 * it. */
static spot_t *partner(spot_t *v, size_t n, uint64_t period, const spot_t *r,
                       const sw_policy_worth_t *w)
{
    spot_t *best = NULL;
    uint64_t split = r->before * r->after, best_cost = 0;
    double rw = worth(r->a, w);
    for (size_t i = 0; i < n; i++) {
        spot_t *h = &v[i];
        if (!h->streamed || !h->movable || !same_chunks(h->a, r->a))
            continue;
        uint64_t ahead = (h->at + period - r->at) % period;
        uint64_t before = ahead == r->after ? r->after : h->before;
        uint64_t after = ahead && period - ahead == r->before ? r->before : h->after;
        uint64_t cost = before * after;
        if (cost * SPREAD_GAIN > split || (best && cost >= best_cost) || worth(h->a, w) < rw)
            continue;
        best = h;
        best_cost = cost;
    }
    return best;
}

static bool spread_dev(spots_t *sp, const sw_policy_worth_t *w, sw_pack_t *trade)
{
    if (sp->n < 3 || sp->ragged)
        return false;
    qsort(sp->v, sp->n, sizeof *sp->v, by_place);
    size_t streamed = measure(sp->v, sp->n, sp->period);
    if (streamed < 2 || streamed == sp->n)
        return false;
    spot_t **splits = malloc((sp->n - streamed) * sizeof *splits);
    if (!splits)
        return false;
    size_t nsplit = 0;
    for (size_t i = 0; i < sp->n; i++)
        if (!sp->v[i].streamed && sp->v[i].movable)
            splits[nsplit++] = &sp->v[i];
    qsort(splits, nsplit, sizeof *splits, wider_split);
    bool found = false;
    for (size_t i = 0; i < nsplit && i < SPREAD_TRIES && !found; i++) {
        if (splits[i]->before * splits[i]->after == 0)
            break; /* no wider splits left: a trade would gain nothing */
        spot_t *h = partner(sp->v, sp->n, sp->period, splits[i], w);
        if (h) {
            const sw_alloc_t *out = splits[i]->a, *in = h->a;
            for (uint32_t k = 0; k < out->nchunks; k++) {
                trade->out[k] = &out->chunks[k];
                trade->in[k] = &in->chunks[k];
            }
            trade->nout = trade->nin = out->nchunks;
            found = true;
        }
    }
    free(splits);
    return found;
}

bool sw_policy_spread(const sw_table_t *t, uint64_t now, uint64_t period,
                      const uint64_t window[SW_MAX_DEVICES],
                      bool (*keep)(const sw_chunk_t *c, void *arg), void *arg, sw_pack_t *trade)
{
    trade->nin = trade->nout = 0;
    if (!period)
        return false;
    sw_policy_worth_t w = sw_policy_worth_of(t, window);
    spots_t sp = {.now = now, .period = period, .keep = keep, .arg = arg};
    bool found = false;
    for (int dev = 0; dev < SW_MAX_DEVICES && !found; dev++) {
        if (!window[dev])
            continue;
        sp.dev = dev;
        sp.n = 0;
        sp.oom = sp.ragged = false;
        sw_table_each(t, collect, &sp);
        found = !sp.oom && spread_dev(&sp, &w, trade);
    }
    free(sp.v);
    return found;
}

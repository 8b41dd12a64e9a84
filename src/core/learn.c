/*
 * The launch schedule, learned from kernel arguments.
 *
 * Training and inference loops issue the same kernels over the same buffers
 * every iteration. Counting launches (seq), each chunk is touched at a
 * steady interval, its gap, and the loop's period is the gap most of the
 * memory shares (measured between visits, below):
 *
 *     seq   1    5       21   25       41   45
 *           A    B       A    B        A    B        gap(A) = gap(B) = 20
 *           |<-- 20 -->| |<-- 20 -->|
 *                              ^ now = 30
 *     next_use(A) = 21 + 20 = 41, next_use(B) = 25 + 20 = 45
 *
 * With next uses known, eviction can be Belady's (furthest next use first)
 * instead of LRU, which under a cyclic scan evicts exactly the chunk needed
 * next; and prefetch can start the copies for the chunks due soonest.
 *
 * A chunk several layers share (a segment of five tensors, read by their
 * launches one after another) is touched in visits: gaps of a launch or
 * two, then the loop. Its loop gap is measured between the starts of
 * visits, a visit being the touches within a quarter of the loop gap of
 * each other (within four launches before any is known), and the period
 * is the loop gap most bytes share; the gap itself stays the distance
 * between touches. Measured chunk by chunk, a 20 MiB segment of five
 * layers gave a period of 3 launches where the loop was 200.
 *
 * The gap estimate is an exponential average (weight 1/4 on the new gap),
 * so one irregular launch does not derail it, but a gap outside
 * [estimate/2, 2*estimate] replaces the estimate outright: a new phase of
 * the program (different batch size, evaluation instead of training) is
 * followed within one iteration. The average moves by at least one launch
 * towards the new gap, so a steady gap is reached exactly instead of
 * stalling one short, as truncating integer arithmetic would.
 *
 * Segments: one cudaMalloc often holds several tensors, and a kernel given
 * a pointer into it reads from there to the next tensor, not to the end.
 * Every pointer seen in a launch's arguments is taken as a tensor start, so
 * the bytes a launch will read can be predicted from its pointers alone.
 */
#include "../sw.h"

#include <stdlib.h>
#include <string.h>

/* ---- per-chunk schedule ------------------------------------------------ */

/* The gap estimate after observing gap g, given estimate est (0: none). */
static uint64_t next_gap(uint64_t est, uint64_t g)
{
    if (est == 0)
        return g;
    /* g < est/2 exactly, without rounding est/2 down */
    if (g <= (est - 1) / 2)
        return g;
    if (g > est && g - est > est) /* g > 2*est, without overflow */
        return g;
    /* est + (g - est)/4, rounded away from est: never stalls short of g */
    uint64_t d = g > est ? g - est : est - g;
    uint64_t step = d / 4 + (d % 4 != 0);
    return g > est ? est + step : est - step;
}

static uint32_t heat_at(const sw_sched_t *s, uint64_t now);

/* Stamps and reads race (sw.h, sw_sched_load): fields are read and
 * written one relaxed atomic at a time. */
static sw_sched_t own(const sw_chunk_t *c) { return sw_sched_load(&c->sched); }

static void set_own(sw_chunk_t *c, const sw_sched_t *s) { sw_sched_store(&c->sched, s); }

static bool same(const sw_sched_t *a, const sw_sched_t *b)
{
    return a->last_use == b->last_use && a->uses == b->uses && a->gap == b->gap &&
           a->visit == b->visit && a->loop == b->loop && a->heat == b->heat;
}

/* Launches between two touches of one visit at most, before its loop is
 * known: the launches of the layers between two tensors of a segment. */
#define VISIT_SLACK 4

static void step(sw_sched_t *s, uint64_t seq)
{
    /* seq 0 is not a launch (they count from 1, and last_use 0 means
     * "never"); seq <= last_use is the same launch touching c again. */
    if (seq == 0 || (s->last_use != 0 && seq <= s->last_use))
        return;
    if (s->last_use != 0)
        s->gap = next_gap(s->gap, seq - s->last_use);
    /* A touch within a quarter of the loop gap of the one before, or a
     * few launches of it before any loop is known, continues a visit (the
     * layers of one segment, one after another); the loop gap is measured
     * between the starts of visits. */
    uint64_t near = s->loop / 4 > VISIT_SLACK ? s->loop / 4 : VISIT_SLACK;
    if (!s->visit || seq - s->last_use > near) {
        if (s->visit)
            s->loop = next_gap(s->loop, seq - s->visit);
        s->visit = seq;
    }
    uint32_t heat = heat_at(s, seq);
    s->heat = heat > UINT32_MAX - SW_HEAT_ONE ? UINT32_MAX : heat + SW_HEAT_ONE;
    s->last_use = seq;
    s->uses++;
}

/* ---- runs ----------------------------------------------------------------
 * A pointer at the start of a big arena (a KV cache: 8 GiB of 2 MiB
 * chunks) stamps every chunk up to the next segment start, thousands of
 * them, on every launch, and they all learn the same schedule. A run
 * holds that schedule once:
 *
 *     chunks   0    1    2    3  ...  4095
 *              [========= run 0 =========)   s = {last_use, uses, gap, heat}
 *
 * Invariant: a run's chunks had equal schedules when it was formed, and
 * since then every stamp on any of them was a stamp of exactly the run's
 * range, applied once to s; so s is what each of them would hold had
 * each been stamped alone, and their own fields are stale. Any other
 * stamp on one of them (one chunk, or a range that only overlaps) first
 * writes s back into every chunk of the run and drops it (dissolve). So
 * stamping the same range launch after launch costs O(1), a new range
 * costs what it used to, and sw_learn_state reads exactly what stamping
 * chunk by chunk would have left. */

/* Runs change under the caller's lock (sw_learn_touch_range) while
 * launches read them (sw_learn_state) without it: their fields, like the
 * schedules', are relaxed atomics. A run read while it is replaced gives
 * a stale schedule, never a bad index: nruns never exceeds SW_RUNS. */
static const sw_run_t *run_of(const sw_chunk_t *c)
{
    const sw_alloc_t *a = c->alloc;
    if (!a)
        return NULL;
    uint32_t n = __atomic_load_n(&a->nruns, __ATOMIC_RELAXED);
    for (uint32_t k = 0; k < n; k++)
        if (c->index >= __atomic_load_n(&a->runs[k].first, __ATOMIC_RELAXED) &&
            c->index < __atomic_load_n(&a->runs[k].end, __ATOMIC_RELAXED))
            return &a->runs[k];
    return NULL;
}

static void set_run(sw_run_t *d, uint32_t first, uint32_t end, const sw_sched_t *s)
{
    __atomic_store_n(&d->first, first, __ATOMIC_RELAXED);
    __atomic_store_n(&d->end, end, __ATOMIC_RELAXED);
    sw_sched_store(&d->s, s);
}

/* Writes run k's schedule back into its chunks and drops it. */
static void dissolve(sw_alloc_t *a, uint32_t k)
{
    sw_run_t r = a->runs[k], last = a->runs[a->nruns - 1];
    for (uint32_t i = r.first; i < r.end; i++)
        set_own(&a->chunks[i], &r.s);
    set_run(&a->runs[k], last.first, last.end, &last.s);
    __atomic_store_n(&a->nruns, a->nruns - 1, __ATOMIC_RELAXED);
}

sw_sched_t sw_learn_run_state(const sw_chunk_t *c)
{
    const sw_run_t *r = run_of(c);
    return sw_sched_load(r ? &r->s : &c->sched);
}

void sw_learn_touch(sw_chunk_t *c, uint64_t seq)
{
    const sw_run_t *r = run_of(c);
    if (r)
        dissolve(c->alloc, (uint32_t)(r - c->alloc->runs));
    sw_sched_t s = own(c);
    step(&s, seq);
    set_own(c, &s);
}

void sw_learn_touch_range(sw_alloc_t *a, uint32_t first, uint32_t end, uint64_t seq)
{
    if (end > a->nchunks)
        end = a->nchunks;
    if (first >= end)
        return;
    for (uint32_t k = 0; k < a->nruns; k++)
        if (a->runs[k].first == first && a->runs[k].end == end) {
            sw_sched_t s = a->runs[k].s;
            step(&s, seq);
            sw_sched_store(&a->runs[k].s, &s);
            return;
        }
    for (uint32_t k = a->nruns; k-- > 0;)
        if (a->runs[k].first < end && first < a->runs[k].end)
            dissolve(a, k);
    /* No run holds any of them now: stamp each, and see whether they
     * agree afterwards (they do when they were always stamped together). */
    bool equal = true;
    for (uint32_t i = first; i < end; i++) {
        sw_learn_touch(&a->chunks[i], seq);
        if (equal && i > first) {
            sw_sched_t x = own(&a->chunks[i]), y = own(&a->chunks[first]);
            equal = same(&x, &y);
        }
    }
    /* When every run is taken, the range stays stamped chunk by chunk. */
    if (equal && end - first > 1 && a->nruns < SW_RUNS) {
        sw_sched_t s = own(&a->chunks[first]);
        set_run(&a->runs[a->nruns], first, end, &s);
        __atomic_store_n(&a->nruns, a->nruns + 1, __ATOMIC_RELAXED);
    }
}

/* Drops a's predictions: gaps, visits and heat, in its chunks and its
 * runs (a run's chunks stay equal, so the run stays valid). */
static void forget_sched(sw_sched_t *s)
{
    s->gap = s->loop = s->visit = 0;
    s->heat = 0;
}

static void forget(sw_alloc_t *a, void *unused)
{
    for (uint32_t i = 0; i < a->nchunks; i++)
        forget_sched(&a->chunks[i].sched);
    for (uint32_t k = 0; k < a->nruns; k++)
        forget_sched(&a->runs[k].s);
}

void sw_learn_forget(const sw_table_t *t)
{
    sw_table_each(t, forget, NULL);
}

uint64_t sw_learn_next_use(const sw_chunk_t *c, uint64_t now)
{
    const sw_sched_t s = sw_learn_state(c);
    if (s.gap == 0)
        return UINT64_MAX;
    uint64_t k = 1;
    if (now >= s.last_use)
        k = (now - s.last_use) / s.gap + 1; /* smallest k with last + k*gap > now */
    /* Past the end of the sequence space: as good as never. */
    if (k > (UINT64_MAX - s.last_use) / s.gap)
        return UINT64_MAX;
    return s.last_use + k * s.gap;
}

/* ---- popularity -------------------------------------------------------
 * The gap says when a loop comes back to a chunk; it says little about a
 * chunk picked at random (an expert), whose gaps scatter. Heat counts
 * uses, each worth SW_HEAT_ONE, decaying by half every SW_HEAT_HALF_LIFE
 * launches, so it ranks such chunks by how often they were picked lately:
 * a steady rate of r uses per launch settles near r * HALF_LIFE / ln 2
 * uses. Within a half-life, 2^-x is taken as 1 - a x + b x^2 with
 * a = 710/1024 (about ln 2, the true slope at 0) and b = a - 1/2, exact
 * at both ends and decreasing in between: integer only, and monotone.
 * last_use is when the heat was last brought up to date. */

static uint32_t cooled(uint32_t heat, uint64_t dt)
{
    const uint64_t H = SW_HEAT_HALF_LIFE, A = 710, B = 710 - 512;
    uint64_t halvings = dt / H;
    if (halvings >= 32)
        return 0;
    uint64_t h = heat >> halvings, r = dt % H;
    /* h * (A r H - B r^2) / (1024 H^2): below 2^32 * 2^30, no overflow */
    return (uint32_t)(h - h * (A * r * H - B * r * r) / (1024 * H * H));
}

static uint32_t heat_at(const sw_sched_t *s, uint64_t now)
{
    return now <= s->last_use ? s->heat : cooled(s->heat, now - s->last_use);
}

uint32_t sw_learn_heat(const sw_chunk_t *c, uint64_t now)
{
    sw_sched_t s = sw_learn_state(c);
    return heat_at(&s, now);
}

/* ---- the loop's period ------------------------------------------------- */

/* gap: a chunk's loop gap, or 0 for a chunk touched twice or more with
 * none yet (its first visit still going on), whose visit then lasted
 * span launches so far. */
typedef struct {
    uint64_t gap, bytes, span;
} gapw_t;

/* The first GAPS_HELD entries live in the struct: the period is asked
 * every 8 launches while none is known, and a few chunks should not cost
 * an allocation each time. */
#define GAPS_HELD 32

typedef struct {
    gapw_t *v; /* held, or allocated once it outgrows it */
    size_t n, cap;
    bool oom;
    gapw_t held[GAPS_HELD];
} gaps_t;

static void gaps_free(gaps_t *gs)
{
    if (gs->v != gs->held)
        free(gs->v);
}

static void collect_gaps(sw_alloc_t *a, void *arg)
{
    gaps_t *gs = arg;
    for (uint32_t i = 0; i < a->nchunks && !gs->oom; i++) {
        const sw_chunk_t *c = &a->chunks[i];
        sw_sched_t s = sw_learn_state(c);
        if (s.loop == 0 && s.uses < 2)
            continue;
        if (gs->n == gs->cap) {
            size_t cap = gs->cap < 256 ? 256 : gs->cap * 2;
            gapw_t *v = realloc(gs->v == gs->held ? NULL : gs->v, cap * sizeof *v);
            if (!v) {
                gs->oom = true;
                return;
            }
            if (gs->v == gs->held)
                memcpy(v, gs->held, sizeof gs->held);
            gs->v = v;
            gs->cap = cap;
        }
        gs->v[gs->n++] = (gapw_t){s.loop, c->size, s.loop ? 0 : s.last_use - s.visit};
    }
}

static int by_gap(const void *pa, const void *pb)
{
    const gapw_t *a = pa, *b = pb;
    return a->gap < b->gap ? -1 : a->gap > b->gap;
}

/* Within 1/8 of center means |g - center| <= center/8 (integers, so the
 * same as 8*|g - center| <= center, without the overflow). */
static bool below(uint64_t g, uint64_t center)
{
    return g < center && center - g > center / 8;
}

static bool above(uint64_t g, uint64_t center)
{
    return g > center && g - center > center / 8;
}

bool sw_learn_same_period(uint64_t a, uint64_t b)
{
    return a == 0 ? b == 0 : !below(b, a) && !above(b, a);
}

/* Bytes of chunks still in their first visit (gap 0, at the front of
 * the sorted gaps, [0, nwait)) that could yet show period as their loop:
 * a chunk touched by every launch for four such loops has none to show. */
static uint64_t waiting_bytes(const gaps_t *gs, size_t nwait, uint64_t period)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < nwait; i++)
        if (gs->v[i].span / 4 < period)
            bytes += gs->v[i].bytes;
    return bytes;
}

/*
 * A byte-weighted mode with a tolerance. Every distinct gap is tried as a
 * center; its window holds the chunks whose gap is within 1/8 of it. The
 * window with the most bytes wins (ties: the lower center), and its
 * byte-weighted median is the period, so that 19, 20, 21 give 20 rather
 * than whichever edge happened to be tried first. Sorted gaps make both
 * window edges move only forward: O(n log n) for the sort, O(n) after.
 *
 * Unknown while the chunks with a loop gap hold fewer bytes than those
 * touched twice or more still in their first visit: a fused weight read
 * by ten kernels a layer splits its first visit where no loop is known
 * yet (VISIT_SLACK), and its first chunks then showed a loop of 9 where
 * the program's was 90, agreed on at launch 16 with 4 MiB of 88 having
 * any gap (tests/spillway/extent.c); the window, judged in that loop,
 * was given back before the real one was seen.
 */
uint64_t sw_learn_period(const sw_table_t *t, bool *agreed)
{
    gaps_t gs = {.cap = GAPS_HELD};
    gs.v = gs.held;
    sw_table_each(t, collect_gaps, &gs);
    /* A partial table could name the wrong period; unknown is safe (the
     * callers then assume one use per period). */
    if (agreed)
        *agreed = false;
    if (gs.oom || gs.n == 0) {
        gaps_free(&gs);
        return 0;
    }
    qsort(gs.v, gs.n, sizeof *gs.v, by_gap);
    size_t nwait = 0;
    while (nwait < gs.n && gs.v[nwait].gap == 0)
        nwait++;

    size_t lo = nwait, hi = nwait, best_lo = nwait, best_hi = nwait;
    uint64_t sum = 0, best = 0, all = 0; /* sum: bytes in [lo, hi) */
    for (size_t i = nwait; i < gs.n; i++) {
        all += gs.v[i].bytes;
        if (i > nwait && gs.v[i].gap == gs.v[i - 1].gap)
            continue;
        uint64_t center = gs.v[i].gap;
        while (hi < gs.n && !above(gs.v[hi].gap, center))
            sum += gs.v[hi++].bytes;
        while (below(gs.v[lo].gap, center)) /* stops at i at the latest */
            sum -= gs.v[lo++].bytes;
        if (sum > best) {
            best = sum;
            best_lo = lo;
            best_hi = hi;
        }
    }
    if (best == 0) {
        gaps_free(&gs);
        return 0;
    }
    /* the lower median by bytes: the first gap with half the window below */
    uint64_t acc = 0, period = gs.v[best_lo].gap;
    for (size_t i = best_lo; i < best_hi; i++) {
        acc += gs.v[i].bytes;
        if (acc >= best - best / 2) {
            period = gs.v[i].gap;
            break;
        }
    }
    if (all < waiting_bytes(&gs, nwait, period))
        period = 0;
    else if (agreed)
        *agreed = best > all - best;
    gaps_free(&gs);
    return period;
}

/* ---- segments ------------------------------------------------------------ */

/* Caps memory and the cost of a note: an allocation split into more
 * pieces than this is not a handful of tensors, and the mechanism falls
 * back to whole chunks for it. */
#define SEGMENTS_MAX 4096u

/* Index of the first start > p (nbounds when none). */
static uint32_t upper(const sw_alloc_t *a, uint64_t p)
{
    uint32_t lo = 0, hi = a->nbounds;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a->bounds[mid] <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The longest distance between two of n sorted starts in a row. Walked
 * again at each new start (as the memmove before it walks them): a start
 * between two splits their distance, which may have been the longest. */
static uint64_t longest_spacing(const uint64_t *bounds, uint32_t n)
{
    uint64_t most = 0;
    for (uint32_t i = 1; i < n; i++)
        if (bounds[i] - bounds[i - 1] > most)
            most = bounds[i] - bounds[i - 1];
    return most;
}

int sw_segment_note(sw_alloc_t *a, uint64_t p)
{
    /* Outside a, p is not a start of a's memory: refused, nothing changes. */
    if (p < a->va || p - a->va >= a->size)
        return -1;
    uint32_t i = upper(a, p);
    if (i > 0 && a->bounds[i - 1] == p)
        return 0; /* known already */
    if (a->nbounds >= SEGMENTS_MAX)
        return -1;
    if (a->nbounds == a->capbounds) {
        uint32_t cap = a->capbounds ? a->capbounds * 2 : 16;
        if (cap > SEGMENTS_MAX)
            cap = SEGMENTS_MAX;
        uint64_t *b = realloc(a->bounds, cap * sizeof *b);
        if (!b)
            return -1; /* a->bounds still valid and unchanged */
        a->bounds = b;
        a->capbounds = cap;
    }
    memmove(&a->bounds[i + 1], &a->bounds[i], (a->nbounds - i) * sizeof *a->bounds);
    a->bounds[i] = p;
    a->spacing = longest_spacing(a->bounds, a->nbounds + 1);
    /* Read without the caller's lock by sw_segment_count. */
    __atomic_store_n(&a->nbounds, a->nbounds + 1, __ATOMIC_RELAXED);
    return 0;
}

uint32_t sw_segment_count(const sw_alloc_t *a)
{
    return __atomic_load_n(&a->nbounds, __ATOMIC_RELAXED);
}

uint64_t sw_segment_end(const sw_alloc_t *a, uint64_t p)
{
    uint32_t i = upper(a, p);
    return i < a->nbounds ? a->bounds[i] : a->va + a->size;
}

void sw_segment_free(sw_alloc_t *a)
{
    free(a->bounds);
    a->bounds = NULL;
    a->nbounds = a->capbounds = 0;
    a->spacing = 0;
}

uint64_t sw_parts(uint64_t start, uint64_t len, uint64_t lo, uint64_t hi)
{
    if (lo < start)
        lo = start;
    if (hi > start + len)
        hi = start + len;
    if (!len || lo >= hi)
        return 0;
    /* The parts [lo, hi) overlaps: from the one holding lo to the last
     * one hi reaches into. Allocations lie in a 48-bit address space, so
     * the offsets times 64 cannot overflow. */
    unsigned first = (unsigned)((lo - start) * 64 / len);
    unsigned last = (unsigned)(((hi - start) * 64 + len - 1) / len - 1);
    return (last == 63 ? ~0ull : (2ull << last) - 1) & ~((1ull << first) - 1);
}

/*
 * test_policy_learned.c: the learned residency policy (core/policy.c),
 * black-box, from the contract in sw.h.
 *
 * sw_policy_victims_learned: the eligibility and stopping rules of
 * sw_policy_victims (device chunks, keep() honoured, shortest prefix
 * reaching need, cut to max), ordered by furthest predicted next use,
 * unknown furthest; ties fewer uses, then lower address. Against an
 * exhaustive optimum on small cyclic traces, with the schedule learned
 * online by sw_learn_touch, it must miss no more than the best possible
 * eviction sequence once warmed up, where LRU misses every access.
 *
 * sw_policy_prefetch: host chunks with slot < 0 that keep() does not hold
 * back, due in (now, now + horizon], soonest first (ties lower address),
 * taking what fits in the byte budget and skipping what does not, at most
 * max.
 *
 * sw_policy_on_touch_learned: zero-copy while capturing or without room;
 * otherwise promote exactly when uses * size / zerocopy > size / h2d,
 * uses = period / gap when both are known (at least 1), else 1.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "sw.h"
#include "unit.h"

#define MIB (1024ULL * 1024ULL)
#define GIB (1024ULL * MIB)
#define G (2 * MIB)
#define BASE 0x7f0000000000ULL

/* --- helpers ------------------------------------------------------------ */

static sw_alloc_t *mk_even(uint64_t va, uint32_t n, uint64_t chunk)
{
    uint64_t sizes[64];
    ck_assert_uint_le(n, 64);
    for (uint32_t i = 0; i < n; i++)
        sizes[i] = chunk;
    return unit_mk_alloc(va, sizes, n);
}

static sw_table_t *new_table(void)
{
    sw_table_t *t = sw_table_new(G);
    ck_assert_ptr_nonnull(t);
    return t;
}

static void insert(sw_table_t *t, sw_alloc_t *a)
{
    ck_assert_int_eq(sw_table_insert(t, a), 0);
}

/* A schedule: last use, uses, gap (0: unknown). */
static void set_sched(sw_chunk_t *c, uint64_t last_use, uint64_t uses, uint64_t gap)
{
    c->last_use = last_use;
    c->uses = uses;
    c->gap = gap;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

static size_t victims(const sw_table_t *t, uint64_t need, uint64_t now, keep_set_t *k,
                      sw_chunk_t **out, size_t max, uint64_t *freed)
{
    *freed = 0xdeadbeefULL; /* must be overwritten */
    return sw_policy_victims_learned(t, need, now, unit_keep_listed, k, out, max, freed);
}

/* --- victims_learned: order ------------------------------------------------ */

START_TEST(learned_victims_furthest_next_use_first)
{
    sw_table_t *t = new_table();
    sw_alloc_t *a = mk_even(BASE, 4, G);
    /* at now = 100, next uses: 0 -> 110, 1 -> 150, 2 -> 105, 3 -> 130;
     * chunk 1 is also the most recently used: not LRU's order */
    set_sched(&a->chunks[0], 90, 5, 20);
    set_sched(&a->chunks[1], 99, 5, 51);
    set_sched(&a->chunks[2], 85, 5, 20);
    set_sched(&a->chunks[3], 80, 5, 50);
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    uint64_t freed;
    const int order[4] = {1, 3, 0, 2};
    for (size_t want = 1; want <= 4; want++) {
        size_t n = victims(t, want * G, 100, k, out, 8, &freed);
        ck_assert_uint_eq(n, want);
        ck_assert_uint_eq(freed, want * G);
        for (size_t i = 0; i < want; i++)
            ck_assert(unit_contains(out, n, &a->chunks[order[i]]));
    }
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

START_TEST(learned_victims_unknown_next_use_counts_as_furthest)
{
    sw_table_t *t = new_table();
    sw_alloc_t *a = mk_even(BASE, 3, G);
    set_sched(&a->chunks[0], 10, 9, 1000000); /* far, but known */
    set_sched(&a->chunks[1], 50, 1, 0);       /* seen once: unknown */
    set_sched(&a->chunks[2], 0, 0, 0);        /* never seen: unknown */
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    uint64_t freed;
    size_t n = victims(t, 2 * G, 60, k, out, 8, &freed);
    ck_assert_uint_eq(n, 2);
    ck_assert(unit_contains(out, n, &a->chunks[1]));
    ck_assert(unit_contains(out, n, &a->chunks[2]));
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

START_TEST(learned_victims_break_ties_by_fewer_uses_then_lower_address)
{
    sw_table_t *t = new_table();
    sw_alloc_t *hi = mk_even(BASE + 64 * G, 2, G);
    sw_alloc_t *lo = mk_even(BASE, 2, G);
    /* all due at 120 (seen from now = 100) */
    set_sched(&hi->chunks[0], 100, 3, 20);
    set_sched(&hi->chunks[1], 110, 2, 10);
    set_sched(&lo->chunks[0], 60, 3, 30);
    set_sched(&lo->chunks[1], 80, 3, 40);
    insert(t, hi); /* inserted high first: insertion order gives nothing */
    insert(t, lo);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    uint64_t freed;
    size_t n = victims(t, G, 100, k, out, 8, &freed);
    ck_assert_uint_eq(n, 1);
    ck_assert_ptr_eq(out[0], &hi->chunks[1]); /* fewest uses */
    n = victims(t, 2 * G, 100, k, out, 8, &freed);
    ck_assert_uint_eq(n, 2);
    ck_assert(unit_contains(out, n, &lo->chunks[0])); /* then the lowest address */
    n = victims(t, 3 * G, 100, k, out, 8, &freed);
    ck_assert(unit_contains(out, n, &lo->chunks[1]));
    ck_assert(!unit_contains(out, n, &hi->chunks[0]));
    /* unknown ties too: fewer uses, then lower address */
    set_sched(&hi->chunks[1], 0, 0, 0);
    set_sched(&lo->chunks[1], 7, 1, 0);
    set_sched(&lo->chunks[0], 0, 0, 0);
    n = victims(t, G, 100, k, out, 8, &freed);
    ck_assert_ptr_eq(out[0], &lo->chunks[0]);
    n = victims(t, 3 * G, 100, k, out, 8, &freed);
    ck_assert_uint_eq(n, 3);
    ck_assert(!unit_contains(out, n, &hi->chunks[0]));
    sw_table_free(t);
    unit_free_alloc(hi);
    unit_free_alloc(lo);
    free(k);
}
END_TEST

START_TEST(learned_victims_order_follows_now)
{
    /* A chunk whose predicted use has just passed unseen is next due a
     * whole gap later: it becomes the furthest. */
    sw_table_t *t = new_table();
    sw_alloc_t *a = mk_even(BASE, 2, G);
    set_sched(&a->chunks[0], 100, 4, 10); /* due 110, then 120 */
    set_sched(&a->chunks[1], 100, 4, 15); /* due 115 */
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[2];
    uint64_t freed;
    victims(t, G, 105, k, out, 2, &freed);
    ck_assert_ptr_eq(out[0], &a->chunks[1]);
    victims(t, G, 110, k, out, 2, &freed); /* 0 now due at 120 */
    ck_assert_ptr_eq(out[0], &a->chunks[0]);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

/* --- victims_learned: eligibility and amount -------------------------------- */

START_TEST(learned_victims_take_device_chunks_only_and_honour_keep)
{
    sw_table_t *t = new_table();
    sw_alloc_t *a = mk_even(BASE, 5, G);
    for (uint32_t i = 0; i < 5; i++)
        set_sched(&a->chunks[i], 10, 2, 100 - 10 * i); /* furthest: 0, 1, 2, ... */
    a->chunks[0].where = SW_ON_HOST;
    a->chunks[1].where = SW_ON_HOST;
    a->chunks[1].slot = 3;
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    k->chunks[k->n++] = &a->chunks[2];
    sw_chunk_t *out[8];
    uint64_t freed;
    size_t n = victims(t, G, 20, k, out, 8, &freed);
    ck_assert_uint_eq(n, 1);
    ck_assert_ptr_eq(out[0], &a->chunks[3]);
    ck_assert_int_gt(k->calls, 0);
    n = victims(t, 100 * G, 20, k, out, 8, &freed);
    ck_assert_uint_eq(n, 2);
    ck_assert(unit_contains(out, n, &a->chunks[3]));
    ck_assert(unit_contains(out, n, &a->chunks[4]));
    ck_assert_uint_eq(freed, 2 * G);
    /* no keep() at all */
    n = sw_policy_victims_learned(t, 100 * G, 20, NULL, NULL, out, 8, &freed);
    ck_assert_uint_eq(n, 3);
    ck_assert(unit_contains(out, n, &a->chunks[2]));
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

START_TEST(learned_victims_stop_at_need_and_respect_max)
{
    sw_table_t *t = new_table();
    const uint64_t sizes[] = {4 * G, G, 2 * G, G};
    sw_alloc_t *a = unit_mk_alloc(BASE, sizes, 4);
    for (uint32_t i = 0; i < 4; i++)
        set_sched(&a->chunks[i], 10, 2, 100 - 10 * i); /* order 0, 1, 2, 3 */
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    uint64_t freed;
    ck_assert_uint_eq(victims(t, 4 * G, 20, k, out, 8, &freed), 1);
    ck_assert_uint_eq(freed, 4 * G);
    ck_assert_uint_eq(victims(t, 4 * G + 1, 20, k, out, 8, &freed), 2);
    ck_assert_uint_eq(freed, 5 * G);
    ck_assert_uint_eq(victims(t, 100 * G, 20, k, out, 8, &freed), 4);
    ck_assert_uint_eq(freed, 8 * G);
    sw_chunk_t *canary = (sw_chunk_t *)(uintptr_t)0x5a5a5a5a;
    for (int i = 0; i < 8; i++)
        out[i] = canary;
    ck_assert_uint_eq(victims(t, 100 * G, 20, k, out, 2, &freed), 2);
    ck_assert_uint_eq(freed, 5 * G);
    for (int i = 2; i < 8; i++)
        ck_assert_ptr_eq(out[i], canary);
    ck_assert_uint_eq(victims(t, 100 * G, 20, k, out, 0, &freed), 0);
    ck_assert_uint_eq(freed, 0);
    ck_assert_uint_eq(victims(t, 0, 20, k, out, 8, &freed), 0);
    ck_assert_uint_eq(freed, 0);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

START_TEST(learned_victims_do_not_modify_the_table)
{
    sw_table_t *t = new_table();
    sw_alloc_t *a = mk_even(BASE, 4, G);
    for (uint32_t i = 0; i < 4; i++)
        set_sched(&a->chunks[i], 10 + i, i, i * 7);
    a->chunks[2].where = SW_ON_HOST;
    insert(t, a);
    sw_alloc_t before = *a;
    sw_chunk_t chunks_before[4];
    memcpy(chunks_before, a->chunks, sizeof(chunks_before));
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    uint64_t freed;
    victims(t, 2 * G, 30, k, out, 8, &freed);
    victims(t, 100 * G, 30, k, out, 8, &freed);
    ck_assert_int_eq(memcmp(&before, a, sizeof(before)), 0);
    ck_assert_int_eq(memcmp(chunks_before, a->chunks, sizeof(chunks_before)), 0);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

/* The contract's order, restated independently: next use computed by the
 * definition (smallest last + k*gap after now, unknown when gap is 0). */
static uint64_t ref_next(const sw_chunk_t *c, uint64_t now)
{
    if (c->gap == 0)
        return UINT64_MAX;
    uint64_t n = c->last_use + c->gap;
    while (n <= now)
        n += c->gap;
    return n;
}

static int cmp_learned(const void *pa, const void *pb, void *nowp)
{
    const sw_chunk_t *a = *(sw_chunk_t *const *)pa, *b = *(sw_chunk_t *const *)pb;
    uint64_t now = *(const uint64_t *)nowp;
    uint64_t na = ref_next(a, now), nb = ref_next(b, now);
    if (na != nb)
        return na > nb ? -1 : 1;
    if (a->uses != b->uses)
        return a->uses < b->uses ? -1 : 1;
    return a->va < b->va ? -1 : a->va > b->va;
}

START_TEST(learned_victims_match_brute_force_on_random_tables)
{
    uint64_t s = 0x13198a2e03707344ULL;
    for (int round = 0; round < 3000; round++) {
        sw_table_t *t = new_table();
        keep_set_t *k = unit_keep_none();
        sw_alloc_t *as[5];
        sw_chunk_t *cand[64];
        int nalloc = 1 + (int)(rng_next(&s) % 5), ncand = 0;
        uint64_t total = 0, va = BASE, now = 20 + rng_next(&s) % 20;
        for (int i = 0; i < nalloc; i++) {
            va += (rng_next(&s) % 3) * G;
            uint32_t n = 1 + (uint32_t)(rng_next(&s) % 4);
            uint64_t sizes[4];
            for (uint32_t c = 0; c < n; c++)
                sizes[c] = (1 + rng_next(&s) % 3) * G;
            as[i] = unit_mk_alloc(va, sizes, n);
            va += as[i]->reserved;
            for (uint32_t c = 0; c < n; c++) {
                sw_chunk_t *ch = &as[i]->chunks[c];
                /* small ranges so that ties are common */
                set_sched(ch, rng_next(&s) % 20, rng_next(&s) % 3, rng_next(&s) % 6);
                if (rng_next(&s) % 4 == 0)
                    ch->where = SW_ON_HOST;
                if (rng_next(&s) % 5 == 0)
                    k->chunks[k->n++] = ch;
                else if (ch->where == SW_ON_DEVICE) {
                    cand[ncand++] = ch;
                    total += ch->size;
                }
            }
        }
        for (int i = nalloc; i-- > 0;)
            insert(t, as[i]);
        qsort_r(cand, (size_t)ncand, sizeof(cand[0]), cmp_learned, &now);
        uint64_t need = total ? 1 + rng_next(&s) % (total + G) : G;
        size_t max = (rng_next(&s) % 3 == 0) ? (size_t)(rng_next(&s) % 5) : 64;
        size_t want = 0;
        uint64_t want_freed = 0;
        while (want < (size_t)ncand && want < max && want_freed < need)
            want_freed += cand[want++]->size;
        sw_chunk_t *out[64];
        uint64_t freed;
        size_t n = victims(t, need, now, k, out, max, &freed);
        ck_assert_msg(n == want, "round %d: %zu victims, expected %zu", round, n, want);
        ck_assert_uint_eq(freed, want_freed);
        for (size_t i = 0; i < want; i++)
            ck_assert_msg(unit_contains(out, n, cand[i]), "round %d: victim %zu missing", round, i);
        sw_table_free(t);
        for (int i = 0; i < nalloc; i++)
            unit_free_alloc(as[i]);
        free(k);
    }
}
END_TEST

/* --- victims_learned against the optimum -------------------------------------
 *
 * A cache of k equal chunks (device) over n > k chunks (the rest on the
 * host); a trace names the chunk each launch touches (-1: a launch that
 * touches none), launch seq = position + 1. A touch of a host chunk is a
 * miss: the chunk is brought in, evicting one victim when the cache is
 * full. The optimum is found by trying every victim at every miss
 * (memoised on position and cache contents, which is still every choice).
 */

#define TMAX 128
#define NMAX 6

typedef struct {
    int len, n, k;
    int at[TMAX]; /* chunk per launch, -1 none */
} trace_t;

static void push_period(trace_t *tr, const int *order, int n, int idle)
{
    for (int i = 0; i < n; i++)
        tr->at[tr->len++] = order[i];
    for (int i = 0; i < idle; i++)
        tr->at[tr->len++] = -1;
    ck_assert_int_le(tr->len, TMAX);
}

/* Fewest misses serving tr->at[pos..len) from the cache set mask. */
static int opt_from(const trace_t *tr, int pos, unsigned mask, short *memo)
{
    if (pos == tr->len)
        return 0;
    short *m = &memo[pos * (1 << NMAX) + mask];
    if (*m >= 0)
        return *m;
    int id = tr->at[pos], best;
    if (id < 0 || (mask & (1u << id))) {
        best = opt_from(tr, pos + 1, mask, memo);
    } else if (__builtin_popcount(mask) < tr->k) {
        best = 1 + opt_from(tr, pos + 1, mask | 1u << id, memo);
    } else {
        best = TMAX + 1;
        for (int v = 0; v < tr->n; v++) {
            if (!(mask & (1u << v)))
                continue;
            int r = 1 + opt_from(tr, pos + 1, (mask & ~(1u << v)) | 1u << id, memo);
            if (r < best)
                best = r;
        }
    }
    return *m = (short)best;
}

static int optimum(const trace_t *tr, int pos, unsigned mask)
{
    short memo[TMAX * (1 << NMAX)];
    memset(memo, 0xff, sizeof(memo)); /* -1: not solved yet */
    return opt_from(tr, pos, mask, memo);
}

static bool keep_one(const sw_chunk_t *c, void *arg)
{
    return c == arg;
}

/* Plays the trace with the given policy and returns the misses at
 * positions >= from; *mask_at: the cache contents just before from;
 * *touches_after: the launches at or after from that touch a chunk. */
static int play(const trace_t *tr, bool learned, int from, unsigned *mask_at, int *touches_after)
{
    sw_table_t *t = new_table();
    sw_alloc_t *a = mk_even(BASE, (uint32_t)tr->n, G);
    for (int i = 0; i < tr->n; i++)
        a->chunks[i].where = SW_ON_HOST;
    insert(t, a);
    int resident = 0, misses = 0;
    *touches_after = 0;
    for (int pos = 0; pos < tr->len; pos++) {
        uint64_t seq = (uint64_t)pos + 1;
        if (pos == from) {
            *mask_at = 0;
            for (int i = 0; i < tr->n; i++)
                if (a->chunks[i].where == SW_ON_DEVICE)
                    *mask_at |= 1u << i;
        }
        int id = tr->at[pos];
        if (id < 0)
            continue;
        sw_chunk_t *c = &a->chunks[id];
        if (pos >= from)
            (*touches_after)++;
        if (c->where == SW_ON_HOST) {
            if (pos >= from)
                misses++;
            if (resident == tr->k) {
                sw_chunk_t *out[1];
                uint64_t freed;
                size_t nv = learned ? sw_policy_victims_learned(t, G, seq, keep_one, c, out, 1,
                                                                &freed)
                                    : sw_policy_victims(t, G, keep_one, c, out, 1, &freed);
                ck_assert_uint_eq(nv, 1);
                ck_assert_ptr_ne(out[0], c);
                ck_assert_int_eq(out[0]->where, SW_ON_DEVICE);
                out[0]->where = SW_ON_HOST;
                resident--;
            }
            c->where = SW_ON_DEVICE;
            resident++;
        }
        sw_learn_touch(c, seq);
    }
    sw_table_free(t);
    unit_free_alloc(a);
    return misses;
}

/* Learned == optimum from the learned policy's own state after warm-up;
 * LRU misses every access there and is strictly worse than the optimum
 * from its own state. */
static void check_against_optimum(const trace_t *tr, int from, bool lru_every_access)
{
    unsigned mask;
    int touches;
    int got = play(tr, true, from, &mask, &touches);
    int best = optimum(tr, from, mask);
    ck_assert_msg(got == best, "n %d k %d len %d from %d: learned %d misses, optimum %d", tr->n,
                  tr->k, tr->len, from, got, best);
    unsigned lmask;
    int lru = play(tr, false, from, &lmask, &touches);
    int lbest = optimum(tr, from, lmask);
    if (lru_every_access)
        ck_assert_msg(lru == touches, "n %d k %d: LRU %d misses of %d", tr->n, tr->k, lru,
                      touches);
    ck_assert_msg(lru > lbest, "n %d k %d: LRU %d, optimum %d", tr->n, tr->k, lru, lbest);
    ck_assert_int_gt(lru, got);
}

START_TEST(learned_optimum_solver_agrees_with_hand_counts)
{
    /* 0 1 2 0 1 2 with room for 2: 0, 1, 2 (evict 1, used later than 0),
     * 0 hit, 1 miss, 2 hit: 4. LRU would miss all 6. */
    trace_t tr = {.len = 6, .n = 3, .k = 2, .at = {0, 1, 2, 0, 1, 2}};
    ck_assert_int_eq(optimum(&tr, 0, 0), 4);
    /* everything fits: only the cold misses */
    tr.k = 3;
    ck_assert_int_eq(optimum(&tr, 0, 0), 3);
    ck_assert_int_eq(optimum(&tr, 3, 0x7), 0);
    /* room for 1: every change of chunk misses */
    tr.k = 1;
    ck_assert_int_eq(optimum(&tr, 0, 0), 6);
    /* idle launches change nothing */
    trace_t idle = {.len = 8, .n = 3, .k = 2, .at = {0, -1, 1, 2, -1, 0, 1, 2}};
    ck_assert_int_eq(optimum(&idle, 0, 0), 4);
}
END_TEST

START_TEST(learned_victims_match_the_optimum_on_cyclic_scans)
{
    for (int n = 3; n <= NMAX; n++)
        for (int k = 2; k < n; k++)
            for (int idle = 0; idle <= 2; idle++) {
                int order[NMAX];
                for (int i = 0; i < n; i++)
                    order[i] = i;
                int period = n + idle, periods = 24 / period < 3 ? 3 : 24 / period;
                trace_t tr = {.n = n, .k = k};
                for (int p = 0; p < periods; p++)
                    push_period(&tr, order, n, idle);
                ck_assert_int_le(tr.len, 24);
                check_against_optimum(&tr, 2 * period, true);
            }
}
END_TEST

/* The order the second loop visits the chunks in: 0 the same, 1 reversed,
 * 2 rotated by two, 3 neighbours swapped. */
static void shape_order(int shape, int n, int *order)
{
    for (int i = 0; i < n; i++) {
        switch (shape) {
        case 0: order[i] = i; break;
        case 1: order[i] = n - 1 - i; break;
        case 2: order[i] = (i + 2) % n; break;
        default: order[i] = (i ^ 1) < n ? i ^ 1 : i; break;
        }
    }
}

/* Two periods of 0..n-1 without idle launches, then `periods` of the
 * shape's order with idle launches after each. */
static trace_t changed_loop(int n, int k, int shape, int idle, int periods)
{
    int fwd[NMAX], nxt[NMAX];
    shape_order(0, n, fwd);
    shape_order(shape, n, nxt);
    trace_t tr = {.n = n, .k = k};
    push_period(&tr, fwd, n, 0);
    push_period(&tr, fwd, n, 0);
    for (int p = 0; p < periods; p++)
        push_period(&tr, nxt, n, idle);
    return tr;
}

START_TEST(learned_victims_match_the_optimum_two_periods_after_the_order_changes)
{
    /* Same period, new order: the gaps of the changing period are off,
     * but two periods later the policy is optimal again. */
    for (int n = 4; n <= NMAX; n++)
        for (int k = 2; k < n; k++)
            for (int shape = 1; shape < 4; shape++) {
                trace_t tr = changed_loop(n, k, shape, 0, 4);
                check_against_optimum(&tr, 2 * n + 2 * n, true);
            }
}
END_TEST

START_TEST(learned_victims_match_the_optimum_two_periods_after_the_period_more_than_doubles)
{
    /* n -> 2n + 1 launches per period: the new gap replaces the estimate
     * outright when first seen, at the end of the first longer period. */
    for (int n = 4; n <= NMAX; n++)
        for (int k = 2; k < n; k++) {
            trace_t tr = changed_loop(n, k, 0, n + 1, 4);
            check_against_optimum(&tr, 2 * n + 2 * (2 * n + 1), true);
        }
}
END_TEST

START_TEST(learned_victims_match_the_optimum_four_periods_after_a_smaller_period_change)
{
    /* n -> n + 3 launches per period lies within a factor of two: the
     * estimate is averaged towards it (n, n+1, n+2, n+3 over the first
     * four longer periods), and while it lags an overdue chunk looks a
     * whole gap away, so optimality returns only with the exact gap. */
    for (int n = 4; n <= NMAX; n++)
        for (int k = 2; k < n; k++) {
            trace_t tr = changed_loop(n, k, 0, 3, 6);
            check_against_optimum(&tr, 2 * n + 4 * (n + 3), true);
        }
}
END_TEST

/* The first period boundary of the second loop (index into the trace) at
 * which the learner, fed the trace, holds the exact period as every gap
 * and every chunk's last use is in the second loop, so that every
 * prediction is exact; -1 if never. */
static int converged_at(const trace_t *tr, int first, int period)
{
    sw_chunk_t c[NMAX];
    memset(c, 0, sizeof(c));
    for (int pos = 0; pos < tr->len; pos++) {
        if (pos >= first + period && (pos - first) % period == 0) {
            bool all = true;
            for (int i = 0; i < tr->n; i++)
                all &= c[i].gap == (uint64_t)period;
            if (all)
                return pos;
        }
        if (tr->at[pos] >= 0)
            sw_learn_touch(&c[tr->at[pos]], (uint64_t)pos + 1);
    }
    return -1;
}

START_TEST(learned_victims_match_the_optimum_once_every_gap_is_learned)
{
    /* Every kind of change together (new order and new period): whenever
     * the learner holds the exact period for every chunk, the learned
     * policy is Belady's and must be optimal from there on. The learner
     * must get there within six periods of the second loop. */
    for (int n = 4; n <= NMAX; n++)
        for (int k = 2; k < n; k++)
            for (int shape = 0; shape < 4; shape++)
                for (int v = 0; v < 3; v++) {
                    int idle = v == 0 ? 0 : v == 1 ? 3 : n + 1, period = n + idle;
                    if (shape == 0 && idle == 0)
                        continue; /* no change at all */
                    trace_t tr = changed_loop(n, k, shape, idle, 8);
                    int from = converged_at(&tr, 2 * n, period);
                    ck_assert_msg(from >= 0 && from <= 2 * n + 6 * period,
                                  "n %d shape %d idle %d: gaps learned at %d", n, shape, idle,
                                  from);
                    ck_assert_int_le(from + period, tr.len);
                    check_against_optimum(&tr, from, true);
                }
}
END_TEST

/* --- prefetch ----------------------------------------------------------------- */

/* Host chunks at BASE, no slot, all with the given schedules. */
static sw_alloc_t *host_alloc(uint32_t n, const uint64_t *sizes)
{
    sw_alloc_t *a = unit_mk_alloc(BASE, sizes, n);
    for (uint32_t i = 0; i < n; i++)
        a->chunks[i].where = SW_ON_HOST;
    return a;
}

static size_t prefetch(const sw_table_t *t, uint64_t now, uint64_t horizon, uint64_t bytes,
                       keep_set_t *k, sw_chunk_t **out, size_t max)
{
    return sw_policy_prefetch(t, now, horizon, bytes, unit_keep_listed, k, out, max);
}

START_TEST(prefetch_orders_soonest_first_then_lower_address)
{
    const uint64_t sizes[] = {G, G, G, G, G};
    sw_alloc_t *a = host_alloc(5, sizes);
    /* next uses at now = 100: 0 -> 130, 1 -> 110, 2 -> 120, 3 -> 110, 4 -> 105 */
    set_sched(&a->chunks[0], 90, 3, 40);
    set_sched(&a->chunks[1], 90, 3, 20);
    set_sched(&a->chunks[2], 80, 3, 40);
    set_sched(&a->chunks[3], 70, 3, 40);
    set_sched(&a->chunks[4], 95, 3, 10);
    sw_table_t *t = new_table();
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    size_t n = prefetch(t, 100, 1000, 100 * G, k, out, 8);
    ck_assert_uint_eq(n, 5);
    const int order[5] = {4, 1, 3, 2, 0}; /* 1 and 3 tie at 110: lower address first */
    for (int i = 0; i < 5; i++)
        ck_assert_ptr_eq(out[i], &a->chunks[order[i]]);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

START_TEST(prefetch_respects_the_horizon)
{
    const uint64_t sizes[] = {G, G, G, G};
    sw_alloc_t *a = host_alloc(4, sizes);
    set_sched(&a->chunks[0], 90, 3, 11); /* 101: just after now */
    set_sched(&a->chunks[1], 90, 3, 30); /* 120: at the horizon's edge */
    set_sched(&a->chunks[2], 90, 3, 31); /* 121: past it */
    set_sched(&a->chunks[3], 90, 1, 0);  /* unknown: never due */
    sw_table_t *t = new_table();
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    size_t n = prefetch(t, 100, 20, 100 * G, k, out, 8);
    ck_assert_uint_eq(n, 2);
    ck_assert_ptr_eq(out[0], &a->chunks[0]);
    ck_assert_ptr_eq(out[1], &a->chunks[1]);
    ck_assert_uint_eq(prefetch(t, 100, 0, 100 * G, k, out, 8), 0); /* (now, now] is empty */
    ck_assert_uint_eq(prefetch(t, 100, 1, 100 * G, k, out, 8), 1);
    /* a horizon without end still leaves out the unknown */
    n = prefetch(t, 100, UINT64_MAX, 100 * G, k, out, 8);
    ck_assert_uint_eq(n, 3);
    ck_assert(!unit_contains(out, n, &a->chunks[3]));
    /* a use due exactly now is not ahead: the next one is */
    set_sched(&a->chunks[0], 90, 3, 10); /* 100 now, then 110 */
    n = prefetch(t, 100, 9, 100 * G, k, out, 8);
    ck_assert_uint_eq(n, 0);
    n = prefetch(t, 100, 10, 100 * G, k, out, 8);
    ck_assert_uint_eq(n, 1);
    ck_assert_ptr_eq(out[0], &a->chunks[0]);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

/* Where nothing learned says what comes next (a capture before any loop),
 * free room is still worth filling: every host chunk qualifies, the ones
 * with a known next use first. */
START_TEST(fill_takes_the_unknown_after_the_due_by_address)
{
    const uint64_t sizes[] = {G, G, 2 * G, G, G};
    sw_alloc_t *a = host_alloc(5, sizes);
    set_sched(&a->chunks[0], 90, 1, 0);  /* unknown */
    set_sched(&a->chunks[1], 90, 3, 50); /* 140: past any loop of 20, still due */
    set_sched(&a->chunks[2], 90, 1, 0);  /* unknown, and 2 G */
    set_sched(&a->chunks[3], 90, 3, 15); /* 105 */
    set_sched(&a->chunks[4], 90, 1, 0);  /* unknown */
    a->chunks[4].where = SW_ON_DEVICE;   /* already there */
    sw_table_t *t = new_table();
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    ck_assert_uint_eq(prefetch(t, 100, 20, 100 * G, k, out, 8), 1);
    size_t n = sw_policy_fill(t, 100, 100 * G, unit_keep_listed, k, out, 8);
    ck_assert_uint_eq(n, 4);
    ck_assert_ptr_eq(out[0], &a->chunks[3]);
    ck_assert_ptr_eq(out[1], &a->chunks[1]);
    ck_assert_ptr_eq(out[2], &a->chunks[0]);
    ck_assert_ptr_eq(out[3], &a->chunks[2]);
    /* 3 G of room: the 2 G unknown chunk no longer fits after three of G */
    n = sw_policy_fill(t, 100, 3 * G, unit_keep_listed, k, out, 8);
    ck_assert_uint_eq(n, 3);
    ck_assert(!unit_contains(out, n, &a->chunks[2]));
    k->chunks[k->n++] = &a->chunks[0];
    n = sw_policy_fill(t, 100, 100 * G, unit_keep_listed, k, out, 8);
    ck_assert_uint_eq(n, 3);
    ck_assert(!unit_contains(out, n, &a->chunks[0]));
    ck_assert_uint_eq(sw_policy_fill(t, 100, 0, NULL, NULL, out, 8), 0);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

START_TEST(prefetch_skips_what_does_not_fit_and_continues)
{
    /* due in this order: 4G, 1G, 3G, 1G, 2G; budget 5G */
    const uint64_t sizes[] = {4 * G, G, 3 * G, G, 2 * G};
    sw_alloc_t *a = host_alloc(5, sizes);
    for (uint32_t i = 0; i < 5; i++)
        set_sched(&a->chunks[i], 100, 3, 10 + i);
    sw_table_t *t = new_table();
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    /* 4G (1G left), 1G (0 left), nothing else fits */
    size_t n = prefetch(t, 105, 100, 5 * G, k, out, 8);
    ck_assert_uint_eq(n, 2);
    ck_assert_ptr_eq(out[0], &a->chunks[0]);
    ck_assert_ptr_eq(out[1], &a->chunks[1]);
    /* 3G: 4G skipped, 1G (2G left), 3G skipped, 1G (1G left), 2G skipped */
    n = prefetch(t, 105, 100, 3 * G, k, out, 8);
    ck_assert_uint_eq(n, 2);
    ck_assert_ptr_eq(out[0], &a->chunks[1]);
    ck_assert_ptr_eq(out[1], &a->chunks[3]);
    /* exactly fitting counts: 4G + 1G + 3G + 1G + 2G = 11G */
    n = prefetch(t, 105, 100, 11 * G, k, out, 8);
    ck_assert_uint_eq(n, 5);
    n = prefetch(t, 105, 100, 11 * G - 1, k, out, 8);
    ck_assert_uint_eq(n, 4);
    ck_assert(!unit_contains(out, n, &a->chunks[4])); /* the last that no longer fits */
    ck_assert_uint_eq(prefetch(t, 105, 100, 0, k, out, 8), 0);
    ck_assert_uint_eq(prefetch(t, 105, 100, G - 1, k, out, 8), 0);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

START_TEST(prefetch_honours_keep_and_max)
{
    const uint64_t sizes[] = {G, G, G, G};
    sw_alloc_t *a = host_alloc(4, sizes);
    for (uint32_t i = 0; i < 4; i++)
        set_sched(&a->chunks[i], 100, 3, 10 + i);
    sw_table_t *t = new_table();
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    k->chunks[k->n++] = &a->chunks[0]; /* e.g. already being copied */
    sw_chunk_t *out[8];
    sw_chunk_t *canary = (sw_chunk_t *)(uintptr_t)0x5a5a5a5a;
    for (int i = 0; i < 8; i++)
        out[i] = canary;
    size_t n = prefetch(t, 105, 100, 100 * G, k, out, 2);
    ck_assert_uint_eq(n, 2);
    ck_assert_ptr_eq(out[0], &a->chunks[1]);
    ck_assert_ptr_eq(out[1], &a->chunks[2]);
    for (int i = 2; i < 8; i++)
        ck_assert_ptr_eq(out[i], canary);
    ck_assert_int_gt(k->calls, 0);
    ck_assert_uint_eq(prefetch(t, 105, 100, 100 * G, k, out, 0), 0);
    n = sw_policy_prefetch(t, 105, 100, 100 * G, NULL, NULL, out, 8);
    ck_assert_uint_eq(n, 4);
    ck_assert_ptr_eq(out[0], &a->chunks[0]);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

START_TEST(prefetch_excludes_device_chunks_and_chunks_in_a_slot)
{
    const uint64_t sizes[] = {G, G, G, G};
    sw_alloc_t *a = host_alloc(4, sizes);
    for (uint32_t i = 0; i < 4; i++)
        set_sched(&a->chunks[i], 100, 3, 10 + i);
    a->chunks[0].where = SW_ON_DEVICE; /* already there */
    a->chunks[1].slot = 0;             /* a window slot holds it */
    a->chunks[2].slot = 7;
    sw_table_t *t = new_table();
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    size_t n = prefetch(t, 105, 100, 100 * G, k, out, 8);
    ck_assert_uint_eq(n, 1);
    ck_assert_ptr_eq(out[0], &a->chunks[3]);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

START_TEST(prefetch_does_not_modify_the_table)
{
    const uint64_t sizes[] = {G, 2 * G, G};
    sw_alloc_t *a = host_alloc(3, sizes);
    for (uint32_t i = 0; i < 3; i++)
        set_sched(&a->chunks[i], 100, 3, 10 + i);
    sw_table_t *t = new_table();
    insert(t, a);
    sw_chunk_t chunks_before[3];
    memcpy(chunks_before, a->chunks, sizeof(chunks_before));
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    prefetch(t, 105, 100, 3 * G, k, out, 8);
    ck_assert_int_eq(memcmp(chunks_before, a->chunks, sizeof(chunks_before)), 0);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

static int cmp_sooner(const void *pa, const void *pb, void *nowp)
{
    const sw_chunk_t *a = *(sw_chunk_t *const *)pa, *b = *(sw_chunk_t *const *)pb;
    uint64_t now = *(const uint64_t *)nowp;
    uint64_t na = ref_next(a, now), nb = ref_next(b, now);
    if (na != nb)
        return na < nb ? -1 : 1;
    return a->va < b->va ? -1 : a->va > b->va;
}

START_TEST(prefetch_matches_brute_force_on_random_tables)
{
    uint64_t s = 0xa4093822299f31d0ULL;
    for (int round = 0; round < 3000; round++) {
        sw_table_t *t = new_table();
        keep_set_t *k = unit_keep_none();
        sw_alloc_t *as[4];
        sw_chunk_t *cand[64];
        int nalloc = 1 + (int)(rng_next(&s) % 4), ncand = 0;
        uint64_t va = BASE, now = 20 + rng_next(&s) % 20, horizon = rng_next(&s) % 15;
        for (int i = 0; i < nalloc; i++) {
            va += (rng_next(&s) % 3) * G;
            uint32_t n = 1 + (uint32_t)(rng_next(&s) % 5);
            uint64_t sizes[5];
            for (uint32_t c = 0; c < n; c++)
                sizes[c] = (1 + rng_next(&s) % 4) * G;
            as[i] = unit_mk_alloc(va, sizes, n);
            va += as[i]->reserved;
            for (uint32_t c = 0; c < n; c++) {
                sw_chunk_t *ch = &as[i]->chunks[c];
                set_sched(ch, rng_next(&s) % 30, rng_next(&s) % 4, rng_next(&s) % 8);
                ch->where = rng_next(&s) % 4 ? SW_ON_HOST : SW_ON_DEVICE;
                ch->slot = rng_next(&s) % 5 ? -1 : (int)(rng_next(&s) % 4);
                bool kept = rng_next(&s) % 6 == 0;
                if (kept)
                    k->chunks[k->n++] = ch;
                uint64_t next = ref_next(ch, now);
                if (!kept && ch->where == SW_ON_HOST && ch->slot < 0 && next != UINT64_MAX &&
                    next <= now + horizon)
                    cand[ncand++] = ch;
            }
        }
        for (int i = 0; i < nalloc; i++)
            insert(t, as[i]);
        qsort_r(cand, (size_t)ncand, sizeof(cand[0]), cmp_sooner, &now);
        uint64_t bytes = rng_next(&s) % (12 * G + 1);
        size_t max = (rng_next(&s) % 3 == 0) ? (size_t)(rng_next(&s) % 4) : 64;
        sw_chunk_t *want[64];
        size_t nwant = 0;
        uint64_t left = bytes;
        for (int i = 0; i < ncand && nwant < max; i++)
            if (cand[i]->size <= left) {
                want[nwant++] = cand[i];
                left -= cand[i]->size;
            }
        sw_chunk_t *out[64];
        size_t n = prefetch(t, now, horizon, bytes, k, out, max);
        ck_assert_msg(n == nwant, "round %d: %zu chunks, expected %zu", round, n, nwant);
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(out[i] == want[i], "round %d: position %zu differs", round, i);
        sw_table_free(t);
        for (int i = 0; i < nalloc; i++)
            unit_free_alloc(as[i]);
        free(k);
    }
}
END_TEST

/* --- on_touch_learned ----------------------------------------------------------- */

static sw_chunk_t touched(uint64_t size, uint64_t gap)
{
    sw_chunk_t c;
    memset(&c, 0, sizeof(c));
    c.va = BASE;
    c.size = size;
    c.where = SW_ON_HOST;
    c.last_use = 50;
    c.uses = 4;
    c.gap = gap;
    c.slot = -1;
    return c;
}

/* DMA 10 GB/s, zero-copy 25: promoting pays off from 3 reads per period. */
static const sw_link_t slow_dma = {.h2d_gbps = 10, .zerocopy_gbps = 25};

/* With the fixed cost of remapping (127 µs, the A100 VMM figures), a
 * chunk read once per period is worth moving only when it is big: at
 * 50 GB/s DMA and 35 GB/s in place, 16 MiB pays (335 + 127 < 479 µs) and
 * 4 MiB does not (84 + 127 > 120 µs). */
START_TEST(on_touch_learned_counts_the_fixed_cost_of_a_move)
{
    const sw_link_t link = {.h2d_gbps = 50, .zerocopy_gbps = 35, .move_ns = 127000};
    sw_chunk_t big = touched(16 * MIB, 100), small = touched(4 * MIB, 100);
    ck_assert_int_eq(sw_policy_on_touch_learned(&big, 80 * GIB, false, 100, &link),
                     SW_VERDICT_PROMOTE);
    ck_assert_int_eq(sw_policy_on_touch_learned(&small, 80 * GIB, false, 100, &link),
                     SW_VERDICT_ZERO_COPY);
    /* Read twice per period, the small one pays too (240 > 211 µs). */
    sw_chunk_t twice = touched(4 * MIB, 50);
    ck_assert_int_eq(sw_policy_on_touch_learned(&twice, 80 * GIB, false, 100, &link),
                     SW_VERDICT_PROMOTE);
}
END_TEST

START_TEST(on_touch_learned_zero_copy_while_capturing)
{
    sw_chunk_t c = touched(32 * MIB, 1); /* read 100 times per period */
    ck_assert_int_eq(sw_policy_on_touch_learned(&c, 80 * GIB, true, 100, &slow_dma),
                     SW_VERDICT_ZERO_COPY);
    ck_assert_int_eq(sw_policy_on_touch_learned(&c, 80 * GIB, false, 100, &slow_dma),
                     SW_VERDICT_PROMOTE);
}
END_TEST

START_TEST(on_touch_learned_zero_copy_without_room)
{
    sw_chunk_t c = touched(32 * MIB, 1);
    ck_assert_int_eq(sw_policy_on_touch_learned(&c, 32 * MIB - 1, false, 100, &slow_dma),
                     SW_VERDICT_ZERO_COPY);
    ck_assert_int_eq(sw_policy_on_touch_learned(&c, 0, false, 100, &slow_dma),
                     SW_VERDICT_ZERO_COPY);
    ck_assert_int_eq(sw_policy_on_touch_learned(&c, 32 * MIB, false, 100, &slow_dma),
                     SW_VERDICT_PROMOTE); /* exactly fits */
}
END_TEST

START_TEST(on_touch_learned_promotes_when_read_often_enough_per_period)
{
    /* period 60: gap 20 -> 3 reads (3/25 > 1/10), gap 30 -> 2 (2/25 < 1/10) */
    sw_chunk_t c = touched(32 * MIB, 20);
    ck_assert_int_eq(sw_policy_on_touch_learned(&c, GIB, false, 60, &slow_dma),
                     SW_VERDICT_PROMOTE);
    c.gap = 30;
    ck_assert_int_eq(sw_policy_on_touch_learned(&c, GIB, false, 60, &slow_dma),
                     SW_VERDICT_ZERO_COPY);
    /* reads per period round down: 60 / 21 = 2 */
    c.gap = 21;
    ck_assert_int_eq(sw_policy_on_touch_learned(&c, GIB, false, 60, &slow_dma),
                     SW_VERDICT_ZERO_COPY);
}
END_TEST

START_TEST(on_touch_learned_counts_one_read_when_the_schedule_is_unknown)
{
    /* A link where one read in place is dearer than the DMA promotes on
     * one read; slow_dma needs three. */
    const sw_link_t fast_dma = {.h2d_gbps = 25, .zerocopy_gbps = 20};
    sw_chunk_t c = touched(32 * MIB, 0); /* gap unknown */
    ck_assert_int_eq(sw_policy_on_touch_learned(&c, GIB, false, 60, &slow_dma),
                     SW_VERDICT_ZERO_COPY);
    ck_assert_int_eq(sw_policy_on_touch_learned(&c, GIB, false, 60, &fast_dma),
                     SW_VERDICT_PROMOTE);
    c.gap = 1; /* period unknown */
    ck_assert_int_eq(sw_policy_on_touch_learned(&c, GIB, false, 0, &slow_dma),
                     SW_VERDICT_ZERO_COPY);
    ck_assert_int_eq(sw_policy_on_touch_learned(&c, GIB, false, 0, &fast_dma),
                     SW_VERDICT_PROMOTE);
    /* a gap longer than the period is still one read, not zero */
    c.gap = 500;
    ck_assert_int_eq(sw_policy_on_touch_learned(&c, GIB, false, 60, &fast_dma),
                     SW_VERDICT_PROMOTE);
    ck_assert_int_eq(sw_policy_on_touch_learned(&c, GIB, false, 60, &slow_dma),
                     SW_VERDICT_ZERO_COPY);
}
END_TEST

START_TEST(on_touch_learned_equal_costs_read_in_place)
{
    /* 2 reads at 20 GB/s cost exactly one DMA at 10 GB/s: not dearer */
    const sw_link_t even = {.h2d_gbps = 10, .zerocopy_gbps = 20};
    sw_chunk_t c = touched(32 * MIB, 30);
    ck_assert_int_eq(sw_policy_on_touch_learned(&c, GIB, false, 60, &even),
                     SW_VERDICT_ZERO_COPY);
    c.gap = 20; /* 3 reads */
    ck_assert_int_eq(sw_policy_on_touch_learned(&c, GIB, false, 60, &even),
                     SW_VERDICT_PROMOTE);
}
END_TEST

/* --- out of memory ------------------------------------------------------------ */

START_TEST(learned_choices_out_of_memory_do_not_crash)
{
    /* Candidates are gathered into a growing array; without memory the
     * answers may be short but must stay correct. */
    sw_alloc_t *a = mk_even(BASE, 8, G);
    for (uint32_t i = 0; i < 8; i++) {
        set_sched(&a->chunks[i], 100, 3, 10 + i);
        a->chunks[i].where = i < 4 ? SW_ON_DEVICE : SW_ON_HOST;
    }
    sw_table_t *t = new_table();
    insert(t, a);
    sw_chunk_t *out[8], *pre[8];
    uint64_t freed = 0;
    oom_t o;
    if (!unit_oom_begin(&o)) {
        sw_table_free(t);
        unit_free_alloc(a);
        return;
    }
    size_t nv = sw_policy_victims_learned(t, 2 * G, 105, NULL, NULL, out, 8, &freed);
    size_t np = sw_policy_prefetch(t, 105, 100, 100 * G, NULL, NULL, pre, 8);
    unit_oom_end(&o);
    ck_assert_uint_le(nv, 2);
    uint64_t sum = 0;
    for (size_t i = 0; i < nv; i++) {
        ck_assert_int_eq(out[i]->where, SW_ON_DEVICE);
        sum += out[i]->size;
    }
    ck_assert_uint_eq(freed, sum);
    ck_assert_uint_le(np, 4);
    for (size_t i = 0; i < np; i++)
        ck_assert_int_eq(pre[i]->where, SW_ON_HOST);
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

/* --- suite ---------------------------------------------------------------- */

static void add_case(Suite *s, const TTest *t)
{
    TCase *tc = tcase_create(t->name);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, t);
    suite_add_tcase(s, tc);
}

Suite *policy_learned_suite(void)
{
    Suite *s = suite_create("policy_learned");
    add_case(s, learned_victims_furthest_next_use_first);
    add_case(s, learned_victims_unknown_next_use_counts_as_furthest);
    add_case(s, learned_victims_break_ties_by_fewer_uses_then_lower_address);
    add_case(s, learned_victims_order_follows_now);
    add_case(s, learned_victims_take_device_chunks_only_and_honour_keep);
    add_case(s, learned_victims_stop_at_need_and_respect_max);
    add_case(s, learned_victims_do_not_modify_the_table);
    add_case(s, learned_victims_match_brute_force_on_random_tables);
    add_case(s, learned_optimum_solver_agrees_with_hand_counts);
    add_case(s, learned_victims_match_the_optimum_on_cyclic_scans);
    add_case(s, learned_victims_match_the_optimum_two_periods_after_the_order_changes);
    add_case(s, learned_victims_match_the_optimum_two_periods_after_the_period_more_than_doubles);
    add_case(s, learned_victims_match_the_optimum_four_periods_after_a_smaller_period_change);
    add_case(s, learned_victims_match_the_optimum_once_every_gap_is_learned);
    add_case(s, prefetch_orders_soonest_first_then_lower_address);
    add_case(s, prefetch_respects_the_horizon);
    add_case(s, fill_takes_the_unknown_after_the_due_by_address);
    add_case(s, prefetch_skips_what_does_not_fit_and_continues);
    add_case(s, prefetch_honours_keep_and_max);
    add_case(s, prefetch_excludes_device_chunks_and_chunks_in_a_slot);
    add_case(s, prefetch_does_not_modify_the_table);
    add_case(s, prefetch_matches_brute_force_on_random_tables);
    add_case(s, on_touch_learned_counts_the_fixed_cost_of_a_move);
    add_case(s, on_touch_learned_zero_copy_while_capturing);
    add_case(s, on_touch_learned_zero_copy_without_room);
    add_case(s, on_touch_learned_promotes_when_read_often_enough_per_period);
    add_case(s, on_touch_learned_counts_one_read_when_the_schedule_is_unknown);
    add_case(s, on_touch_learned_equal_costs_read_in_place);
    add_case(s, learned_choices_out_of_memory_do_not_crash);
    return s;
}

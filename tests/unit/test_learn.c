/*
 * test_learn.c: the learned launch schedule and segments (core/learn.c),
 * black-box, from the contract in sw.h.
 *
 * sw_learn_touch: last_use and uses follow the touches, a second touch by
 * the same launch changes nothing; the first gap is taken as it is, later
 * ones averaged in with weight 1/4, unless below half or above twice the
 * estimate, which replace it. sw_learn_next_use: last_use + k*gap, the
 * smallest k >= 1 landing after now; UINT64_MAX while the gap is unknown.
 * sw_learn_period: the gap most bytes share, gaps within 1/8 counting as
 * one; 0 when no gap is known.
 *
 * Traces: a periodic loop (every chunk once per period) must be learned
 * exactly after two periods; a shifted loop (new period, new order) must
 * be followed; a random Zipf-like trace must give finite predictions for
 * every chunk seen twice, shorter gaps for popular chunks, and no overflow
 * with sequence numbers up to 2^40.
 *
 * Ranges (sw_learn_touch_range, read through sw_learn_state): exactly
 * what stamping chunk by chunk gives, for any mix of ranges and single
 * stamps; the same range stamped again is held once, not walked.
 *
 * Segments: starts noted in any order are kept sorted and distinct, and a
 * pointer's segment ends at the next start above it or at the end of the
 * allocation.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "sw.h"
#include "unit.h"

#define MIB (1024ULL * 1024ULL)
#define G (2 * MIB)
#define BASE 0x7f0000000000ULL

/* --- helpers ------------------------------------------------------------ */

static sw_alloc_t *mk_even(uint64_t va, uint32_t n, uint64_t chunk)
{
    uint64_t sizes[256];
    ck_assert_uint_le(n, 256);
    for (uint32_t i = 0; i < n; i++)
        sizes[i] = chunk;
    return unit_mk_alloc(va, sizes, n);
}

static sw_table_t *table_of(sw_alloc_t *a)
{
    sw_table_t *t = sw_table_new(G);
    ck_assert_ptr_nonnull(t);
    if (a)
        ck_assert_int_eq(sw_table_insert(t, a), 0);
    return t;
}

static sw_chunk_t fresh(void)
{
    sw_chunk_t c;
    memset(&c, 0, sizeof(c));
    c.va = BASE;
    c.size = G;
    c.slot = -1;
    return c;
}

/* Touches c at each of the given launches. */
static void touch_at(sw_chunk_t *c, const uint64_t *seqs, int n)
{
    for (int i = 0; i < n; i++)
        sw_learn_touch(c, seqs[i]);
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

static uint64_t absdiff(uint64_t a, uint64_t b)
{
    return a > b ? a - b : b - a;
}

/* --- touch ---------------------------------------------------------------- */

START_TEST(learn_touch_counts_uses_and_records_last_use)
{
    sw_chunk_t c = fresh();
    sw_learn_touch(&c, 3);
    ck_assert_uint_eq(c.last_use, 3);
    ck_assert_uint_eq(c.uses, 1);
    ck_assert_uint_eq(c.gap, 0); /* one use: no gap yet */
    sw_learn_touch(&c, 10);
    ck_assert_uint_eq(c.last_use, 10);
    ck_assert_uint_eq(c.uses, 2);
    ck_assert_uint_eq(c.gap, 7);
    /* nothing else in the chunk moves */
    ck_assert_uint_eq(c.va, BASE);
    ck_assert_uint_eq(c.size, G);
    ck_assert_int_eq(c.slot, -1);
}
END_TEST

START_TEST(learn_touch_by_the_same_launch_changes_nothing)
{
    sw_chunk_t c = fresh();
    sw_learn_touch(&c, 5);
    sw_learn_touch(&c, 5);
    ck_assert_uint_eq(c.uses, 1);
    ck_assert_uint_eq(c.gap, 0);
    sw_learn_touch(&c, 25);
    sw_chunk_t before = c;
    sw_learn_touch(&c, 25);
    sw_learn_touch(&c, 25);
    ck_assert_int_eq(memcmp(&before, &c, sizeof(c)), 0);
    ck_assert_uint_eq(c.uses, 2);
    ck_assert_uint_eq(c.gap, 20);
}
END_TEST

START_TEST(learn_touch_takes_the_first_gap_as_it_is)
{
    const uint64_t gaps[] = {1, 2, 20, 1000, 1ULL << 39};
    for (size_t i = 0; i < sizeof(gaps) / sizeof(gaps[0]); i++) {
        sw_chunk_t c = fresh();
        sw_learn_touch(&c, 100);
        sw_learn_touch(&c, 100 + gaps[i]);
        ck_assert_uint_eq(c.gap, gaps[i]);
    }
}
END_TEST

START_TEST(learn_touch_averages_later_gaps_with_weight_one_quarter)
{
    /* estimate 20; new gap 28 (within [10, 40]): 20 + 8/4 = 22 */
    sw_chunk_t c = fresh();
    const uint64_t up[] = {1, 21, 49};
    touch_at(&c, up, 3);
    ck_assert_uint_eq(c.gap, 22);
    /* estimate 20; new gap 12: 20 - 8/4 = 18 */
    c = fresh();
    const uint64_t down[] = {1, 21, 33};
    touch_at(&c, down, 3);
    ck_assert_uint_eq(c.gap, 18);
    /* a fractional step (20 -> 22: 20.5) stays within one launch of it */
    c = fresh();
    const uint64_t frac[] = {1, 21, 43};
    touch_at(&c, frac, 3);
    ck_assert_uint_ge(c.gap, 20);
    ck_assert_uint_le(c.gap, 21);
    /* an irregular launch moves the estimate by a quarter, not outright */
    c = fresh();
    const uint64_t once[] = {1, 101, 201, 337}; /* 100, 100, 136 */
    touch_at(&c, once, 4);
    ck_assert_uint_eq(c.gap, 109);
}
END_TEST

START_TEST(learn_touch_gap_below_half_replaces_the_estimate)
{
    sw_chunk_t c = fresh();
    const uint64_t s[] = {1, 21, 30}; /* 20, then 9 < 10 */
    touch_at(&c, s, 3);
    ck_assert_uint_eq(c.gap, 9);
    /* exactly half is not below half: averaged (20 - 10/4 = 17.5) */
    c = fresh();
    const uint64_t h[] = {1, 21, 31};
    touch_at(&c, h, 3);
    ck_assert_uint_ge(c.gap, 17);
    ck_assert_uint_le(c.gap, 18);
    /* odd estimate: half of 21 is 10.5, so 10 replaces and 11 averages */
    c = fresh();
    const uint64_t o1[] = {1, 22, 32};
    touch_at(&c, o1, 3);
    ck_assert_uint_eq(c.gap, 10);
    c = fresh();
    const uint64_t o2[] = {1, 22, 33};
    touch_at(&c, o2, 3);
    ck_assert_uint_ge(c.gap, 18);
    ck_assert_uint_le(c.gap, 19);
}
END_TEST

START_TEST(learn_touch_gap_above_twice_replaces_the_estimate)
{
    sw_chunk_t c = fresh();
    const uint64_t s[] = {1, 21, 62}; /* 20, then 41 > 40 */
    touch_at(&c, s, 3);
    ck_assert_uint_eq(c.gap, 41);
    /* exactly twice is not above twice: averaged (20 + 20/4 = 25) */
    c = fresh();
    const uint64_t t2[] = {1, 21, 61};
    touch_at(&c, t2, 3);
    ck_assert_uint_eq(c.gap, 25);
    /* a huge gap after a small one */
    c = fresh();
    const uint64_t big[] = {1, 2, 2 + (1ULL << 40)};
    touch_at(&c, big, 3);
    ck_assert_uint_eq(c.gap, 1ULL << 40);
}
END_TEST

START_TEST(learn_touch_reaches_a_steady_gap_exactly)
{
    /* Starting from 20, a steady 23 (within the averaging band) must be
     * learned exactly, not approached forever one short. */
    const uint64_t targets[] = {23, 17, 39, 11};
    for (size_t i = 0; i < 4; i++) {
        sw_chunk_t c = fresh();
        uint64_t seq = 1;
        sw_learn_touch(&c, seq);
        sw_learn_touch(&c, seq += 20);
        uint64_t prev = c.gap;
        for (int k = 0; k < 30; k++) {
            sw_learn_touch(&c, seq += targets[i]);
            /* monotone towards the target, never past it */
            ck_assert_uint_le(absdiff(c.gap, targets[i]), absdiff(prev, targets[i]));
            prev = c.gap;
        }
        ck_assert_uint_eq(c.gap, targets[i]);
    }
}
END_TEST

/* --- next use -------------------------------------------------------------- */

START_TEST(learn_next_use_unknown_before_two_uses)
{
    sw_chunk_t c = fresh();
    ck_assert_uint_eq(sw_learn_next_use(&c, 0), UINT64_MAX);
    ck_assert_uint_eq(sw_learn_next_use(&c, 100), UINT64_MAX);
    sw_learn_touch(&c, 7);
    ck_assert_uint_eq(sw_learn_next_use(&c, 7), UINT64_MAX);
    ck_assert_uint_eq(sw_learn_next_use(&c, 8), UINT64_MAX);
    sw_learn_touch(&c, 17);
    ck_assert_uint_eq(sw_learn_next_use(&c, 17), 27);
}
END_TEST

START_TEST(learn_next_use_is_last_use_plus_gap)
{
    sw_chunk_t c = fresh();
    c.last_use = 40;
    c.uses = 3;
    c.gap = 20;
    for (uint64_t now = 0; now < 60; now++)
        ck_assert_uint_eq(sw_learn_next_use(&c, now), 60);
}
END_TEST

START_TEST(learn_next_use_skips_whole_gaps_already_past)
{
    sw_chunk_t c = fresh();
    c.last_use = 10;
    c.uses = 2;
    c.gap = 5;
    ck_assert_uint_eq(sw_learn_next_use(&c, 14), 15);
    ck_assert_uint_eq(sw_learn_next_use(&c, 15), 20); /* after now, not at */
    ck_assert_uint_eq(sw_learn_next_use(&c, 17), 20);
    ck_assert_uint_eq(sw_learn_next_use(&c, 19), 20);
    ck_assert_uint_eq(sw_learn_next_use(&c, 20), 25);
    ck_assert_uint_eq(sw_learn_next_use(&c, 1000), 1005);
    /* exhaustive against the definition */
    for (uint64_t now = 0; now < 200; now++) {
        uint64_t k = 1;
        while (10 + k * 5 <= now)
            k++;
        ck_assert_uint_eq(sw_learn_next_use(&c, now), 10 + k * 5);
    }
}
END_TEST

START_TEST(learn_next_use_saturates_at_the_end_of_the_sequence_space)
{
    sw_chunk_t c = fresh();
    c.last_use = UINT64_MAX - 10;
    c.uses = 2;
    c.gap = 100;
    ck_assert_uint_eq(sw_learn_next_use(&c, UINT64_MAX - 5), UINT64_MAX);
    c.last_use = 1;
    c.gap = 1ULL << 62;
    ck_assert_uint_eq(sw_learn_next_use(&c, 2), 1 + (1ULL << 62));
    ck_assert_uint_eq(sw_learn_next_use(&c, 3ULL << 62), 1 + (3ULL << 62)); /* still fits */
    ck_assert_uint_eq(sw_learn_next_use(&c, 1 + (3ULL << 62)), UINT64_MAX);
    ck_assert_uint_eq(sw_learn_next_use(&c, UINT64_MAX), UINT64_MAX);
}
END_TEST

/* --- period --------------------------------------------------------------- */

START_TEST(learn_period_zero_when_nothing_is_known)
{
    sw_table_t *t = table_of(NULL);
    ck_assert_uint_eq(sw_learn_period(t, NULL), 0);
    sw_table_free(t);
    /* chunks seen once (or never) have no gap */
    sw_alloc_t *a = mk_even(BASE, 4, G);
    sw_learn_touch(&a->chunks[0], 1);
    sw_learn_touch(&a->chunks[1], 2);
    t = table_of(a);
    ck_assert_uint_eq(sw_learn_period(t, NULL), 0);
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

START_TEST(learn_period_is_the_gap_shared_by_the_most_bytes)
{
    /* three 1G chunks with gap 7 against one 4G chunk with gap 20 */
    const uint64_t sizes[] = {G, G, G, 4 * G};
    sw_alloc_t *a = unit_mk_alloc(BASE, sizes, 4);
    a->chunks[0].loop = a->chunks[1].loop = a->chunks[2].loop = 7;
    a->chunks[3].loop = 20;
    sw_table_t *t = table_of(a);
    ck_assert_uint_eq(sw_learn_period(t, NULL), 20);
    /* the same chunks with the sizes the other way round */
    a->chunks[3].loop = 7;
    a->chunks[0].loop = 20;
    ck_assert_uint_eq(sw_learn_period(t, NULL), 7);
    /* bytes, not chunk counts: one big chunk outweighs many small ones,
     * across allocations */
    sw_alloc_t *b = mk_even(BASE + 64 * G, 5, G);
    for (uint32_t i = 0; i < 5; i++)
        b->chunks[i].loop = 50;
    ck_assert_int_eq(sw_table_insert(t, b), 0);
    ck_assert_uint_eq(sw_learn_period(t, NULL), 7); /* 6G at 7 against 5G at 50 */
    a->chunks[1].loop = a->chunks[2].loop = 50;
    ck_assert_uint_eq(sw_learn_period(t, NULL), 50); /* 4G at 7 against 7G at 50 */
    sw_table_free(t);
    unit_free_alloc(a);
    unit_free_alloc(b);
}
END_TEST

/* The period is agreed when its gap holds more than half the bytes with
 * a known gap: not while the first loop gaps spread (a load-time pass at
 * another rhythm than the steps'), and not on a tie. */
START_TEST(learn_period_is_agreed_when_most_bytes_share_it)
{
    bool agreed = true;
    sw_table_t *t = table_of(NULL);
    ck_assert_uint_eq(sw_learn_period(t, &agreed), 0);
    ck_assert(!agreed);
    sw_table_free(t);

    sw_alloc_t *a = mk_even(BASE, 8, G);
    t = table_of(a);
    /* 32, 36, ... 60: gaps of a pass at half the steps' rhythm */
    for (uint32_t i = 0; i < 8; i++)
        a->chunks[i].loop = 32 + 4 * i;
    sw_learn_period(t, &agreed);
    ck_assert(!agreed);
    /* five of eight at the steps' 64 */
    for (uint32_t i = 0; i < 5; i++)
        a->chunks[i].loop = 64;
    ck_assert_uint_eq(sw_learn_period(t, &agreed), 64);
    ck_assert(agreed);
    /* four and four: no majority */
    for (uint32_t i = 4; i < 8; i++)
        a->chunks[i].loop = 40;
    sw_learn_period(t, &agreed);
    ck_assert(!agreed);
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

/* A loop gap of a few chunks is not the loop while more bytes, touched
 * twice or more, are still in their first visit: a fused weight read by
 * ten kernels a layer splits its first visit, and its first chunks show
 * 9 where the loop is 90 (tests/spillway/extent.c). Chunks touched by
 * every launch for four of the candidate's loops wait for nothing. */
START_TEST(learn_period_waits_for_the_bytes_still_in_their_first_visit)
{
    sw_alloc_t *a = mk_even(BASE, 8, G);
    sw_table_t *t = table_of(a);
    bool agreed = true;
    a->chunks[0].loop = a->chunks[1].loop = 9;
    for (uint32_t i = 2; i < 8; i++) {
        a->chunks[i].uses = 3;
        a->chunks[i].visit = 2;
        a->chunks[i].last_use = 14; /* a visit of 12 launches so far */
    }
    ck_assert_uint_eq(sw_learn_period(t, &agreed), 0);
    ck_assert(!agreed);
    /* half and half: the loop gaps count */
    for (uint32_t i = 2; i < 5; i++)
        a->chunks[i].uses = 1;
    a->chunks[2].loop = 9;
    ck_assert_uint_eq(sw_learn_period(t, &agreed), 9);
    ck_assert(agreed);
    /* their loop comes round: 90, agreed by most bytes */
    for (uint32_t i = 1; i < 8; i++)
        a->chunks[i].loop = 90;
    ck_assert_uint_eq(sw_learn_period(t, &agreed), 90);
    ck_assert(agreed);
    /* touched by every launch since the first: no loop to wait for */
    for (uint32_t i = 2; i < 8; i++) {
        a->chunks[i].loop = 0;
        a->chunks[i].uses = 40;
        a->chunks[i].visit = 1;
        a->chunks[i].last_use = 40;
    }
    a->chunks[1].loop = 9;
    ck_assert_uint_eq(sw_learn_period(t, &agreed), 9); /* 39 / 4 >= 9 */
    ck_assert(agreed);
    for (uint32_t i = 2; i < 8; i++)
        a->chunks[i].last_use = 36; /* 35 / 4 < 9: might still show 9 */
    ck_assert_uint_eq(sw_learn_period(t, &agreed), 0);
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

START_TEST(learn_period_counts_gaps_within_an_eighth_as_one)
{
    /* 19, 20, 21 (within 1/8 of 20) outweigh a 2G chunk at 30 */
    const uint64_t sizes[] = {G, G, G, 2 * G};
    sw_alloc_t *a = unit_mk_alloc(BASE, sizes, 4);
    a->chunks[0].loop = 19;
    a->chunks[1].loop = 20;
    a->chunks[2].loop = 21;
    a->chunks[3].loop = 30;
    sw_table_t *t = table_of(a);
    uint64_t p = sw_learn_period(t, NULL);
    ck_assert_uint_ge(p, 19);
    ck_assert_uint_le(p, 21);
    /* 16, 20, 24: more than 1/8 apart, each alone lighter than 30 */
    a->chunks[0].loop = 16;
    a->chunks[2].loop = 24;
    ck_assert_uint_eq(sw_learn_period(t, NULL), 30);
    /* the boundary: 1/8 of 16 is 2, so 16, 17 and 18 count as one (3G
     * against 30's 2G) */
    a->chunks[0].loop = 16;
    a->chunks[1].loop = 18;
    a->chunks[2].loop = 17;
    p = sw_learn_period(t, NULL);
    ck_assert_uint_ge(p, 16);
    ck_assert_uint_le(p, 18);
    /* 16 and 19 are not within 1/8 of each other (19 - 16 = 3 > 2) */
    a->chunks[1].loop = 19;
    a->chunks[2].loop = 22;
    ck_assert_uint_eq(sw_learn_period(t, NULL), 30);
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

/* A segment of several tensors is touched by the launches of its layers
 * one after another: gaps of one launch, then the loop. The period is
 * the loop's, measured between the starts of visits; the gap is left as
 * it was (the last touch's distance). Before visits, the period was 1. */
START_TEST(learn_period_is_the_loop_of_visits_not_the_gap_within_one)
{
    sw_alloc_t *a = mk_even(BASE, 8, G);
    sw_table_t *t = table_of(a);
    uint64_t seq = 1;
    for (int loop = 0; loop < 3; loop++)
        for (uint32_t i = 0; i < 8; i++)
            for (int layer = 0; layer < 5; layer++)
                sw_learn_touch(&a->chunks[i], seq++);
    ck_assert_uint_eq(sw_learn_period(t, NULL), 40);
    for (uint32_t i = 0; i < 8; i++) {
        ck_assert_uint_eq(a->chunks[i].loop, 40);
        ck_assert_uint_eq(a->chunks[i].gap, 1);
        ck_assert_uint_eq(a->chunks[i].visit, 81 + 5 * i);
    }
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

/* The boundary: a touch within a quarter of the loop gap of the one
 * before continues the visit; one further begins the next. */
START_TEST(learn_a_touch_within_a_quarter_of_the_loop_continues_a_visit)
{
    sw_chunk_t c = {0};
    sw_learn_touch(&c, 10);
    sw_learn_touch(&c, 50);
    ck_assert_uint_eq(c.loop, 40);
    ck_assert_uint_eq(c.visit, 50);
    sw_learn_touch(&c, 60); /* 10 after: the same visit */
    ck_assert_uint_eq(c.loop, 40);
    ck_assert_uint_eq(c.visit, 50);
    sw_learn_touch(&c, 71); /* 11 after: a new one, 21 after the last start */
    ck_assert_uint_eq(c.loop, 35); /* a quarter of the way from 40 to 21 */
    ck_assert_uint_eq(c.visit, 71);
    /* before any loop is known, touches up to four launches apart are one
     * visit, five apart two */
    sw_chunk_t d = {0};
    sw_learn_touch(&d, 1);
    sw_learn_touch(&d, 5);
    ck_assert_uint_eq(d.loop, 0);
    ck_assert_uint_eq(d.visit, 1);
    sw_learn_touch(&d, 10);
    ck_assert_uint_eq(d.loop, 9);
    ck_assert_uint_eq(d.visit, 10);
}
END_TEST

/* sw_parts: a range as 64 equal parts, bit i the i-th. */
START_TEST(parts_of_a_range_are_its_64ths)
{
    const uint64_t s = 1 << 20, len = 64 << 20;
    ck_assert_uint_eq(sw_parts(s, len, s, s + len), ~0ull);
    ck_assert_uint_eq(sw_parts(s, len, s, s + len / 2), 0xffffffffull);
    ck_assert_uint_eq(sw_parts(s, len, s + len / 2, s + len), 0xffffffff00000000ull);
    ck_assert_uint_eq(sw_parts(s, len, s + len - 1, s + len), 1ull << 63);
    ck_assert_uint_eq(sw_parts(s, len, s + (1 << 20), s + (1 << 20) + 1), 2);
    /* clamped to the range; nothing outside or empty gives no bit */
    ck_assert_uint_eq(sw_parts(s, len, 0, s + 1), 1);
    ck_assert_uint_eq(sw_parts(s, len, s + len - 1, UINT64_MAX), 1ull << 63);
    ck_assert_uint_eq(sw_parts(s, len, s + len, s + 2 * len), 0);
    ck_assert_uint_eq(sw_parts(s, len, s + 5, s + 5), 0);
    ck_assert_uint_eq(sw_parts(s, 0, s, s + 1), 0);
    /* a range shorter than 64 bytes: each byte its own part or parts */
    ck_assert_uint_eq(sw_parts(s, 16, s, s + 16), ~0ull);
    ck_assert_uint_eq(sw_parts(s, 16, s, s + 1), 0xf);
}
END_TEST

START_TEST(learn_period_ignores_chunks_without_a_gap)
{
    const uint64_t sizes[] = {G, 8 * G};
    sw_alloc_t *a = unit_mk_alloc(BASE, sizes, 2);
    a->chunks[0].loop = 12;
    a->chunks[1].last_use = 5; /* the big one: seen once */
    a->chunks[1].uses = 1;
    sw_table_t *t = table_of(a);
    ck_assert_uint_eq(sw_learn_period(t, NULL), 12);
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

/* --- traces: periodic ------------------------------------------------------- */

/*
 * The loop of the issue: the chunk at position pos of an order is touched
 * by launch start + 2*pos of every period (start: the period's first
 * launch). run_periods() runs that many periods of length len from l->seq
 * and, when check is set, compares the predictions for every chunk before
 * every launch with the true next touch (assuming the loop goes on the
 * same).
 */
typedef struct {
    sw_alloc_t *a;
    uint64_t seq;        /* the next launch's sequence number */
} loop_t;

/* The launch (within a period of length len) at which the chunk at
 * position pos of the order is touched. */
static uint64_t offset_of(int pos)
{
    return 2 * (uint64_t)pos;
}

static void run_periods(loop_t *l, int periods, uint64_t len, const int *order, bool check)
{
    uint32_t n = l->a->nchunks;
    for (int p = 0; p < periods; p++) {
        uint64_t start = l->seq;
        for (uint64_t off = 0; off < len; off++) {
            uint64_t now = start + off;
            if (check) {
                /* truth: this period's touch if still ahead, else the
                 * next period's (the same order and length) */
                for (int pos = 0; pos < (int)n; pos++) {
                    uint64_t due = start + offset_of(pos);
                    if (due <= now)
                        due += len;
                    ck_assert_msg(sw_learn_next_use(&l->a->chunks[order[pos]], now) == due,
                                  "chunk %d at %llu: predicted %llu, due %llu", order[pos],
                                  (unsigned long long)now,
                                  (unsigned long long)sw_learn_next_use(
                                      &l->a->chunks[order[pos]], now),
                                  (unsigned long long)due);
                }
            }
            for (int pos = 0; pos < (int)n; pos++)
                if (offset_of(pos) == off)
                    sw_learn_touch(&l->a->chunks[order[pos]], now);
        }
        l->seq = start + len;
    }
}

START_TEST(learn_periodic_trace_learns_gaps_next_uses_and_period_in_two_periods)
{
    int order[10];
    for (int i = 0; i < 10; i++)
        order[i] = i;
    loop_t l = {mk_even(BASE, 10, G), 1};
    sw_table_t *t = table_of(l.a);
    run_periods(&l, 1, 20, order, false);
    for (int i = 0; i < 10; i++) {
        ck_assert_uint_eq(l.a->chunks[i].gap, 0);
        ck_assert_uint_eq(sw_learn_next_use(&l.a->chunks[i], l.seq), UINT64_MAX);
    }
    ck_assert_uint_eq(sw_learn_period(t, NULL), 0);
    run_periods(&l, 1, 20, order, false);
    for (int i = 0; i < 10; i++) {
        ck_assert_uint_eq(l.a->chunks[i].gap, 20);
        ck_assert_uint_eq(l.a->chunks[i].uses, 2);
    }
    ck_assert_uint_eq(sw_learn_period(t, NULL), 20);
    /* from the third period on, every prediction at every launch is exact */
    run_periods(&l, 10, 20, order, true);
    for (int i = 0; i < 10; i++) {
        ck_assert_uint_eq(l.a->chunks[i].gap, 20);
        ck_assert_uint_eq(l.a->chunks[i].uses, 12);
    }
    ck_assert_uint_eq(sw_learn_period(t, NULL), 20);
    sw_table_free(t);
    unit_free_alloc(l.a);
}
END_TEST

START_TEST(learn_periodic_trace_with_many_chunks_per_launch)
{
    /* One launch touching half the chunks, another the other half, the
     * same launch reporting a chunk twice: still gap == period. */
    sw_alloc_t *a = mk_even(BASE, 8, G);
    sw_table_t *t = table_of(a);
    for (uint64_t p = 0; p < 3; p++) {
        uint64_t s = 1 + 13 * p;
        for (int i = 0; i < 4; i++) {
            sw_learn_touch(&a->chunks[i], s);
            sw_learn_touch(&a->chunks[i], s);
        }
        for (int i = 4; i < 8; i++)
            sw_learn_touch(&a->chunks[i], s + 6);
    }
    for (int i = 0; i < 8; i++) {
        ck_assert_uint_eq(a->chunks[i].gap, 13);
        ck_assert_uint_eq(a->chunks[i].uses, 3);
    }
    /* last touches at 27 and 33 */
    ck_assert_uint_eq(sw_learn_next_use(&a->chunks[0], 35), 40);
    ck_assert_uint_eq(sw_learn_next_use(&a->chunks[7], 35), 46);
    ck_assert_uint_eq(sw_learn_next_use(&a->chunks[7], 30), 46); /* not yet past 33 */
    ck_assert_uint_eq(sw_learn_period(t, NULL), 13);
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

/* --- traces: shifting ------------------------------------------------------- */

/* A change of period length shows first at the touches after the first
 * period of the new length: those are the first whose gap spans it. */

START_TEST(learn_period_change_beyond_a_factor_two_is_followed_in_one_period)
{
    const uint64_t to[] = {50, 8, 41, 9};
    for (int v = 0; v < 4; v++) {
        int order[4] = {0, 1, 2, 3};
        loop_t l = {mk_even(BASE, 4, G), 1};
        sw_table_t *t = table_of(l.a);
        run_periods(&l, 3, 20, order, false);
        ck_assert_uint_eq(sw_learn_period(t, NULL), 20);
        run_periods(&l, 1, to[v], order, false);
        for (int i = 0; i < 4; i++)
            ck_assert_uint_eq(l.a->chunks[i].gap, 20); /* not seen yet */
        /* the first touch after it replaces the estimate */
        run_periods(&l, 1, to[v], order, false);
        for (int i = 0; i < 4; i++)
            ck_assert_uint_eq(l.a->chunks[i].gap, to[v]);
        ck_assert_uint_eq(sw_learn_period(t, NULL), to[v]);
        run_periods(&l, 3, to[v], order, true);
        sw_table_free(t);
        unit_free_alloc(l.a);
    }
}
END_TEST

START_TEST(learn_period_change_within_a_factor_two_converges)
{
    /* 20 -> 35 lies inside [half, twice]: the contract averages it in.
     * Every period moves every gap towards 35 and never past it; within a
     * few periods the gaps and the period are within 1/8 of 35, and a
     * little later exact, with exact predictions. */
    int order[10];
    for (int i = 0; i < 10; i++)
        order[i] = i;
    loop_t l = {mk_even(BASE, 10, G), 1};
    sw_table_t *t = table_of(l.a);
    run_periods(&l, 3, 20, order, false);
    run_periods(&l, 1, 35, order, false); /* not seen yet */
    uint64_t prev = 20;
    int within = -1, exact = -1;
    for (int p = 1; p <= 12; p++) {
        run_periods(&l, 1, 35, order, false);
        uint64_t g = l.a->chunks[0].gap;
        for (int i = 1; i < 10; i++)
            ck_assert_uint_eq(l.a->chunks[i].gap, g); /* the same history */
        ck_assert_uint_le(g, 35);
        if (prev < 35)
            ck_assert_uint_gt(g, prev); /* moves every period until there */
        else
            ck_assert_uint_eq(g, 35);
        prev = g;
        uint64_t period = sw_learn_period(t, NULL);
        ck_assert_uint_eq(period, g);
        if (within < 0 && absdiff(g, 35) <= 35 / 8)
            within = p;
        if (exact < 0 && g == 35)
            exact = p;
    }
    /* a quarter per period: 15 * (3/4)^5 < 35/8 */
    ck_assert_int_ge(within, 1);
    ck_assert_int_le(within, 5);
    ck_assert_int_ge(exact, 1);
    ck_assert_int_le(exact, 10);
    run_periods(&l, 2, 35, order, true);
    sw_table_free(t);
    unit_free_alloc(l.a);
}
END_TEST

START_TEST(learn_order_change_is_followed_within_three_periods)
{
    /* Same period, order reversed: the touch in the changing period lands
     * anywhere from 2 to 38 launches after the last one. Gaps below 10
     * are replaced and corrected the period after; the others are
     * averaged back (38 gives 25, 23, 22, 21, 20), so three periods
     * later every gap is within 1/8 of 20 and the period is 20 again, and
     * a few more make every prediction exact. */
    int fwd[10], rev[10];
    for (int i = 0; i < 10; i++) {
        fwd[i] = i;
        rev[i] = 9 - i;
    }
    loop_t l = {mk_even(BASE, 10, G), 1};
    sw_table_t *t = table_of(l.a);
    run_periods(&l, 3, 20, fwd, false);
    run_periods(&l, 3, 20, rev, false);
    for (int i = 0; i < 10; i++)
        ck_assert_msg(absdiff(l.a->chunks[i].gap, 20) <= 20 / 8, "chunk %d: gap %llu", i,
                      (unsigned long long)l.a->chunks[i].gap);
    ck_assert_uint_eq(sw_learn_period(t, NULL), 20);
    run_periods(&l, 3, 20, rev, false);
    for (int i = 0; i < 10; i++)
        ck_assert_uint_eq(l.a->chunks[i].gap, 20);
    run_periods(&l, 2, 20, rev, true);
    sw_table_free(t);
    unit_free_alloc(l.a);
}
END_TEST

/* --- traces: random -------------------------------------------------------- */

#define ZN 64

/* A Zipf(1)-like pick: chunk r with weight 1/(r+1). */
static int zipf_pick(const double *cdf, uint64_t *s)
{
    double u = (double)(rng_next(s) >> 11) / 9007199254740992.0 * cdf[ZN - 1];
    int lo = 0, hi = ZN - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Runs launches touching 1..3 Zipf-picked chunks each, with sequence
 * numbers advancing by stride (plus up to jitter) per launch; checks every
 * prediction's definition along the way and returns the time-averaged
 * gaps of the chunks by popularity rank in avg[]. */
static void run_zipf(uint64_t seed, uint64_t first, uint64_t stride, uint64_t jitter, int launches,
                     double *avg)
{
    double cdf[ZN], acc = 0;
    for (int r = 0; r < ZN; r++)
        cdf[r] = acc += 1.0 / (r + 1);
    sw_alloc_t *a = mk_even(BASE, ZN, G);
    uint64_t s = seed, seq = first, touches[ZN] = {0};
    double sum[ZN] = {0};
    uint64_t samples[ZN] = {0};
    for (int l = 0; l < launches; l++) {
        int k = 1 + (int)(rng_next(&s) % 3);
        for (int j = 0; j < k; j++) {
            int r = zipf_pick(cdf, &s);
            if (a->chunks[r].last_use != seq)
                touches[r]++;
            sw_learn_touch(&a->chunks[r], seq);
        }
        if (l % 251 == 0) {
            for (int r = 0; r < ZN; r++) {
                const sw_chunk_t *c = &a->chunks[r];
                uint64_t next = sw_learn_next_use(c, seq);
                /* seen twice: finite, after now, on the chunk's grid, the
                 * first point of it after now; else unknown. Checked with
                 * one assertion (each one costs check a message). */
                bool ok = c->uses == touches[r];
                if (c->uses < 2)
                    ok &= next == UINT64_MAX;
                else
                    ok &= c->gap != 0 && next != UINT64_MAX && next > seq &&
                          next > c->last_use && (next - c->last_use) % c->gap == 0 &&
                          next - c->gap <= seq;
                if (!ok)
                    ck_abort_msg("chunk %d at %llu: uses %llu (%llu), last %llu, gap %llu, "
                                 "next %llu",
                                 r, (unsigned long long)seq, (unsigned long long)c->uses,
                                 (unsigned long long)touches[r], (unsigned long long)c->last_use,
                                 (unsigned long long)c->gap, (unsigned long long)next);
                if (c->uses >= 2) {
                    sum[r] += (double)c->gap;
                    samples[r]++;
                }
            }
        }
        seq += stride + (jitter ? rng_next(&s) % jitter : 0);
    }
    for (int r = 0; r < ZN; r++)
        avg[r] = samples[r] ? sum[r] / (double)samples[r] : 0;
    unit_free_alloc(a);
}

START_TEST(learn_random_zipf_trace_predicts_finite_uses_shorter_gaps_for_popular_chunks)
{
    double avg[ZN];
    run_zipf(0x9e3779b97f4a7c15ULL, 1, 1, 0, 200000, avg);
    /* every chunk was seen twice early on, at this length */
    for (int r = 0; r < ZN; r++)
        ck_assert(avg[r] > 0);
    double top = 0, bottom = 0;
    for (int r = 0; r < 4; r++)
        top += avg[r] / 4;
    for (int r = ZN - 16; r < ZN; r++)
        bottom += avg[r] / 16;
    /* expected gaps ~ 1/(touch rate): about 2.4 launches for the most
     * popular, ~150 for the rarest; demand a clear separation */
    ck_assert_msg(top * 8 < bottom, "popular %.1f, rare %.1f", top, bottom);
    ck_assert_msg(avg[0] < avg[ZN - 1], "most popular %.1f, rarest %.1f", avg[0], avg[ZN - 1]);
    /* and ranks in broad bands stay ordered */
    for (int band = 0; band + 1 < 4; band++) {
        double lo = 0, hi = 0;
        for (int r = band * 16; r < band * 16 + 16; r++)
            lo += avg[r];
        for (int r = band * 16 + 16; r < band * 16 + 32; r++)
            hi += avg[r];
        ck_assert_msg(lo < hi, "band %d: %.1f vs %.1f", band, lo / 16, hi / 16);
    }
}
END_TEST

START_TEST(learn_random_trace_with_sequence_numbers_up_to_2_to_the_40)
{
    double avg[ZN];
    /* strides of about 2^22 over 2^18 launches: seq ends past 2^40 */
    run_zipf(0x0123456789abcdefULL, 1, 1ULL << 22, 1ULL << 12, 1 << 18, avg);
    /* and starting just below 2^40, unit strides */
    run_zipf(42, (1ULL << 40) - 50000, 1, 3, 100000, avg);
    double top = avg[0] + avg[1], bottom = avg[ZN - 2] + avg[ZN - 1];
    ck_assert(top < bottom);
}
END_TEST

/* --- segments ------------------------------------------------------------- */

/* An allocation of size bytes at BASE (one chunk is enough: segments do not
 * look at chunks). */
static sw_alloc_t *seg_alloc(uint64_t size)
{
    uint64_t sizes[1] = {size};
    sw_alloc_t *a = unit_mk_alloc(BASE, sizes, 1);
    return a;
}

/* Also checks the kept spacing against its definition: the longest
 * distance between two starts in a row. */
static void assert_sorted_distinct_inside(const sw_alloc_t *a)
{
    uint64_t most = 0;
    ck_assert_uint_le(a->nbounds, a->capbounds);
    for (uint32_t i = 0; i < a->nbounds; i++) {
        ck_assert_uint_ge(a->bounds[i], a->va);
        ck_assert_uint_lt(a->bounds[i], a->va + a->size);
        if (i) {
            ck_assert_uint_lt(a->bounds[i - 1], a->bounds[i]);
            if (a->bounds[i] - a->bounds[i - 1] > most)
                most = a->bounds[i] - a->bounds[i - 1];
        }
    }
    ck_assert_uint_eq(a->spacing, most);
}

START_TEST(segment_end_without_notes_is_the_allocation_end)
{
    sw_alloc_t *a = seg_alloc(8 * G);
    ck_assert_uint_eq(a->nbounds, 0);
    ck_assert_uint_eq(sw_segment_end(a, BASE), BASE + 8 * G);
    ck_assert_uint_eq(sw_segment_end(a, BASE + 3 * G + 5), BASE + 8 * G);
    ck_assert_uint_eq(sw_segment_end(a, BASE + 8 * G - 1), BASE + 8 * G);
    unit_free_alloc(a);
}
END_TEST

START_TEST(segment_notes_in_any_order_give_sorted_distinct_starts)
{
    uint64_t s = 77;
    for (int round = 0; round < 200; round++) {
        sw_alloc_t *a = seg_alloc(16 * G);
        uint64_t want[64];
        int nwant = 0;
        int notes = 1 + (int)(rng_next(&s) % 60);
        for (int i = 0; i < notes; i++) {
            /* small range: duplicates are common */
            uint64_t p = BASE + (rng_next(&s) % 40) * (G / 4);
            ck_assert_int_eq(sw_segment_note(a, p), 0);
            bool seen = false;
            for (int j = 0; j < nwant; j++)
                seen |= want[j] == p;
            if (!seen)
                want[nwant++] = p;
            assert_sorted_distinct_inside(a);
        }
        ck_assert_uint_eq(a->nbounds, (uint32_t)nwant);
        for (int j = 0; j < nwant; j++) {
            bool found = false;
            for (uint32_t i = 0; i < a->nbounds; i++)
                found |= a->bounds[i] == want[j];
            ck_assert(found);
        }
        unit_free_alloc(a);
    }
}
END_TEST

START_TEST(segment_end_is_the_next_start_or_the_allocation_end)
{
    sw_alloc_t *a = seg_alloc(8 * G);
    const uint64_t starts[] = {BASE + 5 * G, BASE, BASE + 2 * G, BASE + 2 * G + 64};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(sw_segment_note(a, starts[i]), 0);
    ck_assert_uint_eq(sw_segment_end(a, BASE + 1), BASE + 2 * G);
    ck_assert_uint_eq(sw_segment_end(a, BASE + 2 * G - 1), BASE + 2 * G);
    ck_assert_uint_eq(sw_segment_end(a, BASE + 2 * G + 1), BASE + 2 * G + 64);
    ck_assert_uint_eq(sw_segment_end(a, BASE + 3 * G), BASE + 5 * G);
    ck_assert_uint_eq(sw_segment_end(a, BASE + 5 * G + 1), BASE + 8 * G);
    ck_assert_uint_eq(sw_segment_end(a, BASE + 8 * G - 1), BASE + 8 * G);
    /* against the definition, over the whole allocation */
    for (uint64_t p = BASE; p < BASE + 8 * G; p += G / 8 + 3) {
        uint64_t want = BASE + 8 * G;
        for (int i = 0; i < 4; i++)
            if (starts[i] > p && starts[i] < want)
                want = starts[i];
        ck_assert_uint_eq(sw_segment_end(a, p), want);
    }
    unit_free_alloc(a);
}
END_TEST

START_TEST(segment_pointer_exactly_at_a_start_ends_at_the_next_start)
{
    sw_alloc_t *a = seg_alloc(8 * G);
    ck_assert_int_eq(sw_segment_note(a, BASE), 0);
    ck_assert_int_eq(sw_segment_note(a, BASE + 3 * G), 0);
    ck_assert_int_eq(sw_segment_note(a, BASE + 6 * G), 0);
    ck_assert_uint_eq(sw_segment_end(a, BASE), BASE + 3 * G);
    ck_assert_uint_eq(sw_segment_end(a, BASE + 3 * G), BASE + 6 * G);
    ck_assert_uint_eq(sw_segment_end(a, BASE + 6 * G), BASE + 8 * G); /* last: the end */
    unit_free_alloc(a);
}
END_TEST

START_TEST(segment_duplicate_notes_are_ignored)
{
    sw_alloc_t *a = seg_alloc(8 * G);
    ck_assert_int_eq(sw_segment_note(a, BASE + G), 0);
    ck_assert_int_eq(sw_segment_note(a, BASE + 4 * G), 0);
    uint64_t before[2] = {a->bounds[0], a->bounds[1]};
    for (int i = 0; i < 100; i++) {
        ck_assert_int_eq(sw_segment_note(a, BASE + G), 0);
        ck_assert_int_eq(sw_segment_note(a, BASE + 4 * G), 0);
    }
    ck_assert_uint_eq(a->nbounds, 2);
    ck_assert_uint_eq(a->bounds[0], before[0]);
    ck_assert_uint_eq(a->bounds[1], before[1]);
    unit_free_alloc(a);
}
END_TEST

START_TEST(segment_notes_stop_at_4096_starts)
{
    sw_alloc_t *a = seg_alloc(8192 * G);
    /* noted from the top down: every note inserts at the front */
    for (uint64_t i = 4096; i-- > 0;)
        ck_assert_int_eq(sw_segment_note(a, BASE + i * 2 * G), 0);
    ck_assert_uint_eq(a->nbounds, 4096);
    assert_sorted_distinct_inside(a);
    uint64_t *copy = malloc(4096 * sizeof(*copy));
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, a->bounds, 4096 * sizeof(*copy));
    /* a new start is refused and nothing changes */
    ck_assert_int_eq(sw_segment_note(a, BASE + G), -1);
    ck_assert_int_eq(sw_segment_note(a, BASE + 8192 * G - 1), -1);
    ck_assert_uint_eq(a->nbounds, 4096);
    ck_assert_int_eq(memcmp(copy, a->bounds, 4096 * sizeof(*copy)), 0);
    /* a known one is still fine (nothing to add) */
    ck_assert_int_eq(sw_segment_note(a, BASE + 2 * G), 0);
    ck_assert_uint_eq(a->nbounds, 4096);
    /* and the ends still work */
    ck_assert_uint_eq(sw_segment_end(a, BASE + G), BASE + 2 * G);
    ck_assert_uint_eq(sw_segment_end(a, BASE + 4095 * 2 * G), BASE + 8192 * G);
    free(copy);
    unit_free_alloc(a);
}
END_TEST

START_TEST(segment_notes_outside_the_allocation_are_refused)
{
    sw_alloc_t *a = seg_alloc(4 * G);
    a->size = 3 * G + 100; /* the app asked for less than was reserved */
    ck_assert_int_eq(sw_segment_note(a, BASE - 1), -1);
    ck_assert_int_eq(sw_segment_note(a, BASE + 3 * G + 100), -1);
    ck_assert_int_eq(sw_segment_note(a, BASE + 4 * G), -1);
    ck_assert_uint_eq(a->nbounds, 0);
    ck_assert_int_eq(sw_segment_note(a, BASE + 3 * G + 99), 0);
    ck_assert_uint_eq(sw_segment_end(a, BASE), BASE + 3 * G + 99);
    ck_assert_uint_eq(sw_segment_end(a, BASE + 3 * G + 99), BASE + 3 * G + 100);
    unit_free_alloc(a);
}
END_TEST

START_TEST(segment_free_releases_the_starts_and_allows_new_ones)
{
    sw_alloc_t *a = seg_alloc(8 * G);
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(sw_segment_note(a, BASE + (uint64_t)i * 4096), 0);
    sw_segment_free(a);
    ck_assert_ptr_null(a->bounds);
    ck_assert_uint_eq(a->nbounds, 0);
    ck_assert_uint_eq(a->capbounds, 0);
    ck_assert_uint_eq(sw_segment_end(a, BASE), BASE + 8 * G);
    sw_segment_free(a); /* twice is harmless */
    ck_assert_int_eq(sw_segment_note(a, BASE + G), 0);
    ck_assert_uint_eq(sw_segment_end(a, BASE), BASE + G);
    unit_free_alloc(a);
}
END_TEST

START_TEST(segment_note_out_of_memory_returns_minus_one_and_changes_nothing)
{
    sw_alloc_t *a = seg_alloc(64 * G);
    /* fill the first array exactly, so that the next note must grow it */
    uint32_t n = 0;
    while (a->nbounds == 0 || a->nbounds < a->capbounds)
        ck_assert_int_eq(sw_segment_note(a, BASE + (uint64_t)(n++) * G), 0);
    uint32_t nb = a->nbounds, cap = a->capbounds;
    uint64_t *ptr = a->bounds, copy[64];
    ck_assert_uint_le(nb, 64);
    memcpy(copy, a->bounds, nb * sizeof(*copy));
    oom_t o;
    if (!unit_oom_begin(&o)) {
        unit_free_alloc(a);
        return;
    }
    int rc = sw_segment_note(a, BASE + 63 * G);
    int dup = sw_segment_note(a, BASE); /* known: needs no memory */
    unit_oom_end(&o);
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(dup, 0);
    ck_assert_uint_eq(a->nbounds, nb);
    ck_assert_uint_eq(a->capbounds, cap);
    ck_assert_ptr_eq(a->bounds, ptr);
    ck_assert_int_eq(memcmp(copy, a->bounds, nb * sizeof(*copy)), 0);
    /* with memory back, the same note works */
    ck_assert_int_eq(sw_segment_note(a, BASE + 63 * G), 0);
    ck_assert_uint_eq(a->nbounds, nb + 1);
    unit_free_alloc(a);
}
END_TEST

START_TEST(learn_period_out_of_memory_does_not_crash)
{
    sw_alloc_t *a = mk_even(BASE, 8, G);
    for (uint32_t i = 0; i < 8; i++)
        a->chunks[i].loop = 20;
    sw_table_t *t = table_of(a);
    oom_t o;
    if (!unit_oom_begin(&o)) {
        sw_table_free(t);
        unit_free_alloc(a);
        return;
    }
    uint64_t p = sw_learn_period(t, NULL);
    unit_oom_end(&o);
    ck_assert(p == 0 || p == 20); /* unknown, or right */
    ck_assert_uint_eq(sw_learn_period(t, NULL), 20);
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

/* --- ranges ---------------------------------------------------------------- */

static void expect_same_schedule(const sw_alloc_t *a, const sw_alloc_t *ref, uint64_t now)
{
    for (uint32_t i = 0; i < a->nchunks; i++) {
        const sw_chunk_t *c = &a->chunks[i], *r = &ref->chunks[i];
        const sw_sched_t s = sw_learn_state(c);
        ck_assert_msg(s.last_use == r->last_use && s.uses == r->uses && s.gap == r->gap &&
                          s.heat == r->heat,
                      "chunk %u at launch %llu: {%llu %llu %llu %u}, chunk by chunk {%llu %llu "
                      "%llu %u}",
                      i, (unsigned long long)now, (unsigned long long)s.last_use,
                      (unsigned long long)s.uses, (unsigned long long)s.gap, s.heat,
                      (unsigned long long)r->last_use, (unsigned long long)r->uses,
                      (unsigned long long)r->gap, r->heat);
        ck_assert_uint_eq(sw_learn_next_use(c, now), sw_learn_next_use(r, now));
        ck_assert_uint_eq(sw_learn_heat(c, now + 100), sw_learn_heat(r, now + 100));
    }
}

/* Ranges stamped over and over, several per launch, overlapping, more
 * disjoint ones than runs can hold, with single-chunk stamps in between:
 * every chunk's schedule, next use, heat and the period read exactly as
 * stamping chunk by chunk leaves them. */
START_TEST(learn_range_stamps_read_back_as_stamping_chunk_by_chunk)
{
    enum { N = 64 };
    sw_alloc_t *a = mk_even(BASE, N, G), *ref = mk_even(BASE + 1024 * MIB, N, G);
    sw_table_t *ta = table_of(a), *tr = table_of(ref);
    static const uint32_t ranges[][2] = {
        {0, 64}, {0, 32}, {32, 64}, {10, 20}, {20, 30}, {40, 44}, {50, 60}, {60, 64}, {5, 6},
    };
    const int nr = (int)(sizeof ranges / sizeof *ranges);
    uint64_t x = 12345;
    for (uint64_t seq = 1; seq <= 4000; seq++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t pick = (uint32_t)(x >> 33);
        /* A phase of one steady range, then phases mixing several: runs
         * form, are stamped in O(1), and are broken up. */
        int k = seq < 1000 ? 0 : seq < 2000 ? (int)(pick % 3) : (int)(pick % nr);
        int per_launch = seq < 3000 ? 1 : 1 + (int)(pick >> 8) % 3;
        if (pick % 7 == 0 && seq % 5 != 0)
            continue; /* a launch that does not touch this allocation */
        for (int j = 0; j < per_launch; j++) {
            int kk = (k + j * 4) % nr;
            sw_learn_touch_range(a, ranges[kk][0], ranges[kk][1], seq);
            for (uint32_t i = ranges[kk][0]; i < ranges[kk][1]; i++)
                sw_learn_touch(&ref->chunks[i], seq);
        }
        if (pick % 11 == 0) {
            uint32_t i = (pick >> 4) % N;
            sw_learn_touch(&a->chunks[i], seq);
            sw_learn_touch(&ref->chunks[i], seq);
        }
        expect_same_schedule(a, ref, seq);
        if (seq % 97 == 0)
            ck_assert_uint_eq(sw_learn_period(ta, NULL), sw_learn_period(tr, NULL));
    }
    sw_table_free(ta);
    sw_table_free(tr);
    unit_free_alloc(a);
    unit_free_alloc(ref);
}
END_TEST

/* The arena case: a pointer at the start of 4096 chunks, launch after
 * launch. From the second stamp on, the chunks themselves are not
 * written (the range is held once), yet each reads the new stamp. */
START_TEST(learn_range_stamped_again_is_held_once)
{
    enum { N = 4096 };
    static uint64_t sizes[N];
    for (uint32_t i = 0; i < N; i++)
        sizes[i] = G;
    sw_alloc_t *a = unit_mk_alloc(BASE, sizes, N);
    sw_learn_touch_range(a, 0, N, 1);
    ck_assert_uint_eq(a->nruns, 1);
    for (uint64_t seq = 2; seq <= 50; seq++)
        sw_learn_touch_range(a, 0, N, seq);
    for (uint32_t i = 0; i < N; i++) {
        ck_assert_uint_eq(a->chunks[i].last_use, 1); /* not walked */
        const sw_sched_t s = sw_learn_state(&a->chunks[i]);
        ck_assert_uint_eq(s.last_use, 50);
        ck_assert_uint_eq(s.uses, 50);
        ck_assert_uint_eq(s.gap, 1);
    }
    /* A stamp of one of them writes the run back into every chunk first. */
    sw_learn_touch(&a->chunks[7], 60);
    ck_assert_uint_eq(a->nruns, 0);
    ck_assert_uint_eq(a->chunks[0].last_use, 50);
    ck_assert_uint_eq(a->chunks[N - 1].uses, 50);
    ck_assert_uint_eq(a->chunks[7].last_use, 60);
    ck_assert_uint_eq(a->chunks[7].gap, 10); /* a gap above twice 1 replaces it */
    unit_free_alloc(a);
}
END_TEST

/* A range past the last chunk is clamped; an empty one changes nothing. */
START_TEST(learn_range_is_clamped_to_the_allocation)
{
    sw_alloc_t *a = mk_even(BASE, 4, G);
    sw_learn_touch_range(a, 2, 100, 3);
    sw_learn_touch_range(a, 3, 3, 4);
    sw_learn_touch_range(a, 9, 12, 5);
    for (uint32_t i = 0; i < 4; i++) {
        const sw_sched_t s = sw_learn_state(&a->chunks[i]);
        ck_assert_uint_eq(s.last_use, i < 2 ? 0 : 3);
        ck_assert_uint_eq(s.uses, i < 2 ? 0 : 1);
    }
    unit_free_alloc(a);
}
END_TEST

/* A new phase (spillway_phase): predictions go, facts stay, in single
 * chunks and in runs alike, and the next two uses teach a new gap. */
START_TEST(learn_forget_drops_gaps_and_heat_but_keeps_last_use_and_uses)
{
    sw_alloc_t *a = mk_even(BASE, 8, G);
    sw_table_t *t = table_of(a);
    for (uint64_t seq = 10; seq <= 50; seq += 10) {
        sw_learn_touch_range(a, 0, 4, seq); /* a run of chunks 0..3 */
        sw_learn_touch(&a->chunks[6], seq);
    }
    ck_assert_uint_eq(a->nruns, 1);
    sw_learn_forget(t);
    for (uint32_t i = 0; i < 8; i++) {
        const sw_sched_t st = sw_learn_state(&a->chunks[i]);
        ck_assert_uint_eq(st.gap, 0);
        ck_assert_uint_eq(st.loop, 0);
        ck_assert_uint_eq(st.visit, 0);
        ck_assert_uint_eq(st.heat, 0);
        ck_assert_uint_eq(sw_learn_next_use(&a->chunks[i], 50), UINT64_MAX);
    }
    ck_assert_uint_eq(sw_learn_state(&a->chunks[0]).last_use, 50);
    ck_assert_uint_eq(sw_learn_state(&a->chunks[3]).uses, 5);
    ck_assert_uint_eq(a->chunks[6].last_use, 50);
    ck_assert_uint_eq(a->chunks[6].uses, 5);
    /* The first gap after the phase is taken as it is, not averaged. */
    sw_learn_touch(&a->chunks[6], 53);
    ck_assert_uint_eq(a->chunks[6].gap, 3);
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

Suite *learn_suite(void)
{
    Suite *s = suite_create("learn");
    add_case(s, learn_touch_counts_uses_and_records_last_use);
    add_case(s, learn_touch_by_the_same_launch_changes_nothing);
    add_case(s, learn_touch_takes_the_first_gap_as_it_is);
    add_case(s, learn_touch_averages_later_gaps_with_weight_one_quarter);
    add_case(s, learn_touch_gap_below_half_replaces_the_estimate);
    add_case(s, learn_touch_gap_above_twice_replaces_the_estimate);
    add_case(s, learn_touch_reaches_a_steady_gap_exactly);
    add_case(s, learn_next_use_unknown_before_two_uses);
    add_case(s, learn_next_use_is_last_use_plus_gap);
    add_case(s, learn_next_use_skips_whole_gaps_already_past);
    add_case(s, learn_next_use_saturates_at_the_end_of_the_sequence_space);
    add_case(s, learn_period_zero_when_nothing_is_known);
    add_case(s, learn_period_is_the_gap_shared_by_the_most_bytes);
    add_case(s, learn_period_waits_for_the_bytes_still_in_their_first_visit);
    add_case(s, learn_period_counts_gaps_within_an_eighth_as_one);
    add_case(s, learn_period_is_agreed_when_most_bytes_share_it);
    add_case(s, learn_period_ignores_chunks_without_a_gap);
    add_case(s, learn_period_is_the_loop_of_visits_not_the_gap_within_one);
    add_case(s, learn_a_touch_within_a_quarter_of_the_loop_continues_a_visit);
    add_case(s, parts_of_a_range_are_its_64ths);
    add_case(s, learn_periodic_trace_learns_gaps_next_uses_and_period_in_two_periods);
    add_case(s, learn_periodic_trace_with_many_chunks_per_launch);
    add_case(s, learn_period_change_beyond_a_factor_two_is_followed_in_one_period);
    add_case(s, learn_period_change_within_a_factor_two_converges);
    add_case(s, learn_order_change_is_followed_within_three_periods);
    add_case(s, learn_random_zipf_trace_predicts_finite_uses_shorter_gaps_for_popular_chunks);
    add_case(s, learn_random_trace_with_sequence_numbers_up_to_2_to_the_40);
    add_case(s, segment_end_without_notes_is_the_allocation_end);
    add_case(s, segment_notes_in_any_order_give_sorted_distinct_starts);
    add_case(s, segment_end_is_the_next_start_or_the_allocation_end);
    add_case(s, segment_pointer_exactly_at_a_start_ends_at_the_next_start);
    add_case(s, segment_duplicate_notes_are_ignored);
    add_case(s, segment_notes_stop_at_4096_starts);
    add_case(s, segment_notes_outside_the_allocation_are_refused);
    add_case(s, segment_free_releases_the_starts_and_allows_new_ones);
    add_case(s, segment_note_out_of_memory_returns_minus_one_and_changes_nothing);
    add_case(s, learn_period_out_of_memory_does_not_crash);
    add_case(s, learn_range_stamps_read_back_as_stamping_chunk_by_chunk);
    add_case(s, learn_range_stamped_again_is_held_once);
    add_case(s, learn_range_is_clamped_to_the_allocation);
    add_case(s, learn_forget_drops_gaps_and_heat_but_keeps_last_use_and_uses);
    return s;
}

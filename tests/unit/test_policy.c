/*
 * test_policy.c: residency verdicts (core/policy.c), black-box, from the
 * contract in sw.h.
 *
 * sw_policy_victims: device chunks only, least recently used first (ties:
 * fewer uses, then lower address), keep() honoured, stop as soon as the
 * chosen chunks hold >= need bytes, at most max of them, *freed the true sum,
 * never changing anything. The brute-force case states the whole rule at
 * once: sort the device chunks that keep() does not hold back by
 * (last_use, uses, va) and take the shortest prefix whose sizes sum to
 * >= need (all of them when they cannot), cut to max.
 *
 * The output order is not part of the contract (only "chooses ... least
 * recently used first"), so victim lists are compared as sets.
 *
 * sw_policy_on_touch: a host chunk is promoted when it fits in device_free
 * and no stream capture is going on; otherwise it is read zero-copy.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

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

static void set_use(sw_chunk_t *c, uint64_t last_use, uint64_t uses)
{
    c->last_use = last_use;
    c->uses = uses;
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

/* Runs sw_policy_victims with unit_keep_listed and a roomy out array. */
static size_t victims(const sw_table_t *t, uint64_t need, keep_set_t *k, sw_chunk_t **out,
                      size_t max, uint64_t *freed)
{
    *freed = 0xdeadbeefULL; /* must be overwritten */
    return sw_policy_victims(t, need, unit_keep_listed, k, out, max, freed);
}

/* --- victims: order ---------------------------------------------------- */

START_TEST(policy_victims_picks_least_recently_used_first)
{
    sw_table_t *t = new_table();
    sw_alloc_t *a = mk_even(BASE, 4, G);
    set_use(&a->chunks[0], 40, 1);
    set_use(&a->chunks[1], 10, 9); /* oldest: goes first despite many uses */
    set_use(&a->chunks[2], 30, 1);
    set_use(&a->chunks[3], 20, 1);
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    uint64_t freed;
    /* growing need, growing prefix of the order 1, 3, 2, 0 */
    const int order[4] = {1, 3, 2, 0};
    for (size_t want = 1; want <= 4; want++) {
        size_t n = victims(t, want * G, k, out, 8, &freed);
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

START_TEST(policy_victims_never_used_chunks_go_first)
{
    sw_table_t *t = new_table();
    sw_alloc_t *a = mk_even(BASE, 3, G);
    set_use(&a->chunks[0], 5, 1);
    set_use(&a->chunks[1], 1, 1);
    set_use(&a->chunks[2], 0, 0); /* never touched by a launch */
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    uint64_t freed;
    size_t n = victims(t, 1, k, out, 8, &freed);
    ck_assert_uint_eq(n, 1);
    ck_assert_ptr_eq(out[0], &a->chunks[2]);
    ck_assert_uint_eq(freed, G);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

START_TEST(policy_victims_breaks_last_use_ties_by_fewer_uses)
{
    sw_table_t *t = new_table();
    sw_alloc_t *a = mk_even(BASE, 3, G);
    set_use(&a->chunks[0], 7, 5);
    set_use(&a->chunks[1], 7, 2);
    set_use(&a->chunks[2], 7, 3);
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    uint64_t freed;
    size_t n = victims(t, G, k, out, 8, &freed);
    ck_assert_uint_eq(n, 1);
    ck_assert_ptr_eq(out[0], &a->chunks[1]);
    n = victims(t, 2 * G, k, out, 8, &freed);
    ck_assert_uint_eq(n, 2);
    ck_assert(unit_contains(out, n, &a->chunks[1]));
    ck_assert(unit_contains(out, n, &a->chunks[2]));
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

START_TEST(policy_victims_breaks_full_ties_by_lower_address)
{
    /* Equal last_use and uses everywhere; allocations inserted from high
     * to low address so that insertion order does not give the answer. */
    sw_table_t *t = new_table();
    sw_alloc_t *hi = mk_even(BASE + 8 * GIB, 2, G);
    sw_alloc_t *mid = mk_even(BASE + 4 * GIB, 2, G);
    sw_alloc_t *lo = mk_even(BASE + 1 * GIB, 2, G);
    sw_alloc_t *all[] = {hi, mid, lo};
    for (int i = 0; i < 3; i++) {
        for (uint32_t c = 0; c < 2; c++)
            set_use(&all[i]->chunks[c], 3, 3);
        insert(t, all[i]);
    }
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    uint64_t freed;
    size_t n = victims(t, G, k, out, 8, &freed);
    ck_assert_uint_eq(n, 1);
    ck_assert_ptr_eq(out[0], &lo->chunks[0]);
    n = victims(t, 3 * G, k, out, 8, &freed);
    ck_assert_uint_eq(n, 3);
    ck_assert(unit_contains(out, n, &lo->chunks[0]));
    ck_assert(unit_contains(out, n, &lo->chunks[1]));
    ck_assert(unit_contains(out, n, &mid->chunks[0]));
    sw_table_free(t);
    for (int i = 0; i < 3; i++)
        unit_free_alloc(all[i]);
    free(k);
}
END_TEST

/* --- victims: what is eligible ----------------------------------------- */

START_TEST(policy_victims_skips_host_chunks)
{
    sw_table_t *t = new_table();
    sw_alloc_t *a = mk_even(BASE, 4, G);
    set_use(&a->chunks[0], 1, 1);
    set_use(&a->chunks[1], 2, 1);
    set_use(&a->chunks[2], 3, 1);
    set_use(&a->chunks[3], 4, 1);
    a->chunks[0].where = SW_ON_HOST; /* the oldest ones are already on the host */
    a->chunks[1].where = SW_ON_HOST;
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    uint64_t freed;
    size_t n = victims(t, G, k, out, 8, &freed);
    ck_assert_uint_eq(n, 1);
    ck_assert_ptr_eq(out[0], &a->chunks[2]);
    /* asking for everything gives only the device chunks */
    n = victims(t, 100 * G, k, out, 8, &freed);
    ck_assert_uint_eq(n, 2);
    ck_assert(unit_contains(out, n, &a->chunks[2]));
    ck_assert(unit_contains(out, n, &a->chunks[3]));
    ck_assert_uint_eq(freed, 2 * G);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

START_TEST(policy_victims_honours_keep)
{
    sw_table_t *t = new_table();
    sw_alloc_t *a = mk_even(BASE, 4, G);
    for (uint32_t i = 0; i < 4; i++)
        set_use(&a->chunks[i], 1 + i, 1);
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    k->chunks[k->n++] = &a->chunks[0]; /* the current launch touches these */
    k->chunks[k->n++] = &a->chunks[2];
    sw_chunk_t *out[8];
    uint64_t freed;
    size_t n = victims(t, G, k, out, 8, &freed);
    ck_assert_uint_eq(n, 1);
    ck_assert_ptr_eq(out[0], &a->chunks[1]);
    ck_assert_int_gt(k->calls, 0); /* keep was asked, with our arg */
    n = victims(t, 100 * G, k, out, 8, &freed);
    ck_assert_uint_eq(n, 2);
    ck_assert(unit_contains(out, n, &a->chunks[1]));
    ck_assert(unit_contains(out, n, &a->chunks[3]));
    ck_assert_uint_eq(freed, 2 * G);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

/* A chunk the program asked to keep (spillway_hint KEEP_RESIDENT) is no
 * victim, however cold, for either order; displacement passes it over. */
START_TEST(policy_victims_never_take_a_resident_chunk)
{
    sw_table_t *t = new_table();
    sw_alloc_t *a = mk_even(BASE, 4, G);
    for (uint32_t i = 0; i < 4; i++)
        set_use(&a->chunks[i], 1 + i, 1);
    a->chunks[0].resident = true; /* the coldest */
    a->chunks[2].resident = true;
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    uint64_t freed;
    size_t n = victims(t, 100 * G, k, out, 8, &freed);
    ck_assert_uint_eq(n, 2);
    ck_assert(!unit_contains(out, n, &a->chunks[0]) && !unit_contains(out, n, &a->chunks[2]));
    n = sw_policy_victims_learned(t, 100 * G, 10, NULL, NULL, out, 8, &freed);
    ck_assert_uint_eq(n, 2);
    ck_assert(!unit_contains(out, n, &a->chunks[0]) && !unit_contains(out, n, &a->chunks[2]));
    ck_assert_uint_eq(freed, 2 * G);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

/* A fixed chunk (an application's handle mapped twice, or exported) is
 * neither a victim, nor promoted, nor adopted. */
START_TEST(policy_never_moves_a_fixed_chunk)
{
    sw_table_t *t = new_table();
    sw_alloc_t *a = mk_even(BASE, 4, G);
    for (uint32_t i = 0; i < 4; i++)
        set_use(&a->chunks[i], 1 + i, 1);
    a->chunks[0].fixed = true; /* the coldest */
    a->chunks[3].where = SW_ON_HOST;
    a->chunks[3].fixed = true;
    a->chunks[3].pointed = true;
    a->chunks[3].uses = 0;
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    uint64_t freed;
    size_t n = victims(t, 100 * G, k, out, 8, &freed);
    ck_assert_uint_eq(n, 2);
    ck_assert(!unit_contains(out, n, &a->chunks[0]));
    n = sw_policy_victims_learned(t, 100 * G, 10, NULL, NULL, out, 8, &freed);
    ck_assert_uint_eq(n, 2);
    ck_assert(!unit_contains(out, n, &a->chunks[0]));
    ck_assert_int_eq(sw_policy_on_touch(&a->chunks[3], 100 * G, false), SW_VERDICT_ZERO_COPY);
    ck_assert_ptr_null(sw_policy_unseen(t));
    a->chunks[3].fixed = false;
    ck_assert_ptr_eq(sw_policy_unseen(t), &a->chunks[3]);
    ck_assert_int_eq(sw_policy_on_touch(&a->chunks[3], 100 * G, false), SW_VERDICT_PROMOTE);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

/* --- victims: how many ------------------------------------------------- */

START_TEST(policy_victims_stops_as_soon_as_need_is_met)
{
    sw_table_t *t = new_table();
    const uint64_t sizes[] = {4 * G, G, 2 * G, G};
    sw_alloc_t *a = unit_mk_alloc(BASE, sizes, 4);
    for (uint32_t i = 0; i < 4; i++)
        set_use(&a->chunks[i], 1 + i, 1); /* order: 0, 1, 2, 3 */
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    uint64_t freed;
    /* 1 byte .. 4G: the first chunk alone covers it */
    const uint64_t one[] = {1, G, 4 * G - 1, 4 * G};
    for (int i = 0; i < 4; i++) {
        size_t n = victims(t, one[i], k, out, 8, &freed);
        ck_assert_uint_eq(n, 1);
        ck_assert_ptr_eq(out[0], &a->chunks[0]);
        ck_assert_uint_eq(freed, 4 * G);
    }
    /* one byte more takes the next one, and no more */
    size_t n = victims(t, 4 * G + 1, k, out, 8, &freed);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(freed, 5 * G);
    n = victims(t, 5 * G + 1, k, out, 8, &freed);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(freed, 7 * G);
    ck_assert(!unit_contains(out, n, &a->chunks[3]));
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

START_TEST(policy_victims_returns_all_candidates_when_short)
{
    sw_table_t *t = new_table();
    const uint64_t sizes[] = {G, 2 * G, 3 * G};
    sw_alloc_t *a = unit_mk_alloc(BASE, sizes, 3);
    sw_alloc_t *b = mk_even(BASE + GIB, 2, 4 * G);
    b->chunks[1].where = SW_ON_HOST;
    insert(t, a);
    insert(t, b);
    keep_set_t *k = unit_keep_none();
    k->chunks[k->n++] = &a->chunks[1];
    sw_chunk_t *out[8];
    uint64_t freed;
    /* candidates: a0 (G), a2 (3G), b0 (4G) = 8G < 100G */
    size_t n = victims(t, 100 * G, k, out, 8, &freed);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(freed, 8 * G);
    ck_assert(unit_contains(out, n, &a->chunks[0]));
    ck_assert(unit_contains(out, n, &a->chunks[2]));
    ck_assert(unit_contains(out, n, &b->chunks[0]));
    sw_table_free(t);
    unit_free_alloc(a);
    unit_free_alloc(b);
    free(k);
}
END_TEST

START_TEST(policy_victims_respects_max)
{
    sw_table_t *t = new_table();
    sw_alloc_t *a = mk_even(BASE, 6, G);
    for (uint32_t i = 0; i < 6; i++)
        set_use(&a->chunks[i], 60 - 10 * i, 1); /* order: 5, 4, 3, 2, 1, 0 */
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    /* a canary past max must stay untouched */
    sw_chunk_t *canary = (sw_chunk_t *)(uintptr_t)0x5a5a5a5a;
    for (int i = 0; i < 8; i++)
        out[i] = canary;
    uint64_t freed;
    size_t n = victims(t, 6 * G, k, out, 2, &freed);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(freed, 2 * G); /* what the chosen two hold */
    ck_assert(unit_contains(out, n, &a->chunks[5]));
    ck_assert(unit_contains(out, n, &a->chunks[4]));
    for (int i = 2; i < 8; i++)
        ck_assert_ptr_eq(out[i], canary);
    /* max 0: nothing written */
    n = victims(t, 6 * G, k, out, 0, &freed);
    ck_assert_uint_eq(n, 0);
    ck_assert_uint_eq(freed, 0);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

START_TEST(policy_victims_need_zero_chooses_nothing)
{
    sw_table_t *t = new_table();
    sw_alloc_t *a = mk_even(BASE, 3, G);
    insert(t, a);
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    uint64_t freed;
    size_t n = victims(t, 0, k, out, 8, &freed);
    ck_assert_uint_eq(n, 0);
    ck_assert_uint_eq(freed, 0);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

START_TEST(policy_victims_empty_table_chooses_nothing)
{
    sw_table_t *t = new_table();
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    uint64_t freed;
    size_t n = victims(t, 10 * G, k, out, 8, &freed);
    ck_assert_uint_eq(n, 0);
    ck_assert_uint_eq(freed, 0);
    sw_table_free(t);
    free(k);
}
END_TEST

START_TEST(policy_victims_does_not_modify_the_table)
{
    sw_table_t *t = new_table();
    const uint64_t sizes[] = {G, 2 * G, G, 3 * G};
    sw_alloc_t *a = unit_mk_alloc(BASE, sizes, 4);
    for (uint32_t i = 0; i < 4; i++)
        set_use(&a->chunks[i], 9 - i, i);
    a->chunks[1].where = SW_ON_HOST;
    insert(t, a);
    sw_alloc_t before = *a;
    sw_chunk_t chunks_before[4];
    memcpy(chunks_before, a->chunks, sizeof(chunks_before));
    keep_set_t *k = unit_keep_none();
    sw_chunk_t *out[8];
    uint64_t freed;
    victims(t, 4 * G, k, out, 8, &freed);
    victims(t, 100 * G, k, out, 8, &freed);
    ck_assert_int_eq(memcmp(&before, a, sizeof(before)), 0);
    ck_assert_int_eq(memcmp(chunks_before, a->chunks, sizeof(chunks_before)), 0);
    ck_assert_uint_eq(sw_table_count(t), 1);
    ck_assert_ptr_eq(sw_table_lookup(t, BASE), &a->chunks[0]);
    sw_table_free(t);
    unit_free_alloc(a);
    free(k);
}
END_TEST

/* --- victims: brute force ---------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

static int cmp_lru(const void *pa, const void *pb)
{
    const sw_chunk_t *a = *(sw_chunk_t *const *)pa, *b = *(sw_chunk_t *const *)pb;
    if (a->last_use != b->last_use)
        return a->last_use < b->last_use ? -1 : 1;
    if (a->uses != b->uses)
        return a->uses < b->uses ? -1 : 1;
    if (a->va != b->va)
        return a->va < b->va ? -1 : 1;
    return 0;
}

/* Victims come from a heap, one at a time: taken to the end over a big
 * table with many ties, they come out exactly in sorted order, and a
 * small need takes only the first. */
START_TEST(policy_victims_from_a_big_table_come_in_sorted_order)
{
    enum { NALLOC = 250, PER = 4 };
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    sw_table_t *t = new_table();
    keep_set_t *k = unit_keep_none();
    sw_alloc_t *as[NALLOC];
    static sw_chunk_t *cand[NALLOC * PER], *out[NALLOC * PER];
    size_t ncand = 0;
    uint64_t sizes[PER] = {G, G, G, G};
    for (int i = 0; i < NALLOC; i++) {
        as[i] = unit_mk_alloc(BASE + (uint64_t)i * PER * G, sizes, PER);
        for (int c = 0; c < PER; c++) {
            set_use(&as[i]->chunks[c], rng_next(&s) % 50, rng_next(&s) % 3);
            cand[ncand++] = &as[i]->chunks[c];
        }
        insert(t, as[i]);
    }
    qsort(cand, ncand, sizeof cand[0], cmp_lru);
    uint64_t freed;
    size_t n = victims(t, (uint64_t)ncand * G, k, out, ncand, &freed);
    ck_assert_uint_eq(n, ncand);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(out[i] == cand[i], "victim %zu out of order", i);
    n = victims(t, 1, k, out, ncand, &freed);
    ck_assert_uint_eq(n, 1);
    ck_assert_ptr_eq(out[0], cand[0]);
    for (int i = 0; i < NALLOC; i++) {
        sw_table_remove(t, as[i]);
        unit_free_alloc(as[i]);
    }
    sw_table_free(t);
    free(k);
}
END_TEST

START_TEST(policy_victims_match_brute_force_on_random_tables)
{
    uint64_t s = 0x243f6a8885a308d3ULL;
    for (int round = 0; round < 3000; round++) {
        sw_table_t *t = new_table();
        keep_set_t *k = unit_keep_none();
        sw_alloc_t *as[6];
        sw_chunk_t *cand[64];
        int nalloc = 1 + (int)(rng_next(&s) % 6), ncand = 0;
        uint64_t total = 0, va = BASE;
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
                set_use(ch, rng_next(&s) % 4, rng_next(&s) % 3);
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
        /* insert in a scrambled order */
        int perm[6];
        for (int i = 0; i < nalloc; i++)
            perm[i] = i;
        for (int i = nalloc - 1; i > 0; i--) {
            int j = (int)(rng_next(&s) % (uint64_t)(i + 1)), tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
        for (int i = 0; i < nalloc; i++)
            insert(t, as[perm[i]]);

        qsort(cand, (size_t)ncand, sizeof(cand[0]), cmp_lru);
        uint64_t need;
        switch (rng_next(&s) % 4) {
        case 0: need = 0; break;
        case 1: need = total + 1 + rng_next(&s) % (4 * G); break; /* unreachable */
        default: need = total ? 1 + rng_next(&s) % total : rng_next(&s) % (4 * G); break;
        }
        size_t max = (rng_next(&s) % 3 == 0) ? (size_t)(rng_next(&s) % 5) : 64;

        /* expected: shortest prefix reaching need, cut to max */
        size_t want = 0;
        uint64_t want_freed = 0;
        while (want < (size_t)ncand && want < max && want_freed < need)
            want_freed += cand[want++]->size;

        sw_chunk_t *out[64];
        uint64_t freed;
        size_t n = victims(t, need, k, out, max, &freed);
        ck_assert_msg(n == want, "round %d: need %llu max %zu: %zu victims, expected %zu", round,
                      (unsigned long long)need, max, n, want);
        ck_assert_msg(freed == want_freed, "round %d: freed %llu, expected %llu", round,
                      (unsigned long long)freed, (unsigned long long)want_freed);
        for (size_t i = 0; i < want; i++)
            ck_assert_msg(unit_contains(out, n, cand[i]),
                          "round %d: expected victim %zu (va 0x%llx) missing", round, i,
                          (unsigned long long)cand[i]->va);
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; j < n; j++)
                ck_assert_ptr_ne(out[i], out[j]);

        sw_table_free(t);
        for (int i = 0; i < nalloc; i++)
            unit_free_alloc(as[i]);
        free(k);
    }
}
END_TEST

/* --- on_touch ----------------------------------------------------------- */

static sw_chunk_t host_chunk(uint64_t size)
{
    sw_chunk_t c;
    memset(&c, 0, sizeof(c));
    c.va = BASE;
    c.size = size;
    c.where = SW_ON_HOST;
    c.last_use = 5;
    c.uses = 2;
    return c;
}

START_TEST(policy_on_touch_promotes_when_room_and_not_capturing)
{
    sw_chunk_t c = host_chunk(32 * MIB);
    ck_assert_int_eq(sw_policy_on_touch(&c, 64 * MIB, false), SW_VERDICT_PROMOTE);
    ck_assert_int_eq(sw_policy_on_touch(&c, 80 * GIB, false), SW_VERDICT_PROMOTE);
    ck_assert_int_eq(sw_policy_on_touch(&c, UINT64_MAX, false), SW_VERDICT_PROMOTE);
}
END_TEST

START_TEST(policy_on_touch_promotes_when_room_exactly_fits)
{
    sw_chunk_t c = host_chunk(32 * MIB);
    ck_assert_int_eq(sw_policy_on_touch(&c, 32 * MIB, false), SW_VERDICT_PROMOTE);
}
END_TEST

START_TEST(policy_on_touch_zero_copy_while_capturing)
{
    sw_chunk_t c = host_chunk(32 * MIB);
    ck_assert_int_eq(sw_policy_on_touch(&c, 80 * GIB, true), SW_VERDICT_ZERO_COPY);
    ck_assert_int_eq(sw_policy_on_touch(&c, 32 * MIB, true), SW_VERDICT_ZERO_COPY);
    ck_assert_int_eq(sw_policy_on_touch(&c, 0, true), SW_VERDICT_ZERO_COPY);
}
END_TEST

START_TEST(policy_on_touch_zero_copy_without_room)
{
    sw_chunk_t c = host_chunk(32 * MIB);
    ck_assert_int_eq(sw_policy_on_touch(&c, 32 * MIB - 1, false), SW_VERDICT_ZERO_COPY);
    ck_assert_int_eq(sw_policy_on_touch(&c, G, false), SW_VERDICT_ZERO_COPY);
    ck_assert_int_eq(sw_policy_on_touch(&c, 0, false), SW_VERDICT_ZERO_COPY);
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

START_TEST(policy_window_fits_two_extents_or_as_many_as_want_holds)
{
    const uint64_t MiB = 1 << 20, B = 60 * MiB;
    /* 25% of a 60 MiB budget, 4 MiB layers: two copies, 7 MiB stay resident */
    ck_assert_uint_eq(sw_policy_window_fit(15 * MiB, 4 * MiB, B), 8 * MiB);
    /* 8 MiB layers: one fits; a second is not worth its room (8 MiB
     * squared is just over 1.1 MB times 60 MiB) */
    ck_assert_uint_eq(sw_policy_window_fit(15 * MiB, 8 * MiB, B), 8 * MiB);
    /* exactly two */
    ck_assert_uint_eq(sw_policy_window_fit(16 * MiB, 8 * MiB, 64 * MiB), 16 * MiB);
    /* nothing fits, or nothing known: no window */
    ck_assert_uint_eq(sw_policy_window_fit(15 * MiB, 16 * MiB, B), 0);
    ck_assert_uint_eq(sw_policy_window_fit(15 * MiB, 0, B), 0);
    ck_assert_uint_eq(sw_policy_window_fit(0, 4 * MiB, B), 0);
    /* never more than want, or than half the budget */
    for (uint64_t want = 1; want < 64; want++)
        for (uint64_t ext = 1; ext < 64; ext++) {
            uint64_t got = sw_policy_window_fit(want * MiB, ext * MiB, 4 * want * MiB);
            ck_assert_uint_le(got, 2 * want * MiB);
            ck_assert(got <= want * MiB || got == 2 * ext * MiB);
        }
}
END_TEST

START_TEST(policy_window_takes_a_second_copy_where_one_at_a_time_costs_more)
{
    const uint64_t MiB = 1 << 20;
    /* 25% of 22.5 MiB holds one 4 MiB copy: a loop over many such layers
     * loses more to copying one at a time than a second copy's room */
    ck_assert_uint_eq(sw_policy_window_fit(22 * MiB / 4, 4 * MiB, 22 * MiB + MiB / 2), 8 * MiB);
    /* 64 MiB layers beside 375 MiB: each copy is long, one at a time costs little */
    ck_assert_uint_eq(sw_policy_window_fit(375 * MiB / 4, 64 * MiB, 375 * MiB), 64 * MiB);
    /* 16 MiB layers beside 120 MiB: one */
    ck_assert_uint_eq(sw_policy_window_fit(30 * MiB, 16 * MiB, 120 * MiB), 16 * MiB);
    /* never past half the budget: one 4 MiB copy in a 12 MiB budget's 25% */
    ck_assert_uint_eq(sw_policy_window_fit(4 * MiB, 4 * MiB, 12 * MiB), 4 * MiB);
}
END_TEST

START_TEST(policy_window_is_trimmed_to_leave_whole_granules)
{
    const uint64_t MiB = MIB, KiB = 1 << 10;
    /* two copies of 3.0625 MiB beside 34 MiB leave 27.875 MiB, 13 granules:
     * trimmed by 0.125 MiB they leave 14 */
    ck_assert_uint_eq(sw_policy_window_trim(6272 * KiB, 3136 * KiB, 34 * MiB, G), 6 * MiB);
    /* 5.0625 MiB layers beside 48 MiB: 10.125 -> 10 MiB */
    ck_assert_uint_eq(sw_policy_window_trim(10368 * KiB, 5184 * KiB, 48 * MiB, G), 10 * MiB);
    /* whole granules left already: unchanged */
    ck_assert_uint_eq(sw_policy_window_trim(8 * MiB, 4 * MiB, 32 * MiB, G), 8 * MiB);
    /* the trim would be 0.9 MiB, more than an eighth of a 3 MiB copy */
    ck_assert_uint_eq(sw_policy_window_trim(6 * MiB, 3 * MiB, 33 * MiB + 100 * KiB, G),
                      6 * MiB);
    /* never down to one copy (1.5 MiB off 17 MiB beside 16 MiB copies),
     * nor is a window of one trimmed */
    ck_assert_uint_eq(sw_policy_window_trim(17 * MiB, 16 * MiB, 129 * MiB + MiB / 2, G),
                      17 * MiB);
    ck_assert_uint_eq(sw_policy_window_trim(16 * MiB + 64 * KiB, 16 * MiB + 64 * KiB,
                                            128 * MiB, G),
                      16 * MiB + 64 * KiB);
    /* nothing to trim against: no granule, no slot, a window as big as the budget */
    ck_assert_uint_eq(sw_policy_window_trim(6272 * KiB, 3136 * KiB, 34 * MiB, 0), 6272 * KiB);
    ck_assert_uint_eq(sw_policy_window_trim(6272 * KiB, 0, 34 * MiB, G), 6272 * KiB);
    ck_assert_uint_eq(sw_policy_window_trim(34 * MiB, 17 * MiB, 34 * MiB, G), 34 * MiB);
    /* whatever it cuts, the room left is whole granules, and the window
     * still holds more than one copy, short of two by an eighth at most */
    for (uint64_t b = 16; b < 80; b++)
        for (uint64_t slot = 1024; slot < 9 * 1024; slot += 64) {
            uint64_t size = 2 * slot * KiB, budget = b * MiB;
            uint64_t got = sw_policy_window_trim(size, slot * KiB, budget, G);
            ck_assert_uint_le(got, size);
            if (got < size) {
                ck_assert_uint_eq((budget - got) % G, 0);
                ck_assert_uint_gt(got, slot * KiB);
                ck_assert_uint_le(size - got, slot * KiB / SW_WINDOW_TRIM);
            }
        }
}
END_TEST

Suite *policy_suite(void)
{
    Suite *s = suite_create("policy");
    add_case(s, policy_victims_picks_least_recently_used_first);
    add_case(s, policy_victims_never_used_chunks_go_first);
    add_case(s, policy_victims_breaks_last_use_ties_by_fewer_uses);
    add_case(s, policy_victims_breaks_full_ties_by_lower_address);
    add_case(s, policy_victims_skips_host_chunks);
    add_case(s, policy_victims_honours_keep);
    add_case(s, policy_victims_never_take_a_resident_chunk);
    add_case(s, policy_victims_stops_as_soon_as_need_is_met);
    add_case(s, policy_victims_returns_all_candidates_when_short);
    add_case(s, policy_victims_respects_max);
    add_case(s, policy_victims_need_zero_chooses_nothing);
    add_case(s, policy_victims_empty_table_chooses_nothing);
    add_case(s, policy_victims_does_not_modify_the_table);
    add_case(s, policy_victims_match_brute_force_on_random_tables);
    add_case(s, policy_victims_from_a_big_table_come_in_sorted_order);
    add_case(s, policy_on_touch_promotes_when_room_and_not_capturing);
    add_case(s, policy_on_touch_promotes_when_room_exactly_fits);
    add_case(s, policy_on_touch_zero_copy_while_capturing);
    add_case(s, policy_on_touch_zero_copy_without_room);
    add_case(s, policy_never_moves_a_fixed_chunk);
    add_case(s, policy_window_fits_two_extents_or_as_many_as_want_holds);
    add_case(s, policy_window_takes_a_second_copy_where_one_at_a_time_costs_more);
    add_case(s, policy_window_is_trimmed_to_leave_whole_granules);
    return s;
}

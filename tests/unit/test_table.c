/*
 * test_table.c: the allocation table (core/table.c), black-box, from the
 * contract in sw.h.
 *
 * The table indexes allocations the caller builds and owns: these tests make
 * sw_alloc_t/sw_chunk_t values by hand (see mk_alloc) and free them at the
 * end. What is checked:
 *   - lookup maps every byte of [va, va+reserved) to the chunk holding it,
 *     and everything else (just below va, va+reserved, 0, far away) to NULL;
 *   - insert refuses overlaps with -1 and leaves the table as it was, even
 *     for the granules of the refused allocation that overlap nothing;
 *   - remove, find_base (exact base only), maybe (never a false negative),
 *     each (every allocation once), count, the spacing of walks;
 *   - odd shapes: chunks of different sizes, 1000 allocations, addresses at
 *     the top of the 47-bit user space, a wide spread of addresses.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "sw.h"
#include "unit.h"

#define MIB (1024ULL * 1024ULL)
#define GIB (1024ULL * MIB)
#define G (2 * MIB) /* the granule most tests use: the usual device granularity */

/* A typical heap-ish base for device reservations. */
#define BASE 0x7f0000000000ULL

/* --- helpers ------------------------------------------------------------ */

/* n chunks of the same size. */
static sw_alloc_t *mk_even(uint64_t va, uint32_t n, uint64_t chunk)
{
    uint64_t *sizes = malloc((n ? n : 1) * sizeof(*sizes));
    ck_assert_ptr_nonnull(sizes);
    for (uint32_t i = 0; i < n; i++)
        sizes[i] = chunk;
    sw_alloc_t *a = unit_mk_alloc(va, sizes, n);
    free(sizes);
    return a;
}

static sw_table_t *new_table(uint64_t granule)
{
    sw_table_t *t = sw_table_new(granule);
    ck_assert_ptr_nonnull(t);
    return t;
}

/* A small deterministic PRNG so failures reproduce. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

/* Asserts that every byte class of every chunk of a (first byte, last byte,
 * each granule start, the middle) resolves to that very chunk. */
static void assert_alloc_found(const sw_table_t *t, const sw_alloc_t *a, uint64_t granule)
{
    for (uint32_t i = 0; i < a->nchunks; i++) {
        const sw_chunk_t *c = &a->chunks[i];
        ck_assert_ptr_eq(sw_table_lookup(t, c->va), c);
        ck_assert_ptr_eq(sw_table_lookup(t, c->va + c->size - 1), c);
        ck_assert_ptr_eq(sw_table_lookup(t, c->va + c->size / 2 + 3), c);
        for (uint64_t g = 0; g < c->size; g += granule) {
            ck_assert_ptr_eq(sw_table_lookup(t, c->va + g), c);
            ck_assert_ptr_eq(sw_table_lookup(t, c->va + g + granule - 1), c);
        }
    }
}

static void assert_alloc_absent(const sw_table_t *t, const sw_alloc_t *a, uint64_t granule)
{
    for (uint64_t g = 0; g < a->reserved; g += granule) {
        ck_assert_ptr_null(sw_table_lookup(t, a->va + g));
        ck_assert_ptr_null(sw_table_lookup(t, a->va + g + granule - 1));
    }
}

/* --- lookup --------------------------------------------------------------- */

START_TEST(table_lookup_finds_first_byte_of_each_chunk)
{
    sw_table_t *t = new_table(G);
    sw_alloc_t *a = mk_even(BASE, 4, 16 * MIB);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    for (uint32_t i = 0; i < a->nchunks; i++) {
        sw_chunk_t *c = sw_table_lookup(t, a->chunks[i].va);
        ck_assert_ptr_eq(c, &a->chunks[i]);
        ck_assert_ptr_eq(c->alloc, a);
        ck_assert_uint_eq(c->index, i);
    }
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

START_TEST(table_lookup_finds_last_byte_of_each_chunk)
{
    sw_table_t *t = new_table(G);
    sw_alloc_t *a = mk_even(BASE, 4, 16 * MIB);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    for (uint32_t i = 0; i < a->nchunks; i++) {
        const sw_chunk_t *c = &a->chunks[i];
        ck_assert_ptr_eq(sw_table_lookup(t, c->va + c->size - 1), c);
    }
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

START_TEST(table_lookup_finds_interior_addresses)
{
    sw_table_t *t = new_table(G);
    sw_alloc_t *a = mk_even(BASE, 3, 32 * MIB);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    /* odd offsets, granule boundaries inside a chunk, and every granule */
    ck_assert_ptr_eq(sw_table_lookup(t, BASE + 1), &a->chunks[0]);
    ck_assert_ptr_eq(sw_table_lookup(t, BASE + 12345), &a->chunks[0]);
    ck_assert_ptr_eq(sw_table_lookup(t, BASE + G), &a->chunks[0]);
    ck_assert_ptr_eq(sw_table_lookup(t, BASE + 32 * MIB + 7 * G + 99), &a->chunks[1]);
    ck_assert_ptr_eq(sw_table_lookup(t, BASE + 64 * MIB + 17 * MIB + 5), &a->chunks[2]);
    assert_alloc_found(t, a, G);
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

START_TEST(table_lookup_is_null_just_before_base)
{
    sw_table_t *t = new_table(G);
    sw_alloc_t *a = mk_even(BASE, 2, 4 * MIB);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    ck_assert_ptr_null(sw_table_lookup(t, BASE - 1));
    ck_assert_ptr_null(sw_table_lookup(t, BASE - G));
    ck_assert_ptr_null(sw_table_lookup(t, BASE - G + 1));
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

START_TEST(table_lookup_is_null_at_end_of_reservation)
{
    sw_table_t *t = new_table(G);
    sw_alloc_t *a = mk_even(BASE, 2, 4 * MIB);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    ck_assert_ptr_null(sw_table_lookup(t, BASE + a->reserved));
    ck_assert_ptr_null(sw_table_lookup(t, BASE + a->reserved + 1));
    ck_assert_ptr_null(sw_table_lookup(t, BASE + a->reserved + G - 1));
    ck_assert_ptr_null(sw_table_lookup(t, BASE + a->reserved + G));
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

START_TEST(table_lookup_is_null_for_untracked_extremes)
{
    sw_table_t *t = new_table(G);
    ck_assert_ptr_null(sw_table_lookup(t, BASE)); /* empty table */
    sw_alloc_t *a = mk_even(BASE, 2, 4 * MIB);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    ck_assert_ptr_null(sw_table_lookup(t, 0));
    ck_assert_ptr_null(sw_table_lookup(t, 1));
    ck_assert_ptr_null(sw_table_lookup(t, 0x800000000000ULL));
    ck_assert_ptr_null(sw_table_lookup(t, UINT64_MAX));
    ck_assert_ptr_null(sw_table_lookup(t, UINT64_MAX - G + 1));
    /* addresses that alias the allocation modulo a power of two */
    ck_assert_ptr_null(sw_table_lookup(t, BASE ^ (1ULL << 40)));
    ck_assert_ptr_null(sw_table_lookup(t, BASE + (1ULL << 32)));
    ck_assert_ptr_null(sw_table_lookup(t, BASE - (1ULL << 32)));
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

START_TEST(table_lookup_maps_chunks_of_different_sizes)
{
    sw_table_t *t = new_table(G);
    const uint64_t sizes[] = {2 * G, 4 * G, 2 * G};
    sw_alloc_t *a = unit_mk_alloc(BASE, sizes, 3);
    ck_assert_uint_eq(a->reserved, 8 * G);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    /* granule by granule: 0,1 -> chunk 0; 2..5 -> chunk 1; 6,7 -> chunk 2 */
    const uint32_t want[8] = {0, 0, 1, 1, 1, 1, 2, 2};
    for (int g = 0; g < 8; g++) {
        ck_assert_ptr_eq(sw_table_lookup(t, BASE + (uint64_t)g * G), &a->chunks[want[g]]);
        ck_assert_ptr_eq(sw_table_lookup(t, BASE + (uint64_t)g * G + G / 2), &a->chunks[want[g]]);
        ck_assert_ptr_eq(sw_table_lookup(t, BASE + (uint64_t)g * G + G - 1), &a->chunks[want[g]]);
    }
    ck_assert_ptr_null(sw_table_lookup(t, BASE + 8 * G));
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

START_TEST(table_lookup_finds_every_chunk_of_a_large_allocation)
{
    /* 80 GiB in 32 MiB chunks: 40960 granules of 2 MiB */
    sw_table_t *t = new_table(G);
    sw_alloc_t *a = mk_even(BASE, 2560, 32 * MIB);
    ck_assert_uint_eq(a->reserved, 80 * GIB);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    assert_alloc_found(t, a, G);
    ck_assert_ptr_null(sw_table_lookup(t, BASE + 80 * GIB));
    ck_assert_ptr_null(sw_table_lookup(t, BASE - 1));
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

/* 1000 allocations of 1-4 chunks of 1-3 granules, with 0-3 free granules
 * between them (0: adjacent). */
#define MANY 1000
static sw_alloc_t **mk_many(sw_table_t *t, uint64_t base, uint64_t granule, uint64_t seed)
{
    sw_alloc_t **as = calloc(MANY, sizeof(*as));
    ck_assert_ptr_nonnull(as);
    uint64_t s = seed, va = base;
    for (int i = 0; i < MANY; i++) {
        va += (rng_next(&s) % 4) * granule;
        uint32_t n = 1 + (uint32_t)(rng_next(&s) % 4);
        uint64_t sizes[4];
        for (uint32_t k = 0; k < n; k++)
            sizes[k] = (1 + rng_next(&s) % 3) * granule;
        as[i] = unit_mk_alloc(va, sizes, n);
        ck_assert_int_eq(sw_table_insert(t, as[i]), 0);
        va += as[i]->reserved;
    }
    return as;
}

static void free_many(sw_alloc_t **as)
{
    for (int i = 0; i < MANY; i++)
        unit_free_alloc(as[i]);
    free(as);
}

START_TEST(table_many_allocations_are_all_found)
{
    sw_table_t *t = new_table(G);
    sw_alloc_t **as = mk_many(t, BASE, G, 0x9e3779b97f4a7c15ULL);
    ck_assert_uint_eq(sw_table_count(t), MANY);
    for (int i = 0; i < MANY; i++) {
        assert_alloc_found(t, as[i], G);
        ck_assert_ptr_eq(sw_table_find_base(t, as[i]->va), as[i]);
    }
    /* the gaps between allocations stay untracked */
    for (int i = 0; i + 1 < MANY; i++) {
        uint64_t end = as[i]->va + as[i]->reserved;
        for (uint64_t va = end; va < as[i + 1]->va; va += G) {
            ck_assert_ptr_null(sw_table_lookup(t, va));
            ck_assert_ptr_null(sw_table_lookup(t, va + G - 1));
        }
    }
    sw_table_free(t);
    free_many(as);
}
END_TEST

START_TEST(table_adjacent_allocations_both_insert)
{
    sw_table_t *t = new_table(G);
    sw_alloc_t *a = mk_even(BASE, 2, 4 * MIB);
    sw_alloc_t *b = mk_even(BASE + a->reserved, 2, 4 * MIB);
    sw_alloc_t *c = mk_even(BASE - 4 * MIB, 1, 4 * MIB);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    ck_assert_int_eq(sw_table_insert(t, b), 0);
    ck_assert_int_eq(sw_table_insert(t, c), 0);
    ck_assert_uint_eq(sw_table_count(t), 3);
    ck_assert_ptr_eq(sw_table_lookup(t, BASE - 1), &c->chunks[0]);
    ck_assert_ptr_eq(sw_table_lookup(t, BASE), &a->chunks[0]);
    ck_assert_ptr_eq(sw_table_lookup(t, BASE + a->reserved - 1), &a->chunks[1]);
    ck_assert_ptr_eq(sw_table_lookup(t, BASE + a->reserved), &b->chunks[0]);
    assert_alloc_found(t, a, G);
    assert_alloc_found(t, b, G);
    assert_alloc_found(t, c, G);
    sw_table_free(t);
    unit_free_alloc(a);
    unit_free_alloc(b);
    unit_free_alloc(c);
}
END_TEST

START_TEST(table_huge_addresses_near_top_of_user_space)
{
    sw_table_t *t = new_table(G);
    /* ends exactly at 2^47, the end of x86-64 user space */
    sw_alloc_t *top = mk_even(0x7ffffe000000ULL, 2, 16 * MIB);
    ck_assert_uint_eq(top->va + top->reserved, 0x800000000000ULL);
    sw_alloc_t *mid = mk_even(0x7fd3a4600000ULL, 3, 8 * MIB);
    sw_alloc_t *low = mk_even(0x200000ULL, 1, 2 * MIB); /* a wide spread too */
    ck_assert_int_eq(sw_table_insert(t, top), 0);
    ck_assert_int_eq(sw_table_insert(t, mid), 0);
    ck_assert_int_eq(sw_table_insert(t, low), 0);
    assert_alloc_found(t, top, G);
    assert_alloc_found(t, mid, G);
    assert_alloc_found(t, low, G);
    ck_assert_ptr_null(sw_table_lookup(t, 0x800000000000ULL));
    ck_assert_ptr_null(sw_table_lookup(t, 0x7ffffe000000ULL - 1));
    ck_assert_ptr_null(sw_table_lookup(t, 0x7fd3a4600000ULL - 1));
    ck_assert_ptr_null(sw_table_lookup(t, 0x7fd3a4600000ULL + 24 * MIB));
    ck_assert_ptr_null(sw_table_lookup(t, 0x400000ULL));
    ck_assert_ptr_eq(sw_table_find_base(t, 0x7ffffe000000ULL), top);
    sw_table_free(t);
    unit_free_alloc(top);
    unit_free_alloc(mid);
    unit_free_alloc(low);
}
END_TEST

START_TEST(table_works_with_a_small_granule)
{
    const uint64_t g = 64 * 1024;
    sw_table_t *t = new_table(g);
    const uint64_t sizes[] = {g, 3 * g, 2 * g};
    sw_alloc_t *a = unit_mk_alloc(0x7f1234560000ULL, sizes, 3);
    sw_alloc_t *b = mk_even(0x7f1234560000ULL + 6 * g, 2, g); /* adjacent */
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    ck_assert_int_eq(sw_table_insert(t, b), 0);
    assert_alloc_found(t, a, g);
    assert_alloc_found(t, b, g);
    ck_assert_ptr_null(sw_table_lookup(t, a->va - 1));
    ck_assert_ptr_null(sw_table_lookup(t, b->va + b->reserved));
    sw_table_free(t);
    unit_free_alloc(a);
    unit_free_alloc(b);
}
END_TEST

START_TEST(table_tables_are_independent)
{
    sw_table_t *t1 = new_table(G), *t2 = new_table(G);
    sw_alloc_t *a = mk_even(BASE, 2, 4 * MIB);
    ck_assert_int_eq(sw_table_insert(t1, a), 0);
    ck_assert_ptr_null(sw_table_lookup(t2, BASE));
    ck_assert_ptr_null(sw_table_find_base(t2, BASE));
    ck_assert_uint_eq(sw_table_count(t2), 0);
    ck_assert_ptr_eq(sw_table_lookup(t1, BASE), &a->chunks[0]);
    sw_table_free(t2);
    ck_assert_ptr_eq(sw_table_lookup(t1, BASE), &a->chunks[0]);
    sw_table_free(t1);
    unit_free_alloc(a);
}
END_TEST

/* --- remove --------------------------------------------------------------- */

START_TEST(table_remove_makes_lookups_null)
{
    sw_table_t *t = new_table(G);
    const uint64_t sizes[] = {2 * G, 4 * G, 2 * G};
    sw_alloc_t *a = unit_mk_alloc(BASE, sizes, 3);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    sw_table_remove(t, a);
    assert_alloc_absent(t, a, G);
    ck_assert_ptr_null(sw_table_find_base(t, BASE));
    ck_assert_uint_eq(sw_table_count(t), 0);
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

START_TEST(table_remove_leaves_other_allocations_intact)
{
    sw_table_t *t = new_table(G);
    sw_alloc_t **as = mk_many(t, BASE, G, 12345);
    /* remove every third one, including neighbours of kept ones */
    for (int i = 0; i < MANY; i += 3)
        sw_table_remove(t, as[i]);
    ck_assert_uint_eq(sw_table_count(t), MANY - (MANY + 2) / 3);
    for (int i = 0; i < MANY; i++) {
        if (i % 3 == 0) {
            assert_alloc_absent(t, as[i], G);
            ck_assert_ptr_null(sw_table_find_base(t, as[i]->va));
        } else {
            assert_alloc_found(t, as[i], G);
            ck_assert_ptr_eq(sw_table_find_base(t, as[i]->va), as[i]);
        }
    }
    sw_table_free(t);
    free_many(as);
}
END_TEST

START_TEST(table_reinsert_after_remove_succeeds)
{
    sw_table_t *t = new_table(G);
    sw_alloc_t *a = mk_even(BASE, 2, 4 * MIB);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    sw_table_remove(t, a);
    /* a different allocation at the same range, different chunking */
    const uint64_t sizes[] = {G, 2 * G, G};
    sw_alloc_t *b = unit_mk_alloc(BASE, sizes, 3);
    ck_assert_int_eq(sw_table_insert(t, b), 0);
    assert_alloc_found(t, b, G);
    ck_assert_ptr_eq(sw_table_find_base(t, BASE), b);
    ck_assert_uint_eq(sw_table_count(t), 1);
    sw_table_free(t);
    unit_free_alloc(a);
    unit_free_alloc(b);
}
END_TEST

START_TEST(table_insert_remove_cycles_keep_working)
{
    /* churn: the index must not fill up with stale entries */
    sw_table_t *t = new_table(G);
    sw_alloc_t *keep = mk_even(BASE + 64 * GIB, 1, 2 * MIB);
    ck_assert_int_eq(sw_table_insert(t, keep), 0);
    for (int i = 0; i < 20000; i++) {
        sw_alloc_t *a = mk_even(BASE + (uint64_t)(i % 97) * 8 * MIB, 2, 4 * MIB);
        ck_assert_int_eq(sw_table_insert(t, a), 0);
        ck_assert_ptr_eq(sw_table_lookup(t, a->va + 5 * MIB), &a->chunks[1]);
        sw_table_remove(t, a);
        ck_assert_ptr_null(sw_table_lookup(t, a->va + 5 * MIB));
        unit_free_alloc(a);
    }
    ck_assert_uint_eq(sw_table_count(t), 1);
    ck_assert_ptr_eq(sw_table_lookup(t, keep->va), &keep->chunks[0]);
    sw_table_free(t);
    unit_free_alloc(keep);
}
END_TEST

/* --- overlaps ------------------------------------------------------------- */

/* Inserts `first` at [BASE+4G, BASE+8G), then tries `second`: must fail with
 * -1 and leave the table as it was: first fully found, second's base not a
 * base, second's granules outside first untracked, count 1. */
static void check_overlap_refused(uint64_t va, uint32_t ngranules)
{
    sw_table_t *t = new_table(G);
    sw_alloc_t *first = mk_even(BASE + 4 * G, 2, 2 * G);
    sw_alloc_t *second = mk_even(va, ngranules, G);
    ck_assert_int_eq(sw_table_insert(t, first), 0);
    ck_assert_int_eq(sw_table_insert(t, second), -1);
    ck_assert_uint_eq(sw_table_count(t), 1);
    assert_alloc_found(t, first, G);
    ck_assert_ptr_eq(sw_table_find_base(t, first->va), first);
    if (second->va != first->va)
        ck_assert_ptr_null(sw_table_find_base(t, second->va));
    for (uint64_t a = second->va; a < second->va + second->reserved; a += G) {
        bool inside = a >= first->va && a < first->va + first->reserved;
        if (!inside)
            ck_assert_ptr_null(sw_table_lookup(t, a));
    }
    /* and the table still accepts non-overlapping allocations */
    sw_alloc_t *other = mk_even(BASE + 64 * G, 1, G);
    ck_assert_int_eq(sw_table_insert(t, other), 0);
    ck_assert_uint_eq(sw_table_count(t), 2);
    sw_table_free(t);
    unit_free_alloc(first);
    unit_free_alloc(second);
    unit_free_alloc(other);
}

START_TEST(table_insert_same_range_fails_and_leaves_table_unchanged)
{
    check_overlap_refused(BASE + 4 * G, 4);
}
END_TEST

START_TEST(table_insert_overlapping_start_fails_and_leaves_table_unchanged)
{
    /* [BASE+2G, BASE+6G): its first two granules are free */
    check_overlap_refused(BASE + 2 * G, 4);
}
END_TEST

START_TEST(table_insert_overlapping_end_fails_and_leaves_table_unchanged)
{
    /* [BASE+7G, BASE+11G): only its first granule overlaps */
    check_overlap_refused(BASE + 7 * G, 4);
}
END_TEST

START_TEST(table_insert_enclosing_fails_and_leaves_table_unchanged)
{
    /* [BASE, BASE+12G) covers the first one entirely */
    check_overlap_refused(BASE, 12);
}
END_TEST

START_TEST(table_insert_inside_fails_and_leaves_table_unchanged)
{
    /* [BASE+5G, BASE+6G): one granule inside the first one's first chunk */
    check_overlap_refused(BASE + 5 * G, 1);
}
END_TEST

/* --- find_base ------------------------------------------------------------ */

START_TEST(table_find_base_returns_allocation_at_exact_base)
{
    sw_table_t *t = new_table(G);
    sw_alloc_t *a = mk_even(BASE, 3, 4 * MIB);
    sw_alloc_t *b = mk_even(BASE + 1 * GIB, 1, 2 * MIB);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    ck_assert_int_eq(sw_table_insert(t, b), 0);
    ck_assert_ptr_eq(sw_table_find_base(t, BASE), a);
    ck_assert_ptr_eq(sw_table_find_base(t, BASE + 1 * GIB), b);
    sw_table_free(t);
    unit_free_alloc(a);
    unit_free_alloc(b);
}
END_TEST

START_TEST(table_find_base_is_null_for_non_base_addresses)
{
    sw_table_t *t = new_table(G);
    sw_alloc_t *a = mk_even(BASE, 3, 4 * MIB);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    ck_assert_ptr_null(sw_table_find_base(t, BASE + 1));
    ck_assert_ptr_null(sw_table_find_base(t, BASE + G));          /* inside chunk 0 */
    ck_assert_ptr_null(sw_table_find_base(t, a->chunks[1].va));   /* a chunk start */
    ck_assert_ptr_null(sw_table_find_base(t, a->chunks[2].va + 5));
    ck_assert_ptr_null(sw_table_find_base(t, BASE + a->reserved)); /* the end */
    ck_assert_ptr_null(sw_table_find_base(t, BASE - G));
    ck_assert_ptr_null(sw_table_find_base(t, 0));
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

/* --- maybe ---------------------------------------------------------------- */

START_TEST(table_maybe_has_no_false_negatives)
{
    sw_table_t *t = new_table(G);
    sw_alloc_t **as = mk_many(t, BASE, G, 777);
    /* plus allocations far from the crowd */
    sw_alloc_t *far = mk_even(0x7ffffe000000ULL, 2, 16 * MIB);
    sw_alloc_t *low = mk_even(0x10000000ULL, 1, 2 * MIB);
    ck_assert_int_eq(sw_table_insert(t, far), 0);
    ck_assert_int_eq(sw_table_insert(t, low), 0);
    uint64_t s = 4242;
    for (int k = 0; k < 100000; k++) {
        const sw_alloc_t *a = as[rng_next(&s) % MANY];
        uint64_t addr = a->va + rng_next(&s) % a->reserved;
        ck_assert_msg(sw_table_maybe(t, addr), "maybe(0x%llx) is false for a tracked address",
                      (unsigned long long)addr);
    }
    for (int i = 0; i < MANY; i++) {
        ck_assert(sw_table_maybe(t, as[i]->va));
        ck_assert(sw_table_maybe(t, as[i]->va + as[i]->reserved - 1));
    }
    const sw_alloc_t *edge[] = {far, low};
    for (int i = 0; i < 2; i++) {
        ck_assert(sw_table_maybe(t, edge[i]->va));
        ck_assert(sw_table_maybe(t, edge[i]->va + 12345));
        ck_assert(sw_table_maybe(t, edge[i]->va + edge[i]->reserved - 1));
    }
    sw_table_free(t);
    free_many(as);
    unit_free_alloc(far);
    unit_free_alloc(low);
}
END_TEST

START_TEST(table_maybe_is_false_for_null_and_far_below)
{
    /* A pre-filter that says "maybe" for everything would be useless: at
     * least NULL and an address far below every allocation must be ruled
     * out. */
    sw_table_t *t = new_table(G);
    ck_assert(!sw_table_maybe(t, 0));
    ck_assert(!sw_table_maybe(t, 0x1000));
    sw_alloc_t *a = mk_even(BASE, 4, 8 * MIB);
    sw_alloc_t *b = mk_even(BASE + 16 * GIB, 2, 8 * MIB);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    ck_assert_int_eq(sw_table_insert(t, b), 0);
    ck_assert(!sw_table_maybe(t, 0));
    ck_assert(!sw_table_maybe(t, 0x1000));     /* a small integer */
    ck_assert(!sw_table_maybe(t, 0x555555554000ULL)); /* a host text address */
    ck_assert(sw_table_maybe(t, BASE + 3));
    sw_table_free(t);
    unit_free_alloc(a);
    unit_free_alloc(b);
}
END_TEST

/* --- each / count --------------------------------------------------------- */

typedef struct {
    sw_alloc_t **as;
    int n;
    int *seen;
    int calls;
    int strangers;
} visit_t;

static void visit(sw_alloc_t *a, void *arg)
{
    visit_t *v = arg;
    v->calls++;
    for (int i = 0; i < v->n; i++) {
        if (v->as[i] == a) {
            v->seen[i]++;
            return;
        }
    }
    v->strangers++;
}

START_TEST(table_each_visits_every_allocation_once)
{
    sw_table_t *t = new_table(G);
    sw_alloc_t **as = mk_many(t, BASE, G, 31337);
    /* remove a few so each() must skip holes */
    for (int i = 0; i < MANY; i += 7)
        sw_table_remove(t, as[i]);
    visit_t v = {.as = as, .n = MANY, .seen = calloc(MANY, sizeof(int))};
    ck_assert_ptr_nonnull(v.seen);
    sw_table_each(t, visit, &v);
    ck_assert_int_eq(v.strangers, 0);
    for (int i = 0; i < MANY; i++)
        ck_assert_int_eq(v.seen[i], i % 7 == 0 ? 0 : 1);
    ck_assert_uint_eq((size_t)v.calls, sw_table_count(t));
    free(v.seen);
    sw_table_free(t);
    free_many(as);
}
END_TEST

START_TEST(table_each_on_empty_table_calls_nothing)
{
    sw_table_t *t = new_table(G);
    visit_t v = {0};
    sw_table_each(t, visit, &v);
    ck_assert_int_eq(v.calls, 0);
    sw_alloc_t *a = mk_even(BASE, 1, 2 * MIB);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    sw_table_remove(t, a);
    sw_table_each(t, visit, &v);
    ck_assert_int_eq(v.calls, 0);
    sw_table_free(t);
    unit_free_alloc(a);
}
END_TEST

START_TEST(table_count_follows_inserts_and_removes)
{
    sw_table_t *t = new_table(G);
    ck_assert_uint_eq(sw_table_count(t), 0);
    sw_alloc_t *a = mk_even(BASE, 2, 2 * MIB);
    sw_alloc_t *b = mk_even(BASE + GIB, 2, 2 * MIB);
    sw_alloc_t *clash = mk_even(BASE + 2 * MIB, 1, 2 * MIB);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    ck_assert_uint_eq(sw_table_count(t), 1);
    ck_assert_int_eq(sw_table_insert(t, b), 0);
    ck_assert_uint_eq(sw_table_count(t), 2);
    ck_assert_int_eq(sw_table_insert(t, clash), -1);
    ck_assert_uint_eq(sw_table_count(t), 2);
    sw_table_remove(t, a);
    ck_assert_uint_eq(sw_table_count(t), 1);
    sw_table_remove(t, b);
    ck_assert_uint_eq(sw_table_count(t), 0);
    sw_table_free(t);
    unit_free_alloc(a);
    unit_free_alloc(b);
    unit_free_alloc(clash);
}
END_TEST

/* The spacing of walks over every chunk: the caller's least below 64
 * chunks a launch, one launch per 64 chunks above, counted over the
 * chunks of the allocations registered (not those refused, nor removed). */
START_TEST(table_walk_spacing_follows_the_chunks_registered)
{
    sw_table_t *t = new_table(G);
    ck_assert_uint_eq(sw_table_walk_every(t, 8), 8);
    ck_assert_uint_eq(sw_table_walk_every(NULL, 8), 8);
    sw_alloc_t *a = mk_even(BASE, 512, G);       /* 512 chunks: 8 launches */
    sw_alloc_t *b = mk_even(BASE + 4 * GIB, 1536, G); /* 2,048 in all: 32 */
    sw_alloc_t *clash = mk_even(BASE + G, 64, G);
    ck_assert_int_eq(sw_table_insert(t, a), 0);
    ck_assert_uint_eq(sw_table_walk_every(t, 1), 8);
    ck_assert_uint_eq(sw_table_walk_every(t, 9), 9);
    ck_assert_int_eq(sw_table_insert(t, b), 0);
    ck_assert_uint_eq(sw_table_walk_every(t, 8), 32);
    ck_assert_int_eq(sw_table_insert(t, clash), -1);
    ck_assert_uint_eq(sw_table_walk_every(t, 8), 32);
    sw_table_remove(t, b);
    ck_assert_uint_eq(sw_table_walk_every(t, 0), 8);
    sw_table_remove(t, a);
    ck_assert_uint_eq(sw_table_walk_every(t, 0), 0);
    sw_table_free(t);
    unit_free_alloc(a);
    unit_free_alloc(b);
    unit_free_alloc(clash);
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

Suite *table_suite(void)
{
    Suite *s = suite_create("table");
    add_case(s, table_lookup_finds_first_byte_of_each_chunk);
    add_case(s, table_lookup_finds_last_byte_of_each_chunk);
    add_case(s, table_lookup_finds_interior_addresses);
    add_case(s, table_lookup_is_null_just_before_base);
    add_case(s, table_lookup_is_null_at_end_of_reservation);
    add_case(s, table_lookup_is_null_for_untracked_extremes);
    add_case(s, table_lookup_maps_chunks_of_different_sizes);
    add_case(s, table_lookup_finds_every_chunk_of_a_large_allocation);
    add_case(s, table_many_allocations_are_all_found);
    add_case(s, table_adjacent_allocations_both_insert);
    add_case(s, table_huge_addresses_near_top_of_user_space);
    add_case(s, table_works_with_a_small_granule);
    add_case(s, table_tables_are_independent);
    add_case(s, table_remove_makes_lookups_null);
    add_case(s, table_remove_leaves_other_allocations_intact);
    add_case(s, table_walk_spacing_follows_the_chunks_registered);
    add_case(s, table_reinsert_after_remove_succeeds);
    add_case(s, table_insert_remove_cycles_keep_working);
    add_case(s, table_insert_same_range_fails_and_leaves_table_unchanged);
    add_case(s, table_insert_overlapping_start_fails_and_leaves_table_unchanged);
    add_case(s, table_insert_overlapping_end_fails_and_leaves_table_unchanged);
    add_case(s, table_insert_enclosing_fails_and_leaves_table_unchanged);
    add_case(s, table_insert_inside_fails_and_leaves_table_unchanged);
    add_case(s, table_find_base_returns_allocation_at_exact_base);
    add_case(s, table_find_base_is_null_for_non_base_addresses);
    add_case(s, table_maybe_has_no_false_negatives);
    add_case(s, table_maybe_is_false_for_null_and_far_below);
    add_case(s, table_each_visits_every_allocation_once);
    add_case(s, table_each_on_empty_table_calls_nothing);
    add_case(s, table_count_follows_inserts_and_removes);
    return s;
}

/*
 * test_tmap.c: the table of TMA descriptors spillway saw made
 * (core/tmap.c) and where a launch's parameters may hold one
 * (sw_scan_descriptors, core/scan.c), black-box, from the contract in
 * sw.h: exact bytes hit, any other bytes miss; the table stays within its
 * bound, evicting by the clock; descriptors are found in parameters of
 * 128 bytes and at 64-byte steps inside larger ones, in both argument
 * forms.
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sw.h"
#include "unit.h"

/* --- helpers ------------------------------------------------------------ */

typedef struct {
    _Alignas(64) unsigned char b[SW_TMAP_BYTES];
} desc_t;

/* A descriptor-like block of bytes that differs from every other seed's
 * in every word (no layout is assumed: the table must not care). */
static desc_t mk_desc(uint64_t seed)
{
    desc_t d;
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (unsigned i = 0; i < SW_TMAP_BYTES; i += 8) {
        x ^= x >> 31;
        x *= 0xbf58476d1ce4e5b9ull;
        x ^= x >> 29;
        memcpy(d.b + i, &x, 8);
    }
    return d;
}

static sw_tmap_val_t val(uint64_t i)
{
    return (sw_tmap_val_t){.addr = 0x7f0000000000ull + (i << 21), .bytes = i * 100};
}

static bool has(sw_tmap_t *t, uint64_t seed)
{
    desc_t d = mk_desc(seed);
    sw_tmap_val_t v;
    return sw_tmap_lookup(t, d.b, &v);
}

static void insert_seed(sw_tmap_t *t, uint64_t seed)
{
    desc_t d = mk_desc(seed);
    sw_tmap_insert(t, d.b, val(seed));
}

/* --- the table ------------------------------------------------------------ */

START_TEST(tmap_finds_a_recorded_descriptor_with_its_address_and_size)
{
    sw_tmap_t *t = sw_tmap_new(16);
    ck_assert_ptr_nonnull(t);
    desc_t d = mk_desc(7);
    sw_tmap_insert(t, d.b, (sw_tmap_val_t){.addr = 0x7f0012340000ull, .bytes = 2u << 20});
    sw_tmap_val_t v = {0};
    ck_assert(sw_tmap_lookup(t, d.b, &v));
    ck_assert_uint_eq(v.addr, 0x7f0012340000ull);
    ck_assert_uint_eq(v.bytes, 2u << 20);
    ck_assert_uint_eq(sw_tmap_count(t), 1);
    sw_tmap_free(t);
}
END_TEST

START_TEST(tmap_misses_when_any_one_byte_differs)
{
    sw_tmap_t *t = sw_tmap_new(16);
    ck_assert_ptr_nonnull(t);
    desc_t d = mk_desc(3);
    sw_tmap_insert(t, d.b, val(3));
    for (unsigned i = 0; i < SW_TMAP_BYTES; i++) {
        desc_t e = d;
        e.b[i] ^= 0x01;
        sw_tmap_val_t v = {.addr = 42};
        ck_assert_msg(!sw_tmap_lookup(t, e.b, &v), "byte %u flipped still hits", i);
        ck_assert_uint_eq(v.addr, 42); /* untouched on a miss */
    }
    sw_tmap_free(t);
}
END_TEST

START_TEST(tmap_finds_a_descriptor_read_at_an_unaligned_address)
{
    sw_tmap_t *t = sw_tmap_new(4);
    ck_assert_ptr_nonnull(t);
    desc_t d = mk_desc(11);
    sw_tmap_insert(t, d.b, val(11));
    unsigned char raw[SW_TMAP_BYTES + 3];
    memcpy(raw + 3, d.b, SW_TMAP_BYTES);
    sw_tmap_val_t v;
    ck_assert(sw_tmap_lookup(t, raw + 3, &v));
    ck_assert_uint_eq(v.addr, val(11).addr);
    sw_tmap_free(t);
}
END_TEST

START_TEST(tmap_same_bytes_again_replace_the_value)
{
    sw_tmap_t *t = sw_tmap_new(4);
    ck_assert_ptr_nonnull(t);
    desc_t d = mk_desc(5);
    sw_tmap_insert(t, d.b, val(5));
    sw_tmap_insert(t, d.b, val(6));
    sw_tmap_val_t v;
    ck_assert(sw_tmap_lookup(t, d.b, &v));
    ck_assert_uint_eq(v.addr, val(6).addr);
    ck_assert_uint_eq(sw_tmap_count(t), 1);
    sw_tmap_free(t);
}
END_TEST

START_TEST(tmap_null_or_empty_table_misses)
{
    desc_t d = mk_desc(1);
    sw_tmap_val_t v;
    ck_assert(!sw_tmap_lookup(NULL, d.b, &v));
    ck_assert_uint_eq(sw_tmap_count(NULL), 0);
    sw_tmap_t *t = sw_tmap_new(4);
    ck_assert_ptr_nonnull(t);
    ck_assert(!sw_tmap_lookup(t, d.b, &v));
    sw_tmap_free(t);
    sw_tmap_free(NULL);
}
END_TEST

START_TEST(tmap_new_refuses_a_bound_out_of_range)
{
    ck_assert_ptr_null(sw_tmap_new(0));
    ck_assert_ptr_null(sw_tmap_new((1u << 24) + 1));
}
END_TEST

START_TEST(tmap_holds_many_entries_up_to_its_bound)
{
    enum { N = 4096 };
    sw_tmap_t *t = sw_tmap_new(N);
    ck_assert_ptr_nonnull(t);
    for (uint64_t i = 0; i < N; i++)
        insert_seed(t, i);
    ck_assert_uint_eq(sw_tmap_count(t), N);
    for (uint64_t i = 0; i < N; i++) {
        desc_t d = mk_desc(i);
        sw_tmap_val_t v;
        ck_assert_msg(sw_tmap_lookup(t, d.b, &v), "entry %llu lost", (unsigned long long)i);
        ck_assert_uint_eq(v.addr, val(i).addr);
        ck_assert_uint_eq(v.bytes, val(i).bytes);
    }
    ck_assert(!has(t, N));
    sw_tmap_free(t);
}
END_TEST

START_TEST(tmap_full_evicts_the_oldest_entry_never_looked_up)
{
    sw_tmap_t *t = sw_tmap_new(4);
    ck_assert_ptr_nonnull(t);
    for (uint64_t i = 0; i < 5; i++)
        insert_seed(t, i);
    ck_assert_uint_eq(sw_tmap_count(t), 4);
    ck_assert(!has(t, 0));
    for (uint64_t i = 1; i < 5; i++)
        ck_assert_msg(has(t, i), "entry %llu lost", (unsigned long long)i);
    sw_tmap_free(t);
}
END_TEST

/* The second chance: weights' descriptors, made once and looked up every
 * step, outlive newer ones that are never used. */
START_TEST(tmap_full_keeps_a_looked_up_entry_over_newer_unused_ones)
{
    sw_tmap_t *t = sw_tmap_new(4);
    ck_assert_ptr_nonnull(t);
    for (uint64_t i = 0; i < 4; i++)
        insert_seed(t, i);
    ck_assert(has(t, 0));
    insert_seed(t, 4);
    ck_assert(has(t, 0));
    ck_assert(!has(t, 1));
    for (uint64_t i = 2; i < 5; i++)
        ck_assert(has(t, i));
    sw_tmap_free(t);
}
END_TEST

START_TEST(tmap_never_holds_more_than_its_bound)
{
    enum { MAX = 16, N = 1000 };
    sw_tmap_t *t = sw_tmap_new(MAX);
    ck_assert_ptr_nonnull(t);
    for (uint64_t i = 0; i < N; i++) {
        insert_seed(t, i);
        ck_assert_uint_le(sw_tmap_count(t), MAX);
    }
    size_t held = 0;
    for (uint64_t i = 0; i < N; i++)
        held += has(t, i);
    ck_assert_uint_eq(held, MAX);
    /* Nothing was looked up while inserting: the newest are what is left. */
    for (uint64_t i = N - MAX; i < N; i++)
        ck_assert(has(t, i));
    sw_tmap_free(t);
}
END_TEST

typedef struct {
    sw_tmap_t *t;
    uint64_t first;
    int misses;
} racer_t;

/* Inserts its own seeds while looking up the shared ones. */
static void *racer(void *arg)
{
    racer_t *r = arg;
    for (uint64_t i = 0; i < 2000; i++) {
        insert_seed(r->t, r->first + i);
        if (!has(r->t, i % 64))
            r->misses++;
    }
    return NULL;
}

START_TEST(tmap_lookups_hit_while_other_threads_insert)
{
    sw_tmap_t *t = sw_tmap_new(4096 + 64);
    ck_assert_ptr_nonnull(t);
    for (uint64_t i = 0; i < 64; i++)
        insert_seed(t, i);
    racer_t r[2] = {{t, 1000, 0}, {t, 100000, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, racer, &r[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(r[0].misses + r[1].misses, 0);
    ck_assert_uint_eq(sw_tmap_count(t), 64 + 2 * 2000);
    sw_tmap_free(t);
}
END_TEST

/* --- where descriptors may lie ------------------------------------------ */

/* Parameters: 8 bytes, a 128-byte descriptor, 8 bytes, a 256-byte struct
 * (windows at 0, 64, 128), 200 bytes (0, 64), 127 bytes (none). */
static uint32_t lo_off[] = {0, 64, 192, 256, 512, 768};
static uint32_t lo_size[] = {8, 128, 8, 256, 200, 127};
static const sw_layout_t layout = {6, 895, lo_off, lo_size};

typedef struct {
    uint32_t index[32], offset[32];
    const void *w[32];
    int n;
} seen_t;

static void on_window(uint32_t index, uint32_t offset, const void *window, void *arg)
{
    seen_t *s = arg;
    ck_assert_int_lt(s->n, 32);
    s->index[s->n] = index;
    s->offset[s->n] = offset;
    s->w[s->n++] = window;
}

START_TEST(scan_descriptors_offers_every_64_byte_step_of_large_params)
{
    static unsigned char store[6][256];
    void *params[6];
    for (int i = 0; i < 6; i++)
        params[i] = store[i];
    seen_t s = {0};
    ck_assert_uint_eq(sw_scan_descriptors(&layout, params, NULL, 0, on_window, &s), 6);
    const uint32_t want_i[] = {1, 3, 3, 3, 4, 4}, want_o[] = {0, 0, 64, 128, 0, 64};
    for (int k = 0; k < 6; k++) {
        ck_assert_uint_eq(s.index[k], want_i[k]);
        ck_assert_uint_eq(s.offset[k], want_o[k]);
        ck_assert_ptr_eq(s.w[k], store[want_i[k]] + want_o[k]);
    }
}
END_TEST

START_TEST(scan_descriptors_skips_null_params)
{
    static unsigned char store[256];
    void *params[6] = {store, NULL, store, store, NULL, store};
    seen_t s = {0};
    ck_assert_uint_eq(sw_scan_descriptors(&layout, params, NULL, 0, on_window, &s), 3);
    ck_assert_uint_eq(s.index[0], 3);
}
END_TEST

START_TEST(scan_descriptors_in_a_packed_buffer_stop_where_it_ends)
{
    static unsigned char buf[895];
    seen_t s = {0};
    ck_assert_uint_eq(sw_scan_descriptors(&layout, NULL, buf, sizeof buf, on_window, &s), 6);
    ck_assert_ptr_eq(s.w[0], buf + 64);
    ck_assert_ptr_eq(s.w[3], buf + 256 + 128);
    /* Ends inside the struct's third window: its first two only. */
    s.n = 0;
    ck_assert_uint_eq(sw_scan_descriptors(&layout, NULL, buf, 256 + 255, on_window, &s), 3);
    ck_assert_uint_eq(s.index[2], 3);
    ck_assert_uint_eq(s.offset[2], 64);
    s.n = 0;
    ck_assert_uint_eq(sw_scan_descriptors(&layout, NULL, NULL, 0, on_window, &s), 0);
}
END_TEST

START_TEST(tmap_locate_reports_recorded_descriptors_and_ignores_others)
{
    sw_tmap_t *t = sw_tmap_new(8);
    ck_assert_ptr_nonnull(t);
    insert_seed(t, 1);
    insert_seed(t, 2);
    static _Alignas(64) unsigned char store[6][256];
    desc_t d1 = mk_desc(1), d2 = mk_desc(2), other = mk_desc(9);
    memcpy(store[1], d1.b, SW_TMAP_BYTES);
    memcpy(store[3], other.b, SW_TMAP_BYTES);
    memcpy(store[3] + 128, d2.b, SW_TMAP_BYTES);
    void *params[6];
    for (int i = 0; i < 6; i++)
        params[i] = store[i];
    sw_tmap_at_t at[4];
    ck_assert_uint_eq(sw_tmap_locate(t, &layout, params, NULL, 0, at, 4), 2);
    ck_assert_uint_eq(at[0].index, 1);
    ck_assert_uint_eq(at[0].offset, 0);
    ck_assert_uint_eq(at[0].v.addr, val(1).addr);
    ck_assert_uint_eq(at[1].index, 3);
    ck_assert_uint_eq(at[1].offset, 128);
    ck_assert_uint_eq(at[1].v.addr, val(2).addr);
    ck_assert_uint_eq(at[1].v.bytes, val(2).bytes);
    /* At most max, the first found. */
    ck_assert_uint_eq(sw_tmap_locate(t, &layout, params, NULL, 0, at, 1), 1);
    ck_assert_uint_eq(at[0].index, 1);
    /* The same through a packed buffer. */
    static unsigned char buf[895];
    memcpy(buf + 64, d1.b, SW_TMAP_BYTES);
    memcpy(buf + 256 + 128, d2.b, SW_TMAP_BYTES);
    ck_assert_uint_eq(sw_tmap_locate(t, &layout, NULL, buf, sizeof buf, at, 4), 2);
    ck_assert_uint_eq(at[1].index, 3);
    ck_assert_uint_eq(at[1].offset, 128);
    ck_assert_uint_eq(sw_tmap_locate(NULL, &layout, params, NULL, 0, at, 4), 0);
    sw_tmap_free(t);
}
END_TEST

/* --- the tensor's size -------------------------------------------------- */

START_TEST(tmap_extent_spans_rows_by_their_pitch)
{
    const uint64_t dim[] = {1000, 512}, pitch[] = {4096};
    ck_assert_uint_eq(sw_tmap_extent(2, dim, pitch, 4), 511ull * 4096 + 4000);
    const uint64_t one[] = {300};
    ck_assert_uint_eq(sw_tmap_extent(1, one, NULL, 2), 600);
    const uint64_t d3[] = {16, 4, 3}, s3[] = {64, 1024};
    ck_assert_uint_eq(sw_tmap_extent(3, d3, s3, 4), 64 + 3 * 64 + 2 * 1024);
}
END_TEST

START_TEST(tmap_extent_is_unknown_when_it_cannot_be_computed)
{
    const uint64_t dim[] = {1000, 512}, pitch[] = {4096};
    ck_assert_uint_eq(sw_tmap_extent(2, dim, pitch, 0), 0);
    ck_assert_uint_eq(sw_tmap_extent(0, dim, pitch, 4), 0);
    ck_assert_uint_eq(sw_tmap_extent(6, dim, pitch, 4), 0);
    const uint64_t zero[] = {1000, 0};
    ck_assert_uint_eq(sw_tmap_extent(2, zero, pitch, 4), 0);
    const uint64_t huge[] = {1ull << 32, 1ull << 32}, big[] = {(1ull << 40) - 16};
    ck_assert_uint_eq(sw_tmap_extent(2, huge, big, 8), 0);
}
END_TEST

/* --- suite ---------------------------------------------------------------- */

static void add_case(Suite *s, const TTest *t)
{
    TCase *tc = tcase_create(t->name);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, t);
    suite_add_tcase(s, tc);
}

Suite *tmap_suite(void)
{
    Suite *s = suite_create("tmap");
    add_case(s, tmap_finds_a_recorded_descriptor_with_its_address_and_size);
    add_case(s, tmap_misses_when_any_one_byte_differs);
    add_case(s, tmap_finds_a_descriptor_read_at_an_unaligned_address);
    add_case(s, tmap_same_bytes_again_replace_the_value);
    add_case(s, tmap_null_or_empty_table_misses);
    add_case(s, tmap_new_refuses_a_bound_out_of_range);
    add_case(s, tmap_holds_many_entries_up_to_its_bound);
    add_case(s, tmap_full_evicts_the_oldest_entry_never_looked_up);
    add_case(s, tmap_full_keeps_a_looked_up_entry_over_newer_unused_ones);
    add_case(s, tmap_never_holds_more_than_its_bound);
    add_case(s, tmap_lookups_hit_while_other_threads_insert);
    add_case(s, scan_descriptors_offers_every_64_byte_step_of_large_params);
    add_case(s, scan_descriptors_skips_null_params);
    add_case(s, scan_descriptors_in_a_packed_buffer_stop_where_it_ends);
    add_case(s, tmap_locate_reports_recorded_descriptors_and_ignores_others);
    add_case(s, tmap_extent_spans_rows_by_their_pitch);
    add_case(s, tmap_extent_is_unknown_when_it_cannot_be_computed);
    return s;
}

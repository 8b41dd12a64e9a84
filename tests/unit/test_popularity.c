/*
 * Popularity: a chunk's heat (core/learn.c) and displacement
 * (core/policy.c), the choice of which device chunk makes room for a
 * popular host chunk that a launch needs.
 */
#include "unit.h"

#include <stdlib.h>

#define MIB (1024ULL * 1024ULL)
#define G (2 * MIB)
#define BASE 0x7f0000000000ULL

static sw_table_t *new_table(void)
{
    sw_table_t *t = sw_table_new(G);
    ck_assert_ptr_nonnull(t);
    return t;
}

/* n allocations of one chunk each, every one on the device, born at 0. */
static sw_alloc_t **mk_singles(sw_table_t *t, int n, uint64_t size)
{
    sw_alloc_t **v = calloc((size_t)n, sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (int i = 0; i < n; i++) {
        v[i] = unit_mk_alloc(BASE + (uint64_t)i * 64 * MIB, &size, 1);
        ck_assert_int_eq(sw_table_insert(t, v[i]), 0);
    }
    return v;
}

static void free_singles(sw_table_t *t, sw_alloc_t **v, int n)
{
    for (int i = 0; i < n; i++) {
        sw_table_remove(t, v[i]);
        unit_free_alloc(v[i]);
    }
    free(v);
    sw_table_free(t);
}

/* Touches c at each of the given launches. */
static void touch_at(sw_chunk_t *c, const uint64_t *seqs, int n)
{
    for (int i = 0; i < n; i++)
        sw_learn_touch(c, seqs[i]);
}

/* --- heat --------------------------------------------------------------- */

/* Heat at now of a chunk touched at the given launches. */
static uint32_t heat_after(const uint64_t *seqs, int n, uint64_t now)
{
    uint64_t size = G;
    sw_alloc_t *a = unit_mk_alloc(BASE, &size, 1);
    touch_at(&a->chunks[0], seqs, n);
    uint32_t h = sw_learn_heat(&a->chunks[0], now);
    unit_free_alloc(a);
    return h;
}

START_TEST(heat_counts_uses_and_halves_per_half_life)
{
    const uint64_t H = SW_HEAT_HALF_LIFE, ONE = SW_HEAT_ONE;
    ck_assert_uint_eq(heat_after(NULL, 0, 100), 0);
    /* Over a single launch the decay rounds away. */
    ck_assert_uint_eq(heat_after((uint64_t[]){1, 2}, 2, 2), 2 * ONE);
    uint64_t at[] = {40};
    ck_assert_uint_eq(heat_after(at, 1, 40), ONE);
    ck_assert_uint_eq(heat_after(at, 1, 40 + H), ONE / 2);
    ck_assert_uint_eq(heat_after(at, 1, 40 + 2 * H), ONE / 4);
    /* 2^-1/2 = 0.707; the quadratic gives 0.702: 256 - 76.4, the loss rounded down. */
    ck_assert_uint_eq(heat_after(at, 1, 40 + H / 2), 180);
    ck_assert_uint_eq(heat_after(at, 1, 40 + 9 * H), 0);
    ck_assert_uint_eq(heat_after(at, 1, UINT64_MAX), 0);
    /* Never rises while unused. */
    uint32_t prev = ONE;
    for (uint64_t dt = 1; dt < 3 * H; dt += 7) {
        uint32_t h = heat_after(at, 1, 40 + dt);
        ck_assert_uint_le(h, prev);
        prev = h;
    }
    /* A steady rate settles near rate * H / ln 2 uses. */
    uint64_t seqs[4000];
    for (int i = 0; i < 4000; i++)
        seqs[i] = 1 + 4 * (uint64_t)i;
    double settled = (double)heat_after(seqs, 4000, seqs[3999]) / ONE, want = 0.25 * H / 0.693;
    ck_assert_double_le(settled, want * 1.05);
    ck_assert_double_ge(settled, want * 0.95);
}
END_TEST

START_TEST(heat_stays_bounded_and_counts_a_launch_once)
{
    uint64_t size = G;
    sw_alloc_t *a = unit_mk_alloc(BASE, &size, 1);
    sw_chunk_t *c = &a->chunks[0];
    /* Used by every launch: the most heat there can be. */
    for (uint64_t seq = 1; seq <= 20 * SW_HEAT_HALF_LIFE; seq++)
        sw_learn_touch(c, seq);
    ck_assert_uint_le(c->heat, (uint32_t)(SW_HEAT_HALF_LIFE / 0.69 * SW_HEAT_ONE));
    ck_assert_uint_ge(c->heat, (uint32_t)(SW_HEAT_HALF_LIFE / 0.70 * SW_HEAT_ONE));
    /* The same launch again counts once. */
    uint32_t h = c->heat;
    sw_learn_touch(c, 20 * SW_HEAT_HALF_LIFE);
    ck_assert_uint_eq(c->heat, h);
    unit_free_alloc(a);
}
END_TEST

/* --- displacement ------------------------------------------------------- */

START_TEST(displace_takes_the_coldest_device_chunk_when_half_again_as_hot)
{
    sw_table_t *t = new_table();
    sw_alloc_t **v = mk_singles(t, 4, G);
    sw_chunk_t *hot = &v[0]->chunks[0];
    hot->where = SW_ON_HOST;
    touch_at(hot, (uint64_t[]){1, 2, 3, 4}, 4);                  /* about 4 */
    touch_at(&v[1]->chunks[0], (uint64_t[]){5, 6, 7}, 3);        /* about 3 */
    touch_at(&v[2]->chunks[0], (uint64_t[]){8, 9}, 2);           /* about 2 */
    touch_at(&v[3]->chunks[0], (uint64_t[]){10, 11, 12, 13, 14}, 5);
    ck_assert_ptr_eq(sw_policy_displace(t, hot, 15, NULL, NULL), &v[2]->chunks[0]);
    /* 4 against 3 is less than half again: no trade. */
    touch_at(&v[2]->chunks[0], (uint64_t[]){15, 16}, 2);
    ck_assert_ptr_null(sw_policy_displace(t, hot, 17, NULL, NULL));
    /* 6 against 3: the coldest goes. */
    touch_at(hot, (uint64_t[]){17, 18}, 2);
    ck_assert_ptr_eq(sw_policy_displace(t, hot, 19, NULL, NULL), &v[1]->chunks[0]);
    /* Equal heat never trades, whatever the order of last uses. */
    sw_chunk_t *twin = &v[1]->chunks[0];
    twin->heat = hot->heat;
    twin->last_use = hot->last_use;
    for (int i = 2; i < 4; i++)
        v[i]->chunks[0].where = SW_ON_HOST;
    ck_assert_ptr_null(sw_policy_displace(t, hot, 19, NULL, NULL));
    free_singles(t, v, 4);
}
END_TEST

/* A loop over visits (each 40 launches): the hot chunk is visited now,
 * five touches a visit; three colder device chunks, one touch a visit,
 * come back before its next visit. However cold, none is its victim: in a
 * cyclic scan the coldest chunk is the one needed soonest. One the loop
 * comes back to only after the hot one's next visit is. */
START_TEST(displace_spares_a_chunk_the_loop_comes_back_to_first)
{
    sw_table_t *t = new_table();
    sw_alloc_t **v = mk_singles(t, 4, G);
    sw_chunk_t *hot = &v[0]->chunks[0];
    hot->where = SW_ON_HOST;
    for (uint64_t k = 0; k < 3; k++) {
        uint64_t base = 40 * k;
        for (uint64_t j = 1; j <= (k < 2 ? 5u : 3u); j++)
            sw_learn_touch(hot, base + j);
        for (int i = 1; i < 4 && k < 2; i++)
            sw_learn_touch(&v[i]->chunks[0], base + 10 * (uint64_t)i + 1);
    }
    ck_assert_ptr_null(sw_policy_displace(t, hot, 84, NULL, NULL));
    /* the third comes back every other loop: after the hot one */
    v[3]->chunks[0].loop = 80;
    ck_assert_ptr_eq(sw_policy_displace(t, hot, 84, NULL, NULL), &v[3]->chunks[0]);
    /* a prediction missed by more than an eighth of its loop is no
     * prediction: the chunk is a victim like any cold one */
    v[3]->chunks[0].loop = 40;
    ck_assert_ptr_null(sw_policy_displace(t, hot, 84, NULL, NULL));
    ck_assert_ptr_nonnull(sw_policy_displace(t, hot, 40 + 71 + 6, NULL, NULL));
    free_singles(t, v, 4);
}
END_TEST

/* The coldest device chunk, kept resident by a hint, is passed over for
 * the next coldest. */
START_TEST(displace_passes_over_resident_chunks)
{
    sw_table_t *t = new_table();
    sw_alloc_t **v = mk_singles(t, 3, G);
    sw_chunk_t *hot = &v[0]->chunks[0];
    hot->where = SW_ON_HOST;
    touch_at(hot, (uint64_t[]){1, 2, 3, 4, 5, 6}, 6);
    touch_at(&v[1]->chunks[0], (uint64_t[]){7}, 1);
    touch_at(&v[2]->chunks[0], (uint64_t[]){8, 9}, 2);
    ck_assert_ptr_eq(sw_policy_displace(t, hot, 10, NULL, NULL), &v[1]->chunks[0]);
    v[1]->chunks[0].resident = true;
    ck_assert_ptr_eq(sw_policy_displace(t, hot, 10, NULL, NULL), &v[2]->chunks[0]);
    v[2]->chunks[0].resident = true;
    ck_assert_ptr_null(sw_policy_displace(t, hot, 10, NULL, NULL));
    free_singles(t, v, 3);
}
END_TEST

START_TEST(displace_needs_a_hot_host_chunk)
{
    sw_table_t *t = new_table();
    sw_alloc_t **v = mk_singles(t, 2, G);
    sw_chunk_t *hot = &v[0]->chunks[0], *cold = &v[1]->chunks[0];
    touch_at(cold, (uint64_t[]){1}, 1);
    hot->where = SW_ON_HOST;
    /* One use predicts nothing, however cold the rest. */
    touch_at(hot, (uint64_t[]){2}, 1);
    ck_assert_uint_lt(hot->uses, SW_HOT_USES);
    ck_assert_ptr_null(sw_policy_displace(t, hot, 3, NULL, NULL));
    touch_at(hot, (uint64_t[]){3, 4}, 2);
    ck_assert_ptr_eq(sw_policy_displace(t, hot, 5, NULL, NULL), cold);
    /* A chunk on the device displaces nothing. */
    hot->where = SW_ON_DEVICE;
    ck_assert_ptr_null(sw_policy_displace(t, hot, 5, NULL, NULL));
    /* Uses long ago count for less: cooled to 0, it is not hotter. */
    hot->where = SW_ON_HOST;
    ck_assert_ptr_null(sw_policy_displace(t, hot, 4 + 12 * SW_HEAT_HALF_LIFE, NULL, NULL));
    free_singles(t, v, 2);
}
END_TEST

START_TEST(displace_spares_unseen_chunks_for_a_grace_period)
{
    sw_table_t *t = new_table();
    sw_alloc_t **v = mk_singles(t, 3, G);
    sw_chunk_t *hot = &v[0]->chunks[0], *unseen = &v[1]->chunks[0], *seen = &v[2]->chunks[0];
    hot->where = SW_ON_HOST;
    v[1]->born = 100;
    touch_at(seen, (uint64_t[]){101}, 1);
    touch_at(hot, (uint64_t[]){102, 103, 104}, 3);
    /* The unseen chunk may be read through a pointer in device memory:
     * the seen one goes, though hotter. */
    ck_assert_ptr_eq(sw_policy_displace(t, hot, 105, NULL, NULL), seen);
    ck_assert_ptr_eq(sw_policy_displace(t, hot, 100 + SW_UNSEEN_GRACE - 1, NULL, NULL), seen);
    ck_assert_ptr_eq(sw_policy_displace(t, hot, 100 + SW_UNSEEN_GRACE, NULL, NULL), unseen);
    /* One a copy to the device pointed into is spared for good. */
    unseen->pointed = true;
    ck_assert_ptr_eq(sw_policy_displace(t, hot, 100 + SW_UNSEEN_GRACE, NULL, NULL), seen);
    free_singles(t, v, 3);
}
END_TEST

/* The host chunk to adopt: pointed at from device memory, never named by
 * an argument, not in a window slot; the lowest address first. */
START_TEST(unseen_picks_pointed_host_chunks_no_argument_names)
{
    sw_table_t *t = new_table();
    sw_alloc_t **v = mk_singles(t, 6, G);
    for (int i = 0; i < 6; i++) {
        v[i]->chunks[0].where = SW_ON_HOST;
        v[i]->chunks[0].pointed = true;
    }
    v[0]->chunks[0].pointed = false;               /* nothing points at it */
    sw_learn_touch(&v[1]->chunks[0], 7);            /* an argument named it */
    v[2]->chunks[0].where = SW_ON_DEVICE;           /* resident already */
    v[3]->chunks[0].slot = 1;                       /* in the window */
    ck_assert_ptr_eq(sw_policy_unseen(t), &v[4]->chunks[0]);
    v[4]->chunks[0].pointed = false;
    ck_assert_ptr_eq(sw_policy_unseen(t), &v[5]->chunks[0]);
    v[5]->chunks[0].where = SW_ON_DEVICE;
    ck_assert_ptr_null(sw_policy_unseen(t));
    free_singles(t, v, 6);
}
END_TEST

START_TEST(displace_honours_keep_host_chunks_and_size)
{
    sw_table_t *t = new_table();
    sw_alloc_t **v = mk_singles(t, 4, 2 * G);
    sw_chunk_t *hot = &v[0]->chunks[0];
    hot->where = SW_ON_HOST;
    touch_at(hot, (uint64_t[]){1, 2, 3, 4}, 4);
    for (int i = 1; i < 4; i++)
        touch_at(&v[i]->chunks[0], (uint64_t[]){(uint64_t)(4 + i)}, 1);
    /* The coldest (oldest) is kept; the next is on the host; the last is
     * too small to make room. */
    keep_set_t *k = unit_keep_none();
    k->chunks[k->n++] = &v[1]->chunks[0];
    v[2]->chunks[0].where = SW_ON_HOST;
    v[3]->chunks[0].size = G;
    ck_assert_ptr_null(sw_policy_displace(t, hot, 10, unit_keep_listed, k));
    ck_assert_int_gt(k->calls, 0);
    v[3]->chunks[0].size = 2 * G;
    ck_assert_ptr_eq(sw_policy_displace(t, hot, 10, unit_keep_listed, k), &v[3]->chunks[0]);
    k->n = 0;
    ck_assert_ptr_eq(sw_policy_displace(t, hot, 10, unit_keep_listed, k), &v[1]->chunks[0]);
    free(k);
    free_singles(t, v, 4);
}
END_TEST

/*
 * A skewed trace, played against displacement: K chunks on the device, the
 * rest on the host, picks drawn from weights 2^-rank. After enough
 * picks the device holds the most popular chunks, and it got there without
 * trading equals back and forth.
 */
START_TEST(displace_gathers_the_popular_chunks_of_a_skewed_trace)
{
    enum { N = 16, K = 4, PICKS = 4000 };
    sw_table_t *t = new_table();
    sw_alloc_t **v = mk_singles(t, N, G);
    /* The device starts with the least popular chunks. */
    for (int i = 0; i < N - K; i++)
        v[i]->chunks[0].where = SW_ON_HOST;
    double w[N], total = 0;
    for (int i = 0; i < N; i++)
        total += w[i] = 1.0 / (double)(1u << i);
    uint64_t s = 42;
    int swaps = 0, late_swaps = 0;
    for (uint64_t seq = 1; seq <= PICKS; seq++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        double u = (double)(s >> 11) / 9007199254740992.0 * total;
        int pick = 0;
        while (pick < N - 1 && (u -= w[pick]) > 0)
            pick++;
        sw_chunk_t *c = &v[pick]->chunks[0];
        sw_learn_touch(c, seq);
        if (c->where != SW_ON_HOST)
            continue;
        sw_chunk_t *out = sw_policy_displace(t, c, seq, NULL, NULL);
        if (out) {
            ck_assert(out->where == SW_ON_DEVICE);
            out->where = SW_ON_HOST;
            c->where = SW_ON_DEVICE;
            swaps++;
            late_swaps += seq > PICKS / 2;
        }
    }
    for (int i = 0; i < K; i++)
        ck_assert_msg(v[i]->chunks[0].where == SW_ON_DEVICE, "rank %d is not on the device", i);
    ck_assert_int_ge(swaps, K);
    ck_assert_int_le(late_swaps, 2);
    free_singles(t, v, N);
}
END_TEST

Suite *popularity_suite(void)
{
    Suite *s = suite_create("popularity");
    TCase *tc = tcase_create("heat");
    tcase_add_test(tc, heat_counts_uses_and_halves_per_half_life);
    tcase_add_test(tc, heat_stays_bounded_and_counts_a_launch_once);
    suite_add_tcase(s, tc);
    tc = tcase_create("displace");
    tcase_add_test(tc, displace_takes_the_coldest_device_chunk_when_half_again_as_hot);
    tcase_add_test(tc, displace_needs_a_hot_host_chunk);
    tcase_add_test(tc, displace_passes_over_resident_chunks);
    tcase_add_test(tc, displace_spares_a_chunk_the_loop_comes_back_to_first);
    tcase_add_test(tc, displace_spares_unseen_chunks_for_a_grace_period);
    tcase_add_test(tc, displace_honours_keep_host_chunks_and_size);
    tcase_add_test(tc, unseen_picks_pointed_host_chunks_no_argument_names);
    tcase_add_test(tc, displace_gathers_the_popular_chunks_of_a_skewed_trace);
    suite_add_tcase(s, tc);
    return s;
}

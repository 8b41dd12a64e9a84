/*
 * Spreading (core/spread.c, sw_policy_spread), black-box, from the
 * contract in sw.h: a resident run of the loop is split by sending home
 * the chunk nearest its middle, for a streamed chunk of the same size
 * and no less worth where the streamed ones are thickest; the trades end,
 * with the resident chunks spread about evenly; a tensor of several chunks
 * trades whole, for one cut alike; and they never move a chunk that is
 * part of an allocation another launch visits too, or partly resident,
 * fixed, hinted resident, kept, another device's, of a device without a
 * window, or off the loop.
 *
 * The loop: LAYERS allocations of 2 MiB, one chunk each (or CHUNKS of 2
 * MiB: loop_init_cut), one visited every STRIDE launches, PERIOD launches
 * a loop, as 2 MiB layers of a decode step are.
 */
#include <stdlib.h>

#include "unit.h"

#define MiB(n) ((uint64_t)(n) << 20)
#define LAYERS 16
#define STRIDE 3
#define PERIOD (LAYERS * STRIDE)
#define FIRST 1000 /* the launch that began the latest loop */
#define NOW (FIRST + PERIOD - 1)
#define BASE 0x7f0000000000ULL

static const uint64_t with_window[SW_MAX_DEVICES] = {MiB(4), MiB(4)};

typedef struct {
    sw_table_t *t;
    sw_alloc_t *a[LAYERS];
} loop_t;

static sw_chunk_t *layer(loop_t *l, int i) { return &l->a[i]->chunks[0]; }

/* Layers [0, resident) on the device, the rest on the host, each cut
 * into n chunks of 2 MiB that its launch visits together. */
static void loop_init_cut(loop_t *l, int resident, uint32_t n)
{
    const uint64_t size[SW_TRADE_MAX] = {MiB(2), MiB(2), MiB(2), MiB(2), MiB(2), MiB(2), MiB(2),
                                         MiB(2), MiB(2), MiB(2), MiB(2), MiB(2), MiB(2), MiB(2),
                                         MiB(2), MiB(2)};
    ck_assert_uint_le(n, SW_TRADE_MAX);
    l->t = sw_table_new(MiB(2));
    ck_assert_ptr_nonnull(l->t);
    for (int i = 0; i < LAYERS; i++) {
        sw_alloc_t *a = unit_mk_alloc(BASE + (uint64_t)i * MiB(64), size, n);
        a->size = n * MiB(2);
        for (uint32_t k = 0; k < n; k++) {
            sw_chunk_t *c = &a->chunks[k];
            c->where = i < resident ? SW_ON_DEVICE : SW_ON_HOST;
            c->visit = c->last_use = FIRST + (uint64_t)i * STRIDE;
            c->loop = c->gap = PERIOD;
            c->uses = 4;
        }
        ck_assert_int_eq(sw_table_insert(l->t, a), 0);
        l->a[i] = a;
    }
}

static void loop_init(loop_t *l, int resident)
{
    loop_init_cut(l, resident, 1);
}

static void loop_free(loop_t *l)
{
    sw_table_free(l->t);
    for (int i = 0; i < LAYERS; i++)
        unit_free_alloc(l->a[i]);
}

static int index_of(loop_t *l, const sw_chunk_t *c)
{
    for (int i = 0; i < LAYERS; i++)
        if (layer(l, i) == c)
            return i;
    ck_abort_msg("a chunk not of the loop");
    return -1;
}

/* The longest run of resident layers, round the loop. */
static int longest_resident_run(loop_t *l)
{
    int best = 0, run = 0;
    for (int k = 0; k < 2 * LAYERS; k++) {
        run = layer(l, k % LAYERS)->where == SW_ON_DEVICE ? run + 1 : 0;
        if (run > best)
            best = run;
    }
    return best > LAYERS ? LAYERS : best;
}

static int resident_count(loop_t *l)
{
    int n = 0;
    for (int i = 0; i < LAYERS; i++)
        n += layer(l, i)->where == SW_ON_DEVICE;
    return n;
}

/* Makes the trade, which moves every chunk of one layer either way, in
 * order: what sw_promote_trade's moves would leave. */
static void apply(const sw_pack_t *m)
{
    ck_assert_uint_ge(m->nout, 1);
    ck_assert_uint_eq(m->nin, m->nout);
    ck_assert_uint_eq(m->out[0]->alloc->nchunks, m->nout);
    ck_assert_uint_eq(m->in[0]->alloc->nchunks, m->nin);
    for (size_t k = 0; k < m->nout; k++) {
        ck_assert_ptr_eq(m->out[k], &m->out[0]->alloc->chunks[k]);
        ck_assert_ptr_eq(m->in[k], &m->in[0]->alloc->chunks[k]);
        ck_assert_int_eq(m->out[k]->where, SW_ON_DEVICE);
        ck_assert_int_eq(m->in[k]->where, SW_ON_HOST);
        ck_assert_uint_eq(m->out[k]->size, m->in[k]->size);
        m->out[k]->where = SW_ON_HOST;
        m->in[k]->where = SW_ON_DEVICE;
    }
}

START_TEST(spread_splits_a_resident_run_at_its_middle)
{
    loop_t l;
    loop_init(&l, LAYERS / 2);
    sw_pack_t m;
    ck_assert(sw_policy_spread(l.t, NOW, PERIOD, with_window, NULL, NULL, &m));
    apply(&m);
    /* Out: the middle of layers 0-7 (3 or 4 splits them most evenly).
     * In: a streamed layer away from either end of its run, whose
     * neighbours are streamed too (not 8 or 15). */
    int out = index_of(&l, m.out[0]), in = index_of(&l, m.in[0]);
    ck_assert_msg(out == 3 || out == 4, "sent home layer %d", out);
    ck_assert_msg(in > 8 && in < 15, "brought in layer %d", in);
    loop_free(&l);
}
END_TEST

START_TEST(spread_ends_with_the_resident_layers_spread_evenly)
{
    for (int resident = 2; resident <= LAYERS - 2; resident++) {
        loop_t l;
        loop_init(&l, resident);
        int trades = 0;
        sw_pack_t m;
        while (sw_policy_spread(l.t, NOW, PERIOD, with_window, NULL, NULL, &m)) {
            apply(&m);
            ck_assert_msg(++trades <= LAYERS, "%d resident: trades do not end", resident);
        }
        ck_assert_int_eq(resident_count(&l), resident);
        /* Runs at most twice the resident share of a streamed layer,
         * rounded up: the trades stop where no one trade evens the gaps
         * more (12 resident of 16 leave runs of 5, 3, 2 and 2). */
        int streamed = LAYERS - resident, even = (resident + streamed - 1) / streamed;
        ck_assert_msg(longest_resident_run(&l) <= 2 * even,
                      "%d resident: a run of %d left after %d trades", resident,
                      longest_resident_run(&l), trades);
        ck_assert_msg(resident < 3 || trades > 0, "%d resident: no trade", resident);
        loop_free(&l);
    }
}
END_TEST

/* 8 MiB layers in four chunks of 2 MiB, as a budget cuts a tensor bigger
 * than a chunk: they trade whole, and spread as one-chunk layers do. */
START_TEST(spread_trades_a_tensor_of_several_chunks_whole)
{
    for (uint32_t n = 2; n <= SW_TRADE_MAX; n *= 2) {
        loop_t l;
        loop_init_cut(&l, LAYERS / 2, n);
        int trades = 0;
        sw_pack_t m;
        while (sw_policy_spread(l.t, NOW, PERIOD, with_window, NULL, NULL, &m)) {
            ck_assert_uint_eq(m.nout, n);
            apply(&m);
            ck_assert_msg(++trades <= LAYERS, "%u chunks a layer: trades do not end", n);
        }
        ck_assert_int_gt(trades, 0);
        ck_assert_int_eq(resident_count(&l), LAYERS / 2);
        ck_assert_int_le(longest_resident_run(&l), 2);
        for (int i = 0; i < LAYERS; i++)
            for (uint32_t k = 1; k < n; k++)
                ck_assert_int_eq(l.a[i]->chunks[k].where, layer(&l, i)->where);
        loop_free(&l);
    }
}
END_TEST

/* Layers visited two at a time (each pair's launch names both): where a
 * resident layer shares its place with a streamed one, splitting there
 * gains nothing, and a trade for nothing would never end. */
START_TEST(spread_never_trades_for_nothing)
{
    loop_t l;
    loop_init(&l, 0);
    for (int i = 0; i < LAYERS; i++) {
        layer(&l, i)->visit = layer(&l, i)->last_use = FIRST + (uint64_t)(i / 2) * 2 * STRIDE;
        layer(&l, i)->where = i % 2 || i < 4 ? SW_ON_HOST : SW_ON_DEVICE;
    }
    int trades = 0;
    sw_pack_t m;
    while (sw_policy_spread(l.t, NOW, PERIOD, with_window, NULL, NULL, &m)) {
        apply(&m);
        ck_assert_msg(++trades <= LAYERS, "trades do not end");
    }
    ck_assert_int_eq(resident_count(&l), LAYERS / 2 - 2);
    loop_free(&l);
}
END_TEST

START_TEST(spread_leaves_an_even_loop_alone)
{
    loop_t l;
    loop_init(&l, 0);
    for (int i = 0; i < LAYERS; i += 2)
        layer(&l, i)->where = SW_ON_DEVICE;
    sw_pack_t m;
    ck_assert(!sw_policy_spread(l.t, NOW, PERIOD, with_window, NULL, NULL, &m));
    ck_assert_uint_eq(m.nin + m.nout, 0);
    loop_free(&l);
}
END_TEST

START_TEST(spread_trades_only_a_chunk_of_the_same_size_and_no_less_worth)
{
    loop_t l;
    loop_init(&l, LAYERS / 2);
    sw_pack_t m;
    /* Every streamed layer's allocation asked for half its chunk: worth
     * less resident than a full one. */
    for (int i = LAYERS / 2; i < LAYERS; i++)
        l.a[i]->size = MiB(1);
    ck_assert(!sw_policy_spread(l.t, NOW, PERIOD, with_window, NULL, NULL, &m));
    /* Or of another size. */
    for (int i = LAYERS / 2; i < LAYERS; i++) {
        l.a[i]->size = MiB(4);
        layer(&l, i)->size = MiB(4);
    }
    ck_assert(!sw_policy_spread(l.t, NOW, PERIOD, with_window, NULL, NULL, &m));
    loop_free(&l);
    /* Or the same bytes cut otherwise: two 2 MiB chunks for one of 4. */
    loop_init_cut(&l, LAYERS / 2, 2);
    const uint64_t four[] = {MiB(4)};
    for (int i = 0; i < LAYERS / 2; i++) {
        sw_alloc_t *one = unit_mk_alloc(l.a[i]->va, four, 1);
        one->size = MiB(4);
        one->chunks[0].sched = l.a[i]->chunks[0].sched;
        one->chunks[0].where = SW_ON_DEVICE;
        sw_table_remove(l.t, l.a[i]);
        unit_free_alloc(l.a[i]);
        ck_assert_int_eq(sw_table_insert(l.t, one), 0);
        l.a[i] = one;
    }
    ck_assert(!sw_policy_spread(l.t, NOW, PERIOD, with_window, NULL, NULL, &m));
    loop_free(&l);
}
END_TEST

/* Each rule alone stops every trade: all eight resident layers held by
 * it, or the whole loop. Rules 6 and 9 cut every layer in two chunks,
 * which trade whole where neither rule holds (above). Rule 10: one chunk
 * on the loop (within an eighth of it) whose own loop is not the period
 * exactly, as a training step's weights, read forward and updated, each
 * visited twice a step, show a period of half a step that their loops
 * straddle: spread by it, the trades undid each other every loop. */
START_TEST(spread_leaves_what_it_must_not_move)
{
    for (int rule = 0; rule < 11; rule++) {
        loop_t l;
        loop_init_cut(&l, LAYERS / 2, rule == 6 || rule == 9 ? 2 : 1);
        keep_set_t *keep = unit_keep_none();
        uint64_t window[SW_MAX_DEVICES] = {MiB(4), MiB(4)}, period = PERIOD, now = NOW;
        for (int i = 0; i < LAYERS / 2; i++) {
            sw_chunk_t *c = layer(&l, i);
            switch (rule) {
            case 0: c->fixed = true; break;
            case 1: c->resident = true; break;
            case 2: keep->chunks[keep->n++] = c; break;
            case 3: l.a[i]->dev = 1; break;                  /* another device's */
            case 4: c->loop = PERIOD / 2; break;             /* not this loop */
            case 5: c->visit -= 2 * PERIOD; break;           /* not visited lately */
            case 6: l.a[i]->chunks[1].visit++; break;        /* two tensors, visited apart */
            case 9: l.a[i]->chunks[1].where = SW_ON_HOST; break; /* partly resident */
            }
        }
        if (rule == 7)
            window[0] = 0;
        if (rule == 8)
            period = 0;
        if (rule == 10) /* one streamed layer's own loop a launch off: a ragged loop */
            layer(&l, LAYERS - 1)->loop = PERIOD + 1;
        sw_pack_t m;
        ck_assert_msg(!sw_policy_spread(l.t, now, period, window, unit_keep_listed, keep, &m),
                      "rule %d", rule);
        if (rule == 2)
            ck_assert_int_gt(keep->calls, 0);
        free(keep);
        loop_free(&l);
    }
}
END_TEST

Suite *spread_suite(void)
{
    Suite *s = suite_create("spread");
    TCase *tc = tcase_create("spread");
    tcase_add_test(tc, spread_splits_a_resident_run_at_its_middle);
    tcase_add_test(tc, spread_ends_with_the_resident_layers_spread_evenly);
    tcase_add_test(tc, spread_leaves_an_even_loop_alone);
    tcase_add_test(tc, spread_never_trades_for_nothing);
    tcase_add_test(tc, spread_trades_a_tensor_of_several_chunks_whole);
    tcase_add_test(tc, spread_trades_only_a_chunk_of_the_same_size_and_no_less_worth);
    tcase_add_test(tc, spread_leaves_what_it_must_not_move);
    suite_add_tcase(s, tc);
    return s;
}

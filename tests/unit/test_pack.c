/*
 * Packing (core/policy.c, sw_chunk_data and sw_policy_pack), black-box,
 * from the contract in sw.h: an allocation's last chunk holds only what
 * the allocation asked for of it; a full host chunk on the loop takes the
 * resident places of emptier ones, emptiest first, where it brings
 * SW_PACK_GAIN times their worth; chunks off the loop, fixed, resident,
 * of another device or kept are never sent home; a chunk only a pointer
 * table reaches is worth SW_COST_LINK_RATIO times its data where its
 * device has a window, one a table reaches and arguments name is worth
 * its data like any other; in a round-sized
 * allocation (an allocator's segment), a chunk past its last tensor start
 * counts only what the longest distance between its starts reaches, or
 * with one start the longest tensor the table shows (none: all of it)
 * or how far its one tensor was timed to read, and the densest chunk is brought in first; where no one chunk pays,
 * the densest that fit together take an emptier bigger chunk's room;
 * free room takes the fullest host chunk on the loop that fits it.
 *
 * The layers are the bench's decode-3M: 3.06 MiB (896 x 896 floats), in
 * two 2 MiB chunks, the second holding 1.06 MiB.
 */
#include <stdlib.h>

#include "unit.h"

#define MiB(n) ((uint64_t)(n) << 20)
#define G MiB(2)
#define LAYER (896ull * 896ull * 4ull)
#define PERIOD 48
#define BASE 0x7f0000000000ULL

/* Every device the tests use has a streaming window. */
static const uint64_t with_window[SW_MAX_DEVICES] = {MiB(8), MiB(8)};

typedef struct {
    sw_table_t *t;
    sw_alloc_t *a[8];
    int n;
} tab_t;

/* An allocation of `asked` bytes in chunks of the given sizes, on the
 * loop (used every PERIOD launches), each chunk where wh[i] says. */
static sw_alloc_t *add(tab_t *tb, uint64_t asked, const uint64_t *sizes, uint32_t n,
                       const sw_where_t *wh)
{
    sw_alloc_t *a = unit_mk_alloc(BASE + (uint64_t)tb->n * MiB(64), sizes, n);
    a->size = asked;
    for (uint32_t i = 0; i < n; i++) {
        sw_chunk_t *c = &a->chunks[i];
        c->where = wh[i];
        c->last_use = 10 + (uint64_t)tb->n;
        c->uses = 3;
        c->gap = PERIOD;
    }
    ck_assert_int_eq(sw_table_insert(tb->t, a), 0);
    tb->a[tb->n++] = a;
    return a;
}

/* A 3.06 MiB layer: head and tail, placed as given. */
static sw_alloc_t *layer(tab_t *tb, sw_where_t head, sw_where_t tail)
{
    const uint64_t sizes[] = {G, G};
    const sw_where_t wh[] = {head, tail};
    return add(tb, LAYER, sizes, 2, wh);
}

static void tab_init(tab_t *tb)
{
    tb->t = sw_table_new(G);
    ck_assert_ptr_nonnull(tb->t);
    tb->n = 0;
}

static void tab_free(tab_t *tb)
{
    sw_table_free(tb->t);
    for (int i = 0; i < tb->n; i++)
        unit_free_alloc(tb->a[i]);
}

/* A trade of one chunk in: how many go home (written to out), with *in
 * the one that comes; 0 and NULL: none; 100 + n: n chunks come in. */
static size_t pack_in(tab_t *tb, const uint64_t *window, keep_set_t *k, sw_chunk_t **in,
                      sw_chunk_t **out, size_t max, uint64_t period)
{
    sw_pack_t m;
    *in = NULL;
    if (!sw_policy_pack(tb->t, period, window, k ? unit_keep_listed : NULL, k, &m, max))
        return 0;
    if (m.nin != 1)
        return 100 + m.nin;
    *in = m.in[0];
    for (size_t i = 0; i < m.nout; i++)
        out[i] = m.out[i];
    return m.nout;
}

static size_t pack(tab_t *tb, keep_set_t *k, sw_chunk_t **in, sw_chunk_t **out, size_t max)
{
    return pack_in(tb, with_window, k, in, out, max, PERIOD);
}

/* Makes layer a one only a pointer table reaches: pointed, never named by
 * an argument (no uses, no gap). */
static void unseen(sw_alloc_t *a)
{
    for (uint32_t i = 0; i < a->nchunks; i++) {
        sw_chunk_t *c = &a->chunks[i];
        c->pointed = true;
        c->uses = c->gap = c->last_use = 0;
    }
}

/* That the one trade is host's head for res's tail. */
static void assert_head_for_tail(tab_t *tb, sw_alloc_t *host, sw_alloc_t *res)
{
    sw_chunk_t *in, *out[4];
    ck_assert_uint_eq(pack(tb, NULL, &in, out, 4), 1);
    ck_assert_ptr_eq(in, &host->chunks[0]);
    ck_assert_ptr_eq(out[0], &res->chunks[1]);
}

START_TEST(pack_a_chunk_holds_what_its_allocation_asked_for)
{
    tab_t tb;
    tab_init(&tb);
    sw_alloc_t *l = layer(&tb, SW_ON_DEVICE, SW_ON_DEVICE);
    ck_assert_uint_eq(sw_chunk_data(&l->chunks[0]), G);
    ck_assert_uint_eq(sw_chunk_data(&l->chunks[1]), LAYER - G);
    const uint64_t sizes[] = {MiB(4), MiB(4)};
    const sw_where_t wh[] = {SW_ON_DEVICE, SW_ON_DEVICE};
    sw_alloc_t *w = add(&tb, MiB(8), sizes, 2, wh);
    ck_assert_uint_eq(sw_chunk_data(&w->chunks[1]), MiB(4));
    tab_free(&tb);
}
END_TEST

START_TEST(pack_a_full_host_chunk_takes_the_place_of_a_half_empty_one)
{
    tab_t tb;
    tab_init(&tb);
    sw_alloc_t *res = layer(&tb, SW_ON_DEVICE, SW_ON_DEVICE);
    sw_alloc_t *host = layer(&tb, SW_ON_HOST, SW_ON_HOST);
    assert_head_for_tail(&tb, host, res);
    /* Once traded, nothing is left to gain: the host holds a tail and a
     * head that is no fuller than the resident ones. */
    res->chunks[1].where = SW_ON_HOST;
    host->chunks[0].where = SW_ON_DEVICE;
    sw_chunk_t *in, *out[4];
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 0);
    ck_assert_ptr_null(in);
    tab_free(&tb);
}
END_TEST

START_TEST(pack_trades_only_where_it_gains_enough)
{
    tab_t tb;
    tab_init(&tb);
    /* A tail holding 1.9 MiB of 2: a head brings only 5% more. */
    const uint64_t sizes[] = {G, G};
    const sw_where_t wh[] = {SW_ON_DEVICE, SW_ON_DEVICE};
    add(&tb, G + MiB(19) / 10, sizes, 2, wh);
    layer(&tb, SW_ON_HOST, SW_ON_HOST);
    sw_chunk_t *in, *out[4];
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 0);
    tab_free(&tb);
}
END_TEST

START_TEST(pack_frees_the_room_of_a_bigger_chunk_emptiest_first)
{
    tab_t tb;
    tab_init(&tb);
    /* 5.06 MiB layers in 4 MiB chunks: a 4 MiB head and a 2 MiB tail. */
    const uint64_t sizes[] = {MiB(4), G};
    const sw_where_t dev[] = {SW_ON_DEVICE, SW_ON_DEVICE}, host[] = {SW_ON_HOST, SW_ON_HOST};
    uint64_t asked = 1152ull * 1152ull * 4ull;
    sw_alloc_t *a = add(&tb, asked, sizes, 2, dev);
    sw_alloc_t *b = add(&tb, asked, sizes, 2, dev);
    sw_alloc_t *h = add(&tb, asked, sizes, 2, host);
    sw_chunk_t *in, *out[4];
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 2);
    ck_assert_ptr_eq(in, &h->chunks[0]);
    ck_assert(unit_contains(out, 2, &a->chunks[1]) && unit_contains(out, 2, &b->chunks[1]));
    /* At most max chunks go home: one tail frees too little. */
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 1), 0);
    tab_free(&tb);
}
END_TEST

START_TEST(pack_leaves_what_it_must_not_move)
{
    sw_chunk_t *in, *out[4];
    for (int rule = 0; rule < 7; rule++) {
        tab_t tb;
        tab_init(&tb);
        sw_alloc_t *res = layer(&tb, SW_ON_DEVICE, SW_ON_DEVICE);
        layer(&tb, SW_ON_HOST, SW_ON_HOST);
        sw_chunk_t *tail = &res->chunks[1];
        keep_set_t *k = unit_keep_none();
        switch (rule) {
        case 0: tail->gap = PERIOD / 2; break;     /* off the loop */
        case 1: tail->gap = 0; break;                /* named once: no gap yet */
        case 2: tail->fixed = true; break;
        case 3: tail->resident = true; break;
        case 4: res->dev = 1; break;                /* another device's */
        case 5: k->chunks[k->n++] = tail; break;    /* the launch uses it */
        case 6: tail->slot = 0; break;               /* a remapping slot holds it */
        }
        ck_assert_msg(pack(&tb, k, &in, out, 4) == 0, "rule %d", rule);
        free(k);
        tab_free(&tb);
    }
}
END_TEST

START_TEST(pack_sends_home_a_named_chunk_a_table_also_reaches)
{
    tab_t tb;
    tab_init(&tb);
    /* A pointer table holding every layer (mlp's): named by arguments
     * too, each is the window's to stream, a chunk like any other. */
    sw_alloc_t *res = layer(&tb, SW_ON_DEVICE, SW_ON_DEVICE);
    sw_alloc_t *host = layer(&tb, SW_ON_HOST, SW_ON_HOST);
    for (int i = 0; i < 2; i++)
        res->chunks[i].pointed = host->chunks[i].pointed = true;
    assert_head_for_tail(&tb, host, res);
    tab_free(&tb);
}
END_TEST

/* A chunk only a pointer table reaches (pointed, never named by an
 * argument: no uses, no gap), resident, with `tail` bytes in its second
 * chunk; a full named head on the host, which the window can stream. */
static sw_chunk_t *table_only_tail(tab_t *tb, uint64_t tail, sw_alloc_t **host)
{
    const uint64_t sizes[] = {G, G};
    const sw_where_t wh[] = {SW_ON_DEVICE, SW_ON_DEVICE};
    sw_alloc_t *res = add(tb, G + tail, sizes, 2, wh);
    unseen(res);
    *host = layer(tb, SW_ON_HOST, SW_ON_HOST);
    return &res->chunks[1];
}

START_TEST(pack_weighs_a_table_only_chunk_by_the_link_it_saves)
{
    /* Read in place, a table-only chunk's bytes cross at the zero-copy
     * rate: it is worth SW_COST_LINK_RATIO times its data against a
     * named chunk the window copies. A 1.06 MiB tail is worth less than
     * a 2 MiB head by more than SW_PACK_GAIN: the head takes its place. */
    tab_t tb;
    tab_init(&tb);
    sw_alloc_t *host;
    sw_chunk_t *tail = table_only_tail(&tb, LAYER - G, &host);
    sw_chunk_t *in, *out[4];
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 1);
    ck_assert_ptr_eq(in, &host->chunks[0]);
    ck_assert_ptr_eq(out[0], tail);
    tab_free(&tb);

    /* A 1.5 MiB tail: worth 1.73 MiB of copies, too much for the head's
     * 2 to repay SW_PACK_GAIN; named, the same tail would go. */
    tab_init(&tb);
    tail = table_only_tail(&tb, MiB(3) / 2, &host);
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 0);
    ck_assert_ptr_null(in);
    /* Without a window on that device every host chunk is read in place
     * alike: the head takes the tail's place. */
    const uint64_t none[SW_MAX_DEVICES] = {0};
    ck_assert_uint_eq(pack_in(&tb, none, NULL, &in, out, 4, PERIOD), 1);
    ck_assert_ptr_eq(in, &host->chunks[0]);
    ck_assert_ptr_eq(out[0], tail);
    /* And a table-only head on the host is worth more than the tail too. */
    unseen(host);
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 1);
    ck_assert_ptr_eq(in, &host->chunks[0]);
    ck_assert_ptr_eq(out[0], tail);
    tab_free(&tb);
}
END_TEST

START_TEST(pack_never_sends_home_a_full_table_only_chunk_for_a_named_one)
{
    /* Both full: the named head would be copied at the full rate, the
     * table-only one read in place at less. */
    tab_t tb;
    tab_init(&tb);
    sw_alloc_t *host;
    table_only_tail(&tb, G, &host);
    sw_chunk_t *in, *out[4];
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 0);
    tab_free(&tb);
}
END_TEST

START_TEST(pack_brings_in_no_chunk_past_a_segments_last_tensor)
{
    tab_t tb;
    tab_init(&tb);
    /* An allocator's 8 MiB segment holding one 5.06 MiB layer: its second
     * chunk looks full (the segment asked for all 8 MiB) but holds 1.06
     * MiB of the layer; a resident layer's head and tail together hold
     * 3.06. */
    layer(&tb, SW_ON_DEVICE, SW_ON_DEVICE);
    const uint64_t sizes[] = {MiB(4), MiB(4)};
    const sw_where_t wh[] = {SW_ON_DEVICE, SW_ON_HOST};
    sw_alloc_t *seg = add(&tb, MiB(8), sizes, 2, wh);
    ck_assert_int_eq(sw_segment_note(seg, seg->va), 0);
    sw_chunk_t *in, *out[4];
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 0);
    /* The chunk the tensor starts in counts as far as the longest tensor
     * the table shows reaches, the layer's 3.06 MiB: no fuller than the
     * layer's two chunks. */
    seg->chunks[0].where = SW_ON_HOST;
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 0);
    tab_free(&tb);
}
END_TEST

START_TEST(pack_takes_a_round_allocation_of_one_tensor_for_full)
{
    tab_t tb;
    tab_init(&tb);
    /* 8 MiB layers (a round size, one start each) and nothing that shows
     * a shorter tensor: a layer's second chunk is as full as its first. */
    const uint64_t sizes[] = {MiB(4), MiB(4)};
    const sw_where_t dev[] = {SW_ON_DEVICE, SW_ON_DEVICE}, host[] = {SW_ON_HOST, SW_ON_HOST};
    sw_alloc_t *a = add(&tb, MiB(8), sizes, 2, dev);
    sw_alloc_t *b = add(&tb, MiB(8), sizes, 2, host);
    ck_assert_int_eq(sw_segment_note(a, a->va), 0);
    ck_assert_int_eq(sw_segment_note(b, b->va), 0);
    sw_chunk_t *in, *out[4];
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 0);
    tab_free(&tb);
}
END_TEST

START_TEST(pack_counts_a_round_allocation_past_its_timed_read_span_as_slack)
{
    tab_t tb;
    tab_init(&tb);
    /* 16 MiB layers alone in 20 MiB segments, a 16 and a 4 MiB chunk
     * each, one start each: four resident, a fifth's head on the host.
     * Taken for full, four tails hold as much as the head: no trade. */
    const uint64_t sizes[] = {MiB(16), MiB(4)};
    const sw_where_t dev[] = {SW_ON_DEVICE, SW_ON_DEVICE}, host[] = {SW_ON_HOST, SW_ON_HOST};
    sw_alloc_t *seg[5];
    for (int i = 0; i < 5; i++) {
        seg[i] = add(&tb, MiB(20), sizes, 2, i < 4 ? dev : host);
        ck_assert_int_eq(sw_segment_note(seg[i], seg[i]->va), 0);
    }
    sw_chunk_t *in, *out[4];
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 0);
    /* Each timed to read at most 17 MiB from its start: a tail holds 1
     * MiB sure, and the head takes the four tails' room. */
    for (int i = 0; i < 5; i++)
        seg[i]->read_span = MiB(17);
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 4);
    ck_assert_ptr_eq(in, &seg[4]->chunks[0]);
    for (int i = 0; i < 4; i++)
        ck_assert(unit_contains(out, 4, &seg[i]->chunks[1]));
    /* Only the first timed, the others resident since: its 17 MiB is the
     * longest tensor shown, and a span reaching its allocation's end (the
     * fifth's, read slower than its copy) bounds nothing, so it does not
     * make the untimed tails full. */
    for (int i = 1; i < 4; i++)
        seg[i]->read_span = 0;
    seg[4]->read_span = MiB(20);
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 4);
    ck_assert_ptr_eq(in, &seg[4]->chunks[0]);
    /* A span bounds a read from above: where the table shows a tensor's
     * exact length (a 15 MiB layer of its own, resident), that is the
     * longest, not a span of 19 MiB. */
    const uint64_t whole[] = {MiB(16)};
    const sw_where_t dev1[] = {SW_ON_DEVICE};
    add(&tb, MiB(15), whole, 1, dev1);
    seg[0]->read_span = MiB(19);
    seg[4]->read_span = 0;
    sw_policy_worth_t w = sw_policy_worth_of(tb.t, NULL);
    ck_assert_uint_eq(w.longest, MiB(15));
    ck_assert(sw_policy_worth(&seg[1]->chunks[1], &w) == 0); /* untimed: by the 15 MiB */
    ck_assert(sw_policy_worth(&seg[0]->chunks[1], &w) == 0); /* its own span is longer */
    /* A span says how far one tensor at the allocation's start reads:
     * with a second start learned, the tails count by the spacing. */
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(sw_segment_note(seg[i], seg[i]->va + MiB(10)), 0);
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 0);
    tab_free(&tb);
}
END_TEST

START_TEST(pack_sends_home_first_a_segment_chunk_past_its_last_tensor)
{
    tab_t tb;
    tab_init(&tb);
    /* An 8 MiB segment holding one 5.06 MiB layer, all of it resident:
     * its second chunk, past the only tensor start learned there, may be
     * mostly slack (it holds 1.06 MiB); a full 4 MiB head of a layer of
     * its own is on the host. */
    const uint64_t sizes[] = {MiB(4), MiB(4)};
    const sw_where_t wh[] = {SW_ON_DEVICE, SW_ON_DEVICE};
    sw_alloc_t *seg = add(&tb, MiB(8), sizes, 2, wh);
    ck_assert_int_eq(sw_segment_note(seg, seg->va), 0);
    const uint64_t lsizes[] = {MiB(4), G};
    const sw_where_t host[] = {SW_ON_HOST, SW_ON_HOST};
    sw_alloc_t *h = add(&tb, 1152ull * 1152ull * 4ull, lsizes, 2, host);
    sw_chunk_t *in, *out[4];
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 1);
    ck_assert_ptr_eq(in, &h->chunks[0]);
    ck_assert_ptr_eq(out[0], &seg->chunks[1]);
    /* Two tensors 3 MiB apart: the last one, from 3 MiB, is taken to
     * reach 6 MiB, so 2 of the chunk's 4 MiB are sure: still a trade. */
    ck_assert_int_eq(sw_segment_note(seg, seg->va + MiB(3)), 0);
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 1);
    ck_assert_ptr_eq(out[0], &seg->chunks[1]);
    /* A tensor starting in it: its bytes are data, as full as the head. */
    ck_assert_int_eq(sw_segment_note(seg, seg->va + MiB(5)), 0);
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 0);
    tab_free(&tb);
}
END_TEST

START_TEST(pack_brings_in_the_densest_chunk_first)
{
    tab_t tb;
    tab_init(&tb);
    /* 9 MiB layers: an 8 MiB head and a 2 MiB tail holding 1 MiB. Four
     * tails resident; on the host a head, and a 20 MiB segment of two
     * layers (18 MiB sure) that no trade pays for (its room is 20 MiB,
     * four tails and two heads holding 20). */
    const uint64_t lsizes[] = {MiB(8), G};
    const sw_where_t dev[] = {SW_ON_DEVICE, SW_ON_DEVICE}, host[] = {SW_ON_HOST, SW_ON_HOST};
    sw_alloc_t *tails[4];
    for (int i = 0; i < 4; i++)
        tails[i] = add(&tb, MiB(9), lsizes, 2, dev);
    const uint64_t ssizes[] = {MiB(20)};
    const sw_where_t shost[] = {SW_ON_HOST};
    sw_alloc_t *seg = add(&tb, MiB(20), ssizes, 1, shost);
    ck_assert_int_eq(sw_segment_note(seg, seg->va), 0);
    ck_assert_int_eq(sw_segment_note(seg, seg->va + MiB(9)), 0);
    sw_alloc_t *h = add(&tb, MiB(9), lsizes, 2, host);
    sw_chunk_t *in, *out[4];
    ck_assert_uint_eq(pack(&tb, NULL, &in, out, 4), 4);
    ck_assert_ptr_eq(in, &h->chunks[0]);
    for (int i = 0; i < 4; i++)
        ck_assert(unit_contains(out, 4, &tails[i]->chunks[1]));
    tab_free(&tb);
}
END_TEST

START_TEST(pack_gathers_full_chunks_into_an_emptier_bigger_ones_room)
{
    tab_t tb;
    tab_init(&tb);
    /* An 8 MiB segment in one chunk, holding one 5.06 MiB layer (its
     * length shown by the layers of their own), resident; on the host the
     * 4 MiB heads of two such layers. No head alone is worth the segment's
     * room; together they bring 8 MiB for its 5.06. */
    const uint64_t ssizes[] = {MiB(8)};
    const sw_where_t sdev[] = {SW_ON_DEVICE};
    sw_alloc_t *seg = add(&tb, MiB(8), ssizes, 1, sdev);
    ck_assert_int_eq(sw_segment_note(seg, seg->va), 0);
    const uint64_t lsizes[] = {MiB(4), G};
    const sw_where_t host[] = {SW_ON_HOST, SW_ON_HOST};
    uint64_t asked = 1152ull * 1152ull * 4ull;
    sw_alloc_t *a = add(&tb, asked, lsizes, 2, host);
    sw_alloc_t *b = add(&tb, asked, lsizes, 2, host);
    const uint64_t none[SW_MAX_DEVICES] = {0};
    sw_pack_t m;
    ck_assert(sw_policy_pack(tb.t, PERIOD, none, NULL, NULL, &m, 4));
    ck_assert_uint_eq(m.nout, 1);
    ck_assert_ptr_eq(m.out[0], &seg->chunks[0]);
    ck_assert_uint_eq(m.nin, 2);
    ck_assert(unit_contains(m.in, 2, &a->chunks[0]) && unit_contains(m.in, 2, &b->chunks[0]));
    /* One head alone brings too little, a kept segment stays, and where
     * the device has a window, which may stream the segment, none. */
    ck_assert(!sw_policy_pack(tb.t, PERIOD, none, NULL, NULL, &m, 1));
    keep_set_t *k = unit_keep_none();
    k->chunks[k->n++] = &seg->chunks[0];
    ck_assert(!sw_policy_pack(tb.t, PERIOD, none, unit_keep_listed, k, &m, 4));
    free(k);
    ck_assert(!sw_policy_pack(tb.t, PERIOD, with_window, NULL, NULL, &m, 4));
    tab_free(&tb);
}
END_TEST

START_TEST(pack_needs_a_loop)
{
    tab_t tb;
    tab_init(&tb);
    layer(&tb, SW_ON_DEVICE, SW_ON_DEVICE);
    layer(&tb, SW_ON_HOST, SW_ON_HOST);
    sw_chunk_t *in, *out[4];
    ck_assert_uint_eq(pack_in(&tb, with_window, NULL, &in, out, 4, 0), 0);
    ck_assert_ptr_null(in);
    tab_free(&tb);
}
END_TEST

/* Free room takes the fullest host chunk on the loop that fits it, no
 * chunk going home; per device, and none without a loop. */
START_TEST(pack_fills_free_room_with_the_fullest_chunk_that_fits)
{
    tab_t tb;
    tab_init(&tb);
    sw_alloc_t *a = layer(&tb, SW_ON_HOST, SW_ON_HOST);
    const uint64_t sizes[] = {MiB(4)};
    const sw_where_t wh[] = {SW_ON_HOST};
    sw_alloc_t *big = add(&tb, MiB(4), sizes, 1, wh);
    uint64_t room[SW_MAX_DEVICES] = {0};
    ck_assert_ptr_null(sw_policy_into_room(tb.t, PERIOD, with_window, room));
    room[0] = G;
    ck_assert_ptr_eq(sw_policy_into_room(tb.t, PERIOD, with_window, room), &a->chunks[0]);
    room[0] = MiB(4);
    ck_assert_ptr_eq(sw_policy_into_room(tb.t, PERIOD, with_window, room), &big->chunks[0]);
    ck_assert_ptr_null(sw_policy_into_room(tb.t, 0, with_window, room));
    /* not one off the loop, fixed, in a window slot or another device's */
    big->chunks[0].gap = PERIOD / 2;
    ck_assert_ptr_eq(sw_policy_into_room(tb.t, PERIOD, with_window, room), &a->chunks[0]);
    big->chunks[0].gap = PERIOD;
    big->chunks[0].fixed = true;
    ck_assert_ptr_eq(sw_policy_into_room(tb.t, PERIOD, with_window, room), &a->chunks[0]);
    big->chunks[0].fixed = false;
    big->chunks[0].slot = 0;
    ck_assert_ptr_eq(sw_policy_into_room(tb.t, PERIOD, with_window, room), &a->chunks[0]);
    big->chunks[0].slot = -1;
    big->dev = 1;
    ck_assert_ptr_eq(sw_policy_into_room(tb.t, PERIOD, with_window, room), &a->chunks[0]);
    room[1] = MiB(4);
    ck_assert_ptr_eq(sw_policy_into_room(tb.t, PERIOD, with_window, room), &big->chunks[0]);
    /* resident chunks are not brought in */
    big->chunks[0].where = SW_ON_DEVICE;
    a->chunks[0].where = a->chunks[1].where = SW_ON_DEVICE;
    ck_assert_ptr_null(sw_policy_into_room(tb.t, PERIOD, with_window, room));
    tab_free(&tb);
}
END_TEST

/* Free room weighs chunks as packing does: a table-only chunk is worth
 * SW_COST_LINK_RATIO times its data where its device has a window, and
 * only its data where none does (a replay's trades). */
START_TEST(pack_fills_free_room_by_worth)
{
    tab_t tb;
    tab_init(&tb);
    const uint64_t one[] = {G};
    const sw_where_t wh[] = {SW_ON_HOST};
    sw_alloc_t *table = add(&tb, MiB(3) / 2, one, 1, wh);  /* 1.5 MiB, worth 1.725 */
    sw_alloc_t *named = add(&tb, MiB(8) / 5, one, 1, wh);  /* 1.6 MiB */
    unseen(table);
    uint64_t room[SW_MAX_DEVICES] = {G};
    ck_assert_ptr_eq(sw_policy_into_room(tb.t, PERIOD, with_window, room), &table->chunks[0]);
    const uint64_t none[SW_MAX_DEVICES] = {0};
    ck_assert_ptr_eq(sw_policy_into_room(tb.t, PERIOD, none, room), &named->chunks[0]);
    tab_free(&tb);
}
END_TEST

/* Adoption: a chunk only a pointer table reaches takes the resident place
 * of one the window could stream, used furthest ahead; it waits where
 * none is free at this launch. */
START_TEST(pack_adopts_a_table_only_chunk_for_a_streamable_one)
{
    tab_t tb;
    tab_init(&tb);
    sw_alloc_t *later = layer(&tb, SW_ON_DEVICE, SW_ON_DEVICE);
    sw_alloc_t *sooner = layer(&tb, SW_ON_DEVICE, SW_ON_DEVICE);
    sw_alloc_t *host = layer(&tb, SW_ON_HOST, SW_ON_HOST);
    unseen(host);
    later->chunks[0].last_use = later->chunks[1].last_use = 40;   /* next use 88 */
    sooner->chunks[0].last_use = sooner->chunks[1].last_use = 20; /* next use 68 */
    uint64_t window[SW_MAX_DEVICES] = {MiB(8)};
    sw_chunk_t *in, *out[1];
    ck_assert_uint_eq(sw_policy_adopt(tb.t, 50, window, &in, out), 1);
    ck_assert_ptr_eq(in, &host->chunks[0]);
    ck_assert(out[0] == &later->chunks[0] || out[0] == &later->chunks[1]);
    /* not for a victim holding more data: a head for a table-only tail */
    host->chunks[0].where = SW_ON_DEVICE;
    later->chunks[1].where = sooner->chunks[1].where = SW_ON_HOST;
    ck_assert_uint_eq(sw_policy_adopt(tb.t, 50, window, &in, out), 0);
    ck_assert_ptr_null(in);
    host->chunks[0].where = SW_ON_HOST;
    later->chunks[1].where = sooner->chunks[1].where = SW_ON_DEVICE;
    /* none the window could stream: too big for it, used now, no gap, or
     * another device's */
    for (int rule = 0; rule < 4; rule++) {
        uint64_t w[SW_MAX_DEVICES] = {rule == 0 ? G / 2 : MiB(8)};
        for (int k = 0; k < 2; k++) {
            sw_alloc_t *a = k ? sooner : later;
            for (uint32_t i = 0; i < 2; i++) {
                a->chunks[i].last_use = rule == 1 ? 50 : 40;
                a->chunks[i].gap = rule == 2 ? 0 : PERIOD;
            }
            a->dev = rule == 3 ? 1 : 0;
        }
        ck_assert_msg(sw_policy_adopt(tb.t, 50, w, &in, out) == 0, "rule %d", rule);
        ck_assert_ptr_eq(in, &host->chunks[0]); /* it waits */
    }
    /* nothing to adopt */
    host->chunks[0].where = host->chunks[1].where = SW_ON_DEVICE;
    ck_assert_uint_eq(sw_policy_adopt(tb.t, 50, window, &in, out), 0);
    ck_assert_ptr_null(in);
    tab_free(&tb);
}
END_TEST

Suite *pack_suite(void)
{
    Suite *s = suite_create("pack");
    TCase *tc = tcase_create("pack");
    tcase_add_test(tc, pack_a_chunk_holds_what_its_allocation_asked_for);
    tcase_add_test(tc, pack_a_full_host_chunk_takes_the_place_of_a_half_empty_one);
    tcase_add_test(tc, pack_trades_only_where_it_gains_enough);
    tcase_add_test(tc, pack_frees_the_room_of_a_bigger_chunk_emptiest_first);
    tcase_add_test(tc, pack_leaves_what_it_must_not_move);
    tcase_add_test(tc, pack_sends_home_a_named_chunk_a_table_also_reaches);
    tcase_add_test(tc, pack_weighs_a_table_only_chunk_by_the_link_it_saves);
    tcase_add_test(tc, pack_never_sends_home_a_full_table_only_chunk_for_a_named_one);
    tcase_add_test(tc, pack_brings_in_no_chunk_past_a_segments_last_tensor);
    tcase_add_test(tc, pack_takes_a_round_allocation_of_one_tensor_for_full);
    tcase_add_test(tc, pack_counts_a_round_allocation_past_its_timed_read_span_as_slack);
    tcase_add_test(tc, pack_sends_home_first_a_segment_chunk_past_its_last_tensor);
    tcase_add_test(tc, pack_brings_in_the_densest_chunk_first);
    tcase_add_test(tc, pack_gathers_full_chunks_into_an_emptier_bigger_ones_room);
    tcase_add_test(tc, pack_needs_a_loop);
    tcase_add_test(tc, pack_fills_free_room_with_the_fullest_chunk_that_fits);
    tcase_add_test(tc, pack_fills_free_room_by_worth);
    tcase_add_test(tc, pack_adopts_a_table_only_chunk_for_a_streamable_one);
    suite_add_tcase(s, tc);
    return s;
}

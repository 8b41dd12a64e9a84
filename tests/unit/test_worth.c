/*
 * A streaming window's worth (core/worth.c), black-box, from the contract
 * in sw.h: kept while it serves something every loop, copies enough in
 * one to repay its room and finds a loop to copy ahead of, and given back
 * at once where what it may copy in a loop cannot repay it; judged only in
 * a loop it was counted in, and not while a graph holds its copies; a
 * capture's window keeps one range only where reads in place are slower; and
 * one whose served launches take little time beside a copy is made one
 * copy, or one and a lead where each launch is shorter than a part of one.
 */
#include <math.h>

#include "unit.h"

#define MiB(n) ((uint64_t)(n) << 20)
#define PERIOD 100

static double five(void *arg)
{
    (void)arg;
    return 5.0;
}

/* A question at launch now, in the agreed loop period (0 none), about a
 * 16 MiB window last serving at served. */
static sw_worth_ask_t ask(uint64_t now, uint64_t period, uint64_t served)
{
    return (sw_worth_ask_t){.now = now, .period = period, .guess = PERIOD, .size = MiB(16),
                            .align = 64 << 10, .served_at = served, .repaid = five};
}

static sw_window_worth_t judge_at(sw_worth_t *j, uint64_t now, uint64_t served)
{
    sw_worth_ask_t q = ask(now, PERIOD, served);
    return sw_worth_judge(j, &q);
}

START_TEST(worth_kept_while_it_repays_its_room)
{
    sw_worth_t j = {0};
    ck_assert_int_eq(judge_at(&j, 200, 190), SW_WINDOW_WORTH); /* the period is new */
    ck_assert_int_eq(judge_at(&j, 210, 205), SW_WINDOW_WORTH); /* the loop's count begins */
    for (int i = 0; i < 12; i++)
        sw_worth_copied(&j, MiB(8), true, true); /* 96 MiB: six times 16 */
    ck_assert_int_eq(judge_at(&j, 310, 305), SW_WINDOW_WORTH);
    /* the next loop copies four times its size: not enough */
    for (int i = 0; i < 8; i++)
        sw_worth_copied(&j, MiB(8), true, true);
    ck_assert_int_eq(judge_at(&j, 350, 345), SW_WINDOW_WORTH); /* within the loop: as before */
    ck_assert_int_eq(judge_at(&j, 410, 405), SW_WINDOW_UNREPAID);
    /* what the log says of it: 64 MiB copied a loop, against five times 16 */
    ck_assert_uint_eq(j.per_loop, MiB(64));
    ck_assert_uint_eq(j.bar, MiB(80));
    ck_assert_int_eq(judge_at(&j, 420, 415), SW_WINDOW_UNREPAID); /* until the next loop's end */
}
END_TEST

/* The most the window may copy in a loop, as the mechanism would say it,
 * and how often it was asked. */
static uint64_t copyable_said;
static int copyable_asked;

static uint64_t copyable(void *arg, uint64_t now, uint64_t period)
{
    (void)arg, (void)now, (void)period;
    copyable_asked++;
    return copyable_said;
}

static sw_window_worth_t judge_copyable(sw_worth_t *j, uint64_t now, uint64_t may)
{
    sw_worth_ask_t q = ask(now, PERIOD, now - 1);
    q.copyable = copyable;
    copyable_said = may;
    return sw_worth_judge(j, &q);
}

START_TEST(worth_unrepaid_at_once_where_what_it_may_copy_cannot_repay_it)
{
    sw_worth_t j = {0};
    copyable_asked = 0;
    /* Five times 16 MiB a loop repays it; where the mechanism knows no
     * bound (UINT64_MAX), it is kept while the loop's count runs. */
    ck_assert_int_eq(judge_copyable(&j, 200, MiB(80)), SW_WINDOW_WORTH); /* the period is new */
    ck_assert_int_eq(judge_copyable(&j, 210, UINT64_MAX), SW_WINDOW_WORTH);
    ck_assert_int_eq(copyable_asked, 1);
    /* Asked again only a quarter loop later; 80 MiB is enough. */
    ck_assert_int_eq(judge_copyable(&j, 220, MiB(40)), SW_WINDOW_WORTH);
    ck_assert_int_eq(copyable_asked, 1);
    ck_assert_int_eq(judge_copyable(&j, 236, MiB(80)), SW_WINDOW_WORTH);
    ck_assert_int_eq(copyable_asked, 2);
    /* Ranges found faster read in place leave 60 MiB: given back now,
     * long before the loop counted from 210 ends. */
    ck_assert_int_eq(judge_copyable(&j, 262, MiB(60)), SW_WINDOW_UNREPAID);
    ck_assert_int_eq(copyable_asked, 3);
    ck_assert(j.hopeless);
    ck_assert_uint_eq(j.per_loop, MiB(60));
    ck_assert_uint_eq(j.bar, MiB(80));
    /* Judged so in a new period, the clocks start again. */
    sw_worth_ask_t q = ask(400, 2 * PERIOD, 399);
    q.copyable = copyable;
    ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_WORTH);
}
END_TEST

START_TEST(worth_oversized_where_two_of_its_longest_copies_would_do)
{
    sw_worth_t j = {0};
    judge_at(&j, 200, 190);
    judge_at(&j, 210, 205);
    for (int i = 0; i < 24; i++)
        sw_worth_copied(&j, MiB(3), true, true); /* 72 MiB: twelve times two 3 MiB slots */
    ck_assert_int_eq(judge_at(&j, 310, 305), SW_WINDOW_OVERSIZED);
    ck_assert_uint_eq(j.fits, MiB(3));
    ck_assert_uint_eq(j.room, MiB(6)); /* no budget given: nothing to trim against */
    /* a copy half the window: two take all of it */
    for (int i = 0; i < 12; i++)
        sw_worth_copied(&j, MiB(8), true, true);
    ck_assert_int_eq(judge_at(&j, 410, 405), SW_WINDOW_WORTH);
    ck_assert_uint_eq(j.fits, 0);
}
END_TEST

/* What the launches served in the last loop took, over one copy of the
 * longest range they read (8 MiB, in chunks of grain_said: 0 unknown),
 * and how often it was asked. */
static double share_said, most_said;
static uint64_t longest_said = MiB(8), grain_said;
static int served_asked;

static sw_served_t served(void *arg, uint64_t now, uint64_t period)
{
    (void)arg, (void)now, (void)period;
    served_asked++;
    return (sw_served_t){.share = share_said, .most = most_said, .longest = longest_said,
                         .grain = grain_said};
}

static sw_window_worth_t judge_served(sw_worth_t *j, uint64_t now, double share)
{
    sw_worth_ask_t q = ask(now, PERIOD, now - 1);
    q.served = served;
    share_said = share;
    return sw_worth_judge(j, &q);
}

/* Twelve 8 MiB copies: 96 MiB, on pace to repay a 16 MiB window. */
static void copy_twelve(sw_worth_t *j)
{
    for (int i = 0; i < 12; i++)
        sw_worth_copied(j, MiB(8), true, true);
}

/* A window of two copies of `copy` bytes beside a 34 MiB budget in 2 MiB
 * granules, its launches 0.8 of a copy a loop: judged (*q) over a whole
 * loop copying 24 of them. */
static sw_window_worth_t judge_beside_34(sw_worth_t *j, sw_worth_ask_t *q, uint64_t copy)
{
    *q = ask(200, PERIOD, 190);
    q->served = served;
    share_said = 0.8;
    q->size = 2 * copy;
    q->budget = MiB(34);
    q->granule = MiB(2);
    sw_worth_judge(j, q);
    q->now = 210, q->served_at = 205;
    sw_worth_judge(j, q);
    for (int i = 0; i < 24; i++)
        sw_worth_copied(j, copy, true, true);
    q->now = 310, q->served_at = 305;
    return sw_worth_judge(j, q);
}

/* A window of two 3.0625 MiB copies beside a 34 MiB budget leaves 13
 * granules of 2 MiB and 1.875 MiB that residency cannot use: once a loop
 * is judged, it is oversized, to be made two copies trimmed (6 MiB). */
START_TEST(worth_oversized_where_two_copies_trimmed_to_whole_granules_would_do)
{
    const uint64_t copy = MiB(3) + MiB(1) / 16;
    sw_worth_t j = {0};
    sw_worth_ask_t q;
    most_said = 0.05; /* each layer's launches short beside its copy */
    ck_assert_int_eq(judge_beside_34(&j, &q, copy), SW_WINDOW_OVERSIZED);
    ck_assert_uint_eq(j.fits, copy);
    ck_assert_uint_eq(j.copies, 2);
    ck_assert_uint_eq(j.room, MiB(6));
    /* so made, or with whole granules left already, it is not again */
    q.size = MiB(6);
    q.now = 410, q.served_at = 405;
    for (int i = 0; i < 24; i++)
        sw_worth_copied(&j, copy, true, true);
    ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_WORTH);
    ck_assert_uint_eq(j.fits, 0);
    ck_assert_uint_eq(j.room, 0);
    q.size = 2 * copy;
    q.budget = MiB(34) + MiB(1) / 8 * 7;
    q.now = 510, q.served_at = 505;
    for (int i = 0; i < 24; i++)
        sw_worth_copied(&j, copy, true, true);
    ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_WORTH);
    ck_assert_uint_eq(j.fits, 0);
    /* launches as long as a copy (a prefill's GEMM), or not timed: each
     * copy's last part would wait for them, so no trim */
    q.budget = MiB(34);
    for (int k = 0; k < 2; k++) {
        most_said = k ? HUGE_VAL : 0.95;
        q.now += 100, q.served_at = q.now - 5;
        for (int i = 0; i < 24; i++)
            sw_worth_copied(&j, copy, true, true);
        ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_WORTH);
        ck_assert_uint_eq(j.fits, 0);
    }
}
END_TEST

START_TEST(worth_one_copy_where_the_served_launches_are_short_beside_it)
{
    sw_worth_t j = {0};
    served_asked = 0;
    ck_assert_int_eq(judge_served(&j, 200, 0.5), SW_WINDOW_WORTH); /* the period is new */
    ck_assert_int_eq(judge_served(&j, 250, 0.5), SW_WINDOW_WORTH); /* not a whole loop yet */
    ck_assert_int_eq(served_asked, 0);
    copy_twelve(&j);
    ck_assert_int_eq(judge_served(&j, 300, 0.5), SW_WINDOW_OVERSIZED);
    ck_assert_uint_eq(j.fits, MiB(8));
    ck_assert_uint_eq(j.copies, 1);
    ck_assert_uint_eq(j.room, MiB(8));
    ck_assert(j.served_share == 0.5);

    /* at SW_WORTH_ONE_COPY or more, or untimed (a large number): two */
    sw_worth_t k = {0};
    served_asked = 0;
    judge_served(&k, 200, SW_WORTH_ONE_COPY);
    judge_served(&k, 250, SW_WORTH_ONE_COPY);
    copy_twelve(&k);
    served_asked = 0;
    ck_assert_int_eq(judge_served(&k, 300, SW_WORTH_ONE_COPY), SW_WINDOW_WORTH);
    ck_assert_int_eq(judge_served(&k, 310, 0.1), SW_WINDOW_WORTH); /* asked a quarter loop apart */
    ck_assert_int_eq(served_asked, 1);
    ck_assert_int_eq(judge_served(&k, 325, 1e300), SW_WINDOW_WORTH);
    ck_assert_int_eq(served_asked, 2);
    ck_assert_int_eq(judge_served(&k, 350, 0.1), SW_WINDOW_OVERSIZED);

    /* a range as big as the window: one copy is all it has */
    sw_worth_t l = {0};
    longest_said = MiB(16);
    judge_served(&l, 200, 0.1);
    judge_served(&l, 250, 0.1);
    copy_twelve(&l);
    ck_assert_int_eq(judge_served(&l, 300, 0.1), SW_WINDOW_WORTH);
    longest_said = MiB(8);

    /* not on pace to repay its room: not made smaller (its bar would fall) */
    sw_worth_t m = {0};
    judge_served(&m, 200, 0.1);
    judge_served(&m, 250, 0.1);
    sw_worth_copied(&m, MiB(8), true, true);
    ck_assert_int_eq(judge_served(&m, 300, 0.1), SW_WINDOW_WORTH);
}
END_TEST

/* A window of two 8 MiB copies (16 MiB) whose launches, with their ways
 * home, take w of their copies' time in a loop (share) and each range's
 * visit m of its own copy's (most), the ranges in chunks of g: judged
 * over a whole loop on pace to repay it. */
static sw_window_worth_t judge_led(sw_worth_t *j, double w, double m, uint64_t g, uint64_t size)
{
    *j = (sw_worth_t){0};
    most_said = m, grain_said = g;
    sw_worth_ask_t q = ask(200, PERIOD, 199);
    q.served = served;
    q.size = size;
    share_said = w;
    sw_worth_judge(j, &q);
    q.now = 250, q.served_at = 249;
    sw_worth_judge(j, &q);
    copy_twelve(j);
    q.now = 300, q.served_at = 299;
    sw_window_worth_t why = sw_worth_judge(j, &q);
    most_said = 0, grain_said = 0;
    return why;
}

/* Launches too long beside a copy for one copy's room, but each shorter
 * than a part of it: one copy and a lead of whole chunks, the lead
 * SW_WORTH_LEAD_MARGIN times the longest visit's part of a copy and
 * spillway's work after it (SW_SERIAL_BYTES). */
START_TEST(worth_one_copy_and_a_lead_where_each_launch_is_shorter_than_a_part_of_a_copy)
{
    sw_worth_t j;
    /* a prefill's GEMMs: 2 copies' time a loop, each 0.3 of its copy */
    ck_assert_int_eq(judge_led(&j, 2.0, 0.3, MiB(1), MiB(16)), SW_WINDOW_OVERSIZED);
    ck_assert_uint_eq(j.copies, 1);
    ck_assert_uint_eq(j.fits, MiB(8));
    /* (0.3 x 8 MiB + SW_SERIAL_BYTES) x 1.25: 4.3 MiB, in whole MiB chunks */
    ck_assert_uint_eq(j.lead, MiB(5));
    ck_assert_uint_eq(j.room, MiB(13));
    ck_assert(j.served_most == 0.3 && j.served_share == 2.0);
    /* rounded up to whole chunks: 5.3 MiB is six */
    ck_assert_int_eq(judge_led(&j, 2.0, 0.4, MiB(1), MiB(16)), SW_WINDOW_OVERSIZED);
    ck_assert_uint_eq(j.lead, MiB(6));
    /* one chunk a range: no chunk of room saved, two copies stay */
    ck_assert_int_eq(judge_led(&j, 2.0, 0.3, MiB(8), MiB(16)), SW_WINDOW_WORTH);
    ck_assert_uint_eq(j.fits, 0);
    /* chunks unknown, a launch as long as its copy, or untimed: two */
    ck_assert_int_eq(judge_led(&j, 2.0, 0.3, 0, MiB(16)), SW_WINDOW_WORTH);
    ck_assert_int_eq(judge_led(&j, 2.0, 0.8, MiB(1), MiB(16)), SW_WINDOW_WORTH);
    ck_assert_int_eq(judge_led(&j, HUGE_VAL, HUGE_VAL, MiB(1), MiB(16)), SW_WINDOW_WORTH);
    /* a lead that leaves less than a chunk of the second copy: none */
    ck_assert_int_eq(judge_led(&j, 2.0, 0.7, MiB(2), MiB(16)), SW_WINDOW_WORTH);
    /* made so already: kept */
    ck_assert_int_eq(judge_led(&j, 2.0, 0.3, MiB(1), MiB(13)), SW_WINDOW_WORTH);
}
END_TEST

/* The loop judged that would trim two copies to whole granules makes
 * one copy and a lead instead, where that is smaller: 3.0625 MiB ranges
 * in 1 MiB chunks, launches 0.05 of a copy, a lead of 2 MiB. */
START_TEST(worth_a_lead_instead_of_a_trim_where_smaller)
{
    const uint64_t copy = MiB(3) + MiB(1) / 16;
    sw_worth_t j = {0};
    sw_worth_ask_t q;
    most_said = 0.05, grain_said = MiB(1);
    sw_window_worth_t why = judge_beside_34(&j, &q, copy);
    most_said = 0, grain_said = 0;
    ck_assert_int_eq(why, SW_WINDOW_OVERSIZED);
    ck_assert_uint_eq(j.copies, 1);
    ck_assert_uint_eq(j.lead, MiB(2));
    ck_assert_uint_eq(j.room, copy + MiB(2));
}
END_TEST

/* Where one copy would do too, the cheaper: launches of 0.5 of a copy a
 * loop cost more than a lead of a quarter of one; launches of 0.05 less. */
START_TEST(worth_the_cheaper_of_one_copy_and_one_and_a_lead)
{
    sw_worth_t j;
    ck_assert_int_eq(judge_led(&j, 0.5, 0.04, MiB(1), MiB(16)), SW_WINDOW_OVERSIZED);
    ck_assert_uint_eq(j.lead, MiB(2));
    ck_assert_uint_eq(j.room, MiB(10));
    ck_assert_int_eq(judge_led(&j, 0.05, 0.01, MiB(1), MiB(16)), SW_WINDOW_OVERSIZED);
    ck_assert_uint_eq(j.lead, 0);
    ck_assert_uint_eq(j.room, MiB(8));
    ck_assert_uint_eq(j.copies, 1);
}
END_TEST

START_TEST(worth_idle_after_a_loop_serving_nothing)
{
    sw_worth_t j = {0};
    judge_at(&j, 200, 0);
    ck_assert_int_eq(judge_at(&j, 290, 0), SW_WINDOW_WORTH); /* counted from the period's start */
    ck_assert_int_eq(judge_at(&j, 301, 0), SW_WINDOW_IDLE);
    ck_assert_int_eq(judge_at(&j, 301, 250), SW_WINDOW_WORTH);
    /* a new period starts the clocks again */
    sw_worth_ask_t q = ask(600, 2 * PERIOD, 250);
    ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_WORTH);
    q.now = 750;
    ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_WORTH);
    q.now = 801;
    ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_IDLE);
}
END_TEST

START_TEST(worth_not_judged_while_a_graph_holds_copies)
{
    sw_worth_t j = {0};
    judge_at(&j, 200, 190);
    sw_worth_ask_t q = ask(210, PERIOD, 205);
    q.graphs = true;
    sw_worth_judge(&j, &q);
    q.now = 400;
    q.served_at = 395;
    ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_WORTH); /* nothing copied, not unrepaid */
    /* nor idle: its copies serve the replays, which it never sees */
    q.now = 400 + 2 * SW_WINDOW_IDLE_LOOPS * PERIOD;
    ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_WORTH);
    q.graphs = false;
    ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_IDLE);
}
END_TEST

/* Late copies of half the window's size count toward its room in the
 * first loop judged (the order of ranges is still being learned), and
 * not after: a window whose copies all wait repays nothing. */
START_TEST(worth_counts_late_half_size_copies_in_the_first_loop_only)
{
    sw_worth_t j = {0};
    ck_assert_int_eq(judge_at(&j, 200, 190), SW_WINDOW_WORTH); /* the period is new */
    ck_assert_int_eq(judge_at(&j, 210, 205), SW_WINDOW_WORTH); /* the loop's count begins */
    for (int i = 0; i < 12; i++)
        sw_worth_copied(&j, MiB(8), false, true); /* late, but could be made ahead */
    ck_assert_int_eq(judge_at(&j, 310, 305), SW_WINDOW_WORTH);
    for (int i = 0; i < 12; i++)
        sw_worth_copied(&j, MiB(8), false, true);
    ck_assert_int_eq(judge_at(&j, 410, 405), SW_WINDOW_UNREPAID);
}
END_TEST

/* Chunks moved under the loop being counted (spreading's trades): its
 * count starts again at the next question, and late copies count in the
 * loop after, as in a new period. Without it the loop of the moves,
 * short of the copies of ranges just sent home, gave the window back. */
START_TEST(worth_counts_anew_after_chunks_move)
{
    sw_worth_t j = {0};
    judge_at(&j, 200, 190);
    judge_at(&j, 210, 205);
    for (int i = 0; i < 12; i++)
        sw_worth_copied(&j, MiB(8), true, true);
    ck_assert_int_eq(judge_at(&j, 310, 305), SW_WINDOW_WORTH); /* judged: late copies no longer count */
    for (int i = 0; i < 4; i++)
        sw_worth_copied(&j, MiB(8), true, true);
    sw_worth_moved(&j);
    ck_assert_int_eq(judge_at(&j, 360, 355), SW_WINDOW_WORTH); /* the count begins again */
    for (int i = 0; i < 12; i++)
        sw_worth_copied(&j, MiB(8), false, true);
    ck_assert_int_eq(judge_at(&j, 410, 405), SW_WINDOW_WORTH); /* not yet a loop */
    ck_assert_int_eq(judge_at(&j, 460, 455), SW_WINDOW_WORTH); /* 96 MiB counted, late ones too */
    for (int i = 0; i < 12; i++)
        sw_worth_copied(&j, MiB(8), false, true);
    ck_assert_int_eq(judge_at(&j, 560, 555), SW_WINDOW_UNREPAID); /* judged since: late ones do not */
}
END_TEST

/* On pace: what the last loop judged said, or with none judged yet, what
 * half a loop or more counted so far says; nothing before that, or in
 * another period. */
START_TEST(worth_on_pace_from_half_a_loop_counted)
{
    sw_worth_t j = {0};
    sw_worth_ask_t q = ask(200, PERIOD, 190);
    ck_assert(!sw_worth_on_pace(&j, &q)); /* no period judged in yet */
    judge_at(&j, 200, 190);
    judge_at(&j, 210, 205); /* the count begins */
    for (int i = 0; i < 5; i++)
        sw_worth_copied(&j, MiB(8), true, true);
    q = ask(250, PERIOD, 245);
    ck_assert(!sw_worth_on_pace(&j, &q)); /* 40 launches: under half a loop */
    q = ask(260, PERIOD, 255);
    ck_assert(sw_worth_on_pace(&j, &q)); /* 40 MiB in half a loop: 80 a loop */
    q = ask(280, PERIOD, 275);
    ck_assert(!sw_worth_on_pace(&j, &q)); /* 40 MiB in 70 launches: 57 a loop */
    q = ask(280, PERIOD / 2, 275);
    ck_assert(!sw_worth_on_pace(&j, &q)); /* another period */
    for (int i = 0; i < 7; i++)
        sw_worth_copied(&j, MiB(8), true, true);
    ck_assert_int_eq(judge_at(&j, 310, 305), SW_WINDOW_WORTH);
    q = ask(320, PERIOD, 315);
    ck_assert(sw_worth_on_pace(&j, &q)); /* the loop judged repaid */
    ck_assert_int_eq(judge_at(&j, 410, 405), SW_WINDOW_UNREPAID);
    q = ask(420, PERIOD, 415);
    ck_assert(!sw_worth_on_pace(&j, &q)); /* the loop judged did not */
}
END_TEST

static double below_five(void *arg)
{
    (void)arg;
    return 0.6; /* sw_cost_repaid's answer where ranges re-read in place */
}

/* A capture's window keeps one range's room only where its ranges were
 * timed slower read in place than copied; with no such evidence, none. */
START_TEST(worth_capture_keeps_one_range_only_where_reads_in_place_are_slower)
{
    sw_worth_ask_t q = ask(200, PERIOD, 190);
    ck_assert_uint_eq(sw_worth_capture(&q, MiB(4)), 0);
    q.repaid = below_five;
    ck_assert_uint_eq(sw_worth_capture(&q, MiB(4)), MiB(4));
}
END_TEST

START_TEST(worth_loopless_after_four_guessed_loops)
{
    sw_worth_t j = {0};
    sw_worth_ask_t q = ask(100, 0, 0);
    ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_WORTH);
    q.now = 100 + SW_WINDOW_NO_LOOP_PERIODS * PERIOD;
    ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_WORTH);
    q.now++;
    ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_LOOPLESS);
    q.graphs = true;
    ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_WORTH);
    q.graphs = false;
    q.guess = 0;
    ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_WORTH);
    /* an agreed loop restarts the count */
    q = ask(1000, PERIOD, 990);
    sw_worth_judge(&j, &q);
    q = ask(1001, 0, 990);
    ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_WORTH);
    q.now = 1001 + SW_WINDOW_NO_LOOP_PERIODS * PERIOD + 1;
    ck_assert_int_eq(sw_worth_judge(&j, &q), SW_WINDOW_LOOPLESS);
}
END_TEST

Suite *worth_suite(void)
{
    Suite *s = suite_create("worth");
    TCase *tc = tcase_create("worth");
    tcase_add_test(tc, worth_kept_while_it_repays_its_room);
    tcase_add_test(tc, worth_unrepaid_at_once_where_what_it_may_copy_cannot_repay_it);
    tcase_add_test(tc, worth_oversized_where_two_of_its_longest_copies_would_do);
    tcase_add_test(tc, worth_oversized_where_two_copies_trimmed_to_whole_granules_would_do);
    tcase_add_test(tc, worth_one_copy_where_the_served_launches_are_short_beside_it);
    tcase_add_test(tc, worth_one_copy_and_a_lead_where_each_launch_is_shorter_than_a_part_of_a_copy);
    tcase_add_test(tc, worth_the_cheaper_of_one_copy_and_one_and_a_lead);
    tcase_add_test(tc, worth_a_lead_instead_of_a_trim_where_smaller);
    tcase_add_test(tc, worth_idle_after_a_loop_serving_nothing);
    tcase_add_test(tc, worth_not_judged_while_a_graph_holds_copies);
    tcase_add_test(tc, worth_loopless_after_four_guessed_loops);
    tcase_add_test(tc, worth_counts_late_half_size_copies_in_the_first_loop_only);
    tcase_add_test(tc, worth_counts_anew_after_chunks_move);
    tcase_add_test(tc, worth_on_pace_from_half_a_loop_counted);
    tcase_add_test(tc, worth_capture_keeps_one_range_only_where_reads_in_place_are_slower);
    suite_add_tcase(s, tc);
    return s;
}

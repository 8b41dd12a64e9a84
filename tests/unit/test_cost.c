/*
 * A range read in place against its copy (core/cost.c): the figures are
 * simgpu's, 2026-11-27: a 16 MiB gemv read in place from a 20 MiB
 * allocator segment took 337.5 us, the segment's copy 381.3 us; a 4 MiB
 * layer of its own allocation takes about 86 us in place and 76 us to copy.
 */
#include <math.h>

#include "unit.h"

START_TEST(cost_decides_nothing_until_both_ways_are_timed)
{
    sw_cost_t c = {0};
    ck_assert(!sw_cost_in_place(&c));
    sw_cost_note(&c, SW_COST_PLACE, 0.3375f);
    ck_assert(!sw_cost_in_place(&c));
    sw_cost_t d = {0};
    sw_cost_note(&d, SW_COST_COPY, 0.3813f);
    ck_assert(!sw_cost_in_place(&d));
    sw_cost_note(&c, SW_COST_COPY, 0.3813f);
    ck_assert(sw_cost_in_place(&c));
}
END_TEST

START_TEST(cost_a_copy_carrying_unread_bytes_loses_to_reading_in_place)
{
    sw_cost_t c = {0};
    sw_cost_note(&c, SW_COST_PLACE, 0.3375f);
    sw_cost_note(&c, SW_COST_COPY, 0.3813f);
    ck_assert(sw_cost_in_place(&c));
}
END_TEST

START_TEST(cost_a_copy_of_what_the_kernel_reads_whole_wins)
{
    sw_cost_t c = {0};
    sw_cost_note(&c, SW_COST_PLACE, 0.086f);
    sw_cost_note(&c, SW_COST_COPY, 0.076f);
    ck_assert(!sw_cost_in_place(&c));
}
END_TEST

START_TEST(cost_in_place_must_win_by_the_margin)
{
    sw_cost_t c = {0};
    sw_cost_note(&c, SW_COST_COPY, 1.0f);
    sw_cost_note(&c, SW_COST_PLACE, 0.97f); /* faster, within the margin */
    ck_assert(!sw_cost_in_place(&c));
    sw_cost_note(&c, SW_COST_PLACE, 0.9f);
    ck_assert(sw_cost_in_place(&c));
}
END_TEST

/* A sample shares the link with whatever else runs: only slowed, so the
 * fastest counts. */
START_TEST(cost_keeps_the_fastest_sample_of_each_way)
{
    sw_cost_t c = {0};
    sw_cost_note(&c, SW_COST_COPY, 0.6f);
    sw_cost_note(&c, SW_COST_COPY, 0.38f);
    sw_cost_note(&c, SW_COST_COPY, 0.5f);
    ck_assert_float_eq(c.best[SW_COST_COPY], 0.38f);
    ck_assert_uint_eq(c.seen[SW_COST_COPY], 3);
    ck_assert_uint_eq(c.seen[SW_COST_PLACE], 0);
}
END_TEST

START_TEST(cost_wants_a_few_samples_then_no_more)
{
    sw_cost_t c = {0};
    for (int i = 0; i < SW_COST_SAMPLES; i++) {
        ck_assert(sw_cost_wants(&c, SW_COST_PLACE));
        sw_cost_note(&c, SW_COST_PLACE, 1.0f + (float)i);
    }
    ck_assert(!sw_cost_wants(&c, SW_COST_PLACE));
    ck_assert(sw_cost_wants(&c, SW_COST_COPY));
    sw_cost_note(&c, SW_COST_PLACE, 0.1f); /* past the samples: ignored */
    ck_assert_float_eq(c.best[SW_COST_PLACE], 1.0f);
    ck_assert_uint_eq(c.seen[SW_COST_PLACE], SW_COST_SAMPLES);
}
END_TEST

START_TEST(cost_ignores_a_sample_that_is_not_a_positive_time)
{
    sw_cost_t c = {0};
    sw_cost_note(&c, SW_COST_COPY, 0.0f);
    sw_cost_note(&c, SW_COST_COPY, -1.0f);
    sw_cost_note(&c, SW_COST_COPY, NAN);
    ck_assert_uint_eq(c.seen[SW_COST_COPY], 0);
    sw_cost_note(&c, SW_COST_PLACE, 0.1f);
    ck_assert(!sw_cost_in_place(&c));
}
END_TEST

/* The bar a window's copies must clear a loop: SW_COST_REPAID where its
 * kernels read in place as the link rates make them (or faster: a copy
 * carrying bytes no kernel reads), lower where the median range takes
 * longer in place (a GEMM re-reading its weight per tile row). */
START_TEST(cost_repaid_is_the_measured_bar_unless_reads_cost_more_in_place)
{
    float none[1];
    ck_assert_double_eq(sw_cost_repaid(none, 0), SW_COST_REPAID);
    float gemv[] = {1.13f, 1.12f, 1.14f};
    ck_assert_double_eq(sw_cost_repaid(gemv, 3), SW_COST_REPAID);
    float slack[] = {0.88f, 0.88f};
    ck_assert_double_eq(sw_cost_repaid(slack, 2), SW_COST_REPAID);
    float gemm[] = {2.0f, 2.0f, 2.0f};
    ck_assert_double_eq_tol(sw_cost_repaid(gemm, 3), SW_COST_REPAID * 0.15, 1e-6);
    float some[] = {1.3f};
    double bar = sw_cost_repaid(some, 1);
    ck_assert(bar < SW_COST_REPAID && bar > sw_cost_repaid(gemm, 3));
}
END_TEST

/* One range timed while the link was busy (4.3 times its copy, among
 * ranges read in place faster than copied) does not lower the bar: the
 * median speaks, not the sum. */
START_TEST(cost_repaid_is_not_moved_by_one_slow_sample)
{
    float r[] = {0.88f, 4.3f, 0.88f, 0.89f, 0.88f};
    ck_assert_double_eq(sw_cost_repaid(r, 5), SW_COST_REPAID);
    float most[] = {2.0f, 2.1f, 0.9f};
    ck_assert(sw_cost_repaid(most, 3) < SW_COST_REPAID);
}
END_TEST

Suite *cost_suite(void)
{
    Suite *s = suite_create("cost");
    TCase *tc = tcase_create("cost");
    tcase_add_test(tc, cost_decides_nothing_until_both_ways_are_timed);
    tcase_add_test(tc, cost_a_copy_carrying_unread_bytes_loses_to_reading_in_place);
    tcase_add_test(tc, cost_a_copy_of_what_the_kernel_reads_whole_wins);
    tcase_add_test(tc, cost_in_place_must_win_by_the_margin);
    tcase_add_test(tc, cost_keeps_the_fastest_sample_of_each_way);
    tcase_add_test(tc, cost_wants_a_few_samples_then_no_more);
    tcase_add_test(tc, cost_ignores_a_sample_that_is_not_a_positive_time);
    tcase_add_test(tc, cost_repaid_is_the_measured_bar_unless_reads_cost_more_in_place);
    tcase_add_test(tc, cost_repaid_is_not_moved_by_one_slow_sample);
    suite_add_tcase(s, tc);
    return s;
}

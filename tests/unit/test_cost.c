/*
 * A range read in place against its copy (core/cost.c): the figures are
 * simgpu's, 2026-11-27: a 16 MiB gemv read in place from a 20 MiB
 * allocator segment took 337.5 us, the segment's copy 381.3 us; a 4 MiB
 * layer of its own allocation takes about 86 us in place and 76 us to copy.
 */
#include <math.h>

#include "unit.h"

#define MiB(n) ((uint64_t)(n) << 20)

START_TEST(cost_decides_nothing_until_both_ways_are_timed)
{
    sw_cost_t c = {0};
    ck_assert(!sw_cost_in_place(&c, MiB(20), 0, 1, true));
    sw_cost_note(&c, SW_COST_PLACE, 0.3375f);
    ck_assert(!sw_cost_in_place(&c, MiB(20), 0, 1, true));
    sw_cost_t d = {0};
    sw_cost_note(&d, SW_COST_COPY, 0.3813f);
    ck_assert(!sw_cost_in_place(&d, MiB(20), 0, 1, true));
    sw_cost_note(&c, SW_COST_COPY, 0.3813f);
    ck_assert(sw_cost_in_place(&c, MiB(20), 0, 1, true));
}
END_TEST

START_TEST(cost_a_copy_carrying_unread_bytes_loses_to_reading_in_place)
{
    sw_cost_t c = {0};
    sw_cost_note(&c, SW_COST_PLACE, 0.3375f);
    sw_cost_note(&c, SW_COST_COPY, 0.3813f);
    ck_assert(sw_cost_in_place(&c, MiB(20), 0, 1, true));
}
END_TEST

START_TEST(cost_a_copy_of_what_the_kernel_reads_whole_wins)
{
    sw_cost_t c = {0};
    sw_cost_note(&c, SW_COST_PLACE, 0.086f);
    sw_cost_note(&c, SW_COST_COPY, 0.076f);
    ck_assert(!sw_cost_in_place(&c, MiB(20), 0, 1, true));
}
END_TEST

/* A served visit costs its stream a way home after every launch, beside
 * its copy on the link: twenty 1 MiB tensors of a 20 MiB segment read in
 * place in 426 us, its copy takes 381 and each way home 15 (simgpu,
 * 2026-11-30). One layer alone in 4 MiB pays one way home of 9. */
START_TEST(cost_a_visit_of_many_launches_pays_a_way_home_after_each)
{
    sw_cost_t c = {0};
    sw_cost_note(&c, SW_COST_PLACE, 0.426f);
    sw_cost_note(&c, SW_COST_COPY, 0.381f);
    ck_assert(!sw_cost_in_place(&c, MiB(20), 0, 20, true)); /* not timed yet: the copy alone */
    sw_cost_note(&c, SW_COST_HOME, 0.015f);
    ck_assert_double_eq_tol(sw_cost_ratio(&c, MiB(20), 0, 20, true), 0.426 / 0.381, 1e-3);
    ck_assert(!sw_cost_in_place(&c, MiB(20), 0, 20, true)); /* 300 us home, beside 381 copying */
    ck_assert_double_eq_tol(sw_cost_ratio(&c, MiB(20), 0, 40, true), 0.426 / 0.6, 1e-3);
    ck_assert(sw_cost_in_place(&c, MiB(20), 0, 40, true));
    /* With no room for a copy beside it, each waits for the readers of
     * the one before: copy and ways home add up, 681 us. */
    ck_assert_double_eq_tol(sw_cost_ratio(&c, MiB(20), 0, 20, false), 0.426 / 0.681, 1e-3);
    ck_assert(sw_cost_in_place(&c, MiB(20), 0, 20, false));
    sw_cost_t one = {0};
    sw_cost_note(&one, SW_COST_PLACE, 0.086f);
    sw_cost_note(&one, SW_COST_COPY, 0.076f);
    sw_cost_note(&one, SW_COST_HOME, 0.009f);
    ck_assert(!sw_cost_in_place(&one, MiB(4), 0, 1, true));
}
END_TEST

START_TEST(cost_in_place_must_win_by_the_margin)
{
    sw_cost_t c = {0};
    sw_cost_note(&c, SW_COST_COPY, 1.0f);
    sw_cost_note(&c, SW_COST_PLACE, 0.97f); /* faster, within the margin */
    ck_assert(!sw_cost_in_place(&c, MiB(20), 0, 1, true));
    sw_cost_note(&c, SW_COST_PLACE, 0.9f);
    ck_assert(sw_cost_in_place(&c, MiB(20), 0, 1, true));
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

/* A range whose placement changed (a layer half resident reads half as
 * much in place) forgets that way's samples and takes them again. */
START_TEST(cost_forgets_one_way_and_wants_it_again)
{
    sw_cost_t c = {0};
    for (int i = 0; i < SW_COST_SAMPLES; i++) {
        sw_cost_note(&c, SW_COST_PLACE, 0.0446f);
        sw_cost_note(&c, SW_COST_COPY, 0.0763f);
    }
    ck_assert(!sw_cost_wants(&c, SW_COST_PLACE));
    sw_cost_forget(&c, SW_COST_PLACE);
    ck_assert(sw_cost_wants(&c, SW_COST_PLACE));
    ck_assert(!sw_cost_wants(&c, SW_COST_COPY));
    ck_assert_double_eq(sw_cost_ratio(&c, MiB(4), 0, 1, true), 0);
    ck_assert(!sw_cost_in_place(&c, MiB(4), 0, 1, true));
    sw_cost_note(&c, SW_COST_PLACE, 0.0891f);
    ck_assert_float_eq(c.best[SW_COST_PLACE], 0.0891f);
    ck_assert(!sw_cost_in_place(&c, MiB(4), 0, 1, true));
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
    ck_assert(!sw_cost_in_place(&c, MiB(20), 0, 1, true));
}
END_TEST

/* A copy timed while kernels read host memory beside it is slow by their
 * share of the link: the H200's figures (2026-11-28), a 32 MiB layer read
 * in place in 0.80 ms, its copies timed at 1.41 ms, other copies reaching
 * 55 GB/s. Its copy costs its bytes at the best rate seen. */
START_TEST(cost_a_copy_slowed_by_reads_beside_it_costs_its_bytes_at_the_best_rate)
{
    sw_cost_t c = {0};
    sw_cost_note(&c, SW_COST_PLACE, 0.795f);
    sw_cost_note(&c, SW_COST_COPY, 1.410f);
    ck_assert(sw_cost_in_place(&c, MiB(32), 0, 1, true));
    double rate = 0;
    sw_cost_rate_note(&rate, MiB(32), 1.410f);
    ck_assert(sw_cost_in_place(&c, MiB(32), rate, 1, true)); /* its own rate: no better */
    sw_cost_rate_note(&rate, MiB(32), 0.606f);      /* another layer's clean copy */
    sw_cost_rate_note(&rate, MiB(32), 2.950f);      /* a slower one moves nothing */
    ck_assert_double_eq_tol(rate, MiB(32) / 0.606, 1);
    ck_assert(!sw_cost_in_place(&c, MiB(32), rate, 1, true));
    ck_assert_double_eq_tol(sw_cost_ratio(&c, MiB(32), rate, 1, true), 0.795 / 0.606, 1e-3);
    /* A rate never raises a copy's cost above its own best sample. */
    ck_assert_double_eq_tol(sw_cost_ratio(&c, MiB(256), rate, 1, true), 0.795 / 1.410, 1e-3);
    sw_cost_rate_note(&rate, MiB(32), 0.0f);
    sw_cost_rate_note(&rate, MiB(32), NAN);
    ck_assert_double_eq_tol(rate, MiB(32) / 0.606, 1);
    sw_cost_t untimed = {0};
    sw_cost_note(&untimed, SW_COST_PLACE, 0.1f);
    ck_assert_double_eq(sw_cost_ratio(&untimed, MiB(32), rate, 1, true), 0);
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
    float some[] = {1.3f, 1.3f, 1.3f};
    double bar = sw_cost_repaid(some, 3);
    ck_assert(bar < SW_COST_REPAID && bar > sw_cost_repaid(gemm, 3));
}
END_TEST

/* One range timed while the link was busy (4.3 times its copy, among
 * ranges read in place faster than copied) does not lower the bar: the
 * median speaks, not the sum. */
START_TEST(cost_repaid_is_not_moved_by_one_slow_sample)
{
    float alone[] = {30.0f, 25.0f};
    ck_assert_double_eq(sw_cost_repaid(alone, 1), SW_COST_REPAID);
    ck_assert_double_eq(sw_cost_repaid(alone, 2), SW_COST_REPAID);
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
    tcase_add_test(tc, cost_a_visit_of_many_launches_pays_a_way_home_after_each);
    tcase_add_test(tc, cost_keeps_the_fastest_sample_of_each_way);
    tcase_add_test(tc, cost_wants_a_few_samples_then_no_more);
    tcase_add_test(tc, cost_forgets_one_way_and_wants_it_again);
    tcase_add_test(tc, cost_ignores_a_sample_that_is_not_a_positive_time);
    tcase_add_test(tc, cost_a_copy_slowed_by_reads_beside_it_costs_its_bytes_at_the_best_rate);
    tcase_add_test(tc, cost_repaid_is_the_measured_bar_unless_reads_cost_more_in_place);
    tcase_add_test(tc, cost_repaid_is_not_moved_by_one_slow_sample);
    suite_add_tcase(s, tc);
    return s;
}

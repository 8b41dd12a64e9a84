/*
 * test_early.c: what happens before and around a program's normal start
 * must not turn spillway off for the rest of the run (swt-early, early.c).
 *   - Options are read at their first use, so a library constructor that
 *     allocates before spillway's own constructor ran sees the real
 *     options (init.c).
 *   - The VMM probe remembers only definite answers: an allocation made
 *     before any context, or after a failed cuInit, gets the driver's
 *     error and later allocations are tracked (vmm.c).
 *   - An allocation on a second device passes through untouched: it is
 *     that device's memory, not a tracked reservation on the first.
 *   - An allocation below SPILLWAY_MIN_ALLOC that the driver refuses for
 *     lack of memory makes room by demoting tracked chunks, as tracked
 *     allocations do (alloc.c).
 *   - The dlsym override works before spillway has started, for a
 *     preloaded library whose constructor calls it and which wraps
 *     pthread_once as ThreadSanitizer does (dlsymlib.c; hooks.c, driver.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swt.h"

/* Runs swt-early (or its constructor build) in `mode`, under spillway. */
static void run_early(swt_run_t *r, const char *prog, const char *mode, const char *const *env,
                      bool preload)
{
    const char *argv[] = {swt_path(prog), mode, NULL};
    swt_run(r, preload, env, argv);
}

static void assert_tracked_ok(const swt_run_t *r, uint64_t allocs)
{
    swt_assert_status(r, 0);
    ck_assert_msg(swt_file_has(r->out, "early: ok"), "%s", swt_describe(r));
    swt_assert_clean(r);
    ck_assert_msg(swt_sw(r, "tracked_allocs_peak") >= 1, "nothing tracked: %s", swt_describe(r));
    ck_assert_msg(swt_sw(r, "tracked_bytes_peak") >= allocs * 4 * SWT_MIB,
                  "tracked_bytes_peak %llu, want at least %llu: %s",
                  (unsigned long long)swt_sw(r, "tracked_bytes_peak"),
                  (unsigned long long)(allocs * 4 * SWT_MIB), swt_describe(r));
}

START_TEST(options_hold_when_a_constructor_allocates_first)
{
    swt_run_t r;
    run_early(&r, "SWT_EARLY_CTOR", "constructor", NULL, true);
    assert_tracked_ok(&r, 2);
    ck_assert_uint_eq(swt_sw(&r, "tracked_allocs_peak"), 2);
}
END_TEST

START_TEST(allocation_before_a_context_keeps_tracking)
{
    swt_run_t plain, r;
    run_early(&plain, "SWT_EARLY", "no-context", NULL, false);
    swt_assert_status(&plain, 0);
    run_early(&r, "SWT_EARLY", "no-context", NULL, true);
    assert_tracked_ok(&r, 1);
    /* The refused allocation got the driver's own answer. */
    ck_assert_msg(swt_file_has(plain.out, "before-context: CUDA_ERROR_INVALID_CONTEXT"), "%s",
                  swt_describe(&plain));
    ck_assert_msg(swt_file_has(r.out, "before-context: CUDA_ERROR_INVALID_CONTEXT"), "%s",
                  swt_describe(&r));
}
END_TEST

START_TEST(failed_init_keeps_tracking)
{
    const char *env[] = {"SIMGPU_FAIL=cuInit:1", NULL};
    swt_run_t plain, r;
    run_early(&plain, "SWT_EARLY", "failed-init", env, false);
    swt_assert_status(&plain, 0);
    run_early(&r, "SWT_EARLY", "failed-init", env, true);
    assert_tracked_ok(&r, 1);
    char *want = swt_slurp(plain.out), *got = swt_slurp(r.out);
    ck_assert_msg(want && got, "cannot read the outputs");
    ck_assert_str_eq(got, want); /* the same codes with and without spillway */
    free(want);
    free(got);
}
END_TEST

START_TEST(small_allocation_makes_room_on_out_of_memory)
{
    /* No budget: the out-of-memory path itself. */
    const char *env[] = {"SIMGPU_MEM=8MiB", "SPILLWAY_GPU_BUDGET=none", NULL};
    swt_run_t plain, r;
    run_early(&plain, "SWT_EARLY", "small-oom", env, false);
    swt_assert_status(&plain, 2); /* it does not fit without spillway */
    run_early(&r, "SWT_EARLY", "small-oom", env, true);
    swt_assert_status(&r, 0);
    ck_assert_msg(swt_file_has(r.out, "early: ok"), "%s", swt_describe(&r));
    swt_assert_clean(&r);
    ck_assert_uint_eq(swt_sw(&r, "passthrough_allocs"), 1);
    ck_assert_msg(swt_sw(&r, "oom_recoveries") >= 2, "oom_recoveries %llu: %s",
                  (unsigned long long)swt_sw(&r, "oom_recoveries"), swt_describe(&r));
}
END_TEST

/* A second device's allocation is tracked too, on that device: the
 * driver's DEVICE_ORDINAL answer is kept, and its bytes are its own. */
START_TEST(second_device_allocation_is_tracked)
{
    const char *env[] = {"SIMGPU_DEVICES=2", NULL};
    swt_run_t plain, r;
    run_early(&plain, "SWT_EARLY", "second-device", env, false);
    swt_assert_status(&plain, 0);
    ck_assert_msg(swt_file_has(plain.out, "second-device-ordinal: 1"), "%s", swt_describe(&plain));
    run_early(&r, "SWT_EARLY", "second-device", env, true);
    assert_tracked_ok(&r, 2);
    ck_assert_msg(swt_file_has(r.out, "second-device-ordinal: 1"), "%s", swt_describe(&r));
    ck_assert_uint_eq(swt_sw(&r, "tracked_allocs_peak"), 2);
    ck_assert_uint_eq(swt_sw(&r, "passthrough_allocs"), 0);
    ck_assert_uint_eq(swt_sw(&r, "dev0_device_bytes_peak"), 4 * SWT_MIB);
    ck_assert_uint_eq(swt_sw(&r, "dev1_device_bytes_peak"), 4 * SWT_MIB);
}
END_TEST

/* A bad option stops spillway in its constructor with exit 2, so the
 * library's "ok", written before that message, proves its lookups ran
 * first and were answered right. */
START_TEST(dlsym_works_before_spillway_starts)
{
    const char *env[] = {"SPILLWAY_GPU_BUDGET=20XB", NULL};
    const char *argv[] = {swt_path("SWT_NOCUDA"), NULL};
    swt_run_t r;
    swt_run_preloading(&r, swt_path("SWT_DLSYMLIB"), env, argv);
    swt_assert_status(&r, 2);
    char *err = swt_slurp(r.err);
    ck_assert_msg(err, "cannot read %s", r.err);
    const char *ok = strstr(err, "dlsymlib: ok"), *stop = strstr(err, "SPILLWAY_GPU_BUDGET");
    ck_assert_msg(ok && stop && ok < stop,
                  "want the library's ok, then spillway's refusal of the budget: %s",
                  swt_describe(&r));
    free(err);
}
END_TEST

/* The same library, then a program that allocates: tracking is unharmed
 * by the driver table being resolved from inside another constructor. */
START_TEST(dlsym_before_start_keeps_tracking)
{
    const char *argv[] = {swt_path("SWT_EARLY"), "no-context", NULL};
    swt_run_t r;
    swt_run_preloading(&r, swt_path("SWT_DLSYMLIB"), NULL, argv);
    assert_tracked_ok(&r, 1);
    ck_assert_msg(swt_file_has(r.err, "dlsymlib: ok"), "%s", swt_describe(&r));
}
END_TEST

Suite *early_suite(void)
{
    Suite *s = suite_create("early");
    TCase *tc = tcase_create("start-up");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, options_hold_when_a_constructor_allocates_first);
    tcase_add_test(tc, allocation_before_a_context_keeps_tracking);
    tcase_add_test(tc, failed_init_keeps_tracking);
    tcase_add_test(tc, small_allocation_makes_room_on_out_of_memory);
    tcase_add_test(tc, second_device_allocation_is_tracked);
    tcase_add_test(tc, dlsym_works_before_spillway_starts);
    tcase_add_test(tc, dlsym_before_start_keeps_tracking);
    suite_add_tcase(s, tc);
    return s;
}

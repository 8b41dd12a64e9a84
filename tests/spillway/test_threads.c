/*
 * test_threads.c: sg-mt (tests/apps/mt.c) under spillway. Four threads,
 * each on its own non-blocking stream, allocate, compute on and free
 * 3-5 MiB vectors while one thread's allocation demotes another's chunks:
 * the gate and the synchronization of vmm.c's safety rule must hold across
 * threads. A wrong value makes sg-mt exit 1; an unmap under queued work
 * shows as a hazard (or a fault) in simgpu's report. The stress case
 * runs sixteen threads for a few seconds under a tight budget and jitter.
 */
#include <stdio.h>

#include "swt.h"

static void run_mt(swt_run_t *r, bool preload, const char *const *env)
{
    const char *argv[] = {swt_path("SWT_MT"), NULL};
    swt_run(r, preload, env, argv);
}

static void assert_mt_ok(const swt_run_t *r)
{
    swt_assert_status(r, 0);
    ck_assert_msg(swt_file_has(r->out, "mt: ok"), "%s", swt_describe(r));
    swt_assert_clean(r);
}

START_TEST(threads_share_a_full_device)
{
    const char *env[] = {"SIMGPU_MEM=16MiB", NULL};
    swt_run_t r;
    run_mt(&r, true, env);
    assert_mt_ok(&r);
    ck_assert_msg(swt_sw(&r, "demotions") > 0, "no demotion: %s", swt_describe(&r));
}
END_TEST

START_TEST(threads_share_a_full_device_under_jitter)
{
    const char *env[] = {"SIMGPU_MEM=16MiB", "SIMGPU_JITTER=200", "SIMGPU_SEED=7", NULL};
    swt_run_t r;
    run_mt(&r, true, env);
    assert_mt_ok(&r);
    ck_assert_msg(swt_sw(&r, "demotions") > 0, "no demotion: %s", swt_describe(&r));
}
END_TEST

/* With a budget, chunks also come back (promotions) when frees make room. */
static void budget(const char *jitter)
{
    const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=12MiB", jitter, NULL};
    swt_run_t r;
    run_mt(&r, true, env);
    assert_mt_ok(&r);
    ck_assert_msg(swt_sw(&r, "demotions") > 0, "no demotion: %s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "device_bytes_peak") <= 12 * SWT_MIB,
                  "device_bytes_peak over budget: %s", swt_describe(&r));
}

START_TEST(threads_stay_within_a_gpu_budget)
{
    budget("SIMGPU_JITTER=0");
}
END_TEST

START_TEST(threads_stay_within_a_gpu_budget_under_jitter)
{
    budget("SIMGPU_JITTER=200");
}
END_TEST

/* The stress run: 16 threads, each allocating 3-5 MiB vectors, filling
 * them by kernel or by a copy from the host, computing, copying device to
 * device and back, and freeing, on its own stream, for 3 seconds (times
 * SWT_TIME_SCALE: under TSan, sharing two cores with another sanitized
 * test, 3 s gave 18 iterations, too few for anything to come back), with
 * random delays before every stream operation. 16 threads keep up to
 * 13 MiB each (their long-lived buffer and two vectors), 200 MiB in all,
 * under a 32 MiB budget: demotions, promotions and reads in place run all
 * the time. Every value is checked (sg-mt exits 1 on the first wrong one). */
START_TEST(sixteen_threads_under_a_tight_budget_with_jitter)
{
    const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=32MiB", "SPILLWAY_CHUNK=2MiB",
                         "SIMGPU_JITTER=100", "SIMGPU_SEED=16", NULL};
    char seconds[16];
    snprintf(seconds, sizeof seconds, "%ld", 3 * swt_time_scale());
    const char *argv[] = {swt_path("SWT_MT"), "--threads", "16", "--seconds", seconds, NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    assert_mt_ok(&r);
    ck_assert_msg(swt_file_has(r.out, "iterations="), "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "demotions") > 0, "no demotion: %s", swt_describe(&r));
    /* The vectors live one iteration: there is no loop to learn, so the
     * window streams nothing by design (before 2026-11-27 a wrong period
     * of 2 launches streamed them), and data comes back to the GPU by a
     * promotion or by a kernel reading host memory in place, as timing
     * makes it: one of them must have happened. */
    ck_assert_msg(swt_sw(&r, "promotions") > 0 || swt_sw(&r, "bytes_streamed") > 0 ||
                      swt_sw(&r, "launches_touching_host") > 0,
                  "nothing came back to the GPU: %s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "device_bytes_peak") <= 32 * SWT_MIB,
                  "device_bytes_peak over budget: %s", swt_describe(&r));
}
END_TEST

/* The control: the threads' memory does not fit without spillway. */
START_TEST(without_spillway_threads_run_out_of_memory)
{
    const char *env[] = {"SIMGPU_MEM=16MiB", NULL};
    swt_run_t r;
    run_mt(&r, false, env);
    swt_assert_status(&r, 2);
    ck_assert_msg(swt_file_has(r.err, "CUDA_ERROR_OUT_OF_MEMORY"), "%s", swt_describe(&r));
}
END_TEST

Suite *threads_suite(void)
{
    Suite *s = suite_create("threads");
    TCase *tc = tcase_create("mt");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, threads_share_a_full_device);
    tcase_add_test(tc, threads_share_a_full_device_under_jitter);
    tcase_add_test(tc, threads_stay_within_a_gpu_budget);
    tcase_add_test(tc, threads_stay_within_a_gpu_budget_under_jitter);
    tcase_add_test(tc, sixteen_threads_under_a_tight_budget_with_jitter);
    tcase_add_test(tc, without_spillway_threads_run_out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * test_devices.c: two devices (SIMGPU_DEVICES=2), each with 24 MiB of its
 * own, and multi (tests/apps/multi.c), a pipeline across them whose
 * footprint on each device (32 MiB of layers and a 4 MiB exchange buffer)
 * is above both its memory and its budget. Without spillway it runs out
 * of memory; under spillway it must print the checksum of a run with
 * everything resident (simgpu with enough memory), with no hazard or
 * fault, and no device may hold more tracked bytes than its own budget.
 */
#include "swt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEPS "4"

static void run_multi_steps(swt_run_t *r, bool preload, const char *const *env, const char *steps)
{
    const char *argv[] = {swt_path("SWT_MULTI"), "--steps", steps, NULL};
    swt_run(r, preload, env, argv);
}

static void run_multi(swt_run_t *r, bool preload, const char *const *env)
{
    run_multi_steps(r, preload, env, STEPS);
}

/* The checksum multi printed (aborts the test when there is none). */
static uint64_t checksum(const swt_run_t *r)
{
    char *out = swt_slurp(r->out);
    const char *at = out ? strstr(out, "checksum=0x") : NULL;
    ck_assert_msg(at, "no checksum: %s", swt_describe(r));
    uint64_t v = strtoull(at + strlen("checksum=0x"), NULL, 16);
    free(out);
    return v;
}

/* simgpu's peak of device dev's own memory (its report's
 * device_bytes_peak_by_device). */
static uint64_t sg_peak(const swt_run_t *r, int dev)
{
    char *rep = swt_slurp(r->sg_report);
    const char *at = rep ? strstr(rep, "\"device_bytes_peak_by_device\": [") : NULL;
    ck_assert_msg(at, "no per-device peaks: %s", swt_describe(r));
    at = strchr(at, '[') + 1;
    uint64_t v = 0;
    for (int d = 0; d <= dev; d++) {
        char *end;
        v = strtoull(at, &end, 10);
        ck_assert_msg(end != at, "device %d missing from the peaks: %s", d, swt_describe(r));
        at = end + strspn(end, ", ");
    }
    free(rep);
    return v;
}

/* The all-resident answer: enough memory on both devices, no spillway. */
static uint64_t resident_checksum_of(const char *steps)
{
    const char *env[] = {"SIMGPU_DEVICES=2", "SIMGPU_MEM=256MiB", NULL};
    swt_run_t r;
    run_multi_steps(&r, false, env, steps);
    swt_assert_status(&r, 0);
    swt_assert_clean(&r);
    return checksum(&r);
}

static uint64_t resident_checksum(void)
{
    return resident_checksum_of(STEPS);
}

START_TEST(two_devices_out_of_memory_without_spillway)
{
    const char *env[] = {"SIMGPU_DEVICES=2", "SIMGPU_MEM=24MiB", NULL};
    swt_run_t r;
    run_multi(&r, false, env);
    swt_assert_status(&r, 2);
    ck_assert_msg(swt_file_has(r.err, "CUDA_ERROR_OUT_OF_MEMORY"), "%s", swt_describe(&r));
}
END_TEST

/* Under spillway, with a budget per device (SWT_EXTRA_ENV may add the
 * policy or the remapping window): the resident answer, each device
 * within its own budget, and the budgets as the stats show them. */
static void per_device_budgets_hold(const char *extra)
{
    uint64_t want = resident_checksum();
    const char *env[] = {"SIMGPU_DEVICES=2", "SIMGPU_MEM=24MiB",
                         "SPILLWAY_GPU_BUDGET=0:16MiB,1:12MiB", extra, NULL};
    swt_run_t r;
    run_multi(&r, true, env);
    swt_assert_status(&r, 0);
    swt_assert_clean(&r);
    ck_assert_msg(checksum(&r) == want, "checksum differs from the resident run: %s",
                  swt_describe(&r));
    ck_assert_uint_eq(swt_sw(&r, "dev0_gpu_budget"), 16 * SWT_MIB);
    ck_assert_uint_eq(swt_sw(&r, "dev1_gpu_budget"), 12 * SWT_MIB);
    ck_assert_uint_eq(swt_sw(&r, "dev2_gpu_budget"), 0);
    ck_assert_msg(swt_sw(&r, "dev0_device_bytes_peak") <= 16 * SWT_MIB, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "dev1_device_bytes_peak") <= 12 * SWT_MIB, "%s", swt_describe(&r));
    /* Both devices had to give way, and each ran full. */
    ck_assert_msg(swt_sw(&r, "dev0_device_bytes_peak") > 12 * SWT_MIB, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "dev1_device_bytes_peak") > 8 * SWT_MIB, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "demotions") > 0, "%s", swt_describe(&r));
    ck_assert_uint_eq(swt_sw(&r, "failed_moves"), 0);
    ck_assert_uint_eq(swt_sw(&r, "passthrough_allocs"), 4); /* the small vectors */
    /* simgpu agrees: what each device really held is its budget and the
     * untracked vectors (and spillway's own small buffers), below 1 MiB. */
    ck_assert_msg(sg_peak(&r, 0) <= 17 * SWT_MIB, "device 0 held %" PRIu64 ": %s", sg_peak(&r, 0),
                  swt_describe(&r));
    ck_assert_msg(sg_peak(&r, 1) <= 13 * SWT_MIB, "device 1 held %" PRIu64 ": %s", sg_peak(&r, 1),
                  swt_describe(&r));
}

START_TEST(two_devices_keep_their_own_budgets)
{
    per_device_budgets_hold("SPILLWAY_POLICY=learned");
}
END_TEST

START_TEST(two_devices_keep_their_own_budgets_under_lru)
{
    per_device_budgets_hold("SPILLWAY_POLICY=lru");
}
END_TEST

START_TEST(two_devices_keep_their_own_budgets_with_the_remapping_window)
{
    per_device_budgets_hold("SPILLWAY_REWRITE=0");
}
END_TEST

START_TEST(two_devices_keep_their_own_budgets_with_jitter)
{
    per_device_budgets_hold("SIMGPU_JITTER=50");
}
END_TEST

/* A plain size still means every device. */
START_TEST(one_size_is_every_devices_budget)
{
    uint64_t want = resident_checksum();
    const char *env[] = {"SIMGPU_DEVICES=2", "SIMGPU_MEM=24MiB", "SPILLWAY_GPU_BUDGET=10MiB",
                         NULL};
    swt_run_t r;
    run_multi(&r, true, env);
    swt_assert_status(&r, 0);
    swt_assert_clean(&r);
    ck_assert_msg(checksum(&r) == want, "%s", swt_describe(&r));
    for (int d = 0; d < 2; d++) {
        char name[64];
        snprintf(name, sizeof name, "dev%d_gpu_budget", d);
        ck_assert_uint_eq(swt_sw(&r, name), 10 * SWT_MIB);
        snprintf(name, sizeof name, "dev%d_device_bytes_peak", d);
        ck_assert_msg(swt_sw(&r, name) <= 10 * SWT_MIB, "%s: %s", name, swt_describe(&r));
    }
}
END_TEST

/* No budget (none): each device's out-of-memory is relieved by its own
 * chunks alone, and the answer is still the resident one. */
START_TEST(out_of_memory_on_each_device_is_relieved_by_its_own_chunks)
{
    uint64_t want = resident_checksum();
    const char *env[] = {"SIMGPU_DEVICES=2", "SIMGPU_MEM=24MiB", "SPILLWAY_GPU_BUDGET=none", NULL};
    swt_run_t r;
    run_multi(&r, true, env);
    swt_assert_status(&r, 0);
    swt_assert_clean(&r);
    ck_assert_msg(checksum(&r) == want, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "oom_recoveries") >= 2, "%s", swt_describe(&r));
    ck_assert_msg(sg_peak(&r, 1) <= 24 * SWT_MIB, "%s", swt_describe(&r));
}
END_TEST

/* Each device streams its own demoted layers through a window of its own
 * memory, for the launches in its own context: both devices' counts grow,
 * they add up to the total, and the answer is the resident one (with
 * jitter, so that a copy not ordered before its reader shows). A window
 * ordered only after the first device's streams, or an event recorded on
 * a stream of the other device (which simgpu refuses, as the driver
 * does), would stream nothing there. */
START_TEST(each_device_streams_through_its_own_window)
{
    uint64_t want = resident_checksum_of("8");
    const char *env[] = {"SIMGPU_DEVICES=2", "SIMGPU_MEM=24MiB", "SPILLWAY_GPU_BUDGET=16MiB",
                         "SIMGPU_JITTER=50", NULL};
    swt_run_t r;
    run_multi_steps(&r, true, env, "8");
    swt_assert_status(&r, 0);
    swt_assert_clean(&r);
    ck_assert_msg(checksum(&r) == want, "%s", swt_describe(&r));
    uint64_t dev0 = swt_sw(&r, "dev0_bytes_streamed"), dev1 = swt_sw(&r, "dev1_bytes_streamed");
    ck_assert_msg(dev0 > 0 && dev1 > 0, "streamed %" PRIu64 " and %" PRIu64 ": %s", dev0, dev1,
                  swt_describe(&r));
    ck_assert_uint_eq(swt_sw(&r, "bytes_streamed"), dev0 + dev1);
    ck_assert_msg(swt_sw(&r, "rewritten_launches") > 0, "%s", swt_describe(&r));
    ck_assert_uint_eq(swt_sw(&r, "failed_moves"), 0);
    for (int d = 0; d < 2; d++)
        ck_assert_msg(sg_peak(&r, d) <= 17 * SWT_MIB, "device %d held %" PRIu64 ": %s", d,
                      sg_peak(&r, d), swt_describe(&r));
}
END_TEST

/* A kernel on device 1 still queued (behind a 300 ms host function) reads
 * device 0's chunks when an allocation on device 0 demotes one: the move
 * must wait for device 1's context too (simgpu's cuCtxSynchronize of
 * device 0's context alone would leave the kernel queued, and the unmap
 * would be a hazard). */
START_TEST(a_move_waits_for_every_context_that_may_use_the_chunk)
{
    const char *plain_env[] = {"SIMGPU_DEVICES=2", "SIMGPU_MEM=256MiB", NULL};
    const char *argv[] = {swt_path("SWT_MULTI"), "--layers", "1", "--race", NULL};
    swt_run_t plain, r;
    swt_run(&plain, false, plain_env, argv);
    swt_assert_status(&plain, 0);
    swt_assert_clean(&plain);
    const char *env[] = {"SIMGPU_DEVICES=2", "SIMGPU_MEM=24MiB", "SPILLWAY_GPU_BUDGET=0:8MiB", NULL};
    swt_run(&r, true, env, argv);
    swt_assert_status(&r, 0);
    swt_assert_clean(&r);
    ck_assert_msg(checksum(&r) == checksum(&plain), "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "demotions") > 0, "nothing moved: %s", swt_describe(&r));
}
END_TEST

Suite *devices_suite(void)
{
    Suite *s = suite_create("devices");
    TCase *tc = tcase_create("two devices");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, two_devices_out_of_memory_without_spillway);
    tcase_add_test(tc, two_devices_keep_their_own_budgets);
    tcase_add_test(tc, two_devices_keep_their_own_budgets_under_lru);
    tcase_add_test(tc, two_devices_keep_their_own_budgets_with_the_remapping_window);
    tcase_add_test(tc, two_devices_keep_their_own_budgets_with_jitter);
    tcase_add_test(tc, one_size_is_every_devices_budget);
    tcase_add_test(tc, out_of_memory_on_each_device_is_relieved_by_its_own_chunks);
    tcase_add_test(tc, a_move_waits_for_every_context_that_may_use_the_chunk);
    tcase_add_test(tc, each_device_streams_through_its_own_window);
    suite_add_tcase(s, tc);
    return s;
}

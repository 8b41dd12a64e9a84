/*
 * test_oversize.c: what spillway is for. mlp with 40 MiB of weights
 * (10 layers of 1024 x 1024 floats) on a 16 MiB simgpu exits 2 with
 * CUDA_ERROR_OUT_OF_MEMORY on its own (the control below), and under
 * spillway must run and match the host reference bit for bit, by every
 * route and kernel form mlp has, with and without simgpu's random delays
 * (SIMGPU_JITTER=200), with no hazard and no fault in simgpu's report.
 *
 * Two kinds of pressure:
 *   - the device is full: SIMGPU_MEM=16MiB, the driver says out of memory,
 *     spillway demotes (or places new chunks on the host) and retries;
 *   - a budget: SPILLWAY_GPU_BUDGET=12MiB on a 1 GiB device, where the
 *     driver would never refuse; spillway's device_bytes_peak must stay
 *     within the budget.
 * A third placement: a zero budget, where every chunk lives on the host.
 * Per-layer buffers are demoted as later layers arrive (demotions > 0);
 * with --one-buffer the whole model is one allocation, split into 4 MiB
 * chunks (SPILLWAY_CHUNK=4MiB) of which those that do not fit are born on
 * the host (host_bytes_peak > 0, no demotion needed).
 */
#include <stdlib.h>
#include <string.h>

#include "swt.h"

#define MODEL "--layers", "10", "--width", "1024", "--steps", "3"
#define MODEL_BYTES (40 * SWT_MIB)
#define BUDGET "12MiB"
#define BUDGET_BYTES (12 * SWT_MIB)

enum pressure { DEVICE_FULL, GPU_BUDGET };

/* Runs the oversized model with the given mlp options (NULL-terminated,
 * at most 6) under spillway and checks everything a successful spill
 * shows. */
static void spill(enum pressure p, bool jitter, const char *const *opts)
{
    const char *argv[16] = {swt_path("SWT_MLP"), MODEL};
    int n = 7;
    bool one_buffer = false;
    for (int i = 0; opts[i]; i++) {
        argv[n++] = opts[i];
        one_buffer |= strcmp(opts[i], "--one-buffer") == 0;
    }
    argv[n] = NULL;
    const char *env[] = {
        p == DEVICE_FULL ? "SIMGPU_MEM=16MiB" : "SIMGPU_MEM=1GiB",
        p == GPU_BUDGET ? "SPILLWAY_GPU_BUDGET=" BUDGET : "SPILLWAY_GPU_BUDGET",
        jitter ? "SIMGPU_JITTER=200" : "SIMGPU_JITTER=0",
        one_buffer ? "SPILLWAY_CHUNK=4MiB" : "SPILLWAY_CHUNK",
        NULL,
    };
    swt_run_t r;
    swt_run(&r, true, env, argv);

    swt_assert_match(&r);
    ck_assert_msg(swt_sw(&r, "tracked_bytes_peak") >= MODEL_BYTES,
                  "spillway did not track the weights: %s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "host_bytes_peak") > 0, "nothing went to the host: %s",
                  swt_describe(&r));
    if (one_buffer)
        ck_assert_msg(swt_sw(&r, "tracked_allocs_peak") >= 1, "%s", swt_describe(&r));
    else
        ck_assert_msg(swt_sw(&r, "demotions") > 0, "no demotion: %s", swt_describe(&r));
    if (p == GPU_BUDGET)
        ck_assert_msg(swt_sw(&r, "device_bytes_peak") <= BUDGET_BYTES,
                      "device_bytes_peak %llu over the %s budget: %s",
                      (unsigned long long)swt_sw(&r, "device_bytes_peak"), BUDGET,
                      swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "failed_moves") == 0, "a move failed: %s", swt_describe(&r));
}

#define SPILL_TEST(name, pressure, jitter, ...)                  \
    START_TEST(name)                                             \
    {                                                            \
        const char *const opts_[] = {__VA_ARGS__, NULL};         \
        spill(pressure, jitter, opts_);                          \
    }                                                            \
    END_TEST

/* A full device. */
SPILL_TEST(direct_route_runs_model_larger_than_device, DEVICE_FULL, false, "--route", "direct")
SPILL_TEST(loader_route_runs_model_larger_than_device, DEVICE_FULL, false, "--route", "loader")
SPILL_TEST(one_buffer_model_is_split_across_device_and_host, DEVICE_FULL, false, "--one-buffer")
SPILL_TEST(batched_gemm_runs_model_larger_than_device, DEVICE_FULL, false, "--batch", "8")
SPILL_TEST(graph_replay_runs_model_larger_than_device, DEVICE_FULL, false, "--graph")
SPILL_TEST(loader_graph_replay_runs_model_larger_than_device, DEVICE_FULL, false, "--graph",
           "--route", "loader")
SPILL_TEST(direct_route_matches_under_jitter, DEVICE_FULL, true, "--route", "direct")
SPILL_TEST(loader_route_matches_under_jitter, DEVICE_FULL, true, "--route", "loader")
SPILL_TEST(one_buffer_matches_under_jitter, DEVICE_FULL, true, "--one-buffer")
SPILL_TEST(batched_gemm_matches_under_jitter, DEVICE_FULL, true, "--batch", "8")
SPILL_TEST(graph_replay_matches_under_jitter, DEVICE_FULL, true, "--graph")
SPILL_TEST(loader_graph_replay_matches_under_jitter, DEVICE_FULL, true, "--graph", "--route",
           "loader")

/* A GPU budget on a large device. */
SPILL_TEST(budget_direct_route_stays_within_budget, GPU_BUDGET, false, "--route", "direct")
SPILL_TEST(budget_loader_route_stays_within_budget, GPU_BUDGET, false, "--route", "loader")
SPILL_TEST(budget_one_buffer_stays_within_budget, GPU_BUDGET, false, "--one-buffer")
SPILL_TEST(budget_batched_gemm_stays_within_budget, GPU_BUDGET, false, "--batch", "8")
SPILL_TEST(budget_graph_replay_stays_within_budget, GPU_BUDGET, false, "--graph")
SPILL_TEST(budget_direct_route_under_jitter, GPU_BUDGET, true, "--route", "direct")
SPILL_TEST(budget_loader_route_under_jitter, GPU_BUDGET, true, "--route", "loader")
SPILL_TEST(budget_one_buffer_under_jitter, GPU_BUDGET, true, "--one-buffer")
SPILL_TEST(budget_batched_gemm_under_jitter, GPU_BUDGET, true, "--batch", "8")
SPILL_TEST(budget_graph_replay_under_jitter, GPU_BUDGET, true, "--graph")

/* The control: the same model without spillway does not fit, so the tests
 * above prove something. */
static void no_fit(const char *extra)
{
    const char *argv[] = {swt_path("SWT_MLP"), MODEL, extra, NULL};
    const char *env[] = {"SIMGPU_MEM=16MiB", NULL};
    swt_run_t r;
    swt_run(&r, false, env, argv);
    swt_assert_status(&r, 2);
    ck_assert_msg(swt_file_has(r.err, "CUDA_ERROR_OUT_OF_MEMORY in cuMemAlloc"), "%s",
                  swt_describe(&r));
    ck_assert_msg(!swt_file_has(r.out, "result="), "%s", swt_describe(&r));
    ck_assert_msg(!swt_exists(r.sw_report), "a spillway report without spillway: %s",
                  swt_describe(&r));
}

START_TEST(without_spillway_the_model_runs_out_of_memory)
{
    no_fit("--route=direct");
}
END_TEST

START_TEST(without_spillway_the_one_buffer_model_runs_out_of_memory)
{
    no_fit("--one-buffer");
}
END_TEST

/* When everything fits, spillway tracks but moves nothing. */
START_TEST(model_that_fits_is_never_demoted)
{
    const char *argv[] = {swt_path("SWT_MLP"), MODEL, NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    ck_assert_msg(swt_sw(&r, "tracked_bytes_peak") >= MODEL_BYTES, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "demotions") == 0, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "host_bytes_peak") == 0, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "oom_recoveries") == 0, "%s", swt_describe(&r));
}
END_TEST

/* A zero budget: every tracked chunk is born in host memory and every
 * kernel reads and writes it there (zero-copy), by every launch form
 * sg-loader has (legacy and per-thread streams, CUfunction and CUkernel,
 * kernelParams and the packed extra buffer, cuLaunchKernelEx). */
static void all_on_host(const char *const *argv, const char *ok)
{
    const char *env[] = {"SPILLWAY_GPU_BUDGET=0", "SPILLWAY_MIN_ALLOC=0", "SPILLWAY_CHUNK=2MiB",
                         NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_status(&r, 0);
    ck_assert_msg(swt_file_has(r.out, ok), "%s", swt_describe(&r));
    swt_assert_clean(&r);
    ck_assert_msg(swt_sw(&r, "device_bytes_peak") == 0, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "host_bytes_peak") > 0, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "launches_touching_host") > 0, "%s", swt_describe(&r));
}

START_TEST(zero_budget_runs_every_launch_form_from_host_memory)
{
    const char *argv[] = {swt_path("SWT_LOADER"), NULL};
    all_on_host(argv, "loader: ok");
}
END_TEST

START_TEST(zero_budget_runs_the_model_from_host_memory)
{
    const char *argv[] = {swt_path("SWT_MLP"), MODEL, NULL};
    all_on_host(argv, "result=match");
}
END_TEST

START_TEST(zero_budget_replays_a_graph_from_host_memory)
{
    const char *argv[] = {swt_path("SWT_MLP"), MODEL, "--graph", "--route", "loader", NULL};
    all_on_host(argv, "result=match");
}
END_TEST

Suite *oversize_suite(void)
{
    Suite *s = suite_create("oversize");
    TCase *full = tcase_create("device-full");
    tcase_set_timeout(full, 120);
    tcase_add_test(full, direct_route_runs_model_larger_than_device);
    tcase_add_test(full, loader_route_runs_model_larger_than_device);
    tcase_add_test(full, one_buffer_model_is_split_across_device_and_host);
    tcase_add_test(full, batched_gemm_runs_model_larger_than_device);
    tcase_add_test(full, graph_replay_runs_model_larger_than_device);
    tcase_add_test(full, loader_graph_replay_runs_model_larger_than_device);
    tcase_add_test(full, direct_route_matches_under_jitter);
    tcase_add_test(full, loader_route_matches_under_jitter);
    tcase_add_test(full, one_buffer_matches_under_jitter);
    tcase_add_test(full, batched_gemm_matches_under_jitter);
    tcase_add_test(full, graph_replay_matches_under_jitter);
    tcase_add_test(full, loader_graph_replay_matches_under_jitter);
    suite_add_tcase(s, full);

    TCase *budget = tcase_create("gpu-budget");
    tcase_set_timeout(budget, 120);
    tcase_add_test(budget, budget_direct_route_stays_within_budget);
    tcase_add_test(budget, budget_loader_route_stays_within_budget);
    tcase_add_test(budget, budget_one_buffer_stays_within_budget);
    tcase_add_test(budget, budget_batched_gemm_stays_within_budget);
    tcase_add_test(budget, budget_graph_replay_stays_within_budget);
    tcase_add_test(budget, budget_direct_route_under_jitter);
    tcase_add_test(budget, budget_loader_route_under_jitter);
    tcase_add_test(budget, budget_one_buffer_under_jitter);
    tcase_add_test(budget, budget_batched_gemm_under_jitter);
    tcase_add_test(budget, budget_graph_replay_under_jitter);
    suite_add_tcase(s, budget);

    TCase *host = tcase_create("all-on-host");
    tcase_set_timeout(host, 120);
    tcase_add_test(host, zero_budget_runs_every_launch_form_from_host_memory);
    tcase_add_test(host, zero_budget_runs_the_model_from_host_memory);
    tcase_add_test(host, zero_budget_replays_a_graph_from_host_memory);
    suite_add_tcase(s, host);

    TCase *control = tcase_create("control");
    tcase_set_timeout(control, 60);
    tcase_add_test(control, without_spillway_the_model_runs_out_of_memory);
    tcase_add_test(control, without_spillway_the_one_buffer_model_runs_out_of_memory);
    tcase_add_test(control, model_that_fits_is_never_demoted);
    suite_add_tcase(s, control);
    return s;
}

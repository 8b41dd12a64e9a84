/*
 * test_options.c: SPILLWAY_* as a user meets them, through a real program.
 *
 *   - A bad value stops the program at load time, before main runs: exit
 *     status 2, no output of its own, and stderr names the variable and
 *     the value (init.c, core/options.c).
 *   - An unknown SPILLWAY_ name does not stop anything; stderr suggests the
 *     closest known name.
 *   - SPILLWAY_LOG=info prints every effective option; SPILLWAY_LOG_FILE
 *     takes the messages instead of stderr.
 *   - SPILLWAY_DISABLE=1 is pure pass-through: the oversized model fails
 *     as it does without spillway, and spillway writes no report (init.c's
 *     start() returns before registering the exit report) and no stats
 *     file.
 *   - The other options do what they say: a percentage budget is of
 *     device memory, MIN_ALLOC leaves smaller allocations to the driver,
 *     HOST_BUDGET caps the host side (then the application gets the
 *     driver's out of memory), MEMINFO=virtual adds the host budget to
 *     cuMemGetInfo.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "swt.h"

#define SMALL_MODEL "--layers", "2", "--width", "256", "--steps", "1"
#define BIG_MODEL "--layers", "10", "--width", "1024", "--steps", "2"

static const char *const option_names[] = {
    "GPU_BUDGET", "HOST_BUDGET", "MIN_ALLOC", "CHUNK", "DISABLE",
    "LOG", "LOG_FILE", "REPORT", "MEMINFO", "POLICY", "PREFETCH_BYTES", "STATS_DIR",
};
#define NOPTIONS (sizeof option_names / sizeof option_names[0])

/* ---- bad values ---- */

static void refused(const char *name, const char *value)
{
    char entry[2048], quoted[2048];
    snprintf(entry, sizeof entry, "SPILLWAY_%s=%s", name, value);
    /* An over-long value may be cut in the message: its start is enough. */
    snprintf(quoted, sizeof quoted, "\"%.64s%s", value, strlen(value) > 64 ? "" : "\"");
    const char *env[] = {entry, NULL};
    const char *argv[] = {swt_path("SWT_MLP"), SMALL_MODEL, NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);

    swt_assert_status(&r, 2);
    char *out = swt_slurp(r.out);
    ck_assert_msg(out && out[0] == '\0', "the program ran: %s", swt_describe(&r));
    free(out);
    char var[64];
    snprintf(var, sizeof var, "SPILLWAY_%s", name);
    ck_assert_msg(swt_file_has(r.err, var), "stderr does not name %s: %s", var,
                  swt_describe(&r));
    ck_assert_msg(swt_file_has(r.err, quoted), "stderr does not show the value %s: %s", quoted,
                  swt_describe(&r));
    /* Stopped before the program's first CUDA call. */
    ck_assert_msg(!swt_exists(r.sg_report), "the driver was used: %s", swt_describe(&r));
    ck_assert_msg(!swt_exists(r.sw_report), "%s", swt_describe(&r));
}

START_TEST(bad_gpu_budget_stops_the_program)
{
    refused("GPU_BUDGET", "12QiB");
}
END_TEST

START_TEST(bad_host_budget_stops_the_program)
{
    refused("HOST_BUDGET", "lots");
}
END_TEST

START_TEST(bad_min_alloc_stops_the_program)
{
    refused("MIN_ALLOC", "-1");
}
END_TEST

START_TEST(bad_chunk_stops_the_program)
{
    refused("CHUNK", "4MB5");
}
END_TEST

START_TEST(zero_chunk_stops_the_program)
{
    refused("CHUNK", "0");
}
END_TEST

START_TEST(bad_disable_stops_the_program)
{
    refused("DISABLE", "maybe");
}
END_TEST

START_TEST(bad_log_level_stops_the_program)
{
    refused("LOG", "loud");
}
END_TEST

START_TEST(bad_meminfo_stops_the_program)
{
    refused("MEMINFO", "both");
}
END_TEST

START_TEST(bad_policy_stops_the_program)
{
    refused("POLICY", "random");
}
END_TEST

START_TEST(bad_prefetch_bytes_stops_the_program)
{
    refused("PREFETCH_BYTES", "1.5GiB");
}
END_TEST

START_TEST(percentage_over_100_stops_the_program)
{
    refused("GPU_BUDGET", "150%");
}
END_TEST

START_TEST(overlong_path_stops_the_program)
{
    char path[1200];
    memset(path, 'x', sizeof path - 1);
    path[0] = '/';
    path[sizeof path - 1] = '\0';
    refused("LOG_FILE", path);
}
END_TEST

/* ---- unknown names ---- */

START_TEST(unknown_variable_suggests_the_closest_name)
{
    const char *env[] = {"SPILLWAY_GPU_BUDGTE=1G", NULL};
    const char *argv[] = {swt_path("SWT_MLP"), SMALL_MODEL, NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    ck_assert_msg(swt_file_has(r.err, "SPILLWAY_GPU_BUDGTE"), "%s", swt_describe(&r));
    ck_assert_msg(swt_file_has(r.err, "did you mean SPILLWAY_GPU_BUDGET?"), "%s",
                  swt_describe(&r));
}
END_TEST

/* The warning is a line of its own: whatever the program writes to stderr
 * next must not be glued to it. */
START_TEST(unknown_variable_warning_ends_its_line)
{
    const char *env[] = {"SPILLWAY_GPU_BUDGTE=1G", "SPILLWAY_CHUNKS=4MiB", NULL};
    /* A bad command line: mlp then writes its usage text to stderr. */
    const char *argv[] = {swt_path("SWT_MLP"), "--layers", "0", NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_status(&r, 3);
    ck_assert_msg(swt_file_has(r.err, "did you mean SPILLWAY_GPU_BUDGET?)\n"),
                  "warning not ended by a newline: %s", swt_describe(&r));
    ck_assert_msg(swt_file_has(r.err, "did you mean SPILLWAY_CHUNK?)\n"),
                  "warning not ended by a newline: %s", swt_describe(&r));
    ck_assert_msg(swt_file_has(r.err, "\nusage: mlp") || swt_file_has(r.err, "\nmlp:"),
                  "the program's message does not start a line: %s", swt_describe(&r));
}
END_TEST

/* ---- logging ---- */

START_TEST(log_info_prints_every_effective_option)
{
    const char *env[] = {"SPILLWAY_LOG=info", "SPILLWAY_CHUNK=4MiB",
                         "SPILLWAY_GPU_BUDGET=12MiB", NULL};
    const char *argv[] = {swt_path("SWT_MLP"), SMALL_MODEL, NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    char *err = swt_slurp(r.err);
    ck_assert_ptr_nonnull(err);
    for (size_t i = 0; i < NOPTIONS; i++) {
        char setting[128];
        snprintf(setting, sizeof setting, "SPILLWAY_%s=", option_names[i]);
        ck_assert_msg(strstr(err, setting), "%s not printed: %s", setting, swt_describe(&r));
    }
    /* Effective values, not only names. */
    ck_assert_msg(strstr(err, "SPILLWAY_CHUNK=4MiB\n"), "%s", swt_describe(&r));
    ck_assert_msg(strstr(err, "SPILLWAY_GPU_BUDGET=12MiB\n"), "%s", swt_describe(&r));
    ck_assert_msg(strstr(err, "SPILLWAY_LOG=info\n"), "%s", swt_describe(&r));
    free(err);
}
END_TEST

START_TEST(log_warn_prints_nothing_on_a_clean_run)
{
    /* Demotions and host placement happen, and are not warnings. */
    const char *env[] = {"SIMGPU_MEM=16MiB", NULL};
    const char *argv[] = {swt_path("SWT_MLP"), BIG_MODEL, NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    char *err = swt_slurp(r.err);
    ck_assert_msg(err && err[0] == '\0', "stderr not empty: %s", swt_describe(&r));
    free(err);
}
END_TEST

START_TEST(log_file_takes_the_messages)
{
    char entry[700], log[650];
    swt_run_t r;
    /* The run directory is made by swt_run; use a file beside the root. */
    snprintf(log, sizeof log, "%s/log-file-XXXXXX", swt_root());
    int fd = mkstemp(log);
    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(entry, sizeof entry, "SPILLWAY_LOG_FILE=%s", log);
    const char *env[] = {"SPILLWAY_LOG=info", entry, "SIMGPU_MEM=16MiB", NULL};
    const char *argv[] = {swt_path("SWT_MLP"), BIG_MODEL, NULL};
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    ck_assert_msg(swt_file_has(log, "spillway["), "nothing in the log file: %s",
                  swt_describe(&r));
    ck_assert_msg(swt_file_has(log, "budgets:"), "%s", swt_describe(&r));
    ck_assert_msg(!swt_file_has(r.err, "budgets:"), "messages still on stderr: %s",
                  swt_describe(&r));
}
END_TEST

/* "append messages to this file instead of stderr": the option list that
 * SPILLWAY_LOG=info prints is one of those messages. */
START_TEST(log_file_takes_the_option_list)
{
    char entry[700], log[650];
    swt_run_t r;
    snprintf(log, sizeof log, "%s/log-file-XXXXXX", swt_root());
    int fd = mkstemp(log);
    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(entry, sizeof entry, "SPILLWAY_LOG_FILE=%s", log);
    const char *env[] = {"SPILLWAY_LOG=info", entry, NULL};
    const char *argv[] = {swt_path("SWT_MLP"), SMALL_MODEL, NULL};
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    ck_assert_msg(swt_file_has(log, "SPILLWAY_CHUNK="), "option list not in the log file: %s",
                  swt_describe(&r));
    ck_assert_msg(!swt_file_has(r.err, "SPILLWAY_CHUNK="), "option list on stderr: %s",
                  swt_describe(&r));
}
END_TEST

/* ---- SPILLWAY_DISABLE ---- */

START_TEST(disable_passes_the_oversized_model_to_the_driver)
{
    const char *env[] = {"SPILLWAY_DISABLE=1", "SIMGPU_MEM=16MiB", NULL};
    const char *argv[] = {swt_path("SWT_MLP"), BIG_MODEL, NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_status(&r, 2);
    ck_assert_msg(swt_file_has(r.err, "CUDA_ERROR_OUT_OF_MEMORY in cuMemAlloc"), "%s",
                  swt_describe(&r));
    /* Nothing of spillway's own: no VMM call at all, no report, no file. */
    ck_assert_msg(swt_calls(&r, "cuMemCreate") == 0, "%s", swt_describe(&r));
    ck_assert_msg(swt_calls(&r, "cuMemAddressReserve") == 0, "%s", swt_describe(&r));
    ck_assert_msg(!swt_exists(r.sw_report), "report written while disabled: %s",
                  swt_describe(&r));
    ck_assert_int_eq(swt_dir_entries(r.stats_dir), 0);
}
END_TEST

START_TEST(disable_runs_a_fitting_model_untouched)
{
    const char *env[] = {"SPILLWAY_DISABLE=yes", NULL};
    const char *argv[] = {swt_path("SWT_MLP"), BIG_MODEL, "--graph", NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    ck_assert_msg(swt_calls(&r, "cuMemCreate") == 0, "%s", swt_describe(&r));
    ck_assert_msg(!swt_exists(r.sw_report), "%s", swt_describe(&r));
    ck_assert_int_eq(swt_dir_entries(r.stats_dir), 0);
}
END_TEST

/* ---- what the other options do ---- */

START_TEST(percentage_budget_is_of_device_memory)
{
    /* 25% of 64 MiB = 16 MiB, for a 40 MiB model. */
    const char *env[] = {"SIMGPU_MEM=64MiB", "SPILLWAY_GPU_BUDGET=25%", NULL};
    const char *argv[] = {swt_path("SWT_MLP"), BIG_MODEL, NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    ck_assert_msg(swt_sw(&r, "demotions") > 0, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "device_bytes_peak") <= 16 * SWT_MIB, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "device_bytes_peak") > 8 * SWT_MIB, "budget unused: %s",
                  swt_describe(&r));
}
END_TEST

START_TEST(min_alloc_leaves_smaller_allocations_to_the_driver)
{
    /* Layers are 4 MiB: all below 8 MiB, so none is tracked, and the
     * oversized model fails as without spillway. */
    const char *env[] = {"SIMGPU_MEM=16MiB", "SPILLWAY_MIN_ALLOC=8MiB", NULL};
    const char *argv[] = {swt_path("SWT_MLP"), BIG_MODEL, NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_status(&r, 2);
    ck_assert_msg(swt_file_has(r.err, "CUDA_ERROR_OUT_OF_MEMORY in cuMemAlloc"), "%s",
                  swt_describe(&r));
    swt_assert_clean(&r);
    ck_assert_msg(swt_sw(&r, "tracked_allocs_peak") == 0, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "passthrough_allocs") > 0, "%s", swt_describe(&r));
}
END_TEST

START_TEST(min_alloc_warns_where_untracked_memory_passes_the_budget)
{
    /* 40 layers of 1 MiB, below the default SPILLWAY_MIN_ALLOC, under a
     * 16 MiB budget: the driver holds all 40 MiB, and the user is told the
     * budget does not bound them and how to track them. */
    const char *argv[] = {swt_path("SWT_MLP"), "--layers", "40", "--width", "512", "--steps", "2",
                          NULL};
    const char *env[] = {"SIMGPU_MEM=64MiB", "SPILLWAY_GPU_BUDGET=16MiB", NULL};
    const char *warning = "the budget does not bound them (passthrough_bytes_small); a smaller "
                          "SPILLWAY_MIN_ALLOC tracks them";
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    ck_assert_msg(swt_file_has(r.err, warning), "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "tracked_allocs_peak") == 0, "%s", swt_describe(&r));
    /* Tracked, they stay within it, and nothing is said. */
    const char *tracked[] = {"SIMGPU_MEM=64MiB", "SPILLWAY_GPU_BUDGET=16MiB",
                             "SPILLWAY_MIN_ALLOC=1MiB", NULL};
    swt_run(&r, true, tracked, argv);
    swt_assert_match(&r);
    ck_assert_msg(!swt_file_has(r.err, "does not bound them"), "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "device_bytes_peak") <= 16 * SWT_MIB, "%s", swt_describe(&r));
    /* A budget the untracked memory fits in is no cause for a warning. */
    const char *roomy[] = {"SIMGPU_MEM=128MiB", "SPILLWAY_GPU_BUDGET=64MiB", NULL};
    swt_run(&r, true, roomy, argv);
    swt_assert_match(&r);
    ck_assert_msg(!swt_file_has(r.err, "does not bound them"), "%s", swt_describe(&r));
}
END_TEST

START_TEST(exhausted_host_budget_gives_out_of_memory)
{
    /* 40 MiB of weights, 16 MiB of device and 8 MiB of host: cannot fit.
     * The budget is picked; its window goes when nothing is tracked. */
    const char *env[] = {"SIMGPU_MEM=16MiB", "SPILLWAY_HOST_BUDGET=8MiB", NULL};
    const char *argv[] = {swt_path("SWT_MLP"), BIG_MODEL, NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_status(&r, 2);
    ck_assert_msg(swt_file_has(r.err, "CUDA_ERROR_OUT_OF_MEMORY in cuMemAlloc"), "%s",
                  swt_describe(&r));
    swt_assert_clean(&r);
    ck_assert_msg(swt_sw(&r, "host_bytes_peak") <= 8 * SWT_MIB, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "host_bytes_peak") > 0, "%s", swt_describe(&r));
    /* mlp frees what it got before exiting; nothing may stay behind. */
    ck_assert_msg(swt_sw(&r, "tracked_bytes") == 0, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "host_bytes") == 0, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "device_bytes") == 0, "%s", swt_describe(&r));
}
END_TEST

static uint64_t probe_value(const swt_run_t *r, const char *key)
{
    char *out = swt_slurp(r->out);
    ck_assert_ptr_nonnull(out);
    char pat[64];
    snprintf(pat, sizeof pat, "%s=", key);
    const char *p = strstr(out, pat);
    ck_assert_msg(p != NULL, "no %s in the output: %s", key, swt_describe(r));
    uint64_t v = strtoull(p + strlen(pat), NULL, 10);
    free(out);
    return v;
}

START_TEST(meminfo_virtual_adds_the_host_budget)
{
    const char *env[] = {"SIMGPU_MEM=16MiB", "SPILLWAY_HOST_BUDGET=1GiB",
                         "SPILLWAY_MEMINFO=virtual", NULL};
    const char *argv[] = {swt_path("SWT_PROBE"), NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_status(&r, 0);
    ck_assert_uint_eq(probe_value(&r, "meminfo_total"), 16 * SWT_MIB + 1024 * SWT_MIB);
    ck_assert_uint_le(probe_value(&r, "meminfo_free"), 16 * SWT_MIB + 1024 * SWT_MIB);
    ck_assert_uint_gt(probe_value(&r, "meminfo_free"), 1024 * SWT_MIB);
}
END_TEST

START_TEST(meminfo_physical_is_the_device)
{
    const char *env[] = {"SIMGPU_MEM=16MiB", "SPILLWAY_HOST_BUDGET=1GiB", NULL};
    const char *argv[] = {swt_path("SWT_PROBE"), NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_status(&r, 0);
    ck_assert_uint_eq(probe_value(&r, "meminfo_total"), 16 * SWT_MIB);
}
END_TEST

Suite *options_suite(void)
{
    Suite *s = suite_create("options");
    TCase *bad = tcase_create("bad-values");
    tcase_set_timeout(bad, 60);
    tcase_add_test(bad, bad_gpu_budget_stops_the_program);
    tcase_add_test(bad, bad_host_budget_stops_the_program);
    tcase_add_test(bad, bad_min_alloc_stops_the_program);
    tcase_add_test(bad, bad_chunk_stops_the_program);
    tcase_add_test(bad, zero_chunk_stops_the_program);
    tcase_add_test(bad, bad_disable_stops_the_program);
    tcase_add_test(bad, bad_log_level_stops_the_program);
    tcase_add_test(bad, bad_meminfo_stops_the_program);
    tcase_add_test(bad, bad_policy_stops_the_program);
    tcase_add_test(bad, bad_prefetch_bytes_stops_the_program);
    tcase_add_test(bad, percentage_over_100_stops_the_program);
    tcase_add_test(bad, overlong_path_stops_the_program);
    tcase_add_test(bad, unknown_variable_suggests_the_closest_name);
    tcase_add_test(bad, unknown_variable_warning_ends_its_line);
    suite_add_tcase(s, bad);

    TCase *log = tcase_create("logging");
    tcase_set_timeout(log, 60);
    tcase_add_test(log, log_info_prints_every_effective_option);
    tcase_add_test(log, log_warn_prints_nothing_on_a_clean_run);
    tcase_add_test(log, log_file_takes_the_messages);
    tcase_add_test(log, log_file_takes_the_option_list);
    suite_add_tcase(s, log);

    TCase *dis = tcase_create("disable");
    tcase_set_timeout(dis, 60);
    tcase_add_test(dis, disable_passes_the_oversized_model_to_the_driver);
    tcase_add_test(dis, disable_runs_a_fitting_model_untouched);
    suite_add_tcase(s, dis);

    TCase *eff = tcase_create("effects");
    tcase_set_timeout(eff, 60);
    tcase_add_test(eff, percentage_budget_is_of_device_memory);
    tcase_add_test(eff, min_alloc_leaves_smaller_allocations_to_the_driver);
    tcase_add_test(eff, min_alloc_warns_where_untracked_memory_passes_the_budget);
    tcase_add_test(eff, exhausted_host_budget_gives_out_of_memory);
    tcase_add_test(eff, meminfo_virtual_adds_the_host_budget);
    tcase_add_test(eff, meminfo_physical_is_the_device);
    suite_add_tcase(s, eff);
    return s;
}

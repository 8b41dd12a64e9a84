/*
 * test_process.c: spillway as part of a process, apart from allocations.
 *
 *   - Nothing before the first CUDA call (init.c): a program that never
 *     uses CUDA, preloaded, gets no thread, no driver, no file, no output.
 *   - The live stats file (stats.c) is made in SPILLWAY_STATS_DIR, never
 *     in the user's default directory, and removed at exit.
 *   - libspillway exports only what it interposes: dlsym and cu* names
 *     (spillway.map), checked with nm -D.
 *   - The stats file is a mirror: scribbling on it changes no budget.
 *   - fork (fork.c, stats.c): a child that calls CUDA gets the driver's
 *     own answers, promptly, even when fork found spillway's locks held;
 *     its exit leaves the parent's report and stats file alone; a child
 *     that execs a CUDA program, still preloaded, starts clean: its own
 *     stats, report and budget, and the parent undisturbed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swt.h"

START_TEST(program_without_cuda_gets_no_thread_and_no_driver)
{
    const char *argv[] = {swt_path("SWT_NOCUDA"), NULL};
    const char *env[] = {"SPILLWAY_LOG=debug", NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_status(&r, 0);
    ck_assert_msg(swt_file_has(r.out, "nocuda: threads=1 driver=0"), "%s", swt_describe(&r));
    char *err = swt_slurp(r.err);
    ck_assert_msg(err && err[0] == '\0', "spillway wrote: %s", swt_describe(&r));
    free(err);
}
END_TEST

START_TEST(program_without_cuda_leaves_no_file)
{
    const char *argv[] = {swt_path("SWT_NOCUDA"), NULL};
    swt_run_t r;
    swt_run(&r, true, NULL, argv);
    swt_assert_status(&r, 0);
    ck_assert_int_eq(swt_dir_entries(r.stats_dir), 0);
    ck_assert_msg(!swt_exists(r.sw_report), "report from a program without CUDA: %s",
                  swt_describe(&r));
    ck_assert_msg(!swt_exists(r.sg_report), "the driver was loaded: %s", swt_describe(&r));
}
END_TEST

START_TEST(bin_true_runs_untouched)
{
    const char *argv[] = {"/bin/true", NULL};
    swt_run_t r;
    swt_run(&r, true, NULL, argv);
    swt_assert_status(&r, 0);
    ck_assert_int_eq(swt_dir_entries(r.stats_dir), 0);
    ck_assert_msg(!swt_exists(r.sw_report), "%s", swt_describe(&r));
    char *err = swt_slurp(r.err);
    ck_assert_msg(err && err[0] == '\0', "%s", swt_describe(&r));
    free(err);
}
END_TEST

static uint64_t probe_flag(const swt_run_t *r, const char *key)
{
    char *out = swt_slurp(r->out);
    ck_assert_ptr_nonnull(out);
    char pat[64];
    snprintf(pat, sizeof pat, "%s=", key);
    const char *p = strstr(out, pat);
    ck_assert_msg(p != NULL, "no %s: %s", key, swt_describe(r));
    uint64_t v = strtoull(p + strlen(pat), NULL, 10);
    free(out);
    return v;
}

START_TEST(stats_file_lives_in_the_stats_dir)
{
    const char *argv[] = {swt_path("SWT_PROBE"), NULL};
    swt_run_t r;
    swt_run(&r, true, NULL, argv);
    swt_assert_status(&r, 0);
    ck_assert_msg(probe_flag(&r, "own_stats") == 1, "no stats file in SPILLWAY_STATS_DIR: %s",
                  swt_describe(&r));
}
END_TEST

START_TEST(stats_file_never_goes_to_the_default_dir)
{
    const char *argv[] = {swt_path("SWT_PROBE"), NULL};
    swt_run_t r;
    swt_run(&r, true, NULL, argv);
    swt_assert_status(&r, 0);
    ck_assert_msg(probe_flag(&r, "default_stats") == 0,
                  "stats file made in the user's default directory although "
                  "SPILLWAY_STATS_DIR is set: %s",
                  swt_describe(&r));
}
END_TEST

START_TEST(stats_file_is_removed_at_exit)
{
    const char *argv[] = {swt_path("SWT_PROBE"), NULL};
    swt_run_t r;
    swt_run(&r, true, NULL, argv);
    swt_assert_status(&r, 0);
    ck_assert_int_eq(swt_dir_entries(r.stats_dir), 0);
    ck_assert_msg(swt_exists(r.sw_report), "no exit report: %s", swt_describe(&r));
}
END_TEST

/* The exports are the interposed names, unversioned (dlsym, cu*), and the
 * control API (include/spillway.h), each under the version SPILLWAY_1,
 * whose node name nm shows as an absolute symbol. */
START_TEST(only_dlsym_cu_and_api_names_are_exported)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' -D --defined-only '%s'", swt_path("SWT_NM"),
             swt_path("SWT_LIBSPILLWAY"));
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "cannot run %s", cmd);
    char line[1024];
    int cu = 0, api = 0, total = 0;
    bool has_dlsym = false;
    while (fgets(line, sizeof line, p)) {
        char addr[64], type[8], name[512];
        if (sscanf(line, "%63s %7s %511s", addr, type, name) != 3)
            continue;
        total++;
        if (strcmp(name, "SPILLWAY_1") == 0 && strcmp(type, "A") == 0)
            continue;
        if (strncmp(name, "spillway_", 9) == 0) {
            ck_assert_msg(strstr(name, "@@SPILLWAY_1") != NULL, "%s is not versioned SPILLWAY_1",
                          name);
            api++;
            continue;
        }
        ck_assert_msg(strchr(name, '@') == NULL, "interposed name %s carries a version", name);
        if (strcmp(name, "dlsym") == 0) {
            has_dlsym = true;
            continue;
        }
        ck_assert_msg(strncmp(name, "cu", 2) == 0, "unexpected export %s", name);
        cu++;
    }
    int st = pclose(p);
    ck_assert_msg(st == 0, "%s failed (%d)", cmd, st);
    ck_assert_msg(has_dlsym, "dlsym is not exported");
    ck_assert_msg(cu >= 10, "only %d cu* exports in %d", cu, total);
    ck_assert_int_eq(api, 6);
}
END_TEST

/* Copies, memsets and launches the runtime gets from cuGetProcAddress are
 * spillway's wrappers (they hold the gate, or scan); the run without
 * spillway is the control. */
START_TEST(work_entry_points_route_to_spillway)
{
    const char *argv[] = {swt_path("SWT_ROUTES"), NULL};
    swt_run_t r;
    swt_run(&r, true, NULL, argv);
    swt_assert_status(&r, 0);
    swt_run(&r, false, NULL, argv);
    swt_assert_status(&r, 1);
    ck_assert_msg(swt_file_has(r.out, "cuMemsetD16 (per-thread) comes from"), "%s",
                  swt_describe(&r));
}
END_TEST

/* Any process of the user can write the stats file; budgets are decided
 * from process memory. 8 MiB, then zeros over every counter, then 16 MiB
 * more, under a 16 MiB budget: the device (simgpu) never holds more than
 * the budget plus spillway's own small buffers. */
START_TEST(scribbling_on_the_stats_file_changes_no_budget)
{
    const char *env[] = {"SIMGPU_MEM=64MiB", "SPILLWAY_GPU_BUDGET=16MiB", "SPILLWAY_CHUNK=2MiB",
                         "SPILLWAY_PREFETCH_BYTES=0", NULL};
    const char *argv[] = {swt_path("SWT_PROC"), "scribble", NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_status(&r, 0);
    swt_assert_clean(&r);
    ck_assert_msg(swt_file_has(r.out, "scribbled=1"), "%s", swt_describe(&r));
    ck_assert_msg(swt_sg(&r, "device_bytes_peak") <= 17 * SWT_MIB,
                  "device peak %llu bytes under a 16 MiB budget: %s",
                  (unsigned long long)swt_sg(&r, "device_bytes_peak"), swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "device_bytes_peak") <= 16 * SWT_MIB, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "demotions") > 0 || swt_sw(&r, "host_bytes_peak") >= 8 * SWT_MIB,
                  "nothing went to the host: %s", swt_describe(&r));
}
END_TEST

/* What the driver answers a fork child that uses CUDA after its parent
 * did, with spillway and without. */
static const char child_line[] = "child: alloc=3 range=3 sync=3 free=3";

START_TEST(fork_child_gets_the_drivers_answers)
{
    const char *argv[] = {swt_path("SWT_PROC"), "fork", NULL};
    swt_run_t r;
    swt_run(&r, false, NULL, argv);
    swt_assert_status(&r, 0);
    ck_assert_msg(swt_file_has(r.out, child_line), "without spillway: %s", swt_describe(&r));
    swt_run(&r, true, NULL, argv);
    swt_assert_status(&r, 0);
    ck_assert_msg(swt_file_has(r.out, child_line), "%s", swt_describe(&r));
    swt_assert_clean(&r);
}
END_TEST

START_TEST(fork_child_leaves_the_parents_report_and_stats_file)
{
    const char *argv[] = {swt_path("SWT_PROC"), "fork", NULL};
    swt_run_t r;
    swt_run(&r, true, NULL, argv);
    swt_assert_status(&r, 0);
    ck_assert_msg(probe_flag(&r, "parent_stats") == 1,
                  "the child's exit removed the parent's stats file: %s", swt_describe(&r));
    ck_assert_msg(probe_flag(&r, "report_before_exit") == 0,
                  "the child's exit wrote SPILLWAY_REPORT: %s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "pid") == probe_flag(&r, "parent_pid"),
                  "SPILLWAY_REPORT is the child's: %s", swt_describe(&r));
    /* The parent's figures: its two buffers, and every one freed. */
    ck_assert_uint_eq(swt_sw(&r, "tracked_allocs_peak"), 2);
    ck_assert_uint_eq(swt_sw(&r, "tracked_allocs"), 0);
}
END_TEST

/* Under a budget each of the other thread's allocations demotes, holding
 * the gate and then the stats lock: fork must take them in that order too,
 * or parent and child both hang. */
START_TEST(fork_while_another_thread_allocates_never_hangs_the_child)
{
    const char *env[] = {"SPILLWAY_GPU_BUDGET=6MiB", "SPILLWAY_CHUNK=2MiB",
                         "SPILLWAY_PREFETCH_BYTES=0", NULL};
    const char *argv[] = {swt_path("SWT_PROC"), "forkrace", NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_status(&r, 0);
    swt_assert_clean(&r);
    ck_assert_msg(swt_sw(&r, "demotions") > 0, "no demotion raced with fork: %s",
                  swt_describe(&r));
}
END_TEST

/* A child that execs a CUDA program, still preloaded, is a process of its
 * own: its spillway starts from nothing (its own budget, stats file and
 * report, none of the parent's allocations), works (its memory demoted
 * under the budget, its bytes right), and leaves the parent's memory,
 * stats file and report alone. Under a 6 MiB budget the parent holds
 * 12 MiB and the child 8 MiB, so both demote. */
START_TEST(fork_exec_child_starts_clean)
{
    const char *env[] = {"SPILLWAY_GPU_BUDGET=6MiB", "SPILLWAY_CHUNK=2MiB",
                         "SPILLWAY_PREFETCH_BYTES=0", NULL};
    const char *argv[] = {swt_path("SWT_PROC"), "forkexec", NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_status(&r, 0);
    swt_assert_clean(&r);
    ck_assert_msg(swt_file_has(r.out, "fresh: ok stats=1"), "%s", swt_describe(&r));
    ck_assert_msg(swt_file_has(r.out, "parent_data=ok"), "%s", swt_describe(&r));
    ck_assert_msg(probe_flag(&r, "parent_stats") == 1, "%s", swt_describe(&r));
    /* The parent's report: its own three buffers, nothing of the child. */
    ck_assert_uint_eq(swt_sw(&r, "pid"), probe_flag(&r, "parent_pid"));
    ck_assert_uint_eq(swt_sw(&r, "tracked_allocs_peak"), 3);
    ck_assert_msg(swt_sw(&r, "demotions") > 0, "%s", swt_describe(&r));
    /* The child's: two buffers, its own demotions, a clean simgpu. */
    swt_run_t c = r;
    ck_assert_int_lt(snprintf(c.sw_report, sizeof c.sw_report, "%s.child", r.sw_report),
                     (int)sizeof c.sw_report);
    ck_assert_int_lt(snprintf(c.sg_report, sizeof c.sg_report, "%s.child", r.sg_report),
                     (int)sizeof c.sg_report);
    ck_assert_msg(swt_exists(c.sw_report), "the exec'd child wrote no report: %s",
                  swt_describe(&r));
    ck_assert_uint_eq(swt_sw(&c, "pid"), probe_flag(&r, "child_pid"));
    ck_assert_uint_eq(swt_sw(&c, "tracked_allocs_peak"), 2);
    ck_assert_uint_eq(swt_sw(&c, "tracked_allocs"), 0);
    ck_assert_msg(swt_sw(&c, "demotions") > 0, "the child's budget did nothing: %s",
                  swt_describe(&r));
    swt_assert_clean(&c);
    /* Both stats files removed at their exits. */
    ck_assert_int_eq(swt_dir_entries(r.stats_dir), 0);
}
END_TEST

Suite *process_suite(void)
{
    Suite *s = suite_create("process");
    TCase *tc = tcase_create("footprint");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, program_without_cuda_gets_no_thread_and_no_driver);
    tcase_add_test(tc, program_without_cuda_leaves_no_file);
    tcase_add_test(tc, bin_true_runs_untouched);
    tcase_add_test(tc, stats_file_lives_in_the_stats_dir);
    tcase_add_test(tc, stats_file_never_goes_to_the_default_dir);
    tcase_add_test(tc, stats_file_is_removed_at_exit);
    tcase_add_test(tc, only_dlsym_cu_and_api_names_are_exported);
    tcase_add_test(tc, work_entry_points_route_to_spillway);
    tcase_add_test(tc, scribbling_on_the_stats_file_changes_no_budget);
    tcase_add_test(tc, fork_child_gets_the_drivers_answers);
    tcase_add_test(tc, fork_child_leaves_the_parents_report_and_stats_file);
    tcase_add_test(tc, fork_while_another_thread_allocates_never_hangs_the_child);
    tcase_add_test(tc, fork_exec_child_starts_clean);
    suite_add_tcase(s, tc);
    return s;
}

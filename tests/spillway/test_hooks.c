/*
 * test_hooks.c: driver entry points whose bookkeeping spillway must keep
 * right, each with a small program of this directory:
 *   jit.c      module and library unloads end the cached parameter
 *              layouts of their kernels (handles are recycled);
 *   capture.c  every way a capture begins and ends is counted, and a
 *              capture beginning on another thread is never broken by a
 *              move's synchronization;
 *   memops.c   stream memory operations hold the gate like copies do.
 */
#include "swt.h"

#include <string.h>

/* The GPU budget and policy that make the capture programs move chunks:
 * one 8 MiB chunk fits, prefetch off, promotion whenever there is room. */
#define MOVER_ENV "SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=8MiB", "SPILLWAY_POLICY=lru", \
                  "SPILLWAY_PREFETCH_BYTES=0"

static void assert_ok(const swt_run_t *r, const char *line)
{
    swt_assert_status(r, 0);
    ck_assert_msg(swt_file_has(r->out, line), "%s", swt_describe(r));
    swt_assert_clean(r);
}

static void run_jit(const char *mode)
{
    const char *argv[] = {swt_path("SWT_JIT"), mode, NULL};
    swt_run_t r;
    swt_run(&r, true, NULL, argv);
    assert_ok(&r, "jit: ok");
    /* The case the test is about happened: a kernel got the handle the
     * previous, unloaded one had. */
    ck_assert_msg(!swt_file_has(r.out, "recycled=0"), "no handle recycled: %s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "tracked_allocs_peak") == 2, "%s", swt_describe(&r));
}

START_TEST(module_unload_forgets_layouts)
{
    run_jit("module");
}
END_TEST

START_TEST(library_unload_forgets_layouts)
{
    run_jit("library");
}
END_TEST

START_TEST(modules_and_libraries_share_recycled_handles)
{
    run_jit("both");
}
END_TEST

static void run_capture(swt_run_t *r, const char *mode, const char *extra)
{
    const char *env[] = {MOVER_ENV, extra, NULL};
    const char *argv[] = {swt_path("SWT_CAPTURE"), mode, NULL};
    swt_run(r, true, env, argv);
}

/* A capture begun with cuStreamBeginCaptureToGraph counts as a capture:
 * the launch on a host chunk inside it is not promoted (that would
 * synchronize and invalidate it), and the count is right for the next. */
START_TEST(capture_to_graph_is_a_capture)
{
    swt_run_t r;
    run_capture(&r, "to-graph", "SIMGPU_JITTER=0");
    assert_ok(&r, "capture: ok");
    ck_assert_msg(swt_sw(&r, "promotions") == 0, "promoted inside a capture: %s",
                  swt_describe(&r));
}
END_TEST

/* An end that fails but leaves no capture (an unjoined fork) ends the
 * capture for spillway too: the next launch outside one may promote. */
START_TEST(failed_end_that_ends_the_capture_uncounts_it)
{
    swt_run_t r;
    run_capture(&r, "unjoined", "SIMGPU_FAIL=cuStreamEndCapture:1");
    assert_ok(&r, "capture: ok");
    ck_assert_msg(swt_sw(&r, "promotions") >= 1, "nothing moves after the failed end: %s",
                  swt_describe(&r));
}
END_TEST

START_TEST(capture_on_another_thread_is_never_broken)
{
    swt_run_t r;
    run_capture(&r, "race", "SIMGPU_JITTER=20");
    assert_ok(&r, "capture: ok");
    ck_assert_msg(swt_sw(&r, "promotions") > 0, "no move to race with: %s", swt_describe(&r));
}
END_TEST

START_TEST(stream_memory_operations_are_gated)
{
    const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=4MiB", "SPILLWAY_POLICY=lru",
                         "SPILLWAY_PREFETCH_BYTES=0", "SIMGPU_JITTER=50", NULL};
    const char *argv[] = {swt_path("SWT_MEMOPS"), NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    assert_ok(&r, "memops: ok");
    ck_assert_msg(swt_sw(&r, "demotions") > 10 && swt_sw(&r, "promotions") > 10,
                  "the buffer did not keep moving: %s", swt_describe(&r));
    ck_assert_msg(swt_calls(&r, "cuStreamBatchMemOp") > 0, "%s", swt_describe(&r));
}
END_TEST

Suite *hooks_suite(void)
{
    Suite *s = suite_create("hooks");
    TCase *unload = tcase_create("unload");
    tcase_set_timeout(unload, 120);
    tcase_add_test(unload, module_unload_forgets_layouts);
    tcase_add_test(unload, library_unload_forgets_layouts);
    tcase_add_test(unload, modules_and_libraries_share_recycled_handles);
    suite_add_tcase(s, unload);
    TCase *capture = tcase_create("capture");
    tcase_set_timeout(capture, 180);
    tcase_add_test(capture, capture_to_graph_is_a_capture);
    tcase_add_test(capture, failed_end_that_ends_the_capture_uncounts_it);
    tcase_add_test(capture, capture_on_another_thread_is_never_broken);
    suite_add_tcase(s, capture);
    TCase *memops = tcase_create("memops");
    tcase_set_timeout(memops, 180);
    tcase_add_test(memops, stream_memory_operations_are_gated);
    suite_add_tcase(s, memops);
    return s;
}

/*
 * test_hooks.c: driver entry points whose bookkeeping spillway must keep
 * right, each with a small program of this directory:
 *   jit.c      module and library unloads end the cached parameter
 *              layouts of their kernels (handles are recycled);
 *   capture.c  every way a capture begins and ends is counted, and a
 *              capture beginning on another thread is never broken by a
 *              move's synchronization;
 *   memops.c   stream memory operations hold the gate like copies do;
 *   tma.c      TMA descriptors the encode calls made are recognised in
 *              launch arguments, and their tensors learned from;
 *   retarget.c the descriptor mechanism a rewriter uses, on its own;
 *   ordered.c  stream-ordered frees of tracked memory wait for their
 *              stream, answer errors as the driver would, and make room.
 */
#include "swt.h"

#include <stdio.h>
#include <stdlib.h>
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

static void run_ordered(swt_run_t *r, const char *mode, const char *extra)
{
    const char *env[] = {"SPILLWAY_MIN_ALLOC=1MiB", extra, NULL};
    const char *argv[] = {swt_path("SWT_ORDERED"), mode, NULL};
    swt_run(r, true, env, argv);
    assert_ok(r, "ordered: ok");
}

/* The stream is slowed (jitter) so that the kernel reading the buffer is
 * still queued when it is freed and more memory is asked for. */
START_TEST(stream_ordered_free_waits_for_its_stream)
{
    swt_run_t r;
    run_ordered(&r, "order", "SIMGPU_JITTER=3000");
    ck_assert_msg(swt_sw(&r, "tracked_allocs_peak") == 2, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "ordered_frees_deferred") == 2, "%s", swt_describe(&r));
}
END_TEST

START_TEST(stream_ordered_free_errors_are_the_drivers)
{
    swt_run_t r;
    run_ordered(&r, "errors", "SIMGPU_JITTER=0");
    ck_assert_msg(swt_sw(&r, "ordered_frees_deferred") == 2, "%s", swt_describe(&r));
}
END_TEST

/* 24 MiB holds the window, the live buffer and one scratch buffer: each
 * new scratch buffer needs the last one's memory, and must wait for it
 * rather than demote the live buffer. */
START_TEST(stream_ordered_free_makes_room_before_demotion_does)
{
    swt_run_t r;
    const char *env[] = {"SPILLWAY_MIN_ALLOC=1MiB", "SPILLWAY_GPU_BUDGET=24MiB", "SIMGPU_JITTER=500",
                         NULL};
    const char *argv[] = {swt_path("SWT_ORDERED"), "reuse", NULL};
    swt_run(&r, true, env, argv);
    assert_ok(&r, "ordered: ok");
    ck_assert_msg(swt_sw(&r, "ordered_frees_deferred") == 11, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "demotions") == 0, "live memory demoted: %s", swt_describe(&r));
}
END_TEST

/* Memory another process may import, or the decompression engine use,
 * is the driver's: of three pools' buffers only the plain pool's is
 * tracked. */
START_TEST(exportable_and_decompression_pools_are_the_drivers)
{
    swt_run_t r;
    run_ordered(&r, "pools", "SIMGPU_JITTER=0");
    ck_assert_msg(swt_sw(&r, "tracked_allocs_peak") == 1, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "passthrough_bytes_pool") == 8 * 1024 * 1024, "%s",
                  swt_describe(&r));
}
END_TEST

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

/* The weights (24 MiB) over a budget that holds two of six. */
#define TMA_ENV "SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=8MiB"

/* The checksum line of a run's output; aborts the test when missing. */
static void tma_checksum(const swt_run_t *r, char *out, size_t len)
{
    char *text = swt_slurp(r->out);
    const char *at = text ? strstr(text, "checksum=") : NULL;
    ck_assert_msg(at != NULL, "no checksum: %s", swt_describe(r));
    snprintf(out, len, "%.*s", (int)strcspn(at, "\n"), at);
    free(text);
}

/* What the program computes without spillway: the answers to match. */
static void tma_plain(char *sum, size_t len)
{
    const char *argv[] = {swt_path("SWT_TMA"), "seen", NULL};
    const char *env[] = {TMA_ENV, NULL};
    swt_run_t r;
    swt_run(&r, false, env, argv);
    swt_assert_match(&r);
    tma_checksum(&r, sum, len);
}

/* Each launch passes one descriptor, made by cuTensorMapEncodeTiled: all
 * are recognised, so the weights the budget left on the host are seen
 * touched (no argument word points at them), and the answers are those
 * of the plain run. */
START_TEST(tma_descriptors_made_by_encode_are_recognised)
{
    char plain[64], sum[64];
    tma_plain(plain, sizeof plain);
    const char *argv[] = {swt_path("SWT_TMA"), "seen", NULL};
    const char *env[] = {TMA_ENV, NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    tma_checksum(&r, sum, sizeof sum);
    ck_assert_str_eq(sum, plain);
    ck_assert_msg(swt_sw(&r, "descriptors_recognised") == 6 * 4, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "launches_touching_host") > 0, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "tracked_allocs_peak") == 6, "%s", swt_describe(&r));
}
END_TEST

/* Descriptors whose bytes spillway's table does not hold (pushed out by
 * 4096 newer ones) are not recognised, and are read where they point. */
START_TEST(tma_descriptors_not_in_the_table_are_ignored)
{
    char plain[64], sum[64];
    tma_plain(plain, sizeof plain);
    const char *argv[] = {swt_path("SWT_TMA"), "unseen", NULL};
    const char *env[] = {TMA_ENV, NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    tma_checksum(&r, sum, sizeof sum);
    ck_assert_str_eq(sum, plain);
    ck_assert_msg(swt_sw(&r, "descriptors_recognised") == 0, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "launches_touching_host") == 0, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "tracked_allocs_peak") == 6, "%s", swt_describe(&r));
}
END_TEST

/* With a window that holds a weight (16 MiB budget: 4 MiB of window), the
 * weights on the host are streamed once the loop is learned: each launch
 * gets a copy of its descriptor re-made for the window copy. Kernels then
 * read less in place (simgpu's count of host bytes kernels read) than
 * with the remapping window, which cannot follow a descriptor. */
static uint64_t tma_in_place(const char *rewrite, uint64_t *rewritten)
{
    char plain[64], sum[64];
    tma_plain(plain, sizeof plain);
    const char *argv[] = {swt_path("SWT_TMA"), "seen", NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=16MiB", rewrite, NULL};
    swt_run_t r;
    swt_run(&r, true, env, argv);
    swt_assert_match(&r);
    tma_checksum(&r, sum, sizeof sum);
    ck_assert_str_eq(sum, plain);
    *rewritten = swt_sw(&r, "rewritten_launches");
    return swt_sg(&r, "kernel_bytes_host");
}

START_TEST(tma_descriptors_are_retargeted_to_window_copies)
{
    uint64_t rewritten, off_rewritten;
    uint64_t streamed = tma_in_place("SPILLWAY_REWRITE=1", &rewritten);
    uint64_t remapped = tma_in_place("SPILLWAY_REWRITE=0", &off_rewritten);
    ck_assert_msg(rewritten > 0 && off_rewritten == 0, "rewritten launches: %llu, off: %llu",
                  (unsigned long long)rewritten, (unsigned long long)off_rewritten);
    ck_assert_msg(streamed < remapped, "read in place: %llu streaming, %llu remapping",
                  (unsigned long long)streamed, (unsigned long long)remapped);
}
END_TEST

START_TEST(tma_retargeted_copy_reads_the_new_address)
{
    const char *argv[] = {swt_path("SWT_RETARGET"), NULL};
    swt_run_t r;
    swt_run(&r, false, NULL, argv);
    assert_ok(&r, "retarget: ok");
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
    TCase *tma = tcase_create("tma");
    tcase_set_timeout(tma, 180);
    tcase_add_test(tma, tma_descriptors_made_by_encode_are_recognised);
    tcase_add_test(tma, tma_descriptors_not_in_the_table_are_ignored);
    tcase_add_test(tma, tma_retargeted_copy_reads_the_new_address);
    tcase_add_test(tma, tma_descriptors_are_retargeted_to_window_copies);
    suite_add_tcase(s, tma);
    TCase *ordered = tcase_create("ordered");
    tcase_set_timeout(ordered, 120);
    tcase_add_test(ordered, stream_ordered_free_waits_for_its_stream);
    tcase_add_test(ordered, stream_ordered_free_errors_are_the_drivers);
    tcase_add_test(ordered, stream_ordered_free_makes_room_before_demotion_does);
    tcase_add_test(ordered, exportable_and_decompression_pools_are_the_drivers);
    suite_add_tcase(s, ordered);
    return s;
}

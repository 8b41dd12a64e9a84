/*
 * test_inject.c: a driver call failing in the middle of a demotion.
 *
 * A demotion (vmm.c, sw_vmm_move) is: cuCtxSynchronize (the safety rule),
 * cuMemCreate (the new handle), cuMemMap + cuMemSetAccess (onto the
 * staging range), cuMemcpyDtoDAsync + cuStreamSynchronize (the copy),
 * cuMemUnmap (staging, then the chunk), cuMemMap + cuMemSetAccess (the new
 * handle at the chunk's address). simgpu's SIMGPU_FAIL=func:N makes the
 * N-th call of func fail with its natural error. For each of these
 * functions, every N from 1 to the number of calls a clean run makes is
 * tried (so every step of every demotion fails once, and so do the calls
 * around them), and each run must end one of two ways:
 *   - result=match (spillway gave up the move and the data stayed where
 *     it was, or found another way), or
 *   - exit 2 with the program's "CUDA error" message (the failure reached
 *     the application as a driver error),
 * never a mismatch, never a crash (a signal or another status), and never
 * a hazard or fault in simgpu's report: a failed step must not unmap
 * memory that queued work still uses.
 *
 * The models:
 *   layers   5 layers of 4 MiB on an 8 MiB device, one step: demotions
 *            made by the driver's out-of-memory answers;
 *   experts  16 experts of 1 MiB (in 2 MiB chunks) under a 12 MiB budget,
 *            30 steps, learned policy without the window: popular experts
 *            are promoted with their host copies kept, and demoted by a
 *            remap when their fingerprint is unchanged, so the
 *            fingerprint's waits and the remap's calls fail too.
 *   window   6 layers of 16 MiB under a 48 MiB budget, 32 MiB of it the
 *            prefetch window, 4 steps: a commit queues every copy into the
 *            window's slots before it remaps any address, so a failed
 *            remap of the slot's previous chunk must put that chunk's
 *            bytes back (remap.c, restore).
 *   lru      5 layers of 4 MiB under an 8 MiB budget, LRU, 2 steps: each
 *            launch demotes a victim and promotes its layer, and after
 *            the first moves both take handles earlier moves released
 *            (pool.c), so every step fails with a pooled handle in hand.
 *            A run that ends well has released every handle it made:
 *            none is left in the pool, none leaked by a failed move.
 */
#include <stdio.h>
#include <string.h>

#include "swt.h"

typedef enum { LAYERS, EXPERTS, WINDOW, LRU } model_t;

/* Runs a model with one SIMGPU_FAIL entry (or none). */
static void run_model(swt_run_t *r, model_t m, const char *jitter, const char *fail)
{
    const char *layers[] = {swt_path("SWT_MLP"), "--layers", "5", "--width", "1024", "--steps",
                            "1", NULL};
    const char *experts[] = {swt_path("SWT_MOE"), "--experts", "16", "--width", "512", "--steps",
                             "30", NULL};
    const char *fail_entry = fail ? fail : "SIMGPU_FAIL";
    const char *layers_env[] = {"SIMGPU_MEM=8MiB", jitter, fail_entry, NULL};
    const char *experts_env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=12MiB",
                                 "SPILLWAY_MIN_ALLOC=1MiB", "SPILLWAY_PREFETCH_BYTES=0",
                                 jitter, fail_entry, NULL};
    const char *window[] = {swt_path("SWT_MLP"), "--layers", "6", "--width", "2048", "--steps",
                            "4", NULL};
    const char *window_env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=48MiB",
                                "SPILLWAY_CHUNK=16MiB", "SPILLWAY_PREFETCH_BYTES=32MiB",
                                jitter, fail_entry, NULL};
    const char *lru[] = {swt_path("SWT_MLP"), "--layers", "5", "--width", "1024", "--steps",
                         "2", NULL};
    const char *lru_env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=8MiB",
                             "SPILLWAY_POLICY=lru", jitter, fail_entry, NULL};
    const char **const argv[] = {[LAYERS] = layers, [EXPERTS] = experts, [WINDOW] = window,
                                 [LRU] = lru};
    const char **const env[] = {[LAYERS] = layers_env, [EXPERTS] = experts_env,
                                [WINDOW] = window_env, [LRU] = lru_env};
    swt_run(r, true, env[m], argv[m]);
}

/* The outcome rule above, for one run. */
static void assert_safe_outcome(const swt_run_t *r, const char *fail)
{
    ck_assert_msg(r->exited, "%s: crashed: %s", fail, swt_describe(r));
    ck_assert_msg(r->status != 1 && !swt_file_has(r->out, "result=mismatch"), "%s: mismatch: %s",
                  fail, swt_describe(r));
    ck_assert_msg(r->status == 0 || r->status == 2, "%s: exit status %d: %s", fail, r->status,
                  swt_describe(r));
    if (r->status == 0)
        ck_assert_msg(swt_file_has(r->out, "result=match"), "%s: %s", fail, swt_describe(r));
    else
        ck_assert_msg(swt_file_has(r->err, "CUDA error"), "%s: exit 2 without a CUDA error: %s",
                      fail, swt_describe(r));
    ck_assert_msg(swt_exists(r->sg_report), "%s: no simgpu report: %s", fail, swt_describe(r));
    ck_assert_msg(swt_sg(r, "hazards") == 0, "%s: hazard: %s", fail, swt_describe(r));
    ck_assert_msg(swt_sg(r, "faults") == 0, "%s: fault: %s", fail, swt_describe(r));
}

/* How many times a clean run calls fn; the clean run must demote. */
static uint64_t clean_calls(model_t m, const char *fn, const char *jitter)
{
    swt_run_t r;
    run_model(&r, m, jitter, NULL);
    swt_assert_match(&r);
    ck_assert_msg(swt_sw(&r, "demotions") > 0, "the clean run does not demote: %s",
                  swt_describe(&r));
    uint64_t n = swt_calls(&r, fn);
    ck_assert_msg(n > 0, "a clean run never calls %s: %s", fn, swt_describe(&r));
    return n;
}

/* Fails each call of fn in turn. Returns how many runs counted a failed
 * move. */
static int sweep(model_t m, const char *fn, const char *jitter)
{
    uint64_t n = clean_calls(m, fn, jitter);
    int with_failed_moves = 0;
    for (uint64_t i = 1; i <= n; i++) {
        char fail[128];
        snprintf(fail, sizeof fail, "SIMGPU_FAIL=%s:%llu", fn, (unsigned long long)i);
        swt_run_t r;
        run_model(&r, m, jitter, fail);
        assert_safe_outcome(&r, fail);
        /* The failed creation, if that is the one, made no handle. */
        uint64_t made = swt_calls(&r, "cuMemCreate") - (strcmp(fn, "cuMemCreate") == 0);
        if (m == LRU && r.status == 0)
            ck_assert_msg(swt_calls(&r, "cuMemRelease") == made,
                          "%s: %llu handles made, %llu released: %s", fail,
                          (unsigned long long)made,
                          (unsigned long long)swt_calls(&r, "cuMemRelease"), swt_describe(&r));
        uint64_t fm = 0;
        if (swt_json_u64(r.sw_report, "failed_moves", &fm) && fm > 0)
            with_failed_moves++;
    }
    return with_failed_moves;
}

/* Every step below is part of a move, so failing it must abandon at least
 * one move somewhere in the sweep (cuCtxSynchronize is the exception: a
 * failed safety sync means no move is tried at all). */
#define SWEEP_TEST(name, fn, jitter, moves_fail)                                  \
    START_TEST(name)                                                              \
    {                                                                             \
        int fm = sweep(LAYERS, fn, jitter);                                       \
        if (moves_fail)                                                           \
            ck_assert_msg(fm > 0, "no failed %s ever counted in failed_moves", fn); \
    }                                                                             \
    END_TEST

SWEEP_TEST(failed_handle_creation_loses_no_data, "cuMemCreate", "SIMGPU_JITTER=0", true)
SWEEP_TEST(failed_map_loses_no_data, "cuMemMap", "SIMGPU_JITTER=0", true)
SWEEP_TEST(failed_access_grant_loses_no_data, "cuMemSetAccess", "SIMGPU_JITTER=0", true)
SWEEP_TEST(failed_unmap_loses_no_data, "cuMemUnmap", "SIMGPU_JITTER=0", true)
SWEEP_TEST(failed_copy_loses_no_data, "cuMemcpyDtoDAsync", "SIMGPU_JITTER=0", true)
SWEEP_TEST(failed_copy_wait_loses_no_data, "cuStreamSynchronize", "SIMGPU_JITTER=0", true)
SWEEP_TEST(failed_safety_sync_loses_no_data, "cuCtxSynchronize", "SIMGPU_JITTER=0", false)
/* With random delays, for the steps where timing matters: those that
 * wait for work or unmap under it. */
SWEEP_TEST(failed_unmap_loses_no_data_under_jitter, "cuMemUnmap", "SIMGPU_JITTER=200", true)
SWEEP_TEST(failed_copy_loses_no_data_under_jitter, "cuMemcpyDtoDAsync", "SIMGPU_JITTER=200",
           true)
SWEEP_TEST(failed_copy_wait_loses_no_data_under_jitter, "cuStreamSynchronize",
           "SIMGPU_JITTER=200", true)
SWEEP_TEST(failed_safety_sync_loses_no_data_under_jitter, "cuCtxSynchronize",
           "SIMGPU_JITTER=200", false)

/* The experts model: the waits for fingerprints and copies, and the
 * remaps that send an unchanged chunk home. The window model: the copies
 * into slots and the remaps after them. */
#define MODEL_SWEEP_TEST(name, model, fn)                                     \
    START_TEST(name)                                                          \
    {                                                                         \
        int fm = sweep(model, fn, "SIMGPU_JITTER=0");                         \
        ck_assert_msg(model != WINDOW || fm > 0, "no failed %s ever counted", fn); \
    }                                                                         \
    END_TEST

/* The lru model: each step of a move that took a pooled handle. */
#define POOLED_SWEEP_TEST(name, fn)                                           \
    START_TEST(name)                                                          \
    {                                                                         \
        int fm = sweep(LRU, fn, "SIMGPU_JITTER=0");                           \
        ck_assert_msg(fm > 0, "no failed %s ever counted", fn);               \
    }                                                                         \
    END_TEST

POOLED_SWEEP_TEST(failed_creation_beside_pooled_handles_loses_no_data, "cuMemCreate")
POOLED_SWEEP_TEST(failed_map_of_a_pooled_handle_loses_no_data, "cuMemMap")
POOLED_SWEEP_TEST(failed_access_grant_to_a_pooled_handle_loses_no_data, "cuMemSetAccess")
POOLED_SWEEP_TEST(failed_unmap_with_pooled_handles_loses_no_data, "cuMemUnmap")
POOLED_SWEEP_TEST(failed_copy_into_a_pooled_handle_loses_no_data, "cuMemcpyDtoDAsync")

MODEL_SWEEP_TEST(failed_wait_with_host_copies_loses_no_data, EXPERTS, "cuStreamSynchronize")
MODEL_SWEEP_TEST(failed_remap_home_loses_no_data, EXPERTS, "cuMemMap")
MODEL_SWEEP_TEST(failed_unmap_with_host_copies_loses_no_data, EXPERTS, "cuMemUnmap")
MODEL_SWEEP_TEST(failed_remap_after_window_copies_loses_no_data, WINDOW, "cuMemUnmap")
MODEL_SWEEP_TEST(failed_window_copy_loses_no_data, WINDOW, "cuMemcpyDtoDAsync")

/* When the wait for the copy fails, spillway falls back on waiting for the
 * whole device before it unmaps the staging range; when that wait fails
 * too, the copy may still be running, so the range must stay mapped. Each
 * of the first two stream waits fails together with each device wait
 * around it. */
START_TEST(failed_copy_wait_and_failed_device_wait_never_unmap_under_the_copy)
{
    uint64_t syncs = clean_calls(LAYERS, "cuCtxSynchronize", "SIMGPU_JITTER=0");
    for (int i = 1; i <= 2; i++) {
        for (uint64_t j = 1; j <= syncs + 2; j++) {
            char fail[128];
            snprintf(fail, sizeof fail, "SIMGPU_FAIL=cuStreamSynchronize:%d,cuCtxSynchronize:%llu",
                     i, (unsigned long long)j);
            swt_run_t r;
            run_model(&r, LAYERS, "SIMGPU_JITTER=0", fail);
            assert_safe_outcome(&r, fail);
        }
    }
}
END_TEST

/* One failed call is one abandoned move at most: a step that fails must
 * not leave spillway unable to move anything afterwards (for example by
 * leaving its staging range mapped). */
START_TEST(one_failed_call_abandons_at_most_one_move)
{
    /* The calls on the staging range and around it. */
    static const char *const fns[] = {"cuMemMap", "cuMemSetAccess", "cuMemUnmap", NULL};
    for (int f = 0; fns[f]; f++) {
        uint64_t n = clean_calls(LAYERS, fns[f], "SIMGPU_JITTER=0");
        for (uint64_t i = 1; i <= n; i++) {
            char fail[128];
            snprintf(fail, sizeof fail, "SIMGPU_FAIL=%s:%llu", fns[f], (unsigned long long)i);
            swt_run_t r;
            run_model(&r, LAYERS, "SIMGPU_JITTER=0", fail);
            if (!swt_exists(r.sw_report))
                continue; /* judged by the sweeps */
            ck_assert_msg(swt_sw(&r, "failed_moves") <= 1, "%s: %llu failed moves: %s", fail,
                          (unsigned long long)swt_sw(&r, "failed_moves"), swt_describe(&r));
        }
    }
}
END_TEST

/* The same rule with four threads moving each other's memory (sg-mt), a
 * failure in the middle of the run. cuStreamSynchronize is left to the
 * sweeps above: here its N-th call is sg-mt's own or spillway's depending
 * on thread timing, so the run would not test the same thing twice. */
START_TEST(threads_survive_a_failed_move)
{
    static const char *const fails[] = {
        "SIMGPU_FAIL=cuMemCreate:40",       "SIMGPU_FAIL=cuMemMap:40",
        "SIMGPU_FAIL=cuMemSetAccess:40",    "SIMGPU_FAIL=cuMemUnmap:40",
        "SIMGPU_FAIL=cuMemcpyDtoDAsync:20", NULL,
    };
    for (int i = 0; fails[i]; i++) {
        const char *argv[] = {swt_path("SWT_MT"), NULL};
        const char *env[] = {"SIMGPU_MEM=16MiB", fails[i], NULL};
        swt_run_t r;
        swt_run(&r, true, env, argv);
        ck_assert_msg(r.exited && (r.status == 0 || r.status == 2), "%s: %s", fails[i],
                      swt_describe(&r));
        if (r.status == 0)
            ck_assert_msg(swt_file_has(r.out, "mt: ok"), "%s: %s", fails[i], swt_describe(&r));
        else
            ck_assert_msg(swt_file_has(r.err, "CUDA error"), "%s: %s", fails[i],
                          swt_describe(&r));
        ck_assert_msg(swt_sg(&r, "hazards") == 0, "%s: hazard: %s", fails[i], swt_describe(&r));
        ck_assert_msg(swt_sg(&r, "faults") == 0, "%s: fault: %s", fails[i], swt_describe(&r));
    }
}
END_TEST

/* A promotion that keeps the host copy fingerprints the bytes it copied.
 * When the wait for that fingerprint fails and so does the device wait
 * after it, the kernel may still read the staging range: the move must
 * fail (it returned success without moving, so the chunk was counted on
 * the device and its byte counts went wrong). In the experts model the
 * first such wait is the 15th stream wait, and the device wait after it
 * the 12th; the run must say it abandoned the staging range, or the call
 * numbers no longer point at that wait and need to be found again (a
 * driver-call trace of a clean run shows them). */
START_TEST(pending_fingerprint_wait_fails_the_move)
{
    const char *fail = "SIMGPU_FAIL=cuStreamSynchronize:15,cuCtxSynchronize:12";
    swt_run_t r;
    run_model(&r, EXPERTS, "SIMGPU_JITTER=0", fail);
    assert_safe_outcome(&r, fail);
    ck_assert_msg(swt_file_has(r.err, "could not be waited for"),
                  "%s did not hit the fingerprint's wait: %s", fail, swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "failed_moves") >= 1, "the move was not counted as failed: %s",
                  swt_describe(&r));
    /* Everything was freed: the counts are back to zero. */
    ck_assert_msg(swt_sw(&r, "device_bytes") == 0 && swt_sw(&r, "host_bytes") == 0,
                  "byte counts at exit: device %llu, host %llu: %s",
                  (unsigned long long)swt_sw(&r, "device_bytes"),
                  (unsigned long long)swt_sw(&r, "host_bytes"), swt_describe(&r));
}
END_TEST

/* Four cases, which meson runs side by side (CK_RUN_CASE): the sweeps
 * take minutes together. */
static TCase *inject_case(const char *name)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, 300);
    return tc;
}

Suite *inject_suite(void)
{
    Suite *s = suite_create("inject");
    TCase *steps = inject_case("demotion-steps");
    tcase_add_test(steps, failed_handle_creation_loses_no_data);
    tcase_add_test(steps, failed_map_loses_no_data);
    tcase_add_test(steps, failed_access_grant_loses_no_data);
    tcase_add_test(steps, failed_unmap_loses_no_data);
    tcase_add_test(steps, failed_copy_loses_no_data);
    tcase_add_test(steps, failed_copy_wait_loses_no_data);
    tcase_add_test(steps, failed_safety_sync_loses_no_data);
    tcase_add_test(steps, failed_creation_beside_pooled_handles_loses_no_data);
    tcase_add_test(steps, failed_map_of_a_pooled_handle_loses_no_data);
    tcase_add_test(steps, failed_access_grant_to_a_pooled_handle_loses_no_data);
    tcase_add_test(steps, failed_unmap_with_pooled_handles_loses_no_data);
    tcase_add_test(steps, failed_copy_into_a_pooled_handle_loses_no_data);
    suite_add_tcase(s, steps);

    TCase *jitter = inject_case("jitter");
    tcase_add_test(jitter, failed_unmap_loses_no_data_under_jitter);
    tcase_add_test(jitter, failed_copy_loses_no_data_under_jitter);
    tcase_add_test(jitter, failed_copy_wait_loses_no_data_under_jitter);
    tcase_add_test(jitter, failed_safety_sync_loses_no_data_under_jitter);
    tcase_add_test(jitter, failed_copy_wait_and_failed_device_wait_never_unmap_under_the_copy);
    tcase_add_test(jitter, one_failed_call_abandons_at_most_one_move);
    tcase_add_test(jitter, threads_survive_a_failed_move);
    suite_add_tcase(s, jitter);

    TCase *copies = inject_case("host-copies");
    tcase_add_test(copies, failed_wait_with_host_copies_loses_no_data);
    tcase_add_test(copies, failed_remap_home_loses_no_data);
    tcase_add_test(copies, failed_unmap_with_host_copies_loses_no_data);
    tcase_add_test(copies, pending_fingerprint_wait_fails_the_move);
    suite_add_tcase(s, copies);

    TCase *window = inject_case("window");
    tcase_add_test(window, failed_remap_after_window_copies_loses_no_data);
    tcase_add_test(window, failed_window_copy_loses_no_data);
    suite_add_tcase(s, window);
    return s;
}

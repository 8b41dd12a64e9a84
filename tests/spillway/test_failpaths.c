/*
 * test_failpaths.c: a driver call failing anywhere on the streaming
 * window's and the argument rewriter's paths (issue 16).
 *
 * test_inject.c fails the steps of a move; this file fails every call of
 * the paths that copy ranges into the window and rewrite launches:
 *   - the window's setup (its allocation, the fingerprint buffers and
 *     module, spillway's streams and events);
 *   - a fill (the copy into the ring, the waits that order it after the
 *     application and after a slot's readers, its event);
 *   - the launch with rewritten kernelParams or `extra` buffer, and the
 *     TMA descriptor re-made for the copy (cuTensorMapReplaceAddress);
 *   - the way home after it: spillway_fingerprint, spillway_copy_if_changed,
 *     the plain copy, the events chaining copies home across streams;
 *   - the same issued into a capture, and the graph's replays;
 *   - adoption (the moves that make a pointer-table chunk resident);
 *   - the application's own VMM handles (appvmm.c) and the
 *     stream-ordered allocator's frees (ordered.c).
 *
 * Each row of `rows` names a model (a program and its settings) and a
 * driver function. The model is run once cleanly, which must exercise the
 * path (its counter below is not zero) and call the function; then once
 * per call n of it, with SIMGPU_FAIL=function:n, so every call the clean
 * run made fails once, the application's own and spillway's alike (simgpu
 * counts them together). Every run must end one of two ways:
 *   - exit 0 with the program's success line and the clean run's checksum:
 *     spillway got round the failure (read in place, copied home by the
 *     host, waited on the host) and no byte was lost; or
 *   - exit 2 with a driver error on stderr: the application got a
 *     driver error from one of its calls (its own call failed, or a
 *     capture the window could not finish was invalidated, which is what
 *     the driver answers for one);
 * and simgpu must report no hazard (a race, an unmap under queued work)
 * and no fault. Never a mismatch, a crash or another status.
 *
 * To cover a new path, add a model (if none drives it) and rows: one per
 * driver function the path calls. The cases are made from the table, one
 * check loop test per row, grouped by model.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swt.h"

/* Small layers (1 MiB), tracked and chunked at 1 MiB, a 4 MiB budget with
 * a 2 MiB window: eight layers stream through it every step. */
#define SMALL_ENV                                                                    \
    "SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=4MiB", "SPILLWAY_MIN_ALLOC=1MiB",       \
        "SPILLWAY_CHUNK=1MiB", "SPILLWAY_PREFETCH_BYTES=2MiB"
#define MLP "--layers", "8", "--width", "512", "--steps", "4"

typedef struct {
    const char *name;
    const char *prog;     /* the SWT_* variable naming the program */
    const char *args[12]; /* after the program, NULL-terminated */
    const char *env[8];   /* NULL-terminated */
    const char *ok;       /* what a run that ends well prints */
    const char *counter;  /* spillway's counter the clean run must move */
} model_t;

static const model_t models[] = {
    /* Eager streaming: fills, copies ahead, rewritten launches, copies
     * home by fingerprint; adoption of the pointer-table layers. */
    {"window", "SWT_MLP", {MLP, NULL}, {SMALL_ENV, NULL}, "result=match", "rewritten_launches"},
    /* Kernels write the weights through rewritten arguments: each copy
     * goes home by spillway_copy_if_changed, or plainly when its home's
     * fingerprint is not known. */
    {"write-back", "SWT_MLP", {MLP, "--train", NULL}, {SMALL_ENV, NULL}, "result=match",
     "bytes_written_back"},
    /* Two streams and the loader route: a copy read on both, and the
     * chain of copies home across them. */
    {"two-streams", "SWT_MLP", {MLP, "--train", "--streams", "2", "--route", "loader", NULL},
     {SMALL_ENV, NULL}, "result=match", "bytes_written_back"},
    /* The step captured once (fills, rewrites and copies home issued into
     * the capture) and replayed. */
    {"capture", "SWT_MLP", {MLP, "--train", "--graph", NULL}, {SMALL_ENV, NULL}, "result=match",
     "rewritten_launches"},
    /* Weights reached only through TMA descriptors, re-made for the copy,
     * in kernelParams and in the `extra` buffer. */
    {"tma", "SWT_TMA", {"seen", NULL}, {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=16MiB", NULL},
     "result=match", "rewritten_launches"},
    {"tma-extra", "SWT_TMA", {"seen", "extra", NULL},
     {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=16MiB", NULL}, "result=match",
     "rewritten_launches"},
    /* A host copy into each weight while its window copy is live: the
     * copy must be dropped (the stream ordered after its fill, or the
     * host waiting for it) before the write. */
    {"host-write", "SWT_HOSTWRITE", {NULL},
     {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=6MiB", "SPILLWAY_MIN_ALLOC=1MiB",
      "SPILLWAY_CHUNK=1MiB", "SPILLWAY_PREFETCH_BYTES=4MiB", NULL},
     "hostwrite: ok", "rewritten_launches"},
    /* Streamed weights written in place by host copies and read back by
     * the host, on two streams: copies must be dropped before each. Its
     * runs are long (hundreds of calls each): its rows take a sample. */
    {"host-writes", "SWT_STREAM", {NULL}, {"SIMGPU_MEM=1GiB", "SPILLWAY_GPU_BUDGET=40MiB", NULL},
     "stream: ok", "bytes_written_back"},
    /* The application's own VMM (appvmm.c): PyTorch's expandable
     * segments, moved whole under LRU, exported, aliased and bound into
     * multicast objects (three segments pinned on the device), and a
     * buffer of cuMemAlloc's exported as a dma-buf. */
    {"app-vmm", "SWT_EXPANDABLE", {NULL},
     {"SIMGPU_MEM=72MiB", "SPILLWAY_GPU_BUDGET=32MiB", "SPILLWAY_POLICY=lru", NULL},
     "result: checksum=", "demotions"},
    /* The stream-ordered allocator (ordered.c): frees pending on events,
     * reaped and waited for. A window of 6 MiB from the first allocation
     * (given, so not fitted when the budget binds) keeps the budget tight
     * enough that a reap must wait. */
    {"ordered", "SWT_ORDERED", {"reuse", NULL},
     {"SPILLWAY_MIN_ALLOC=1MiB", "SPILLWAY_GPU_BUDGET=24MiB", "SPILLWAY_PREFETCH_BYTES=6MiB",
      "SIMGPU_JITTER=200", NULL},
     "ordered: ok", "ordered_frees_deferred"},
};

typedef struct {
    const char *model;
    const char *fn;  /* simgpu's base name */
    unsigned stride; /* fail calls 1, 1 + stride, ...: 1 for every one */
} row_t;

static const row_t rows[] = {
    /* setup: the window, the fingerprint buffers and kernels, streams */
    {"window", "cuMemAlloc", 1},
    {"window", "cuMemAllocHost", 1},
    {"window", "cuStreamCreate", 1},
    {"window", "cuModuleLoadData", 1},
    {"window", "cuModuleGetFunction", 1},
    {"window", "cuFuncGetParamInfo", 1},
    /* fills, the launch's waits, the copies home, adoption's moves */
    {"window", "cuMemcpyDtoDAsync", 1},
    {"window", "cuStreamWaitEvent", 1},
    {"window", "cuEventCreate", 1},
    {"window", "cuEventRecord", 1},
    {"window", "cuEventQuery", 1},
    {"window", "cuMemsetD8Async", 1},
    {"window", "cuLaunchKernel", 1},
    {"window", "cuStreamSynchronize", 1},
    {"window", "cuCtxSynchronize", 1},
    {"window", "cuMemMap", 1},
    {"window", "cuMemUnmap", 1},
    {"write-back", "cuMemcpyDtoDAsync", 1},
    {"write-back", "cuLaunchKernel", 1},
    {"write-back", "cuMemsetD8Async", 1},
    {"write-back", "cuEventRecord", 1},
    {"write-back", "cuStreamWaitEvent", 1},
    /* a kernel whose layout could not be had writes homes unscanned */
    {"write-back", "cuFuncGetParamInfo", 1},
    {"two-streams", "cuStreamWaitEvent", 2},
    {"two-streams", "cuEventRecord", 2},
    {"two-streams", "cuEventCreate", 1},
    {"two-streams", "cuMemcpyDtoDAsync", 1},
    {"capture", "cuLaunchKernel", 1},
    {"capture", "cuMemsetD8Async", 1},
    {"capture", "cuMemcpyDtoDAsync", 1},
    {"capture", "cuEventRecord", 1},
    {"capture", "cuStreamWaitEvent", 1},
    {"capture", "cuEventCreate", 1},
    {"capture", "cuStreamSynchronize", 1},
    {"capture", "cuStreamBeginCapture", 1},
    {"capture", "cuStreamEndCapture", 1},
    {"capture", "cuStreamIsCapturing", 1},
    {"capture", "cuGraphLaunch", 1},
    {"tma", "cuTensorMapReplaceAddress", 1},
    {"tma", "cuLaunchKernel", 1},
    {"tma", "cuMemcpyDtoDAsync", 1},
    {"tma", "cuEventRecord", 1},
    {"tma-extra", "cuTensorMapReplaceAddress", 1},
    {"tma-extra", "cuLaunchKernel", 1},
    {"host-write", "cuStreamWaitEvent", 1},
    {"host-write", "cuEventRecord", 2},
    {"host-write", "cuMemcpyDtoDAsync", 1},
    {"host-write", "cuLaunchKernel", 2},
    {"host-writes", "cuStreamWaitEvent", 14},
    {"host-writes", "cuEventRecord", 14},
    {"host-writes", "cuMemcpyDtoDAsync", 10},
    {"app-vmm", "cuMemCreate", 1},
    {"app-vmm", "cuMemMap", 3},
    {"app-vmm", "cuMemSetAccess", 3},
    {"app-vmm", "cuMemUnmap", 3},
    {"app-vmm", "cuMemRelease", 3},
    {"app-vmm", "cuMemcpyDtoDAsync", 2},
    {"app-vmm", "cuCtxSynchronize", 3},
    {"app-vmm", "cuMemAddressReserve", 1},
    {"app-vmm", "cuMemExportToShareableHandle", 1},
    {"app-vmm", "cuMulticastBindMem", 1},
    {"app-vmm", "cuMulticastBindAddr", 1},
    {"app-vmm", "cuMemGetHandleForAddressRange", 1},
    /* (its cuMemAllocAsync and cuMemFreeAsync never reach the driver:
     * spillway tracks them) */
    {"ordered", "cuEventCreate", 1},
    {"ordered", "cuEventRecord", 1},
    {"ordered", "cuEventQuery", 1},
    {"ordered", "cuEventSynchronize", 1},
    {"ordered", "cuCtxSynchronize", 2},
    {"ordered", "cuMemUnmap", 2},
};

#define NROWS ((int)(sizeof rows / sizeof rows[0]))

static const model_t *model_named(const char *name)
{
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        if (strcmp(models[i].name, name) == 0)
            return &models[i];
    ck_abort_msg("no model %s", name);
    return NULL;
}

/* Runs m, with SIMGPU_FAIL=fail when fail is not NULL. */
static void run_model(swt_run_t *r, const model_t *m, const char *fail)
{
    const char *argv[16] = {swt_path(m->prog)};
    int n = 1;
    for (int i = 0; m->args[i]; i++)
        argv[n++] = m->args[i];
    argv[n] = NULL;
    const char *env[12];
    int k = 0;
    for (int i = 0; m->env[i]; i++)
        env[k++] = m->env[i];
    env[k++] = fail ? fail : "SIMGPU_FAIL";
    env[k] = NULL;
    swt_run(r, true, env, argv);
}

/* The "checksum=..." word of a run's stdout into buf ("" when none). */
static void checksum_of(const swt_run_t *r, char *buf, size_t len)
{
    char *s = swt_slurp(r->out);
    const char *c = s ? strstr(s, "checksum=") : NULL;
    size_t n = c ? strcspn(c, " \n") : 0;
    snprintf(buf, len, "%.*s", (int)n, c ? c : "");
    free(s);
}

/* The outcome rule (top of file), for one run. */
static void assert_outcome(const swt_run_t *r, const model_t *m, const char *fail,
                           const char *checksum)
{
    ck_assert_msg(r->exited, "%s: crashed: %s", fail, swt_describe(r));
    ck_assert_msg(r->status == 0 || r->status == 2, "%s: exit status %d: %s", fail, r->status,
                  swt_describe(r));
    if (r->status == 0) {
        char sum[128];
        checksum_of(r, sum, sizeof sum);
        ck_assert_msg(swt_file_has(r->out, m->ok), "%s: no %s: %s", fail, m->ok,
                      swt_describe(r));
        ck_assert_msg(strcmp(sum, checksum) == 0, "%s: %s, the clean run %s: %s", fail, sum,
                      checksum, swt_describe(r));
    } else {
        /* mlp says "CUDA error NAME in CALL" (NAME "CUresult N" for a
         * code simgpu's cuGetErrorName does not know); the others print
         * the name. */
        ck_assert_msg(swt_file_has(r->err, "CUDA_ERROR_") || swt_file_has(r->err, "CUDA error"),
                      "%s: exit 2 without a driver error: %s", fail, swt_describe(r));
    }
    ck_assert_msg(swt_exists(r->sg_report), "%s: no simgpu report: %s", fail, swt_describe(r));
    ck_assert_msg(swt_sg(r, "hazards") == 0, "%s: hazard: %s", fail, swt_describe(r));
    ck_assert_msg(swt_sg(r, "faults") == 0, "%s: fault: %s", fail, swt_describe(r));
}

/* SWT_FAIL_SAMPLE=N fails only every N-th of the points a row names:
 * the sanitized run (tools/sanitize.sh), whose every run is several times
 * slower, samples the sweep rather than repeating it whole. */
static unsigned sample(void)
{
    const char *v = getenv("SWT_FAIL_SAMPLE");
    long n = v ? strtol(v, NULL, 10) : 1;
    return n >= 1 && n <= 1000 ? (unsigned)n : 1;
}

/* Row i: the clean run, then each call of the row's function failed. */
START_TEST(every_call_fails_without_losing_a_byte)
{
    const row_t *row = &rows[_i];
    const model_t *m = model_named(row->model);
    swt_run_t clean;
    run_model(&clean, m, NULL);
    swt_assert_status(&clean, 0);
    ck_assert_msg(swt_file_has(clean.out, m->ok), "%s: %s", m->name, swt_describe(&clean));
    swt_assert_clean(&clean);
    ck_assert_msg(swt_sw(&clean, m->counter) > 0, "%s: the clean run moved no %s: %s", m->name,
                  m->counter, swt_describe(&clean));
    char checksum[128];
    checksum_of(&clean, checksum, sizeof checksum);
    uint64_t n = swt_calls(&clean, row->fn);
    ck_assert_msg(n > 0, "%s never calls %s: the row tests nothing", m->name, row->fn);
    for (uint64_t k = 1; k <= n; k += row->stride * sample()) {
        char fail[128];
        snprintf(fail, sizeof fail, "SIMGPU_FAIL=%s:%llu", row->fn, (unsigned long long)k);
        swt_run_t r;
        run_model(&r, m, fail);
        assert_outcome(&r, m, fail, checksum);
    }
}
END_TEST

Suite *failpaths_suite(void)
{
    Suite *s = suite_create("failpaths");
    /* One case per model, named after it, over its rows (contiguous in
     * the table). */
    for (int i = 0; i < NROWS;) {
        int j = i;
        while (j < NROWS && strcmp(rows[j].model, rows[i].model) == 0)
            j++;
        TCase *tc = tcase_create(rows[i].model);
        tcase_set_timeout(tc, 900);
        tcase_add_loop_test(tc, every_call_fails_without_losing_a_byte, i, j);
        suite_add_tcase(s, tc);
        i = j;
    }
    return s;
}

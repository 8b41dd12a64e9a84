/*
 * sg-diff: a seeded random sequence of driver calls (diff.h), for
 * differential runs: the same seed all-resident and under spillway must
 * print the same line.
 *
 *   sg-diff [--seed N] [--ops N] [--cap MiB] [--route direct|loader] [--slices]
 *           [--loops] [--trace]
 *
 * --slices gives kernels any range instead of tensors (diff.h).
 * --loops adds loops (diff_ops.c): a few launches on fixed operands run
 * several times in a row, so ranges recur and the learned policy streams
 * them eagerly; without it the sequence of a seed is what it always was.
 * --trace prints each operation's number on stderr (with SIMGPU_TRACE=1,
 * the calls it made follow it).
 * --seed (1) picks the sequence, --ops (300) its length, --cap (64) the
 * live data bytes at most, in MiB (an allocation that would pass it frees
 * buffers first). It prints one line:
 *
 *   diff: seed=1 ops=300 launches=.. allocs=.. frees=.. htod=.. dtoh=..
 *   dtod=.. memsets=.. queries=.. captures=.. replays=.. loops=.. live=..
 *   bytes=..
 *   checksum=0x...
 *
 * The checksum (FNV-1a 64) covers every byte read back during the run,
 * the pointer queries' answers as offsets, and every live buffer at the
 * end in creation order; the line does not depend on the route. Exit
 * statuses: 0 (the line printed), 2 a CUDA error (the call, its context
 * and the operation's number printed), 3 a bad command line, 4 out of
 * host memory.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"

/* simgpu accepts any image whose text starts with this. */
static const char image[] = "simgpu-builtin";

typedef struct {
    uint64_t seed;
    int ops;
    uint64_t cap_mib;
    bool loader;
    bool trace; /* each operation's number on stderr, for SIMGPU_TRACE */
    bool slices;
    bool loops;
} opts_t;

int diff_cuda_fail(diff_t *st, CUresult rc, const char *call)
{
    char buf[32];
    fprintf(stderr, "diff: CUDA error %s in %s (operation %d: %s)\n",
            sg_drv_errname(&st->d, rc, buf, sizeof buf), call, st->op, st->where);
    return DIFF_CUDA;
}

static int usage(void)
{
    fprintf(stderr, "usage: sg-diff [--seed N] [--ops N] [--cap MiB] [--route direct|loader] "
                    "[--slices] [--loops] [--trace]\n");
    return DIFF_USAGE;
}

static bool number(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || s[0] == '-' || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static int parse(int argc, char **argv, opts_t *o)
{
    uint64_t v;
    *o = (opts_t){.seed = 1, .ops = 300, .cap_mib = 64};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--trace") == 0 || strcmp(arg, "--slices") == 0 ||
            strcmp(arg, "--loops") == 0) {
            *(arg[2] == 't' ? &o->trace : arg[2] == 's' ? &o->slices : &o->loops) = true;
            continue;
        }
        if (!val)
            return usage();
        i++;
        if (strcmp(arg, "--seed") == 0 && number(val, 0, UINT64_MAX, &v))
            o->seed = v;
        else if (strcmp(arg, "--ops") == 0 && number(val, 1, 1000000, &v))
            o->ops = (int)v;
        else if (strcmp(arg, "--cap") == 0 && number(val, 1, 4096, &v))
            o->cap_mib = v;
        else if (strcmp(arg, "--route") == 0 && (strcmp(val, "direct") == 0 ||
                                                 strcmp(val, "loader") == 0))
            o->loader = strcmp(val, "loader") == 0;
        else
            return usage();
    }
    return DIFF_OK;
}

static int setup(diff_t *st, bool loader)
{
    static const struct {
        const char *name;
        size_t off;
    } fns[] = {
        {"sg_fill_u32", offsetof(diff_t, fill)},
        {"sg_axpy_f32", offsetof(diff_t, axpy)},
        {"sg_relu_f32", offsetof(diff_t, relu)},
        {"sg_gemv_f32", offsetof(diff_t, gemv)},
        {"sg_gemv_struct_f32", offsetof(diff_t, gemv_struct)},
        {"sg_gemv_table_f32", offsetof(diff_t, gemv_table)},
        {"sg_checksum_u64", offsetof(diff_t, checksum)},
        {"sg_gemm_f32", offsetof(diff_t, gemm)},
    };
    if (loader) {
        sg_drv_err_t err;
        if (sg_drv_load(&st->d, &err) != CUDA_SUCCESS) {
            fprintf(stderr, "diff: %s failed: %s\n", err.call, err.what);
            return DIFF_CUDA;
        }
    } else {
        sg_drv_link(&st->d);
    }
    DCK(st, st->d.Init(0));
    DCK(st, st->d.DeviceGet(&st->dev, 0));
    DCK(st, st->d.DevicePrimaryCtxRetain(&st->ctx, st->dev));
    DCK(st, st->d.CtxSetCurrent(st->ctx));
    DCK(st, st->d.ModuleLoadData(&st->mod, image));
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        DCK(st, st->d.ModuleGetFunction((CUfunction *)((char *)st + fns[i].off), st->mod,
                                        fns[i].name));
    /* Stream 0 is the legacy default stream; two non-blocking streams,
     * which nothing orders but events; one blocking stream, which the
     * legacy stream also orders. */
    for (int s = 1; s < DIFF_STREAMS; s++)
        DCK(st, st->d.StreamCreate(&st->stream[s], s < 3 ? CU_STREAM_NON_BLOCKING : 0));
    for (int s = 0; s < DIFF_STREAMS; s++) {
        DCK(st, st->d.EventCreate(&st->ev[s], CU_EVENT_DISABLE_TIMING));
        st->pending_tail[s] = &st->pending[s];
    }
    DCK(st, st->d.EventCreate(&st->fork_ev, CU_EVENT_DISABLE_TIMING));
    DCK(st, st->d.EventCreate(&st->join_ev, CU_EVENT_DISABLE_TIMING));
    return DIFF_OK;
}

/* One operation, drawn by weight; the first ones allocate. */
static int step(diff_t *st)
{
    if (st->nbufs < 3)
        return diff_op_alloc(st);
    unsigned r = (unsigned)diff_range(st, 0, 99);
    if (r < 12)
        return diff_op_alloc(st);
    if (r < 19)
        return diff_op_free(st);
    if (r < 29)
        return diff_op_htod(st);
    if (r < 37)
        return diff_op_dtoh(st);
    if (r < 45)
        return diff_op_dtod(st);
    if (r < 52)
        return diff_op_memset(st);
    if (r < 71 || (r < 77 && !st->loops))
        return diff_op_kernel(st);
    if (r < 77)
        return diff_op_loop(st);
    if (r < 82)
        return diff_op_query(st);
    if (r < 85)
        return diff_op_capture(st);
    if (r < 90)
        return diff_op_replay(st);
    if (r < 92)
        return diff_op_graph_destroy(st);
    if (r < 98)
        return diff_sync_stream(st, (int)diff_range(st, 0, DIFF_STREAMS - 1));
    return diff_sync_all(st);
}

/* Every live buffer back, in creation order, into the checksum; then
 * everything freed. */
static int finish(diff_t *st, uint64_t *bytes)
{
    int rc = DIFF_OK;
    while (st->ngraphs > 0 && rc == DIFF_OK)
        rc = diff_graph_destroy(st, st->ngraphs - 1);
    if (rc == DIFF_OK)
        rc = diff_sync_all(st);
    if (rc == DIFF_OK)
        rc = diff_free_tables(st);
    if (rc != DIFF_OK)
        return rc;
    *bytes = st->live;
    st->op = -1;
    snprintf(st->where, sizeof st->where, "final read-back");
    for (int i = 0; i < st->nbufs; i++) {
        diff_buf_t *b = st->bufs[i];
        void *h = malloc(b->bytes);
        if (!h)
            return DIFF_NOMEM;
        CUresult r = st->d.MemcpyDtoH(h, b->ptr, b->bytes);
        if (r == CUDA_SUCCESS)
            diff_fold(st, h, b->bytes);
        free(h);
        DCK(st, r);
    }
    while (st->nbufs > 0 && rc == DIFF_OK)
        rc = diff_free_buf(st, st->nbufs - 1);
    return rc;
}

int main(int argc, char **argv)
{
    opts_t o;
    int rc = parse(argc, argv, &o);
    if (rc != DIFF_OK)
        return rc;
    diff_t *st = calloc(1, sizeof *st);
    if (!st)
        return DIFF_NOMEM;
    st->rng = o.seed;
    st->hash = 0xCBF29CE484222325ull;
    st->cap = o.cap_mib << 20;
    st->trace = o.trace;
    st->slices = o.slices;
    st->loops = o.loops;
    snprintf(st->where, sizeof st->where, "setup");
    rc = setup(st, o.loader);
    for (int i = 0; i < o.ops && rc == DIFF_OK; i++) {
        st->op = i;
        snprintf(st->where, sizeof st->where, "-");
        if (st->trace)
            fprintf(stderr, "diff: operation %d\n", i);
        rc = step(st);
    }
    uint64_t bytes = 0;
    int live = st->nbufs;
    if (rc == DIFF_OK)
        rc = finish(st, &bytes);
    if (rc == DIFF_NOMEM)
        fprintf(stderr, "diff: out of host memory (%s)\n", st->where);
    if (rc != DIFF_OK) {
        free(st);
        return rc;
    }
    const uint64_t *c = st->counts;
    printf("diff: seed=%llu ops=%d%s%s launches=%llu allocs=%llu frees=%llu htod=%llu dtoh=%llu "
           "dtod=%llu memsets=%llu queries=%llu captures=%llu replays=%llu loops=%llu live=%d "
           "bytes=%llu checksum=0x%016llx\n",
           (unsigned long long)o.seed, o.ops, o.slices ? " slices" : "", o.loops ? " loops" : "",
           (unsigned long long)c[0],
           (unsigned long long)c[1], (unsigned long long)c[2], (unsigned long long)c[3],
           (unsigned long long)c[4], (unsigned long long)c[5], (unsigned long long)c[6],
           (unsigned long long)c[7], (unsigned long long)c[8], (unsigned long long)c[9],
           (unsigned long long)c[10], live, (unsigned long long)bytes,
           (unsigned long long)st->hash);
    free(st);
    return DIFF_OK;
}

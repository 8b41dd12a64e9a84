/*
 * swt-extent: kernels that use every byte CUDA lets them reach, for the
 * rule "a kernel may touch any byte of the allocation its pointer points
 * into" (extent.sh runs it plain and under spillway and compares).
 *
 * Each layer has a fused weight of three slices, q | k | v, each rows x
 * cols floats, like a fused qkv or gate/up weight; rows vary by layer, so
 * a weight spans from one chunk to several. Each step, for each layer:
 *   1. gemv on slice q, by the weight's base;
 *   2. gemv on slice k, by an interior pointer;
 *   3. gemv on all three slices at once, by the base (a fused kernel);
 *   4. a sum from k's pointer over [-rows*cols, 2*rows*cols): negative
 *      offsets reach q, positive ones v, from a neighbour's pointer;
 *   5. an update of v's first rows in place, through its interior pointer;
 *   6. a checksum of the whole weight, from the base a second kernel shares;
 *   7. a gemv through a TMA descriptor whose row pitch is wider than the
 *      columns it reads (a strided view, leading dimension > columns);
 *   8. sg_ptrs_u64 stores pointers derived from k's pointer into a table,
 *      which a gemv on a second stream then reads (ordered by events);
 *   9. a gemv through a table built from v's pointer at the first step
 *      and again at step REBUILD (eager runs only; by then spillway has
 *      learned the loop and may serve v from a copy), and reused by every
 *      step in between and after;
 *  10. a gemv on the layer's second weight u, an allocation of its own
 *      that no table points into, whose words stream memory operations
 *      write in place after each eager step, by cuStreamWriteValue32,
 *      cuStreamWriteValue64 and cuStreamBatchMemOp in turn, each in its
 *      _v2 form and in its deprecated v1 form, which a runtime older than
 *      11.7 gets from cuGetProcAddress.
 * Layouts (argv[1]): "per", one allocation per weight; "odd", the same,
 * each allocation ODD_TAIL bytes longer than its weight, so that no size
 * is a multiple of 8 (a window copy placed right after another must still
 * start aligned); "one", all weights
 * in one buffer; "segments", weights packed into allocations of at most
 * 16 MiB, as a caching allocator's segments. "graph" (argv[2]) captures one
 * step and replays it.
 *
 * Every result goes to one small buffer read back after each step and
 * hashed. Prints "result: HASH" and exits 0; exits 2 on a CUDA error.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "swt_prog.h"

#define LAYERS 8
#define COLS 1024u
#define STEPS 6
#define SEGMENT (16u << 20)
#define STRIDED_COLS (COLS / 2)
#define REBUILD 3
#define ODD_TAIL 12

static int fail(const char *what, CUresult r) { return swt_cuda_fail("extent", what, r); }

/* rows of layer l: 256 to 1024, so a slice is 1 to 4 MiB, a weight 3 to 12 */
static uint32_t rows_of(int l) { return 256u * (1u + (uint32_t)l % 4u); }
static uint64_t slice_floats(int l) { return (uint64_t)rows_of(l) * COLS; }
static uint64_t weight_bytes(int l) { return 3 * slice_floats(l) * 4; }

/* Where layer l's results go in the result buffer, in floats. */
enum { R_Q, R_K, R_ALL, R_TABLE, R_ONCE, R_TMA, R_U, R_KINDS };
#define RES_PER_LAYER (R_KINDS * 3 * 1024u + 4u)
static uint64_t res_at(int l, int kind) { return (uint64_t)l * RES_PER_LAYER + kind * 3 * 1024u; }
static uint64_t sum_at(int l) { return (uint64_t)l * RES_PER_LAYER + R_KINDS * 3 * 1024u; }

static float value(int l, uint64_t i)
{
    return (float)((i * 7u + (uint64_t)l * 13u) % 17u) / 16.0f - 0.5f;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

typedef struct {
    CUresult (*write32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
    CUresult (*write64)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
    CUresult (*batch)(CUstream, unsigned int, CUstreamBatchMemOpParams *, unsigned int);
} memops_t;

typedef struct {
    CUfunction gemv, sum, axpy, checksum, tma, ptrs, table;
    memops_t ops[2];            /* the memory operations' _v2 and v1 forms */
    CUdeviceptr w[LAYERS];      /* each layer's fused weight */
    CUdeviceptr u[LAYERS];      /* and its second weight, rows x cols */
    CUtensorMap desc[LAYERS];   /* its strided view */
    CUdeviceptr x, res, tables, once;
    CUstream s0, s1;
    CUevent fork, join;
} model_t;

static CUresult launch(CUfunction f, CUstream s, void **args)
{
    return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static CUresult gemv(const model_t *m, CUstream s, CUdeviceptr W, uint32_t rows, CUdeviceptr y)
{
    uint32_t cols = COLS;
    CUdeviceptr x = m->x;
    void *a[] = {&W, &x, &y, &rows, &cols};
    return launch(m->gemv, s, a);
}

static CUresult table_gemv(const model_t *m, CUstream s, CUdeviceptr table, uint32_t index,
                           uint32_t rows, CUdeviceptr y)
{
    uint32_t cols = COLS;
    CUdeviceptr x = m->x;
    void *a[] = {&table, &index, &x, &y, &rows, &cols};
    return launch(m->table, s, a);
}

static CUresult ptrs(const model_t *m, CUstream s, CUdeviceptr base, uint64_t stride, uint64_t n,
                     CUdeviceptr table)
{
    void *a[] = {&base, &stride, &n, &table};
    return launch(m->ptrs, s, a);
}

/* One step of one layer, as the header lists it. */
/* Writes a word of layer l's u in place with a stream memory operation,
 * the form chosen by the step. */
static CUresult memops(const model_t *m, int l, int step)
{
    CUdeviceptr at = m->u[l] + 4096ull * (uint64_t)(step + 1);
    uint32_t v32 = 0x3f000000u + (uint32_t)(step * 64 + l); /* floats near 0.5 */
    const memops_t *f = &m->ops[(step + l) / 3 % 2];
    switch ((step + l) % 3) {
    case 0:
        return f->write32(m->s0, at, v32, 0);
    case 1:
        return f->write64(m->s0, at, (uint64_t)v32 << 32 | v32, 0);
    default: {
        CUstreamBatchMemOpParams op;
        memset(&op, 0, sizeof op);
        op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
        op.writeValue.address = at;
        op.writeValue.value = v32;
        return f->batch(m->s0, 1, &op, 0);
    }
    }
}

/* The three memory operations of one version, as cuGetProcAddress gives
 * them for CUDA `version` (11000: the v1 forms, 12000: the _v2 ones). */
static CUresult get_memops(memops_t *f, int version)
{
    CUresult r;
    if ((r = cuGetProcAddress("cuStreamWriteValue32", (void **)&f->write32, version, 0, NULL)) ||
        (r = cuGetProcAddress("cuStreamWriteValue64", (void **)&f->write64, version, 0, NULL)) ||
        (r = cuGetProcAddress("cuStreamBatchMemOp", (void **)&f->batch, version, 0, NULL)))
        return r;
    return CUDA_SUCCESS;
}

static CUresult layer(const model_t *m, int l, bool build)
{
    CUresult r;
    const uint32_t rows = rows_of(l);
    const uint64_t slice = slice_floats(l) * 4;
    CUdeviceptr W = m->w[l], res = m->res, out = res + sum_at(l) * 4;
    CUdeviceptr table = m->tables + (uint64_t)l * 16, once = m->once + (uint64_t)l * 16;
#define CK(call)                      \
    if ((r = (call)) != CUDA_SUCCESS) \
        return r;
    CK(gemv(m, m->s0, W, rows, res + res_at(l, R_Q) * 4));
    CK(gemv(m, m->s0, W + slice, rows, res + res_at(l, R_K) * 4));
    CK(gemv(m, m->s0, W, 3 * rows, res + res_at(l, R_ALL) * 4));

    CUdeviceptr k = W + slice;
    int64_t lo = -(int64_t)slice_floats(l), hi = 2 * (int64_t)slice_floats(l);
    void *sa[] = {&k, &lo, &hi, &out};
    CK(launch(m->sum, m->s0, sa));

    float a = 1.0f / 64;
    CUdeviceptr q_out = res + res_at(l, R_Q) * 4, v = W + 2 * slice;
    uint64_t n = rows;
    void *aa[] = {&a, &q_out, &v, &n};
    CK(launch(m->axpy, m->s0, aa));

    CUdeviceptr sum_out = out + 8;
    uint64_t bytes = weight_bytes(l);
    void *ca[] = {&W, &bytes, &sum_out};
    CK(launch(m->checksum, m->s0, ca));

    CUdeviceptr x = m->x, ty = res + res_at(l, R_TMA) * 4;
    void *ta[] = {(void *)&m->desc[l], &x, &ty};
    CK(launch(m->tma, m->s0, ta));

    /* table[0] = k, table[1] = v; read on s1, after s0 wrote it */
    CK(ptrs(m, m->s0, k, slice, 2, table));
    CK(cuEventRecord(m->fork, m->s0));
    CK(cuStreamWaitEvent(m->s1, m->fork, 0));
    CK(table_gemv(m, m->s1, table, 1, rows, res + res_at(l, R_TABLE) * 4));
    CK(cuEventRecord(m->join, m->s1));
    CK(cuStreamWaitEvent(m->s0, m->join, 0));

    if (build)
        CK(ptrs(m, m->s0, v, 0, 1, once));
    CK(table_gemv(m, m->s0, once, 0, rows, res + res_at(l, R_ONCE) * 4));
    CK(gemv(m, m->s0, m->u[l], rows, res + res_at(l, R_U) * 4));
#undef CK
    return CUDA_SUCCESS;
}

static CUresult step(const model_t *m, bool build)
{
    for (int l = 0; l < LAYERS; l++) {
        CUresult r = layer(m, l, build);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

/* The strided view of layer l: STRIDED_COLS of each of its 3 * rows rows,
 * one full row of COLS apart. */
static CUresult encode(CUtensorMap *d, CUdeviceptr w, int l)
{
    const cuuint64_t dim[2] = {STRIDED_COLS, 3ull * rows_of(l)}, pitch[1] = {COLS * 4ull};
    const cuuint32_t box[2] = {64, 64}, estride[2] = {1, 1};
    return cuTensorMapEncodeTiled(d, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)(uintptr_t)w, dim,
                                  pitch, box, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

/* Places each layer's weight as the layout says. */
static CUresult place(model_t *m, const char *layout)
{
    CUresult r = CUDA_SUCCESS;
    if (!strcmp(layout, "per") || !strcmp(layout, "odd")) {
        uint64_t tail = strcmp(layout, "odd") ? 0 : ODD_TAIL;
        for (int l = 0; l < LAYERS && r == CUDA_SUCCESS; l++)
            r = cuMemAlloc(&m->w[l], weight_bytes(l) + tail);
    } else if (!strcmp(layout, "one")) {
        uint64_t total = 0;
        for (int l = 0; l < LAYERS; l++)
            total += weight_bytes(l);
        CUdeviceptr buf;
        r = cuMemAlloc(&buf, total);
        for (int l = 0; l < LAYERS && r == CUDA_SUCCESS; l++) {
            m->w[l] = buf;
            buf += weight_bytes(l);
        }
    } else if (!strcmp(layout, "segments")) {
        for (int l = 0; l < LAYERS && r == CUDA_SUCCESS;) {
            uint64_t used = 0;
            int first = l;
            while (l < LAYERS && used + weight_bytes(l) <= SEGMENT)
                used += weight_bytes(l++);
            CUdeviceptr seg;
            r = cuMemAlloc(&seg, used);
            for (int i = first; i < l && r == CUDA_SUCCESS; i++) {
                m->w[i] = seg;
                seg += weight_bytes(i);
            }
        }
    } else {
        fprintf(stderr, "extent: unknown layout %s (per, odd, one, segments)\n", layout);
        exit(3);
    }
    return r;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: swt-extent per|odd|one|segments [graph]\n");
        return 3;
    }
    bool graph = argc > 2 && !strcmp(argv[2], "graph");
    CUcontext ctx;
    CUmodule mod;
    CUresult r;
    model_t m;
    memset(&m, 0, sizeof m);
#define CK(call)                      \
    if ((r = (call)) != CUDA_SUCCESS) \
        return fail(#call, r);
    if ((r = swt_open("extent", &ctx, &mod)) != CUDA_SUCCESS)
        return 2;
    CK(cuModuleGetFunction(&m.gemv, mod, "sg_gemv_f32"));
    CK(cuModuleGetFunction(&m.sum, mod, "sg_sum_f32"));
    CK(cuModuleGetFunction(&m.axpy, mod, "sg_axpy_f32"));
    CK(cuModuleGetFunction(&m.checksum, mod, "sg_checksum_u64"));
    CK(cuModuleGetFunction(&m.tma, mod, "sg_gemv_tma_f32"));
    CK(cuModuleGetFunction(&m.ptrs, mod, "sg_ptrs_u64"));
    CK(cuModuleGetFunction(&m.table, mod, "sg_gemv_table_f32"));
    CK(get_memops(&m.ops[0], 12000));
    CK(get_memops(&m.ops[1], 11000));
    if (m.ops[0].write32 == m.ops[1].write32) {
        fprintf(stderr, "extent: cuGetProcAddress gave the same cuStreamWriteValue32 for 11000 "
                        "and 12000\n");
        return 2;
    }
    CK(place(&m, argv[1]));

    float *host = malloc(weight_bytes(3)); /* the largest: rows_of(3) */
    const size_t res_bytes = (size_t)LAYERS * RES_PER_LAYER * 4;
    unsigned char *res = calloc(1, res_bytes);
    if (!host || !res) {
        fprintf(stderr, "extent: out of host memory\n");
        return 4;
    }
    for (int l = 0; l < LAYERS; l++) {
        for (uint64_t i = 0; i < 3 * slice_floats(l); i++)
            host[i] = value(l, i);
        CK(cuMemcpyHtoD(m.w[l], host, weight_bytes(l)));
        CK(encode(&m.desc[l], m.w[l], l));
        CK(cuMemAlloc(&m.u[l], slice_floats(l) * 4));
        CK(cuMemcpyHtoD(m.u[l], host + slice_floats(l), slice_floats(l) * 4));
    }
    for (uint32_t i = 0; i < COLS; i++)
        host[i] = value(99, i);
    CK(cuMemAlloc(&m.x, COLS * 4));
    CK(cuMemcpyHtoD(m.x, host, COLS * 4));
    CK(cuMemAlloc(&m.res, res_bytes));
    CK(cuMemsetD8(m.res, 0, res_bytes));
    CK(cuMemAlloc(&m.tables, LAYERS * 16));
    CK(cuMemAlloc(&m.once, LAYERS * 16));
    CK(cuStreamCreate(&m.s0, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&m.s1, CU_STREAM_NON_BLOCKING));
    CK(cuEventCreate(&m.fork, CU_EVENT_DISABLE_TIMING));
    CK(cuEventCreate(&m.join, CU_EVENT_DISABLE_TIMING));

    /* The first step builds the reused tables; a graph replays the rest,
     * eager steps rebuild them once more at REBUILD. */
    uint64_t h = 0xcbf29ce484222325ull;
    CK(step(&m, true));
    CK(cuStreamSynchronize(m.s0));
    CK(cuMemcpyDtoH(res, m.res, res_bytes));
    h = fnv(h, res, res_bytes);
    CUgraphExec exec = NULL;
    if (graph) {
        CUgraph g;
        CK(cuStreamBeginCapture(m.s0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
        CK(step(&m, false));
        CK(cuStreamEndCapture(m.s0, &g));
        CK(cuGraphInstantiateWithFlags(&exec, g, 0));
        CK(cuGraphDestroy(g));
    }
    for (int s = 1; s < STEPS; s++) {
        if (graph) {
            CK(cuGraphLaunch(exec, m.s0));
        } else {
            CK(step(&m, s == REBUILD));
            for (int l = 0; l < LAYERS; l++)
                CK(memops(&m, l, s));
        }
        CK(cuStreamSynchronize(m.s0));
        CK(cuMemcpyDtoH(res, m.res, res_bytes));
        h = fnv(h, res, res_bytes);
    }
    /* What the updates left in the weights, read back whole. */
    for (int l = 0; l < LAYERS; l++) {
        CK(cuMemcpyDtoH(host, m.w[l], weight_bytes(l)));
        h = fnv(h, host, weight_bytes(l));
        CK(cuMemcpyDtoH(host, m.u[l], slice_floats(l) * 4));
        h = fnv(h, host, slice_floats(l) * 4);
    }
    if (exec)
        CK(cuGraphExecDestroy(exec));
    printf("extent: layout=%s%s steps=%d\n", argv[1], graph ? " graph" : "", STEPS);
    printf("result: %016llx\n", (unsigned long long)h);
    free(host);
    free(res);
    return 0;
}

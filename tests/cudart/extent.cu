/*
 * extent: a kernel may touch any byte of the allocation its pointer points
 * into, through the real CUDA runtime, so that the same program runs on
 * simgpu (run.sh) and on a GPU (tests/gpu/lease.sh). The cases of
 * tests/spillway/extent.c but the TMA one: each layer's fused weight of
 * three slices (q | k | v) in one cudaMalloc, and each step
 *   1. gemv on q by the base, 2. gemv on k by an interior pointer,
 *   3. gemv on all three by the base (a fused kernel),
 *   4. a sum from k's pointer over [-slice, 2 * slice): negative offsets,
 *   5. an update of v in place through its interior pointer,
 *   6. a sum of the whole weight from the base a second kernel shares,
 *   7. sg_ptrs_u64 stores k's and v's pointers into a table, read by a
 *      gemv on a second stream after an event,
 *   8. a gemv through a table built at the first step and again at step
 *      REBUILD, from v's pointer, reused in between and after.
 * EXTENT_FORM=graph captures a step after the first and replays it.
 * Prints "result: HASH" of every step's results and the final weights.
 */
#include "common.cuh"

#include <vector>

enum { LAYERS = 8, COLS = 1024, STEPS = 6, REBUILD = 3 };

static uint32_t rows_of(int l) { return 128u * (1u + (uint32_t)l % 4u); }
static uint64_t slice_of(int l) { return (uint64_t)rows_of(l) * COLS; } /* floats */

/* Per layer in the result buffer: five outputs of up to 3 * 512 rows, two sums. */
enum { OUT = 3 * 512, PER_LAYER = 5 * OUT + 2 };

struct model {
    float *w[LAYERS], *x, *res;
    const float **table, **once;
    cudaStream_t s0, s1;
    cudaEvent_t fork, join;
};

static void layer(const model &m, int l, bool build)
{
    const uint32_t rows = rows_of(l), cols = COLS;
    const uint64_t slice = slice_of(l);
    float *W = m.w[l], *k = W + slice, *v = W + 2 * slice, *out = m.res + (uint64_t)l * PER_LAYER;
    sg_gemv_f32<<<blocks_for(rows), THREADS, 0, m.s0>>>(W, m.x, out, rows, cols);
    sg_gemv_f32<<<blocks_for(rows), THREADS, 0, m.s0>>>(k, m.x, out + OUT, rows, cols);
    sg_gemv_f32<<<blocks_for(3 * rows), THREADS, 0, m.s0>>>(W, m.x, out + 2 * OUT, 3 * rows, cols);
    sg_sum_f32<<<1, 1, 0, m.s0>>>(k, -(int64_t)slice, 2 * (int64_t)slice, out + 5 * OUT);
    sg_axpy_f32<<<blocks_for(rows), THREADS, 0, m.s0>>>(1.0f / 64, out, v, rows);
    sg_sum_f32<<<1, 1, 0, m.s0>>>(W, 0, 3 * (int64_t)slice, out + 5 * OUT + 1);
    CKL();

    sg_ptrs_u64<<<1, 32, 0, m.s0>>>(k, slice * sizeof(float), 2, (uint64_t *)(m.table + 2 * l));
    CK(cudaEventRecord(m.fork, m.s0));
    CK(cudaStreamWaitEvent(m.s1, m.fork, 0));
    sg_gemv_table_f32<<<blocks_for(rows), THREADS, 0, m.s1>>>(m.table + 2 * l, 1, m.x,
                                                              out + 3 * OUT, rows, cols);
    CK(cudaEventRecord(m.join, m.s1));
    CK(cudaStreamWaitEvent(m.s0, m.join, 0));

    if (build)
        sg_ptrs_u64<<<1, 32, 0, m.s0>>>(v, 0, 1, (uint64_t *)(m.once + l));
    sg_gemv_table_f32<<<blocks_for(rows), THREADS, 0, m.s0>>>(m.once + l, 0, m.x, out + 4 * OUT,
                                                              rows, cols);
    CKL();
}

static void step(const model &m, bool build)
{
    for (int l = 0; l < LAYERS; l++)
        layer(m, l, build);
}

int main(void)
{
    const char *form = getenv("EXTENT_FORM");
    const bool graph = form && !strcmp(form, "graph");
    print_runtime("extent");
    model m;
    std::vector<float> host(3 * slice_of(3));
    for (int l = 0; l < LAYERS; l++) {
        CK(cudaMalloc((void **)&m.w[l], 3 * slice_of(l) * sizeof(float)));
        det_fill(host.data(), 3 * slice_of(l), (uint32_t)l, 0.05f);
        CK(cudaMemcpy(m.w[l], host.data(), 3 * slice_of(l) * sizeof(float),
                      cudaMemcpyHostToDevice));
    }
    const size_t res_bytes = (size_t)LAYERS * PER_LAYER * sizeof(float);
    std::vector<unsigned char> res(res_bytes);
    det_fill(host.data(), COLS, 99, 1.0f);
    CK(cudaMalloc((void **)&m.x, COLS * sizeof(float)));
    CK(cudaMemcpy(m.x, host.data(), COLS * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMalloc((void **)&m.res, res_bytes));
    CK(cudaMemset(m.res, 0, res_bytes));
    CK(cudaMalloc((void **)&m.table, 2 * LAYERS * sizeof(float *)));
    CK(cudaMalloc((void **)&m.once, LAYERS * sizeof(float *)));
    CK(cudaStreamCreateWithFlags(&m.s0, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&m.s1, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&m.fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&m.join, cudaEventDisableTiming));

    uint64_t h = 0xcbf29ce484222325ull;
    cudaGraphExec_t exec = nullptr;
    for (int s = 0; s < STEPS; s++) {
        if (graph && s == 1) {
            cudaGraph_t g;
            CK(cudaStreamBeginCapture(m.s0, cudaStreamCaptureModeThreadLocal));
            step(m, false);
            CK(cudaStreamEndCapture(m.s0, &g));
            CK(cudaGraphInstantiate(&exec, g, 0));
            CK(cudaGraphDestroy(g));
        }
        if (exec)
            CK(cudaGraphLaunch(exec, m.s0));
        else
            step(m, s == 0 || s == REBUILD);
        CK(cudaStreamSynchronize(m.s0));
        CK(cudaMemcpy(res.data(), m.res, res_bytes, cudaMemcpyDeviceToHost));
        h = h * 31 + fnv1a(res.data(), res_bytes);
    }
    for (int l = 0; l < LAYERS; l++) {
        CK(cudaMemcpy(host.data(), m.w[l], 3 * slice_of(l) * sizeof(float),
                      cudaMemcpyDeviceToHost));
        h = h * 31 + fnv1a(host.data(), 3 * slice_of(l) * sizeof(float));
    }
    if (exec)
        CK(cudaGraphExecDestroy(exec));
    printf("extent: layers=%d steps=%d%s\n", LAYERS, STEPS, graph ? " graph" : "");
    printf("result: %016llx\n", (unsigned long long)h);
    return 0;
}

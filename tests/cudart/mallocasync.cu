/*
 * mallocasync: the stream-ordered allocator, as frameworks use it, with
 * every route its memory can take through spillway.
 *
 *   - Weights: even layers from cudaMalloc, odd layers from cudaMallocAsync
 *     on the default pool (with a release threshold): both tracked.
 *   - Biases: cudaMallocAsync, too small to track.
 *   - Each step's activations and a 4 MiB scratch buffer come from an
 *     explicitly created pool (cudaMallocFromPoolAsync) and are freed with
 *     cudaFreeAsync on the stream that used them, the next step's
 *     allocations reusing them: the scratch is tracked, its free waits for
 *     the stream.
 *   - A pool that asks for exportable handles (another process may import
 *     it): its memory must be the driver's, untracked.
 *   - A capture that allocates and frees inside the graph (memory nodes):
 *     untracked, while the graph reads tracked weights.
 * The scratch buffers' and the exportable and graph buffers' checksums
 * join the result, so every one of them is checked against the host.
 */
#include "common.cuh"

enum { SCRATCH = 4 << 20 };

/* Fills SCRATCH bytes at p with `value` and checksums them into *sum, on s. */
static void fill_and_sum(uint32_t *p, uint32_t value, uint64_t *sum, cudaStream_t s)
{
    sg_fill_u32<<<blocks_for(SCRATCH / 4), THREADS, 0, s>>>(p, value, SCRATCH / 4);
    CKL();
    sg_checksum_u64<<<1, 1, 0, s>>>(p, SCRATCH, sum);
    CKL();
}

/* What fill_and_sum must find. */
static uint64_t want_sum(uint32_t value)
{
    uint32_t *h = (uint32_t *)malloc(SCRATCH);
    for (uint32_t i = 0; i < SCRATCH / 4; i++)
        h[i] = value;
    uint64_t v = fnv1a(h, SCRATCH);
    free(h);
    return v;
}

static int check_sum(const char *what, uint64_t got, uint32_t value)
{
    if (got == want_sum(value))
        return 0;
    fprintf(stderr, "%s: checksum %016llx, the host says %016llx\n", what, (unsigned long long)got,
            (unsigned long long)want_sum(value));
    return 1;
}

int main(void)
{
    const uint32_t n = 1024, layers = 6, steps = 4;
    print_runtime("mallocasync");
    model_t m = model_make(n, layers);
    int dev = 0, pools = 0;
    CK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, dev));
    if (!pools) {
        fprintf(stderr, "the device says it has no memory pools\n");
        return 1;
    }
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    cudaMemPool_t def;
    CK(cudaDeviceGetDefaultMemPool(&def, dev));
    uint64_t threshold = UINT64_MAX;
    CK(cudaMemPoolSetAttribute(def, cudaMemPoolAttrReleaseThreshold, &threshold));
    uint64_t got = 0;
    CK(cudaMemPoolGetAttribute(def, cudaMemPoolAttrReleaseThreshold, &got));
    if (got != threshold) {
        fprintf(stderr, "release threshold reads %llu\n", (unsigned long long)got);
        return 1;
    }

    float *dW[layers], *db[layers];
    for (uint32_t l = 0; l < layers; l++) {
        if (l % 2)
            CK(cudaMallocAsync((void **)&dW[l], (size_t)n * n * sizeof(float), s));
        else
            CK(cudaMalloc((void **)&dW[l], (size_t)n * n * sizeof(float)));
        CK(cudaMallocAsync((void **)&db[l], n * sizeof(float), s));
        CK(cudaMemcpyAsync(dW[l], m.W[l], (size_t)n * n * sizeof(float), cudaMemcpyHostToDevice, s));
        CK(cudaMemcpyAsync(db[l], m.b[l], n * sizeof(float), cudaMemcpyHostToDevice, s));
    }

    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    cudaMemPool_t pool;
    CK(cudaMemPoolCreate(&pool, &props));

    float *hin, *hout;
    CK(cudaMallocHost((void **)&hin, n * sizeof(float)));
    CK(cudaMallocHost((void **)&hout, n * sizeof(float)));
    float *want = (float *)malloc(n * sizeof(float));
    uint64_t *dsum, hsum;
    CK(cudaMalloc((void **)&dsum, sizeof *dsum));
    uint64_t result = 0xcbf29ce484222325ull;
    for (uint32_t step = 0; step < steps; step++) {
        det_fill(hin, n, 2000 + step, 1.0f);
        memcpy(want, hin, n * sizeof(float));
        model_ref(&m, want);
        float *x, *y;
        CK(cudaMallocFromPoolAsync((void **)&x, n * sizeof(float), pool, s));
        CK(cudaMallocFromPoolAsync((void **)&y, n * sizeof(float), pool, s));
        uint32_t *scratch;
        CK(cudaMallocFromPoolAsync((void **)&scratch, SCRATCH, pool, s));
        fill_and_sum(scratch, 7 + step, dsum, s);
        CK(cudaMemcpyAsync(&hsum, dsum, sizeof hsum, cudaMemcpyDeviceToHost, s));
        CK(cudaFreeAsync(scratch, s));
        CK(cudaMemcpyAsync(x, hin, n * sizeof(float), cudaMemcpyHostToDevice, s));
        for (uint32_t l = 0; l < layers; l++) {
            dev_layer(dW[l], db[l], x, y, n, s);
            float *t = x;
            x = y;
            y = t;
        }
        CK(cudaMemcpyAsync(hout, x, n * sizeof(float), cudaMemcpyDeviceToHost, s));
        CK(cudaFreeAsync(x, s));
        CK(cudaFreeAsync(y, s));
        CK(cudaStreamSynchronize(s));
        if (check_equal("mallocasync output", hout, want, n) || check_sum("scratch", hsum, 7 + step))
            return 1;
        result = (result ^ fnv1a(hout, n * sizeof(float))) * 0x100000001b3ull;
    }
    /* A pool whose memory another process may import. */
    cudaMemPoolProps xprops = props;
    xprops.handleTypes = cudaMemHandleTypePosixFileDescriptor;
    cudaMemPool_t xpool;
    CK(cudaMemPoolCreate(&xpool, &xprops));
    uint32_t *shared;
    CK(cudaMallocFromPoolAsync((void **)&shared, SCRATCH, xpool, s));
    fill_and_sum(shared, 99, dsum, s);
    CK(cudaMemcpyAsync(&hsum, dsum, sizeof hsum, cudaMemcpyDeviceToHost, s));
    CK(cudaFreeAsync(shared, s));
    CK(cudaStreamSynchronize(s));
    if (check_sum("exportable pool", hsum, 99))
        return 1;
    result = (result ^ hsum) * 0x100000001b3ull;

    /* A graph with its own memory, reading the tracked weights. */
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    float *gx, *gy;
    CK(cudaMallocAsync((void **)&gx, n * sizeof(float), s));
    CK(cudaMallocAsync((void **)&gy, n * sizeof(float), s));
    det_fill(hin, n, 3000, 1.0f);
    memcpy(want, hin, n * sizeof(float));
    model_ref(&m, want);
    CK(cudaMemcpyAsync(gx, hin, n * sizeof(float), cudaMemcpyHostToDevice, s));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    uint32_t *gscratch;
    CK(cudaMallocAsync((void **)&gscratch, SCRATCH, s));
    fill_and_sum(gscratch, 1234, dsum, s);
    CK(cudaFreeAsync(gscratch, s));
    for (uint32_t l = 0; l < layers; l++) {
        dev_layer(dW[l], db[l], l % 2 ? gy : gx, l % 2 ? gx : gy, n, s);
    }
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaGraphLaunch(exec, s));
    CK(cudaMemcpyAsync(&hsum, dsum, sizeof hsum, cudaMemcpyDeviceToHost, s));
    CK(cudaMemcpyAsync(hout, layers % 2 ? gy : gx, n * sizeof(float), cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    if (check_equal("graph output", hout, want, n) || check_sum("graph memory", hsum, 1234))
        return 1;
    result = (result ^ fnv1a(hout, n * sizeof(float)) ^ hsum) * 0x100000001b3ull;
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    CK(cudaFreeAsync(gx, s));
    CK(cudaFreeAsync(gy, s));

    for (uint32_t l = 0; l < layers; l++) {
        if (l % 2)
            CK(cudaFreeAsync(dW[l], s));
        else
            CK(cudaFree(dW[l]));
        CK(cudaFreeAsync(db[l], s));
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaMemPoolTrimTo(def, 0));
    CK(cudaMemPoolDestroy(pool));
    CK(cudaMemPoolDestroy(xpool));
    CK(cudaFree(dsum));
    CK(cudaFreeHost(hin));
    CK(cudaFreeHost(hout));
    CK(cudaStreamDestroy(s));
    printf("result: %016llx\n", (unsigned long long)result);
    return 0;
}

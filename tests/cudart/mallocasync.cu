/*
 * mallocasync: the stream-ordered allocator, as frameworks use it.
 *
 * The weights come from cudaMalloc (spillway tracks those; stream-ordered
 * allocations pass through it untracked), the biases from cudaMallocAsync
 * on the default pool (with a release threshold); each step's
 * activations come from an explicitly created pool
 * (cudaMallocFromPoolAsync) and are freed with cudaFreeAsync on the
 * stream that used them, with the next step's allocations reusing them.
 */
#include "common.cuh"

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
    uint64_t result = 0xcbf29ce484222325ull;
    for (uint32_t step = 0; step < steps; step++) {
        det_fill(hin, n, 2000 + step, 1.0f);
        memcpy(want, hin, n * sizeof(float));
        model_ref(&m, want);
        float *x, *y;
        CK(cudaMallocFromPoolAsync((void **)&x, n * sizeof(float), pool, s));
        CK(cudaMallocFromPoolAsync((void **)&y, n * sizeof(float), pool, s));
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
        if (check_equal("mallocasync output", hout, want, n))
            return 1;
        result = (result ^ fnv1a(hout, n * sizeof(float))) * 0x100000001b3ull;
    }
    for (uint32_t l = 0; l < layers; l++) {
        CK(cudaFree(dW[l]));
        CK(cudaFreeAsync(db[l], s));
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaMemPoolTrimTo(def, 0));
    CK(cudaMemPoolDestroy(pool));
    CK(cudaFreeHost(hin));
    CK(cudaFreeHost(hout));
    CK(cudaStreamDestroy(s));
    printf("result: %016llx\n", (unsigned long long)result);
    return 0;
}

/*
 * eager: the real CUDA runtime's everyday calls, run eagerly.
 *
 * cudaMalloc/cudaMemcpy of the weights; pinned input and output
 * (cudaMallocHost); a non-blocking stream with a priority and a blocking
 * one; cudaMemcpyAsync, cudaMemsetAsync and cudaMemset; <<<>>> launches
 * of the built-in-named kernels; events ordering the two streams and
 * timing; a device-side checksum. Every step's output is compared with
 * the host reference.
 */
#include "common.cuh"

int main(void)
{
    const uint32_t n = 1024, layers = 6, steps = 3;
    print_runtime("eager");
    model_t m = model_make(n, layers);

    float *dW[layers], *db[layers], *dx, *dy;
    for (uint32_t l = 0; l < layers; l++) {
        CK(cudaMalloc((void **)&dW[l], (size_t)n * n * sizeof(float)));
        CK(cudaMalloc((void **)&db[l], n * sizeof(float)));
        CK(cudaMemcpy(dW[l], m.W[l], (size_t)n * n * sizeof(float), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(db[l], m.b[l], n * sizeof(float), cudaMemcpyHostToDevice));
    }
    CK(cudaMalloc((void **)&dx, n * sizeof(float)));
    CK(cudaMalloc((void **)&dy, n * sizeof(float)));
    CK(cudaMemset(dy, 0, n * sizeof(float)));
    uint64_t *dsum;
    CK(cudaMalloc((void **)&dsum, sizeof(uint64_t)));

    /* What frameworks ask of kernels and pointers before using them. */
    CK(cudaFuncSetAttribute((const void *)sg_gemv_f32,
                            cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, (const void *)sg_gemv_f32));
    cudaPointerAttributes pa;
    CK(cudaPointerGetAttributes(&pa, dW[0]));
    if (fa.maxDynamicSharedSizeBytes != 64 << 10 || fa.maxThreadsPerBlock < THREADS ||
        pa.type != cudaMemoryTypeDevice || pa.devicePointer != dW[0]) {
        fprintf(stderr, "kernel or pointer attributes wrong: smem %d threads %d type %d\n",
                fa.maxDynamicSharedSizeBytes, fa.maxThreadsPerBlock, (int)pa.type);
        return 1;
    }

    int least = 0, greatest = 0;
    CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t compute, copy;
    CK(cudaStreamCreateWithPriority(&compute, cudaStreamNonBlocking, greatest));
    CK(cudaStreamCreateWithFlags(&copy, cudaStreamDefault));
    int prio = 0;
    unsigned flags = 0;
    CK(cudaStreamGetPriority(compute, &prio));
    CK(cudaStreamGetFlags(compute, &flags));
    if (prio != greatest || flags != cudaStreamNonBlocking) {
        fprintf(stderr, "stream priority %d flags %u, asked for %d and %u\n", prio, flags,
                greatest, (unsigned)cudaStreamNonBlocking);
        return 1;
    }

    float *hin, *hout;
    uint64_t *hsum;
    CK(cudaMallocHost((void **)&hin, n * sizeof(float)));
    CK(cudaMallocHost((void **)&hout, n * sizeof(float)));
    CK(cudaMallocHost((void **)&hsum, sizeof(uint64_t)));
    cudaEvent_t in_ready, done, t0, t1;
    CK(cudaEventCreateWithFlags(&in_ready, cudaEventDisableTiming));
    CK(cudaEventCreate(&done));
    CK(cudaEventCreate(&t0));
    CK(cudaEventCreate(&t1));

    float *want = (float *)malloc(n * sizeof(float));
    uint64_t result = 0xcbf29ce484222325ull;
    for (uint32_t step = 0; step < steps; step++) {
        det_fill(hin, n, 1000 + step, 1.0f);
        memcpy(want, hin, n * sizeof(float));
        model_ref(&m, want);

        /* The input arrives on the copy stream; compute waits for it. */
        CK(cudaMemsetAsync(dx, 0xff, n * sizeof(float), copy));
        CK(cudaMemcpyAsync(dx, hin, n * sizeof(float), cudaMemcpyHostToDevice, copy));
        CK(cudaEventRecord(in_ready, copy));
        CK(cudaStreamWaitEvent(compute, in_ready, 0));
        CK(cudaEventRecord(t0, compute));
        float *x = dx, *y = dy;
        for (uint32_t l = 0; l < layers; l++) {
            dev_layer(dW[l], db[l], x, y, n, compute);
            float *t = x;
            x = y;
            y = t;
        }
        sg_checksum_u64<<<1, 1, 0, compute>>>(x, n * sizeof(float), dsum);
        CKL();
        CK(cudaEventRecord(t1, compute));
        CK(cudaMemcpyAsync(hout, x, n * sizeof(float), cudaMemcpyDeviceToHost, compute));
        CK(cudaMemcpyAsync(hsum, dsum, sizeof(uint64_t), cudaMemcpyDeviceToHost, compute));
        CK(cudaEventRecord(done, compute));
        CK(cudaEventSynchronize(done));
        float ms = -1.0f;
        CK(cudaEventElapsedTime(&ms, t0, t1));
        if (!(ms >= 0.0f)) {
            fprintf(stderr, "elapsed time %f ms\n", (double)ms);
            return 1;
        }
        if (check_equal("eager output", hout, want, n))
            return 1;
        if (*hsum != fnv1a(want, n * sizeof(float))) {
            fprintf(stderr, "device checksum %016llx, host %016llx\n",
                    (unsigned long long)*hsum, (unsigned long long)fnv1a(want, n * sizeof(float)));
            return 1;
        }
        result = (result ^ *hsum) * 0x100000001b3ull;
        /* The buffers swapped an even or odd number of times: keep dx the input. */
        if (x != dx) {
            float *t = dx;
            dx = dy;
            dy = t;
        }
    }
    CK(cudaStreamSynchronize(copy));
    CK(cudaDeviceSynchronize());

    for (uint32_t l = 0; l < layers; l++) {
        CK(cudaFree(dW[l]));
        CK(cudaFree(db[l]));
    }
    CK(cudaFree(dx));
    CK(cudaFree(dy));
    CK(cudaFree(dsum));
    CK(cudaFree(NULL));
    CK(cudaFreeHost(hin));
    CK(cudaFreeHost(hout));
    CK(cudaFreeHost(hsum));
    CK(cudaEventDestroy(in_ready));
    CK(cudaEventDestroy(done));
    CK(cudaEventDestroy(t0));
    CK(cudaEventDestroy(t1));
    CK(cudaStreamDestroy(compute));
    CK(cudaStreamDestroy(copy));
    printf("result: %016llx\n", (unsigned long long)result);
    return 0;
}

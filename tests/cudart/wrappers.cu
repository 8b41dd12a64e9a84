/*
 * wrappers: spillway's runtime wrappers meet the real runtime.
 *
 * With the shared runtime every cudaMalloc and cudaLaunchKernel passes
 * spillway's runtime wrapper and then its driver wrapper (the runtime
 * calls cuMemAlloc_v2 and cuLaunchKernel); with the static runtime only
 * the driver wrapper. Either way each allocation and launch must be
 * counted once, and cudaMemGetInfo adjusted once with
 * SPILLWAY_MEMINFO=virtual (wrappers.sh checks spillway's report).
 * Launches use cudaLaunchKernel and cudaLaunchKernelExC. Prints the
 * number of launches and the total memory the runtime reports.
 */
#include "common.cuh"

#include <cuda.h>

enum { BIG = 4u << 20, NBIG = 3, ROUNDS = 4 };

int main(void)
{
    void *small, *big[NBIG];
    CK(cudaMalloc(&small, 4096)); /* below SPILLWAY_MIN_ALLOC: passes through */
    for (int i = 0; i < NBIG; i++)
        CK(cudaMalloc(&big[i], BIG));
    int launches = 0;
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < NBIG; i++) {
            uint32_t v = (uint32_t)(r * 10 + i);
            uint64_t n = BIG / 4;
            void *args[] = {&big[i], &v, &n};
            if (r % 2 == 0) {
                CK(cudaLaunchKernel((const void *)sg_fill_u32, dim3(64), dim3(THREADS), args, 0, 0));
            } else {
                cudaLaunchConfig_t c = {};
                c.gridDim = dim3(64);
                c.blockDim = dim3(THREADS);
                CK(cudaLaunchKernelExC(&c, (const void *)sg_fill_u32, args));
            }
            launches++;
        }
    for (int i = 0; i < NBIG; i++) {
        uint32_t got[2];
        CK(cudaMemcpy(got, (char *)big[i] + BIG - 8, 8, cudaMemcpyDeviceToHost));
        uint32_t want = (uint32_t)((ROUNDS - 1) * 10 + i);
        if (got[0] != want || got[1] != want) {
            fprintf(stderr, "wrappers: buffer %d holds %u, want %u\n", i, got[1], want);
            return 1;
        }
    }
    /* The runtime's answer and the driver's must agree, adjusted once. */
    size_t rf, rt, df, dt;
    CK(cudaMemGetInfo(&rf, &rt));
    if (cuMemGetInfo(&df, &dt) != CUDA_SUCCESS)
        return 2;
    if (rt != dt) {
        fprintf(stderr, "wrappers: cudaMemGetInfo total %zu, cuMemGetInfo total %zu\n", rt, dt);
        return 1;
    }
    for (int i = 0; i < NBIG; i++)
        CK(cudaFree(big[i]));
    CK(cudaFree(small));
    printf("wrappers: ok launches=%d total=%zu\n", launches, rt);
    return 0;
}

/*
 * A program that uses the CUDA runtime (the fake one beside it) the way
 * most applications do: cudaMalloc, cudaLaunchKernel, cudaLaunchKernelExC,
 * cudaMemGetInfo, cudaFree. It checks its own results and prints the
 * number of launches it made, so the test can compare spillway's count.
 * Exit: 0 ok, 1 wrong result, 2 CUDA error.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define BIG (4u << 20)
#define NBIG 3
#define ROUNDS 4

#define CK(call)                                                              \
    do {                                                                      \
        int e_ = (int)(call);                                                 \
        if (e_) {                                                             \
            fprintf(stderr, "rtapp: %s failed: %d\n", #call, e_);             \
            exit(2);                                                          \
        }                                                                     \
    } while (0)

int main(void)
{
    void *small, *big[NBIG];
    CK(cudaMalloc(&small, 4096)); /* below SPILLWAY_MIN_ALLOC: passes through */
    for (int i = 0; i < NBIG; i++)
        CK(cudaMalloc(&big[i], BIG));
    CUmodule mod;
    CUfunction fill;
    CK(cuModuleLoadData(&mod, "simgpu-builtin"));
    CK(cuModuleGetFunction(&fill, mod, "sg_fill_u32"));

    int launches = 0;
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < NBIG; i++) {
            uint32_t v = (uint32_t)(r * 10 + i);
            uint64_t n = BIG / 4;
            void *args[] = {&big[i], &v, &n};
            if (r % 2 == 0) {
                CK(cudaLaunchKernel((const void *)fill, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, 0));
            } else {
                cudaLaunchConfig_t c = {.gridDim = {1, 1, 1}, .blockDim = {1, 1, 1}};
                CK(cudaLaunchKernelExC(&c, (const void *)fill, args));
            }
            launches++;
        }
    for (int i = 0; i < NBIG; i++) {
        uint32_t got[2];
        CK(cuMemcpyDtoH(got, (CUdeviceptr)big[i] + BIG - 8, 8));
        uint32_t want = (uint32_t)((ROUNDS - 1) * 10 + i);
        if (got[0] != want || got[1] != want) {
            fprintf(stderr, "rtapp: buffer %d holds %u, want %u\n", i, got[1], want);
            return 1;
        }
    }
    /* The runtime's answer and the driver's must agree, adjusted once. */
    size_t rf, rt, df, dt;
    CK(cudaMemGetInfo(&rf, &rt));
    CK(cuMemGetInfo(&df, &dt));
    if (rt != dt) {
        fprintf(stderr, "rtapp: cudaMemGetInfo total %zu, cuMemGetInfo total %zu\n", rt, dt);
        return 1;
    }
    for (int i = 0; i < NBIG; i++)
        CK(cudaFree(big[i]));
    CK(cudaFree(small));
    printf("rtapp: ok launches=%d total=%zu\n", launches, rt);
    return 0;
}

/*
 * sg-direct: the smallest program that reaches the driver the ordinary way,
 * linked with -lcuda and calling its exported symbols (as Triton's launcher
 * does).  It fills two device vectors, runs y = a*x + y and checks the
 * result.
 *
 * Prints "direct: ok" and exits 0; exits 1 on a wrong value, 2 on a CUDA
 * error (printing the error name and the call).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define N 4096u
#define BLOCK 256u

/* simgpu accepts any image whose text starts with this. */
static const char image[] = "simgpu-builtin";

/* Report a failed call and give the exit status for it. */
static int cuda_fail(CUresult rc, const char *call)
{
    const char *name = NULL;

    if (cuGetErrorName(rc, &name) != CUDA_SUCCESS || name == NULL)
        name = "unknown CUresult";
    fprintf(stderr, "direct: CUDA error %s (%d) in %s\n", name, (int)rc, call);
    return 2;
}

/* Evaluate a driver call; on error report it and leave through cleanup. */
#define CK(call)                                                               \
    do {                                                                       \
        CUresult rc_ = (call);                                                 \
        if (rc_ != CUDA_SUCCESS) {                                             \
            status = cuda_fail(rc_, #call);                                    \
            goto cleanup;                                                      \
        }                                                                      \
    } while (0)

/* Fill count 32-bit words at dst with value, on the legacy default stream. */
static CUresult fill_u32(CUfunction fill, CUdeviceptr dst, uint32_t value, uint64_t count)
{
    void *params[] = {&dst, &value, &count};

    return cuLaunchKernel(fill, (unsigned)((count + BLOCK - 1) / BLOCK), 1, 1,
                          BLOCK, 1, 1, 0, NULL, params, NULL);
}

static uint32_t float_bits(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

int main(void)
{
    CUdevice dev = 0;
    CUcontext ctx = NULL;
    CUmodule mod = NULL;
    CUfunction fill, axpy;
    CUdeviceptr x = 0, y = 0;
    float *host = NULL;
    int retained = 0;
    int status = 0;
    uint64_t n = N;
    /* Values exact in binary so the check can use ==: 2*1.5 + 0.25 = 3.25. */
    float a = 2.0f;
    const float want = 3.25f;

    host = malloc(N * sizeof(float));
    if (host == NULL) {
        fprintf(stderr, "direct: out of host memory\n");
        return 2;
    }
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    retained = 1;
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, image));
    CK(cuModuleGetFunction(&fill, mod, "sg_fill_u32"));
    CK(cuModuleGetFunction(&axpy, mod, "sg_axpy_f32"));
    CK(cuMemAlloc(&x, N * sizeof(float)));
    CK(cuMemAlloc(&y, N * sizeof(float)));

    CK(fill_u32(fill, x, float_bits(1.5f), N));
    CK(fill_u32(fill, y, float_bits(0.25f), N));
    {
        void *params[] = {&a, &x, &y, &n};

        CK(cuLaunchKernel(axpy, N / BLOCK, 1, 1, BLOCK, 1, 1, 0, NULL, params, NULL));
    }
    /* A synchronous copy on the legacy stream waits for the kernels. */
    CK(cuMemcpyDtoH(host, y, N * sizeof(float)));
    for (unsigned i = 0; i < N; i++) {
        if (host[i] != want) {
            fprintf(stderr, "direct: y[%u] = %.9g, want %.9g\n", i, host[i], want);
            status = 1;
            goto cleanup;
        }
    }
    printf("direct: ok\n");

cleanup:
    /* Best effort: after a sticky error these fail too, and that is fine. */
    if (y != 0)
        cuMemFree(y);
    if (x != 0)
        cuMemFree(x);
    if (mod != NULL)
        cuModuleUnload(mod);
    if (retained)
        cuDevicePrimaryCtxRelease(dev);
    free(host);
    return status;
}

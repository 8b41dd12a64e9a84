/*
 * swt-hostwrite: a host copy into a range whose window copy is still live
 * (test_failpaths.c, model "host-write").
 *
 * LAYERS weights of 1 MiB of floats, more than the test's GPU budget
 * holds. Each step, for every weight: write a new first element
 * (cuMemcpyHtoDAsync of 4 bytes), then read it with sg_gemv_f32 over a
 * 1 x 1 view (so the weight is named by an argument and streamed). Under
 * spillway a streamed weight's window copy, made for the step before, is
 * still live when the host writes its home: the copy must be dropped
 * first, so that the read sees the new value, not the copy's.
 *
 * Every value read is compared with the host's model. Prints
 * "hostwrite: ok" and exits 0; 1 on a wrong value, 2 on a CUDA error
 * (with its CUDA_ERROR_* name).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

#include "swt_prog.h"

#define LAYERS 6
#define FLOATS (256u * 1024u) /* 1 MiB */
#define STEPS 8

static int fail(const char *what, CUresult r) { return swt_cuda_fail("hostwrite", what, r); }

/* Launches y[slot] = w[0] * x[0] on s. */
static CUresult read_first(CUfunction gemv, CUdeviceptr w, CUdeviceptr x, CUdeviceptr y,
                           uint32_t slot, CUstream s)
{
    uint32_t one = 1;
    CUdeviceptr ys = y + 4u * slot;
    void *p[] = {&w, &x, &ys, &one, &one};
    return cuLaunchKernel(gemv, 1, 1, 1, 1, 1, 1, 0, s, p, NULL);
}

int main(void)
{
    CUcontext ctx;
    CUmodule mod;
    CUfunction gemv;
    CUstream s;
    CUresult r;
#define CK(call)                      \
    if ((r = (call)) != CUDA_SUCCESS) \
        return fail(#call, r);
    if ((r = swt_open("hostwrite", &ctx, &mod)) != CUDA_SUCCESS)
        return 2;
    CK(cuModuleGetFunction(&gemv, mod, "sg_gemv_f32"));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    static float init[FLOATS];
    CUdeviceptr w[LAYERS], x, y;
    CK(cuMemAlloc(&x, 4096));
    CK(cuMemAlloc(&y, 4096));
    float one = 1.0f;
    CK(cuMemcpyHtoD(x, &one, sizeof one));
    for (int l = 0; l < LAYERS; l++) {
        for (uint32_t e = 0; e < FLOATS; e++)
            init[e] = (float)((l * 7 + e) % 11);
        CK(cuMemAlloc(&w[l], sizeof init));
        CK(cuMemcpyHtoD(w[l], init, sizeof init));
    }
    int bad = 0;
    for (int step = 0; step < STEPS; step++) {
        /* Each weight is written by the host, then read. */
        static float v[LAYERS]; /* the copies' sources: not changed before the sync */
        for (int l = 0; l < LAYERS; l++) {
            v[l] = (float)(100 * (step + 1) + l);
            CK(cuMemcpyHtoDAsync(w[l], &v[l], sizeof v[l], s));
            CK(read_first(gemv, w[l], x, y, (uint32_t)l, s));
        }
        float got[LAYERS];
        CK(cuMemcpyDtoHAsync(got, y, sizeof got, s));
        CK(cuStreamSynchronize(s));
        for (int l = 0; l < LAYERS; l++)
            if (got[l] != v[l]) {
                fprintf(stderr, "hostwrite: step %d weight %d: read %g, want %g\n", step, l,
                        got[l], v[l]);
                bad = 1;
            }
    }
    for (int l = 0; l < LAYERS; l++)
        CK(cuMemFree(w[l]));
    if (!bad)
        printf("hostwrite: ok\n");
    return bad;
}

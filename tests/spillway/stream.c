/*
 * swt-stream: what the streaming window must keep right when kernels and
 * copies WRITE the ranges it streams.
 *
 * Ten weight buffers of 4 MiB, floats, more than the test's GPU budget
 * holds, used in a loop as a training step uses them, on two streams:
 *   - a read: y[i] = sum of every weight's first element, by sg_gemv_f32
 *     over a 1 x 1 view of each weight, so every buffer is named by an
 *     argument each step (and streamed);
 *   - a write through an argument: w[i] += a * g (sg_axpy_f32, y = w[i]),
 *     which under spillway writes the window copy, which must go home;
 *   - every third step, a host copy into one weight (cuMemcpyHtoDAsync),
 *     which must not be undone by a window copy made before it;
 *   - every fourth step, a device-to-host read of one weight, which must
 *     see the kernels' writes.
 * At the end every weight is read back and compared bit for bit with a
 * host model of the same arithmetic (one float add per element per step,
 * in the same order), and the device-to-host reads along the way too.
 *
 * Prints "stream: ok" and exits 0; 1 on a wrong value, 2 on a CUDA error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "swt_prog.h"

#define MIB (1024u * 1024u)
#define LAYERS 10
#define FLOATS (MIB) /* 4 MiB of floats per weight */
#define STEPS 12

static int fail(const char *what, CUresult r) { return swt_cuda_fail("stream", what, r); }

/* The host model: the value element e of weight l holds after `steps`
 * steps of the loop below, given the overwrites. */
static float g_of(uint64_t e) { return (float)(e % 7) * 0.25f; }
static float init_of(int l, uint64_t e) { return (float)((l * 31 + e) % 13); }

/* Runs the loop with the host buffers main owns, so that every way out of
 * it, CUDA errors included, leaves them to main to free. */
static int run(float *model, float *h, float *host_g)
{
    CUcontext ctx;
    CUmodule mod;
    CUfunction gemv, axpy;
    CUstream s[2];
    CUevent ev;
    CUresult r;
#define CK(call)                          \
    if ((r = (call)) != CUDA_SUCCESS)     \
        return fail(#call, r);
    if ((r = swt_open("stream", &ctx, &mod)) != CUDA_SUCCESS)
        return 2;
    CK(cuModuleGetFunction(&gemv, mod, "sg_gemv_f32"));
    CK(cuModuleGetFunction(&axpy, mod, "sg_axpy_f32"));
    CK(cuStreamCreate(&s[0], CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&s[1], CU_STREAM_NON_BLOCKING));
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));

    CUdeviceptr w[LAYERS], gbuf, x, y;
    CK(cuMemAlloc(&gbuf, (size_t)FLOATS * sizeof(float)));
    CK(cuMemAlloc(&x, 4096));
    CK(cuMemAlloc(&y, 4096));
    for (uint64_t e = 0; e < FLOATS; e++)
        host_g[e] = g_of(e);
    CK(cuMemcpyHtoD(gbuf, host_g, (size_t)FLOATS * sizeof(float)));
    float one = 1.0f;
    CK(cuMemcpyHtoD(x, &one, sizeof one));
    for (int l = 0; l < LAYERS; l++) {
        CK(cuMemAlloc(&w[l], (size_t)FLOATS * sizeof(float)));
        for (uint64_t e = 0; e < FLOATS; e++)
            model[(size_t)l * FLOATS + e] = init_of(l, e);
        CK(cuMemcpyHtoD(w[l], model + (size_t)l * FLOATS, (size_t)FLOATS * sizeof(float)));
    }
    int bad = 0;
    for (int step = 0; step < STEPS; step++) {
        for (int l = 0; l < LAYERS; l++) {
            CUstream st = s[l % 2];
            /* Layer l waits for layer l-1, on the other stream. */
            CK(cuStreamWaitEvent(st, ev, 0));
            uint32_t one_u = 1;
            CUdeviceptr yl = y + 4u * (uint32_t)l;
            void *gp[] = {&w[l], &x, &yl, &one_u, &one_u};
            CK(cuLaunchKernel(gemv, 1, 1, 1, 1, 1, 1, 0, st, gp, NULL));
            float a = 0.5f;
            uint64_t n = FLOATS;
            void *ap[] = {&a, &gbuf, &w[l], &n};
            CK(cuLaunchKernel(axpy, 64, 1, 1, 256, 1, 1, 0, st, ap, NULL));
            float *m = model + (size_t)l * FLOATS;
            for (uint64_t e = 0; e < FLOATS; e++)
                m[e] = 0.5f * host_g[e] + m[e];
            CK(cuEventRecord(ev, st));
        }
        if (step % 3 == 2) { /* a host copy into a streamed weight */
            int l = step % LAYERS;
            float *m = model + (size_t)l * FLOATS;
            for (uint64_t e = 0; e < FLOATS; e++)
                m[e] = (float)((e + (uint64_t)step) % 5);
            CK(cuStreamWaitEvent(s[0], ev, 0));
            CK(cuMemcpyHtoDAsync(w[l], m, (size_t)FLOATS * sizeof(float), s[0]));
            CK(cuEventRecord(ev, s[0]));
        }
        if (step % 4 == 3) { /* a read of a weight the kernels wrote */
            int l = (step + 1) % LAYERS;
            CK(cuStreamWaitEvent(s[1], ev, 0));
            CK(cuMemcpyDtoHAsync(h, w[l], (size_t)FLOATS * sizeof(float), s[1]));
            CK(cuStreamSynchronize(s[1]));
            if (memcmp(h, model + (size_t)l * FLOATS, (size_t)FLOATS * sizeof(float)) != 0) {
                fprintf(stderr, "stream: step %d: weight %d read back wrong\n", step, l);
                bad = 1;
            }
        }
    }
    CK(cuCtxSynchronize());
    for (int l = 0; l < LAYERS; l++) {
        CK(cuMemcpyDtoH(h, w[l], (size_t)FLOATS * sizeof(float)));
        for (uint64_t e = 0; e < FLOATS; e++)
            if (memcmp(&h[e], &model[(size_t)l * FLOATS + e], sizeof(float)) != 0) {
                fprintf(stderr, "stream: weight %d element %llu is %g, want %g\n", l,
                        (unsigned long long)e, h[e], model[(size_t)l * FLOATS + e]);
                bad = 1;
                break;
            }
    }
    for (int l = 0; l < LAYERS; l++)
        CK(cuMemFree(w[l]));
    if (!bad)
        printf("stream: ok\n");
    return bad;
}

int main(void)
{
    float *model = malloc((size_t)LAYERS * FLOATS * sizeof(float));
    float *h = malloc((size_t)FLOATS * sizeof(float));
    float *host_g = malloc((size_t)FLOATS * sizeof(float));
    int rc = model && h && host_g ? run(model, h, host_g)
                                  : (fprintf(stderr, "stream: out of host memory\n"), 2);
    free(model);
    free(h);
    free(host_g);
    return rc;
}

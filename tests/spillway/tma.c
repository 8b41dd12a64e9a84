/*
 * swt-tma: weights read only through TMA descriptors, as a Hopper GEMM
 * reads them (test_hooks.c).
 *
 * LAYERS weight matrices of 4 MiB each (tracked: each is over 2 MiB), one
 * CUtensorMap per matrix from cuTensorMapEncodeTiled, and sg_gemv_tma_f32
 * over every layer, STEPS times, on one activation vector. No argument
 * holds a weight's address as a word: only the descriptor names it
 * (simgpu scrambles the address inside), so spillway learns about the
 * weights only if it recognises the descriptors.
 *
 *   swt-tma seen     the descriptors are used as the encode calls made them
 *   swt-tma seen extra  the same, launched with the packed `extra` buffer
 *                    (laid out from cuFuncGetParamInfo) instead of
 *                    kernelParams
 *   swt-tma unseen   after the layers' descriptors, 4096 more are made (for
 *                    addresses no kernel reads): spillway's table of
 *                    descriptors holds 4096, so the layers' ones, never
 *                    used yet, are pushed out of it, as if spillway had
 *                    never seen them made. They must work all the same.
 *
 * Every output is checked against a host reference summed in the same
 * order (bit for bit). Prints "checksum=<FNV-1a of every output>" and
 * "result=match", exits 0; 1 on a wrong value, 2 on a CUDA error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "swt_prog.h"

#define LAYERS 6
#define ROWS 1024u
#define COLS 1024u
#define STEPS 4
#define FILLERS 4096

static int fail(const char *what, CUresult r) { return swt_cuda_fail("tma", what, r); }

/* A rank-2 FLOAT32 descriptor of a rows x cols row-major matrix at w, as
 * sg_gemv_tma_f32 takes it: globalDim = {cols, rows}, one row pitch. */
static CUresult encode(CUtensorMap *m, CUdeviceptr w, uint32_t rows, uint32_t cols)
{
    const cuuint64_t dim[2] = {cols, rows}, pitch[1] = {(cuuint64_t)cols * 4};
    const cuuint32_t box[2] = {cols < 64 ? cols : 64, rows < 64 ? rows : 64}, estride[2] = {1, 1};
    return cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)(uintptr_t)w, dim,
                                  pitch, box, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

/* Launches sg_gemv_tma_f32(desc, x, y) with the `extra` buffer: the
 * three parameters at the offsets the driver gives. */
static CUresult launch_extra(CUfunction f, const CUtensorMap *desc, CUdeviceptr x, CUdeviceptr y)
{
    static _Alignas(64) unsigned char buf[256];
    const void *arg[3] = {desc, &x, &y};
    size_t off, size, len;
    for (size_t i = 0; i < 3; i++) {
        CUresult r = cuFuncGetParamInfo(f, i, &off, &size);
        if (r != CUDA_SUCCESS)
            return r;
        if (off + size > sizeof buf)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(buf + off, arg[i], size);
    }
    /* The whole buffer: simgpu asks for its own struct's size, which may
     * be padded past the last parameter. */
    len = sizeof buf;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &len,
                     CU_LAUNCH_PARAM_END};
    return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra);
}

/* Small values whose float sums stay exact enough to compare bitwise. */
static float weight(int l, uint32_t i)
{
    return (float)((i * 7u + (uint32_t)l * 13u) % 17u) / 16.0f - 0.5f;
}

int main(int argc, char **argv)
{
    int unseen = argc > 1 && strcmp(argv[1], "unseen") == 0;
    int by_extra = argc > 2 && strcmp(argv[2], "extra") == 0;
    CUcontext ctx;
    CUmodule mod;
    CUfunction gemv;
    CUresult r;
#define CK(call)                      \
    if ((r = (call)) != CUDA_SUCCESS) \
        return fail(#call, r);
    if ((r = swt_open("tma", &ctx, &mod)) != CUDA_SUCCESS)
        return 2;
    CK(cuModuleGetFunction(&gemv, mod, "sg_gemv_tma_f32"));

    static float host_w[LAYERS][ROWS * COLS];
    static CUtensorMap desc[LAYERS];
    CUdeviceptr w[LAYERS], x, y;
    for (int l = 0; l < LAYERS; l++) {
        for (uint32_t i = 0; i < ROWS * COLS; i++)
            host_w[l][i] = weight(l, i);
        CK(cuMemAlloc(&w[l], sizeof host_w[l]));
        CK(cuMemcpyHtoD(w[l], host_w[l], sizeof host_w[l]));
        CK(encode(&desc[l], w[l], ROWS, COLS));
    }
    /* Activations: small, so untracked; nothing else is a pointer into
     * the weights. */
    CK(cuMemAlloc(&x, COLS * 4));
    CK(cuMemAlloc(&y, ROWS * 4));
    if (unseen) {
        /* Distinct descriptors (one per 16-byte step of the first weight),
         * never launched. */
        CUtensorMap filler;
        for (uint32_t k = 1; k <= FILLERS; k++)
            CK(encode(&filler, w[0] + 16ull * k, 1, 4));
    }

    static float vx[COLS], vy[ROWS], want[ROWS];
    for (uint32_t c = 0; c < COLS; c++)
        vx[c] = (float)(c % 5) - 2.0f;
    uint64_t sum = 0xcbf29ce484222325ull;
    for (int s = 0; s < STEPS; s++) {
        for (int l = 0; l < LAYERS; l++) {
            CK(cuMemcpyHtoD(x, vx, sizeof vx));
            void *params[] = {&desc[l], &x, &y};
            if (by_extra) {
                CK(launch_extra(gemv, &desc[l], x, y));
            } else {
                CK(cuLaunchKernel(gemv, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
            }
            CK(cuMemcpyDtoH(vy, y, sizeof vy));
            for (uint32_t row = 0; row < ROWS; row++) {
                float acc = 0.0f;
                for (uint32_t c = 0; c < COLS; c++)
                    acc += host_w[l][row * COLS + c] * vx[c];
                want[row] = acc;
            }
            if (memcmp(vy, want, sizeof vy) != 0) {
                fprintf(stderr, "tma: step %d layer %d: wrong output\n", s, l);
                return 1;
            }
            const unsigned char *b = (const unsigned char *)vy;
            for (size_t i = 0; i < sizeof vy; i++)
                sum = (sum ^ b[i]) * 0x100000001b3ull;
            /* The next layer's input: this output, kept small. */
            for (uint32_t c = 0; c < COLS; c++)
                vx[c] = vy[c % ROWS] / 64.0f;
        }
    }
    for (int l = 0; l < LAYERS; l++)
        CK(cuMemFree(w[l]));
    printf("checksum=%016llx\n", (unsigned long long)sum);
    printf("result=match\n");
    return 0;
}

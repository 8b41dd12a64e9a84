/*
 * Shared by the real-runtime test programs: error checks, the model they
 * run, and its host reference.
 *
 * The model is a stack of layers x <- relu(W·x + 0.5·b), N×N weights, run
 * with simgpu's built-in kernels (sg_builtins.cuh). The host reference
 * sums in the same order with every operation rounded separately
 * (-fmad=false on the device, -ffp-contract=off on the host), so the
 * device's answer must match it bit for bit. Every program prints one
 * "result:" line that the test compares between runs.
 *
 * Exit status: 0 right answer, 1 wrong answer, 2 a CUDA call failed.
 */
#ifndef CUDART_COMMON_CUH
#define CUDART_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sg_builtins.cuh"

#define CK(call)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d: %s: %s (%d)\n", __FILE__, __LINE__, #call,            \
                    cudaGetErrorString(e_), (int)e_);                                     \
            exit(2);                                                                      \
        }                                                                                 \
    } while (0)

/* The launch itself reports through cudaGetLastError. */
#define CKL() CK(cudaGetLastError())

enum { THREADS = 128 };

static inline unsigned blocks_for(uint64_t n)
{
    uint64_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b > 1024 ? 1024 : b);
}

/* A deterministic value in [-1, 1) from an index and a seed. */
static inline float det_value(uint64_t i, uint32_t seed)
{
    uint64_t z = i + 0x9e3779b97f4a7c15ull * (seed + 1ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)(int32_t)(uint32_t)z / 2147483648.0f;
}

static inline void det_fill(float *p, uint64_t n, uint32_t seed, float scale)
{
    for (uint64_t i = 0; i < n; i++)
        p[i] = det_value(i, seed) * scale;
}

static inline uint64_t fnv1a(const void *src, uint64_t bytes)
{
    const unsigned char *p = (const unsigned char *)src;
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t i = 0; i < bytes; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* Host reference of one layer: y = relu(W·x + 0.5·b). */
static inline void ref_layer(const float *W, const float *b, const float *x, float *y, uint32_t n)
{
    for (uint32_t r = 0; r < n; r++) {
        float acc = 0.0f;
        for (uint32_t c = 0; c < n; c++)
            acc = acc + W[(uint64_t)r * n + c] * x[c];
        acc = 0.5f * b[r] + acc;
        y[r] = acc > 0.0f ? acc : 0.0f;
    }
}

/* One layer on the device, on stream s: y = relu(W·x + 0.5·b). */
static inline void dev_layer(const float *W, const float *b, const float *x, float *y, uint32_t n,
                             cudaStream_t s)
{
    sg_gemv_f32<<<blocks_for(n), THREADS, 0, s>>>(W, x, y, n, n);
    CKL();
    sg_axpy_f32<<<blocks_for(n), THREADS, 0, s>>>(0.5f, b, y, n);
    CKL();
    sg_relu_f32<<<blocks_for(n), THREADS, 0, s>>>(y, n);
    CKL();
}

/* The model's weights on the host, made once. */
typedef struct {
    uint32_t n, layers;
    float **W, **b;
} model_t;

static inline model_t model_make(uint32_t n, uint32_t layers)
{
    model_t m = {n, layers, (float **)calloc(layers, sizeof(float *)),
                 (float **)calloc(layers, sizeof(float *))};
    for (uint32_t l = 0; l < layers; l++) {
        m.W[l] = (float *)malloc((size_t)n * n * sizeof(float));
        m.b[l] = (float *)malloc(n * sizeof(float));
        det_fill(m.W[l], (uint64_t)n * n, 100 + l, 2.0f / (float)n);
        det_fill(m.b[l], n, 200 + l, 1.0f);
    }
    return m;
}

/* Runs the model on the host from x (n floats), leaving the output in x. */
static inline void model_ref(const model_t *m, float *x)
{
    float *y = (float *)malloc(m->n * sizeof(float));
    for (uint32_t l = 0; l < m->layers; l++) {
        ref_layer(m->W[l], m->b[l], x, y, m->n);
        memcpy(x, y, m->n * sizeof(float));
    }
    free(y);
}

static inline int check_equal(const char *what, const float *got, const float *want, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            fprintf(stderr, "%s: element %u is %a, the host reference says %a\n", what, i,
                    (double)got[i], (double)want[i]);
            return 1;
        }
    return 0;
}

/* Says which runtime is linked, so a log shows what was tested. */
static inline void print_runtime(const char *prog)
{
    int rt = 0, drv = 0;
    CK(cudaRuntimeGetVersion(&rt));
    CK(cudaDriverGetVersion(&drv));
    printf("%s: runtime %d, driver %d\n", prog, rt, drv);
}

#endif

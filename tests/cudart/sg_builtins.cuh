/*
 * Real CUDA bodies for simgpu's built-in kernels (tests/simgpu/README.md,
 * "Built-in kernels"): the same extern "C" names and C parameter layouts,
 * so a program built by nvcc runs them on a real GPU and simgpu runs its
 * built-ins of the same name. Each output element is computed by one
 * thread, summing in index order in a float that starts at 0.0f: with
 * -fmad=false every product and sum rounds as the host reference's does,
 * so results match bit for bit on both.
 */
#ifndef CUDART_SG_BUILTINS_CUH
#define CUDART_SG_BUILTINS_CUH

#include <stdint.h>

extern "C" __global__ void sg_fill_u32(uint32_t *dst, uint32_t value, uint64_t count)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < count;
         i += (uint64_t)gridDim.x * blockDim.x)
        dst[i] = value;
}

extern "C" __global__ void sg_axpy_f32(float a, const float *x, float *y, uint64_t n)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}

extern "C" __global__ void sg_relu_f32(float *x, uint64_t n)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

extern "C" __global__ void sg_gemv_f32(const float *W, const float *x, float *y, uint32_t rows,
                                       uint32_t cols)
{
    for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += gridDim.x * blockDim.x) {
        float acc = 0.0f;
        for (uint32_t c = 0; c < cols; c++)
            acc = acc + W[(uint64_t)r * cols + c] * x[c];
        y[r] = acc;
    }
}

/* Y[b] = W·X[b]; X is batch×cols, Y is batch×rows. */
extern "C" __global__ void sg_gemm_f32(const float *W, const float *X, float *Y, uint32_t rows,
                                       uint32_t cols, uint32_t batch)
{
    uint64_t total = (uint64_t)rows * batch;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < total;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint32_t b = (uint32_t)(i / rows), r = (uint32_t)(i % rows);
        float acc = 0.0f;
        for (uint32_t c = 0; c < cols; c++)
            acc = acc + W[(uint64_t)r * cols + c] * X[(uint64_t)b * cols + c];
        Y[(uint64_t)b * rows + r] = acc;
    }
}

/* FNV-1a 64 of the bytes, by one thread: a checksum, not a benchmark. */
extern "C" __global__ void sg_checksum_u64(const void *src, uint64_t bytes, uint64_t *out)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    const unsigned char *p = (const unsigned char *)src;
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t i = 0; i < bytes; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    *out = h;
}

/* y = table[index] · x: the weight's address is read from device memory. */
extern "C" __global__ void sg_gemv_table_f32(const float *const *table, uint32_t index,
                                             const float *x, float *y, uint32_t rows,
                                             uint32_t cols)
{
    const float *W = table[index];
    for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += gridDim.x * blockDim.x) {
        float acc = 0.0f;
        for (uint32_t c = 0; c < cols; c++)
            acc = acc + W[(uint64_t)r * cols + c] * x[c];
        y[r] = acc;
    }
}

/* *out = p[lo] + ... + p[hi - 1], in order, by one thread: offsets from p
 * may be negative. */
extern "C" __global__ void sg_sum_f32(const float *p, int64_t lo, int64_t hi, float *out)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    float acc = 0.0f;
    for (int64_t i = lo; i < hi; i++)
        acc = acc + p[i];
    *out = acc;
}

/* table[i] = base + i * stride: pointers derived from an argument and
 * stored for later kernels; nothing behind base is read. */
extern "C" __global__ void sg_ptrs_u64(const void *base, uint64_t stride, uint64_t n,
                                       uint64_t *table)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        table[i] = (uint64_t)base + i * stride;
}

#endif

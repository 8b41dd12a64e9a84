/*
 * test_kernels.c: each built-in kernel against a host reference written as
 * the README specifies (sequential float sums in index order), compared bit
 * for bit.  Outputs are surrounded by guard words that must stay untouched.
 */
#include "sgt.h"

#include <stdlib.h>
#include <string.h>

#define GUARD 64 /* guard elements after every output */
#define GUARD_WORD 0xa5a5a5a5u

static float *randv(size_t n, uint64_t seed)
{
    float *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    uint64_t st = seed;
    for (size_t i = 0; i < n; i++)
        v[i] = sgt_randf(&st);
    return v;
}

static CUdeviceptr upload(const void *h, size_t bytes)
{
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, bytes));
    SGT_OK(cuMemcpyHtoD(d, h, bytes));
    return d;
}

/* An output of n 4-byte elements followed by guard words, all preset. */
static CUdeviceptr output(size_t n)
{
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, (n + GUARD) * 4));
    SGT_OK(cuMemsetD32(d, GUARD_WORD, n + GUARD));
    return d;
}

/* Download n floats and check the guard words after them. */
static void download(void *h, CUdeviceptr d, size_t n)
{
    SGT_OK(cuCtxSynchronize());
    uint32_t *all = malloc((n + GUARD) * 4);
    SGT_OK(cuMemcpyDtoH(all, d, (n + GUARD) * 4));
    for (size_t i = n; i < n + GUARD; i++)
        ck_assert_msg(all[i] == GUARD_WORD, "guard word %zu overwritten", i - n);
    memcpy(h, all, n * 4);
    free(all);
}

static void assert_bits(const float *got, const float *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(memcmp(&got[i], &want[i], sizeof(float)) == 0,
                      "element %zu: got %a, want %a", i, got[i], want[i]);
}

static void launch(const char *name, void **params)
{
    SGT_OK(sgt_launch(sgt_func(name), NULL, params));
}

static void ref_gemv(const float *W, const float *x, float *y, uint32_t rows,
                     uint32_t cols)
{
    for (uint32_t r = 0; r < rows; r++) {
        float acc = 0.0f;
        for (uint32_t c = 0; c < cols; c++)
            acc += W[(size_t)r * cols + c] * x[c];
        y[r] = acc;
    }
}

START_TEST(kernel_fill_u32)
{
    sgt_init();
    const uint64_t n = 100003;
    CUdeviceptr d = output(n);
    CUdeviceptr dst = d;
    uint32_t value = 0x600dc0deu;
    uint64_t count = n;
    void *params[] = {&dst, &value, &count};
    launch("sg_fill_u32", params);
    uint32_t *h = malloc(n * 4);
    download(h, d, n);
    for (uint64_t i = 0; i < n; i++)
        ck_assert_uint_eq(h[i], value);
    free(h);
}
END_TEST

START_TEST(kernel_axpy_f32)
{
    sgt_init();
    const uint64_t n = 10007;
    float *x = randv(n, 1), *y = randv(n, 2), *want = malloc(n * 4),
          *got = malloc(n * 4);
    float a = 1.7f;
    for (uint64_t i = 0; i < n; i++)
        want[i] = a * x[i] + y[i];
    CUdeviceptr dx = upload(x, n * 4), dy = output(n);
    SGT_OK(cuMemcpyHtoD(dy, y, n * 4));
    uint64_t nn = n;
    void *params[] = {&a, &dx, &dy, &nn};
    launch("sg_axpy_f32", params);
    download(got, dy, n);
    assert_bits(got, want, n);
}
END_TEST

START_TEST(kernel_relu_f32)
{
    sgt_init();
    const uint64_t n = 5000;
    float *x = randv(n, 3), *got = malloc(n * 4);
    CUdeviceptr dx = output(n);
    SGT_OK(cuMemcpyHtoD(dx, x, n * 4));
    uint64_t nn = n;
    void *params[] = {&dx, &nn};
    launch("sg_relu_f32", params);
    download(got, dx, n);
    for (uint64_t i = 0; i < n; i++)
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
    assert_bits(got, x, n);
}
END_TEST

START_TEST(kernel_gemv_f32)
{
    sgt_init();
    uint32_t rows = 37, cols = 129;
    float *W = randv((size_t)rows * cols, 4), *x = randv(cols, 5);
    float want[37], got[37];
    ref_gemv(W, x, want, rows, cols);
    CUdeviceptr dW = upload(W, (size_t)rows * cols * 4), dx = upload(x, cols * 4);
    CUdeviceptr dy = output(rows);
    void *params[] = {&dW, &dx, &dy, &rows, &cols};
    launch("sg_gemv_f32", params);
    download(got, dy, rows);
    assert_bits(got, want, rows);
}
END_TEST

START_TEST(kernel_gemv_struct_f32)
{
    sgt_init();
    uint32_t rows = 23, cols = 300;
    float *W = randv((size_t)rows * cols, 6), *x = randv(cols, 7);
    float want[23], got[23];
    ref_gemv(W, x, want, rows, cols);
    struct {
        CUdeviceptr W, x, y;
        uint32_t rows, cols;
    } arg;
    ck_assert_uint_eq(sizeof arg, 32);
    memset(&arg, 0, sizeof arg);
    arg.W = upload(W, (size_t)rows * cols * 4);
    arg.x = upload(x, cols * 4);
    arg.y = output(rows);
    arg.rows = rows;
    arg.cols = cols;
    void *params[] = {&arg};
    launch("sg_gemv_struct_f32", params);
    download(got, arg.y, rows);
    assert_bits(got, want, rows);
}
END_TEST

START_TEST(kernel_gemv_table_f32)
{
    sgt_init();
    uint32_t rows = 16, cols = 64;
    CUdeviceptr table_h[3];
    float *Ws[3];
    for (int t = 0; t < 3; t++) {
        Ws[t] = randv((size_t)rows * cols, 10 + (uint64_t)t);
        table_h[t] = upload(Ws[t], (size_t)rows * cols * 4);
    }
    /* Written with a synchronous copy before the launch, as documented. */
    CUdeviceptr table = upload(table_h, sizeof table_h);
    float *x = randv(cols, 8);
    float want[16], got[16];
    uint32_t index = 2;
    ref_gemv(Ws[index], x, want, rows, cols);
    CUdeviceptr dx = upload(x, cols * 4), dy = output(rows);
    void *params[] = {&table, &index, &dx, &dy, &rows, &cols};
    launch("sg_gemv_table_f32", params);
    download(got, dy, rows);
    assert_bits(got, want, rows);
}
END_TEST

START_TEST(kernel_checksum_u64)
{
    sgt_init();
    const uint64_t n = 100003; /* not a multiple of 8 */
    unsigned char *h = malloc(n);
    sgt_pattern(h, n, 12);
    CUdeviceptr src = upload(h, n), out;
    SGT_OK(cuMemAlloc(&out, 8));
    uint64_t bytes = n;
    void *params[] = {&src, &bytes, &out};
    launch("sg_checksum_u64", params);
    SGT_OK(cuCtxSynchronize());
    uint64_t got = 0;
    SGT_OK(cuMemcpyDtoH(&got, out, 8));
    ck_assert_uint_eq(got, sgt_fnv1a(h, n));
    /* FNV-1a 64 of nothing is the offset basis. */
    bytes = 0;
    launch("sg_checksum_u64", params);
    SGT_OK(cuCtxSynchronize());
    SGT_OK(cuMemcpyDtoH(&got, out, 8));
    ck_assert_uint_eq(got, 0xcbf29ce484222325ULL);
    /* A known vector: FNV-1a 64("a") = af63dc4c8601ec8c. */
    SGT_OK(cuMemcpyHtoD(src, "a", 1));
    bytes = 1;
    launch("sg_checksum_u64", params);
    SGT_OK(cuCtxSynchronize());
    SGT_OK(cuMemcpyDtoH(&got, out, 8));
    ck_assert_uint_eq(got, 0xaf63dc4c8601ec8cULL);
}
END_TEST

START_TEST(kernel_gemm_f32)
{
    sgt_init();
    uint32_t rows = 19, cols = 33, batch = 5;
    float *W = randv((size_t)rows * cols, 13),
          *X = randv((size_t)batch * cols, 14);
    float want[19 * 5], got[19 * 5];
    for (uint32_t b = 0; b < batch; b++)
        ref_gemv(W, X + (size_t)b * cols, want + (size_t)b * rows, rows, cols);
    CUdeviceptr dW = upload(W, (size_t)rows * cols * 4);
    CUdeviceptr dX = upload(X, (size_t)batch * cols * 4);
    CUdeviceptr dY = output((size_t)rows * batch);
    void *params[] = {&dW, &dX, &dY, &rows, &cols, &batch};
    launch("sg_gemm_f32", params);
    download(got, dY, (size_t)rows * batch);
    assert_bits(got, want, (size_t)rows * batch);
}
END_TEST

Suite *kernels_suite(void)
{
    Suite *s = suite_create("kernels");
    sgt_case(s, kernel_fill_u32);
    sgt_case(s, kernel_axpy_f32);
    sgt_case(s, kernel_relu_f32);
    sgt_case(s, kernel_gemv_f32);
    sgt_case(s, kernel_gemv_struct_f32);
    sgt_case(s, kernel_gemv_table_f32);
    sgt_case(s, kernel_checksum_u64);
    sgt_case(s, kernel_gemm_f32);
    return s;
}

/*
 * test_tensormap.c: TMA descriptors. cuTensorMapEncodeTiled validates as
 * the driver documents, the descriptor hides its address from a scan for
 * pointers, cuTensorMapReplaceAddress retargets it, and sg_gemv_tma_f32
 * reads its weight through it, bit for bit like a host reference.
 */
#include "sgt.h"

#include <stdlib.h>
#include <string.h>

/* A weight of rows x cols floats, rows `pitch` floats apart. */
typedef struct {
    uint32_t rows, cols, pitch;
    float *host;
    CUdeviceptr dev;
} weight_t;

static weight_t weight(uint32_t rows, uint32_t cols, uint32_t pitch, uint64_t seed)
{
    weight_t w = {rows, cols, pitch, calloc((size_t)rows * pitch, 4), 0};
    ck_assert_ptr_nonnull(w.host);
    uint64_t st = seed;
    for (size_t i = 0; i < (size_t)rows * pitch; i++)
        w.host[i] = sgt_randf(&st);
    SGT_OK(cuMemAlloc(&w.dev, (size_t)rows * pitch * 4));
    SGT_OK(cuMemcpyHtoD(w.dev, w.host, (size_t)rows * pitch * 4));
    return w;
}

static CUresult encode(CUtensorMap *m, const weight_t *w)
{
    cuuint64_t dim[2] = {w->cols, w->rows}, stride[1] = {(cuuint64_t)w->pitch * 4};
    cuuint32_t box[2] = {32, 32}, estride[2] = {1, 1};
    return cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)w->dev, dim,
                                  stride, box, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

/* Runs sg_gemv_tma_f32 with descriptor m and checks y against W·x. */
static void gemv_matches(const CUtensorMap *m, const weight_t *w)
{
    float *x = malloc(w->cols * 4), *want = malloc(w->rows * 4), *got = malloc(w->rows * 4);
    uint64_t st = 99;
    for (uint32_t c = 0; c < w->cols; c++)
        x[c] = sgt_randf(&st);
    for (uint32_t r = 0; r < w->rows; r++) {
        float acc = 0.0f;
        for (uint32_t c = 0; c < w->cols; c++)
            acc += w->host[(size_t)r * w->pitch + c] * x[c];
        want[r] = acc;
    }
    CUdeviceptr dx, dy;
    SGT_OK(cuMemAlloc(&dx, w->cols * 4));
    SGT_OK(cuMemAlloc(&dy, w->rows * 4));
    SGT_OK(cuMemcpyHtoD(dx, x, w->cols * 4));
    void *params[] = {(void *)m, &dx, &dy};
    SGT_OK(sgt_launch(sgt_func("sg_gemv_tma_f32"), NULL, params));
    SGT_OK(cuMemcpyDtoH(got, dy, w->rows * 4));
    ck_assert_int_eq(memcmp(got, want, w->rows * 4), 0);
    free(x);
    free(want);
    free(got);
}

START_TEST(tensormap_gemv_reads_weight_through_descriptor)
{
    sgt_init();
    weight_t w = weight(37, 132, 144, 1); /* padded rows: the stride counts */
    CUtensorMap m;
    SGT_OK(encode(&m, &w));
    gemv_matches(&m, &w);
}
END_TEST

START_TEST(tensormap_descriptor_hides_its_address)
{
    /* No 8-byte window of the descriptor, aligned or not, holds an address
     * inside the weight: a scan for pointers finds nothing. */
    sgt_init();
    weight_t w = weight(64, 64, 64, 2);
    CUtensorMap m;
    SGT_OK(encode(&m, &w));
    const unsigned char *b = (const unsigned char *)&m;
    uint64_t end = w.dev + (uint64_t)w.rows * w.pitch * 4;
    for (size_t at = 0; at + 8 <= sizeof m; at++) {
        uint64_t v;
        memcpy(&v, b + at, 8);
        ck_assert_msg(v < w.dev || v >= end,
                      "bytes %zu..%zu of the descriptor hold 0x%llx, inside the weight", at,
                      at + 7, (unsigned long long)v);
    }
    ck_assert_uint_eq(sizeof m, 128);
}
END_TEST

START_TEST(tensormap_replace_address_retargets)
{
    sgt_init();
    weight_t a = weight(16, 64, 64, 3), b = weight(16, 64, 64, 4);
    CUtensorMap m;
    SGT_OK(encode(&m, &a));
    gemv_matches(&m, &a);
    SGT_OK(cuTensorMapReplaceAddress(&m, (void *)b.dev));
    gemv_matches(&m, &b);
    /* A misaligned address is refused and changes nothing. */
    CUtensorMap before = m;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuTensorMapReplaceAddress(&m, (void *)(a.dev + 8)));
    ck_assert_int_eq(memcmp(&before, &m, sizeof m), 0);
    /* So is a descriptor simgpu did not make. */
    CUtensorMap zero;
    memset(&zero, 0, sizeof zero);
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuTensorMapReplaceAddress(&zero, (void *)a.dev));
}
END_TEST

START_TEST(tensormap_malformed_descriptor_faults_kernel)
{
    sgt_init();
    weight_t w = weight(16, 64, 64, 5);
    CUtensorMap m;
    SGT_OK(encode(&m, &w));
    ((unsigned char *)&m)[40] ^= 1; /* a dimension, under the check */
    CUdeviceptr dx, dy;
    SGT_OK(cuMemAlloc(&dx, 64 * 4));
    SGT_OK(cuMemAlloc(&dy, 16 * 4));
    void *params[] = {&m, &dx, &dy};
    SGT_OK(sgt_launch(sgt_func("sg_gemv_tma_f32"), NULL, params));
    SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
}
END_TEST

/* ---- validation: each case breaks one documented rule ---- */

typedef struct {
    const char *what;
    unsigned type, rank, interleave, swizzle, oob;
    uint64_t addr_off;    /* added to a 256-byte aligned address */
    size_t map_off;       /* added to a 64-byte aligned descriptor */
    uint64_t dim0, stride0;
    uint32_t box0, estride0;
} bad_t;

#define F32 CU_TENSOR_MAP_DATA_TYPE_FLOAT32
static const bad_t bad[] = {
    {"descriptor not 64-byte aligned", F32, 2, 0, 0, 0, 0, 32, 64, 256, 32, 1},
    {"global address not 16-byte aligned", F32, 2, 0, 0, 0, 8, 0, 64, 256, 32, 1},
    {"rank 0", F32, 0, 0, 0, 0, 0, 0, 64, 256, 32, 1},
    {"rank 6", F32, 6, 0, 0, 0, 0, 0, 64, 256, 32, 1},
    {"unknown data type", 99, 2, 0, 0, 0, 0, 0, 64, 256, 32, 1},
    {"globalDim 0", F32, 2, 0, 0, 0, 0, 0, 0, 256, 32, 1},
    {"globalDim past 2^32", F32, 2, 0, 0, 0, 0, 0, (1ull << 32) + 1, 256, 32, 1},
    {"stride not a multiple of 16", F32, 2, 0, 0, 0, 0, 0, 64, 264, 32, 1},
    {"stride 2^40", F32, 2, 0, 0, 0, 0, 0, 64, 1ull << 40, 32, 1},
    {"boxDim 0", F32, 2, 0, 0, 0, 0, 0, 64, 256, 0, 1},
    {"boxDim 257", F32, 2, 0, 0, 0, 0, 0, 64, 256, 257, 1},
    {"box inner bytes not a multiple of 16", F32, 2, 0, 0, 0, 0, 0, 64, 256, 6, 1},
    {"elementStrides 9", F32, 2, 0, 0, 0, 0, 0, 64, 256, 32, 9},
    {"interleave with rank 2", F32, 2, CU_TENSOR_MAP_INTERLEAVE_16B, 0, 0, 0, 0, 64, 256, 32, 1},
    {"swizzle 32B with a 128-byte box row", F32, 2, 0, CU_TENSOR_MAP_SWIZZLE_32B, 0, 0, 0, 64,
     256, 32, 1},
    {"NaN fill for an integer type", CU_TENSOR_MAP_DATA_TYPE_UINT32, 2, 0, 0,
     CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA, 0, 0, 64, 256, 32, 1},
    {"unknown swizzle", F32, 2, 0, 42, 0, 0, 0, 64, 256, 32, 1},
};

START_TEST(tensormap_encode_validates_like_the_driver)
{
    const bad_t *c = &bad[_i];
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 1 << 20));
    _Alignas(64) unsigned char store[256];
    memset(store, 0x5a, sizeof store);
    CUtensorMap *m = (CUtensorMap *)(void *)(store + c->map_off);
    cuuint64_t dim[6] = {c->dim0, 16, 2, 2, 2, 2};
    cuuint64_t stride[5] = {c->stride0, c->stride0 * 16, c->stride0 * 32, c->stride0 * 64,
                            c->stride0 * 128};
    cuuint32_t box[6] = {c->box0, 16, 1, 1, 1, 1}, estride[6] = {c->estride0, 1, 1, 1, 1, 1};
    CUresult r = cuTensorMapEncodeTiled(
        m, (CUtensorMapDataType)c->type, c->rank, (void *)(d + c->addr_off), dim, stride, box,
        estride, (CUtensorMapInterleave)c->interleave, (CUtensorMapSwizzle)c->swizzle,
        CU_TENSOR_MAP_L2_PROMOTION_NONE, (CUtensorMapFloatOOBfill)c->oob);
    ck_assert_msg(r == CUDA_ERROR_INVALID_VALUE, "%s: got %s, want CUDA_ERROR_INVALID_VALUE",
                  c->what, sgt_errname(r));
    for (size_t i = 0; i < sizeof store; i++)
        ck_assert_msg(store[i] == 0x5a, "%s: byte %zu of the descriptor changed", c->what, i);
}
END_TEST

START_TEST(tensormap_encode_accepts_the_valid_base_case)
{
    /* The base of the cases above, unbroken, is accepted: each case fails
     * for its own reason. */
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 1 << 20));
    CUtensorMap m;
    cuuint64_t dim[2] = {64, 16}, stride[1] = {256};
    cuuint32_t box[2] = {32, 16}, estride[2] = {1, 1};
    SGT_OK(cuTensorMapEncodeTiled(&m, F32, 2, (void *)d, dim, stride, box, estride,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                  CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}
END_TEST

START_TEST(tensormap_entry_points_resolve_through_get_proc_address)
{
    sgt_init();
    static const char *const names[] = {"cuTensorMapEncodeTiled", "cuTensorMapReplaceAddress"};
    void *const want[] = {(void *)cuTensorMapEncodeTiled, (void *)cuTensorMapReplaceAddress};
    for (int i = 0; i < 2; i++) {
        void *pfn = NULL;
        CUdriverProcAddressQueryResult q;
        SGT_OK(cuGetProcAddress_v2(names[i], &pfn, 12000, 0, &q));
        ck_assert_int_eq(q, CU_GET_PROC_ADDRESS_SUCCESS);
        ck_assert_ptr_eq(pfn, want[i]);
        SGT_EXPECT(CUDA_ERROR_NOT_FOUND, cuGetProcAddress_v2(names[i], &pfn, 11080, 0, &q));
    }
}
END_TEST

Suite *tensormap_suite(void)
{
    Suite *s = suite_create("tensormap");
    sgt_case(s, tensormap_gemv_reads_weight_through_descriptor);
    sgt_case(s, tensormap_descriptor_hides_its_address);
    sgt_case(s, tensormap_replace_address_retargets);
    sgt_case(s, tensormap_malformed_descriptor_faults_kernel);
    sgt_loop_case(s, tensormap_encode_validates_like_the_driver, 0,
                  (int)(sizeof bad / sizeof *bad));
    sgt_case(s, tensormap_encode_accepts_the_valid_base_case);
    sgt_case(s, tensormap_entry_points_resolve_through_get_proc_address);
    return s;
}

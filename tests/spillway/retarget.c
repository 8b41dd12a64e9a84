/*
 * swt-retarget: spillway's TMA descriptor mechanism (src/tensormap.c),
 * compiled into this program and run on simgpu without the rest of the
 * library (test_hooks.c). What a rewriter relies on can only be seen from
 * inside: the library exports none of it.
 *
 *   - a descriptor recorded from an encode is found with its address and
 *     its tensor's size, and sw_tmap_locate says where it lies in a
 *     launch's parameters; a retargeted copy is not recorded;
 *   - sw_tmap_retarget's copy makes sg_gemv_tma_f32 read the new matrix,
 *     and the original still reads the old one;
 *   - every failure leaves out untouched: an address the driver refuses,
 *     a misaligned out, a driver without cuTensorMapReplaceAddress;
 *   - the cuTensorMapReplaceAddress hook records the new bytes, with the
 *     size carried over.
 *
 * The library's driver table and log are stubbed: sw_real() is a table
 * holding only the driver functions tensormap.c calls.
 * Prints "retarget: ok" and exits 0; 1 on a wrong result, 2 on a CUDA
 * error.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "residency.h"
#include "swt_prog.h"

static sw_real_t real;

const sw_real_t *sw_real(void)
{
    return &real;
}

void sw_log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "spillway(%d): ", level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

#define N 64u /* a 64 x 64 matrix */

static int bad(const char *what)
{
    fprintf(stderr, "retarget: %s\n", what);
    return 1;
}

static int cuda_fail(const char *what, CUresult r) { return swt_cuda_fail("retarget", what, r); }

static CUfunction gemv;
static CUdeviceptr x, y;

/* y = W·x through descriptor d, read back into out. */
static CUresult run(const CUtensorMap *d, float *out)
{
    void *params[] = {(void *)d, &x, &y};
    CUresult r = cuLaunchKernel(gemv, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
    return r == CUDA_SUCCESS ? cuMemcpyDtoH_v2(out, y, N * 4) : r;
}

/* Row r of W = value v everywhere, x all ones: y[r] = N * v. */
static bool rows_are(const float *got, float v)
{
    for (unsigned r = 0; r < N; r++)
        if (got[r] != (float)N * v)
            return false;
    return true;
}

int main(void)
{
    CUcontext ctx;
    CUmodule mod;
    CUresult r;
#define CK(call)                      \
    if ((r = (call)) != CUDA_SUCCESS) \
        return cuda_fail(#call, r);
    if ((r = swt_open("retarget", &ctx, &mod)) != CUDA_SUCCESS)
        return 2;
    CK(cuModuleGetFunction(&gemv, mod, "sg_gemv_tma_f32"));
    real.cuTensorMapReplaceAddress = cuTensorMapReplaceAddress;

    CUdeviceptr w1, w2;
    CK(cuMemAlloc_v2(&w1, N * N * 4));
    CK(cuMemAlloc_v2(&w2, N * N * 4));
    CK(cuMemAlloc_v2(&x, N * 4));
    CK(cuMemAlloc_v2(&y, N * 4));
    CK(cuMemsetD32_v2(w1, 0x3f800000u, N * N)); /* 1.0f */
    CK(cuMemsetD32_v2(w2, 0x40000000u, N * N)); /* 2.0f */
    CK(cuMemsetD32_v2(x, 0x3f800000u, N));

    const cuuint64_t dim[2] = {N, N}, pitch[1] = {N * 4};
    const cuuint32_t box[2] = {N, N}, es[2] = {1, 1};
    CUtensorMap d1;
    CK(sw_tmap_encoded(cuTensorMapEncodeTiled(&d1, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2,
                                              (void *)(uintptr_t)w1, dim, pitch, box, es,
                                              CU_TENSOR_MAP_INTERLEAVE_NONE,
                                              CU_TENSOR_MAP_SWIZZLE_NONE,
                                              CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                       &d1, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)(uintptr_t)w1, dim,
                       pitch));
    sw_tmap_val_t v;
    if (!sw_tmap_lookup(sw_tmaps(), &d1, &v) || v.addr != w1 || v.bytes != N * N * 4)
        return bad("the encoded descriptor is not recorded with its address and size");

    /* The retargeted copy reads w2; the original still reads w1. */
    CUtensorMap d2;
    float got[N];
    CK(sw_tmap_retarget(&d1, w2, &d2));
    CK(run(&d2, got));
    if (!rows_are(got, 2.0f))
        return bad("the retargeted descriptor does not read the new matrix");
    CK(run(&d1, got));
    if (!rows_are(got, 1.0f))
        return bad("the original descriptor changed");

    /* Where descriptors lie in the launch's parameters: only recorded ones. */
    uint32_t off[3] = {0, 128, 136}, size[3] = {128, 8, 8};
    const sw_layout_t layout = {3, 144, off, size};
    sw_tmap_at_t at[2];
    void *p1[] = {&d1, &x, &y}, *p2[] = {&d2, &x, &y};
    if (sw_tmap_locate(sw_tmaps(), &layout, p1, NULL, 0, at, 2) != 1 || at[0].index != 0 ||
        at[0].offset != 0 || at[0].v.addr != w1)
        return bad("the recorded descriptor is not located in the parameters");
    if (sw_tmap_locate(sw_tmaps(), &layout, p2, NULL, 0, at, 2) != 0)
        return bad("a retargeted copy was recorded");

    /* Failures leave out untouched. */
    CUtensorMap out, before;
    memset(&out, 0xab, sizeof out);
    before = out;
    if (sw_tmap_retarget(&d1, w2 + 4, &out) != CUDA_ERROR_INVALID_VALUE ||
        memcmp(&out, &before, sizeof out) != 0)
        return bad("a refused address changed out or was not the driver's error");
    if (sw_tmap_retarget(&d1, w2, (unsigned char *)&out + 8) != CUDA_ERROR_INVALID_VALUE ||
        memcmp(&out, &before, sizeof out) != 0)
        return bad("a misaligned out was written");
    real.cuTensorMapReplaceAddress = NULL;
    if (sw_tmap_retarget(&d1, w2, &out) != CUDA_ERROR_NOT_FOUND ||
        memcmp(&out, &before, sizeof out) != 0)
        return bad("a driver without cuTensorMapReplaceAddress did not fail cleanly");
    if (sw_tmap_replace(NULL, &out, (void *)(uintptr_t)w2) != CUDA_ERROR_NOT_FOUND)
        return bad("the replace hook without the driver's function did not fail");

    /* The hook: the new bytes are recorded, with the old size. */
    CUtensorMap d3 = d1;
    CK(sw_tmap_replace(cuTensorMapReplaceAddress, &d3, (void *)(uintptr_t)w2));
    if (!sw_tmap_lookup(sw_tmaps(), &d3, &v) || v.addr != w2 || v.bytes != N * N * 4)
        return bad("the replaced descriptor is not recorded with its new address");
    if (!sw_tmap_lookup(sw_tmaps(), &d1, &v) || v.addr != w1)
        return bad("the old bytes lost their record");

    printf("retarget: ok\n");
    return 0;
}

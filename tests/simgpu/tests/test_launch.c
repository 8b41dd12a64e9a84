/*
 * test_launch.c: both parameter forms (kernelParams and the packed `extra`
 * buffer), both handle kinds (CUfunction and CUkernel), both launch calls,
 * the parameter-info queries, and module/library loading errors.
 */
#include "sgt.h"

#include <stddef.h>
#include <string.h>

#define N 4096

static CUdeviceptr dx, dy1, dy2;
static float hx[N], hy[N];

static void setup(void)
{
    uint64_t st = 99;
    for (int i = 0; i < N; i++) {
        hx[i] = sgt_randf(&st);
        hy[i] = sgt_randf(&st);
    }
    SGT_OK(cuMemAlloc(&dx, sizeof hx));
    SGT_OK(cuMemAlloc(&dy1, sizeof hy));
    SGT_OK(cuMemAlloc(&dy2, sizeof hy));
    SGT_OK(cuMemcpyHtoD(dx, hx, sizeof hx));
    SGT_OK(cuMemcpyHtoD(dy1, hy, sizeof hy));
    SGT_OK(cuMemcpyHtoD(dy2, hy, sizeof hy));
}

/* sg_axpy_f32's parameters as C lays them out. */
struct axpy_args {
    float a;
    CUdeviceptr x;
    CUdeviceptr y;
    uint64_t n;
};

static void assert_axpy(CUdeviceptr dy, float a)
{
    float out[N];
    SGT_OK(cuMemcpyDtoH(out, dy, sizeof out));
    for (int i = 0; i < N; i++) {
        float want = a * hx[i] + hy[i];
        ck_assert_msg(memcmp(&out[i], &want, sizeof want) == 0,
                      "y[%d] = %a, want %a", i, out[i], want);
    }
}

static CUresult launch_params(CUfunction f, CUdeviceptr dy, float a)
{
    uint64_t n = N;
    void *params[] = {&a, &dx, &dy, &n};
    return cuLaunchKernel(f, 16, 1, 1, 256, 1, 1, 0, NULL, params, NULL);
}

START_TEST(launch_extra_matches_kernel_params)
{
    sgt_init();
    setup();
    CUfunction f = sgt_func("sg_axpy_f32");
    SGT_OK(launch_params(f, dy1, 1.5f));

    struct axpy_args args;
    memset(&args, 0, sizeof args);
    args.a = 1.5f;
    args.x = dx;
    args.y = dy2;
    args.n = N;
    size_t size = sizeof args;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args,
                     CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    SGT_OK(cuLaunchKernel(f, 16, 1, 1, 256, 1, 1, 0, NULL, NULL, extra));
    SGT_OK(cuCtxSynchronize());

    float a1[N], a2[N];
    SGT_OK(cuMemcpyDtoH(a1, dy1, sizeof a1));
    SGT_OK(cuMemcpyDtoH(a2, dy2, sizeof a2));
    ck_assert_int_eq(memcmp(a1, a2, sizeof a1), 0);
    assert_axpy(dy1, 1.5f);
}
END_TEST

START_TEST(launch_both_param_forms_fails)
{
    sgt_init();
    setup();
    CUfunction f = sgt_func("sg_axpy_f32");
    float a = 2.0f;
    uint64_t n = N;
    void *params[] = {&a, &dx, &dy1, &n};
    struct axpy_args args = {a, dx, dy2, n};
    size_t size = sizeof args;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args,
                     CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE,
               cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, NULL, params, extra));
    CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                          .blockDimX = 256, .blockDimY = 1, .blockDimZ = 1};
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuLaunchKernelEx(&cfg, f, params, extra));
    /* Nothing ran. */
    SGT_OK(cuCtxSynchronize());
    float out[N];
    SGT_OK(cuMemcpyDtoH(out, dy1, sizeof out));
    ck_assert_int_eq(memcmp(out, hy, sizeof out), 0);
}
END_TEST

static CUkernel get_kernel(const char *name)
{
    CUlibrary lib = NULL;
    SGT_OK(cuLibraryLoadData(&lib, SGT_IMAGE, NULL, NULL, 0, NULL, NULL, 0));
    ck_assert_ptr_nonnull(lib);
    CUkernel k = NULL;
    SGT_OK(cuLibraryGetKernel(&k, lib, name));
    ck_assert_ptr_nonnull(k);
    return k;
}

START_TEST(launch_cukernel_with_cuLaunchKernel)
{
    sgt_init();
    setup();
    CUkernel k = get_kernel("sg_axpy_f32");
    SGT_OK(launch_params((CUfunction)k, dy1, -0.75f));
    SGT_OK(cuCtxSynchronize());
    assert_axpy(dy1, -0.75f);
}
END_TEST

static CUresult launch_ex(CUfunction f, CUstream s, CUdeviceptr dy, float a)
{
    uint64_t n = N;
    void *params[] = {&a, &dx, &dy, &n};
    CUlaunchConfig cfg = {.gridDimX = 16, .gridDimY = 1, .gridDimZ = 1,
                          .blockDimX = 256, .blockDimY = 1, .blockDimZ = 1,
                          .sharedMemBytes = 0, .hStream = s, .attrs = NULL,
                          .numAttrs = 0};
    return cuLaunchKernelEx(&cfg, f, params, NULL);
}

START_TEST(launch_cukernel_with_cuLaunchKernelEx)
{
    sgt_init();
    setup();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUkernel k = get_kernel("sg_axpy_f32");
    SGT_OK(launch_ex((CUfunction)k, s, dy1, 0.5f));
    SGT_OK(cuStreamSynchronize(s));
    assert_axpy(dy1, 0.5f);
}
END_TEST

START_TEST(launch_cufunction_with_cuLaunchKernelEx)
{
    sgt_init();
    setup();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    SGT_OK(launch_ex(sgt_func("sg_axpy_f32"), s, dy1, 4.0f));
    SGT_OK(cuStreamSynchronize(s));
    assert_axpy(dy1, 4.0f);
}
END_TEST

START_TEST(launch_extra_with_cuLaunchKernelEx)
{
    sgt_init();
    setup();
    struct axpy_args args;
    memset(&args, 0, sizeof args);
    args.a = -3.0f;
    args.x = dx;
    args.y = dy1;
    args.n = N;
    size_t size = sizeof args;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args,
                     CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    CUlaunchConfig cfg = {.gridDimX = 16, .gridDimY = 1, .gridDimZ = 1,
                          .blockDimX = 256, .blockDimY = 1, .blockDimZ = 1};
    SGT_OK(cuLaunchKernelEx(&cfg, (CUfunction)get_kernel("sg_axpy_f32"), NULL,
                            extra));
    SGT_OK(cuCtxSynchronize());
    assert_axpy(dy1, -3.0f);
}
END_TEST

START_TEST(kernel_get_function_gives_launchable_function)
{
    sgt_init();
    setup();
    CUfunction f = NULL;
    SGT_OK(cuKernelGetFunction(&f, get_kernel("sg_axpy_f32")));
    ck_assert_ptr_nonnull(f);
    SGT_OK(launch_params(f, dy1, 1.25f));
    SGT_OK(cuCtxSynchronize());
    assert_axpy(dy1, 1.25f);
    /* cuFuncGetParamInfo accepts the function it returns. */
    size_t off = 99, size = 99;
    SGT_OK(cuFuncGetParamInfo(f, 1, &off, &size));
    ck_assert_uint_eq(off, 8);
    ck_assert_uint_eq(size, 8);
}
END_TEST

/* Every built-in kernel's parameters, laid out by the C compiler. */
struct fill_args { CUdeviceptr dst; uint32_t value; uint64_t count; };
struct relu_args { CUdeviceptr x; uint64_t n; };
struct gemv_args { CUdeviceptr W, x, y; uint32_t rows, cols; };
struct table_args {
    CUdeviceptr table; uint32_t index; CUdeviceptr x, y; uint32_t rows, cols;
};
struct checksum_args { CUdeviceptr src; uint64_t bytes; CUdeviceptr out; };
struct gemm_args { CUdeviceptr W, X, Y; uint32_t rows, cols, batch; };
struct tma_args { CUtensorMap W; CUdeviceptr x, y; };

#define P(t, m) {offsetof(struct t, m), sizeof(((struct t *)0)->m)}
static const struct {
    const char *name;
    int nparams;
    size_t off_size[6][2];
} layouts[] = {
    {"sg_fill_u32", 3, {P(fill_args, dst), P(fill_args, value), P(fill_args, count)}},
    {"sg_axpy_f32", 4,
     {P(axpy_args, a), P(axpy_args, x), P(axpy_args, y), P(axpy_args, n)}},
    {"sg_relu_f32", 2, {P(relu_args, x), P(relu_args, n)}},
    {"sg_gemv_f32", 5,
     {P(gemv_args, W), P(gemv_args, x), P(gemv_args, y), P(gemv_args, rows),
      P(gemv_args, cols)}},
    {"sg_gemv_struct_f32", 1, {{0, 32}}},
    {"sg_gemv_table_f32", 6,
     {P(table_args, table), P(table_args, index), P(table_args, x),
      P(table_args, y), P(table_args, rows), P(table_args, cols)}},
    {"sg_checksum_u64", 3,
     {P(checksum_args, src), P(checksum_args, bytes), P(checksum_args, out)}},
    {"sg_gemm_f32", 6,
     {P(gemm_args, W), P(gemm_args, X), P(gemm_args, Y), P(gemm_args, rows),
      P(gemm_args, cols), P(gemm_args, batch)}},
    {"sg_gemv_tma_f32", 3, {P(tma_args, W), P(tma_args, x), P(tma_args, y)}},
};
#undef P

START_TEST(func_param_info_matches_c_layout)
{
    sgt_init();
    CUfunction f = sgt_func(layouts[_i].name);
    for (int p = 0; p < layouts[_i].nparams; p++) {
        size_t off = 999, size = 999;
        SGT_OK(cuFuncGetParamInfo(f, (size_t)p, &off, &size));
        ck_assert_msg(off == layouts[_i].off_size[p][0] &&
                          size == layouts[_i].off_size[p][1],
                      "%s param %d: offset %zu size %zu, want %zu %zu",
                      layouts[_i].name, p, off, size,
                      layouts[_i].off_size[p][0], layouts[_i].off_size[p][1]);
    }
    size_t off, size;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE,
               cuFuncGetParamInfo(f, (size_t)layouts[_i].nparams, &off, &size));
}
END_TEST

START_TEST(func_param_info_axpy_offsets)
{
    /* The documented example, spelled out: float at 0, pointers at 8 and
     * 16, uint64 at 24; index 4 is out of range. */
    sgt_init();
    CUfunction f = sgt_func("sg_axpy_f32");
    static const size_t want[4][2] = {{0, 4}, {8, 8}, {16, 8}, {24, 8}};
    for (size_t p = 0; p < 4; p++) {
        size_t off = 999, size = 999;
        SGT_OK(cuFuncGetParamInfo(f, p, &off, &size));
        ck_assert_uint_eq(off, want[p][0]);
        ck_assert_uint_eq(size, want[p][1]);
    }
    size_t off, size;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo(f, 4, &off, &size));
}
END_TEST

START_TEST(func_param_info_on_cukernel_is_invalid_handle)
{
    sgt_init();
    CUkernel k = get_kernel("sg_axpy_f32");
    size_t off, size;
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE,
               cuFuncGetParamInfo((CUfunction)k, 0, &off, &size));
}
END_TEST

START_TEST(func_param_info_on_cukernel_accepted_when_configured)
{
    sgt_env("SIMGPU_FUNC_ACCEPTS_KERNEL", "1");
    sgt_init();
    CUkernel k = get_kernel("sg_axpy_f32");
    size_t off = 999, size = 999;
    SGT_OK(cuFuncGetParamInfo((CUfunction)k, 3, &off, &size));
    ck_assert_uint_eq(off, 24);
    ck_assert_uint_eq(size, 8);
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE,
               cuFuncGetParamInfo((CUfunction)k, 4, &off, &size));
}
END_TEST

START_TEST(kernel_param_info_on_cukernel)
{
    sgt_init();
    CUkernel k = get_kernel("sg_axpy_f32");
    size_t off = 999, size = 999;
    SGT_OK(cuKernelGetParamInfo(k, 0, &off, &size));
    ck_assert_uint_eq(off, 0);
    ck_assert_uint_eq(size, 4);
    SGT_OK(cuKernelGetParamInfo(k, 2, &off, &size));
    ck_assert_uint_eq(off, 16);
    ck_assert_uint_eq(size, 8);
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetParamInfo(k, 4, &off, &size));
    k = get_kernel("sg_gemv_struct_f32");
    SGT_OK(cuKernelGetParamInfo(k, 0, &off, &size));
    ck_assert_uint_eq(off, 0);
    ck_assert_uint_eq(size, 32);
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetParamInfo(k, 1, &off, &size));
}
END_TEST

START_TEST(module_load_rejects_foreign_image)
{
    sgt_init();
    CUmodule m = NULL;
    SGT_EXPECT(CUDA_ERROR_INVALID_IMAGE, cuModuleLoadData(&m, "not-simgpu"));
    SGT_EXPECT(CUDA_ERROR_INVALID_IMAGE, cuModuleLoadData(&m, "\177ELF\2\1\1"));
    CUlibrary lib = NULL;
    CUresult r = cuLibraryLoadData(&lib, "not-simgpu", NULL, NULL, 0, NULL,
                                   NULL, 0);
    ck_assert_msg(r != CUDA_SUCCESS, "cuLibraryLoadData accepted a foreign "
                                     "image");
    /* A text that merely starts with the tag is accepted. */
    SGT_OK(cuModuleLoadData(&m, "simgpu-builtin v1 anything"));
}
END_TEST

START_TEST(module_unknown_function_not_found)
{
    sgt_init();
    CUfunction f = NULL;
    SGT_EXPECT(CUDA_ERROR_NOT_FOUND,
               cuModuleGetFunction(&f, sgt_module(), "sg_no_such_kernel"));
    CUlibrary lib;
    SGT_OK(cuLibraryLoadData(&lib, SGT_IMAGE, NULL, NULL, 0, NULL, NULL, 0));
    CUkernel k = NULL;
    SGT_EXPECT(CUDA_ERROR_NOT_FOUND,
               cuLibraryGetKernel(&k, lib, "sg_no_such_kernel"));
}
END_TEST

Suite *launch_suite(void)
{
    Suite *s = suite_create("launch");
    sgt_case(s, launch_extra_matches_kernel_params);
    sgt_case(s, launch_both_param_forms_fails);
    sgt_case(s, launch_cukernel_with_cuLaunchKernel);
    sgt_case(s, launch_cukernel_with_cuLaunchKernelEx);
    sgt_case(s, launch_cufunction_with_cuLaunchKernelEx);
    sgt_case(s, launch_extra_with_cuLaunchKernelEx);
    sgt_case(s, kernel_get_function_gives_launchable_function);
    sgt_loop_case(s, func_param_info_matches_c_layout, 0,
                  (int)(sizeof layouts / sizeof *layouts));
    sgt_case(s, func_param_info_axpy_offsets);
    sgt_case(s, func_param_info_on_cukernel_is_invalid_handle);
    sgt_case(s, func_param_info_on_cukernel_accepted_when_configured);
    sgt_case(s, kernel_param_info_on_cukernel);
    sgt_case(s, module_load_rejects_foreign_image);
    sgt_case(s, module_unknown_function_not_found);
    return s;
}

/*
 * sg-loader: reaches the driver the way the CUDA runtime and cuBLAS do
 * (cuda-facts.md, section 1).  It is not linked with libcuda: drv_load.c
 * dlopen()s libcuda.so.1, does exactly one dlsym, of cuGetProcAddress_v2,
 * and fetches every other entry point through cuGetProcAddress with the
 * runtime's versions and flags.
 *
 * It then exercises the launch forms an interposer has to understand, each
 * phase changing y so that a launch that silently did nothing is caught:
 *
 *   phase  launch call             stream              handle      params
 *   1      cuLaunchKernel          legacy 0            CUfunction  kernelParams
 *   2      cuLaunchKernel_ptsz     per-thread 0        CUkernel    kernelParams
 *   3      cuLaunchKernelEx        legacy 0            CUkernel,   kernelParams
 *                                                      CUfunction from
 *                                                      cuKernelGetFunction
 *   4      cuLaunchKernelEx_ptsz   per-thread 0        CUfunction  extra buffer
 *   5      cuLaunchKernel          legacy 0            CUfunction  extra buffer
 *
 * Each phase ends with a synchronous copy on its own default stream
 * (cuMemcpyDtoH_v2 or cuMemcpyDtoH_v2_ptds), which orders it after the
 * phase's kernels; the next phase is issued only after that copy returned,
 * so the legacy and per-thread streams never race.
 *
 * Prints "loader: ok" and exits 0; exits 1 on a wrong value (data, a
 * parameter layout, or a cuGetProcAddress answer), 2 on a CUDA error.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drv.h"

#define N 4096u
#define BLOCK 256u
#define MAX_PARAMS 8

static const char image[] = "simgpu-builtin";

/* sg_axpy_f32's parameters as C lays them out (the simgpu contract). */
struct axpy_params {
    float a;
    CUdeviceptr x;
    CUdeviceptr y;
    uint64_t n;
};

/* A kernel's parameter layout as the param-info calls report it. */
typedef struct layout {
    size_t count;
    size_t offset[MAX_PARAMS];
    size_t size[MAX_PARAMS];
} layout_t;

typedef struct loader {
    sg_drv_t d;
    CUdevice dev;
    int retained;
    CUmodule mod;
    CUlibrary lib;
    CUfunction fill, axpy;      /* from cuModuleGetFunction */
    CUkernel kfill, kaxpy;      /* from cuLibraryGetKernel */
    CUfunction kaxpy_func;      /* from cuKernelGetFunction(kaxpy) */
    CUdeviceptr x, y;
    float *host;
} loader_t;

/* Report a failed call; returns the exit status for a CUDA error. */
static int cuda_fail(const loader_t *L, CUresult rc, const char *call)
{
    char buf[32];

    fprintf(stderr, "loader: CUDA error %s in %s\n",
            sg_drv_errname(&L->d, rc, buf, sizeof(buf)), call);
    return 2;
}

/* Run a driver call; on error report it under the driver's name for the
 * call (the table's field names are not what a reader looks for). */
#define CK(name, expr)                                                         \
    do {                                                                       \
        CUresult rc_ = (expr);                                                 \
        if (rc_ != CUDA_SUCCESS)                                               \
            return cuda_fail(L, rc_, name);                                    \
    } while (0)

static uint32_t float_bits(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

/* Copy y back with the given synchronous copy and check every element. */
static int expect_y(loader_t *L, PFN_cuMemcpyDtoH_v3020 copy, const char *copy_name,
                    float want, int phase)
{
    CUresult rc = copy(L->host, L->y, N * sizeof(float));

    if (rc != CUDA_SUCCESS)
        return cuda_fail(L, rc, copy_name);
    for (unsigned i = 0; i < N; i++) {
        if (L->host[i] != want) {
            fprintf(stderr, "loader: phase %d: y[%u] = %.9g, want %.9g\n",
                    phase, i, L->host[i], want);
            return 1;
        }
    }
    return 0;
}

/*
 * The answers an interposer must get right before anything runs: the
 * v11030 cuGetProcAddress (four arguments) works and agrees with v12000,
 * and the per-thread flag yields a different function.
 */
static int check_proc_addresses(loader_t *L)
{
    void *p = NULL;

    CK("cuGetProcAddress (v11030, cuInit)", L->d.GetProcAddress_v11030("cuInit", &p, 2000, 0));
    if (p != (void *)L->d.Init) {
        fprintf(stderr, "loader: cuGetProcAddress v11030 gave cuInit %p, v12000 gave %p\n",
                p, (void *)L->d.Init);
        return 1;
    }
    if ((void *)L->d.LaunchKernel_ptsz == (void *)L->d.LaunchKernel) {
        fprintf(stderr, "loader: cuLaunchKernel with the per-thread flag is the legacy function\n");
        return 1;
    }
    return 0;
}

/* Which param-info call read_layout() uses; both take a pointer-sized
 * handle (CUkernel or CUfunction), so one reader serves both. */
typedef enum info_via { VIA_KERNEL, VIA_FUNC } info_via_t;

/*
 * Read a layout: ask for index 0, 1, ... until CUDA_ERROR_INVALID_VALUE,
 * which is how the parameter count is found on 13.0.  Any other error is
 * returned as is.
 */
static CUresult read_layout(const sg_drv_t *d, info_via_t via, void *handle, layout_t *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i <= MAX_PARAMS; i++) {
        size_t off = 0, size = 0;
        CUresult rc = via == VIA_KERNEL
                          ? d->KernelGetParamInfo((CUkernel)handle, i, &off, &size)
                          : d->FuncGetParamInfo((CUfunction)handle, i, &off, &size);

        if (rc == CUDA_ERROR_INVALID_VALUE && i > 0)
            return CUDA_SUCCESS;
        if (rc != CUDA_SUCCESS)
            return rc;
        if (i == MAX_PARAMS)
            break;
        out->offset[i] = off;
        out->size[i] = size;
        out->count = i + 1;
    }
    return CUDA_ERROR_INVALID_VALUE; /* more parameters than any built-in has */
}

static int layout_is_axpy(const layout_t *lay)
{
    static const size_t off[] = {offsetof(struct axpy_params, a), offsetof(struct axpy_params, x),
                                 offsetof(struct axpy_params, y), offsetof(struct axpy_params, n)};
    static const size_t size[] = {sizeof(float), sizeof(CUdeviceptr), sizeof(CUdeviceptr),
                                  sizeof(uint64_t)};

    if (lay->count != 4)
        return 0;
    for (size_t i = 0; i < 4; i++)
        if (lay->offset[i] != off[i] || lay->size[i] != size[i])
            return 0;
    return 1;
}

static void print_layout(const char *what, const layout_t *lay)
{
    fprintf(stderr, "loader: %s: %zu params:", what, lay->count);
    for (size_t i = 0; i < lay->count; i++)
        fprintf(stderr, " [%zu] off %zu size %zu", i, lay->offset[i], lay->size[i]);
    fprintf(stderr, "\n");
}

/*
 * The layout of sg_axpy_f32, three ways: cuKernelGetParamInfo on the
 * CUkernel, cuFuncGetParamInfo on the module's CUfunction (both must give
 * the C layout), and cuFuncGetParamInfo on the CUkernel, which a real driver
 * may refuse with CUDA_ERROR_INVALID_HANDLE and otherwise must agree.
 */
static int get_axpy_layout(loader_t *L, layout_t *lay)
{
    layout_t other;
    CUresult rc;

    CK("cuKernelGetParamInfo (sg_axpy_f32)",
       read_layout(&L->d, VIA_KERNEL, (void *)L->kaxpy, lay));
    if (!layout_is_axpy(lay)) {
        print_layout("cuKernelGetParamInfo(sg_axpy_f32) is not the C layout", lay);
        return 1;
    }
    CK("cuFuncGetParamInfo (sg_axpy_f32)",
       read_layout(&L->d, VIA_FUNC, (void *)L->axpy, &other));
    if (!layout_is_axpy(&other)) {
        print_layout("cuFuncGetParamInfo(sg_axpy_f32) is not the C layout", &other);
        return 1;
    }
    rc = read_layout(&L->d, VIA_FUNC, (void *)L->kaxpy, &other);
    if (rc == CUDA_SUCCESS && !layout_is_axpy(&other)) {
        print_layout("cuFuncGetParamInfo(CUkernel sg_axpy_f32) disagrees", &other);
        return 1;
    }
    if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_INVALID_HANDLE)
        return cuda_fail(L, rc, "cuFuncGetParamInfo(CUkernel)");
    return 0;
}

/* Pack axpy's arguments at the reported offsets, as a compiler-generated
 * launcher would.  Returns the buffer size (end of the last parameter). */
static size_t pack_axpy(const layout_t *lay, unsigned char *buf, float a, CUdeviceptr x,
                        CUdeviceptr y, uint64_t n)
{
    const void *val[] = {&a, &x, &y, &n};
    size_t end = 0;

    for (size_t i = 0; i < lay->count; i++) {
        memcpy(buf + lay->offset[i], val[i], lay->size[i]);
        if (lay->offset[i] + lay->size[i] > end)
            end = lay->offset[i] + lay->size[i];
    }
    return end;
}

static int setup(loader_t *L)
{
    sg_drv_err_t err = {0};
    CUcontext ctx;
    CUresult rc;
    int st;

    rc = sg_drv_load(&L->d, &err);
    if (rc == CUDA_SUCCESS)
        rc = sg_drv_load_extra(&L->d, &err);
    if (rc != CUDA_SUCCESS) {
        char what[192];

        snprintf(what, sizeof(what), "%s (%s)", err.call, err.what);
        return cuda_fail(L, rc, what);
    }
    st = check_proc_addresses(L);
    if (st != 0)
        return st;
    CK("cuInit", L->d.Init(0));
    CK("cuDeviceGet", L->d.DeviceGet(&L->dev, 0));
    CK("cuDevicePrimaryCtxRetain", L->d.DevicePrimaryCtxRetain(&ctx, L->dev));
    L->retained = 1;
    CK("cuCtxSetCurrent", L->d.CtxSetCurrent(ctx));
    CK("cuModuleLoadData", L->d.ModuleLoadData(&L->mod, image));
    CK("cuModuleGetFunction (sg_fill_u32)",
       L->d.ModuleGetFunction(&L->fill, L->mod, "sg_fill_u32"));
    CK("cuModuleGetFunction (sg_axpy_f32)",
       L->d.ModuleGetFunction(&L->axpy, L->mod, "sg_axpy_f32"));
    CK("cuLibraryLoadData", L->d.LibraryLoadData(&L->lib, image, NULL, NULL, 0, NULL, NULL, 0));
    CK("cuLibraryGetKernel (sg_fill_u32)",
       L->d.LibraryGetKernel(&L->kfill, L->lib, "sg_fill_u32"));
    CK("cuLibraryGetKernel (sg_axpy_f32)",
       L->d.LibraryGetKernel(&L->kaxpy, L->lib, "sg_axpy_f32"));
    CK("cuKernelGetFunction", L->d.KernelGetFunction(&L->kaxpy_func, L->kaxpy));
    CK("cuMemAlloc_v2 (x)", L->d.MemAlloc(&L->x, N * sizeof(float)));
    CK("cuMemAlloc_v2 (y)", L->d.MemAlloc(&L->y, N * sizeof(float)));
    return 0;
}

static int run_phases(loader_t *L)
{
    const sg_drv_t *d = &L->d;
    uint64_t n = N;
    float a;
    layout_t lay;
    unsigned char buf[64];
    size_t bufsize;
    int st;

    /* 1: legacy stream, module CUfunctions, kernelParams.
     *    x = 1.5, y = 0.25, y = 2*x + y = 3.25 */
    {
        uint32_t one5 = float_bits(1.5f), q = float_bits(0.25f);
        void *fx[] = {&L->x, &one5, &n}, *fy[] = {&L->y, &q, &n};
        void *ax[] = {&a, &L->x, &L->y, &n};

        a = 2.0f;
        CK("cuLaunchKernel (phase 1, sg_fill_u32)",
           d->LaunchKernel(L->fill, N / BLOCK, 1, 1, BLOCK, 1, 1, 0, NULL, fx, NULL));
        CK("cuLaunchKernel (phase 1, sg_fill_u32)",
           d->LaunchKernel(L->fill, N / BLOCK, 1, 1, BLOCK, 1, 1, 0, NULL, fy, NULL));
        CK("cuLaunchKernel (phase 1, sg_axpy_f32)",
           d->LaunchKernel(L->axpy, N / BLOCK, 1, 1, BLOCK, 1, 1, 0, NULL, ax, NULL));
        if ((st = expect_y(L, d->MemcpyDtoH, "cuMemcpyDtoH_v2", 3.25f, 1)) != 0)
            return st;
    }
    /* 2: per-thread default stream (stream 0 through the _ptsz function),
     *    a CUkernel cast to CUfunction.  y = 0.5*1.5 + 3.25 = 4 */
    {
        void *ax[] = {&a, &L->x, &L->y, &n};

        a = 0.5f;
        CK("cuLaunchKernel_ptsz (phase 2)",
           d->LaunchKernel_ptsz((CUfunction)L->kaxpy, N / BLOCK, 1, 1, BLOCK, 1, 1, 0, NULL,
                                ax, NULL));
        if ((st = expect_y(L, d->MemcpyDtoH_ptds, "cuMemcpyDtoH_v2_ptds", 4.0f, 2)) != 0)
            return st;
    }
    /* 3: cuLaunchKernelEx on the legacy stream: fill x = 0.5 through the
     *    CUkernel, then y = 4*0.5 + 4 = 6 through cuKernelGetFunction's
     *    CUfunction. */
    {
        CUlaunchConfig cfg = {.gridDimX = N / BLOCK, .gridDimY = 1, .gridDimZ = 1,
                              .blockDimX = BLOCK, .blockDimY = 1, .blockDimZ = 1,
                              .hStream = NULL};
        uint32_t half = float_bits(0.5f);
        void *fx[] = {&L->x, &half, &n};
        void *ax[] = {&a, &L->x, &L->y, &n};

        a = 4.0f;
        CK("cuLaunchKernelEx (phase 3, sg_fill_u32)",
           d->LaunchKernelEx(&cfg, (CUfunction)L->kfill, fx, NULL));
        CK("cuLaunchKernelEx (phase 3, sg_axpy_f32)",
           d->LaunchKernelEx(&cfg, L->kaxpy_func, ax, NULL));
        if ((st = expect_y(L, d->MemcpyDtoH, "cuMemcpyDtoH_v2", 6.0f, 3)) != 0)
            return st;
    }
    /* 4: cuLaunchKernelEx_ptsz with the packed "extra" buffer, laid out
     *    from cuKernelGetParamInfo.  y = -2*0.5 + 6 = 5 */
    if ((st = get_axpy_layout(L, &lay)) != 0)
        return st;
    {
        CUlaunchConfig cfg = {.gridDimX = N / BLOCK, .gridDimY = 1, .gridDimZ = 1,
                              .blockDimX = BLOCK, .blockDimY = 1, .blockDimZ = 1,
                              .hStream = NULL};
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf,
                         CU_LAUNCH_PARAM_BUFFER_SIZE, &bufsize, CU_LAUNCH_PARAM_END};

        memset(buf, 0, sizeof(buf));
        bufsize = pack_axpy(&lay, buf, -2.0f, L->x, L->y, n);
        CK("cuLaunchKernelEx_ptsz (phase 4, extra)",
           d->LaunchKernelEx_ptsz(&cfg, L->kaxpy_func, NULL, extra));
        if ((st = expect_y(L, d->MemcpyDtoH_ptds, "cuMemcpyDtoH_v2_ptds", 5.0f, 4)) != 0)
            return st;
    }
    /* 5: cuLaunchKernel with the extra buffer on the module's CUfunction.
     *    y = 0.5*0.5 + 5 = 5.25 */
    {
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf,
                         CU_LAUNCH_PARAM_BUFFER_SIZE, &bufsize, CU_LAUNCH_PARAM_END};

        memset(buf, 0, sizeof(buf));
        bufsize = pack_axpy(&lay, buf, 0.5f, L->x, L->y, n);
        CK("cuLaunchKernel (phase 5, extra)",
           d->LaunchKernel(L->axpy, N / BLOCK, 1, 1, BLOCK, 1, 1, 0, NULL, NULL, extra));
        if ((st = expect_y(L, d->MemcpyDtoH, "cuMemcpyDtoH_v2", 5.25f, 5)) != 0)
            return st;
    }
    return 0;
}

/* Best effort: after a sticky error these fail too, and that is fine.  The
 * driver is never dlclose()d, as the runtime never does. */
static void teardown(loader_t *L)
{
    const sg_drv_t *d = &L->d;

    if (d->MemFree != NULL) {
        if (L->y != 0)
            d->MemFree(L->y);
        if (L->x != 0)
            d->MemFree(L->x);
    }
    if (L->lib != NULL && d->LibraryUnload != NULL)
        d->LibraryUnload(L->lib);
    if (L->mod != NULL && d->ModuleUnload != NULL)
        d->ModuleUnload(L->mod);
    if (L->retained && d->DevicePrimaryCtxRelease != NULL)
        d->DevicePrimaryCtxRelease(L->dev);
}

int main(void)
{
    loader_t L = {0};
    int st;

    L.host = malloc(N * sizeof(float));
    if (L.host == NULL) {
        fprintf(stderr, "loader: out of host memory\n");
        return 2;
    }
    st = setup(&L);
    if (st == 0)
        st = run_phases(&L);
    teardown(&L);
    free(L.host);
    if (st == 0)
        printf("loader: ok\n");
    return st;
}

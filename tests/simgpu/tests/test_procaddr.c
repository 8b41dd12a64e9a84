/*
 * test_procaddr.c: cuGetProcAddress / cuGetProcAddress_v2 resolve exported
 * symbols by base name, honouring cudaVersion (the newest variant not newer
 * than asked) and the per-thread-default-stream flag.  Results are compared
 * with dlsym on the library itself, as libcudart would see it.
 */
#include "sgt.h"

#include <dlfcn.h>

typedef CUresult (*gpa_v1_t)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa_v2_t)(const char *, void **, int, cuuint64_t,
                             CUdriverProcAddressQueryResult *);

static void *lib(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    ck_assert_msg(h != NULL, "dlopen libcuda.so.1: %s", dlerror());
    return h;
}

static void *sym(const char *name)
{
    void *p = dlsym(lib(), name);
    ck_assert_msg(p != NULL, "dlsym %s: %s", name, dlerror());
    return p;
}

/* Resolve through cuGetProcAddress_v2 and expect the exported `want`. */
static void expect_resolves(const char *symbol, int version, cuuint64_t flags,
                            const char *want)
{
    void *pfn = NULL;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
    CUresult r = cuGetProcAddress_v2(symbol, &pfn, version, flags, &st);
    ck_assert_msg(r == CUDA_SUCCESS, "(%s, %d, %llu): %d (%s)", symbol, version,
                  (unsigned long long)flags, r, sgt_errname(r));
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);
    ck_assert_msg(pfn == sym(want), "(%s, %d, %llu) gave %p, want %s at %p",
                  symbol, version, (unsigned long long)flags, pfn, want,
                  sym(want));
}

START_TEST(procaddr_selects_versioned_variant)
{
    sgt_init();
    expect_resolves("cuMemAlloc", 3020, 0, "cuMemAlloc_v2");
    expect_resolves("cuMemFree", 3020, 0, "cuMemFree_v2");
    expect_resolves("cuMemGetInfo", 3020, 0, "cuMemGetInfo_v2");
    /* The newest variant not newer than the request. */
    expect_resolves("cuMemAlloc", 12000, 0, "cuMemAlloc_v2");
    expect_resolves("cuLaunchKernel", 4000, 0, "cuLaunchKernel");
    expect_resolves("cuMemcpyHtoD", 3020, 0, "cuMemcpyHtoD_v2");
    expect_resolves("cuLaunchKernelEx", 11060, 0, "cuLaunchKernelEx");
    expect_resolves("cuLibraryGetKernel", 12000, 0, "cuLibraryGetKernel");
    expect_resolves("cuFuncGetParamInfo", 12040, 0, "cuFuncGetParamInfo");
}
END_TEST

START_TEST(procaddr_per_thread_flag_gives_ptsz)
{
    sgt_init();
    expect_resolves("cuLaunchKernel", 7000,
                    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                    "cuLaunchKernel_ptsz");
    expect_resolves("cuLaunchKernelEx", 11060,
                    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                    "cuLaunchKernelEx_ptsz");
    expect_resolves("cuMemcpyHtoDAsync", 7000,
                    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                    "cuMemcpyHtoDAsync_v2_ptsz");
}
END_TEST

START_TEST(procaddr_per_thread_flag_gives_ptds)
{
    sgt_init();
    expect_resolves("cuMemcpyHtoD", 7000,
                    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                    "cuMemcpyHtoD_v2_ptds");
    expect_resolves("cuMemcpyDtoH", 7000,
                    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                    "cuMemcpyDtoH_v2_ptds");
    /* Functions with no stream have no per-thread variant. */
    expect_resolves("cuMemAlloc", 7000,
                    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                    "cuMemAlloc_v2");
}
END_TEST

START_TEST(procaddr_get_proc_address_by_version)
{
    sgt_init();
    expect_resolves("cuGetProcAddress", 11030, 0, "cuGetProcAddress");
    expect_resolves("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2");
    /* The v11030 one has four arguments and works. */
    gpa_v1_t v1 = (gpa_v1_t)sym("cuGetProcAddress");
    void *pfn = NULL;
    SGT_OK(v1("cuMemAlloc", &pfn, 3020, 0));
    ck_assert_ptr_eq(pfn, sym("cuMemAlloc_v2"));
    gpa_v2_t v2 = (gpa_v2_t)sym("cuGetProcAddress_v2");
    ck_assert_ptr_eq((void *)v2, (void *)cuGetProcAddress_v2);
}
END_TEST

START_TEST(procaddr_unknown_symbol_not_found)
{
    sgt_init();
    void *pfn = (void *)0x1;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    SGT_EXPECT(CUDA_ERROR_NOT_FOUND,
               cuGetProcAddress_v2("cuNoSuchFunction", &pfn, 12000, 0, &st));
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    ck_assert_ptr_null(pfn);
}
END_TEST

START_TEST(procaddr_too_old_version_not_sufficient)
{
    sgt_init();
    void *pfn = (void *)0x1;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    SGT_EXPECT(CUDA_ERROR_NOT_FOUND,
               cuGetProcAddress_v2("cuLaunchKernelEx", &pfn, 11000, 0, &st));
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    ck_assert_ptr_null(pfn);
}
END_TEST

START_TEST(procaddr_works_before_cuinit)
{
    /* libcudart asks for cuInit through cuGetProcAddress_v2 before it has
     * called anything else. */
    gpa_v2_t v2 = (gpa_v2_t)sym("cuGetProcAddress_v2");
    void *pfn = NULL;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
    SGT_OK(v2("cuInit", &pfn, 2000, 0, &st));
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);
    ck_assert_ptr_eq(pfn, sym("cuInit"));
    SGT_OK(((CUresult(*)(unsigned))pfn)(0));
}
END_TEST

START_TEST(procaddr_pointer_is_callable)
{
    sgt_init();
    void *pfn = NULL;
    SGT_OK(cuGetProcAddress_v2("cuMemAlloc", &pfn, 3020, 0, NULL));
    CUresult (*alloc)(CUdeviceptr *, size_t) =
        (CUresult(*)(CUdeviceptr *, size_t))pfn;
    CUdeviceptr d = 0;
    SGT_OK(alloc(&d, 4096));
    ck_assert_uint_ne(d, 0);
}
END_TEST

Suite *procaddr_suite(void)
{
    Suite *s = suite_create("procaddr");
    sgt_case(s, procaddr_selects_versioned_variant);
    sgt_case(s, procaddr_per_thread_flag_gives_ptsz);
    sgt_case(s, procaddr_per_thread_flag_gives_ptds);
    sgt_case(s, procaddr_get_proc_address_by_version);
    sgt_case(s, procaddr_unknown_symbol_not_found);
    sgt_case(s, procaddr_too_old_version_not_sufficient);
    sgt_case(s, procaddr_works_before_cuinit);
    sgt_case(s, procaddr_pointer_is_callable);
    return s;
}

/*
 * test_export.c: what NVIDIA's runtime needs of simgpu before its first
 * public call (cuGetExportTable, cuDeviceGetUuid, cuMemFree(0)), and the
 * fatbin/name rule its launches rely on, and the pools, kernel and
 * pointer attributes the runtime's calls reach. The real runtime's programs in
 * tests/cudart prove the whole; these pin each piece.
 */
#include "sgt.h"

#include <string.h>

static const CUuuid cudart_iface = {{0x6B, (char)0xD5, (char)0xFB, 0x6C, 0x5B, (char)0xF4,
                                     (char)0xE7, 0x4A, (char)0x89, (char)0x87, (char)0xD9, 0x39,
                                     0x12, (char)0xFD, (char)0x9D, (char)0xF9}};
static const CUuuid cls_iface = {{(char)0xC6, (char)0x93, 0x33, 0x6E, 0x11, 0x21, (char)0xDF, 0x11,
                                  (char)0xA8, (char)0xC3, 0x68, (char)0xF3, 0x55, (char)0xD8,
                                  (char)0x95, (char)0x93}};
static const CUuuid integrity_iface = {{(char)0xD4, 0x08, 0x20, 0x55, (char)0xBD, (char)0xE6, 0x70,
                                        0x4B, (char)0x8D, 0x34, (char)0xBA, 0x12, 0x3C, 0x66,
                                        (char)0xE1, (char)0xF2}};
static const CUuuid tools_hooks = {{(char)0xA0, (char)0x94, 0x79, (char)0x8C, 0x2E, 0x74, 0x2E, 0x74,
                                    (char)0x93, (char)0xF2, 0x08, 0x00, 0x20, 0x0C, 0x0A, 0x66}};
/* The first table the 13.0 runtime asks for; a driver may lack it. */
static const CUuuid unknown = {{(char)0xF8, (char)0xCF, (char)0xF9, 0x51, 0x21, 0x46, (char)0x8B,
                                0x4E, (char)0xB9, (char)0xE2, (char)0xFB, 0x46, (char)0x9E, 0x7C,
                                0x0D, (char)0xD9}};

static const void *const *table(const CUuuid *id)
{
    const void *t = NULL;
    SGT_OK(cuGetExportTable(&t, id));
    ck_assert_ptr_nonnull(t);
    return (const void *const *)t;
}

START_TEST(export_unknown_table_is_invalid_value)
{
    const void *t = (const void *)1;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuGetExportTable(&t, &unknown));
    ck_assert_ptr_null(t);
}
END_TEST

START_TEST(export_size_word_and_primary_context)
{
    sgt_init();
    const void *const *t = table(&cudart_iface);
    ck_assert_uint_eq((uintptr_t)t[0], 13 * sizeof(void *));
    CUcontext ctx = NULL;
    CUresult (*primary)(CUcontext *, CUdevice) = (CUresult(*)(CUcontext *, CUdevice))t[2];
    SGT_OK(primary(&ctx, 0));
    ck_assert_ptr_eq(ctx, sgt_ctx());
    SGT_EXPECT(CUDA_ERROR_INVALID_DEVICE, primary(&ctx, 1));
}
END_TEST

START_TEST(export_context_storage_put_get_delete)
{
    sgt_init();
    const void *const *t = table(&cls_iface);
    CUresult (*put)(CUcontext, void *, void *, void *) =
        (CUresult(*)(CUcontext, void *, void *, void *))t[0];
    CUresult (*del)(CUcontext, void *) = (CUresult(*)(CUcontext, void *))t[1];
    CUresult (*get)(void **, CUcontext, void *) = (CUresult(*)(void **, CUcontext, void *))t[2];
    int key, value;
    void *got = NULL;
    ck_assert_int_ne(get(&got, NULL, &key), CUDA_SUCCESS); /* unknown key */
    SGT_OK(put(NULL, &key, &value, NULL));
    SGT_OK(get(&got, sgt_ctx(), &key)); /* NULL meant the current context */
    ck_assert_ptr_eq(got, &value);
    SGT_OK(del(sgt_ctx(), &key));
    ck_assert_int_ne(get(&got, NULL, &key), CUDA_SUCCESS);
}
END_TEST

START_TEST(export_integrity_fixed_answers)
{
    sgt_init();
    const void *const *t = table(&integrity_iface);
    CUresult (*check)(uint32_t, uint64_t, uint64_t *) =
        (CUresult(*)(uint32_t, uint64_t, uint64_t *))t[1];
    uint64_t a[2], b[2];
    SGT_OK(check(13000, 1234, a));
    ck_assert_uint_eq(a[0], 0x3341181C03CB675CULL);
    ck_assert_uint_eq(a[1], 0x8ED383AA1F4CD1E8ULL);
    SGT_OK(check(13001, 1234, a));
    ck_assert_uint_eq(a[0], 0x1841181C03CB675CULL);
    /* 13002 is a hash of its inputs: the time is one of them. */
    SGT_OK(check(13002, 1234, a));
    SGT_OK(check(13002, 1235, b));
    ck_assert(memcmp(a, b, sizeof a) != 0);
}
END_TEST

START_TEST(export_tools_buffers_are_zeroed)
{
    const void *const *t = table(&tools_hooks);
    void (*buf)(void **, size_t *) = (void (*)(void **, size_t *))t[2];
    void *p = NULL;
    size_t n = 0;
    buf(&p, &n);
    ck_assert_uint_eq(n, 1024);
    for (size_t i = 0; i < n; i++)
        ck_assert_uint_eq(((uint32_t *)p)[i], 0);
    buf = (void (*)(void **, size_t *))t[6];
    buf(&p, &n);
    ck_assert_uint_eq(n, 14);
}
END_TEST

START_TEST(export_device_uuid_both_versions)
{
    sgt_init();
    CUuuid a, b;
    SGT_OK(cuDeviceGetUuid(&a, 0));
    SGT_OK(cuDeviceGetUuid_v2(&b, 0));
    ck_assert(memcmp(&a, &b, sizeof a) == 0);
    SGT_EXPECT(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetUuid(&a, 1));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetUuid_v2(NULL, 0));
}
END_TEST

START_TEST(export_free_of_null_succeeds)
{
    sgt_init();
    SGT_OK(cuMemFree(0));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFree(0x1000));
}
END_TEST

START_TEST(export_h100_limits)
{
    sgt_init();
    int v = 0;
    SGT_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 0));
    ck_assert_int_eq(v, 65535);
    SGT_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0));
    ck_assert_int_eq(v, 232448);
    SGT_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 0));
    ck_assert_int_eq(v, 50 << 20);
}
END_TEST

/* The wrapper nvcc registers, with a pointer to the fat binary. */
struct fatbinc {
    int magic, version;
    const void *data;
    void *unused;
};

START_TEST(export_fatbin_names_resolve_to_builtins)
{
    sgt_init();
    static const unsigned long long fatbin[4] = {0x00100001BA55ED50ULL, 0, 0, 0};
    struct fatbinc w = {0x466243B1, 1, fatbin, NULL};
    CUlibrary lib;
    CUkernel k;
    SGT_OK(cuLibraryLoadData(&lib, &w, NULL, NULL, 0, NULL, NULL, 0));
    SGT_OK(cuLibraryGetKernel(&k, lib, "sg_fill_u32"));
    const char *name = NULL;
    SGT_OK(cuLibraryGetKernel(&k, lib, "_Z11sg_fill_u32Pjjm"));
    SGT_OK(cuKernelGetName(&name, k));
    ck_assert_str_eq(name, "sg_fill_u32");
    /* The right base name with other parameters is another kernel. */
    SGT_EXPECT(CUDA_ERROR_NOT_FOUND, cuLibraryGetKernel(&k, lib, "_Z11sg_fill_u32Pfjm"));
    SGT_EXPECT(CUDA_ERROR_NOT_FOUND, cuLibraryGetKernel(&k, lib, "_ZN2ns11sg_fill_u32EPjjm"));
    CUmodule mod;
    CUfunction f;
    SGT_OK(cuModuleLoadData(&mod, fatbin));
    SGT_OK(cuModuleGetFunction(&f, mod, "_Z11sg_gemm_f32PKfS0_Pfjjj"));
    /* Neither magic number, and no text magic: an image that is not a
     * fatbin is text, NUL-terminated as cuModuleLoadData requires. */
    const char junk[] = "\x78\x56\x34\x12 junk";
    SGT_EXPECT(CUDA_ERROR_INVALID_IMAGE, cuModuleLoadData(&mod, junk));
}
END_TEST

START_TEST(export_pool_counts_live_bytes)
{
    sgt_init();
    CUmemoryPool def, cur;
    SGT_OK(cuDeviceGetDefaultMemPool(&def, 0));
    SGT_OK(cuDeviceGetMemPool(&cur, 0));
    ck_assert_ptr_eq(def, cur);
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemoryPool pool;
    SGT_OK(cuMemPoolCreate(&pool, &props));
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr a, b;
    SGT_OK(cuMemAllocFromPoolAsync(&a, 1 << 20, pool, s));
    SGT_OK(cuMemAllocFromPoolAsync(&b, 1 << 20, pool, s));
    cuuint64_t used = 0, high = 0;
    SGT_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    ck_assert_uint_eq(used, 2 << 20);
    SGT_OK(cuMemFreeAsync(a, s));
    SGT_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    SGT_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &high));
    ck_assert_uint_eq(used, 1 << 20);
    ck_assert_uint_eq(high, 2 << 20);
    cuuint64_t t = 12345, got = 0;
    SGT_OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &t));
    SGT_OK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &got));
    ck_assert_uint_eq(got, 12345);
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE,
               cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &t));
    SGT_OK(cuMemFreeAsync(b, s));
    SGT_OK(cuStreamSynchronize(s));
    SGT_OK(cuMemPoolDestroy(pool));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(pool));
}
END_TEST

START_TEST(export_kernel_attributes_settable)
{
    sgt_init();
    CUlibrary lib;
    CUkernel k;
    CUfunction f;
    SGT_OK(cuLibraryLoadData(&lib, SGT_IMAGE, NULL, NULL, 0, NULL, NULL, 0));
    SGT_OK(cuLibraryGetKernel(&k, lib, "sg_gemv_f32"));
    int v = 0;
    SGT_OK(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k, 0));
    ck_assert_int_eq(v, 1024);
    SGT_OK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000, k, 0));
    SGT_OK(cuKernelGetFunction(&f, k));
    SGT_OK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f));
    ck_assert_int_eq(v, 100000);
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE,
               cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 300000, k, 0));
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE,
               cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUfunction)k));
}
END_TEST

START_TEST(export_pointer_context_and_managed)
{
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    CUpointer_attribute at[] = {CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_IS_MANAGED};
    CUcontext ctx = NULL;
    unsigned managed = 7;
    void *data[] = {&ctx, &managed};
    SGT_OK(cuPointerGetAttributes(2, at, data, d));
    ck_assert_ptr_eq(ctx, sgt_ctx());
    ck_assert_uint_eq(managed, 0);
}
END_TEST

Suite *export_suite(void)
{
    Suite *s = suite_create("export");
    sgt_case(s, export_unknown_table_is_invalid_value);
    sgt_case(s, export_size_word_and_primary_context);
    sgt_case(s, export_context_storage_put_get_delete);
    sgt_case(s, export_integrity_fixed_answers);
    sgt_case(s, export_tools_buffers_are_zeroed);
    sgt_case(s, export_device_uuid_both_versions);
    sgt_case(s, export_free_of_null_succeeds);
    sgt_case(s, export_h100_limits);
    sgt_case(s, export_fatbin_names_resolve_to_builtins);
    sgt_case(s, export_pool_counts_live_bytes);
    sgt_case(s, export_kernel_attributes_settable);
    sgt_case(s, export_pointer_context_and_managed);
    return s;
}

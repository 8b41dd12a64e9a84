/*
 * test_fault.c: faults are sticky.  A kernel, copy or memset that touches an
 * address with no mapping kills the context: the waiting call and every
 * later call return CUDA_ERROR_ILLEGAL_ADDRESS, and the report counts it.
 */
#include "sgt.h"

#include <stdlib.h>

#define G (2 * SGT_MIB)

static CUdeviceptr reservation(void)
{
    CUdeviceptr p = 0;
    SGT_OK(cuMemAddressReserve(&p, G, 0, 0, 0));
    return p;
}

/* Every later call, of any kind, returns the sticky error. */
static void assert_context_dead(CUdeviceptr good)
{
    CUdeviceptr d = 0;
    uint32_t buf[4] = {0};
    CUstream s = NULL;
    SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemAlloc(&d, 4096));
    SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS,
               cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemcpyDtoH(buf, good, 4));
}

START_TEST(fault_kernel_on_unmapped_address_is_sticky)
{
    sgt_init();
    CUdeviceptr good = 0;
    SGT_OK(cuMemAlloc(&good, 4096));
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUfunction fill = sgt_func("sg_fill_u32");
    CUdeviceptr p = reservation();
    /* The launch itself succeeds: the error is asynchronous. */
    sgt_fill_u32(s, p, 7, 1024);
    SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(s));
    SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(s));
    assert_context_dead(good);
    /* Even work on valid memory is refused, and so is a module lookup. */
    uint32_t value = 1;
    uint64_t count = 16;
    void *params[] = {&good, &value, &count};
    SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, sgt_launch(fill, s, params));
    CUfunction f2;
    SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS,
               cuModuleGetFunction(&f2, sgt_module(), "sg_axpy_f32"));
}
END_TEST

START_TEST(fault_async_copy_to_unmapped_address_is_sticky)
{
    sgt_init();
    CUdeviceptr good = 0;
    SGT_OK(cuMemAlloc(&good, 4096));
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    void *h = NULL;
    SGT_OK(cuMemAllocHost(&h, 4096));
    CUdeviceptr p = reservation();
    SGT_OK(cuMemcpyHtoDAsync(p, h, 4096, s));
    SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(s));
    assert_context_dead(good);
}
END_TEST

START_TEST(fault_memset_after_unmap_is_sticky)
{
    sgt_init();
    CUdeviceptr good = 0;
    SGT_OK(cuMemAlloc(&good, 4096));
    CUdeviceptr p = reservation();
    CUmemAllocationProp prop = sgt_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    CUmemGenericAllocationHandle h;
    SGT_OK(cuMemCreate(&h, G, &prop, 0));
    SGT_OK(cuMemMap(p, G, 0, h, 0));
    SGT_OK(sgt_set_access(p, G));
    SGT_OK(cuMemsetD32(p, 1, 1024));
    SGT_OK(cuMemUnmap(p, G));
    SGT_FAULTS(cuMemsetD32(p, 2, 1024));
    assert_context_dead(good);
}
END_TEST

static void fault_child(void *arg)
{
    sgt_init();
    CUdeviceptr p = reservation();
    sgt_fill_u32(NULL, p, 7, 1024);
    SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
}

/* spillway's fingerprint loads 8-byte words: from an address that is no
 * multiple of 8 it faults, as a misaligned load does on a GPU; from one
 * that is, it runs. */
START_TEST(fault_fingerprint_of_misaligned_words_is_sticky)
{
    sgt_init();
    CUdeviceptr good = 0, out = 0;
    SGT_OK(cuMemAlloc(&good, 4096));
    SGT_OK(cuMemAlloc(&out, 16));
    CUfunction fp = sgt_func("spillway_fingerprint");
    CUdeviceptr src = good + 8;
    uint64_t bytes = 1024;
    void *params[] = {&src, &bytes, &out};
    SGT_OK(sgt_launch(fp, NULL, params));
    SGT_OK(cuCtxSynchronize());
    src = good + 4;
    SGT_OK(sgt_launch(fp, NULL, params));
    SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    assert_context_dead(good);
}
END_TEST

START_TEST(fault_is_counted_in_report)
{
    char path[256];
    sgt_report_env(path, sizeof path, "fault");
    sgt_child_ok(fault_child, NULL);
    char *json = sgt_report_read(path);
    ck_assert_uint_ge(sgt_json_u64(json, "faults"), 1);
    free(json);
}
END_TEST

static void no_fault_child(void *arg)
{
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    sgt_fill_u32(NULL, d, 7, 1024);
    SGT_OK(cuCtxSynchronize());
}

START_TEST(no_fault_on_valid_memory_in_report)
{
    char path[256];
    sgt_report_env(path, sizeof path, "nofault");
    sgt_child_ok(no_fault_child, NULL);
    char *json = sgt_report_read(path);
    ck_assert_uint_eq(sgt_json_u64(json, "faults"), 0);
    free(json);
}
END_TEST

Suite *fault_suite(void)
{
    Suite *s = suite_create("fault");
    sgt_case(s, fault_kernel_on_unmapped_address_is_sticky);
    sgt_case(s, fault_async_copy_to_unmapped_address_is_sticky);
    sgt_case(s, fault_memset_after_unmap_is_sticky);
    sgt_case(s, fault_fingerprint_of_misaligned_words_is_sticky);
    sgt_case(s, fault_is_counted_in_report);
    sgt_case(s, no_fault_on_valid_memory_in_report);
    return s;
}

/*
 * test_memory.c: the device-memory limit (SIMGPU_MEM), cuMemGetInfo, and
 * the pointer queries (address range, memory type, host device pointers).
 */
#include "sgt.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define MIB SGT_MIB

static void init_8mib(void)
{
    sgt_env("SIMGPU_MEM", "8MiB");
    sgt_init();
}

START_TEST(oom_third_alloc_past_limit_fails)
{
    init_8mib();
    CUdeviceptr a = 0, b = 0, c = 0;
    SGT_OK(cuMemAlloc(&a, 4 * MIB));
    SGT_OK(cuMemAlloc(&b, 4 * MIB));
    ck_assert_uint_ne(a, b);
    SGT_EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&c, 4 * MIB));
}
END_TEST

START_TEST(oom_mem_get_info_tracks_use)
{
    init_8mib();
    size_t free0, total, free1, free2;
    SGT_OK(cuMemGetInfo(&free0, &total));
    ck_assert_uint_eq(total, 8 * MIB);
    ck_assert_uint_eq(free0, 8 * MIB);
    CUdeviceptr a, b;
    SGT_OK(cuMemAlloc(&a, 4 * MIB));
    SGT_OK(cuMemGetInfo(&free1, &total));
    ck_assert_uint_eq(total, 8 * MIB);
    ck_assert_uint_eq(free1, 4 * MIB);
    SGT_OK(cuMemAlloc(&b, 4 * MIB));
    SGT_OK(cuMemGetInfo(&free2, &total));
    ck_assert_uint_eq(free2, 0);
    SGT_OK(cuMemFree(a));
    SGT_OK(cuMemGetInfo(&free1, &total));
    ck_assert_uint_eq(free1, 4 * MIB);
}
END_TEST

START_TEST(oom_free_makes_room_again)
{
    init_8mib();
    CUdeviceptr a, b, c;
    SGT_OK(cuMemAlloc(&a, 4 * MIB));
    SGT_OK(cuMemAlloc(&b, 4 * MIB));
    SGT_EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&c, 4 * MIB));
    SGT_OK(cuMemFree(a));
    SGT_OK(cuMemAlloc(&c, 4 * MIB));
    SGT_EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&a, 1));
}
END_TEST

START_TEST(oom_mem_create_device_counts_against_limit)
{
    init_8mib();
    CUmemAllocationProp p = sgt_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    CUmemGenericAllocationHandle h1 = 0, h2 = 0;
    SGT_OK(cuMemCreate(&h1, 4 * MIB, &p, 0));
    size_t free1, total;
    SGT_OK(cuMemGetInfo(&free1, &total));
    ck_assert_uint_eq(free1, 4 * MIB);
    CUdeviceptr a, b;
    SGT_OK(cuMemAlloc(&a, 4 * MIB));
    SGT_EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&b, 2 * MIB));
    SGT_EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&h2, 2 * MIB, &p, 0));
    /* Releasing the handle gives its bytes back. */
    SGT_OK(cuMemRelease(h1));
    SGT_OK(cuMemCreate(&h2, 4 * MIB, &p, 0));
}
END_TEST

START_TEST(oom_host_handles_do_not_count)
{
    init_8mib();
    CUdeviceptr a, b;
    SGT_OK(cuMemAlloc(&a, 4 * MIB));
    SGT_OK(cuMemAlloc(&b, 4 * MIB));
    CUmemAllocationProp p = sgt_prop(CU_MEM_LOCATION_TYPE_HOST);
    CUmemGenericAllocationHandle h = 0;
    SGT_OK(cuMemCreate(&h, 16 * MIB, &p, 0));
    void *pinned = NULL;
    SGT_OK(cuMemAllocHost(&pinned, 16 * MIB));
    size_t free1, total;
    SGT_OK(cuMemGetInfo(&free1, &total));
    ck_assert_uint_eq(free1, 0);
}
END_TEST

START_TEST(address_range_of_interior_pointer)
{
    sgt_init();
    CUdeviceptr a, b;
    SGT_OK(cuMemAlloc(&a, 1 * MIB));
    SGT_OK(cuMemAlloc(&b, 3 * MIB));
    CUdeviceptr base = 0;
    size_t size = 0;
    SGT_OK(cuMemGetAddressRange(&base, &size, a + 12345));
    ck_assert_uint_eq(base, a);
    ck_assert_uint_eq(size, 1 * MIB);
    SGT_OK(cuMemGetAddressRange(&base, &size, b + 3 * MIB - 1));
    ck_assert_uint_eq(base, b);
    ck_assert_uint_eq(size, 3 * MIB);
    /* Either output may be NULL. */
    SGT_OK(cuMemGetAddressRange(&base, NULL, b + 5));
    ck_assert_uint_eq(base, b);
}
END_TEST

START_TEST(pointer_attribute_memory_type)
{
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    void *h = NULL;
    SGT_OK(cuMemAllocHost(&h, 4096));
    unsigned int type = 0;
    SGT_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 8));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_DEVICE);
    type = 0;
    SGT_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 (CUdeviceptr)(uintptr_t)h));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_HOST);
}
END_TEST

START_TEST(pointer_attributes_answer_each_and_default_the_unknown)
{
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 8192));
    unsigned type = 0;
    CUdeviceptr start = 0;
    size_t size = 0;
    void *host = (void *)1;
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                   CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void *data[] = {&type, &start, &size, &host, NULL};
    SGT_OK(cuPointerGetAttributes(5, attrs, data, d + 100));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_DEVICE);
    ck_assert_uint_eq(start, d);
    ck_assert_uint_eq(size, 8192);
    /* No host pointer for device memory: zero, not an error. */
    ck_assert_ptr_null(host);
    /* A pointer simgpu does not know: success, and zeros. */
    type = 7;
    start = 7;
    SGT_OK(cuPointerGetAttributes(2, attrs, data, 0x10));
    ck_assert_uint_eq(type, 0);
    ck_assert_uint_eq(start, 0);
    /* An attribute it does not know, or missing arrays, are errors. */
    CUpointer_attribute odd = (CUpointer_attribute)999;
    ck_assert_int_eq(cuPointerGetAttributes(1, &odd, data, d), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuPointerGetAttributes(1, NULL, data, d), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

START_TEST(host_device_pointer_reaches_pinned_memory)
{
    sgt_init();
    uint32_t *h = NULL;
    SGT_OK(cuMemAllocHost((void **)&h, 1024 * sizeof *h));
    memset(h, 0, 1024 * sizeof *h);
    CUdeviceptr d = 0;
    SGT_OK(cuMemHostGetDevicePointer(&d, h, 0));
    ck_assert_uint_ne(d, 0);
    sgt_fill_u32(NULL, d, 0xabcd1234u, 1024);
    SGT_OK(cuCtxSynchronize());
    for (int i = 0; i < 1024; i++)
        ck_assert_uint_eq(h[i], 0xabcd1234u);
    SGT_OK(cuMemFreeHost(h));
}
END_TEST

START_TEST(memset_d32_fills_device_memory)
{
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    SGT_OK(cuMemsetD32(d, 0x5a5a0101u, 1024));
    uint32_t out[1024];
    SGT_OK(cuMemcpyDtoH(out, d, sizeof out));
    for (int i = 0; i < 1024; i++)
        ck_assert_uint_eq(out[i], 0x5a5a0101u);
}
END_TEST

static CUresult thread_results[2];

static void *no_ctx_thread(void *arg)
{
    CUdeviceptr d;
    thread_results[0] = cuMemAlloc(&d, 4096);
    SGT_OK(cuCtxSetCurrent(sgt_ctx()));
    thread_results[1] = cuMemAlloc(&d, 4096);
    return NULL;
}

START_TEST(context_is_current_per_thread)
{
    /* A new thread has no current context until it sets one, as with the
     * driver: an interposer's worker threads must set it. */
    sgt_init();
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, no_ctx_thread, NULL), 0);
    pthread_join(t, NULL);
    ck_assert_int_eq(thread_results[0], CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(thread_results[1], CUDA_SUCCESS);
}
END_TEST

static const char *const sizes_8mib[] = {"8388608", "8192K", "8M", "8MiB",
                                         "8192KiB"};

START_TEST(mem_size_accepts_every_suffix)
{
    sgt_env("SIMGPU_MEM", sizes_8mib[_i]);
    sgt_init();
    size_t free_b, total;
    SGT_OK(cuMemGetInfo(&free_b, &total));
    ck_assert_msg(total == 8 * MIB, "SIMGPU_MEM=%s gives total %zu",
                  sizes_8mib[_i], total);
}
END_TEST

static void deref_child(void *arg)
{
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    volatile uint32_t *p = (volatile uint32_t *)(uintptr_t)d;
    /* Dies of the signal itself: a sanitizer's handler would turn the
     * crash into a report and an exit status. */
    signal(SIGSEGV, SIG_DFL);
    signal(SIGBUS, SIG_DFL);
    (void)*p;
    exit(0);
}

START_TEST(device_pointer_is_not_host_accessible)
{
    int st = sgt_child(deref_child, NULL);
    ck_assert_msg(WIFSIGNALED(st) && (WTERMSIG(st) == SIGSEGV ||
                                      WTERMSIG(st) == SIGBUS),
                  "dereferencing a device pointer on the CPU did not crash");
}
END_TEST

/* SIMGPU_DEVICES=2: two devices, each with its own primary context; an
 * allocation remembers the device whose context was current, and its
 * page rounding belongs to no allocation. */
START_TEST(second_device_has_its_own_context_and_allocations)
{
    sgt_env("SIMGPU_DEVICES", "2");
    sgt_init();
    int count = 0;
    SGT_OK(cuDeviceGetCount(&count));
    ck_assert_int_eq(count, 2);
    CUdevice d1, d;
    CUcontext c1;
    SGT_OK(cuDeviceGet(&d1, 1));
    ck_assert_int_eq(d1, 1);
    SGT_EXPECT(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&d, 2));
    SGT_OK(cuDevicePrimaryCtxRetain(&c1, d1));
    ck_assert_ptr_ne(c1, sgt_ctx());
    CUdeviceptr p0, p1;
    SGT_OK(cuMemAlloc(&p0, 1 * MIB + 8));
    SGT_OK(cuCtxSetCurrent(c1));
    SGT_OK(cuCtxGetDevice(&d));
    ck_assert_int_eq(d, 1);
    SGT_OK(cuMemAlloc(&p1, 1 * MIB));
    int ord = -1;
    SGT_OK(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p1));
    ck_assert_int_eq(ord, 1);
    SGT_OK(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p0));
    ck_assert_int_eq(ord, 0);
    CUdeviceptr base;
    size_t size;
    SGT_OK(cuMemGetAddressRange(&base, &size, p0 + 5));
    ck_assert_uint_eq(size, 1 * MIB + 8);
    SGT_EXPECT(CUDA_ERROR_NOT_FOUND, cuMemGetAddressRange(&base, &size, p0 + 1 * MIB + 8));
    SGT_OK(cuMemFree(p1));
    SGT_OK(cuCtxSetCurrent(sgt_ctx()));
    SGT_OK(cuMemFree(p0));
}
END_TEST

Suite *memory_suite(void)
{
    Suite *s = suite_create("memory");
    sgt_case(s, oom_third_alloc_past_limit_fails);
    sgt_case(s, oom_mem_get_info_tracks_use);
    sgt_case(s, oom_free_makes_room_again);
    sgt_case(s, oom_mem_create_device_counts_against_limit);
    sgt_case(s, oom_host_handles_do_not_count);
    sgt_case(s, address_range_of_interior_pointer);
    sgt_case(s, pointer_attribute_memory_type);
    sgt_case(s, pointer_attributes_answer_each_and_default_the_unknown);
    sgt_case(s, host_device_pointer_reaches_pinned_memory);
    sgt_case(s, memset_d32_fills_device_memory);
    sgt_case(s, context_is_current_per_thread);
    sgt_loop_case(s, mem_size_accepts_every_suffix, 0, 5);
    sgt_case(s, device_pointer_is_not_host_accessible);
    sgt_case(s, second_device_has_its_own_context_and_allocations);
    return s;
}

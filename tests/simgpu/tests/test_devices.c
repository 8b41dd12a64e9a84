/*
 * test_devices.c: SIMGPU_DEVICES=2. Each device has memory of its own
 * (SIMGPU_MEM each), peer copies work between them, and a kernel on one
 * device that reaches the other's memory faults unless its context
 * enabled peer access (cuMemAlloc memory) or the mapping was granted to
 * it (VMM), as on real hardware.
 */
#include "sgt.h"

#include <string.h>

/* Device 1's primary context (device 0's is sgt_ctx()). */
static CUcontext second(void)
{
    CUcontext c1;
    SGT_OK(cuDevicePrimaryCtxRetain(&c1, 1));
    return c1;
}

START_TEST(each_device_runs_out_of_its_own_memory)
{
    sgt_env("SIMGPU_DEVICES", "2");
    sgt_env("SIMGPU_MEM", "8MiB");
    sgt_init();
    CUcontext c1 = second();
    CUdeviceptr a, b, c;
    size_t free_b, total;
    SGT_OK(cuMemAlloc(&a, 8 * SGT_MIB));
    SGT_EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&b, 2 * SGT_MIB));
    SGT_OK(cuCtxSetCurrent(c1));
    SGT_OK(cuMemGetInfo(&free_b, &total));
    ck_assert_uint_eq(free_b, 8 * SGT_MIB); /* device 1's own */
    SGT_OK(cuMemAlloc(&b, 8 * SGT_MIB));
    SGT_EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&c, 2 * SGT_MIB));
    /* cuMemCreate charges the device its location names. */
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED};
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 1;
    CUmemGenericAllocationHandle h;
    SGT_EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&h, 2 * SGT_MIB, &prop, 0));
    SGT_OK(cuMemFree(b));
    SGT_OK(cuMemCreate(&h, 2 * SGT_MIB, &prop, 0));
    SGT_OK(cuMemRelease(h));
    SGT_OK(cuCtxSetCurrent(sgt_ctx()));
    SGT_OK(cuMemFree(a));
}
END_TEST

START_TEST(peer_copies_move_bytes_between_devices)
{
    sgt_env("SIMGPU_DEVICES", "2");
    sgt_init();
    CUcontext c0 = sgt_ctx(), c1 = second();
    int can = -1;
    SGT_OK(cuDeviceCanAccessPeer(&can, 0, 1));
    ck_assert_int_eq(can, 1);
    SGT_OK(cuDeviceCanAccessPeer(&can, 1, 1));
    ck_assert_int_eq(can, 0);
    CUdeviceptr a, b;
    SGT_OK(cuMemAlloc(&a, SGT_MIB));
    SGT_OK(cuCtxSetCurrent(c1));
    SGT_OK(cuMemAlloc(&b, SGT_MIB));
    static unsigned char in[SGT_MIB], out[SGT_MIB];
    sgt_pattern(in, sizeof in, 3);
    SGT_OK(cuMemcpyHtoD(a, in, sizeof in));
    SGT_OK(cuMemcpyPeer(b, c1, a, c0, sizeof in));
    SGT_OK(cuMemcpyDtoH(out, b, sizeof out));
    ck_assert(memcmp(in, out, sizeof in) == 0);
    /* The unified and DtoD forms reach another device's memory too (UVA). */
    SGT_OK(cuMemsetD8(a, 0, sizeof in));
    SGT_OK(cuMemcpyDtoD(a, b, sizeof in));
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    SGT_OK(cuMemcpyPeerAsync(b, c1, a, c0, sizeof in, s));
    SGT_OK(cuStreamSynchronize(s));
    memset(out, 0, sizeof out);
    SGT_OK(cuMemcpyDtoH(out, b, sizeof out));
    ck_assert(memcmp(in, out, sizeof in) == 0);
    SGT_OK(cuMemFree(b));
    SGT_OK(cuCtxSetCurrent(c0));
    SGT_OK(cuMemFree(a));
}
END_TEST

START_TEST(peer_access_is_enabled_once)
{
    sgt_env("SIMGPU_DEVICES", "2");
    sgt_init();
    CUcontext c1 = second();
    SGT_EXPECT(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, cuCtxDisablePeerAccess(c1));
    SGT_OK(cuCtxEnablePeerAccess(c1, 0));
    SGT_EXPECT(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, cuCtxEnablePeerAccess(c1, 0));
    SGT_EXPECT(CUDA_ERROR_INVALID_DEVICE, cuCtxEnablePeerAccess(sgt_ctx(), 0));
    SGT_OK(cuCtxDisablePeerAccess(c1));
}
END_TEST

/* Device 1 fills device 0's cuMemAlloc memory: a fault without peer
 * access, the right bytes with it. */
static void peer_kernel_child(void *arg)
{
    bool enable = *(bool *)arg;
    sgt_init();
    CUcontext c0 = sgt_ctx(), c1 = second();
    CUdeviceptr a;
    SGT_OK(cuMemAlloc(&a, SGT_MIB));
    SGT_OK(cuMemsetD32(a, 0, SGT_MIB / 4));
    SGT_OK(cuCtxSetCurrent(c1));
    if (enable)
        SGT_OK(cuCtxEnablePeerAccess(c0, 0));
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    sgt_fill_u32(s, a, 9, SGT_MIB / 4);
    CUresult r = cuStreamSynchronize(s);
    if (!enable) {
        SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, r);
        return;
    }
    SGT_OK(r);
    uint32_t v = 0;
    SGT_OK(cuMemcpyDtoH(&v, a + SGT_MIB - 4, 4));
    ck_assert_uint_eq(v, 9);
}

START_TEST(kernel_on_another_device_needs_peer_access)
{
    sgt_env("SIMGPU_DEVICES", "2");
    bool enable = false;
    sgt_child_ok(peer_kernel_child, &enable);
    enable = true;
    sgt_child_ok(peer_kernel_child, &enable);
}
END_TEST

/* A VMM mapping is reached by the devices cuMemSetAccess named, whatever
 * peer access says. */
static void vmm_grant_child(void *arg)
{
    bool grant1 = *(bool *)arg;
    sgt_init();
    CUcontext c1 = second();
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED};
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemGenericAllocationHandle h;
    CUdeviceptr p;
    SGT_OK(cuMemCreate(&h, 2 * SGT_MIB, &prop, 0));
    SGT_OK(cuMemAddressReserve(&p, 2 * SGT_MIB, 0, 0, 0));
    SGT_OK(cuMemMap(p, 2 * SGT_MIB, 0, h, 0));
    CUmemAccessDesc d[2] = {{.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE},
                            {.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE}};
    d[0].location.type = d[1].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d[1].location.id = 1;
    SGT_OK(cuMemSetAccess(p, 2 * SGT_MIB, d, grant1 ? 2 : 1));
    SGT_OK(cuCtxSetCurrent(c1));
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    sgt_fill_u32(s, p, 5, 1024);
    CUresult r = cuStreamSynchronize(s);
    if (grant1)
        SGT_OK(r);
    else
        SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, r);
}

START_TEST(vmm_mapping_is_reached_by_granted_devices)
{
    sgt_env("SIMGPU_DEVICES", "2");
    bool grant1 = false;
    sgt_child_ok(vmm_grant_child, &grant1);
    grant1 = true;
    sgt_child_ok(vmm_grant_child, &grant1);
}
END_TEST

Suite *devices_suite(void)
{
    Suite *s = suite_create("devices");
    sgt_case(s, each_device_runs_out_of_its_own_memory);
    sgt_case(s, peer_copies_move_bytes_between_devices);
    sgt_case(s, peer_access_is_enabled_once);
    sgt_case(s, kernel_on_another_device_needs_peer_access);
    sgt_case(s, vmm_mapping_is_reached_by_granted_devices);
    return s;
}

/*
 * test_devices.c: SIMGPU_DEVICES=2. Each device has memory of its own
 * (SIMGPU_MEM each), peer copies work between them, and a kernel on one
 * device that reaches the other's memory faults unless its context
 * enabled peer access (cuMemAlloc memory) or the mapping was granted to
 * it (VMM), as on real hardware. Streams, events and module functions
 * belong to a device, with the driver's rules for using them from another.
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

/* Memory on each device, a stream of each, and a library kernel (which
 * serves every context) to launch: the set-up of the handle rules below.
 * Leaves device 0's context current. */
typedef struct {
    CUcontext ctx[2];
    CUstream s[2];
    CUdeviceptr a[2];
    CUfunction fill; /* a CUkernel of a library */
} two_t;

static two_t two_devices(void)
{
    two_t t = {.ctx = {sgt_ctx(), second()}};
    for (int d = 1; d >= 0; d--) {
        SGT_OK(cuCtxSetCurrent(t.ctx[d]));
        SGT_OK(cuStreamCreate(&t.s[d], CU_STREAM_NON_BLOCKING));
        SGT_OK(cuMemAlloc(&t.a[d], SGT_MIB));
    }
    CUlibrary lib;
    CUkernel k;
    SGT_OK(cuLibraryLoadData(&lib, SGT_IMAGE, NULL, NULL, 0, NULL, NULL, 0));
    SGT_OK(cuLibraryGetKernel(&k, lib, "sg_fill_u32"));
    t.fill = (CUfunction)k;
    return t;
}

/* sg_fill_u32 of 1024 words at dst on s. */
static CUresult fill(CUfunction f, CUstream s, CUdeviceptr dst)
{
    uint32_t value = 7;
    uint64_t count = 1024;
    void *params[] = {&dst, &value, &count};
    return sgt_launch(f, s, params);
}

/* "A kernel launch will fail if it is issued to a stream that is not
 * associated to the current device" (Programming Guide), in every launch
 * form and during a capture; the shared default streams take it. */
START_TEST(launch_needs_a_stream_of_the_current_device)
{
    sgt_env("SIMGPU_DEVICES", "2");
    sgt_init();
    two_t t = two_devices();
    SGT_OK(cuCtxSetCurrent(t.ctx[1]));
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE, fill(t.fill, t.s[0], t.a[1]));
    uint32_t value = 7;
    uint64_t count = 1024;
    void *params[] = {&t.a[1], &value, &count};
    CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 256,
                          .blockDimY = 1, .blockDimZ = 1, .hStream = t.s[0]};
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE, cuLaunchKernelEx(&cfg, t.fill, params, NULL));
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE,
               cuLaunchCooperativeKernel(t.fill, 1, 1, 1, 256, 1, 1, 0, t.s[0], params));
    SGT_OK(fill(t.fill, t.s[1], t.a[1]));
    cfg.hStream = t.s[1];
    SGT_OK(cuLaunchKernelEx(&cfg, t.fill, params, NULL));
    SGT_OK(cuLaunchCooperativeKernel(t.fill, 1, 1, 1, 256, 1, 1, 0, t.s[1], params));
    SGT_OK(fill(t.fill, NULL, t.a[1]));
    SGT_OK(fill(t.fill, CU_STREAM_PER_THREAD, t.a[1]));
    SGT_OK(cuCtxSynchronize());
    /* Capturing device 0's stream does not make it device 1's. */
    SGT_OK(cuCtxSetCurrent(t.ctx[0]));
    SGT_OK(cuStreamBeginCapture(t.s[0], CU_STREAM_CAPTURE_MODE_RELAXED));
    SGT_OK(cuCtxSetCurrent(t.ctx[1]));
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE, fill(t.fill, t.s[0], t.a[0]));
    SGT_OK(cuCtxSetCurrent(t.ctx[0]));
    SGT_OK(fill(t.fill, t.s[0], t.a[0]));
    CUgraph g;
    SGT_OK(cuStreamEndCapture(t.s[0], &g));
    SGT_OK(cuGraphDestroy(g));
}
END_TEST

/* "cudaEventRecord() will fail if the input event and input stream are
 * associated to different devices"; the legacy stream records in the
 * current context. A wait across devices succeeds. */
START_TEST(event_record_needs_a_stream_of_the_events_device)
{
    sgt_env("SIMGPU_DEVICES", "2");
    sgt_init();
    two_t t = two_devices();
    CUevent e0, e1;
    SGT_OK(cuEventCreate(&e0, CU_EVENT_DISABLE_TIMING));
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(e0, t.s[1]));
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE, cuEventRecordWithFlags(e0, t.s[1], 0));
    SGT_OK(cuEventRecord(e0, t.s[0]));
    SGT_OK(cuEventRecord(e0, NULL));
    SGT_OK(cuCtxSetCurrent(t.ctx[1]));
    SGT_OK(cuEventCreate(&e1, CU_EVENT_DISABLE_TIMING));
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(e0, NULL));
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(e0, CU_STREAM_PER_THREAD));
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(e1, t.s[0]));
    /* The event's and the stream's device decide, not the current one. */
    SGT_OK(cuEventRecord(e0, t.s[0]));
    SGT_OK(cuEventRecord(e1, t.s[1]));
    SGT_OK(cuStreamWaitEvent(t.s[1], e0, 0));
    SGT_OK(cuStreamWaitEvent(t.s[0], e1, 0));
    SGT_OK(cuStreamWaitEvent(NULL, e0, 0));
    SGT_OK(cuCtxSynchronize());
    /* The same in a capture of device 1's stream. */
    SGT_OK(cuStreamBeginCapture(t.s[1], CU_STREAM_CAPTURE_MODE_RELAXED));
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(e0, t.s[1]));
    SGT_OK(fill(t.fill, t.s[1], t.a[1]));
    SGT_OK(cuEventRecord(e1, t.s[1]));
    CUgraph g;
    SGT_OK(cuStreamEndCapture(t.s[1], &g));
    SGT_OK(cuGraphDestroy(g));
    SGT_OK(cuEventDestroy(e1));
    SGT_OK(cuEventDestroy(e0));
}
END_TEST

/* A module's function exists in the context the module was loaded in
 * only; a library's kernel serves every device. */
START_TEST(module_function_runs_only_in_its_modules_context)
{
    sgt_env("SIMGPU_DEVICES", "2");
    sgt_init();
    two_t t = two_devices();
    CUmodule m0, m1;
    CUfunction f0, f1, kf;
    SGT_OK(cuModuleLoadData(&m0, SGT_IMAGE));
    SGT_OK(cuModuleGetFunction(&f0, m0, "sg_fill_u32"));
    SGT_OK(cuKernelGetFunction(&kf, (CUkernel)t.fill));
    SGT_OK(cuCtxSetCurrent(t.ctx[1]));
    SGT_OK(cuModuleLoadData(&m1, SGT_IMAGE));
    SGT_OK(cuModuleGetFunction(&f1, m1, "sg_fill_u32"));
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE, fill(f0, t.s[1], t.a[1]));
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE, fill(f0, NULL, t.a[1]));
    SGT_OK(fill(f1, t.s[1], t.a[1]));
    SGT_OK(fill(t.fill, t.s[1], t.a[1]));
    SGT_OK(cuCtxSynchronize());
    SGT_OK(cuCtxSetCurrent(t.ctx[0]));
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE, fill(f1, t.s[0], t.a[0]));
    SGT_OK(fill(f0, t.s[0], t.a[0]));
    SGT_OK(fill(kf, t.s[0], t.a[0]));
    SGT_OK(cuCtxSynchronize());
    SGT_OK(cuModuleUnload(m1));
    SGT_OK(cuModuleUnload(m0));
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
    sgt_case(s, launch_needs_a_stream_of_the_current_device);
    sgt_case(s, event_record_needs_a_stream_of_the_events_device);
    sgt_case(s, module_function_runs_only_in_its_modules_context);
    return s;
}

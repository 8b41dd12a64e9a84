/*
 * test_vmm.c: virtual memory management: stable addresses with movable
 * backing (device, host and host-NUMA handles), access rules, and every
 * error path the driver documents.
 */
#include "sgt.h"

#include <stdlib.h>
#include <string.h>

#define G (2 * SGT_MIB) /* the default granularity */

static CUmemGenericAllocationHandle create(CUmemLocationType type, size_t size)
{
    CUmemGenericAllocationHandle h = 0;
    CUmemAllocationProp p = sgt_prop(type);
    SGT_OK(cuMemCreate(&h, size, &p, 0));
    ck_assert_uint_ne(h, 0);
    return h;
}

static CUdeviceptr reserve(size_t size)
{
    CUdeviceptr p = 0;
    SGT_OK(cuMemAddressReserve(&p, size, 0, 0, 0));
    ck_assert_uint_ne(p, 0);
    ck_assert_uint_eq(p % G, 0);
    return p;
}

/* Reserve, create a device handle, map it and grant access. */
static CUdeviceptr mapped_device(size_t size, CUmemGenericAllocationHandle *h)
{
    CUdeviceptr p = reserve(size);
    *h = create(CU_MEM_LOCATION_TYPE_DEVICE, size);
    SGT_OK(cuMemMap(p, size, 0, *h, 0));
    SGT_OK(sgt_set_access(p, size));
    return p;
}

START_TEST(vmm_device_mapping_roundtrips_data)
{
    sgt_init();
    size_t size = 2 * G;
    CUmemGenericAllocationHandle h;
    CUdeviceptr p = mapped_device(size, &h);
    unsigned char *in = malloc(size), *out = malloc(size);
    sgt_pattern(in, size, 1);
    memset(out, 0, size);
    SGT_OK(cuMemcpyHtoD(p, in, size));
    SGT_OK(cuMemcpyDtoH(out, p, size));
    ck_assert_int_eq(memcmp(in, out, size), 0);
    SGT_OK(cuMemUnmap(p, size));
    SGT_OK(cuMemRelease(h));
    SGT_OK(cuMemAddressFree(p, size));
    free(in);
    free(out);
}
END_TEST

/* The scenario spillway is built on: data filled into a device handle is
 * copied into a host handle, and the host handle is then mapped at the
 * original address, where kernels and copies still find the data. */
static const CUmemLocationType host_types[] = {
    CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA};

START_TEST(vmm_host_backing_keeps_data_at_same_address)
{
    sgt_init();
    size_t size = 2 * G;
    unsigned char *pat = malloc(size), *back = malloc(size);
    sgt_pattern(pat, size, 42);

    CUmemGenericAllocationHandle hdev;
    CUdeviceptr a = mapped_device(size, &hdev);
    SGT_OK(cuMemcpyHtoD(a, pat, size));

    CUmemGenericAllocationHandle hhost = create(host_types[_i], size);
    CUdeviceptr b = reserve(size);
    SGT_OK(cuMemMap(b, size, 0, hhost, 0));
    SGT_OK(sgt_set_access(b, size));
    SGT_OK(cuMemcpyDtoD(b, a, size));
    SGT_OK(cuCtxSynchronize());

    SGT_OK(cuMemUnmap(a, size));
    SGT_OK(cuMemRelease(hdev));
    SGT_OK(cuMemUnmap(b, size));
    SGT_OK(cuMemAddressFree(b, size));

    SGT_OK(cuMemMap(a, size, 0, hhost, 0));
    SGT_OK(sgt_set_access(a, size));

    CUdeviceptr sum_d;
    SGT_OK(cuMemAlloc(&sum_d, sizeof(uint64_t)));
    sgt_checksum(NULL, a, size, sum_d);
    SGT_OK(cuCtxSynchronize());
    uint64_t sum = 0;
    SGT_OK(cuMemcpyDtoH(&sum, sum_d, sizeof sum));
    ck_assert_uint_eq(sum, sgt_fnv1a(pat, size));

    memset(back, 0, size);
    SGT_OK(cuMemcpyDtoH(back, a, size));
    ck_assert_int_eq(memcmp(pat, back, size), 0);

    SGT_OK(cuMemUnmap(a, size));
    SGT_OK(cuMemRelease(hhost));
    SGT_OK(cuMemAddressFree(a, size));
    free(pat);
    free(back);
}
END_TEST

START_TEST(vmm_release_while_mapped_keeps_backing)
{
    /* cuMemRelease of a mapped handle frees it only at unmap. */
    sgt_init();
    CUmemGenericAllocationHandle h;
    CUdeviceptr p = mapped_device(G, &h);
    uint32_t in[256], out[256];
    sgt_pattern(in, sizeof in, 7);
    SGT_OK(cuMemcpyHtoD(p, in, sizeof in));
    SGT_OK(cuMemRelease(h));
    SGT_OK(cuMemcpyDtoH(out, p, sizeof out));
    ck_assert_int_eq(memcmp(in, out, sizeof in), 0);
    SGT_OK(cuMemUnmap(p, G));
    SGT_OK(cuMemAddressFree(p, G));
}
END_TEST

START_TEST(vmm_granularity_is_configured_value)
{
    sgt_env("SIMGPU_GRANULARITY", "4MiB");
    sgt_env("SIMGPU_HOST_GRANULARITY", "8M");
    sgt_init();
    size_t g = 0;
    CUmemAllocationProp p = sgt_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    SGT_OK(cuMemGetAllocationGranularity(&g, &p,
                                         CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    ck_assert_uint_eq(g, 4 * SGT_MIB);
    p = sgt_prop(CU_MEM_LOCATION_TYPE_HOST);
    SGT_OK(cuMemGetAllocationGranularity(&g, &p,
                                         CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    ck_assert_uint_eq(g, 8 * SGT_MIB);
    /* The configured device granularity is what sizes must respect. */
    CUmemGenericAllocationHandle h = 0;
    p = sgt_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, 2 * SGT_MIB, &p, 0));
    SGT_OK(cuMemCreate(&h, 4 * SGT_MIB, &p, 0));
    SGT_OK(cuMemRelease(h));
}
END_TEST

START_TEST(vmm_granularity_defaults_to_2mib)
{
    sgt_init();
    size_t g = 0;
    CUmemAllocationProp p = sgt_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    SGT_OK(cuMemGetAllocationGranularity(&g, &p,
                                         CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    ck_assert_uint_eq(g, G);
    p = sgt_prop(CU_MEM_LOCATION_TYPE_HOST);
    SGT_OK(cuMemGetAllocationGranularity(&g, &p,
                                         CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    ck_assert_uint_eq(g, G);
}
END_TEST

START_TEST(vmm_create_misaligned_size_fails)
{
    sgt_init();
    CUmemGenericAllocationHandle h = 0;
    CUmemAllocationProp p = sgt_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, G + 4096, &p, 0));
    p = sgt_prop(CU_MEM_LOCATION_TYPE_HOST);
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, G / 2, &p, 0));
}
END_TEST

START_TEST(vmm_reserve_misaligned_size_fails)
{
    sgt_init();
    CUdeviceptr p = 0;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE,
               cuMemAddressReserve(&p, G + 4096, 0, 0, 0));
}
END_TEST

START_TEST(vmm_map_misaligned_address_fails)
{
    sgt_init();
    CUdeviceptr p = reserve(2 * G);
    CUmemGenericAllocationHandle h = create(CU_MEM_LOCATION_TYPE_DEVICE, G);
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(p + 4096, G, 0, h, 0));
    /* Nothing was mapped: the aligned map still succeeds. */
    SGT_OK(cuMemMap(p, G, 0, h, 0));
    SGT_OK(cuMemUnmap(p, G));
}
END_TEST

START_TEST(vmm_map_misaligned_size_fails)
{
    sgt_init();
    CUdeviceptr p = reserve(2 * G);
    CUmemGenericAllocationHandle h = create(CU_MEM_LOCATION_TYPE_DEVICE, 2 * G);
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(p, G + 4096, 0, h, 0));
    SGT_OK(cuMemMap(p, 2 * G, 0, h, 0));
}
END_TEST

START_TEST(vmm_map_nonzero_offset_fails)
{
    sgt_init();
    CUdeviceptr p = reserve(2 * G);
    CUmemGenericAllocationHandle h = create(CU_MEM_LOCATION_TYPE_DEVICE, 2 * G);
    /* The offset is aligned, but the driver requires it to be 0. */
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(p, G, G, h, 0));
}
END_TEST

START_TEST(vmm_map_over_mapping_fails)
{
    sgt_init();
    CUdeviceptr p = reserve(2 * G);
    CUmemGenericAllocationHandle h1 = create(CU_MEM_LOCATION_TYPE_DEVICE, 2 * G);
    CUmemGenericAllocationHandle h2 = create(CU_MEM_LOCATION_TYPE_DEVICE, G);
    SGT_OK(cuMemMap(p, 2 * G, 0, h1, 0));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(p, G, 0, h2, 0));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(p + G, G, 0, h2, 0));
}
END_TEST

START_TEST(vmm_partial_unmap_fails)
{
    sgt_init();
    CUmemGenericAllocationHandle h;
    CUdeviceptr p = mapped_device(2 * G, &h);
    uint32_t in[64], out[64];
    sgt_pattern(in, sizeof in, 3);
    SGT_OK(cuMemcpyHtoD(p + G, in, sizeof in));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(p, G));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(p + G, G));
    /* The mapping is intact. */
    SGT_OK(cuMemcpyDtoH(out, p + G, sizeof out));
    ck_assert_int_eq(memcmp(in, out, sizeof in), 0);
    SGT_OK(cuMemUnmap(p, 2 * G));
}
END_TEST

START_TEST(vmm_release_bogus_handle_fails)
{
    sgt_init();
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE,
               cuMemRelease((CUmemGenericAllocationHandle)0xdead0000beefULL));
}
END_TEST

START_TEST(vmm_double_release_fails)
{
    sgt_init();
    CUmemGenericAllocationHandle h = create(CU_MEM_LOCATION_TYPE_DEVICE, G);
    SGT_OK(cuMemRelease(h));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemRelease(h));
}
END_TEST

START_TEST(vmm_kernel_without_access_faults)
{
    sgt_init();
    CUdeviceptr p = reserve(G);
    CUmemGenericAllocationHandle h = create(CU_MEM_LOCATION_TYPE_DEVICE, G);
    SGT_OK(cuMemMap(p, G, 0, h, 0));
    sgt_fill_u32(NULL, p, 1, 1024);
    SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
}
END_TEST

START_TEST(vmm_copy_without_access_faults)
{
    sgt_init();
    CUdeviceptr p = reserve(G);
    CUmemGenericAllocationHandle h = create(CU_MEM_LOCATION_TYPE_DEVICE, G);
    SGT_OK(cuMemMap(p, G, 0, h, 0));
    uint32_t buf[64] = {0};
    SGT_FAULTS(cuMemcpyHtoD(p, buf, sizeof buf));
}
END_TEST

START_TEST(vmm_new_mapping_starts_without_access)
{
    /* Access belongs to the mapping: after unmap and remap it must be
     * granted again. */
    sgt_init();
    CUmemGenericAllocationHandle h;
    CUdeviceptr p = mapped_device(G, &h);
    uint32_t buf[64] = {0};
    SGT_OK(cuMemcpyHtoD(p, buf, sizeof buf));
    SGT_OK(cuMemUnmap(p, G));
    SGT_OK(cuMemMap(p, G, 0, h, 0));
    SGT_FAULTS(cuMemcpyHtoD(p, buf, sizeof buf));
}
END_TEST

START_TEST(vmm_set_access_on_unmapped_range_fails)
{
    sgt_init();
    CUdeviceptr p = reserve(G);
    /* "The range must be a fully mapped address range" (cuda.h); the code
     * is not documented, only that it fails. */
    CUresult r = sgt_set_access(p, G);
    ck_assert_msg(r != CUDA_SUCCESS, "cuMemSetAccess on a reservation: %d", r);
}
END_TEST

START_TEST(vmm_device_attributes_report_support)
{
    sgt_init();
    int v = -1;
    SGT_OK(cuDeviceGetAttribute(
        &v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    ck_assert_int_eq(v, 1);
    v = -1;
    SGT_OK(cuDeviceGetAttribute(
        &v, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
        0));
    ck_assert_int_eq(v, 1);
    v = -1;
    SGT_OK(cuDeviceGetAttribute(
        &v, CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    ck_assert_int_eq(v, 1);
    /* The raw numbers spillway's probe uses. */
    ck_assert_int_eq(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                     102);
    ck_assert_int_eq(
        CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 141);
    ck_assert_int_eq(
        CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 145);
}
END_TEST

START_TEST(vmm_host_vmm_off_refuses_host_handles)
{
    sgt_env("SIMGPU_HOST_VMM", "0");
    sgt_init();
    int v = -1;
    SGT_OK(cuDeviceGetAttribute(
        &v, CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    ck_assert_int_eq(v, 0);
    CUmemGenericAllocationHandle h = 0;
    CUmemAllocationProp p = sgt_prop(CU_MEM_LOCATION_TYPE_HOST);
    SGT_EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemCreate(&h, G, &p, 0));
    /* Device handles are unaffected. */
    p = sgt_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    SGT_OK(cuMemCreate(&h, G, &p, 0));
}
END_TEST

START_TEST(vmm_host_numa_vmm_off_refuses_numa_handles)
{
    sgt_env("SIMGPU_HOST_NUMA_VMM", "0");
    sgt_init();
    int v = -1;
    SGT_OK(cuDeviceGetAttribute(
        &v, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
        0));
    ck_assert_int_eq(v, 0);
    CUmemGenericAllocationHandle h = 0;
    CUmemAllocationProp p = sgt_prop(CU_MEM_LOCATION_TYPE_HOST_NUMA);
    SGT_EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemCreate(&h, G, &p, 0));
    p = sgt_prop(CU_MEM_LOCATION_TYPE_HOST);
    SGT_OK(cuMemCreate(&h, G, &p, 0));
}
END_TEST

START_TEST(vmm_set_access_spans_several_mappings)
{
    /* One cuMemSetAccess over adjacent mappings of two handles. */
    sgt_init();
    CUdeviceptr p = reserve(2 * G);
    CUmemGenericAllocationHandle h1 = create(CU_MEM_LOCATION_TYPE_DEVICE, G);
    CUmemGenericAllocationHandle h2 = create(CU_MEM_LOCATION_TYPE_HOST, G);
    SGT_OK(cuMemMap(p, G, 0, h1, 0));
    SGT_OK(cuMemMap(p + G, G, 0, h2, 0));
    SGT_OK(sgt_set_access(p, 2 * G));
    uint32_t in[1024], out[1024];
    sgt_pattern(in, sizeof in, 9);
    /* A copy across the boundary of the two mappings. */
    SGT_OK(cuMemcpyHtoD(p + G - 2048, in, sizeof in));
    SGT_OK(cuMemcpyDtoH(out, p + G - 2048, sizeof out));
    ck_assert_int_eq(memcmp(in, out, sizeof in), 0);
}
END_TEST

START_TEST(vmm_unmap_covers_several_whole_mappings)
{
    sgt_init();
    CUdeviceptr p = reserve(2 * G);
    CUmemGenericAllocationHandle h1 = create(CU_MEM_LOCATION_TYPE_DEVICE, G);
    CUmemGenericAllocationHandle h2 = create(CU_MEM_LOCATION_TYPE_DEVICE, G);
    SGT_OK(cuMemMap(p, G, 0, h1, 0));
    SGT_OK(cuMemMap(p + G, G, 0, h2, 0));
    SGT_OK(cuMemUnmap(p, 2 * G));
    /* Both are gone: each can be mapped again, swapped. */
    SGT_OK(cuMemMap(p, G, 0, h2, 0));
    SGT_OK(cuMemMap(p + G, G, 0, h1, 0));
}
END_TEST

START_TEST(vmm_write_to_read_only_mapping_faults)
{
    sgt_init();
    CUmemGenericAllocationHandle h;
    CUdeviceptr p = mapped_device(G, &h);
    CUmemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = 0;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
    SGT_OK(cuMemSetAccess(p, G, &d, 1));
    sgt_fill_u32(NULL, p, 1, 1024);
    SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
}
END_TEST

START_TEST(vmm_host_handle_ignores_id_and_refuses_export)
{
    sgt_init();
    CUmemGenericAllocationHandle h = 0;
    CUmemAllocationProp p = sgt_prop(CU_MEM_LOCATION_TYPE_HOST);
    p.location.id = 7; /* "id is ignored" for HOST */
    SGT_OK(cuMemCreate(&h, G, &p, 0));
    p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUresult r = cuMemCreate(&h, G, &p, 0);
    ck_assert_msg(r != CUDA_SUCCESS,
                  "HOST cuMemCreate accepted requestedHandleTypes != 0");
}
END_TEST

START_TEST(vmm_host_handle_refuses_tile_pool_and_rdma)
{
    sgt_init();
    CUmemGenericAllocationHandle h = 0;
    CUmemAllocationProp p = sgt_prop(CU_MEM_LOCATION_TYPE_HOST);
    p.allocFlags.usage = CU_MEM_CREATE_USAGE_TILE_POOL;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, G, &p, 0));
    p.allocFlags.usage = 0;
    p.allocFlags.gpuDirectRDMACapable = 1;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, G, &p, 0));
}
END_TEST

/* What the pointer attribute says of each kind of memory. */
START_TEST(vmm_rdma_capable_is_device_memory_asked_for_it)
{
    sgt_init();
    int yes = -1;
    CUmemGenericAllocationHandle h;
    CUdeviceptr plain = mapped_device(G, &h), legacy, rdma;
    SGT_OK(cuPointerGetAttribute(&yes, CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, plain));
    ck_assert_int_eq(yes, 0);
    SGT_OK(cuMemAlloc(&legacy, G));
    SGT_OK(cuPointerGetAttribute(&yes, CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, legacy));
    ck_assert_int_eq(yes, 1);
    CUmemAllocationProp p = sgt_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    p.allocFlags.gpuDirectRDMACapable = 1;
    SGT_OK(cuMemCreate(&h, G, &p, 0));
    SGT_OK(cuMemAddressReserve(&rdma, G, 0, 0, 0));
    SGT_OK(cuMemMap(rdma, G, 0, h, 0));
    SGT_OK(cuPointerGetAttribute(&yes, CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, rdma + 4096));
    ck_assert_int_eq(yes, 1);
}
END_TEST

/* A sparse array's tiles map only a live tile pool handle of the
 * driver's; each map holds the memory until unmapped or destroyed. */
START_TEST(vmm_sparse_array_maps_only_tile_pools)
{
    sgt_init();
    CUDA_ARRAY3D_DESCRIPTOR ad;
    memset(&ad, 0, sizeof ad);
    ad.Width = ad.Height = 128;
    ad.Format = CU_AD_FORMAT_FLOAT;
    ad.NumChannels = 1;
    CUarray a;
    SGT_EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuArray3DCreate(&a, &ad)); /* dense: not modeled */
    ad.Flags = CUDA_ARRAY3D_SPARSE;
    SGT_OK(cuArray3DCreate(&a, &ad));
    CUmemAllocationProp p = sgt_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    CUmemGenericAllocationHandle plain, pool;
    SGT_OK(cuMemCreate(&plain, G, &p, 0));
    p.allocFlags.usage = CU_MEM_CREATE_USAGE_TILE_POOL;
    SGT_OK(cuMemCreate(&pool, G, &p, 0));
    CUarrayMapInfo m;
    memset(&m, 0, sizeof m);
    m.resourceType = CU_RESOURCE_TYPE_ARRAY;
    m.resource.array = a;
    m.subresourceType = CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_MIPTAIL;
    m.subresource.miptail.size = 64 * 1024;
    m.memOperationType = CU_MEM_OPERATION_TYPE_MAP;
    m.memHandleType = CU_MEM_HANDLE_TYPE_GENERIC;
    m.deviceBitMask = 1;
    m.memHandle.memHandle = plain;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMapArrayAsync(&m, 1, NULL));
    m.memHandle.memHandle = pool + 0x1000; /* not a handle */
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE, cuMemMapArrayAsync(&m, 1, NULL));
    m.memHandle.memHandle = pool;
    m.subresource.miptail.size = 128 * 1024; /* past the array's one tile */
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMapArrayAsync(&m, 1, NULL));
    m.subresource.miptail.size = 64 * 1024;
    SGT_OK(cuMemMapArrayAsync(&m, 1, NULL));
    /* The map keeps the memory after its last handle goes: a second
     * release is refused, the array's destruction frees it. */
    SGT_OK(cuMemRelease(pool));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemRelease(pool));
    SGT_OK(cuArrayDestroy(a));
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE, cuArrayDestroy(a));
    SGT_OK(cuMemRelease(plain));
}
END_TEST

Suite *vmm_suite(void)
{
    Suite *s = suite_create("vmm");
    sgt_case(s, vmm_device_mapping_roundtrips_data);
    sgt_loop_case(s, vmm_host_backing_keeps_data_at_same_address, 0, 2);
    sgt_case(s, vmm_release_while_mapped_keeps_backing);
    sgt_case(s, vmm_granularity_is_configured_value);
    sgt_case(s, vmm_granularity_defaults_to_2mib);
    sgt_case(s, vmm_create_misaligned_size_fails);
    sgt_case(s, vmm_reserve_misaligned_size_fails);
    sgt_case(s, vmm_map_misaligned_address_fails);
    sgt_case(s, vmm_map_misaligned_size_fails);
    sgt_case(s, vmm_map_nonzero_offset_fails);
    sgt_case(s, vmm_map_over_mapping_fails);
    sgt_case(s, vmm_partial_unmap_fails);
    sgt_case(s, vmm_release_bogus_handle_fails);
    sgt_case(s, vmm_double_release_fails);
    sgt_case(s, vmm_kernel_without_access_faults);
    sgt_case(s, vmm_copy_without_access_faults);
    sgt_case(s, vmm_new_mapping_starts_without_access);
    sgt_case(s, vmm_set_access_on_unmapped_range_fails);
    sgt_case(s, vmm_device_attributes_report_support);
    sgt_case(s, vmm_host_vmm_off_refuses_host_handles);
    sgt_case(s, vmm_host_numa_vmm_off_refuses_numa_handles);
    sgt_case(s, vmm_set_access_spans_several_mappings);
    sgt_case(s, vmm_unmap_covers_several_whole_mappings);
    sgt_case(s, vmm_write_to_read_only_mapping_faults);
    sgt_case(s, vmm_host_handle_ignores_id_and_refuses_export);
    sgt_case(s, vmm_host_handle_refuses_tile_pool_and_rdma);
    sgt_case(s, vmm_rdma_capable_is_device_memory_asked_for_it);
    sgt_case(s, vmm_sparse_array_maps_only_tile_pools);
    return s;
}

/*
 * swt-expandable: an application that manages its own VMM the way
 * PyTorch's expandable segments do (CUDACachingAllocator's
 * ExpandableSegment), on simgpu's built-in kernels.
 *
 *   - one large reservation, grown by creating 20 MiB handles (asking
 *     for POSIX file descriptor export, as PyTorch does) and mapping each
 *     at the end of what is mapped, with cuMemSetAccess after;
 *   - a tensor that spans two segments;
 *   - shrunk by unmapping and releasing the last segments, then grown
 *     again at the same addresses with new handles;
 *   - cuMemRetainAllocationHandle and
 *     cuMemGetAllocationPropertiesFromHandle on a mapped address;
 *   - one handle exported (cuMemExportToShareableHandle), one mapped at a
 *     second address too, written through one and read through the other;
 *   - one handle bound into a multicast object (cuMulticastBindMem, as
 *     NCCL's NVLS buffers are), another by its address
 *     (cuMulticastBindAddr), each object mapped, written through the
 *     segment's address and read through the object's;
 *   - a buffer of cuMemAlloc's exported as a dma-buf
 *     (cuMemGetHandleForAddressRange), used while the segments move;
 *   - handles made for engines no CUDA call shows reaching them: memory
 *     asked to be GPUDirect RDMA capable (a network card registers it),
 *     which must stay so while everything else moves, and a sparse
 *     array's tile pool, mapped into the array by handle
 *     (cuMemMapArrayAsync).
 * Every segment is checksummed on the device after each phase and
 * checked against the host; the checksums make the "result: checksum="
 * line, which must be the same plain and under spillway
 * (tests/cudart/run.sh), and after any failed call spillway got round
 * (test_failpaths.c).
 * Exit 0 right answers, 1 a wrong one, 2 a CUDA error (its message
 * printed: "out of memory" when the footprint does not fit).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "swt_prog.h"

#define MIB (1024ull * 1024ull)
#define SEG (20 * MIB)
#define NSEG 4

static CUfunction fill, checksum;
static CUdeviceptr sums;
static uint64_t result = 0xcbf29ce484222325ull;

#define CK(call)                                                                    \
    do {                                                                            \
        CUresult e_ = (call);                                                       \
        if (e_ != CUDA_SUCCESS) {                                                   \
            const char *s_ = NULL, *n_ = NULL;                                      \
            cuGetErrorString(e_, &s_);                                              \
            cuGetErrorName(e_, &n_);                                                \
            fprintf(stderr, "expandable:%d: %s: %s (%s)\n", __LINE__, #call,         \
                    s_ ? s_ : "?", n_ ? n_ : "?");                                  \
            exit(2);                                                                \
        }                                                                           \
    } while (0)

static void fill_words(CUdeviceptr p, uint32_t value, uint64_t bytes)
{
    uint64_t n = bytes / 4;
    void *params[] = {&p, &value, &n};
    CK(cuLaunchKernel(fill, 64, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
}

/* The FNV-1a 64 of [p, +bytes), taken on the device. */
static uint64_t device_sum(CUdeviceptr p, uint64_t bytes)
{
    void *params[] = {&p, &bytes, &sums};
    uint64_t v;
    CK(cuLaunchKernel(checksum, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    CK(cuMemcpyDtoH(&v, sums, sizeof v));
    return v;
}

/* The same of `bytes` bytes of words equal to value, on the host. */
static uint64_t host_sum(uint32_t value, uint64_t bytes)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t i = 0; i < bytes; i++) {
        h ^= (value >> (8 * (i % 4))) & 0xff;
        h *= 0x100000001b3ull;
    }
    return h;
}

static int check(const char *what, CUdeviceptr p, uint64_t bytes, uint32_t value)
{
    uint64_t got = device_sum(p, bytes), want = host_sum(value, bytes);
    result = (result ^ got) * 0x100000001b3ull;
    if (got == want)
        return 0;
    fprintf(stderr, "expandable: %s: checksum %016llx, want %016llx\n", what,
            (unsigned long long)got, (unsigned long long)want);
    return 1;
}

static CUmemAllocationProp seg_prop(void)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = 0;
    p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return p;
}

/* Maps size bytes of h at at, readable and writable by device 0. */
static void map_rw(CUdeviceptr at, size_t size, CUmemGenericAllocationHandle h)
{
    CUmemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = 0;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CK(cuMemMap(at, size, 0, h, 0));
    CK(cuMemSetAccess(at, size, &d, 1));
}

static void map_segment(CUdeviceptr at, CUmemGenericAllocationHandle *h)
{
    CUmemAllocationProp p = seg_prop();
    CK(cuMemCreate(h, SEG, &p, 0));
    map_rw(at, SEG, *h);
}

static void unmap_segment(CUdeviceptr at, CUmemGenericAllocationHandle h)
{
    CK(cuCtxSynchronize()); /* PyTorch synchronizes before it unmaps */
    CK(cuMemUnmap(at, SEG));
    CK(cuMemRelease(h));
}

static int check_all(const char *phase, CUdeviceptr base, const uint32_t *value)
{
    int bad = 0;
    char what[64];
    for (int i = 0; i < NSEG; i++) {
        snprintf(what, sizeof what, "%s, segment %d", phase, i);
        bad |= check(what, base + i * SEG, SEG, value[i]);
    }
    return bad;
}

/* Retain answers the handle that was created, with its properties. */
static int check_handle(CUdeviceptr at, CUmemGenericAllocationHandle want)
{
    CUmemGenericAllocationHandle got;
    CUmemAllocationProp p, w = seg_prop();
    CK(cuMemRetainAllocationHandle(&got, (void *)(uintptr_t)(at + 5 * MIB)));
    CK(cuMemGetAllocationPropertiesFromHandle(&p, got));
    CK(cuMemRelease(got));
    if (got == want && p.requestedHandleTypes == w.requestedHandleTypes &&
        p.location.type == w.location.type && p.type == w.type)
        return 0;
    fprintf(stderr, "expandable: retain answered handle %llx (created %llx), handle types %d\n",
            (unsigned long long)got, (unsigned long long)want, (int)p.requestedHandleTypes);
    return 1;
}

/* A handle of one granule on device 0, made for a network card (rdma)
 * or with the given usage, mapped at a reservation of its own when at
 * is not NULL. */
static CUmemGenericAllocationHandle own_handle(bool rdma, unsigned short usage, size_t *size,
                                               CUdeviceptr *at)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.allocFlags.gpuDirectRDMACapable = rdma;
    p.allocFlags.usage = usage;
    CUmemGenericAllocationHandle h;
    CK(cuMemGetAllocationGranularity(size, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CK(cuMemCreate(&h, *size, &p, 0));
    if (at) {
        CK(cuMemAddressReserve(at, *size, 0, 0, 0));
        map_rw(*at, *size, h);
    }
    return h;
}

/* A sparse array's first tiles mapped onto a tile pool's memory, then
 * unmapped: the driver must be given its own handle. */
static void map_tiles(CUmemGenericAllocationHandle pool)
{
    CUDA_ARRAY3D_DESCRIPTOR ad;
    memset(&ad, 0, sizeof ad);
    ad.Width = ad.Height = 256;
    ad.Format = CU_AD_FORMAT_FLOAT;
    ad.NumChannels = 4;
    ad.Flags = CUDA_ARRAY3D_SPARSE;
    CUarray array;
    CK(cuArray3DCreate(&array, &ad));
    CUarrayMapInfo m;
    memset(&m, 0, sizeof m);
    m.resourceType = CU_RESOURCE_TYPE_ARRAY;
    m.resource.array = array;
    m.subresourceType = CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_MIPTAIL;
    m.subresource.miptail.size = 128 * 1024;
    m.memOperationType = CU_MEM_OPERATION_TYPE_MAP;
    m.memHandleType = CU_MEM_HANDLE_TYPE_GENERIC;
    m.memHandle.memHandle = pool;
    m.deviceBitMask = 1;
    CK(cuMemMapArrayAsync(&m, 1, NULL));
    m.memOperationType = CU_MEM_OPERATION_TYPE_UNMAP;
    m.memHandle.memHandle = 0;
    CK(cuMemMapArrayAsync(&m, 1, NULL));
    CK(cuArrayDestroy(array));
}

int main(void)
{
    CUcontext ctx;
    CUmodule mod;
    if (swt_open("expandable", &ctx, &mod) != CUDA_SUCCESS)
        return 2;
    CK(cuModuleGetFunction(&fill, mod, "sg_fill_u32"));
    CK(cuModuleGetFunction(&checksum, mod, "sg_checksum_u64"));
    CK(cuMemAlloc(&sums, sizeof(uint64_t)));

    CUdeviceptr base;
    CUmemGenericAllocationHandle h[NSEG];
    uint32_t value[NSEG];
    CK(cuMemAddressReserve(&base, 16 * SEG, 0, 0, 0));
    int bad = 0;

    /* Made first, before anything else is hot: a spillway that tracked
     * it would move it out first. */
    size_t rdma_size, pool_size;
    CUdeviceptr rdma;
    CUmemGenericAllocationHandle rdma_h = own_handle(true, 0, &rdma_size, &rdma);
    CUmemGenericAllocationHandle pool_h =
        own_handle(false, CU_MEM_CREATE_USAGE_TILE_POOL, &pool_size, NULL);
    fill_words(rdma, 77, rdma_size);

    /* Grow, a segment at a time, each filled as it comes. */
    for (int i = 0; i < NSEG; i++) {
        map_segment(base + i * SEG, &h[i]);
        fill_words(base + i * SEG, value[i] = 100 + i, SEG);
    }
    bad |= check_all("grown", base, value);
    /* A tensor across the boundary of segments 1 and 2. */
    fill_words(base + SEG + SEG / 2, 7, SEG);
    bad |= check("across two segments", base + SEG + SEG / 2, SEG, 7);
    value[1] = value[2] = 0; /* now mixed: checked whole below */
    bad |= check_handle(base, h[0]);

    /* Shrink by two segments, grow again at the same addresses. */
    for (int i = NSEG - 1; i >= NSEG - 2; i--)
        unmap_segment(base + i * SEG, h[i]);
    for (int i = NSEG - 2; i < NSEG; i++) {
        map_segment(base + i * SEG, &h[i]);
        fill_words(base + i * SEG, value[i] = 200 + i, SEG);
    }
    fill_words(base + SEG, value[1] = 300, SEG);
    bad |= check_all("regrown", base, value);
    bad |= check_handle(base + 3 * SEG, h[3]);
    map_tiles(pool_h);

    /* Export one handle; map another at a second address. */
    int fd = -1;
    CK(cuMemExportToShareableHandle(&fd, h[0], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    close(fd);
    CUdeviceptr alias;
    CK(cuMemAddressReserve(&alias, SEG, 0, 0, 0));
    map_rw(alias, SEG, h[2]);
    /* Written through one address, read through the other, while the
     * other segments keep moving in and out. */
    for (uint32_t pass = 0; pass < 3; pass++) {
        fill_words(alias, value[2] = 40 + pass, SEG);
        bad |= check_all("written through the alias", base, value);
        fill_words(base + 2 * SEG, value[2] = 50 + pass, SEG);
        bad |= check("read through the alias", alias, SEG, value[2]);
    }

    /* Segments 3 and 1 bound into multicast objects, by handle and by
     * address, each object mapped at an address of its own. */
    CUmulticastObjectProp mp;
    memset(&mp, 0, sizeof mp);
    mp.numDevices = 1;
    mp.size = SEG;
    mp.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle mc[2];
    CUdeviceptr mcva[2];
    const int bound[2] = {3, 1};
    for (int k = 0; k < 2; k++) {
        CK(cuMulticastCreate(&mc[k], &mp));
        CK(cuMulticastAddDevice(mc[k], 0));
        if (k == 0)
            CK(cuMulticastBindMem(mc[k], 0, h[bound[k]], 0, SEG, 0));
        else
            CK(cuMulticastBindAddr(mc[k], 0, base + bound[k] * SEG, SEG, 0));
        CK(cuMemAddressReserve(&mcva[k], SEG, 0, 0, 0));
        map_rw(mcva[k], SEG, mc[k]);
    }
    /* cuMemAlloc's memory is refused, by the driver as by spillway,
     * which moves the memory it tracks. */
    CUdeviceptr plain;
    CK(cuMemAlloc(&plain, SEG));
    CUresult refused = cuMulticastBindAddr(mc[0], SEG / 2, plain, SEG / 2, 0);
    CK(cuMemFree(plain));
    if (refused != CUDA_ERROR_INVALID_VALUE) {
        fprintf(stderr, "expandable: cuMulticastBindAddr of cuMemAlloc's memory answered %d\n",
                (int)refused);
        bad = 1;
    }
    for (uint32_t pass = 0; pass < 3; pass++)
        for (int k = 0; k < 2; k++) {
            fill_words(base + bound[k] * SEG, value[bound[k]] = 60 + 10 * k + pass, SEG);
            bad |= check_all("beside a multicast object", base, value);
            bad |= check("read through a multicast object", mcva[k], SEG, value[bound[k]]);
        }

    /* A dma-buf of a buffer of cuMemAlloc's, a network card's view of
     * it: while it is open the buffer must not move, as segment 2 does. */
    CUdeviceptr nic;
    int dmabuf = -1;
    CK(cuMemAlloc(&nic, 4 * MIB));
    CK(cuMemGetHandleForAddressRange(&dmabuf, nic, 4 * MIB, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                     0));
    for (uint32_t pass = 0; pass < 3; pass++) {
        fill_words(nic, 90 + pass, 4 * MIB);
        fill_words(base + 2 * SEG, value[2] = 95 + pass, SEG);
        bad |= check_all("beside a dma-buf", base, value);
        bad |= check("a dma-buf's buffer", nic, 4 * MIB, 90 + pass);
    }
    CK(cuCtxSynchronize());
    close(dmabuf);
    CK(cuMemFree(nic));

    /* The memory a network card may have registered is where it was. */
    int capable = 0;
    CK(cuPointerGetAttribute(&capable, CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, rdma));
    bad |= check("GPUDirect RDMA memory", rdma, rdma_size, 77);
    if (!capable) {
        fprintf(stderr, "expandable: GPUDirect RDMA memory no longer RDMA capable\n");
        bad = 1;
    }
    CK(cuMemUnmap(rdma, rdma_size));
    CK(cuMemAddressFree(rdma, rdma_size));
    CK(cuMemRelease(rdma_h));
    CK(cuMemRelease(pool_h));

    CK(cuCtxSynchronize());
    for (int k = 0; k < 2; k++) {
        CK(cuMemUnmap(mcva[k], SEG));
        CK(cuMemAddressFree(mcva[k], SEG));
        CK(cuMulticastUnbind(mc[k], 0, 0, SEG));
        CK(cuMemRelease(mc[k]));
    }
    CK(cuMemUnmap(alias, SEG));
    CK(cuMemAddressFree(alias, SEG));
    for (int i = NSEG - 1; i >= 0; i--)
        unmap_segment(base + i * SEG, h[i]);
    CK(cuMemAddressFree(base, 16 * SEG));
    CK(cuMemFree(sums));
    printf("result: checksum=%016llx\n", (unsigned long long)result);
    return bad;
}

/*
 * swt-ptrs: what pointer queries say about memory spillway has moved.
 *
 * Three allocations, A (5 MiB), B (4 MiB) and C (3 MiB + 100 bytes, a
 * size no page divides). Run by test_pointers.c with
 * SPILLWAY_CHUNK=2MiB and SPILLWAY_GPU_BUDGET=4MiB, A's chunks are on the
 * host (born there or demoted to make room for B) while B's are on the
 * device, so every query below meets both kinds. At pointers inside each
 * (the base, a byte in, a chunk boundary and its neighbour, the last byte)
 * it checks:
 *   - cuMemGetAddressRange (linked, and through cuGetProcAddress_v2) gives
 *     the allocation's base and the size that was asked for, not those of
 *     the chunk under the pointer;
 *   - cuPointerGetAttribute and cuPointerGetAttributes: MEMORY_TYPE is
 *     DEVICE, RANGE_START_ADDR and RANGE_SIZE are the allocation's;
 * past C's last byte, in the page rounding behind it, cuMemGetAddressRange
 * answers CUDA_ERROR_NOT_FOUND: the allocation is the size asked for;
 * then copies all back and checks that the bytes written before the moves
 * are still there.
 *
 * One argument picks the queries: "range" (cuMemGetAddressRange), "type"
 * (MEMORY_TYPE), "attr-range" (RANGE_START_ADDR, RANGE_SIZE); none: all.
 * The bytes are always checked.
 *
 * Prints "ptrs: ok (N checks)" and exits 0; prints the first wrong answer
 * and exits 1; exits 2 on a CUDA error. Without spillway (plain cuMemAlloc
 * blocks) every answer is right too: that run is the reference.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define MIB (1024ull * 1024ull)
#define BLOCK 256u

static const char image[] = "simgpu-builtin";
static int checks;
static bool do_range = true, do_type = true, do_attr_range = true;

typedef CUresult (*range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);

static int cuda_fail(CUresult rc, const char *call)
{
    const char *name = NULL;
    if (cuGetErrorName(rc, &name) != CUDA_SUCCESS || !name)
        name = "unknown CUresult";
    fprintf(stderr, "ptrs: CUDA error %s in %s\n", name, call);
    return 2;
}

#define CK(call)                                                               \
    do {                                                                       \
        CUresult rc_ = (call);                                                 \
        if (rc_ != CUDA_SUCCESS)                                               \
            return cuda_fail(rc_, #call);                                      \
    } while (0)

/* Compares one answer; 0 when right, 1 (after printing) when wrong. */
static int want_u64(const char *what, const char *name, uint64_t off, uint64_t got,
                    uint64_t want)
{
    checks++;
    if (got == want)
        return 0;
    printf("ptrs: %s of %s+0x%llx: got 0x%llx, want 0x%llx\n", what, name,
           (unsigned long long)off, (unsigned long long)got, (unsigned long long)want);
    return 1;
}

/* All the queries at p = base + off. */
static int query(const char *name, CUdeviceptr base, size_t size, uint64_t off, range_fn via_gpa)
{
    CUdeviceptr p = base + off, b = 0;
    size_t s = 0;
    unsigned int type = 0;
    int bad = 0;

    if (!do_range)
        goto attrs;
    CK(cuMemGetAddressRange(&b, &s, p));
    bad |= want_u64("cuMemGetAddressRange base", name, off, b, base);
    bad |= want_u64("cuMemGetAddressRange size", name, off, s, size);
    b = 0;
    CK(cuMemGetAddressRange(&b, NULL, p));
    bad |= want_u64("cuMemGetAddressRange base (no size)", name, off, b, base);
    s = 0;
    CK(cuMemGetAddressRange(NULL, &s, p));
    bad |= want_u64("cuMemGetAddressRange size (no base)", name, off, s, size);
    b = 0;
    s = 0;
    CK(via_gpa(&b, &s, p));
    bad |= want_u64("cuGetProcAddress'd cuMemGetAddressRange base", name, off, b, base);
    bad |= want_u64("cuGetProcAddress'd cuMemGetAddressRange size", name, off, s, size);

attrs:
    if (do_type) {
        CK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
        bad |= want_u64("MEMORY_TYPE", name, off, type, CU_MEMORYTYPE_DEVICE);
    }
    if (do_attr_range) {
        b = 0;
        CK(cuPointerGetAttribute(&b, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p));
        bad |= want_u64("RANGE_START_ADDR", name, off, b, base);
        s = 0;
        CK(cuPointerGetAttribute(&s, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p));
        bad |= want_u64("RANGE_SIZE", name, off, s, size);
    }
    if (do_type || do_attr_range) {
        /* The plural call (the runtime's cudaPointerGetAttributes uses it)
         * must say the same. */
        CUpointer_attribute at[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                    CU_POINTER_ATTRIBUTE_RANGE_SIZE};
        unsigned int t = 0;
        b = 0;
        s = 0;
        void *dv[] = {&t, &b, &s};
        CK(cuPointerGetAttributes(3, at, dv, p));
        if (do_type)
            bad |= want_u64("cuPointerGetAttributes MEMORY_TYPE", name, off, t,
                            CU_MEMORYTYPE_DEVICE);
        if (do_attr_range) {
            bad |= want_u64("cuPointerGetAttributes RANGE_START_ADDR", name, off, b, base);
            bad |= want_u64("cuPointerGetAttributes RANGE_SIZE", name, off, s, size);
        }
    }
    return bad;
}

static int check_all(const char *name, CUdeviceptr base, size_t size, range_fn via_gpa)
{
    const uint64_t offs[] = {0, 1, 4096, 2 * MIB - 1, 2 * MIB, 2 * MIB + 8, 4 * MIB, size - 1};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        if (offs[i] >= size)
            continue;
        int r = query(name, base, size, offs[i], via_gpa);
        if (r)
            return r;
    }
    return 0;
}

static CUresult fill(CUfunction f, CUdeviceptr dst, uint32_t value, uint64_t count)
{
    void *params[] = {&dst, &value, &count};
    return cuLaunchKernel(f, (unsigned)((count + BLOCK - 1) / BLOCK), 1, 1, BLOCK, 1, 1, 0,
                          NULL, params, NULL);
}

static int check_bytes(const char *name, CUdeviceptr p, size_t size, uint32_t want)
{
    uint32_t *h = malloc(size);
    if (!h) {
        fprintf(stderr, "ptrs: out of host memory\n");
        return 2;
    }
    CUresult rc = cuMemcpyDtoH(h, p, size);
    if (rc != CUDA_SUCCESS) {
        free(h);
        return cuda_fail(rc, "cuMemcpyDtoH");
    }
    for (size_t i = 0; i < size / 4; i++) {
        if (h[i] != want) {
            printf("ptrs: %s word %zu: got 0x%08x, want 0x%08x\n", name, i, h[i], want);
            free(h);
            return 1;
        }
    }
    free(h);
    return 0;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fill_fn;
    CUdeviceptr a, b, c;
    const size_t a_size = 5 * MIB, b_size = 4 * MIB, c_size = 3 * MIB + 100;
    void *fn = NULL;
    CUdriverProcAddressQueryResult qr;
    int r;

    if (argc > 1) {
        do_range = strcmp(argv[1], "range") == 0;
        do_type = strcmp(argv[1], "type") == 0;
        do_attr_range = strcmp(argv[1], "attr-range") == 0;
        if (!do_range && !do_type && !do_attr_range) {
            fprintf(stderr, "usage: swt-ptrs [range|type|attr-range]\n");
            return 3;
        }
    }
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, image));
    CK(cuModuleGetFunction(&fill_fn, mod, "sg_fill_u32"));
    CK(cuGetProcAddress("cuMemGetAddressRange", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &qr));

    CK(cuMemAlloc(&a, a_size));
    CK(fill(fill_fn, a, 0xA11CE000u, a_size / 4));
    /* Under the 4 MiB budget, B pushes what is left of A to the host. */
    CK(cuMemAlloc(&b, b_size));
    CK(fill(fill_fn, b, 0xB0B00000u, b_size / 4));
    CK(cuMemAlloc(&c, c_size));
    CK(fill(fill_fn, c, 0xC0DE0000u, c_size / 4));
    CK(cuCtxSynchronize());

    if ((r = check_all("A", a, a_size, (range_fn)fn)) ||
        (r = check_all("B", b, b_size, (range_fn)fn)) ||
        (r = check_all("C", c, c_size, (range_fn)fn)))
        return r;
    if (do_range) {
        CUdeviceptr pb;
        size_t ps;
        r = want_u64("cuMemGetAddressRange's answer", "C", c_size,
                     cuMemGetAddressRange(&pb, &ps, c + c_size), CUDA_ERROR_NOT_FOUND);
        if (r)
            return r;
    }
    if ((r = check_bytes("A", a, a_size, 0xA11CE000u)) ||
        (r = check_bytes("B", b, b_size, 0xB0B00000u)) ||
        (r = check_bytes("C", c, c_size / 4 * 4, 0xC0DE0000u)))
        return r;
    CK(cuMemFree(c));
    CK(cuMemFree(b));
    CK(cuMemFree(a));
    CK(cuModuleUnload(mod));
    cuDevicePrimaryCtxRelease(dev);
    printf("ptrs: ok (%d checks)\n", checks);
    return 0;
}

/*
 * swt-errs: misuses of the allocation API, each printed with the CUresult
 * name it got, one per line ("free-twice: CUDA_ERROR_INVALID_VALUE").
 * Run without spillway it records the driver's own answers; run under
 * spillway it must print exactly the same lines (test_errors.c), because
 * an interposer must not change what a wrong call returns.
 *
 * The allocations are 3-6 MiB, above spillway's default SPILLWAY_MIN_ALLOC,
 * so under spillway they are tracked; "keep" stays allocated while most
 * cases run, so spillway's table is never empty during them.
 *
 * With the argument "sizes" it tries impossible sizes instead (1 TiB,
 * SIZE_MAX, SIZE_MAX - 4095), which must give CUDA_ERROR_OUT_OF_MEMORY.
 * With "ipc" it asks legacy IPC handles for a 4 MiB allocation (at its
 * base and inside) and a 64 KiB one: the driver gives them, and under
 * spillway a tracked allocation, made with the VMM calls, cannot have one.
 *
 * Exits 0 once every case has run (whatever the codes), 2 when the setup
 * (cuInit, context, the first allocation) fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#define MIB (1024ull * 1024ull)

static void report(const char *what, CUresult r)
{
    const char *name = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
        name = "unknown CUresult";
    printf("%s: %s\n", what, name);
}

static int fail(const char *call, CUresult r)
{
    const char *name = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
        name = "unknown CUresult";
    fprintf(stderr, "errs: CUDA error %s in %s\n", name, call);
    return 2;
}

/* Sizes no memory can hold; the last two overflow any rounding up. */
static void impossible_sizes(void)
{
    CUdeviceptr p = 0;
    report("alloc-1tib", cuMemAlloc(&p, 1024 * 1024 * MIB));
    report("alloc-size-max", cuMemAlloc(&p, SIZE_MAX));
    report("alloc-size-max-minus-page", cuMemAlloc(&p, SIZE_MAX - 4095));
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr keep = 0, a = 0, b = 0, c = 0, d = 0, p = 0;
    CUresult r;

    if ((r = cuInit(0)) != CUDA_SUCCESS)
        return fail("cuInit", r);
    if ((r = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS)
        return fail("cuDeviceGet", r);
    if ((r = cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS)
        return fail("cuDevicePrimaryCtxRetain", r);
    if ((r = cuCtxSetCurrent(ctx)) != CUDA_SUCCESS)
        return fail("cuCtxSetCurrent", r);

    if (argc > 1 && strcmp(argv[1], "sizes") == 0) {
        impossible_sizes();
        printf("errs: done\n");
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "ipc") == 0) {
        CUipcMemHandle h;
        if ((r = cuMemAlloc(&a, 4 * MIB)) != CUDA_SUCCESS || (r = cuMemAlloc(&d, 64 * 1024)))
            return fail("cuMemAlloc", r);
        report("ipc-alloc", cuIpcGetMemHandle(&h, a));
        report("ipc-alloc-interior", cuIpcGetMemHandle(&h, a + MIB));
        report("ipc-small", cuIpcGetMemHandle(&h, d));
        printf("errs: done\n");
        return 0;
    }

    /* Before anything is allocated. */
    report("alloc-zero-bytes", cuMemAlloc(&p, 0));
    report("alloc-null-pointer", cuMemAlloc(NULL, 4 * MIB));
    report("free-null", cuMemFree(0));
    report("free-unknown-nothing-tracked", cuMemFree((CUdeviceptr)0x1000));

    if ((r = cuMemAlloc(&keep, 4 * MIB)) != CUDA_SUCCESS)
        return fail("cuMemAlloc (keep)", r);

    /* cuMemAlloc's memory has no handle to retain, whatever backs it:
     * at the base, inside, and once freed. */
    CUmemGenericAllocationHandle h = 0;
    report("retain-alloc", cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)keep));
    report("retain-alloc-interior", cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)(keep + 3 * MIB)));
    report("retain-alloc-null-out", cuMemRetainAllocationHandle(NULL, (void *)(uintptr_t)keep));

    /* An address no allocation holds. */
    report("free-unknown", cuMemFree((CUdeviceptr)0x1000));
    report("free-unknown-device-address", cuMemFree(keep + 1024 * MIB));

    /* Freed twice. */
    report("alloc-a", cuMemAlloc(&a, 4 * MIB));
    report("free-a", cuMemFree(a));
    report("free-twice", cuMemFree(a));
    report("range-after-free", cuMemGetAddressRange(NULL, NULL, a));
    report("retain-after-free", cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)a));

    /* Freed through pointers inside it: the first byte after the base, a
     * chunk boundary (with SPILLWAY_CHUNK=2MiB), the last byte. */
    report("alloc-b", cuMemAlloc(&b, 6 * MIB));
    report("free-interior", cuMemFree(b + 4096));
    report("free-interior-chunk-boundary", cuMemFree(b + 2 * MIB));
    report("free-interior-last-byte", cuMemFree(b + 6 * MIB - 1));
    report("free-b", cuMemFree(b));

    /* 3 MiB: spillway's reservation is rounded up to the granularity. */
    report("alloc-c", cuMemAlloc(&c, 3 * MIB));
    report("free-interior-odd-size", cuMemFree(c + 1 * MIB));
    report("free-c", cuMemFree(c));

    /* An untracked (small) allocation freed twice, for comparison. */
    report("alloc-small", cuMemAlloc(&d, 64 * 1024));
    report("free-small", cuMemFree(d));
    report("free-small-twice", cuMemFree(d));

    report("free-keep", cuMemFree(keep));
    /* Nothing is tracked any more. */
    report("free-keep-twice", cuMemFree(keep));
    printf("errs: done\n");
    cuDevicePrimaryCtxRelease(dev);
    return 0;
}

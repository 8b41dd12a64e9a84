/*
 * swt-early: what goes on before and around the normal start of a CUDA
 * program, one mode per run (argv[1]):
 *   no-context    a 4 MiB allocation before any context is current (the
 *                 driver refuses it), then the usual start and another;
 *   failed-init   cuInit fails once (run with SIMGPU_FAIL=cuInit:1), a
 *                 4 MiB allocation is tried anyway, then cuInit again, the
 *                 usual start and another allocation;
 *   small-oom     on an 8 MiB device (SIMGPU_MEM=8MiB): two 8 MiB
 *                 allocations, then a 1 MiB one, below SPILLWAY_MIN_ALLOC;
 *   constructor   the first CUDA calls come from a library's constructor
 *                 (ctorlib.c), which runs before spillway's own;
 *   second-device with SIMGPU_DEVICES=2: a 4 MiB allocation on device 0,
 *                 then one on device 1, whose DEVICE_ORDINAL is printed.
 * Every allocation that succeeds is filled with its own pattern and read
 * back at the end. Prints the codes of the calls expected to fail, then
 * "early: ok". Exits 0, 1 on a wrong byte, 2 on an unexpected CUDA error.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#define MIB (1024ull * 1024ull)
#define MAX_BUFS 4

static const char *name_of(CUresult r)
{
    const char *name = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
        name = "unknown CUresult";
    return name;
}

static int fail(const char *call, CUresult r)
{
    fprintf(stderr, "early: CUDA error %s in %s\n", name_of(r), call);
    return 2;
}

#define CK(call)                                   \
    do {                                           \
        CUresult r_ = (call);                      \
        if (r_ != CUDA_SUCCESS)                    \
            return fail(#call, r_);                \
    } while (0)

static CUdeviceptr bufs[MAX_BUFS];
static size_t sizes[MAX_BUFS];
static int nbufs;

static int start(void)
{
    CUdevice dev;
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    return 0;
}

static int alloc_filled(size_t size)
{
    CUdeviceptr p;
    CK(cuMemAlloc(&p, size));
    CK(cuMemsetD8(p, (unsigned char)(0x40 + nbufs), size));
    bufs[nbufs] = p;
    sizes[nbufs++] = size;
    return 0;
}

/* Reads every buffer back: each byte must still be its pattern. */
static int check_all(void)
{
    static unsigned char host[8 * MIB];
    for (int i = 0; i < nbufs; i++) {
        CK(cuMemcpyDtoH(host, bufs[i], sizes[i]));
        for (size_t j = 0; j < sizes[i]; j++)
            if (host[j] != (unsigned char)(0x40 + i)) {
                fprintf(stderr, "early: buffer %d byte %zu is 0x%02x\n", i, j, host[j]);
                return 1;
            }
        CK(cuMemFree(bufs[i]));
    }
    return 0;
}

#ifdef WITH_CTORLIB
/* ctorlib.c, linked into swt-early-ctor only. */
CUresult ctorlib_result(CUdeviceptr *p, size_t *size);
#endif

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    CUdeviceptr p;
    int e;
    if (!strcmp(mode, "no-context")) {
        CK(cuInit(0));
        printf("before-context: %s\n", name_of(cuMemAlloc(&p, 4 * MIB)));
        if ((e = start()) || (e = alloc_filled(4 * MIB)))
            return e;
    } else if (!strcmp(mode, "failed-init")) {
        printf("first-init: %s\n", name_of(cuInit(0)));
        printf("after-failed-init: %s\n", name_of(cuMemAlloc(&p, 4 * MIB)));
        if ((e = start()) || (e = alloc_filled(4 * MIB)))
            return e;
    } else if (!strcmp(mode, "small-oom")) {
        if ((e = start()) || (e = alloc_filled(8 * MIB)) || (e = alloc_filled(8 * MIB)) ||
            (e = alloc_filled(1 * MIB)))
            return e;
    } else if (!strcmp(mode, "second-device")) {
        CUdevice d1;
        CUcontext c0, c1;
        int ordinal = -1;
        if ((e = start()) || (e = alloc_filled(4 * MIB)))
            return e;
        CK(cuCtxGetCurrent(&c0));
        CK(cuDeviceGet(&d1, 1));
        CK(cuDevicePrimaryCtxRetain(&c1, d1));
        CK(cuCtxSetCurrent(c1));
        if ((e = alloc_filled(4 * MIB)))
            return e;
        CK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, bufs[1]));
        printf("second-device-ordinal: %d\n", ordinal);
        CK(cuCtxSetCurrent(c0));
#ifdef WITH_CTORLIB
    } else if (!strcmp(mode, "constructor")) {
        CK(ctorlib_result(&bufs[0], &sizes[0]));
        nbufs = 1;
        if ((e = alloc_filled(4 * MIB)))
            return e;
#endif
    } else {
        fprintf(stderr,
                "usage: early no-context|failed-init|small-oom|constructor|second-device\n");
        return 2;
    }
    if ((e = check_all()))
        return e;
    printf("early: ok\n");
    return 0;
}

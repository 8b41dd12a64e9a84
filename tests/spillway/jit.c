/*
 * swt-jit: a JIT-style program that loads a module (or library), launches
 * one of its kernels and unloads it, again and again, alternating between
 * a kernel of four parameters (sg_axpy_f32) and one of two (sg_relu_f32).
 * simgpu hands a freed function handle out again first, so the second
 * kernel gets the first one's handle.
 *
 * The two-parameter kernel's kernelParams array ends right before an
 * inaccessible page: anything that reads it with the four-parameter
 * layout (a stale cache keyed by the handle) reads past its end and dies
 * with SIGSEGV. The data is checked too: relu of -1 is 0, axpy adds.
 *
 *   swt-jit [module|library]      (default: both, alternating)
 *
 * The buffers are 4 MiB: tracked under spillway, so every launch is
 * scanned. Prints "jit: ok" and exits 0; exits 1 on a wrong value, 2 on a
 * CUDA error.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cuda.h>

#define N (1u << 20) /* floats: 4 MiB */
#define ROUNDS 12

static int fail(const char *what, CUresult r)
{
    const char *name = NULL;
    cuGetErrorName(r, &name);
    fprintf(stderr, "jit: %s: %s\n", what, name ? name : "?");
    return 2;
}
#define CK(call)                                  \
    do {                                          \
        CUresult r_ = (call);                     \
        if (r_ != CUDA_SUCCESS)                   \
            return fail(#call, r_);               \
    } while (0)

/* Loads the built-in image as a module or a library and gets `name`. */
static CUresult get(bool library, const char *name, void **owner, CUfunction *f)
{
    CUresult r;
    if (!library) {
        if ((r = cuModuleLoadData((CUmodule *)owner, "simgpu-builtin")) != CUDA_SUCCESS)
            return r;
        return cuModuleGetFunction(f, *owner, name);
    }
    r = cuLibraryLoadData((CUlibrary *)owner, "simgpu-builtin", NULL, NULL, 0, NULL, NULL, 0);
    if (r != CUDA_SUCCESS)
        return r;
    return cuLibraryGetKernel((CUkernel *)f, *owner, name);
}

static CUresult unload(bool library, void *owner)
{
    return library ? cuLibraryUnload(owner) : cuModuleUnload(owner);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "both";
    CUdevice dev;
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));

    CUdeviceptr x, y;
    CK(cuMemAlloc(&x, N * sizeof(float)));
    CK(cuMemAlloc(&y, N * sizeof(float)));

    /* Two pages: the relu parameters fill the end of the first, the
     * second is made inaccessible. */
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *pages = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED || mprotect(pages + page, (size_t)page, PROT_NONE) != 0) {
        perror("jit: guard page");
        return 2;
    }
    void **relu_params = (void **)(pages + page) - 2;

    CUfunction prev = NULL;
    int recycled = 0;
    for (int round = 0; round < ROUNDS; round++) {
        bool library = strcmp(mode, "library") == 0 || (strcmp(mode, "both") == 0 && round / 2 % 2);
        bool relu = round % 2;
        void *owner;
        CUfunction f;
        CK(get(library, relu ? "sg_relu_f32" : "sg_axpy_f32", &owner, &f));
        recycled += f == prev;
        prev = f;
        uint64_t n = N;
        if (relu) {
            /* y = relu(y): -1 everywhere becomes 0. */
            CK(cuMemsetD32(y, 0xbf800000u, N)); /* -1.0f */
            relu_params[0] = &y;
            relu_params[1] = &n;
            CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, relu_params, NULL));
        } else {
            /* y = 2 * x + y with x = 1, y = 1: 3. */
            float a = 2.0f;
            CK(cuMemsetD32(x, 0x3f800000u, N));
            CK(cuMemsetD32(y, 0x3f800000u, N));
            void *params[] = {&a, &x, &y, &n};
            CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
        }
        CK(cuCtxSynchronize());
        float got[2];
        CK(cuMemcpyDtoH(&got[0], y, sizeof(float)));
        CK(cuMemcpyDtoH(&got[1], y + (N - 1) * sizeof(float), sizeof(float)));
        float want = relu ? 0.0f : 3.0f;
        if (got[0] != want || got[1] != want) {
            fprintf(stderr, "jit: round %d: y = %g, %g; want %g\n", round, got[0], got[1], want);
            return 1;
        }
        CK(unload(library, owner));
    }
    CK(cuMemFree(x));
    CK(cuMemFree(y));
    /* The point of the test: the driver did hand out the same handle. */
    printf("jit: ok recycled=%d\n", recycled);
    return 0;
}

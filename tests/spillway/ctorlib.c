/*
 * A library whose constructor makes the process's first CUDA calls, as
 * some libraries' initializers do. A library the program is linked with
 * is initialized before a preloaded one, so these calls reach spillway
 * before its own constructor has run. It allocates 4 MiB and fills it
 * with the pattern early.c expects of its buffer 0.
 */
#include <cuda.h>
#include <stddef.h>

#define SIZE (4u << 20)

static CUresult result = CUDA_ERROR_NOT_INITIALIZED;
static CUdeviceptr buffer;

CUresult ctorlib_result(CUdeviceptr *p, size_t *size);

__attribute__((constructor)) static void allocate_early(void)
{
    CUdevice dev;
    CUcontext ctx;
    if ((result = cuInit(0)) != CUDA_SUCCESS || (result = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS ||
        (result = cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS ||
        (result = cuCtxSetCurrent(ctx)) != CUDA_SUCCESS ||
        (result = cuMemAlloc(&buffer, SIZE)) != CUDA_SUCCESS)
        return;
    result = cuMemsetD8(buffer, 0x40, SIZE);
}

CUresult ctorlib_result(CUdeviceptr *p, size_t *size)
{
    *p = buffer;
    *size = SIZE;
    return result;
}

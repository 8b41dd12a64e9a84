/*
 * A stand-in for the shared CUDA runtime (libcudart.so), just enough to
 * test spillway's runtime wrappers on simgpu. Like the real runtime it
 * reaches the driver through dlopen("libcuda.so.1"), one dlsym of
 * cuGetProcAddress_v2, and then cuGetProcAddress for every entry point, so
 * a call through it passes both spillway's runtime wrapper and its driver
 * wrapper: the test proves nothing is counted twice.
 * Kernel "symbols" are CUfunction handles (cudaGetFuncBySymbol returns
 * them as they are).
 *
 * Built twice, with FAKERT_TAG a and b, as two runtimes a process may hold
 * at once: each counts the calls it served in fakert_calls_<tag>(), so a
 * test can tell which runtime a call reached.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static struct {
    CUresult (*init)(unsigned);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*set_current)(CUcontext);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free)(CUdeviceptr);
    CUresult (*mem_info)(size_t *, size_t *);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       unsigned, CUstream, void **, void **);
    CUresult (*launch_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
} drv;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static unsigned long served;

#define CALLS_FN_(tag) fakert_calls_##tag
#define CALLS_FN(tag) CALLS_FN_(tag)
unsigned long CALLS_FN(FAKERT_TAG)(void);
unsigned long CALLS_FN(FAKERT_TAG)(void)
{
    return __atomic_load_n(&served, __ATOMIC_RELAXED);
}
static cudaError_t load_error = cudaErrorInitializationError;

static void load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    gpa_fn gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!gpa)
        return;
#define GET(field, name, ver) \
    if (gpa(name, (void **)&drv.field, ver, 0, NULL) != CUDA_SUCCESS) return;
    GET(init, "cuInit", 2000)
    GET(device_get, "cuDeviceGet", 2000)
    GET(retain, "cuDevicePrimaryCtxRetain", 7000)
    GET(set_current, "cuCtxSetCurrent", 4000)
    GET(alloc, "cuMemAlloc", 3020)
    GET(free, "cuMemFree", 3020)
    GET(mem_info, "cuMemGetInfo", 3020)
    GET(launch, "cuLaunchKernel", 4000)
    GET(launch_ex, "cuLaunchKernelEx", 11060)
#undef GET
    CUdevice dev;
    CUcontext ctx;
    if (drv.init(0) == CUDA_SUCCESS && drv.device_get(&dev, 0) == CUDA_SUCCESS &&
        drv.retain(&ctx, dev) == CUDA_SUCCESS && drv.set_current(ctx) == CUDA_SUCCESS)
        load_error = cudaSuccess;
}

static cudaError_t err(CUresult r)
{
    return r == CUDA_SUCCESS ? cudaSuccess
           : r == CUDA_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation
                                           : cudaErrorUnknown;
}

#define READY()                                   \
    __atomic_add_fetch(&served, 1, __ATOMIC_RELAXED); \
    pthread_once(&once, load);                    \
    if (load_error != cudaSuccess)                \
        return load_error;

cudaError_t cudaMalloc(void **p, size_t n)
{
    READY();
    return err(drv.alloc((CUdeviceptr *)p, n));
}

cudaError_t cudaFree(void *p)
{
    READY();
    return p ? err(drv.free((CUdeviceptr)p)) : cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *f, size_t *t)
{
    READY();
    return err(drv.mem_info(f, t));
}

cudaError_t cudaGetFuncBySymbol(cudaFunction_t *f, const void *sym)
{
    *f = (cudaFunction_t)sym;
    return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void *func, dim3 g, dim3 b, void **args, size_t shmem,
                             cudaStream_t s)
{
    READY();
    return err(drv.launch((CUfunction)func, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)shmem,
                          (CUstream)s, args, NULL));
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *c, const void *func, void **args)
{
    READY();
    CUlaunchConfig cfg = {.gridDimX = c->gridDim.x, .gridDimY = c->gridDim.y,
                          .gridDimZ = c->gridDim.z, .blockDimX = c->blockDim.x,
                          .blockDimY = c->blockDim.y, .blockDimZ = c->blockDim.z,
                          .hStream = (CUstream)c->stream};
    return err(drv.launch_ex(&cfg, (CUfunction)func, args, NULL));
}

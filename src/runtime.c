/*
 * The shared CUDA runtime's entry points. Interposed by symbol (spillway is
 * preloaded, so a program linked with libcudart.so binds here first); the
 * real ones are found with RTLD_NEXT. A statically linked runtime never
 * reaches these and is seen at the driver level instead.
 *
 * Whether the runtime calls the public driver entry points or private ones
 * is not known (docs/cuda-facts.md §1, open), so each wrapper does its work
 * itself and marks the thread (sw_rt_state) while it calls the real
 * runtime; a wrapped driver function reached from inside then skips the
 * work already done. Nothing is counted twice either way.
 */
#include "mech.h"

#include <dlfcn.h>

static __thread sw_rt_state_t rt_state;

sw_rt_state_t *sw_rt_state(void)
{
    return &rt_state;
}

typedef cudaError_t (*malloc_fn)(void **, size_t);
typedef cudaError_t (*free_fn)(void *);
typedef cudaError_t (*meminfo_fn)(size_t *, size_t *);
typedef cudaError_t (*launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
typedef cudaError_t (*launch_ex_fn)(const cudaLaunchConfig_t *, const void *, void **);
typedef cudaError_t (*getfunc_fn)(cudaFunction_t *, const void *);

/* The runtime's own function, looked up after spillway in search order. */
static void *next(const char *name, void **cache)
{
    void *p = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (!p) {
        p = sw_real_dlsym()(RTLD_NEXT, name);
        __atomic_store_n(cache, p, __ATOMIC_RELEASE);
    }
    return p;
}
#define NEXT(type, name)                      \
    ({                                        \
        static void *cache_;                  \
        (type) next(name, &cache_);           \
    })

static cudaError_t rt_error(CUresult r)
{
    switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
    case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
    case CUDA_ERROR_ILLEGAL_ADDRESS: return cudaErrorIllegalAddress;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return cudaErrorStreamCaptureUnsupported;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return cudaErrorStreamCaptureInvalidated;
    case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
    default: return cudaErrorUnknown;
    }
}

cudaError_t sw_rt_malloc(void **p, size_t size)
{
    malloc_fn real = NEXT(malloc_fn, "cudaMalloc");
    free_fn rfree = NEXT(free_fn, "cudaFree");
    if (!real || !rfree)
        return cudaErrorNotSupported;
    if (sw_opts()->disable || !p || size < sw_opts()->min_alloc)
        return real(p, size);
    /* cudaFree(NULL) makes the runtime create its context and make it
     * current on this thread, as cudaMalloc would. */
    cudaError_t e = rfree(NULL);
    if (e != cudaSuccess)
        return e;
    CUdeviceptr d = 0;
    CUresult r = sw_mem_alloc(&d, size);
    if (r == CUDA_SUCCESS)
        *p = (void *)d;
    return rt_error(r);
}

cudaError_t sw_rt_free(void *p)
{
    free_fn real = NEXT(free_fn, "cudaFree");
    if (!real)
        return cudaErrorNotSupported;
    if (p && sw_is_tracked_base((CUdeviceptr)p))
        return rt_error(sw_mem_free((CUdeviceptr)p));
    return real(p);
}

cudaError_t sw_rt_mem_get_info(size_t *free_b, size_t *total)
{
    meminfo_fn real = NEXT(meminfo_fn, "cudaMemGetInfo");
    if (!real)
        return cudaErrorNotSupported;
    rt_state = (sw_rt_state_t){.inside = true};
    cudaError_t e = real(free_b, total);
    bool done = rt_state.handled;
    rt_state = (sw_rt_state_t){0};
    if (e == cudaSuccess && !done)
        sw_meminfo_adjust(free_b, total);
    return e;
}

/* Enters the runtime for a launch: gate shared, arguments scanned when the
 * function can be named, the thread marked. */
static void launch_enter(const void *func, void **args, cudaStream_t stream)
{
    getfunc_fn getfunc = NEXT(getfunc_fn, "cudaGetFuncBySymbol");
    rt_state = (sw_rt_state_t){.inside = true, .gated = sw_gate_rd()};
    cudaFunction_t f;
    if (rt_state.gated && getfunc && getfunc(&f, func) == cudaSuccess) {
        sw_mark((CUfunction)f, args, NULL, (CUstream)stream);
        rt_state.handled = true;
    }
}

static void launch_leave(void)
{
    bool gated = rt_state.gated, handled = rt_state.handled;
    rt_state = (sw_rt_state_t){0};
    if (gated)
        sw_gate_unrd();
    else if (!handled && !sw_opts()->disable)
        sw_stat_add(SW_STAT_launches, 1); /* never reached the driver's wrappers */
}

cudaError_t sw_rt_launch(int variant, const void *func, dim3 grid, dim3 block, void **args,
                         size_t shmem, cudaStream_t stream)
{
    launch_fn real = variant == SW_RT_PTSZ ? NEXT(launch_fn, "cudaLaunchKernel_ptsz")
                                           : NEXT(launch_fn, "cudaLaunchKernel");
    if (!real)
        return cudaErrorNotSupported;
    launch_enter(func, args, stream);
    cudaError_t e = real(func, grid, block, args, shmem, stream);
    launch_leave();
    return e;
}

cudaError_t sw_rt_launch_ex(int variant, const cudaLaunchConfig_t *config, const void *func,
                            void **args)
{
    launch_ex_fn real = variant == SW_RT_PTSZ ? NEXT(launch_ex_fn, "cudaLaunchKernelExC_ptsz")
                                              : NEXT(launch_ex_fn, "cudaLaunchKernelExC");
    if (!real)
        return cudaErrorNotSupported;
    launch_enter(func, args, config ? config->stream : NULL);
    cudaError_t e = real(config, func, args);
    launch_leave();
    return e;
}

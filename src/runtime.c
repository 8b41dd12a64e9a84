/*
 * The shared CUDA runtime's entry points. Interposed by symbol (spillway is
 * preloaded, so a program linked with libcudart.so binds here first). A
 * statically linked runtime never reaches these and is seen at the driver
 * level instead.
 *
 * Which runtime is "the real one" depends on the caller. A Python
 * extension may load its libcudart RTLD_LOCAL: that runtime is not in the
 * global scope, so RTLD_NEXT cannot find it, yet the extension's calls
 * bind to spillway's exports first. Two extensions may even bring two
 * runtimes. So each wrapper is handed its caller's return address, and
 * forwards to the runtime that caller would have bound to without
 * spillway (see binding_for).
 *
 * Whether the runtime calls the public driver entry points or private ones
 * is not known (docs/gpu-facts.md), so each wrapper does its work itself
 * and marks the thread (sw_rt_state) while it calls the real runtime; a
 * wrapped driver function reached from inside then skips the work already
 * done. Nothing is counted twice either way.
 */
#include "api.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>


typedef cudaError_t (*malloc_fn)(void **, size_t);
typedef cudaError_t (*free_fn)(void *);
typedef cudaError_t (*meminfo_fn)(size_t *, size_t *);
typedef cudaError_t (*launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
typedef cudaError_t (*launch_ex_fn)(const cudaLaunchConfig_t *, const void *, void **);
typedef cudaError_t (*getfunc_fn)(cudaFunction_t *, const void *);

/* The runtime functions a binding resolves, in one list. */
#define RT_FNS(X)                                                                   \
    X(cudaMalloc) X(cudaFree) X(cudaMemGetInfo) X(cudaLaunchKernel)                \
    X(cudaLaunchKernel_ptsz) X(cudaLaunchKernelExC) X(cudaLaunchKernelExC_ptsz)    \
    X(cudaGetFuncBySymbol)
enum {
#define RT_ID(name) RT_##name,
    RT_FNS(RT_ID)
#undef RT_ID
    RT_COUNT
};
static const char *const rt_names[RT_COUNT] = {
#define RT_NAME(name) #name,
    RT_FNS(RT_NAME)
#undef RT_NAME
};

/* The runtime one calling object binds to. caller NULL: the global scope
 * after spillway (RTLD_NEXT), for the main program, for objects loaded
 * with it, and for code no object claims. */
typedef struct {
    const void *caller; /* the caller's struct link_map */
    void *fn[RT_COUNT];
} binding_t;

#define MAX_BINDINGS 32
static binding_t bindings[MAX_BINDINGS];
static int nbindings;          /* published entries (atomic) */
static pthread_mutex_t bindings_lock = PTHREAD_MUTEX_INITIALIZER;

/* The last caller this thread saw: its code range and binding, so a hot
 * caller costs two compares. */
static __thread struct {
    const char *start, *end;
    const binding_t *b;
} last;

/* Is p defined by spillway itself (so not the runtime's)? */
static bool is_own(const void *p)
{
    Dl_info mine, theirs;
    return dladdr((const void *)sw_rt_malloc, &mine) && dladdr(p, &theirs) &&
           mine.dli_fbase == theirs.dli_fbase;
}

/* Fills b for the object whose link map is `map` (NULL: RTLD_NEXT). A
 * library's own handle searches the library and its dependencies, never
 * the preloads, so it finds the runtime that library was linked with,
 * loaded globally or not. The main program's handle would search the
 * global scope (spillway first), so it uses RTLD_NEXT; so does any name
 * the library's handle cannot find, or finds in spillway. */
static void resolve(binding_t *b, const struct link_map *map)
{
    void *(*real_dlsym)(void *, const char *) = sw_real_dlsym();
    void *h = NULL;
    if (map && map->l_name && map->l_name[0])
        h = dlopen(map->l_name, RTLD_LAZY | RTLD_NOLOAD); /* never closed: the caller and
                                                            * its runtime stay loaded, so
                                                            * cached pointers stay valid */
    b->caller = map;
    for (int i = 0; i < RT_COUNT; i++) {
        void *p = h ? real_dlsym(h, rt_names[i]) : NULL;
        if (!p || is_own(p))
            p = real_dlsym(RTLD_NEXT, rt_names[i]);
        b->fn[i] = p;
    }
}

static const binding_t *binding_of_map(const struct link_map *map)
{
    int n = __atomic_load_n(&nbindings, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (bindings[i].caller == map)
            return &bindings[i];
    pthread_mutex_lock(&bindings_lock);
    const binding_t *found = NULL;
    n = nbindings;
    for (int i = 0; i < n && !found; i++)
        if (bindings[i].caller == map)
            found = &bindings[i];
    if (!found && n < MAX_BINDINGS) {
        resolve(&bindings[n], map);
        found = &bindings[n];
        __atomic_store_n(&nbindings, n + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&bindings_lock);
    if (!found) { /* more calling objects than slots: resolve each time */
        static __thread binding_t spare;
        resolve(&spare, map);
        found = &spare;
    }
    return found;
}

/* The binding for code at `caller`. */
static const binding_t *binding_for(const void *caller)
{
    const char *pc = caller;
    if (last.b && pc >= last.start && pc < last.end)
        return last.b;
    struct dl_find_object fo;
    if (_dl_find_object((void *)pc, &fo) != 0)
        return binding_of_map(NULL);
    const binding_t *b = binding_of_map(fo.dlfo_link_map);
    last.start = fo.dlfo_map_start;
    last.end = fo.dlfo_map_end;
    last.b = b;
    return b;
}

#define RT(caller, type, name) ((type)binding_for(caller)->fn[RT_##name])

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

cudaError_t sw_rt_malloc(const void *caller, void **p, size_t size)
{
    const binding_t *b = binding_for(caller);
    malloc_fn real = (malloc_fn)b->fn[RT_cudaMalloc];
    free_fn rfree = (free_fn)b->fn[RT_cudaFree];
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

cudaError_t sw_rt_free(const void *caller, void *p)
{
    free_fn real = RT(caller, free_fn, cudaFree);
    if (!real)
        return cudaErrorNotSupported;
    if (p && sw_is_tracked_base((CUdeviceptr)p))
        return rt_error(sw_mem_free((CUdeviceptr)p));
    return real(p);
}

cudaError_t sw_rt_mem_get_info(const void *caller, size_t *free_b, size_t *total)
{
    meminfo_fn real = RT(caller, meminfo_fn, cudaMemGetInfo);
    if (!real)
        return cudaErrorNotSupported;
    sw_rt_state_t *rt = sw_rt_state();
    *rt = (sw_rt_state_t){.inside = true};
    cudaError_t e = real(free_b, total);
    bool done = rt->handled;
    *rt = (sw_rt_state_t){0};
    if (e == cudaSuccess && !done)
        sw_meminfo_adjust(free_b, total);
    return e;
}

/* The driver's name for a runtime stream: the default stream is the
 * per-thread one in the _ptsz variants. */
static CUstream driver_stream(int variant, cudaStream_t s)
{
    return !s && variant == SW_RT_PTSZ ? CU_STREAM_PER_THREAD : (CUstream)s;
}

/* Enters the runtime for a launch: gate shared, arguments scanned (and
 * *args rewritten for the streaming window) when the function can be
 * named, the thread marked. */
static void launch_enter(const binding_t *b, const void *func, void ***args, CUstream stream)
{
    getfunc_fn getfunc = (getfunc_fn)b->fn[RT_cudaGetFuncBySymbol];
    sw_rt_state_t *rt = sw_rt_state();
    *rt = (sw_rt_state_t){.inside = true, .gated = sw_gate_rd()};
    cudaFunction_t f;
    void **extra = NULL;
    if (rt->gated && getfunc && getfunc(&f, func) == cudaSuccess) {
        sw_mark((CUfunction)f, args, &extra, stream);
        rt->handled = true;
    }
}

static void launch_leave(CUstream stream, bool issued)
{
    sw_rt_state_t *rt = sw_rt_state();
    bool gated = rt->gated, handled = rt->handled;
    *rt = (sw_rt_state_t){0};
    sw_window_read(stream, issued); /* if the driver's wrapper has not already */
    if (gated)
        sw_gate_unrd();
    else if (!handled && !sw_opts()->disable)
        sw_stat_add(SW_STAT_launches, 1); /* never reached the driver's wrappers */
}

cudaError_t sw_rt_launch(const void *caller, int variant, const void *func, dim3 grid, dim3 block,
                         void **args, size_t shmem, cudaStream_t stream)
{
    const binding_t *b = binding_for(caller);
    launch_fn real = (launch_fn)b->fn[variant == SW_RT_PTSZ ? RT_cudaLaunchKernel_ptsz
                                                            : RT_cudaLaunchKernel];
    if (!real)
        return cudaErrorNotSupported;
    CUstream ds = driver_stream(variant, stream);
    launch_enter(b, func, &args, ds);
    cudaError_t e = real(func, grid, block, args, shmem, stream);
    launch_leave(ds, e == cudaSuccess);
    return e;
}

cudaError_t sw_rt_launch_ex(const void *caller, int variant, const cudaLaunchConfig_t *config,
                            const void *func, void **args)
{
    const binding_t *b = binding_for(caller);
    launch_ex_fn real = (launch_ex_fn)b->fn[variant == SW_RT_PTSZ ? RT_cudaLaunchKernelExC_ptsz
                                                                  : RT_cudaLaunchKernelExC];
    if (!real)
        return cudaErrorNotSupported;
    CUstream ds = driver_stream(variant, config ? config->stream : NULL);
    launch_enter(b, func, &args, ds);
    cudaError_t e = real(config, func, args);
    launch_leave(ds, e == cudaSuccess);
    return e;
}

/* Frameworks that size themselves from cuMemGetInfo see the host budget
 * too when SPILLWAY_MEMINFO=virtual. Done once per query: a runtime
 * wrapper that reaches the driver wrapper is told it was done. */
void sw_meminfo_adjust(size_t *free_b, size_t *total)
{
    sw_rt_state_t *rt = sw_rt_state();
    if (sw_opts()->meminfo != SW_MEMINFO_VIRTUAL || !free_b || !total || (rt->inside && rt->handled))
        return;
    uint64_t hb = sw_host_budget() ? sw_host_budget()
                                   : sw_amount_resolve(&sw_opts()->host_budget, sw_physical_ram());
    uint64_t used = sw_stat_get(SW_STAT_host_bytes);
    *total += hb;
    *free_b += hb > used ? hb - used : 0;
    rt->handled = rt->inside;
}

CUresult sw_mem_get_info(size_t *free_b, size_t *total)
{
    CUresult r = SW_REAL(cuMemGetInfo_v2)(free_b, total);
    if (r == CUDA_SUCCESS)
        sw_meminfo_adjust(free_b, total);
    return r;
}

/*
 * The exported entry points, all generated from hooks.def, plus the dlsym
 * override. Each wrapper is one line that hands its arguments to the layer
 * below; there is no logic here.
 *
 * Three routes lead here (docs/cuda-facts.md §1):
 *   - programs linked with -lcuda bind to these exported names;
 *   - the runtime, cuBLAS and Triton dlopen libcuda and dlsym
 *     cuGetProcAddress_v2 from its handle: the dlsym override swaps the
 *     real pointer for the wrapper;
 *   - every later entry point comes from cuGetProcAddress, whose wrapper
 *     swaps each pointer it returns by looking the real pointer up, so
 *     each version and per-thread variant gets a wrapper of its own ABI.
 */
#include "api.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#define SW_HOOK(ret, sym, params, call) SW_EXPORT ret sym params;
#define SW_RT_HOOK SW_HOOK
#include "hooks.def"
#undef SW_RT_HOOK
#undef SW_HOOK

#define SW_HOOK(ret, sym, params, call) \
    SW_EXPORT ret sym params            \
    {                                   \
        return call;                    \
    }
#define SW_RT_HOOK SW_HOOK
#include "hooks.def"
#undef SW_RT_HOOK
#undef SW_HOOK

/* ---- routes: from a real entry point to its wrapper ----
 * cuGetProcAddress and dlsym hand out the driver's own pointers; each is
 * swapped for the wrapper of the same function. The table is built from
 * the real table (driver.c) on first use and sorted by real address. */
typedef struct {
    void *real, *wrapper;
} route_t;

#define SW_HOOK(ret, sym, params, call) +1
enum { ROUTES = 0
#include "hooks.def"
};
#undef SW_HOOK

static route_t routes[ROUTES];
static size_t nroutes;
static pthread_once_t routes_once = PTHREAD_ONCE_INIT;

static int route_cmp(const void *a, const void *b)
{
    const route_t *x = a, *y = b;
    return x->real < y->real ? -1 : x->real > y->real;
}

static void build_routes(void)
{
    const sw_real_t *r = sw_real();
#define SW_HOOK(ret, name, params, call)                            \
    if (r->name)                                                    \
        routes[nroutes++] = (route_t){(void *)r->name, (void *)name};
#include "hooks.def"
#undef SW_HOOK
    qsort(routes, nroutes, sizeof routes[0], route_cmp);
}

void *sw_route(void *real_fn)
{
    pthread_once(&routes_once, build_routes);
    size_t lo = 0, hi = nroutes;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (routes[mid].real == real_fn)
            return routes[mid].wrapper;
        if (routes[mid].real < real_fn)
            lo = mid + 1;
        else
            hi = mid;
    }
    return real_fn;
}

CUresult sw_route_result(CUresult r, void **pfn)
{
    if (r == CUDA_SUCCESS && pfn && *pfn)
        *pfn = sw_route(*pfn);
    return r;
}

/* A lookup in libcuda's own handle gets the wrapper for what it finds.
 * Returns what the real dlsym returns (NULL included) when the handle is
 * not libcuda's. Kept out of line: unlike the override, it is
 * instrumented, and it is reached only for the driver's names, which no
 * sanitizer runtime looks up while it starts. */
__attribute__((noinline)) static void *driver_dlsym(void *handle, const char *name)
{
    void *(*real_dlsym)(void *, const char *) = sw_real_dlsym();
    void *p = real_dlsym ? real_dlsym(handle, name) : NULL;
    if (!p)
        return p;
    /* Only the driver's handle is routed; the first such lookup is the
     * program's first CUDA call, and resolves the real table. */
    Dl_info info;
    if (dladdr(p, &info) && info.dli_fname && strstr(info.dli_fname, "libcuda.so") &&
        handle == sw_driver_handle())
        return sw_route(p);
    return p;
}

/*
 * glibc resolves RTLD_DEFAULT and RTLD_NEXT relative to the library that
 * calls dlsym, found from the return address, so those lookups must reach
 * the real dlsym by a tail call with the caller's return address in place.
 * They need no routing: RTLD_DEFAULT finds spillway's exports first.
 *
 * The tail call is forced where the compiler can: clang (and GCC 15) take
 * musttail on the return, and fail to compile rather than emit a call;
 * older GCC has no musttail, and gets sibling-call optimization turned on
 * for this function whatever the build's -O.
 */
#if defined(__has_attribute)
#if __has_attribute(musttail)
#define SW_MUSTTAIL __attribute__((musttail))
#endif
#endif
#ifndef SW_MUSTTAIL
#define SW_MUSTTAIL
#endif
#if defined(__GNUC__) && !defined(__clang__)
#define SW_SIBCALLS __attribute__((optimize("O2", "optimize-sibling-calls")))
#else
#define SW_SIBCALLS
#endif

/* A name that may be the driver's: "cu" but not "cuda" (the runtime's).
 * Compared byte by byte rather than with strncmp, which sanitizer runtimes
 * intercept and which is not yet theirs to serve while they start. */
SW_UNSANITIZED static inline bool driver_name(const char *name)
{
    return name[0] == 'c' && name[1] == 'u' && !(name[2] == 'd' && name[3] == 'a');
}

/*
 * The override runs before anything is ready, spillway's constructor
 * included: the ASan and TSan runtimes call it while they start, before
 * instrumented code may run, and other preloaded libraries from their
 * constructors. So it and sw_real_dlsym are uninstrumented, take no lock
 * and read no option. Without a real dlsym (see sw_real_dlsym) every
 * lookup finds nothing.
 */
SW_EXPORT SW_UNSANITIZED SW_SIBCALLS void *dlsym(void *restrict handle, const char *restrict name)
{
    void *(*real_dlsym)(void *, const char *) = sw_real_dlsym();
    if (!real_dlsym)
        return NULL;
    if (handle != RTLD_DEFAULT && handle != RTLD_NEXT && driver_name(name))
        return driver_dlsym(handle, name);
    SW_MUSTTAIL return real_dlsym(handle, name);
}

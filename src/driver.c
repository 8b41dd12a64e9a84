/*
 * The real driver: one table of its entry points, resolved on first use.
 * A leaf: nothing here calls the rest of spillway but the log (the routes
 * from real pointers to the wrappers are the hooks', hooks.c).
 *
 * Resolution never goes through spillway's own exported symbols: the real
 * dlsym (found with dlvsym, which the override does not touch) looks each
 * name up in libcuda's own handle. So spillway's calls into the driver
 * never re-enter its wrappers.
 */
#include "driver.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef void *(*dlsym_fn)(void *, const char *);

static dlsym_fn real_dlsym;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;
static sw_real_t real;
static void *driver;

/* Before glibc 2.34 dlsym lived in libdl under the architecture's base
 * symbol version. */
#if defined(__x86_64__)
#define GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define GLIBC_BASE "GLIBC_2.17"
#elif defined(__i386__)
#define GLIBC_BASE "GLIBC_2.0"
#else
#error "add this architecture's base glibc symbol version (the version of dlsym before 2.34)"
#endif

/*
 * The real dlsym is looked up without pthread_once: the override calls
 * this, and dlsym is called before anything is ready, by a sanitizer
 * runtime while it starts and by other libraries' constructors. Some of
 * those (ThreadSanitizer, profilers) wrap pthread_once themselves and find
 * the real one with dlsym at their first call, so a once here would call
 * back into itself until the stack ran out. Instead each caller that finds
 * no pointer yet looks it up and stores it: racing threads find the same
 * pointer, so the last store changes nothing.
 */
SW_UNSANITIZED static dlsym_fn find_dlsym(void)
{
    dlsym_fn f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    return f ? f : (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", GLIBC_BASE);
}

SW_UNSANITIZED dlsym_fn sw_real_dlsym(void)
{
    dlsym_fn f = __atomic_load_n(&real_dlsym, __ATOMIC_ACQUIRE);
    if (!f) {
        f = find_dlsym();
        __atomic_store_n(&real_dlsym, f, __ATOMIC_RELEASE);
    }
    return f;
}

static void resolve(void)
{
    dlsym_fn sym = sw_real_dlsym();
    driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!driver || !sym) {
        sw_error("cannot load the CUDA driver (libcuda.so.1): %s",
                 driver ? "no dlsym" : dlerror());
        return;
    }
#define SW_HOOK(ret, name, params, call) real.name = (__typeof__(real.name))sym(driver, #name);
#include "hooks.def"
#undef SW_HOOK
#define SW_USE(name) real.name = (__typeof__(real.name))sym(driver, #name);
    SW_USES(SW_USE)
#undef SW_USE
}

const sw_real_t *sw_real(void)
{
    pthread_once(&real_once, resolve);
    return &real;
}

void *sw_driver_handle(void)
{
    sw_real();
    return driver;
}

const char *sw_cu_name(CUresult r)
{
    const char *s = NULL;
    if (real.cuGetErrorName && real.cuGetErrorName(r, &s) == CUDA_SUCCESS && s)
        return s;
    return "CUDA_ERROR_?";
}

/* ---- the gate (core/gate.c) ----
 * Armed while spillway tracks an allocation: the count is residency's
 * (alloc.c), kept here so that the gate asks no layer above it. */

static int armed; /* allocations tracked (atomic) */

int sw_gate_arm(int delta)
{
    return __atomic_add_fetch(&armed, delta, __ATOMIC_RELEASE);
}

void sw_gate_disarm(void)
{
    __atomic_store_n(&armed, 0, __ATOMIC_RELEASE);
}

bool sw_tracking_any(void)
{
    return __atomic_load_n(&armed, __ATOMIC_ACQUIRE) > 0;
}

bool sw_gate_rd(void)
{
    if (!sw_tracking_any())
        return false;
    sw_gate_rd_always();
    return true;
}

/* ---- the count of captures (launch.c, "capture", says how it is used) ---- */

static int captures;

void sw_capture_begun(CUresult r)
{
    if (r == CUDA_SUCCESS)
        __atomic_add_fetch(&captures, 1, __ATOMIC_SEQ_CST);
}

/* Never below zero: a negative count would read as "no capture" while
 * one runs. */
void sw_capture_over(void)
{
    int n = __atomic_load_n(&captures, __ATOMIC_SEQ_CST);
    while (n > 0 && !__atomic_compare_exchange_n(&captures, &n, n - 1, false, __ATOMIC_SEQ_CST,
                                                 __ATOMIC_SEQ_CST))
        ;
}

bool sw_capturing(void)
{
    return __atomic_load_n(&captures, __ATOMIC_SEQ_CST) > 0;
}

/*
 * swt-dlsymlib: a preloaded library that calls dlsym before spillway has
 * started, as sanitizer runtimes, profilers and allocators do. Preloaded
 * after libspillway, its constructor runs before spillway's, and its
 * dlsym calls reach spillway's override.
 *
 *   - It wraps pthread_once, as ThreadSanitizer's runtime does, and finds
 *     the real one with dlsym(RTLD_NEXT) at its first call. An override
 *     that used pthread_once itself would come back here before the real
 *     one is known, and again, until the stack ran out.
 *   - Its constructor looks up, and checks the answers of:
 *       dlsym(RTLD_NEXT, "pthread_once")   libc's, not this library's own
 *                                          wrapper (the lookup starts after
 *                                          the caller, so the override must
 *                                          keep the caller's identity);
 *       dlsym(RTLD_DEFAULT, "cuInit")      spillway's export;
 *       dlsym(libcuda, "cuGetProcAddress_v2")  spillway's wrapper (the
 *                                          driver's table resolved early).
 *
 * Writes "dlsymlib: ok" (or "dlsymlib: FAIL: what") to stderr with one
 * write, so the test can see it came before anything spillway printed.
 * A failed check exits 3 at once.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef int (*once_fn)(pthread_once_t *, void (*)(void));

/* Resolved at the first call, as an interposer does; racing first calls
 * both find the same pointer. */
static once_fn real_once;

/* Exported on purpose: it must interpose libc's for everyone. */
__attribute__((visibility("default"))) int pthread_once(pthread_once_t *once, void (*init)(void))
{
    once_fn f = __atomic_load_n(&real_once, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (once_fn)dlsym(RTLD_NEXT, "pthread_once");
        if (!f)
            return -1; /* no libc pthread_once: nothing to forward to */
        __atomic_store_n(&real_once, f, __ATOMIC_RELEASE);
    }
    return f(once, init);
}

static void say(const char *text)
{
    char line[256];
    int n = snprintf(line, sizeof line, "dlsymlib: %s\n", text);
    if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0)
        _exit(4); /* nowhere to report it */
}

static void fail(const char *what)
{
    char text[200];
    snprintf(text, sizeof text, "FAIL: %s", what);
    say(text);
    _exit(3);
}

/* The file name of the object holding p, or "" when none. */
static const char *object_of(void *p)
{
    Dl_info info;
    return p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "";
}

__attribute__((constructor)) static void look_up_early(void)
{
    void *next_once = dlsym(RTLD_NEXT, "pthread_once");
    if (!next_once || next_once == (void *)pthread_once)
        fail("dlsym(RTLD_NEXT, pthread_once) did not find libc's");
    if (!strstr(object_of(dlsym(RTLD_DEFAULT, "cuInit")), "libspillway"))
        fail("dlsym(RTLD_DEFAULT, cuInit) is not spillway's");
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver)
        fail("cannot dlopen libcuda.so.1");
    if (!strstr(object_of(dlsym(driver, "cuGetProcAddress_v2")), "libspillway"))
        fail("dlsym(libcuda, cuGetProcAddress_v2) is not spillway's wrapper");
    say("ok");
}

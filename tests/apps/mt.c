/*
 * sg-mt: several threads allocating, computing and freeing at once, the
 * way a multi-threaded server drives the driver.  Under spillway, one
 * thread's allocation may demote (unmap and remap) another thread's
 * memory while that thread has work queued on its own stream: the
 * safety rule of src/vmm.c must hold across threads.
 *
 * The threads (--threads, 4) share the primary context.  Each creates its own
 * CU_STREAM_NON_BLOCKING stream and keeps one long-lived buffer, filled at
 * the start and checked at the end.  Then, ITERS times, it allocates two
 * vectors of a few MiB (above spillway's default 2 MiB threshold, so they
 * are tracked), fills them with values specific to the thread and the
 * iteration, runs y = a*x + y, copies y back with cuMemcpyDtoHAsync and a
 * stream synchronize, checks every element and frees both vectors.
 *
 * Odd iterations fill x by cuMemcpyHtoDAsync from the thread's host
 * buffer instead of a kernel, and copy y into x with cuMemcpyDtoDAsync
 * before checking x: copies of every direction run beside the kernels.
 * Each iteration also copies a table of its three buffers' addresses to
 * the device, as grouped GEMMs are handed their operands: spillway marks
 * memory such a copy points into while other threads' launches weigh it.
 *
 *   sg-mt [--threads N] [--seconds S]
 *
 * --threads (4, at most 64) threads; --seconds makes each thread repeat
 * its iterations until S seconds have passed since the start (at least
 * one), instead of ITERS times, for a stress run of bounded time.
 *
 * Prints "mt: ok iterations=N" (N over all threads) and exits 0; exits 1
 * on a wrong value (the first one is printed), 2 on a CUDA error (printed
 * with its name and the call), 3 on a bad command line.  When both of the
 * first happen, 1 wins: a wrong value is the worse failure.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#define MAX_THREADS 64
#define ITERS 20
#define BLOCK 256u
#define MIB (1024u * 1024u)
#define KEEP_BYTES (3u * MIB)

enum { MT_OK = 0, MT_MISMATCH = 1, MT_CUDA = 2, MT_USAGE = 3 };

/* simgpu accepts any image whose text starts with this. */
static const char image[] = "simgpu-builtin";

static CUcontext ctx;
static CUfunction fill_fn, axpy_fn;
static atomic_int worst = MT_OK;
static atomic_ullong iterations;
static double stop_at; /* CLOCK_MONOTONIC seconds; 0: ITERS iterations only */

/* Records a status; the largest wins (mismatch over CUDA error). */
static void note(int status)
{
    int cur = atomic_load(&worst);
    while (status > cur && !atomic_compare_exchange_weak(&worst, &cur, status))
        ;
}

static int cuda_fail(CUresult rc, const char *call, int thread)
{
    const char *name = NULL;

    if (cuGetErrorName(rc, &name) != CUDA_SUCCESS || name == NULL)
        name = "unknown CUresult";
    if (thread < 0)
        fprintf(stderr, "mt: CUDA error %s (%d) in %s\n", name, (int)rc, call);
    else
        fprintf(stderr, "mt: CUDA error %s (%d) in %s (thread %d)\n", name, (int)rc, call,
                thread);
    return MT_CUDA;
}

/* Evaluates a driver call; on error records it and leaves through out. */
#define CK(call)                                                               \
    do {                                                                       \
        CUresult rc_ = (call);                                                 \
        if (rc_ != CUDA_SUCCESS) {                                             \
            note(cuda_fail(rc_, #call, t->id));                                \
            goto out;                                                          \
        }                                                                      \
    } while (0)

static uint32_t float_bits(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

static CUresult fill_u32(CUdeviceptr dst, uint32_t value, uint64_t count, CUstream s)
{
    void *params[] = {&dst, &value, &count};

    return cuLaunchKernel(fill_fn, (unsigned)((count + BLOCK - 1) / BLOCK), 1, 1, BLOCK, 1, 1,
                          0, s, params, NULL);
}

static CUresult axpy(float a, CUdeviceptr x, CUdeviceptr y, uint64_t n, CUstream s)
{
    void *params[] = {&a, &x, &y, &n};

    return cuLaunchKernel(axpy_fn, (unsigned)((n + BLOCK - 1) / BLOCK), 1, 1, BLOCK, 1, 1, 0,
                          s, params, NULL);
}

typedef struct {
    int id;
    uint32_t *host; /* room for the largest vector */
} thread_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Another iteration: ITERS of them, or with --seconds at least one, then
 * more until stop_at. */
static bool more(int i)
{
    if (stop_at > 0)
        return i == 0 || now_s() < stop_at;
    return i < ITERS;
}

/* x = xv, n words, on odd iterations by a copy from the host (the host
 * buffer is free: the last read-back into it was waited for). */
static CUresult fill_x(thread_t *t, CUdeviceptr x, float xv, uint64_t n, int iter, CUstream s)
{
    if (iter % 2 == 0)
        return fill_u32(x, float_bits(xv), n, s);
    for (uint64_t k = 0; k < n; k++)
        t->host[k] = float_bits(xv);
    return cuMemcpyHtoDAsync(x, t->host, n * sizeof(uint32_t), s);
}

/* Copies n words of src back on s and checks that each equals want.
 * Returns MT_OK, MT_MISMATCH (after printing the first wrong word) or
 * MT_CUDA (after printing the failed call). */
static int check_words(thread_t *t, CUdeviceptr src, uint64_t n, uint32_t want, CUstream s,
                       const char *what, int iter)
{
    CUresult rc = cuMemcpyDtoHAsync(t->host, src, n * sizeof(uint32_t), s);
    if (rc != CUDA_SUCCESS)
        return cuda_fail(rc, "cuMemcpyDtoHAsync", t->id);
    rc = cuStreamSynchronize(s);
    if (rc != CUDA_SUCCESS)
        return cuda_fail(rc, "cuStreamSynchronize", t->id);
    for (uint64_t i = 0; i < n; i++) {
        if (t->host[i] != want) {
            fprintf(stderr, "mt: thread %d iteration %d: %s[%llu] = 0x%08x, want 0x%08x\n",
                    t->id, iter, what, (unsigned long long)i, t->host[i], want);
            return MT_MISMATCH;
        }
    }
    return MT_OK;
}

static void *worker(void *arg)
{
    thread_t *t = arg;
    CUstream s = NULL;
    CUdeviceptr keep = 0, x = 0, y = 0, table = 0;
    const uint32_t keep_value = 0xC0DE0000u + (uint32_t)t->id;

    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&keep, KEEP_BYTES));
    CK(cuMemAlloc(&table, 3 * sizeof(CUdeviceptr)));
    CK(fill_u32(keep, keep_value, KEEP_BYTES / 4, s));

    int i = 0;
    for (; more(i); i++) {
        /* 3, 4 or 5 MiB: sizes vary so chunks of different sizes move. */
        uint64_t bytes = (uint64_t)(3 + (t->id + i) % 3) * MIB;
        uint64_t n = bytes / sizeof(float);
        /* Exact in binary, so == is the right test: 2*(t+1) + i/4. */
        float xv = (float)(t->id + 1), yv = (float)i * 0.25f, a = 2.0f;
        float want = a * xv + yv;

        CK(cuMemAlloc(&x, bytes));
        CK(cuMemAlloc(&y, bytes));
        CK(fill_x(t, x, xv, n, i, s));
        CK(fill_u32(y, float_bits(yv), n, s));
        CUdeviceptr ptrs[3] = {x, y, keep};
        CK(cuMemcpyHtoD(table, ptrs, sizeof ptrs));
        CK(axpy(a, x, y, n, s));
        CUdeviceptr result = y;
        if (i % 2) {
            CK(cuMemcpyDtoDAsync(x, y, bytes, s));
            result = x;
        }
        int st = check_words(t, result, n, float_bits(want), s, i % 2 ? "x (y copied)" : "y", i);
        if (st != MT_OK) {
            note(st);
            goto out;
        }
        CK(cuMemFree(y));
        y = 0;
        CK(cuMemFree(x));
        x = 0;
    }
    atomic_fetch_add(&iterations, (unsigned long long)i);
    note(check_words(t, keep, KEEP_BYTES / 4, keep_value, s, "keep", i));

out:
    /* Best effort: after a sticky error these fail too, and that is fine. */
    if (y)
        cuMemFree(y);
    if (x)
        cuMemFree(x);
    if (keep)
        cuMemFree(keep);
    if (table)
        cuMemFree(table);
    if (s)
        cuStreamDestroy(s);
    return NULL;
}

/* Reads --threads and --seconds; MT_OK or MT_USAGE (usage printed). */
static int parse(int argc, char **argv, int *nthreads)
{
    for (int i = 1; i < argc; i += 2) {
        char *end = NULL;
        long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
        bool num = end && end != argv[i + 1] && *end == '\0';
        if (strcmp(argv[i], "--threads") == 0 && num && v >= 1 && v <= MAX_THREADS) {
            *nthreads = (int)v;
        } else if (strcmp(argv[i], "--seconds") == 0 && num && v >= 1 && v <= 3600) {
            stop_at = now_s() + (double)v;
        } else {
            fprintf(stderr, "usage: sg-mt [--threads 1-%d] [--seconds S]\n", MAX_THREADS);
            return MT_USAGE;
        }
    }
    return MT_OK;
}

int main(int argc, char **argv)
{
    CUdevice dev = 0;
    CUmodule mod = NULL;
    thread_t threads[MAX_THREADS];
    pthread_t tids[MAX_THREADS];
    int started = 0, retained = 0, nthreads = 4;
    thread_t main_t = {.id = -1};
    thread_t *t = &main_t; /* for CK in main */

    if (parse(argc, argv, &nthreads) != MT_OK)
        return MT_USAGE;
    memset(threads, 0, sizeof threads);
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    retained = 1;
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, image));
    CK(cuModuleGetFunction(&fill_fn, mod, "sg_fill_u32"));
    CK(cuModuleGetFunction(&axpy_fn, mod, "sg_axpy_f32"));

    for (; started < nthreads; started++) {
        threads[started].id = started;
        threads[started].host = malloc(5 * MIB);
        if (threads[started].host == NULL) {
            fprintf(stderr, "mt: out of host memory\n");
            note(MT_CUDA);
            break;
        }
        if (pthread_create(&tids[started], NULL, worker, &threads[started]) != 0) {
            fprintf(stderr, "mt: cannot start thread %d\n", started);
            free(threads[started].host);
            note(MT_CUDA);
            break;
        }
    }
    for (int i = 0; i < started; i++) {
        pthread_join(tids[i], NULL);
        free(threads[i].host);
    }
    if (atomic_load(&worst) == MT_OK)
        printf("mt: ok iterations=%llu\n", (unsigned long long)atomic_load(&iterations));

out:
    if (mod != NULL)
        cuModuleUnload(mod);
    if (retained)
        cuDevicePrimaryCtxRelease(dev);
    return atomic_load(&worst);
}

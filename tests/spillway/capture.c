/*
 * swt-capture: stream captures next to chunks spillway would move.
 *
 * Two 8 MiB buffers under an 8 MiB GPU budget (the test sets it): the
 * second pushes the first out to host memory. Freeing the second makes
 * room again, so a launch that touches the first would bring it back,
 * which synchronizes: that must never happen inside a capture, and must
 * happen outside one.
 *
 *   swt-capture to-graph   capture into an existing graph
 *                          (cuStreamBeginCaptureToGraph) a kernel on the
 *                          host chunk, end, replay; then an ordinary
 *                          capture of the same
 *   swt-capture unjoined   a capture whose end fails with
 *                          CUDA_ERROR_STREAM_CAPTURE_UNJOINED (the test
 *                          injects it): the capture is over, so a launch
 *                          after it may bring the chunk back
 *   swt-capture race       one thread captures (global mode) and ends,
 *                          over and over, while another launches on two
 *                          chunks that take turns on the device (see
 *                          race below): no capture may be invalidated
 *
 * Prints "capture: ok" and exits 0; 1 on a wrong value or an invalidated
 * capture, 2 on any other CUDA error.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "swt_prog.h"

#define MIB (1024u * 1024u)
#define N (2 * MIB) /* uint32s: 8 MiB */

static int fail(const char *what, CUresult r)
{
    const char *name = NULL;
    cuGetErrorName(r, &name);
    fprintf(stderr, "capture: %s: %s\n", what, name ? name : "?");
    return r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED ? 1 : 2;
}
#define CK(call)                                  \
    do {                                          \
        CUresult r_ = (call);                     \
        if (r_ != CUDA_SUCCESS)                   \
            return fail(#call, r_);               \
    } while (0)

static CUcontext ctx;
static CUfunction fill;

/* Queues fill(p, v) over all N words on s. */
static CUresult fill_on(CUstream s, CUdeviceptr p, uint32_t v)
{
    uint64_t n = N;
    void *params[] = {&p, &v, &n};
    return cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
}

static int check(CUdeviceptr p, uint32_t want, const char *when)
{
    uint32_t got[2];
    CK(cuMemcpyDtoH(&got[0], p, 4));
    CK(cuMemcpyDtoH(&got[1], p + (N - 1) * 4ull, 4));
    if (got[0] != want || got[1] != want) {
        fprintf(stderr, "capture: %s: %u, %u; want %u\n", when, got[0], got[1], want);
        return 1;
    }
    return 0;
}

/* a on the host, room for it on the device. */
static int setup(CUdeviceptr *a)
{
    CUdeviceptr b;
    CK(cuMemAlloc(a, N * 4ull));
    CK(cuMemsetD32(*a, 1, N));
    CK(cuMemAlloc(&b, N * 4ull));
    CK(cuMemFree(b));
    return 0;
}

static int to_graph(CUstream s, CUdeviceptr a)
{
    CUgraph g, got;
    CUgraphExec e;
    CK(cuGraphCreate(&g, 0));
    CK(cuStreamBeginCaptureToGraph(s, g, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CK(fill_on(s, a, 7));
    CK(cuStreamEndCapture(s, &got));
    CK(cuGraphInstantiateWithFlags(&e, got, 0));
    CK(cuGraphLaunch(e, s));
    CK(cuStreamSynchronize(s));
    int bad = check(a, 7, "after the graph");
    if (bad)
        return bad;
    /* An ordinary capture afterwards must be counted as one too. */
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CK(fill_on(s, a, 8));
    CK(cuStreamEndCapture(s, &got));
    CK(cuGraphInstantiateWithFlags(&e, got, 0));
    CK(cuGraphLaunch(e, s));
    CK(cuStreamSynchronize(s));
    return check(a, 8, "after the second graph");
}

static int unjoined(CUstream s, CUdeviceptr a)
{
    CUgraph got;
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CK(fill_on(s, a, 5));
    CUresult r = cuStreamEndCapture(s, &got);
    if (r != CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
        return fail("cuStreamEndCapture (want CUDA_ERROR_STREAM_CAPTURE_UNJOINED)", r);
    CUstreamCaptureStatus st;
    CK(cuStreamIsCapturing(s, &st));
    if (st != CU_STREAM_CAPTURE_STATUS_NONE) {
        fprintf(stderr, "capture: still capturing after the failed end\n");
        return 2;
    }
    /* Outside any capture now: this launch may bring a back. */
    CK(fill_on(s, a, 6));
    CK(cuStreamSynchronize(s));
    return check(a, 6, "after the unjoined capture");
}

/* ---- race ----
 * Two 8 MiB chunks under the 8 MiB budget take turns on the device: each
 * launch on the one on the host brings it in and pushes the other out,
 * with a synchronization each time. Meanwhile another thread captures in
 * global mode, where any thread's device synchronization invalidates the
 * capture. This thread makes no synchronizing call of its own (its copies
 * and waits are on its own stream), so only spillway could. */

#define RACE_ROUNDS 400
static volatile int race_stop;

static void *capturer(void *arg)
{
    int *bad = arg;
    CUstream s;
    CUdeviceptr mine;
    if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
        cuMemAlloc(&mine, 64 * 1024)) {
        *bad = 2;
        return NULL;
    }
    while (!race_stop && !*bad) {
        CUgraph g;
        CUresult r = cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
        uint64_t n = 16;
        uint32_t v = 3;
        void *params[] = {&mine, &v, &n};
        if (r == CUDA_SUCCESS)
            r = cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
        CUresult e = cuStreamEndCapture(s, &g);
        if (r != CUDA_SUCCESS || e != CUDA_SUCCESS) {
            *bad = fail("a capture in the race", r != CUDA_SUCCESS ? r : e);
            return NULL;
        }
        cuGraphDestroy(g);
    }
    return NULL;
}

static int race(CUstream s)
{
    CUdeviceptr a[2];
    CK(cuMemAlloc(&a[0], N * 4ull));
    CK(cuMemAlloc(&a[1], N * 4ull));
    int cbad = 0, bad = 0;
    pthread_t t;
    if (pthread_create(&t, NULL, capturer, &cbad) != 0)
        return 2;
    for (int i = 0; i < RACE_ROUNDS && !bad && !__atomic_load_n(&cbad, __ATOMIC_RELAXED); i++) {
        uint32_t got[2] = {0, 0};
        CUdeviceptr p = a[i % 2];
        CUresult r = fill_on(s, p, (uint32_t)i);
        if (r == CUDA_SUCCESS)
            r = cuMemcpyDtoHAsync(&got[0], p, 4, s);
        if (r == CUDA_SUCCESS)
            r = cuMemcpyDtoHAsync(&got[1], p + (N - 1) * 4ull, 4, s);
        if (r == CUDA_SUCCESS)
            r = cuStreamSynchronize(s);
        if (r != CUDA_SUCCESS)
            bad = fail("a launch in the race", r);
        else if (got[0] != (uint32_t)i || got[1] != (uint32_t)i)
            bad = 1, fprintf(stderr, "capture: race round %d: %u, %u\n", i, got[0], got[1]);
    }
    race_stop = 1;
    pthread_join(t, NULL);
    return bad ? bad : cbad;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    CUmodule mod;
    CUstream s;
    if (swt_open("capture", &ctx, &mod) != CUDA_SUCCESS)
        return 2;
    CK(cuModuleGetFunction(&fill, mod, "sg_fill_u32"));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr a;
    int bad;
    if (strcmp(mode, "race") == 0) {
        bad = race(s);
    } else if (strcmp(mode, "to-graph") == 0 || strcmp(mode, "unjoined") == 0) {
        bad = setup(&a);
        if (!bad)
            bad = mode[0] == 't' ? to_graph(s, a) : unjoined(s, a);
    } else {
        fprintf(stderr, "usage: swt-capture to-graph|unjoined|race\n");
        return 2;
    }
    if (bad)
        return bad;
    printf("capture: ok\n");
    return 0;
}

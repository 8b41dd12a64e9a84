/*
 * test_capture.c: stream capture records work instead of running it;
 * cuGraphLaunch replays it with the recorded arguments; a synchronizing
 * call during a capture is refused and invalidates the capture. Captures
 * span streams forked and joined by events; unjoined work, waits across
 * the capture's boundary and an end on the wrong stream fail as in the
 * driver; replays keep the captured dependencies and overlap lanes.
 */
#include "sgt.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define N 1024

/* x, y on the device with known contents; host copies in x_init/y_init. */
static CUdeviceptr dx, dy;
static float x_init[N], y_init[N];

static void setup_axpy(void)
{
    uint64_t st = 11;
    for (int i = 0; i < N; i++) {
        x_init[i] = sgt_randf(&st);
        y_init[i] = sgt_randf(&st);
    }
    SGT_OK(cuMemAlloc(&dx, sizeof x_init));
    SGT_OK(cuMemAlloc(&dy, sizeof y_init));
    SGT_OK(cuMemcpyHtoD(dx, x_init, sizeof x_init));
    SGT_OK(cuMemcpyHtoD(dy, y_init, sizeof y_init));
}

static void launch_axpy(CUstream s, float a)
{
    uint64_t n = N;
    void *params[] = {&a, &dx, &dy, &n};
    SGT_OK(sgt_launch(sgt_func("sg_axpy_f32"), s, params));
}

static void assert_y(const float *want)
{
    float y[N];
    SGT_OK(cuMemcpyDtoH(y, dy, sizeof y));
    ck_assert_int_eq(memcmp(y, want, sizeof y), 0);
}

static CUstream capture_stream(void)
{
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    return s;
}

START_TEST(capture_records_without_running)
{
    sgt_init();
    setup_axpy();
    CUstream s = capture_stream();
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    SGT_OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    SGT_OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    launch_axpy(s, 2.0f);
    CUgraph g = NULL;
    SGT_OK(cuStreamEndCapture(s, &g));
    ck_assert_ptr_nonnull(g);
    SGT_OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
    SGT_OK(cuStreamSynchronize(s));
    SGT_OK(cuCtxSynchronize());
    assert_y(y_init);
}
END_TEST

START_TEST(capture_graph_launch_replays_each_time)
{
    sgt_init();
    setup_axpy();
    CUstream s = capture_stream();
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch_axpy(s, 2.0f);
    CUgraph g = NULL;
    SGT_OK(cuStreamEndCapture(s, &g));
    CUgraphExec ge = NULL;
    SGT_OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    ck_assert_ptr_nonnull(ge);
    SGT_OK(cuGraphLaunch(ge, s));
    SGT_OK(cuGraphLaunch(ge, s));
    SGT_OK(cuStreamSynchronize(s));
    float want[N];
    for (int i = 0; i < N; i++) {
        float y1 = 2.0f * x_init[i] + y_init[i];
        want[i] = 2.0f * x_init[i] + y1;
    }
    assert_y(want);
    SGT_OK(cuGraphExecDestroy(ge));
    SGT_OK(cuGraphDestroy(g));
}
END_TEST

START_TEST(capture_replays_recorded_arguments)
{
    /* The parameter values are copied at capture time: changing the host
     * variables afterwards does not change the replay. */
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    SGT_OK(cuMemsetD32(d, 0, 1024));
    CUstream s = capture_stream();
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr dst = d;
    uint32_t value = 5;
    uint64_t count = 1024;
    void *params[] = {&dst, &value, &count};
    SGT_OK(sgt_launch(sgt_func("sg_fill_u32"), s, params));
    CUgraph g = NULL;
    SGT_OK(cuStreamEndCapture(s, &g));
    value = 6;
    count = 1;
    CUgraphExec ge = NULL;
    SGT_OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    SGT_OK(cuGraphLaunch(ge, s));
    SGT_OK(cuStreamSynchronize(s));
    uint32_t out[1024];
    SGT_OK(cuMemcpyDtoH(out, d, sizeof out));
    for (int i = 0; i < 1024; i++)
        ck_assert_uint_eq(out[i], 5);
}
END_TEST

START_TEST(capture_info_reports_active)
{
    sgt_init();
    CUstream s = capture_stream();
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    cuuint64_t id = 0;
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    SGT_OK(cuStreamGetCaptureInfo(s, &st, &id, NULL, NULL, NULL, NULL));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    ck_assert_uint_ne(id, 0);
    CUgraph g = NULL;
    SGT_OK(cuStreamEndCapture(s, &g));
    SGT_OK(cuStreamGetCaptureInfo(s, &st, NULL, NULL, NULL, NULL, NULL));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
    /* A new capture has a new id. */
    cuuint64_t id2 = 0;
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    SGT_OK(cuStreamGetCaptureInfo(s, &st, &id2, NULL, NULL, NULL, NULL));
    ck_assert_uint_ne(id2, id);
    SGT_OK(cuStreamEndCapture(s, &g));
}
END_TEST

/* Each synchronizing call the README lists, in GLOBAL mode. */
static const char *const sync_call_names[] = {
    "cuCtxSynchronize", "cuMemAlloc",   "cuStreamSynchronize",
    "cuMemcpyHtoD",     "cuMemcpyDtoH", "cuMemFree",
    "cuMemsetD32"};

static CUresult sync_call(int which, CUstream s, CUdeviceptr d)
{
    uint32_t buf[16] = {0};
    CUdeviceptr p;
    switch (which) {
    case 0: return cuCtxSynchronize();
    case 1: return cuMemAlloc(&p, 4096);
    case 2: return cuStreamSynchronize(s);
    case 3: return cuMemcpyHtoD(d, buf, sizeof buf);
    case 4: return cuMemcpyDtoH(buf, d, sizeof buf);
    case 5: return cuMemFree(d);
    default: return cuMemsetD32(d, 1, 16);
    }
}

START_TEST(capture_sync_call_invalidates_capture)
{
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    CUstream s = capture_stream();
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    sgt_fill_u32(s, d, 1, 16);
    CUresult r = sync_call(_i, s, d);
    ck_assert_msg(r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                  "%s during capture: got %d (%s), want "
                  "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
                  sync_call_names[_i], r, sgt_errname(r));
    CUstreamCaptureStatus st;
    SGT_OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CUgraph g = (CUgraph)0x1;
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
    ck_assert_ptr_null(g);
    SGT_OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
}
END_TEST

START_TEST(capture_relaxed_allows_unsafe_calls)
{
    sgt_init();
    setup_axpy();
    CUstream s = capture_stream();
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    launch_axpy(s, 3.0f);
    CUdeviceptr p;
    SGT_OK(cuMemAlloc(&p, 4096));
    CUgraph g = NULL;
    SGT_OK(cuStreamEndCapture(s, &g));
    ck_assert_ptr_nonnull(g);
    CUgraphExec ge;
    SGT_OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    SGT_OK(cuGraphLaunch(ge, s));
    SGT_OK(cuStreamSynchronize(s));
    float want[N];
    for (int i = 0; i < N; i++)
        want[i] = 3.0f * x_init[i] + y_init[i];
    assert_y(want);
}
END_TEST

START_TEST(capture_relaxed_refuses_stream_sync)
{
    sgt_init();
    CUstream s = capture_stream();
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamSynchronize(s));
    CUgraph g = NULL;
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
}
END_TEST

static CUresult other_thread_result;

/* Allocates on a thread of its own, in the capture interaction mode arg
 * points to (NULL: the thread's default, GLOBAL). */
static void *alloc_thread(void *arg)
{
    CUdeviceptr p;
    other_thread_result = cuCtxSetCurrent(sgt_ctx());
    if (other_thread_result == CUDA_SUCCESS && arg)
        other_thread_result = cuThreadExchangeStreamCaptureMode(arg);
    if (other_thread_result == CUDA_SUCCESS)
        other_thread_result = cuMemAlloc(&p, 4096);
    return NULL;
}

START_TEST(capture_global_refuses_unsafe_call_on_other_thread)
{
    /* In GLOBAL mode an unsafe call from any thread breaks the capture:
     * an interposer's own worker thread must not allocate then. */
    sgt_init();
    CUstream s = capture_stream();
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, alloc_thread, NULL), 0);
    pthread_join(t, NULL);
    ck_assert_msg(other_thread_result == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                  "cuMemAlloc on another thread: %d (%s)", other_thread_result,
                  sgt_errname(other_thread_result));
    CUgraph g = NULL;
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
}
END_TEST

START_TEST(capture_thread_relaxed_allows_unsafe_calls)
{
    /* PyTorch's allocator: RELAXED around an allocation made during a
     * GLOBAL capture on the same thread, then the old mode back. */
    sgt_init();
    CUstream s = capture_stream();
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    SGT_OK(cuThreadExchangeStreamCaptureMode(&m));
    ck_assert_int_eq(m, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUdeviceptr p;
    SGT_OK(cuMemAlloc(&p, 4096));
    SGT_OK(cuThreadExchangeStreamCaptureMode(&m));
    ck_assert_int_eq(m, CU_STREAM_CAPTURE_MODE_RELAXED);
    CUstreamCaptureStatus st;
    SGT_OK(cuStreamIsCapturing(s, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    /* GLOBAL again: the same call now breaks the capture. */
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuMemAlloc(&p, 4096));
    CUgraph g = NULL;
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
    m = (CUstreamCaptureMode)7;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuThreadExchangeStreamCaptureMode(&m));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuThreadExchangeStreamCaptureMode(NULL));
}
END_TEST

START_TEST(capture_thread_local_mode_ignores_other_threads_captures)
{
    /* A thread in THREAD_LOCAL mode may make unsafe calls while another
     * thread's GLOBAL capture runs, and that capture survives. */
    sgt_init();
    CUstream s = capture_stream();
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    pthread_t t;
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    ck_assert_int_eq(pthread_create(&t, NULL, alloc_thread, &m), 0);
    pthread_join(t, NULL);
    ck_assert_msg(other_thread_result == CUDA_SUCCESS,
                  "cuMemAlloc on a THREAD_LOCAL thread: %d (%s)", other_thread_result,
                  sgt_errname(other_thread_result));
    CUgraph g = NULL;
    SGT_OK(cuStreamEndCapture(s, &g));
    ck_assert_ptr_nonnull(g);
}
END_TEST

START_TEST(capture_of_legacy_stream_is_refused)
{
    sgt_init();
    CUresult r = cuStreamBeginCapture(CU_STREAM_LEGACY,
                                      CU_STREAM_CAPTURE_MODE_GLOBAL);
    ck_assert_msg(r != CUDA_SUCCESS, "capture of the legacy stream began");
}
END_TEST

START_TEST(capture_graph_replays_on_launch_stream)
{
    sgt_init();
    setup_axpy();
    CUstream s = capture_stream(), other = capture_stream();
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch_axpy(s, 0.5f);
    CUgraph g;
    SGT_OK(cuStreamEndCapture(s, &g));
    CUgraphExec ge;
    SGT_OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    SGT_OK(cuGraphLaunch(ge, other));
    SGT_OK(cuStreamSynchronize(other));
    float want[N];
    for (int i = 0; i < N; i++)
        want[i] = 0.5f * x_init[i] + y_init[i];
    assert_y(want);
}
END_TEST

START_TEST(capture_records_async_copy_from_pinned_memory)
{
    /* A captured copy is not run at capture; at replay it copies what the
     * source holds then. */
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    SGT_OK(cuMemsetD32(d, 0, 1024));
    uint32_t *h = NULL;
    SGT_OK(cuMemAllocHost((void **)&h, 4096));
    for (int i = 0; i < 1024; i++)
        h[i] = 1;
    CUstream s = capture_stream();
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    SGT_OK(cuMemcpyHtoDAsync(d, h, 4096, s));
    CUgraph g;
    SGT_OK(cuStreamEndCapture(s, &g));
    uint32_t out[1024];
    SGT_OK(cuMemcpyDtoH(out, d, sizeof out));
    ck_assert_uint_eq(out[0], 0);
    for (int i = 0; i < 1024; i++)
        h[i] = 2;
    CUgraphExec ge;
    SGT_OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    SGT_OK(cuGraphLaunch(ge, s));
    SGT_OK(cuStreamSynchronize(s));
    SGT_OK(cuMemcpyDtoH(out, d, sizeof out));
    for (int i = 0; i < 1024; i++)
        ck_assert_uint_eq(out[i], 2);
}
END_TEST

/* ---- captures across streams ---------------------------------------- */

/* Fork on a, join back: b's work is captured, its dependencies kept. */
static CUgraph capture_fork_join(CUstream a, CUstream b, CUdeviceptr z, CUdeviceptr w,
                                 uint32_t value)
{
    CUevent fork, join;
    SGT_OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    SGT_OK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    SGT_OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    SGT_OK(cuEventRecord(fork, a));
    SGT_OK(cuStreamWaitEvent(b, fork, 0));
    CUstreamCaptureStatus st;
    SGT_OK(cuStreamIsCapturing(b, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    launch_axpy(a, 2.0f);
    sgt_fill_u32(b, z, value, N);
    SGT_OK(cuEventRecord(join, b));
    SGT_OK(cuStreamWaitEvent(a, join, 0));
    SGT_OK(cuMemcpyDtoDAsync(w, z, N * 4, a));
    CUgraph g = NULL;
    SGT_OK(cuStreamEndCapture(a, &g));
    SGT_OK(cuStreamIsCapturing(b, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
    return g;
}

START_TEST(capture_fork_join_across_streams)
{
    sgt_env("SIMGPU_JITTER", "300");
    sgt_init();
    setup_axpy();
    CUdeviceptr z, w;
    SGT_OK(cuMemAlloc(&z, N * 4));
    SGT_OK(cuMemAlloc(&w, N * 4));
    SGT_OK(cuMemsetD32(z, 0, N));
    SGT_OK(cuMemsetD32(w, 0, N));
    CUstream a = capture_stream(), b = capture_stream();
    CUgraph g = capture_fork_join(a, b, z, w, 77);
    /* Nothing ran at capture. */
    uint32_t out[N];
    SGT_OK(cuMemcpyDtoH(out, w, sizeof out));
    ck_assert_uint_eq(out[0], 0);
    /* Three nodes; the copy depends on both branches. */
    size_t n = 0;
    SGT_OK(cuGraphGetNodes(g, NULL, &n));
    ck_assert_uint_eq(n, 3);
    CUgraphNode from[4], to[4];
    size_t ne = 4;
    SGT_OK(cuGraphGetEdges(g, from, to, NULL, &ne));
    ck_assert_uint_eq(ne, 2);
    CUgraphNodeType t;
    SGT_OK(cuGraphNodeGetType(to[0], &t));
    ck_assert_int_eq(t, CU_GRAPH_NODE_TYPE_MEMCPY);
    ck_assert_ptr_eq(to[0], to[1]);
    CUgraphExec ge;
    SGT_OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    for (int rep = 1; rep <= 3; rep++) {
        SGT_OK(cuGraphLaunch(ge, a));
        SGT_OK(cuStreamSynchronize(a));
        SGT_OK(cuMemcpyDtoH(out, w, sizeof out));
        for (int i = 0; i < N; i++)
            ck_assert_uint_eq(out[i], 77);
    }
    float want[N];
    for (int i = 0; i < N; i++) {
        want[i] = y_init[i];
        for (int rep = 0; rep < 3; rep++)
            want[i] = 2.0f * x_init[i] + want[i];
    }
    assert_y(want);
    SGT_OK(cuGraphExecDestroy(ge));
    SGT_OK(cuGraphDestroy(g));
}
END_TEST

START_TEST(capture_unjoined_work_fails_the_capture)
{
    sgt_init();
    setup_axpy();
    CUdeviceptr z;
    SGT_OK(cuMemAlloc(&z, N * 4));
    CUstream a = capture_stream(), b = capture_stream();
    CUevent fork;
    SGT_OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    SGT_OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    SGT_OK(cuEventRecord(fork, a));
    SGT_OK(cuStreamWaitEvent(b, fork, 0));
    launch_axpy(a, 2.0f);
    sgt_fill_u32(b, z, 1, N); /* never joined back into a */
    CUgraph g = (CUgraph)1;
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, cuStreamEndCapture(a, &g));
    ck_assert_ptr_null(g);
    CUstreamCaptureStatus st;
    SGT_OK(cuStreamIsCapturing(b, &st));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
    /* Both streams work normally again, and nothing captured ran. */
    SGT_OK(cuStreamSynchronize(b));
    assert_y(y_init);
}
END_TEST

START_TEST(capture_end_on_a_joined_stream_is_unmatched)
{
    sgt_init();
    CUstream a = capture_stream(), b = capture_stream();
    CUevent fork;
    SGT_OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    SGT_OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    SGT_OK(cuEventRecord(fork, a));
    SGT_OK(cuStreamWaitEvent(b, fork, 0));
    CUgraph g;
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, cuStreamEndCapture(b, &g));
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(a, &g));
}
END_TEST

START_TEST(capture_wait_on_uncaptured_event_is_isolation)
{
    sgt_init();
    setup_axpy();
    CUstream a = capture_stream(), c = capture_stream();
    CUevent before;
    SGT_OK(cuEventCreate(&before, CU_EVENT_DISABLE_TIMING));
    launch_axpy(c, 1.0f);
    SGT_OK(cuEventRecord(before, c));
    SGT_OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, cuStreamWaitEvent(a, before, 0));
    CUgraph g;
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(a, &g));
}
END_TEST

START_TEST(capture_destroying_a_capturing_stream_is_refused)
{
    sgt_init();
    CUstream a = capture_stream(), b = capture_stream();
    CUevent fork, never;
    SGT_OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    SGT_OK(cuEventCreate(&never, CU_EVENT_DISABLE_TIMING));
    SGT_OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    /* A never-recorded event is complete: waiting on it adds nothing. */
    SGT_OK(cuStreamWaitEvent(a, never, 0));
    SGT_OK(cuEventRecord(fork, a));
    SGT_OK(cuStreamWaitEvent(b, fork, 0));
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamDestroy(b));
    CUgraph g;
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(a, &g));
    SGT_OK(cuStreamDestroy(b));
}
END_TEST

START_TEST(capture_external_event_nodes)
{
    sgt_init();
    setup_axpy();
    CUstream a = capture_stream(), c = capture_stream();
    CUevent outside, done;
    SGT_OK(cuEventCreate(&outside, CU_EVENT_DISABLE_TIMING));
    SGT_OK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
    SGT_OK(cuEventRecord(outside, c));
    SGT_OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    SGT_OK(cuStreamWaitEvent(a, outside, CU_EVENT_WAIT_EXTERNAL));
    launch_axpy(a, 1.0f);
    SGT_OK(cuEventRecordWithFlags(done, a, CU_EVENT_RECORD_EXTERNAL));
    CUgraph g;
    SGT_OK(cuStreamEndCapture(a, &g));
    CUgraphNode nodes[3];
    size_t n = 3;
    SGT_OK(cuGraphGetNodes(g, nodes, &n));
    ck_assert_uint_eq(n, 3);
    CUgraphNodeType t;
    SGT_OK(cuGraphNodeGetType(nodes[0], &t));
    ck_assert_int_eq(t, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
    SGT_OK(cuGraphNodeGetType(nodes[1], &t));
    ck_assert_int_eq(t, CU_GRAPH_NODE_TYPE_KERNEL);
    SGT_OK(cuGraphNodeGetType(nodes[2], &t));
    ck_assert_int_eq(t, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
    CUgraphExec ge;
    SGT_OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    SGT_OK(cuGraphLaunch(ge, a));
    /* The replay recorded `done`: waiting for it waits for the kernel. */
    SGT_OK(cuEventSynchronize(done));
    float want[N];
    for (int i = 0; i < N; i++)
        want[i] = 1.0f * x_init[i] + y_init[i];
    assert_y(want);
}
END_TEST

/* In virtual time a copy on a forked lane runs on its copy engine while
 * the origin lane's kernel runs: the replay takes about the longer of the
 * two, where the same work captured on one stream takes their sum. */
static float replay_ms(bool forked)
{
    /* The kernel reads pinned host memory in place and the copy goes
     * device to host: they use different directions of the link. */
    enum { BIG = 64 << 20 };
    CUdeviceptr src, sum;
    void *host, *out;
    SGT_OK(cuMemAlloc(&src, BIG));
    SGT_OK(cuMemAlloc(&sum, 8));
    SGT_OK(cuMemAllocHost(&host, BIG));
    SGT_OK(cuMemAllocHost(&out, BIG));
    SGT_OK(cuMemsetD8(src, 1, BIG));
    CUstream a = capture_stream(), b = capture_stream();
    CUevent fork, join, t0, t1;
    SGT_OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    SGT_OK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    SGT_OK(cuEventCreate(&t0, 0));
    SGT_OK(cuEventCreate(&t1, 0));
    CUstream copier = forked ? b : a;
    SGT_OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    if (forked) {
        SGT_OK(cuEventRecord(fork, a));
        SGT_OK(cuStreamWaitEvent(b, fork, 0));
    }
    sgt_checksum(a, (CUdeviceptr)host, BIG, sum);
    SGT_OK(cuMemcpyDtoHAsync(out, src, BIG, copier));
    if (forked) {
        SGT_OK(cuEventRecord(join, b));
        SGT_OK(cuStreamWaitEvent(a, join, 0));
    }
    CUgraph g;
    SGT_OK(cuStreamEndCapture(a, &g));
    CUgraphExec ge;
    SGT_OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    SGT_OK(cuEventRecord(t0, a));
    SGT_OK(cuGraphLaunch(ge, a));
    SGT_OK(cuEventRecord(t1, a));
    SGT_OK(cuEventSynchronize(t1));
    float ms = 0;
    SGT_OK(cuEventElapsedTime(&ms, t0, t1));
    return ms;
}

START_TEST(capture_replay_overlaps_copy_and_kernel)
{
    sgt_init();
    float linear = replay_ms(false), forked = replay_ms(true);
    ck_assert_msg(forked < 0.75f * linear,
                  "forked replay %.3f ms, linear %.3f ms: the copy did not overlap the kernel",
                  (double)forked, (double)linear);
}
END_TEST

Suite *capture_suite(void)
{
    Suite *s = suite_create("capture");
    sgt_case(s, capture_records_without_running);
    sgt_case(s, capture_graph_launch_replays_each_time);
    sgt_case(s, capture_replays_recorded_arguments);
    sgt_case(s, capture_info_reports_active);
    sgt_loop_case(s, capture_sync_call_invalidates_capture, 0,
                  (int)(sizeof sync_call_names / sizeof *sync_call_names));
    sgt_case(s, capture_relaxed_allows_unsafe_calls);
    sgt_case(s, capture_relaxed_refuses_stream_sync);
    sgt_case(s, capture_global_refuses_unsafe_call_on_other_thread);
    sgt_case(s, capture_thread_relaxed_allows_unsafe_calls);
    sgt_case(s, capture_thread_local_mode_ignores_other_threads_captures);
    sgt_case(s, capture_of_legacy_stream_is_refused);
    sgt_case(s, capture_graph_replays_on_launch_stream);
    sgt_case(s, capture_records_async_copy_from_pinned_memory);
    sgt_case(s, capture_fork_join_across_streams);
    sgt_case(s, capture_unjoined_work_fails_the_capture);
    sgt_case(s, capture_end_on_a_joined_stream_is_unmatched);
    sgt_case(s, capture_wait_on_uncaptured_event_is_isolation);
    sgt_case(s, capture_destroying_a_capturing_stream_is_refused);
    sgt_case(s, capture_external_event_nodes);
    sgt_case(s, capture_replay_overlaps_copy_and_kernel);
    return s;
}

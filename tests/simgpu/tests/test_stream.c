/*
 * test_stream.c: asynchrony and ordering.  Streams run on their own
 * threads; SIMGPU_JITTER delays each operation at random, so only the
 * documented orderings (stream order, events, the legacy default stream)
 * may be relied on, and races that the documentation allows do show up.
 */
#include "sgt.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 20
#define COUNT (256 * 1024) /* u32 elements: 1 MiB */

static int count_wrong(const uint32_t *h, uint32_t want)
{
    int wrong = 0;
    for (size_t i = 0; i < COUNT; i++)
        wrong += h[i] != want;
    return wrong;
}

/* Rounds of: fill on `producer`, then an async copy to pinned memory on
 * `consumer` (waiting on an event first if `wait`).  Returns the number of
 * rounds in which the copy saw a wrong value. */
static int race_rounds(CUstream producer, CUstream consumer, bool wait)
{
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, COUNT * sizeof(uint32_t)));
    SGT_OK(cuMemsetD32(d, 0, COUNT));
    uint32_t *h = NULL;
    SGT_OK(cuMemAllocHost((void **)&h, COUNT * sizeof(uint32_t)));
    CUevent ev;
    SGT_OK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    int bad_rounds = 0;
    for (uint32_t r = 0; r < ROUNDS; r++) {
        uint32_t value = 0x1000u + r;
        memset(h, 0xff, COUNT * sizeof(uint32_t));
        sgt_fill_u32(producer, d, value, COUNT);
        SGT_OK(cuEventRecord(ev, producer));
        if (wait)
            SGT_OK(cuStreamWaitEvent(consumer, ev, 0));
        SGT_OK(cuMemcpyDtoHAsync(h, d, COUNT * sizeof(uint32_t), consumer));
        if (wait) {
            SGT_OK(cuStreamSynchronize(consumer));
        } else {
            SGT_OK(cuCtxSynchronize());
        }
        bad_rounds += count_wrong(h, value) != 0;
    }
    SGT_OK(cuCtxSynchronize());
    return bad_rounds;
}

START_TEST(stream_wait_event_orders_streams_under_jitter)
{
    sgt_env("SIMGPU_JITTER", "2000");
    sgt_init();
    CUstream a, b;
    SGT_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    SGT_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    ck_assert_int_eq(race_rounds(a, b, true), 0);
}
END_TEST

START_TEST(stream_without_wait_races_under_jitter)
{
    /* Proves the asynchrony is real: without the event, the copy on B
     * overtakes the fill on A in some round. */
    sgt_env("SIMGPU_JITTER", "2000");
    sgt_init();
    CUstream a, b;
    SGT_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    SGT_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    ck_assert_int_ge(race_rounds(a, b, false), 1);
}
END_TEST

START_TEST(stream_non_blocking_does_not_wait_for_legacy)
{
    sgt_env("SIMGPU_JITTER", "2000");
    sgt_init();
    CUstream a;
    SGT_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    ck_assert_int_ge(race_rounds(a, CU_STREAM_LEGACY, false), 1);
}
END_TEST

START_TEST(stream_per_thread_does_not_wait_for_blocking)
{
    sgt_env("SIMGPU_JITTER", "2000");
    sgt_init();
    CUstream a;
    SGT_OK(cuStreamCreate(&a, CU_STREAM_DEFAULT));
    ck_assert_int_ge(race_rounds(a, CU_STREAM_PER_THREAD, false), 1);
}
END_TEST

START_TEST(stream_legacy_default_waits_for_blocking)
{
    /* A synchronous copy on the legacy default stream after a kernel on a
     * blocking stream sees the kernel's result. */
    sgt_env("SIMGPU_JITTER", "2000");
    sgt_init();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, COUNT * sizeof(uint32_t)));
    uint32_t *h = malloc(COUNT * sizeof(uint32_t));
    for (uint32_t r = 0; r < ROUNDS; r++) {
        sgt_fill_u32(s, d, 0x2000u + r, COUNT);
        SGT_OK(cuMemcpyDtoH(h, d, COUNT * sizeof(uint32_t)));
        ck_assert_int_eq(count_wrong(h, 0x2000u + r), 0);
    }
    free(h);
}
END_TEST

START_TEST(stream_legacy_default_orders_later_blocking_work)
{
    /* The other direction: work on a blocking stream waits for earlier
     * work on the legacy default stream. */
    sgt_env("SIMGPU_JITTER", "2000");
    sgt_init();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, COUNT * sizeof(uint32_t)));
    uint32_t *h = NULL;
    SGT_OK(cuMemAllocHost((void **)&h, COUNT * sizeof(uint32_t)));
    for (uint32_t r = 0; r < ROUNDS; r++) {
        memset(h, 0xff, COUNT * sizeof(uint32_t));
        sgt_fill_u32(CU_STREAM_LEGACY, d, 0x3000u + r, COUNT);
        SGT_OK(cuMemcpyDtoHAsync(h, d, COUNT * sizeof(uint32_t), s));
        SGT_OK(cuStreamSynchronize(s));
        ck_assert_int_eq(count_wrong(h, 0x3000u + r), 0);
    }
}
END_TEST

START_TEST(event_elapsed_time_measures_kernel)
{
    sgt_env("SIMGPU_KERNEL_NS", "1000000");
    sgt_init();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    CUevent e0, e1;
    SGT_OK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
    SGT_OK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
    SGT_OK(cuEventRecord(e0, s));
    sgt_fill_u32(s, d, 1, 1024);
    SGT_OK(cuEventRecord(e1, s));
    SGT_OK(cuEventSynchronize(e1));
    float ms = -1;
    SGT_OK(cuEventElapsedTime(&ms, e0, e1));
    /* 1 ms of kernel, plus a launch call's few µs of host time. */
    ck_assert_msg(ms >= 1.0f && ms <= 1.02f, "elapsed %f ms, want ~1 ms", ms);
}
END_TEST

START_TEST(event_timing_disabled_refuses_elapsed_time)
{
    sgt_init();
    CUevent e0, e1;
    SGT_OK(cuEventCreate(&e0, CU_EVENT_DISABLE_TIMING));
    SGT_OK(cuEventCreate(&e1, CU_EVENT_DISABLE_TIMING));
    SGT_OK(cuEventRecord(e0, NULL));
    SGT_OK(cuEventRecord(e1, NULL));
    SGT_OK(cuEventSynchronize(e1));
    float ms;
    SGT_EXPECT(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime(&ms, e0, e1));
}
END_TEST

START_TEST(event_query_answers_from_virtual_time)
{
    /* A kernel of one virtual second is not complete right after its
     * launch, whatever the real speed; it is after a synchronize. */
    sgt_env("SIMGPU_KERNEL_NS", "1000000000");
    sgt_init();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    CUevent e;
    SGT_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    sgt_fill_u32(s, d, 1, 1024);
    SGT_OK(cuEventRecord(e, s));
    sgt_sleep_ms(50);
    SGT_EXPECT(CUDA_ERROR_NOT_READY, cuEventQuery(e));
    SGT_EXPECT(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
    SGT_OK(cuEventSynchronize(e));
    SGT_OK(cuEventQuery(e));
    SGT_OK(cuStreamQuery(s));
}
END_TEST

START_TEST(stream_priority_create_keeps_priority)
{
    sgt_init();
    int least = 99, greatest = 99;
    SGT_OK(cuCtxGetStreamPriorityRange(&least, &greatest));
    ck_assert_int_le(greatest, least);
    CUstream hi, lo;
    SGT_OK(cuStreamCreateWithPriority(&hi, CU_STREAM_NON_BLOCKING, greatest));
    SGT_OK(cuStreamCreateWithPriority(&lo, CU_STREAM_NON_BLOCKING, least));
    int p = 99;
    SGT_OK(cuStreamGetPriority(hi, &p));
    ck_assert_int_eq(p, greatest);
    SGT_OK(cuStreamGetPriority(lo, &p));
    ck_assert_int_eq(p, least);
    /* A prioritised stream runs work like any other. */
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    sgt_fill_u32(hi, d, 77, 1024);
    SGT_OK(cuStreamSynchronize(hi));
    uint32_t v = 0;
    SGT_OK(cuMemcpyDtoH(&v, d + 4092, 4));
    ck_assert_uint_eq(v, 77);
}
END_TEST

/* Host functions: each appends its tag; the middle one also records what it
 * sees in pinned memory that the kernel before it wrote. */
static int order[8];
static atomic_int norder;
static volatile uint32_t *seen_mem;
static uint32_t seen_value;

static void CUDA_CB tag_fn(void *arg)
{
    int n = atomic_fetch_add(&norder, 1);
    if (n < 8)
        order[n] = (int)(intptr_t)arg;
    if ((intptr_t)arg == 2)
        seen_value = seen_mem[1023];
}

START_TEST(host_func_runs_in_stream_order)
{
    sgt_env("SIMGPU_JITTER", "2000");
    sgt_init();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    uint32_t *h = NULL;
    SGT_OK(cuMemAllocHost((void **)&h, 4096));
    memset(h, 0, 4096);
    seen_mem = h;
    CUdeviceptr d;
    SGT_OK(cuMemHostGetDevicePointer(&d, h, 0));
    SGT_OK(cuLaunchHostFunc(s, tag_fn, (void *)(intptr_t)1));
    sgt_fill_u32(s, d, 0xfeed, 1024);
    SGT_OK(cuLaunchHostFunc(s, tag_fn, (void *)(intptr_t)2));
    SGT_OK(cuLaunchHostFunc(s, tag_fn, (void *)(intptr_t)3));
    SGT_OK(cuStreamSynchronize(s));
    ck_assert_int_eq(atomic_load(&norder), 3);
    ck_assert_int_eq(order[0], 1);
    ck_assert_int_eq(order[1], 2);
    ck_assert_int_eq(order[2], 3);
    ck_assert_uint_eq(seen_value, 0xfeed);
}
END_TEST

START_TEST(stream_per_thread_default_syncs_with_legacy)
{
    /* The per-thread default stream is a blocking stream: the legacy
     * stream waits for it. */
    sgt_env("SIMGPU_JITTER", "2000");
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, COUNT * sizeof(uint32_t)));
    uint32_t *h = malloc(COUNT * sizeof(uint32_t));
    for (uint32_t r = 0; r < ROUNDS; r++) {
        sgt_fill_u32(CU_STREAM_PER_THREAD, d, 0x4000u + r, COUNT);
        SGT_OK(cuMemcpyDtoH(h, d, COUNT * sizeof(uint32_t)));
        ck_assert_int_eq(count_wrong(h, 0x4000u + r), 0);
    }
    free(h);
}
END_TEST

START_TEST(stream_destroy_lets_queued_work_finish)
{
    /* cuStreamDestroy returns at once; work already issued still runs. */
    sgt_env("SIMGPU_JITTER", "2000");
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, COUNT * sizeof(uint32_t)));
    SGT_OK(cuMemsetD32(d, 0, COUNT));
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    sgt_fill_u32(s, d, 0x5150u, COUNT);
    SGT_OK(cuStreamDestroy(s));
    SGT_OK(cuCtxSynchronize());
    uint32_t *h = malloc(COUNT * sizeof(uint32_t));
    SGT_OK(cuMemcpyDtoH(h, d, COUNT * sizeof(uint32_t)));
    ck_assert_int_eq(count_wrong(h, 0x5150u), 0);
    free(h);
}
END_TEST

static atomic_int stop_syncing;

static void *sync_loop(void *arg)
{
    if (cuCtxSetCurrent(sgt_ctx()) != CUDA_SUCCESS)
        return (void *)1;
    while (!atomic_load(&stop_syncing))
        if (cuCtxSynchronize() != CUDA_SUCCESS)
            return (void *)1;
    return NULL;
}

START_TEST(stream_destroy_during_device_sync_is_safe)
{
    /* Streams created, used and destroyed while another thread keeps
     * synchronizing the device: no crash, no error, no hang. */
    sgt_env("SIMGPU_JITTER", "200");
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    atomic_store(&stop_syncing, 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, sync_loop, NULL), 0);
    for (int i = 0; i < 200; i++) {
        CUstream s;
        SGT_OK(cuStreamCreate(&s, i % 2 ? CU_STREAM_NON_BLOCKING : 0));
        sgt_fill_u32(s, d, (uint32_t)i, 1024);
        SGT_OK(cuStreamDestroy(s));
    }
    atomic_store(&stop_syncing, 1);
    void *ret = NULL;
    pthread_join(t, &ret);
    ck_assert_ptr_null(ret);
    SGT_OK(cuCtxSynchronize());
}
END_TEST

Suite *stream_suite(void)
{
    Suite *s = suite_create("stream");
    sgt_case(s, stream_wait_event_orders_streams_under_jitter);
    sgt_case(s, stream_without_wait_races_under_jitter);
    sgt_case(s, stream_non_blocking_does_not_wait_for_legacy);
    sgt_case(s, stream_per_thread_does_not_wait_for_blocking);
    sgt_case(s, stream_legacy_default_waits_for_blocking);
    sgt_case(s, stream_legacy_default_orders_later_blocking_work);
    sgt_case(s, event_elapsed_time_measures_kernel);
    sgt_case(s, event_timing_disabled_refuses_elapsed_time);
    sgt_case(s, event_query_answers_from_virtual_time);
    sgt_case(s, stream_priority_create_keeps_priority);
    sgt_case(s, host_func_runs_in_stream_order);
    sgt_case(s, stream_per_thread_default_syncs_with_legacy);
    sgt_case(s, stream_destroy_lets_queued_work_finish);
    sgt_case(s, stream_destroy_during_device_sync_is_safe);
    return s;
}

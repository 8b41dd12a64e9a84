/*
 * test_vtime.c: virtual time.  It depends only on the sequence of API calls,
 * never on jitter or thread timing, and follows the README's cost model.
 * Durations are read with events (cuEventElapsedTime) around one operation.
 */
#include "sgt.h"

#include <stdlib.h>
#include <string.h>

#define MIB SGT_MIB

/* The same fixed workload: allocations, copies, kernels on two streams
 * ordered by events, a D2D copy and a final synchronize. */
static void workload_child(void *seed)
{
    sgt_env("SIMGPU_JITTER", "500");
    sgt_env("SIMGPU_SEED", seed);
    sgt_init();
    const size_t n = 1 * MIB;
    CUstream a, b;
    SGT_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    SGT_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CUevent ea, eb;
    SGT_OK(cuEventCreate(&ea, CU_EVENT_DISABLE_TIMING));
    SGT_OK(cuEventCreate(&eb, CU_EVENT_DISABLE_TIMING));
    CUdeviceptr x, y, z, sum;
    SGT_OK(cuMemAlloc(&x, n));
    SGT_OK(cuMemAlloc(&y, n));
    SGT_OK(cuMemAlloc(&z, n));
    SGT_OK(cuMemAlloc(&sum, 8));
    float *h = NULL;
    SGT_OK(cuMemAllocHost((void **)&h, n));
    memset(h, 0, n);
    for (int round = 0; round < 4; round++) {
        SGT_OK(cuMemcpyHtoDAsync(x, h, n, a));
        sgt_fill_u32(a, y, (uint32_t)round, n / 4);
        SGT_OK(cuEventRecord(ea, a));
        SGT_OK(cuStreamWaitEvent(b, ea, 0));
        float alpha = 2.0f;
        uint64_t count = n / 4;
        void *params[] = {&alpha, &x, &y, &count};
        SGT_OK(sgt_launch(sgt_func("sg_axpy_f32"), b, params));
        sgt_checksum(b, y, n, sum);
        SGT_OK(cuMemcpyDtoHAsync(h, y, n, b));
        SGT_OK(cuEventRecord(eb, b));
        SGT_OK(cuStreamWaitEvent(a, eb, 0));
        SGT_OK(cuMemcpyDtoDAsync(z, y, n, a));
    }
    SGT_OK(cuCtxSynchronize());
}

START_TEST(vtime_identical_across_seeds)
{
    char p1[256], p2[256];
    sgt_report_env(p1, sizeof p1, "vt1");
    sgt_child_ok(workload_child, "1");
    sgt_report_env(p2, sizeof p2, "vt2");
    sgt_child_ok(workload_child, "987654321");
    char *j1 = sgt_report_read(p1), *j2 = sgt_report_read(p2);
    uint64_t t1 = sgt_json_u64(j1, "virtual_time_ns");
    uint64_t t2 = sgt_json_u64(j2, "virtual_time_ns");
    ck_assert_uint_gt(t1, 0);
    ck_assert_uint_eq(t1, t2);
    ck_assert_uint_eq(sgt_json_u64(j1, "kernels"), 12);
    ck_assert_uint_eq(sgt_json_u64(j2, "kernels"), 12);
    free(j1);
    free(j2);
}
END_TEST

/* Virtual nanoseconds between two events around `op`. */
static double event_ns(CUstream s, void (*op)(CUstream, void *), void *arg)
{
    CUevent e0, e1;
    SGT_OK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
    SGT_OK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
    SGT_OK(cuStreamSynchronize(s));
    SGT_OK(cuEventRecord(e0, s));
    op(s, arg);
    SGT_OK(cuEventRecord(e1, s));
    SGT_OK(cuEventSynchronize(e1));
    float ms = -1;
    SGT_OK(cuEventElapsedTime(&ms, e0, e1));
    return (double)ms * 1e6;
}

struct copy_arg {
    CUdeviceptr d;
    void *h;
    size_t n;
};

static void h2d_op(CUstream s, void *arg)
{
    struct copy_arg *c = arg;
    SGT_OK(cuMemcpyHtoD(c->d, c->h, c->n));
}

static void d2h_op(CUstream s, void *arg)
{
    struct copy_arg *c = arg;
    SGT_OK(cuMemcpyDtoH(c->h, c->d, c->n));
}

/* Expected ns for `bytes` at `gbps` (10^9 bytes/s); allow up to 10 µs of
 * host-call costs on top. */
static void assert_duration(double ns, double bytes, double gbps,
                            double fixed_ns)
{
    double want = fixed_ns + bytes / gbps;
    ck_assert_msg(ns >= want * 0.999 && ns <= want + 10000.0,
                  "duration %.0f ns, want %.0f ns (+ up to 10 us of calls)", ns,
                  want);
}

START_TEST(vtime_h2d_copy_follows_link_speed)
{
    sgt_init();
    struct copy_arg c = {0, malloc(64 * MIB), 64 * MIB};
    memset(c.h, 1, c.n);
    SGT_OK(cuMemAlloc(&c.d, c.n));
    /* The defaults: 55 GB/s each way (README "Virtual time"). */
    double ns = event_ns(CU_STREAM_LEGACY, h2d_op, &c);
    assert_duration(ns, 64.0 * MIB, 55.0, 0);
    ns = event_ns(CU_STREAM_LEGACY, d2h_op, &c);
    assert_duration(ns, 64.0 * MIB, 55.0, 0);
}
END_TEST

START_TEST(vtime_h2d_copy_follows_configured_speed)
{
    sgt_env("SIMGPU_H2D_GBPS", "25");
    sgt_init();
    struct copy_arg c = {0, malloc(16 * MIB), 16 * MIB};
    memset(c.h, 1, c.n);
    SGT_OK(cuMemAlloc(&c.d, c.n));
    double ns = event_ns(CU_STREAM_LEGACY, h2d_op, &c);
    assert_duration(ns, 16.0 * MIB, 25.0, 0);
}
END_TEST

struct fill_arg {
    CUdeviceptr d;
    size_t bytes;
};

static void fill_op(CUstream s, void *arg)
{
    struct fill_arg *f = arg;
    sgt_fill_u32(s, f->d, 3, f->bytes / 4);
}

/* A VMM range of `size` backed by a handle at `type`, with access. */
static CUdeviceptr vmm_range(CUmemLocationType type, size_t size)
{
    CUdeviceptr p = 0;
    SGT_OK(cuMemAddressReserve(&p, size, 0, 0, 0));
    CUmemAllocationProp prop = sgt_prop(type);
    CUmemGenericAllocationHandle h;
    SGT_OK(cuMemCreate(&h, size, &prop, 0));
    SGT_OK(cuMemMap(p, size, 0, h, 0));
    SGT_OK(sgt_set_access(p, size));
    return p;
}

START_TEST(vtime_kernel_on_host_memory_is_slower)
{
    sgt_init();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    struct fill_arg dev = {vmm_range(CU_MEM_LOCATION_TYPE_DEVICE, 16 * MIB),
                           16 * MIB};
    struct fill_arg host = {vmm_range(CU_MEM_LOCATION_TYPE_HOST, 16 * MIB),
                            16 * MIB};
    double t_dev = event_ns(s, fill_op, &dev);
    double t_host = event_ns(s, fill_op, &host);
    /* KERNEL_NS + bytes / bandwidth: HBM 3000 GB/s, zero-copy 50 GB/s. */
    assert_duration(t_dev, 16.0 * MIB, 3000.0, 2000);
    assert_duration(t_host, 16.0 * MIB, 50.0, 2000);
    ck_assert_msg(t_host > 10 * t_dev, "host %.0f ns vs device %.0f ns",
                  t_host, t_dev);
}
END_TEST

START_TEST(vtime_pinned_memory_kernel_is_zero_copy)
{
    /* cuMemAllocHost memory reached through its device pointer is
     * host-backed too. */
    sgt_init();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    void *h = NULL;
    SGT_OK(cuMemAllocHost(&h, 8 * MIB));
    struct fill_arg f = {0, 8 * MIB};
    SGT_OK(cuMemHostGetDevicePointer(&f.d, h, 0));
    double t = event_ns(s, fill_op, &f);
    assert_duration(t, 8.0 * MIB, 50.0, 2000);
}
END_TEST

/* spillway_copy_if_changed from a device copy to a host-backed home. */
struct homing {
    CUdeviceptr copy, home, fp, changed;
    uint64_t bytes;
};

static void home_op(CUstream s, void *arg)
{
    struct homing *h = arg;
    CUdeviceptr fp_home = h->fp, fp_now = h->fp + 16;
    void *params[] = {&h->copy, &h->home, &h->bytes, &fp_home, &fp_now, &h->changed};
    SGT_OK(sgt_launch(sgt_func("spillway_copy_if_changed"), s, params));
}

/* A write-back's cost is fixed when it is issued: it is charged as a
 * copy home (zero-copy writes, 50 GB/s) when a kernel wrote its source
 * since the last write-back from there, and as an empty kernel
 * otherwise. */
START_TEST(vtime_write_back_charged_after_a_write)
{
    sgt_init();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    struct homing h = {.home = vmm_range(CU_MEM_LOCATION_TYPE_HOST, 8 * MIB), .bytes = 8 * MIB};
    SGT_OK(cuMemAlloc(&h.copy, 8 * MIB));
    SGT_OK(cuMemAlloc(&h.fp, 32));
    SGT_OK(cuMemAlloc(&h.changed, 4));
    SGT_OK(cuMemsetD8(h.fp, 0, 16));
    SGT_OK(cuMemsetD8(h.fp + 16, 1, 16)); /* differ: the kernel copies */
    struct fill_arg f = {h.copy, 8 * MIB};
    fill_op(s, &f);
    assert_duration(event_ns(s, home_op, &h), 8.0 * MIB, 50.0, 2000); /* written */
    assert_duration(event_ns(s, home_op, &h), 0, 50.0, 2000);         /* not since */
    fill_op(s, &f);
    assert_duration(event_ns(s, home_op, &h), 8.0 * MIB, 50.0, 2000); /* written again */
}
END_TEST

struct gemm_arg {
    CUdeviceptr W, X, Y;
    uint32_t rows, cols, batch;
};

static void gemm_op(CUstream s, void *arg)
{
    struct gemm_arg *g = arg;
    void *params[] = {&g->W, &g->X, &g->Y, &g->rows, &g->cols, &g->batch};
    SGT_OK(sgt_launch(sgt_func("sg_gemm_f32"), s, params));
}

START_TEST(vtime_gemm_is_flops_bound)
{
    /* 2*512*512*64 = 33.5 Mflop at 1 TFLOPS = 33.6 us, far above the
     * 1.2 MiB of traffic at HBM speed (0.4 us). */
    sgt_env("SIMGPU_TFLOPS", "1");
    sgt_init();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    struct gemm_arg g = {0, 0, 0, 512, 512, 64};
    SGT_OK(cuMemAlloc(&g.W, (size_t)g.rows * g.cols * 4));
    SGT_OK(cuMemAlloc(&g.X, (size_t)g.batch * g.cols * 4));
    SGT_OK(cuMemAlloc(&g.Y, (size_t)g.batch * g.rows * 4));
    SGT_OK(cuMemsetD32(g.W, 0, (size_t)g.rows * g.cols));
    SGT_OK(cuMemsetD32(g.X, 0, (size_t)g.batch * g.cols));
    double flops = 2.0 * g.rows * g.cols * g.batch;
    double t = event_ns(s, gemm_op, &g);
    double want = 2000 + flops / 1e3; /* 1 TFLOPS = 1000 flop/ns */
    ck_assert_msg(t >= want * 0.999 && t <= want + 10000.0,
                  "gemm %.0f ns, want %.0f ns", t, want);
}
END_TEST

/* ---- engines and stream semantics in virtual time ---------------------- */

struct sized_copy {
    CUdeviceptr d;
    void *h;
    size_t n;
    int kind; /* 0 H2D, 1 D2H, 2 D2D (d2 <- d), 3 kernel (fill of n bytes),
               * 4 kernel reading n bytes of host VMM memory (checksum into d2) */
    CUdeviceptr d2;
};

static void issue_on(CUstream s, struct sized_copy *c)
{
    switch (c->kind) {
    case 0: SGT_OK(cuMemcpyHtoDAsync(c->d, c->h, c->n, s)); break;
    case 1: SGT_OK(cuMemcpyDtoHAsync(c->h, c->d, c->n, s)); break;
    case 2: SGT_OK(cuMemcpyDtoDAsync(c->d2, c->d, c->n, s)); break;
    case 3: sgt_fill_u32(s, c->d, 9, c->n / 4); break;
    default: sgt_checksum(s, c->d, c->n, c->d2); break;
    }
}

/* Virtual ns from a common start to the end of both `a` (on one stream)
 * and `b` (on another), issued back to back. */
static double two_streams_ns(struct sized_copy *a, struct sized_copy *b)
{
    CUstream sa, sb;
    SGT_OK(cuStreamCreate(&sa, CU_STREAM_NON_BLOCKING));
    SGT_OK(cuStreamCreate(&sb, CU_STREAM_NON_BLOCKING));
    CUevent e0, eb, e1;
    SGT_OK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
    SGT_OK(cuEventCreate(&eb, CU_EVENT_DEFAULT));
    SGT_OK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
    SGT_OK(cuEventRecord(e0, sa));
    SGT_OK(cuStreamWaitEvent(sb, e0, 0));
    issue_on(sa, a);
    issue_on(sb, b);
    SGT_OK(cuEventRecord(eb, sb));
    SGT_OK(cuStreamWaitEvent(sa, eb, 0));
    SGT_OK(cuEventRecord(e1, sa));
    SGT_OK(cuEventSynchronize(e1));
    float ms = -1;
    SGT_OK(cuEventElapsedTime(&ms, e0, e1));
    return (double)ms * 1e6;
}

static CUdeviceptr vmm_range(CUmemLocationType type, size_t size);

static struct sized_copy make_op(int kind, size_t n)
{
    struct sized_copy c = {0, NULL, n, kind, 0};
    if (kind == 4) {
        c.d = vmm_range(CU_MEM_LOCATION_TYPE_HOST, n);
        SGT_OK(cuMemAlloc(&c.d2, 8));
        return c;
    }
    SGT_OK(cuMemAlloc(&c.d, n));
    if (kind == 2)
        SGT_OK(cuMemAlloc(&c.d2, n));
    if (kind <= 1)
        SGT_OK(cuMemAllocHost(&c.h, n));
    return c;
}

START_TEST(vtime_same_direction_copies_share_one_engine)
{
    sgt_init();
    struct sized_copy a = make_op(0, 16 * MIB), b = make_op(0, 16 * MIB);
    double ns = two_streams_ns(&a, &b);
    double one = 16.0 * MIB / 55.0;
    ck_assert_msg(ns >= 2 * one * 0.999 && ns <= 2 * one + 20000,
                  "two 16 MiB H2D copies took %.0f ns, want %.0f (serialized)",
                  ns, 2 * one);
}
END_TEST

START_TEST(vtime_opposite_copies_overlap)
{
    sgt_init();
    struct sized_copy a = make_op(0, 16 * MIB), b = make_op(1, 16 * MIB);
    double ns = two_streams_ns(&a, &b);
    double one = 16.0 * MIB / 55.0; /* each at its own cap, 55 GB/s */
    ck_assert_msg(ns >= one * 0.999 && ns <= one + 20000,
                  "H2D + D2H of 16 MiB took %.0f ns, want %.0f (overlapped)", ns,
                  one);
}
END_TEST

START_TEST(vtime_kernels_run_one_at_a_time)
{
    sgt_env("SIMGPU_KERNEL_NS", "1000000");
    sgt_init();
    struct sized_copy a = make_op(3, 4096), b = make_op(3, 4096);
    double ns = two_streams_ns(&a, &b);
    ck_assert_msg(ns >= 2e6 && ns <= 2e6 + 20000,
                  "two 1 ms kernels on two streams took %.0f ns, want 2 ms", ns);
}
END_TEST

START_TEST(vtime_kernel_overlaps_copy)
{
    sgt_env("SIMGPU_KERNEL_NS", "1000000");
    sgt_init();
    struct sized_copy a = make_op(3, 4096), b = make_op(0, 16 * MIB);
    double ns = two_streams_ns(&a, &b);
    ck_assert_msg(ns >= 1e6 && ns <= 1e6 + 20000,
                  "1 ms kernel + 0.31 ms H2D took %.0f ns, want 1 ms", ns);
}
END_TEST

START_TEST(vtime_d2d_copy_uses_compute_engine)
{
    /* 64 MiB at 1500 GB/s = 44.7 us, after (not beside) a 100 us kernel. */
    sgt_env("SIMGPU_KERNEL_NS", "100000");
    sgt_init();
    struct sized_copy a = make_op(3, 4096), b = make_op(2, 64 * MIB);
    double ns = two_streams_ns(&a, &b);
    double want = 100000 + 64.0 * MIB / 1500.0;
    ck_assert_msg(ns >= want * 0.999 && ns <= want + 20000,
                  "kernel + D2D took %.0f ns, want %.0f (serialized)", ns, want);
}
END_TEST

/* A kernel issued after a device-to-device copy that waits on its stream
 * behind a 16 MiB host-to-device copy runs before it, in the time the
 * compute engine is free: a GPU runs other streams' kernels while one
 * stream waits. Before 2026-11-30 the copy held the engine from when it
 * was issued, and the kernel waited the 305 us with it. */
START_TEST(vtime_kernel_runs_in_the_gap_before_a_copy_booked_later)
{
    sgt_init();
    CUstream sa, sb;
    SGT_OK(cuStreamCreate(&sa, CU_STREAM_NON_BLOCKING));
    SGT_OK(cuStreamCreate(&sb, CU_STREAM_NON_BLOCKING));
    struct sized_copy h2d = make_op(0, 16 * MIB), d2d = make_op(2, 4 * MIB);
    struct sized_copy k = make_op(3, 4096);
    CUevent e0, e1, e2;
    SGT_OK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
    SGT_OK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
    SGT_OK(cuEventCreate(&e2, CU_EVENT_DEFAULT));
    SGT_OK(cuEventRecord(e0, sa));
    SGT_OK(cuStreamWaitEvent(sb, e0, 0));
    issue_on(sa, &h2d);
    issue_on(sa, &d2d);
    SGT_OK(cuEventRecord(e2, sa));
    issue_on(sb, &k);
    SGT_OK(cuEventRecord(e1, sb));
    SGT_OK(cuEventSynchronize(e1));
    SGT_OK(cuEventSynchronize(e2));
    float kernel_ms = -1, copies_ms = -1;
    SGT_OK(cuEventElapsedTime(&kernel_ms, e0, e1));
    SGT_OK(cuEventElapsedTime(&copies_ms, e0, e2));
    double copies = 16.0 * MIB / 55.0 + 4.0 * MIB / 1500.0;
    ck_assert_msg(kernel_ms * 1e6 <= 20000,
                  "a kernel beside a copy booked %.0f ns ahead ended at %.0f ns", copies,
                  kernel_ms * 1e6);
    ck_assert_msg(copies_ms * 1e6 >= copies * 0.999 && copies_ms * 1e6 <= copies + 20000,
                  "the copies took %.0f ns, want %.0f", copies_ms * 1e6, copies);
}
END_TEST

/* A marker on `later` after a 1 ms kernel on `earlier` that has really
 * finished: the implicit legacy-stream dependency must still hold in
 * virtual time, whatever the real timing. */
static double implicit_dep_ns(CUstream earlier, CUstream later)
{
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    CUevent e0, e1;
    SGT_OK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
    SGT_OK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
    SGT_OK(cuEventRecord(e0, earlier));
    sgt_fill_u32(earlier, d, 1, 1024);
    sgt_sleep_ms(100); /* the kernel is now really done */
    SGT_OK(cuEventRecord(e1, later));
    SGT_OK(cuEventSynchronize(e1));
    float ms = -1;
    SGT_OK(cuEventElapsedTime(&ms, e0, e1));
    return (double)ms * 1e6;
}

START_TEST(vtime_legacy_stream_waits_for_finished_blocking_work)
{
    sgt_env("SIMGPU_KERNEL_NS", "1000000");
    sgt_init();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    double ns = implicit_dep_ns(s, CU_STREAM_LEGACY);
    ck_assert_msg(ns >= 1e6, "legacy-stream event %.0f ns after a 1 ms kernel "
                             "on a blocking stream, want >= 1 ms", ns);
}
END_TEST

START_TEST(vtime_blocking_stream_waits_for_finished_legacy_work)
{
    sgt_env("SIMGPU_KERNEL_NS", "1000000");
    sgt_init();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    double ns = implicit_dep_ns(CU_STREAM_LEGACY, s);
    ck_assert_msg(ns >= 1e6, "blocking-stream event %.0f ns after a 1 ms kernel "
                             "on the legacy stream, want >= 1 ms", ns);
}
END_TEST


/* ---- the PCIe link, shared by copies and zero-copy reads ---------------- */

static void assert_near(double ns, double want, const char *what)
{
    ck_assert_msg(ns >= want * 0.999 && ns <= want + 20000,
                  "%s took %.0f ns, want %.0f", what, ns, want);
}

START_TEST(vtime_zero_copy_read_shares_link_with_copy)
{
    /* A 16 MiB H2D copy (cap 55 GB/s) and a kernel reading 8 MiB of host
     * memory in place (cap 50 GB/s) on two streams, over a 57 GB/s link.
     * The one issued first keeps its cap; the other gets what is left
     * (README "Virtual time"). The kernel's reads start after its fixed
     * 2 us. */
    sgt_init();
    const double B = 16.0 * MIB, Z = 8.0 * MIB, K0 = 2000;
    const double h2d = 55, zc = 50, link = 57;
    struct sized_copy copy = make_op(0, 16 * MIB), read = make_op(4, 8 * MIB);

    /* Copy first: the kernel reads at 57 - 55 = 2 GB/s until the copy
     * ends, then at 50. */
    double C = B / h2d;
    assert_near(two_streams_ns(&copy, &read), C + (Z - (link - h2d) * (C - K0)) / zc,
                "copy, then a zero-copy read beside it");

    /* Kernel first: the copy runs at 55 until the reads start, at
     * 57 - 50 = 7 while they last, then at 55 again. */
    double R = Z / zc;
    assert_near(two_streams_ns(&read, &copy),
                K0 + R + (B - h2d * K0 - (link - zc) * R) / h2d,
                "a zero-copy read, then a copy beside it");
}
END_TEST

START_TEST(vtime_link_total_is_configurable)
{
    /* With SIMGPU_LINK_GBPS above the two caps together they no longer
     * meet: the pair takes as long as the copy alone. */
    sgt_env("SIMGPU_LINK_GBPS", "90");
    sgt_init();
    struct sized_copy copy = make_op(0, 16 * MIB), read = make_op(4, 8 * MIB);
    assert_near(two_streams_ns(&copy, &read), 16.0 * MIB / 55, "copy beside a read");
}
END_TEST

START_TEST(vtime_copy_alone_is_capped_by_link)
{
    /* Each transfer keeps its own cap, and the link caps it too. */
    sgt_env("SIMGPU_H2D_GBPS", "100");
    sgt_init();
    struct copy_arg c = {0, NULL, 16 * MIB};
    SGT_OK(cuMemAllocHost(&c.h, c.n));
    SGT_OK(cuMemAlloc(&c.d, c.n));
    assert_duration(event_ns(CU_STREAM_LEGACY, h2d_op, &c), 16.0 * MIB, 57.0, 0);
}
END_TEST

START_TEST(vtime_gemm_reads_host_weight_per_tile_row)
{
    /* A 512x1024 host-resident W (2 MiB), read at 50 GB/s as often as
     * cuBLAS read its weight on the H200 (docs/gpu-facts.md): once up to
     * batch 128, twice at 256 and 512, then once per 256 rows; X and Y on
     * the device. Memory-bound: 2*512*1024*4096 flops take 72 us at 60
     * TFLOPS, one read of W 42 us. */
    static const uint32_t batches[] = {128, 129, 256, 512, 1024, 4096};
    static const uint32_t measured[] = {1, 2, 2, 2, 4, 16};
    uint32_t batch = batches[_i], reads = measured[_i];
    sgt_init();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    struct gemm_arg g = {0, 0, 0, 512, 1024, batch};
    size_t wbytes = (size_t)g.rows * g.cols * 4;
    g.W = vmm_range(CU_MEM_LOCATION_TYPE_HOST, wbytes);
    SGT_OK(cuMemAlloc(&g.X, (size_t)batch * g.cols * 4));
    SGT_OK(cuMemAlloc(&g.Y, (size_t)batch * g.rows * 4));
    SGT_OK(cuMemsetD32(g.W, 0, wbytes / 4));
    SGT_OK(cuMemsetD32(g.X, 0, (size_t)batch * g.cols));
    double dev = (double)batch * (g.cols + g.rows) * 4;
    double t = event_ns(s, gemm_op, &g);
    double want = 2000 + reads * (double)wbytes / 50.0 + dev / 3000.0;
    ck_assert_msg(t >= want * 0.999 && t <= want + 10000.0,
                  "gemm of batch %u over a host W: %.0f ns, want %.0f (%u reads)", batch, t,
                  want, reads);
}
END_TEST

/* ---- remapping does not wait for the device ----------------------------- */

START_TEST(vtime_vmm_calls_wait_for_no_device_work)
{
    /* A 1 ms kernel is queued on one stream; an unrelated idle mapping is
     * then unmapped (0) or given access (1). Each returns after its own
     * cost only, as on an H100 and an H200 (docs/gpu-facts.md): an event
     * on an idle stream, recorded right after, is that cost (17 or 24 us)
     * plus the few calls around it after one recorded before the kernel. */
    static const char *const what[] = {"cuMemUnmap", "cuMemSetAccess"};
    static const double cost[] = {17000, 24000};
    sgt_env("SIMGPU_KERNEL_NS", "1000000");
    sgt_init();
    CUdeviceptr busy, idle = vmm_range(CU_MEM_LOCATION_TYPE_DEVICE, 2 * MIB);
    SGT_OK(cuMemAlloc(&busy, 4096));
    CUstream k, quiet;
    SGT_OK(cuStreamCreate(&k, CU_STREAM_NON_BLOCKING));
    SGT_OK(cuStreamCreate(&quiet, CU_STREAM_NON_BLOCKING));
    CUevent e0, e1;
    SGT_OK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
    SGT_OK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
    SGT_OK(cuEventRecord(e0, quiet));
    sgt_fill_u32(k, busy, 1, 16);
    if (_i == 0)
        SGT_OK(cuMemUnmap(idle, 2 * MIB));
    else
        SGT_OK(sgt_set_access(idle, 2 * MIB));
    SGT_OK(cuEventRecord(e1, quiet));
    SGT_OK(cuEventSynchronize(e1));
    float ms = -1;
    SGT_OK(cuEventElapsedTime(&ms, e0, e1));
    double ns = (double)ms * 1e6, want = cost[_i];
    ck_assert_msg(ns >= want * 0.999 && ns <= want + 20000,
                  "%s behind a queued 1 ms kernel returned %.0f ns after it was queued, "
                  "want %.0f", what[_i], ns, want);
    SGT_OK(cuCtxSynchronize());
}
END_TEST

/* ---- host-side call costs (README table), from reports ----------------- */

struct cost_run {
    int launches; /* kernels launched, one function looked up once */
    bool vmm;     /* reserve, create, map, set access, unmap, release */
    CUmemLocationType loc; /* of the handle, with vmm */
    uint64_t mib;          /* its size, with vmm; 0: 2 MiB */
};

static void cost_child(void *arg)
{
    const struct cost_run *c = arg;
    sgt_env("SIMGPU_KERNEL_NS", "1");
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    CUfunction f = sgt_func("sg_fill_u32");
    uint32_t v = 1;
    uint64_t n = 1;
    void *params[] = {&d, &v, &n};
    for (int i = 0; i < c->launches; i++)
        SGT_OK(sgt_launch(f, NULL, params));
    if (c->vmm) {
        const uint64_t size = (c->mib ? c->mib : 2) * MIB;
        CUdeviceptr p;
        SGT_OK(cuMemAddressReserve(&p, size, 0, 0, 0));
        CUmemAllocationProp prop = sgt_prop(c->loc);
        CUmemGenericAllocationHandle h;
        SGT_OK(cuMemCreate(&h, size, &prop, 0));
        SGT_OK(cuMemMap(p, size, 0, h, 0));
        SGT_OK(sgt_set_access(p, size));
        SGT_OK(cuMemUnmap(p, size));
        SGT_OK(cuMemRelease(h));
    }
}

static uint64_t cost_vt(struct cost_run c)
{
    char path[256];
    sgt_report_env(path, sizeof path, "cost");
    sgt_child_ok(cost_child, &c);
    char *json = sgt_report_read(path);
    uint64_t vt = sgt_json_u64(json, "virtual_time_ns");
    free(json);
    return vt;
}

START_TEST(vtime_launch_costs_host_time)
{
    /* Ten more launches of a 1 ns kernel cost ten launch calls (2500 ns). */
    uint64_t t10 = cost_vt((struct cost_run){10, false, 0, 0});
    uint64_t t20 = cost_vt((struct cost_run){20, false, 0, 0});
    ck_assert_uint_eq(t20 - t10, 10 * 2500);
}
END_TEST

START_TEST(vtime_vmm_calls_cost_host_time)
{
    /* The H100's costs (README table): reserve 1 us, map 1.5 us, and
     * create, set access, unmap and release of a device handle 9.2, 24,
     * 17 and 11.6 us; of a host handle 178, 79, 45 and 42.5 us. */
    uint64_t t0 = cost_vt((struct cost_run){0, false, 0, 0});
    uint64_t dev = cost_vt((struct cost_run){0, true, CU_MEM_LOCATION_TYPE_DEVICE, 0});
    uint64_t host = cost_vt((struct cost_run){0, true, CU_MEM_LOCATION_TYPE_HOST, 0});
    ck_assert_uint_eq(dev - t0, 1000 + 9200 + 1500 + 24000 + 17000 + 11600);
    ck_assert_uint_eq(host - t0, 1000 + 178000 + 1500 + 79000 + 45000 + 42500);
}
END_TEST

START_TEST(vtime_host_backed_calls_cost_more_the_bigger_the_handle)
{
    /* A 32 MiB handle: each of create, set access, unmap and release of a
     * host-backed one adds its rate for 30 MiB past the first two (210,
     * 11, 2.4 and 26 us a MiB: the H200's, README table); a device-backed
     * one costs what a 2 MiB one does. */
    uint64_t t0 = cost_vt((struct cost_run){0, false, 0, 0});
    uint64_t dev = cost_vt((struct cost_run){0, true, CU_MEM_LOCATION_TYPE_DEVICE, 32});
    uint64_t host = cost_vt((struct cost_run){0, true, CU_MEM_LOCATION_TYPE_HOST, 32});
    ck_assert_uint_eq(dev - t0, 1000 + 9200 + 1500 + 24000 + 17000 + 11600);
    ck_assert_uint_eq(host - t0, 1000 + 1500 + 178000 + 79000 + 45000 + 42500 +
                                     30 * (210000 + 11000 + 2400 + 26000));
}
END_TEST

/* ---- virtual time never depends on real timing ------------------------- */

struct timing_run {
    int variant;   /* 0: cuStreamSynchronize(NULL); 1: cuMemcpyDtoH */
    bool sleep;    /* let the blocking stream's kernel really finish first */
};

/* A 1 ms kernel on a blocking stream, optionally a real pause, then a
 * legacy-stream step that must wait for the kernel: variant 0, a
 * cuStreamSynchronize(NULL); variant 1, a synchronous 4-byte cuMemcpyDtoH.
 * Then a 16 MiB H2D copy on a non-blocking stream, which starts at the host
 * clock on an otherwise idle engine, so the report shows where the
 * legacy-stream step left the clock. */
static void timing_child(void *arg)
{
    const struct timing_run *t = arg;
    sgt_env("SIMGPU_KERNEL_NS", "1000000");
    /* Up to 50 ms of real delay per operation (never virtual): without the
     * pause the kernel is most likely still running at the next call. */
    sgt_env("SIMGPU_JITTER", "50000");
    sgt_init();
    CUdeviceptr d, big;
    SGT_OK(cuMemAlloc(&d, 4096));
    SGT_OK(cuMemAlloc(&big, 16 * MIB));
    void *pinned = NULL;
    SGT_OK(cuMemAllocHost(&pinned, 16 * MIB));
    CUstream blocking, free_s;
    SGT_OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    SGT_OK(cuStreamCreate(&free_s, CU_STREAM_NON_BLOCKING));
    sgt_fill_u32(blocking, d, 1, 16);
    if (t->sleep)
        sgt_sleep_ms(200);
    if (t->variant == 0) {
        SGT_OK(cuStreamSynchronize(NULL));
    } else {
        uint32_t v = 0;
        SGT_OK(cuMemcpyDtoH(&v, d, 4));
        ck_assert_uint_eq(v, 1);
    }
    SGT_OK(cuMemcpyHtoDAsync(big, pinned, 16 * MIB, free_s));
    SGT_OK(cuCtxSynchronize());
}

static uint64_t timing_vt(int variant, bool sleep)
{
    char path[256];
    struct timing_run t = {variant, sleep};
    sgt_report_env(path, sizeof path, "timing");
    sgt_child_ok(timing_child, &t);
    char *json = sgt_report_read(path);
    uint64_t vt = sgt_json_u64(json, "virtual_time_ns");
    free(json);
    return vt;
}

START_TEST(vtime_independent_of_real_timing)
{
    static const char *const what[] = {"cuStreamSynchronize(NULL)",
                                       "a synchronous cuMemcpyDtoH"};
    uint64_t fast = timing_vt(_i, false), slow = timing_vt(_i, true);
    ck_assert_msg(fast == slow,
                  "%s after a blocking-stream kernel: virtual time %llu ns "
                  "when issued at once, %llu ns after a real 200 ms pause",
                  what[_i], (unsigned long long)fast, (unsigned long long)slow);
    /* 1 ms of kernel, then 16 MiB at 55 GB/s. */
    ck_assert_uint_ge(fast, 1000000 + 16 * MIB / 55);
}
END_TEST

Suite *vtime_suite(void)
{
    Suite *s = suite_create("vtime");
    sgt_case(s, vtime_identical_across_seeds);
    sgt_case(s, vtime_h2d_copy_follows_link_speed);
    sgt_case(s, vtime_h2d_copy_follows_configured_speed);
    sgt_case(s, vtime_kernel_on_host_memory_is_slower);
    sgt_case(s, vtime_pinned_memory_kernel_is_zero_copy);
    sgt_case(s, vtime_gemm_is_flops_bound);
    sgt_case(s, vtime_same_direction_copies_share_one_engine);
    sgt_case(s, vtime_opposite_copies_overlap);
    sgt_case(s, vtime_kernels_run_one_at_a_time);
    sgt_case(s, vtime_kernel_overlaps_copy);
    sgt_case(s, vtime_d2d_copy_uses_compute_engine);
    sgt_case(s, vtime_kernel_runs_in_the_gap_before_a_copy_booked_later);
    sgt_case(s, vtime_legacy_stream_waits_for_finished_blocking_work);
    sgt_case(s, vtime_blocking_stream_waits_for_finished_legacy_work);
    sgt_case(s, vtime_zero_copy_read_shares_link_with_copy);
    sgt_case(s, vtime_link_total_is_configurable);
    sgt_case(s, vtime_copy_alone_is_capped_by_link);
    sgt_case(s, vtime_write_back_charged_after_a_write);
    sgt_loop_case(s, vtime_gemm_reads_host_weight_per_tile_row, 0, 6);
    sgt_loop_case(s, vtime_vmm_calls_wait_for_no_device_work, 0, 2);
    sgt_case(s, vtime_launch_costs_host_time);
    sgt_case(s, vtime_vmm_calls_cost_host_time);
    sgt_case(s, vtime_host_backed_calls_cost_more_the_bigger_the_handle);
    sgt_loop_case(s, vtime_independent_of_real_timing, 0, 2);
    return s;
}

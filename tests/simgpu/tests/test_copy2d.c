/*
 * test_copy2d.c: pitched copies (cuMemcpy2D, cuMemcpy3D) and memsets
 * (cuMemsetD2D*) move the rows and leave the padding alone; bad arguments
 * are refused before anything moves. Graph memory nodes: an allocation
 * captured with cuMemAllocAsync keeps its address for every replay.
 * cuStreamAddCallback runs in stream order; cuStreamUpdateCaptureDependencies
 * rewires a capture; user objects' destructors run once, at the last
 * reference.
 */
#include "sgt.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#define PAD 0xEE

/* Row y of a pitched buffer. */
static unsigned char *row(void *base, size_t pitch, size_t y)
{
    return (unsigned char *)base + y * pitch;
}

/* Rows [0, h) of `got` (pitch gp) hold `want` (pitch wp) for w bytes from
 * byte x; every other byte of the first nbytes of got is `pad`. */
static void assert_rows(const unsigned char *got, size_t gp, size_t nbytes, size_t x, size_t y0,
                        const unsigned char *want, size_t wp, size_t w, size_t h, int pad)
{
    for (size_t i = 0; i < nbytes; i++) {
        size_t y = i / gp, c = i % gp;
        bool in = y >= y0 && y < y0 + h && c >= x && c < x + w;
        int exp = in ? want[(y - y0) * wp + (c - x)] : pad;
        ck_assert_msg(got[i] == exp, "byte %zu (row %zu, col %zu): got 0x%02x, want 0x%02x", i,
                      y, c, got[i], exp);
    }
}

static CUDA_MEMCPY2D copy2d_params(void)
{
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    return c;
}

START_TEST(copy2d_pitched_roundtrip_keeps_padding)
{
    sgt_init();
    enum { W = 40, H = 8, HP = 48, DP = 64, OP = 56 };
    unsigned char src[HP * H], back[OP * (H + 1)], all[DP * H];
    sgt_pattern(src, sizeof src, 7);
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, DP * H));
    SGT_OK(cuMemsetD8(d, PAD, DP * H));
    /* Host (pitch 48) to device (pitch 64), rows landing at byte 8. */
    CUDA_MEMCPY2D c = copy2d_params();
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = src;
    c.srcPitch = HP;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = d;
    c.dstXInBytes = 8;
    c.dstPitch = DP;
    c.WidthInBytes = W;
    c.Height = H;
    SGT_OK(cuMemcpy2D(&c));
    SGT_OK(cuMemcpyDtoH(all, d, sizeof all));
    assert_rows(all, DP, sizeof all, 8, 0, src, HP, W, H, PAD);
    /* Device back to host (pitch 56), one row down, through the
     * per-thread stream's async form. */
    memset(back, PAD, sizeof back);
    CUDA_MEMCPY2D b = copy2d_params();
    b.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    b.srcDevice = d;
    b.srcXInBytes = 8;
    b.srcPitch = DP;
    b.dstMemoryType = CU_MEMORYTYPE_HOST;
    b.dstHost = back;
    b.dstY = 1;
    b.dstPitch = OP;
    b.WidthInBytes = W;
    b.Height = H;
    SGT_OK(cuMemcpy2DAsync(&b, CU_STREAM_PER_THREAD));
    SGT_OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    assert_rows(back, OP, sizeof back, 0, 1, src, HP, W, H, PAD);
    /* Unaligned is the same copy to simgpu. */
    memset(back, PAD, sizeof back);
    b.dstY = 0;
    SGT_OK(cuMemcpy2DUnaligned(&b));
    assert_rows(back, OP, sizeof back, 0, 0, src, HP, W, H, PAD);
    SGT_OK(cuMemFree(d));
}
END_TEST

START_TEST(copy3d_slices_land_in_place)
{
    sgt_init();
    /* A 20x4x3 box from a packed host array into a device volume of pitch
     * 32 and 6 rows per slice, at x 4, y 1, z 0; back through UNIFIED. */
    enum { W = 20, H = 4, D = 3, DP = 32, DH = 6 };
    unsigned char src[W * H * D], vol[DP * DH * D], back[W * H * D];
    sgt_pattern(src, sizeof src, 3);
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, sizeof vol));
    SGT_OK(cuMemsetD8(d, PAD, sizeof vol));
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = src;
    c.srcPitch = W;
    c.srcHeight = H;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = d;
    c.dstXInBytes = 4;
    c.dstY = 1;
    c.dstPitch = DP;
    c.dstHeight = DH;
    c.WidthInBytes = W;
    c.Height = H;
    c.Depth = D;
    SGT_OK(cuMemcpy3D(&c));
    SGT_OK(cuMemcpyDtoH(vol, d, sizeof vol));
    for (int z = 0; z < D; z++)
        assert_rows(vol + z * DP * DH, DP, DP * DH, 4, 1, src + z * W * H, W, W, H, PAD);
    /* Back out, both sides UNIFIED, async on a stream. */
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    memset(back, 0, sizeof back);
    CUDA_MEMCPY3D b;
    memset(&b, 0, sizeof b);
    b.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
    b.srcDevice = d;
    b.srcXInBytes = 4;
    b.srcY = 1;
    b.srcPitch = DP;
    b.srcHeight = DH;
    b.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    b.dstDevice = (CUdeviceptr)back;
    b.dstPitch = W;
    b.dstHeight = H;
    b.WidthInBytes = W;
    b.Height = H;
    b.Depth = D;
    SGT_OK(cuMemcpy3DAsync(&b, s));
    SGT_OK(cuStreamSynchronize(s));
    ck_assert_int_eq(memcmp(back, src, sizeof src), 0);
    SGT_OK(cuMemFree(d));
}
END_TEST

/* _i: 0 cuMemsetD2D8, 1 cuMemsetD2D16, 2 cuMemsetD2D32; each sync, then
 * Async on a stream over the rows' second half. */
START_TEST(memset2d_sets_rows_only)
{
    sgt_init();
    enum { P = 64, H = 5, ROW = 40 };
    static const unsigned elems[] = {1, 2, 4};
    unsigned e = elems[_i];
    size_t width = ROW / e;
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, P * H));
    SGT_OK(cuMemsetD8(d, PAD, P * H));
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    unsigned char want[P * H];
    memset(want, PAD, sizeof want);
    uint32_t v1 = 0xA1B2C3D4u, v2 = 0x11223344u;
    for (int y = 0; y < H; y++)
        for (size_t i = 0; i < ROW; i += e) {
            uint32_t v = i < ROW / 2 ? v1 : v2;
            memcpy(row(want, P, (size_t)y) + i, &v, e);
        }
    switch (_i) {
    case 0:
        SGT_OK(cuMemsetD2D8(d, P, (unsigned char)v1, width, H));
        SGT_OK(cuMemsetD2D8Async(d + ROW / 2, P, (unsigned char)v2, width / 2, H, s));
        break;
    case 1:
        SGT_OK(cuMemsetD2D16(d, P, (unsigned short)v1, width, H));
        SGT_OK(cuMemsetD2D16Async(d + ROW / 2, P, (unsigned short)v2, width / 2, H, s));
        break;
    default:
        SGT_OK(cuMemsetD2D32(d, P, v1, width, H));
        SGT_OK(cuMemsetD2D32Async(d + ROW / 2, P, v2, width / 2, H, s));
        break;
    }
    SGT_OK(cuStreamSynchronize(s));
    unsigned char got[P * H];
    SGT_OK(cuMemcpyDtoH(got, d, sizeof got));
    for (size_t i = 0; i < sizeof got; i++)
        ck_assert_msg(got[i] == want[i], "width %u: byte %zu got 0x%02x want 0x%02x", e, i,
                      got[i], want[i]);
    SGT_OK(cuMemFree(d));
}
END_TEST

START_TEST(copy2d_invalid_arguments_refused)
{
    sgt_init();
    enum { P = 64, H = 4 };
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, P * H));
    SGT_OK(cuMemsetD8(d, PAD, P * H));
    unsigned char host[P * H];
    memset(host, 0x5A, sizeof host);
    CUDA_MEMCPY2D ok = copy2d_params();
    ok.srcMemoryType = CU_MEMORYTYPE_HOST;
    ok.srcHost = host;
    ok.srcPitch = P;
    ok.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    ok.dstDevice = d;
    ok.dstPitch = P;
    ok.WidthInBytes = 32;
    ok.Height = H;
    CUDA_MEMCPY2D c;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D(NULL));
    c = ok, c.WidthInBytes = P + 1; /* wider than both pitches */
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D(&c));
    c = ok, c.srcPitch = 16;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D(&c));
    c = ok, c.srcHost = NULL;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D(&c));
    c = ok, c.dstDevice = 0;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D(&c));
    c = ok, c.dstMemoryType = (CUmemorytype)0;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D(&c));
    c = ok, c.dstMemoryType = CU_MEMORYTYPE_ARRAY; /* simgpu has no arrays */
    SGT_EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemcpy2D(&c));
    /* DEVICE names memory the GPU can reach: pageable host memory is not. */
    c = ok, c.dstDevice = (CUdeviceptr)host;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2DAsync(&c, NULL));
    CUDA_MEMCPY3D t;
    memset(&t, 0, sizeof t);
    t.srcMemoryType = CU_MEMORYTYPE_HOST;
    t.srcHost = host;
    t.srcPitch = P;
    t.srcHeight = 2;
    t.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    t.dstDevice = d;
    t.dstPitch = P;
    t.dstHeight = 2;
    t.WidthInBytes = 16;
    t.Height = 2;
    t.Depth = 2;
    CUDA_MEMCPY3D u = t;
    u.reserved0 = host;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D(&u));
    u = t, u.srcHeight = 1; /* slices shorter than the rows copied */
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D(&u));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D16(d + 1, P, 1, 8, H));   /* misaligned */
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D32(d, 30, 1, 8, H));      /* pitch < row */
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D32(d, 66, 1, 8, H));      /* unaligned pitch */
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D8(0, P, 1, 8, H));
    /* Nothing moved. */
    unsigned char got[P * H];
    SGT_OK(cuMemcpyDtoH(got, d, sizeof got));
    for (size_t i = 0; i < sizeof got; i++)
        ck_assert_uint_eq(got[i], PAD);
    /* The valid form of the same copy does move. */
    SGT_OK(cuMemcpy2D(&ok));
    SGT_OK(cuMemcpyDtoH(got, d, sizeof got));
    assert_rows(got, P, sizeof got, 0, 0, host, P, 32, H, PAD);
    SGT_OK(cuMemFree(d));
}
END_TEST

START_TEST(copy2d_capture_sync_breaks_async_replays)
{
    sgt_init();
    enum { W = 24, H = 6, P = 32 };
    CUdeviceptr a, b;
    SGT_OK(cuMemAlloc(&a, P * H));
    SGT_OK(cuMemAlloc(&b, P * H));
    unsigned char src[P * H], got[P * H];
    sgt_pattern(src, sizeof src, 9);
    SGT_OK(cuMemcpyHtoD(a, src, sizeof src));
    SGT_OK(cuMemsetD8(b, PAD, P * H));
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUDA_MEMCPY2D c = copy2d_params();
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = a;
    c.srcPitch = P;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = b;
    c.dstPitch = P;
    c.WidthInBytes = W;
    c.Height = H;
    /* A synchronous 2D copy during a capture breaks it, as cuMemcpy does. */
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuMemcpy2D(&c));
    CUgraph g = NULL;
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
    /* The async form is recorded, not run, and each replay copies. */
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    SGT_OK(cuMemcpy2DAsync(&c, s));
    SGT_OK(cuMemsetD2D8Async(a, P, 0x42, W, H, s));
    SGT_OK(cuStreamEndCapture(s, &g));
    SGT_OK(cuMemcpyDtoH(got, b, sizeof got));
    for (size_t i = 0; i < sizeof got; i++)
        ck_assert_uint_eq(got[i], PAD);
    size_t n = 0;
    SGT_OK(cuGraphGetNodes(g, NULL, &n));
    ck_assert_uint_eq(n, 2);
    CUgraphNode nodes[2];
    SGT_OK(cuGraphGetNodes(g, nodes, &n));
    CUgraphNodeType ty;
    SGT_OK(cuGraphNodeGetType(nodes[0], &ty));
    ck_assert_int_eq(ty, CU_GRAPH_NODE_TYPE_MEMCPY);
    SGT_OK(cuGraphNodeGetType(nodes[1], &ty));
    ck_assert_int_eq(ty, CU_GRAPH_NODE_TYPE_MEMSET);
    CUgraphExec ge;
    SGT_OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    SGT_OK(cuGraphLaunch(ge, s));
    SGT_OK(cuStreamSynchronize(s));
    SGT_OK(cuMemcpyDtoH(got, b, sizeof got));
    assert_rows(got, P, sizeof got, 0, 0, src, P, W, H, PAD);
    /* The second replay copies what the first one's memset left. */
    SGT_OK(cuGraphLaunch(ge, s));
    SGT_OK(cuStreamSynchronize(s));
    SGT_OK(cuMemcpyDtoH(got, b, sizeof got));
    unsigned char set[P * H];
    memset(set, 0x42, sizeof set);
    assert_rows(got, P, sizeof got, 0, 0, set, P, W, H, PAD);
    SGT_OK(cuGraphExecDestroy(ge));
    SGT_OK(cuGraphDestroy(g));
}
END_TEST

START_TEST(graph_alloc_replays_at_one_address)
{
    sgt_init();
    enum { N = 1024 };
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    uint32_t *out;
    SGT_OK(cuMemAllocHost((void **)&out, N * sizeof *out));
    size_t free0, free1, total;
    SGT_OK(cuMemGetInfo(&free0, &total));
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p = 0;
    SGT_OK(cuMemAllocAsync(&p, N * sizeof *out, s));
    ck_assert_uint_ne(p, 0);
    sgt_fill_u32(s, p, 0xC0FFEE, N);
    SGT_OK(cuMemcpyDtoHAsync(out, p, N * sizeof *out, s));
    SGT_OK(cuMemFreeAsync(p, s));
    CUgraph g = NULL;
    SGT_OK(cuStreamEndCapture(s, &g));
    CUgraphNode nodes[4];
    size_t n = 4;
    SGT_OK(cuGraphGetNodes(g, nodes, &n));
    ck_assert_uint_eq(n, 4);
    static const CUgraphNodeType want[] = {CU_GRAPH_NODE_TYPE_MEM_ALLOC,
                                           CU_GRAPH_NODE_TYPE_KERNEL,
                                           CU_GRAPH_NODE_TYPE_MEMCPY,
                                           CU_GRAPH_NODE_TYPE_MEM_FREE};
    for (int i = 0; i < 4; i++) {
        CUgraphNodeType ty;
        SGT_OK(cuGraphNodeGetType(nodes[i], &ty));
        ck_assert_int_eq(ty, want[i]);
    }
    CUgraphExec ge;
    SGT_OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    for (int rep = 0; rep < 3; rep++) {
        memset(out, 0, N * sizeof *out);
        SGT_OK(cuGraphLaunch(ge, s));
        SGT_OK(cuStreamSynchronize(s));
        for (int i = 0; i < N; i++)
            ck_assert_uint_eq(out[i], 0xC0FFEE);
    }
    SGT_OK(cuCtxSynchronize());
    SGT_OK(cuMemGetInfo(&free1, &total));
    ck_assert_uint_lt(free1, free0); /* the graph's memory, for its life */
    SGT_OK(cuGraphExecDestroy(ge));
    SGT_OK(cuGraphDestroy(g));
    SGT_OK(cuCtxSynchronize());
    SGT_OK(cuMemGetInfo(&free1, &total));
    ck_assert_uint_eq(free1, free0); /* released with the graph and its exec */
    SGT_OK(cuMemFreeHost(out));
}
END_TEST

/* After the graph's free node the address is no longer usable: work that
 * touches it faults, as on a GPU. */
START_TEST(graph_alloc_unusable_after_free_node)
{
    sgt_init();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p = 0;
    SGT_OK(cuMemAllocAsync(&p, 4096, s));
    sgt_fill_u32(s, p, 1, 1024);
    SGT_OK(cuMemFreeAsync(p, s));
    CUgraph g = NULL;
    SGT_OK(cuStreamEndCapture(s, &g));
    CUgraphExec ge;
    SGT_OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    SGT_OK(cuGraphLaunch(ge, s));
    SGT_OK(cuStreamSynchronize(s));
    SGT_FAULTS(sgt_try_fill_u32(s, p, 2, 1024));
}
END_TEST

/* A graph without a free node leaves its allocation live after the launch;
 * a cuMemFreeAsync outside the graph ends it, and the next launch makes it
 * usable again at the same address. */
START_TEST(graph_alloc_freed_outside_graph)
{
    sgt_init();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p = 0;
    SGT_OK(cuMemAllocAsync(&p, 4096, s));
    sgt_fill_u32(s, p, 9, 1024);
    CUgraph g = NULL;
    SGT_OK(cuStreamEndCapture(s, &g));
    CUgraphExec ge;
    SGT_OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    for (int rep = 0; rep < 2; rep++) {
        SGT_OK(cuGraphLaunch(ge, s));
        uint32_t got[1024];
        SGT_OK(cuStreamSynchronize(s));
        SGT_OK(cuMemcpyDtoH(got, p, sizeof got)); /* live after the launch */
        for (int i = 0; i < 1024; i++)
            ck_assert_uint_eq(got[i], 9);
        SGT_OK(cuMemFreeAsync(p, s));
    }
    SGT_OK(cuGraphExecDestroy(ge));
    SGT_OK(cuGraphDestroy(g));
    SGT_OK(cuCtxSynchronize());
}
END_TEST

typedef struct {
    CUstream stream;
    const uint32_t *seen; /* pinned: what the copy before the callback wrote */
    uint32_t value;
    CUresult status;
    CUstream got_stream;
    atomic_int order[2], n;
} cb_state_t;

static void CUDA_CB on_callback(CUstream hs, CUresult status, void *user)
{
    cb_state_t *st = user;
    st->got_stream = hs;
    st->status = status;
    st->value = st->seen[0];
    st->order[atomic_fetch_add(&st->n, 1)] = 1;
}

static void CUDA_CB on_host_func(void *user)
{
    cb_state_t *st = user;
    st->order[atomic_fetch_add(&st->n, 1)] = 2;
}

START_TEST(callback_runs_in_stream_order)
{
    sgt_init();
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    uint32_t *pinned;
    SGT_OK(cuMemAllocHost((void **)&pinned, 4096));
    pinned[0] = 0;
    static cb_state_t st;
    st.seen = pinned;
    st.status = CUDA_ERROR_UNKNOWN;
    sgt_fill_u32(s, d, 77, 1024);
    SGT_OK(cuMemcpyDtoHAsync(pinned, d, 4096, s));
    SGT_OK(cuStreamAddCallback(s, on_callback, &st, 0));
    SGT_OK(cuLaunchHostFunc(s, on_host_func, &st));
    SGT_OK(cuStreamSynchronize(s));
    ck_assert_int_eq(atomic_load(&st.n), 2);
    ck_assert_int_eq(st.order[0], 1);
    ck_assert_int_eq(st.order[1], 2);
    ck_assert_uint_eq(st.value, 77); /* the copy before it had finished */
    ck_assert_ptr_eq(st.got_stream, s);
    ck_assert_int_eq(st.status, CUDA_SUCCESS);
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamAddCallback(s, on_callback, &st, 1));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamAddCallback(s, NULL, &st, 0));
    /* Not capturable here: the capture is refused and broken. */
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamAddCallback(s, on_callback, &st, 0));
    CUgraph g = NULL;
    SGT_EXPECT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
    SGT_OK(cuStreamSynchronize(s));
    ck_assert_int_eq(atomic_load(&st.n), 2);
}
END_TEST

static CUgraphNode only_dep(CUstream s)
{
    CUstreamCaptureStatus cs;
    const CUgraphNode *deps = NULL;
    size_t n = 0;
    SGT_OK(cuStreamGetCaptureInfo(s, &cs, NULL, NULL, &deps, NULL, &n));
    ck_assert_int_eq(cs, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    ck_assert_uint_eq(n, 1);
    return deps[0];
}

static bool has_edge(const CUgraphNode *from, const CUgraphNode *to, size_t n, CUgraphNode a,
                     CUgraphNode b)
{
    for (size_t i = 0; i < n; i++)
        if (from[i] == a && to[i] == b)
            return true;
    return false;
}

START_TEST(update_capture_dependencies_rewires)
{
    sgt_init();
    CUstream s, other;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    SGT_OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4 * 4096));
    SGT_OK(cuMemsetD8(d, 0, 4 * 4096));
    const unsigned set = CU_STREAM_SET_CAPTURE_DEPENDENCIES;
    const unsigned add = CU_STREAM_ADD_CAPTURE_DEPENDENCIES;
    SGT_EXPECT(CUDA_ERROR_ILLEGAL_STATE,
               cuStreamUpdateCaptureDependencies(other, NULL, NULL, 0, set));
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    sgt_fill_u32(s, d, 1, 1024);
    CUgraphNode a = only_dep(s);
    sgt_fill_u32(s, d + 4096, 2, 1024);
    CUgraphNode b = only_dep(s);
    /* c after a alone. */
    SGT_OK(cuStreamUpdateCaptureDependencies(s, &a, NULL, 1, set));
    sgt_fill_u32(s, d + 2 * 4096, 3, 1024);
    CUgraphNode c = only_dep(s);
    /* d after c and b. */
    SGT_OK(cuStreamUpdateCaptureDependencies(s, &b, NULL, 1, add));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamUpdateCaptureDependencies(s, &b, NULL, 1, 7));
    CUgraphNode bogus = (CUgraphNode)&bogus;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE,
               cuStreamUpdateCaptureDependencies(s, &bogus, NULL, 1, add));
    sgt_fill_u32(s, d + 3 * 4096, 4, 1024);
    CUgraphNode dd = only_dep(s);
    CUgraph g = NULL;
    SGT_OK(cuStreamEndCapture(s, &g));
    CUgraphNode from[8], to[8];
    size_t ne = 8;
    SGT_OK(cuGraphGetEdges(g, from, to, NULL, &ne));
    ck_assert_uint_eq(ne, 4);
    ck_assert(has_edge(from, to, ne, a, b));
    ck_assert(has_edge(from, to, ne, a, c));
    ck_assert(has_edge(from, to, ne, c, dd));
    ck_assert(has_edge(from, to, ne, b, dd));
    CUgraphExec ge;
    SGT_OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    SGT_OK(cuGraphLaunch(ge, s));
    SGT_OK(cuStreamSynchronize(s));
    static uint32_t got[4 * 1024];
    SGT_OK(cuMemcpyDtoH(got, d, sizeof got));
    for (int i = 0; i < 4 * 1024; i++)
        ck_assert_uint_eq(got[i], (uint32_t)(i / 1024 + 1));
}
END_TEST

static atomic_int destroyed;

static void CUDA_CB on_destroy(void *p)
{
    atomic_fetch_add(&destroyed, *(int *)p);
}

START_TEST(user_object_destructor_runs_once)
{
    sgt_init();
    static int one = 1;
    atomic_store(&destroyed, 0);
    CUuserObject o;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuUserObjectCreate(&o, &one, on_destroy, 1, 0));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE,
               cuUserObjectCreate(&o, &one, on_destroy, 0, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    SGT_OK(cuUserObjectCreate(&o, &one, on_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    CUgraph g;
    SGT_OK(cuGraphCreate(&g, 0));
    SGT_OK(cuGraphRetainUserObject(g, o, 2, 0));
    SGT_OK(cuUserObjectRetain(o, 1));
    SGT_OK(cuUserObjectRelease(o, 2)); /* the caller's two: the graph's remain */
    SGT_OK(cuGraphReleaseUserObject(g, o, 1));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphReleaseUserObject(g, o, 2)); /* holds one */
    SGT_OK(cuCtxSynchronize());
    ck_assert_int_eq(atomic_load(&destroyed), 0);
    SGT_OK(cuGraphDestroy(g)); /* the graph's last reference */
    SGT_OK(cuCtxSynchronize());
    ck_assert_int_eq(atomic_load(&destroyed), 1);
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuUserObjectRelease(o, 1)); /* gone */
    /* Moved references: the caller's become the graph's. */
    CUuserObject m;
    SGT_OK(cuUserObjectCreate(&m, &one, on_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    SGT_OK(cuGraphCreate(&g, 0));
    SGT_OK(cuGraphRetainUserObject(g, m, 1, CU_GRAPH_USER_OBJECT_MOVE));
    SGT_OK(cuGraphReleaseUserObject(g, m, 1));
    SGT_OK(cuCtxSynchronize());
    ck_assert_int_eq(atomic_load(&destroyed), 2);
    SGT_OK(cuGraphDestroy(g));
    SGT_OK(cuCtxSynchronize());
    ck_assert_int_eq(atomic_load(&destroyed), 2);
}
END_TEST

/* cuGetProcAddress finds each new entry point, per-thread forms too. */
START_TEST(copy2d_entry_points_resolve)
{
    sgt_init();
    static const struct {
        const char *name;
        int version;
        bool pt;
        const char *want;
    } e[] = {
        {"cuMemcpy2D", 3020, false, "cuMemcpy2D_v2"},
        {"cuMemcpy2D", 7000, true, "cuMemcpy2D_v2_ptds"},
        {"cuMemcpy2DUnaligned", 3020, false, "cuMemcpy2DUnaligned_v2"},
        {"cuMemcpy2DAsync", 7000, true, "cuMemcpy2DAsync_v2_ptsz"},
        {"cuMemcpy3D", 12000, false, "cuMemcpy3D_v2"},
        {"cuMemcpy3DAsync", 7000, true, "cuMemcpy3DAsync_v2_ptsz"},
        {"cuMemsetD2D8", 3020, false, "cuMemsetD2D8_v2"},
        {"cuMemsetD2D16", 7000, true, "cuMemsetD2D16_v2_ptds"},
        {"cuMemsetD2D32Async", 3020, false, "cuMemsetD2D32Async"},
        {"cuMemsetD2D32Async", 7000, true, "cuMemsetD2D32Async_ptsz"},
        {"cuStreamAddCallback", 5000, false, "cuStreamAddCallback"},
        {"cuStreamAddCallback", 7000, true, "cuStreamAddCallback_ptsz"},
        {"cuStreamUpdateCaptureDependencies", 11030, false, "cuStreamUpdateCaptureDependencies"},
        {"cuStreamUpdateCaptureDependencies", 12030, false, "cuStreamUpdateCaptureDependencies_v2"},
        {"cuStreamUpdateCaptureDependencies", 12030, true,
         "cuStreamUpdateCaptureDependencies_v2_ptsz"},
        {"cuUserObjectCreate", 11030, false, "cuUserObjectCreate"},
        {"cuUserObjectRetain", 11030, false, "cuUserObjectRetain"},
        {"cuUserObjectRelease", 11030, false, "cuUserObjectRelease"},
        {"cuGraphRetainUserObject", 11030, false, "cuGraphRetainUserObject"},
        {"cuGraphReleaseUserObject", 11030, false, "cuGraphReleaseUserObject"},
    };
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(lib);
    for (size_t i = 0; i < sizeof e / sizeof *e; i++) {
        void *pfn = NULL;
        CUdriverProcAddressQueryResult st;
        SGT_OK(cuGetProcAddress(e[i].name, &pfn, e[i].version,
                                e[i].pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0,
                                &st));
        ck_assert_msg(pfn && pfn == dlsym(lib, e[i].want), "%s@%d gave %p, want %s",
                      e[i].name, e[i].version, pfn, e[i].want);
    }
    void *pfn;
    CUdriverProcAddressQueryResult st;
    SGT_EXPECT(CUDA_ERROR_NOT_FOUND, cuGetProcAddress("cuUserObjectCreate", &pfn, 11020, 0, &st));
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    dlclose(lib);
}
END_TEST

Suite *copy2d_suite(void)
{
    Suite *s = suite_create("copy2d");
    sgt_case(s, copy2d_pitched_roundtrip_keeps_padding);
    sgt_case(s, copy3d_slices_land_in_place);
    sgt_loop_case(s, memset2d_sets_rows_only, 0, 3);
    sgt_case(s, copy2d_invalid_arguments_refused);
    sgt_case(s, copy2d_capture_sync_breaks_async_replays);
    sgt_case(s, graph_alloc_replays_at_one_address);
    sgt_case(s, graph_alloc_unusable_after_free_node);
    sgt_case(s, graph_alloc_freed_outside_graph);
    sgt_case(s, callback_runs_in_stream_order);
    sgt_case(s, update_capture_dependencies_rewires);
    sgt_case(s, user_object_destructor_runs_once);
    sgt_case(s, copy2d_entry_points_resolve);
    return s;
}

/*
 * test_graphedit.c: the explicit graph API and graph updates. Kernel node
 * parameters read back what was launched and, once set, change what a
 * replay computes; an exec's node changes alone; cuGraphExecUpdate takes a
 * graph of the same shape and refuses another, leaving the exec as it
 * was; graphs built node by node (memset, kernel, memcpy, host, child
 * graph) compute the right bytes, in dependency order even when an edge
 * points forward; a cycle is refused; a clone replays the same. Every
 * case reads the memory back.
 */
#include "sgt.h"

#include <dlfcn.h>
#include <string.h>

#define N 1024

static CUstream stream(void)
{
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    return s;
}

static CUdeviceptr zeroed(size_t bytes)
{
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, bytes));
    SGT_OK(cuMemsetD8(d, 0, bytes));
    return d;
}

/* Every one of the first n words of d is want, the next `rest` are 0. */
static void assert_words(CUdeviceptr d, size_t n, uint32_t want, size_t rest)
{
    static uint32_t got[N];
    SGT_OK(cuMemcpyDtoH(got, d, (n + rest) * sizeof *got));
    for (size_t i = 0; i < n + rest; i++)
        ck_assert_msg(got[i] == (i < n ? want : 0), "word %zu: %u, want %u", i, got[i],
                      i < n ? want : 0);
}

/* A graph of one captured sg_fill_u32(d, value, count) launch. */
static CUgraph capture_fill(CUstream s, CUdeviceptr d, uint32_t value, uint64_t count)
{
    CUgraph g;
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    sgt_fill_u32(s, d, value, count);
    SGT_OK(cuStreamEndCapture(s, &g));
    return g;
}

static CUgraphNode only_node(CUgraph g)
{
    CUgraphNode n = NULL;
    size_t count = 1;
    SGT_OK(cuGraphGetNodes(g, &n, &count));
    ck_assert_uint_eq(count, 1);
    return n;
}

static void run(CUgraph g, CUstream s)
{
    CUgraphExec e;
    SGT_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    SGT_OK(cuGraphLaunch(e, s));
    SGT_OK(cuStreamSynchronize(s));
    SGT_OK(cuGraphExecDestroy(e));
}

static CUDA_KERNEL_NODE_PARAMS fill_params(void **args)
{
    return (CUDA_KERNEL_NODE_PARAMS){
        .func = sgt_func("sg_fill_u32"), .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
        .blockDimX = 256, .blockDimY = 1, .blockDimZ = 1, .kernelParams = args,
    };
}

START_TEST(graphedit_kernel_params_round_trip)
{
    sgt_init();
    CUstream s = stream();
    CUdeviceptr d = zeroed(N * 4);
    CUgraph g = capture_fill(s, d, 5, N);
    CUgraphNode n = only_node(g);
    CUDA_KERNEL_NODE_PARAMS p;
    SGT_OK(cuGraphKernelNodeGetParams(n, &p));
    ck_assert_ptr_eq(p.func, sgt_func("sg_fill_u32"));
    ck_assert_uint_eq(p.gridDimX, 1);
    ck_assert_uint_eq(p.blockDimX, 256);
    ck_assert_uint_eq(p.sharedMemBytes, 0);
    ck_assert_uint_eq(*(CUdeviceptr *)p.kernelParams[0], d);
    ck_assert_uint_eq(*(uint32_t *)p.kernelParams[1], 5);
    ck_assert_uint_eq(*(uint64_t *)p.kernelParams[2], N);
    /* New arguments, two of them read from the node's own storage. */
    uint32_t value = 9;
    void *args[] = {p.kernelParams[0], &value, p.kernelParams[2]};
    p.kernelParams = args;
    SGT_OK(cuGraphKernelNodeSetParams(n, &p));
    CUDA_KERNEL_NODE_PARAMS q;
    SGT_OK(cuGraphKernelNodeGetParams(n, &q));
    ck_assert_uint_eq(*(CUdeviceptr *)q.kernelParams[0], d);
    ck_assert_uint_eq(*(uint32_t *)q.kernelParams[1], 9);
    ck_assert_uint_eq(*(uint64_t *)q.kernelParams[2], N);
    /* ... and from a packed buffer (extra), half the words this time. */
    struct { CUdeviceptr dst; uint32_t value; uint64_t count; } buf = {d, 4, N / 2};
    size_t size = sizeof buf;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    CUDA_KERNEL_NODE_PARAMS x = fill_params(NULL);
    x.extra = extra;
    SGT_OK(cuGraphKernelNodeSetParams(n, &x));
    run(g, s);
    assert_words(d, N / 2, 4, N / 2);
    /* A handle that is no function, and a node that is no kernel node. */
    x.func = (CUfunction)&buf;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphKernelNodeSetParams(n, &x));
    CUgraph h;
    CUgraphNode empty;
    SGT_OK(cuGraphCreate(&h, 0));
    SGT_OK(cuGraphAddEmptyNode(&empty, h, NULL, 0));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphKernelNodeGetParams(empty, &q));
    run(g, s); /* the refused set changed nothing */
    assert_words(d, N / 2, 4, N / 2);
}
END_TEST

START_TEST(graphedit_exec_kernel_set_params_changes_only_that_exec)
{
    sgt_init();
    CUstream s = stream();
    CUdeviceptr d = zeroed(N * 4);
    CUgraph g = capture_fill(s, d, 5, N);
    CUgraphNode n = only_node(g);
    CUgraphExec e1, e2;
    SGT_OK(cuGraphInstantiateWithFlags(&e1, g, 0));
    SGT_OK(cuGraphInstantiateWithFlags(&e2, g, 0));
    CUdeviceptr dst = d;
    uint32_t value = 8;
    uint64_t count = N;
    void *args[] = {&dst, &value, &count};
    CUDA_KERNEL_NODE_PARAMS p = fill_params(args);
    SGT_OK(cuGraphExecKernelNodeSetParams(e1, n, &p));
    SGT_OK(cuGraphLaunch(e1, s));
    SGT_OK(cuStreamSynchronize(s));
    assert_words(d, N, 8, 0);
    SGT_OK(cuGraphLaunch(e2, s));
    SGT_OK(cuStreamSynchronize(s));
    assert_words(d, N, 5, 0);
    CUDA_KERNEL_NODE_PARAMS q;
    SGT_OK(cuGraphKernelNodeGetParams(n, &q));
    ck_assert_uint_eq(*(uint32_t *)q.kernelParams[1], 5);
    /* A node of another graph is not the exec's. */
    CUgraph other = capture_fill(s, d, 1, N);
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphExecKernelNodeSetParams(e1, only_node(other), &p));
    SGT_OK(cuGraphLaunch(e1, s));
    SGT_OK(cuStreamSynchronize(s));
    assert_words(d, N, 8, 0);
}
END_TEST

START_TEST(graphedit_exec_update_takes_same_shape)
{
    sgt_init();
    CUstream s = stream();
    CUdeviceptr d1 = zeroed(N * 4), d2 = zeroed(N * 4);
    CUgraph g1 = capture_fill(s, d1, 1, N), g2 = capture_fill(s, d2, 2, N);
    CUgraphExec e;
    SGT_OK(cuGraphInstantiateWithFlags(&e, g1, 0));
    CUgraphExecUpdateResultInfo info;
    SGT_OK(cuGraphExecUpdate(e, g2, &info));
    ck_assert_int_eq(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    SGT_OK(cuGraphLaunch(e, s));
    SGT_OK(cuStreamSynchronize(s));
    assert_words(d2, N, 2, 0);
    assert_words(d1, 0, 0, N);
    /* The exec's node now answers to the new graph's node, not the old. */
    CUdeviceptr dst = d2;
    uint32_t value = 3;
    uint64_t count = N;
    void *args[] = {&dst, &value, &count};
    CUDA_KERNEL_NODE_PARAMS p = fill_params(args);
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphExecKernelNodeSetParams(e, only_node(g1), &p));
    SGT_OK(cuGraphExecKernelNodeSetParams(e, only_node(g2), &p));
    SGT_OK(cuGraphLaunch(e, s));
    SGT_OK(cuStreamSynchronize(s));
    assert_words(d2, N, 3, 0);
    assert_words(d1, 0, 0, N);
}
END_TEST

START_TEST(graphedit_exec_update_refuses_other_shapes)
{
    sgt_init();
    CUstream s = stream();
    CUdeviceptr d = zeroed(N * 4), d2 = zeroed(N * 4);
    CUgraph g = capture_fill(s, d, 1, N);
    CUgraphExec e;
    SGT_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    /* two nodes: the topology changed */
    CUgraph two;
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    sgt_fill_u32(s, d2, 6, N);
    sgt_fill_u32(s, d2, 7, N);
    SGT_OK(cuStreamEndCapture(s, &two));
    CUgraphExecUpdateResultInfo info;
    SGT_EXPECT(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuGraphExecUpdate(e, two, &info));
    ck_assert_int_eq(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    ck_assert_ptr_null(info.errorNode);
    /* one memset node: the node's type changed */
    CUgraph other;
    CUgraphNode m;
    SGT_OK(cuGraphCreate(&other, 0));
    CUDA_MEMSET_NODE_PARAMS mp = {.dst = d2, .value = 6, .elementSize = 4, .width = N, .height = 1};
    SGT_OK(cuGraphAddMemsetNode(&m, other, NULL, 0, &mp, sgt_ctx()));
    SGT_EXPECT(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuGraphExecUpdate(e, other, &info));
    ck_assert_int_eq(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
    ck_assert_ptr_eq(info.errorNode, m);
    /* The exec is unchanged: it fills d, and d2 stays zero. */
    SGT_OK(cuGraphLaunch(e, s));
    SGT_OK(cuStreamSynchronize(s));
    assert_words(d, N, 1, 0);
    assert_words(d2, 0, 0, N);
}
END_TEST

/* x = 2.0f, y = 1.0f by memset nodes; y = 3x + y by a kernel node; y to
 * host by a memcpy node. Returns the graph; *out receives the copy. */
static CUgraph build_axpy(CUdeviceptr x, CUdeviceptr y, float *out)
{
    static float a = 3.0f;
    static uint64_t n = N;
    static CUdeviceptr px, py;
    px = x, py = y;
    CUgraph g;
    CUgraphNode mx, my, k, c;
    SGT_OK(cuGraphCreate(&g, 0));
    float two = 2.0f, one = 1.0f;
    CUDA_MEMSET_NODE_PARAMS m = {.dst = x, .elementSize = 4, .width = N, .height = 1};
    memcpy(&m.value, &two, 4);
    SGT_OK(cuGraphAddMemsetNode(&mx, g, NULL, 0, &m, sgt_ctx()));
    /* y as two rows of N/2, back to back */
    m = (CUDA_MEMSET_NODE_PARAMS){.dst = y, .pitch = N / 2 * 4, .elementSize = 4,
                                  .width = N / 2, .height = 2};
    memcpy(&m.value, &one, 4);
    SGT_OK(cuGraphAddMemsetNode(&my, g, NULL, 0, &m, sgt_ctx()));
    void *args[] = {&a, &px, &py, &n};
    CUDA_KERNEL_NODE_PARAMS kp = {
        .func = sgt_func("sg_axpy_f32"), .gridDimX = 4, .gridDimY = 1, .gridDimZ = 1,
        .blockDimX = 256, .blockDimY = 1, .blockDimZ = 1, .kernelParams = args,
    };
    CUgraphNode both[] = {mx, my};
    SGT_OK(cuGraphAddKernelNode(&k, g, both, 2, &kp));
    CUDA_MEMCPY3D cp = {
        .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = y,
        .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = out,
        .WidthInBytes = N * sizeof(float), .Height = 1, .Depth = 1,
    };
    SGT_OK(cuGraphAddMemcpyNode(&c, g, &k, 1, &cp, sgt_ctx()));
    return g;
}

static void assert_sevens(const float *out)
{
    for (int i = 0; i < N; i++)
        ck_assert_msg(out[i] == 7.0f, "y[%d] = %g, want 7", i, (double)out[i]);
}

START_TEST(graphedit_built_graph_computes)
{
    sgt_init();
    CUstream s = stream();
    CUdeviceptr x = zeroed(N * 4), y = zeroed(N * 4);
    static float out[N];
    CUgraph g = build_axpy(x, y, out);
    size_t count = 0;
    SGT_OK(cuGraphGetNodes(g, NULL, &count));
    ck_assert_uint_eq(count, 4);
    CUgraphExec e;
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD,
                                        .hUploadStream = s};
    SGT_OK(cuGraphInstantiateWithParams(&e, g, &ip));
    ck_assert_int_eq(ip.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    SGT_OK(cuGraphUpload(e, s));
    SGT_OK(cuGraphLaunch(e, s));
    SGT_OK(cuStreamSynchronize(s));
    assert_sevens(out);
    /* Replays run it again from the memsets: still 7. */
    memset(out, 0, sizeof out);
    SGT_OK(cuGraphLaunch(e, s));
    SGT_OK(cuStreamSynchronize(s));
    assert_sevens(out);
    /* A pitched 2D memset is not modelled; element size 3 is no size. */
    CUgraphNode m;
    CUDA_MEMSET_NODE_PARAMS mp = {.dst = x, .pitch = 1024, .elementSize = 4, .width = 4,
                                  .height = 2};
    SGT_EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuGraphAddMemsetNode(&m, g, NULL, 0, &mp, sgt_ctx()));
    mp = (CUDA_MEMSET_NODE_PARAMS){.dst = x, .elementSize = 3, .width = 4, .height = 1};
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddMemsetNode(&m, g, NULL, 0, &mp, sgt_ctx()));
}
END_TEST

START_TEST(graphedit_forward_dependencies_are_ordered)
{
    /* Added copy, fill, memset, in that order; the edges say memset ->
     * fill -> copy. In array order the copy would read zeros and the
     * memset would clear the fill. */
    sgt_init();
    CUstream s = stream();
    CUdeviceptr d = zeroed(N * 4);
    SGT_OK(cuMemsetD32(d, 0xdead, N));
    static uint32_t out[N];
    CUgraph g;
    CUgraphNode c, k, m;
    SGT_OK(cuGraphCreate(&g, 0));
    CUDA_MEMCPY3D cp = {
        .srcMemoryType = CU_MEMORYTYPE_UNIFIED, .srcDevice = d,
        .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = out,
        .WidthInBytes = sizeof out, .Height = 1, .Depth = 1,
    };
    SGT_OK(cuGraphAddMemcpyNode(&c, g, NULL, 0, &cp, sgt_ctx()));
    CUdeviceptr dst = d;
    uint32_t value = 5;
    uint64_t count = N / 2;
    void *args[] = {&dst, &value, &count};
    CUDA_KERNEL_NODE_PARAMS kp = fill_params(args);
    SGT_OK(cuGraphAddKernelNode(&k, g, NULL, 0, &kp));
    CUDA_MEMSET_NODE_PARAMS mp = {.dst = d, .elementSize = 1, .width = N * 4, .height = 1};
    SGT_OK(cuGraphAddMemsetNode(&m, g, NULL, 0, &mp, sgt_ctx()));
    CUgraphNode from[] = {m, k}, to[] = {k, c};
    SGT_OK(cuGraphAddDependencies(g, from, to, NULL, 2));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddDependencies(g, from, to, NULL, 1));
    size_t edges = 0;
    SGT_OK(cuGraphGetEdges(g, NULL, NULL, NULL, &edges));
    ck_assert_uint_eq(edges, 2);
    run(g, s);
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(out[i], i < N / 2 ? 5 : 0);
}
END_TEST

START_TEST(graphedit_cycle_is_refused)
{
    sgt_init();
    CUstream s = stream();
    CUdeviceptr d = zeroed(N * 4);
    CUgraph g;
    CUgraphNode a, b;
    SGT_OK(cuGraphCreate(&g, 0));
    CUDA_MEMSET_NODE_PARAMS mp = {.dst = d, .value = 1, .elementSize = 4, .width = N, .height = 1};
    SGT_OK(cuGraphAddMemsetNode(&a, g, NULL, 0, &mp, sgt_ctx()));
    CUdeviceptr dst = d;
    uint32_t value = 2;
    uint64_t count = N;
    void *args[] = {&dst, &value, &count};
    CUDA_KERNEL_NODE_PARAMS kp = fill_params(args);
    SGT_OK(cuGraphAddKernelNode(&b, g, &a, 1, &kp));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddDependencies(g, &a, &b, NULL, 1)); /* exists */
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddDependencies(g, &a, &a, NULL, 1)); /* itself */
    SGT_OK(cuGraphAddDependencies(g, &b, &a, NULL, 1));
    CUgraphExec e = NULL;
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiateWithFlags(&e, g, 0));
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {0};
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiateWithParams(&e, g, &ip));
    ck_assert_int_eq(ip.result_out, CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE);
    SGT_OK(cuCtxSynchronize());
    assert_words(d, 0, 0, N); /* nothing ran */
    /* Without the cycle (a fresh graph of the same nodes) it runs. */
    CUgraph ok;
    SGT_OK(cuGraphCreate(&ok, 0));
    SGT_OK(cuGraphAddMemsetNode(&a, ok, NULL, 0, &mp, sgt_ctx()));
    SGT_OK(cuGraphAddKernelNode(&b, ok, &a, 1, &kp));
    run(ok, s);
    assert_words(d, N, 2, 0);
}
END_TEST

START_TEST(graphedit_clone_replays_the_same)
{
    sgt_init();
    CUstream s = stream();
    CUdeviceptr x = zeroed(N * 4), y = zeroed(N * 4);
    static float out[N];
    CUgraph g = build_axpy(x, y, out), c;
    SGT_OK(cuGraphClone(&c, g));
    CUgraphNode gn[4], cn[4];
    size_t n1 = 4, n2 = 4;
    SGT_OK(cuGraphGetNodes(g, gn, &n1));
    SGT_OK(cuGraphGetNodes(c, cn, &n2));
    ck_assert_uint_eq(n1, n2);
    for (int i = 0; i < 4; i++) {
        CUgraphNodeType t1, t2;
        ck_assert_ptr_ne(gn[i], cn[i]);
        SGT_OK(cuGraphNodeGetType(gn[i], &t1));
        SGT_OK(cuGraphNodeGetType(cn[i], &t2));
        ck_assert_int_eq(t1, t2);
    }
    SGT_OK(cuGraphDestroy(g));
    run(c, s);
    assert_sevens(out);
}
END_TEST

static void CUDA_CB bump(void *p)
{
    ++*(int *)p;
}

START_TEST(graphedit_child_graph_and_host_node)
{
    sgt_init();
    CUstream s = stream();
    CUdeviceptr d = zeroed(N * 4);
    CUgraph child = capture_fill(s, d, 4, N), g;
    static uint32_t out[N];
    static int calls;
    CUgraphNode m, ch, c, h;
    SGT_OK(cuGraphCreate(&g, 0));
    CUDA_MEMSET_NODE_PARAMS mp = {.dst = d, .value = 9, .elementSize = 4, .width = N, .height = 1};
    SGT_OK(cuGraphAddMemsetNode(&m, g, NULL, 0, &mp, sgt_ctx()));
    SGT_OK(cuGraphAddChildGraphNode(&ch, g, &m, 1, child));
    CUgraphNodeType t;
    SGT_OK(cuGraphNodeGetType(ch, &t));
    ck_assert_int_eq(t, CU_GRAPH_NODE_TYPE_GRAPH);
    CUDA_MEMCPY3D cp = {
        .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = d,
        .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = out,
        .WidthInBytes = sizeof out, .Height = 1, .Depth = 1,
    };
    SGT_OK(cuGraphAddMemcpyNode(&c, g, &ch, 1, &cp, sgt_ctx()));
    CUDA_HOST_NODE_PARAMS hp = {.fn = bump, .userData = &calls};
    SGT_OK(cuGraphAddHostNode(&h, g, &c, 1, &hp));
    SGT_EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddChildGraphNode(&ch, g, NULL, 0, g));
    run(g, s);
    ck_assert_int_eq(calls, 1);
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(out[i], 4);
}
END_TEST

START_TEST(graphedit_memset_params_exec_and_graph)
{
    sgt_init();
    CUstream s = stream();
    CUdeviceptr d = zeroed(N * 4);
    CUgraph g;
    CUgraphNode m;
    SGT_OK(cuGraphCreate(&g, 0));
    CUDA_MEMSET_NODE_PARAMS mp = {.dst = d, .value = 1, .elementSize = 4, .width = N, .height = 1};
    SGT_OK(cuGraphAddMemsetNode(&m, g, NULL, 0, &mp, sgt_ctx()));
    CUgraphExec e;
    SGT_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CUDA_MEMSET_NODE_PARAMS q;
    SGT_OK(cuGraphMemsetNodeGetParams(m, &q));
    ck_assert_uint_eq(q.dst, d);
    ck_assert_uint_eq(q.value, 1);
    ck_assert_uint_eq(q.elementSize, 4);
    ck_assert_uint_eq(q.width * q.height, N);
    /* the exec's copy: half the words, another value */
    mp.value = 2;
    mp.width = N / 2;
    SGT_OK(cuGraphExecMemsetNodeSetParams(e, m, &mp, sgt_ctx()));
    SGT_OK(cuGraphLaunch(e, s));
    SGT_OK(cuStreamSynchronize(s));
    assert_words(d, N / 2, 2, N / 2);
    /* the graph's node is unchanged: a fresh exec fills all with 1 */
    run(g, s);
    assert_words(d, N, 1, 0);
    mp.value = 3;
    SGT_OK(cuGraphMemsetNodeSetParams(m, &mp));
    run(g, s);
    static uint32_t got[N];
    SGT_OK(cuMemcpyDtoH(got, d, sizeof got));
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(got[i], i < N / 2 ? 3 : 1);
}
END_TEST

START_TEST(graphedit_memcpy_node_params)
{
    sgt_init();
    CUstream s = stream();
    CUdeviceptr a = zeroed(N * 4), b = zeroed(N * 4);
    SGT_OK(cuMemsetD32(a, 0xa, N));
    SGT_OK(cuMemsetD32(b, 0xb, N));
    static uint32_t out[N];
    CUgraph g;
    CUgraphNode c;
    SGT_OK(cuGraphCreate(&g, 0));
    CUDA_MEMCPY3D cp = {
        .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = a,
        .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = out,
        .WidthInBytes = sizeof out, .Height = 1, .Depth = 1,
    };
    SGT_OK(cuGraphAddMemcpyNode(&c, g, NULL, 0, &cp, sgt_ctx()));
    CUDA_MEMCPY3D q;
    SGT_OK(cuGraphMemcpyNodeGetParams(c, &q));
    ck_assert_uint_eq(q.srcDevice, a);
    ck_assert_ptr_eq(q.dstHost, out);
    ck_assert_uint_eq(q.WidthInBytes * q.Height * q.Depth, sizeof out);
    CUgraphExec e;
    SGT_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    cp.srcDevice = b;
    SGT_OK(cuGraphExecMemcpyNodeSetParams(e, c, &cp, sgt_ctx()));
    SGT_OK(cuGraphLaunch(e, s));
    SGT_OK(cuStreamSynchronize(s));
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(out[i], 0xb);
    run(g, s); /* the graph still copies a */
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(out[i], 0xa);
    /* A pitched 2D copy is not modelled. */
    cp.Height = 2;
    cp.WidthInBytes = 16;
    cp.srcPitch = 64;
    cp.dstPitch = 64;
    SGT_EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuGraphMemcpyNodeSetParams(c, &cp));
}
END_TEST

START_TEST(graphedit_built_node_faults_on_freed_memory)
{
    /* Built nodes are checked at replay like captured ones. */
    sgt_init();
    CUstream s = stream();
    CUdeviceptr d = zeroed(N * 4);
    CUgraph g;
    CUgraphNode m;
    SGT_OK(cuGraphCreate(&g, 0));
    CUDA_MEMSET_NODE_PARAMS mp = {.dst = d, .value = 1, .elementSize = 4, .width = N, .height = 1};
    SGT_OK(cuGraphAddMemsetNode(&m, g, NULL, 0, &mp, sgt_ctx()));
    CUgraphExec e;
    SGT_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    SGT_OK(cuGraphLaunch(e, s));
    SGT_OK(cuStreamSynchronize(s));
    assert_words(d, N, 1, 0);
    SGT_OK(cuMemFree(d));
    SGT_OK(cuGraphLaunch(e, s));
    SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(s));
}
END_TEST

START_TEST(graphedit_procaddr_finds_the_new_calls)
{
    sgt_init();
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    ck_assert_ptr_nonnull(lib);
    static const struct {
        const char *name;
        int version;
        cuuint64_t flags;
        const char *want;
    } cases[] = {
        {"cuGraphKernelNodeGetParams", 11000, 0, "cuGraphKernelNodeGetParams"},
        {"cuGraphKernelNodeGetParams", 12000, 0, "cuGraphKernelNodeGetParams_v2"},
        {"cuGraphExecUpdate", 11020, 0, "cuGraphExecUpdate"},
        {"cuGraphExecUpdate", 13000, 0, "cuGraphExecUpdate_v2"},
        {"cuGraphAddDependencies", 12000, 0, "cuGraphAddDependencies"},
        {"cuGraphAddDependencies", 12030, 0, "cuGraphAddDependencies_v2"},
        {"cuGraphAddKernelNode", 12000, 0, "cuGraphAddKernelNode_v2"},
        {"cuGraphInstantiateWithParams", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
         "cuGraphInstantiateWithParams_ptsz"},
        {"cuGraphUpload", 12000, 0, "cuGraphUpload"},
        {"cuGraphClone", 12000, 0, "cuGraphClone"},
        {"cuGraphExecMemsetNodeSetParams", 12000, 0, "cuGraphExecMemsetNodeSetParams"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        void *pfn = NULL;
        SGT_OK(cuGetProcAddress(cases[i].name, &pfn, cases[i].version, cases[i].flags, NULL));
        ck_assert_msg(pfn == dlsym(lib, cases[i].want), "%s %d: not %s", cases[i].name,
                      cases[i].version, cases[i].want);
    }
    /* And the v1 form answers as the v2 does, for a real graph. */
    CUstream s = stream();
    CUdeviceptr d = zeroed(N * 4);
    CUgraph g = capture_fill(s, d, 6, N);
    typedef CUresult (*get_v1_t)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v1 *);
    get_v1_t get_v1 = (get_v1_t)dlsym(lib, "cuGraphKernelNodeGetParams");
    CUDA_KERNEL_NODE_PARAMS_v1 p1;
    SGT_OK(get_v1(only_node(g), &p1));
    ck_assert_ptr_eq(p1.func, sgt_func("sg_fill_u32"));
    ck_assert_uint_eq(*(uint32_t *)p1.kernelParams[1], 6);
    run(g, s);
    assert_words(d, N, 6, 0);
}
END_TEST

Suite *graphedit_suite(void)
{
    Suite *s = suite_create("graphedit");
    sgt_case(s, graphedit_kernel_params_round_trip);
    sgt_case(s, graphedit_exec_kernel_set_params_changes_only_that_exec);
    sgt_case(s, graphedit_exec_update_takes_same_shape);
    sgt_case(s, graphedit_exec_update_refuses_other_shapes);
    sgt_case(s, graphedit_built_graph_computes);
    sgt_case(s, graphedit_forward_dependencies_are_ordered);
    sgt_case(s, graphedit_cycle_is_refused);
    sgt_case(s, graphedit_clone_replays_the_same);
    sgt_case(s, graphedit_child_graph_and_host_node);
    sgt_case(s, graphedit_memset_params_exec_and_graph);
    sgt_case(s, graphedit_memcpy_node_params);
    sgt_case(s, graphedit_built_node_faults_on_freed_memory);
    sgt_case(s, graphedit_procaddr_finds_the_new_calls);
    return s;
}

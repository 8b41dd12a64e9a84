/*
 * Kernel nodes given arguments after a capture: cuGraphKernelNodeSetParams,
 * cuGraphExecKernelNodeSetParams, cuGraphAddKernelNode, and the generic
 * cuGraphNodeSetParams, cuGraphExecNodeSetParams and cuGraphAddNode.
 *
 * A program changes a node after instantiation (llama.cpp once patched a
 * copy kernel's destination every token) with pointers of its own: home
 * addresses, read and written in place. That is always right: a graph's
 * window copy serves only the launch it was made for, and each fill takes
 * home's fingerprint anew (window_use.c, sw_window_use, and window_copy.c, sw_win_fill), so a node
 * that writes home in place is followed by fresh copies, never stale ones.
 *
 * What can go wrong is a window address. cuGraphKernelNodeGetParams hands
 * out the arguments a capture rewrote; set on another node, or on a new
 * one, such a word reaches whatever the window holds when that node runs.
 * A node may keep the window words it has (read back, one argument
 * changed, set again: the fill before it still makes them right). A word
 * it does not hold is refused with CUDA_ERROR_INVALID_VALUE, and the log
 * says why, rather than let a kernel run on another allocation's bytes.
 *
 * cuGraphExecUpdate is not wrapped: it takes every node from a graph whose
 * kernel nodes were captured, with that graph's own copies, or passed the
 * check here.
 */
#include "api.h"

/* Window words a node's arguments may hold; more are not remembered, so
 * a node with more could be refused what it had (never given what it had
 * not). */
#define HELD_MAX 64

typedef struct {
    uint64_t held[HELD_MAX];
    int nheld;
    uint64_t foreign; /* the first window word not held, 0: none */
} words_t;

static void collect(uint64_t word, void *arg)
{
    words_t *w = arg;
    if (w->nheld < HELD_MAX && sw_window_holds(word))
        w->held[w->nheld++] = word;
}

static void compare(uint64_t word, void *arg)
{
    words_t *w = arg;
    if (w->foreign || !sw_window_holds(word))
        return;
    for (int i = 0; i < w->nheld; i++)
        if (w->held[i] == word)
            return;
    w->foreign = word;
}

/* Calls hit for each pointer-sized word of a kernel's arguments, given as
 * kernelParams or as an `extra` buffer. false when f's layout is unknown:
 * spillway then rewrote none of its launches either. */
static bool scan(CUfunction f, void **params, void **extra, void (*hit)(uint64_t, void *),
                 words_t *w)
{
    const sw_layout_t *l = f ? sw_layout(f) : NULL;
    const void *buf = NULL;
    size_t len = 0;
    if (!l)
        return false;
    if (params)
        sw_scan_args(l, params, NULL, 0, hit, w);
    else if (extra && sw_extra_buffer(extra, &buf, &len))
        sw_scan_args(l, NULL, buf, len, hit, w);
    return true;
}

/* CUDA_SUCCESS when the new arguments name no window address that node
 * `was` (NULL: a new node) does not hold already; else
 * CUDA_ERROR_INVALID_VALUE, said in the log: the caller then changes
 * nothing. */
CUresult sw_graph_kernel_check(const char *call, CUfunction func, CUkernel kern, void **params,
                               void **extra, CUgraphNode was)
{
    if (!sw_window_busy())
        return CUDA_SUCCESS; /* no window address was ever handed out */
    words_t w = {0};
    CUDA_KERNEL_NODE_PARAMS old;
    /* Held shared, so that no window is released and no layout freed
     * while they are read: both happen under the gate held exclusively. */
    sw_gate_rd_always();
    if (was && SW_CALL(cuGraphKernelNodeGetParams_v2, (was, &old)) == CUDA_SUCCESS)
        scan(old.func ? old.func : (CUfunction)old.kern, old.kernelParams, old.extra, collect, &w);
    bool refused = scan(func ? func : (CUfunction)kern, params, extra, compare, &w) && w.foreign;
    sw_gate_unrd();
    if (!refused)
        return CUDA_SUCCESS;
    sw_error("%s: argument 0x%llx is an address in spillway's streaming window, read from "
             "another graph node's parameters; it would reach whatever the window holds when "
             "this node runs, so it is refused (CUDA_ERROR_INVALID_VALUE). Give the node the "
             "program's own pointers",
             call, (unsigned long long)w.foreign);
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult sw_graph_node_check(const char *call, const CUgraphNodeParams *p, CUgraphNode was)
{
    if (!p || p->type != CU_GRAPH_NODE_TYPE_KERNEL)
        return CUDA_SUCCESS;
    const CUDA_KERNEL_NODE_PARAMS_v3 *k = &p->kernel;
    return sw_graph_kernel_check(call, k->func, k->kern, k->kernelParams, k->extra, was);
}

/*
 * Building graphs explicitly: cuGraphAdd*Node (kernel, memcpy, memset,
 * empty, host, child graph), cuGraphAddDependencies, cuGraphClone,
 * cuGraphInstantiateWithParams and cuGraphUpload; and the handle lookups
 * sg_graphparams.c shares.
 *
 * A node added here is an sg_node_t like a captured one: one op (kernel,
 * copy, memset, host function, marker) with the ranges it touches, so a
 * replay checks it for races and faults as it does captured work. Added
 * nodes go on lane 0. Dependencies added after the fact may point forward
 * in the node array; instantiation orders the exec's nodes topologically
 * (sg_graph_order) and refuses a cycle. A node's parameters are checked
 * and set by sg_graphparams.c, as its get and set calls do.
 */
#include "sg.h"

#include <stdlib.h>
#include <string.h>

typedef sg_graph_t graph_t;

/* ---- topological order ---- */

/* Passes over the nodes in index order, placing each node whose
 * dependencies are placed: a captured graph (already ordered) takes one
 * pass and keeps its order; a forward dependency takes another pass. A
 * pass that places nothing leaves only nodes on or after a cycle. */
CUresult sg_graph_order(const graph_t *g, int *order)
{
    bool *placed = calloc((size_t)g->nnodes + 1, sizeof *placed);
    if (!placed)
        return CUDA_ERROR_OUT_OF_MEMORY;
    int k = 0, before = -1;
    while (k < g->nnodes && k != before) {
        before = k;
        for (int i = 0; i < g->nnodes; i++) {
            bool ready = !placed[i];
            for (int d = 0; ready && d < g->nodes[i]->ndeps; d++)
                ready = placed[g->nodes[i]->deps[d]];
            if (ready) {
                placed[i] = true;
                order[k++] = i;
            }
        }
    }
    free(placed);
    return k == g->nnodes ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- handles ---- */

graph_t *sg_graph_of(CUgraph h)
{
    return sg_handle_kind(h) == SG_H_GRAPH ? (graph_t *)h : NULL;
}

graph_t *sg_exec_of(CUgraphExec h)
{
    return sg_handle_kind(h) == SG_H_EXEC ? (graph_t *)h : NULL;
}

static int index_of(const graph_t *g, const void *node)
{
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i] == node)
            return i;
    return -1;
}

/* A graph's node, or NULL for anything else (an exec's copy is no handle). */
sg_node_t *sg_node_of(CUgraphNode h)
{
    return sg_handle_kind(h) == SG_H_NODE ? (sg_node_t *)h : NULL;
}

/* Dependencies named by handle: each a node of g, none twice. Writes
 * their indices to idx (n entries). */
static CUresult dep_indices(const graph_t *g, const CUgraphNode *deps, size_t n, int *idx)
{
    if (n && !deps)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++) {
        if ((idx[i] = index_of(g, deps[i])) < 0)
            return CUDA_ERROR_INVALID_VALUE;
        for (size_t j = 0; j < i; j++)
            if (idx[j] == idx[i])
                return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

/* Appends a node running op (taken, also on failure) to graph hg, on lane
 * 0, after deps. g.lock held. */
static CUresult add_node(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps, size_t ndeps,
                         sg_op_t *op, sg_node_t **made)
{
    graph_t *g = sg_graph_of(hg);
    sg_node_t *n = NULL;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (!out || !g || ndeps > (size_t)g->nnodes)
        goto fail;
    r = CUDA_ERROR_OUT_OF_MEMORY;
    sg_node_t **all = realloc(g->nodes, ((size_t)g->nnodes + 2) * sizeof *all);
    if (!all)
        goto fail;
    g->nodes = all;
    if (!(n = calloc(1, sizeof *n)) || !(n->deps = malloc((ndeps + 1) * sizeof *n->deps)))
        goto fail;
    if ((r = dep_indices(g, deps, ndeps, n->deps)) != CUDA_SUCCESS)
        goto fail;
    n->ndeps = (int)ndeps;
    n->op = op;
    g->nodes[g->nnodes++] = n;
    sg_handle_add(n, SG_H_NODE);
    *out = (CUgraphNode)n;
    if (made)
        *made = n;
    return CUDA_SUCCESS;
fail:
    if (n)
        free(n->deps);
    free(n);
    sg_op_put(op);
    return r;
}

/* ---- kernel, memcpy and memset nodes ---- */

/* Their parameters are checked and set as the set calls do
 * (sg_graphparams.c). */

static CUresult add_kernel(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps, size_t n,
                           const CUDA_KERNEL_NODE_PARAMS *p)
{
    sg_op_t *op = sg_op_new(SG_OP_KERNEL, "kernel node");
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sg_lock();
    CUresult r = sg_kernel_node_set(op, p, -1);
    if (r == CUDA_SUCCESS)
        r = add_node(out, hg, deps, n, op, NULL);
    else
        sg_op_put(op);
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                           const CUgraphNode *dependencies, size_t numDependencies,
                                           const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    SG_ENTER(cuGraphAddKernelNode, API);
    return add_kernel(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}

SG_EXPORT CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                        const CUgraphNode *dependencies, size_t numDependencies,
                                        const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    SG_ENTER(cuGraphAddKernelNode, API);
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS p = sg_kernel_params_from_v1(nodeParams);
    return add_kernel(phGraphNode, hGraph, dependencies, numDependencies, &p);
}

/* Adds op, whose parameters were filled with result `filled`, as a node;
 * on any failure op is released (NULL op: filled says out of memory). */
static CUresult add_filled(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps, size_t ndeps,
                           sg_op_t *op, CUresult filled)
{
    if (!op)
        return filled;
    sg_lock();
    CUresult r = filled == CUDA_SUCCESS ? add_node(out, hg, deps, ndeps, op, NULL) : filled;
    if (filled != CUDA_SUCCESS)
        sg_op_put(op);
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                        const CUgraphNode *dependencies, size_t numDependencies,
                                        const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
    SG_ENTER(cuGraphAddMemcpyNode, API);
    if (!sg_node_ctx_ok(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    sg_op_t *op = sg_op_new(SG_OP_COPY, "memcpy node");
    return add_filled(phGraphNode, hGraph, dependencies, numDependencies, op,
                      op ? sg_copy_node_set(op, copyParams) : CUDA_ERROR_OUT_OF_MEMORY);
}

SG_EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                        const CUgraphNode *dependencies, size_t numDependencies,
                                        const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx)
{
    SG_ENTER(cuGraphAddMemsetNode, API);
    if (!sg_node_ctx_ok(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    sg_op_t *op = sg_op_new(SG_OP_MEMSET, "memset node");
    return add_filled(phGraphNode, hGraph, dependencies, numDependencies, op,
                      op ? sg_memset_node_set(op, memsetParams) : CUDA_ERROR_OUT_OF_MEMORY);
}

/* ---- empty, host and child graph nodes ---- */

SG_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                       const CUgraphNode *dependencies, size_t numDependencies)
{
    SG_ENTER(cuGraphAddEmptyNode, API);
    sg_op_t *op = sg_op_new(SG_OP_MARKER, "empty node");
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sg_lock();
    CUresult r = add_node(phGraphNode, hGraph, dependencies, numDependencies, op, NULL);
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                      const CUgraphNode *dependencies, size_t numDependencies,
                                      const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    SG_ENTER(cuGraphAddHostNode, API);
    if (!nodeParams || !nodeParams->fn)
        return CUDA_ERROR_INVALID_VALUE;
    sg_op_t *op = sg_op_new(SG_OP_HOST_FUNC, "host node");
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->fn = nodeParams->fn;
    op->user = nodeParams->userData;
    sg_lock();
    CUresult r = add_node(phGraphNode, hGraph, dependencies, numDependencies, op, NULL);
    sg_unlock();
    return r;
}

/* Frees a node that is not (or no longer) in a graph. */
static void node_drop(sg_node_t *n)
{
    if (!n)
        return;
    sg_handle_del(n);
    sg_op_put(n->op);
    free(n->deps);
    free(n);
}

/* Copies child's nodes into g after the given dependencies (the child's
 * roots wait for them); the node returned is a marker after all of them.
 * So the parent's node list holds the child's nodes too, where the
 * driver's holds the one child graph node. g.lock held. */
static CUresult inline_child(graph_t *g, const graph_t *child, const CUgraphNode *deps,
                             size_t ndeps, CUgraphNode *out)
{
    int base = g->nnodes;
    int *idx = malloc((ndeps + 1) * sizeof *idx);
    sg_node_t **all = realloc(g->nodes, ((size_t)base + (size_t)child->nnodes + 2) * sizeof *all);
    if (all)
        g->nodes = all;
    CUresult r = !idx || !all ? CUDA_ERROR_OUT_OF_MEMORY : dep_indices(g, deps, ndeps, idx);
    sg_op_t *mark = r == CUDA_SUCCESS ? sg_op_new(SG_OP_MARKER, "child graph node") : NULL;
    if (r == CUDA_SUCCESS && !mark)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0; r == CUDA_SUCCESS && i < child->nnodes; i++) {
        sg_node_t *c = sg_node_copy(child->nodes[i]);
        int *d = c ? realloc(c->deps, ((size_t)c->ndeps + ndeps + 1) * sizeof *d) : NULL;
        if (!d) {
            node_drop(c);
            r = CUDA_ERROR_OUT_OF_MEMORY;
            break;
        }
        c->deps = d;
        for (int k = 0; k < c->ndeps; k++)
            c->deps[k] += base;
        if (c->ndeps == 0)
            for (size_t k = 0; k < ndeps; k++)
                c->deps[c->ndeps++] = idx[k];
        c->origin = NULL;
        g->nodes[g->nnodes++] = c;
        sg_handle_add(c, SG_H_NODE);
        if (c->lane >= g->nlanes)
            g->nlanes = c->lane + 1;
    }
    if (r != CUDA_SUCCESS) {
        while (g->nnodes > base) /* take back the nodes copied so far */
            node_drop(g->nodes[--g->nnodes]);
        sg_op_put(mark);
        free(idx);
        return r;
    }
    free(idx);
    /* The marker waits for every copied node (or, for an empty child, for
     * the given dependencies). */
    int nmark = child->nnodes;
    CUgraphNode *md = malloc(((size_t)nmark + 1) * sizeof *md);
    if (!md) {
        sg_op_put(mark);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < nmark; i++)
        md[i] = (CUgraphNode)g->nodes[base + i];
    sg_node_t *m = NULL;
    r = nmark ? add_node(out, (CUgraph)g, md, (size_t)nmark, mark, &m)
              : add_node(out, (CUgraph)g, deps, ndeps, mark, &m);
    free(md);
    if (r == CUDA_SUCCESS)
        m->child = true;
    return r;
}

SG_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                            const CUgraphNode *dependencies,
                                            size_t numDependencies, CUgraph childGraph)
{
    SG_ENTER(cuGraphAddChildGraphNode, API);
    sg_lock();
    graph_t *g = sg_graph_of(hGraph), *c = sg_graph_of(childGraph);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (phGraphNode && g && c && g != c)
        r = inline_child(g, c, dependencies, numDependencies, phGraphNode);
    sg_unlock();
    return r;
}

/* ---- dependencies and clones ---- */

static bool has_dep(const sg_node_t *n, int j)
{
    for (int d = 0; d < n->ndeps; d++)
        if (n->deps[d] == j)
            return true;
    return false;
}

/* Only default edges: programmatic ones (CUgraphEdgeData with a type or
 * ports) are not modelled. An existing edge, or one named twice, is
 * CUDA_ERROR_INVALID_VALUE, as the driver documents; a cycle is found at
 * instantiation. All edges are checked before any is added. */
static CUresult add_deps(CUgraph hg, const CUgraphNode *from, const CUgraphNode *to,
                         const CUgraphEdgeData *data, size_t n)
{
    static const CUgraphEdgeData plain;
    for (size_t i = 0; data && i < n; i++)
        if (memcmp(&data[i], &plain, sizeof plain) != 0)
            return CUDA_ERROR_NOT_SUPPORTED;
    if (n && (!from || !to))
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    graph_t *g = sg_graph_of(hg);
    CUresult r = g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
        int a = index_of(g, from[i]), b = index_of(g, to[i]);
        if (a < 0 || b < 0 || a == b || has_dep(g->nodes[b], a))
            r = CUDA_ERROR_INVALID_VALUE;
        for (size_t j = 0; r == CUDA_SUCCESS && j < i; j++)
            if (from[j] == from[i] && to[j] == to[i])
                r = CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
        sg_node_t *t = (sg_node_t *)to[i];
        int *d = realloc(t->deps, ((size_t)t->ndeps + 2) * sizeof *d);
        if (!d) {
            r = CUDA_ERROR_OUT_OF_MEMORY; /* the edges before it stay */
            break;
        }
        t->deps = d;
        t->deps[t->ndeps++] = index_of(g, from[i]);
    }
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from,
                                          const CUgraphNode *to, size_t numDependencies)
{
    SG_ENTER(cuGraphAddDependencies, API);
    return add_deps(hGraph, from, to, NULL, numDependencies);
}

SG_EXPORT CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from,
                                             const CUgraphNode *to,
                                             const CUgraphEdgeData *edgeData,
                                             size_t numDependencies)
{
    SG_ENTER(cuGraphAddDependencies, API);
    return add_deps(hGraph, from, to, edgeData, numDependencies);
}

SG_EXPORT CUresult cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
    SG_ENTER(cuGraphClone, API);
    if (!phGraphClone)
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    const graph_t *g = sg_graph_of(originalGraph);
    CUresult r = g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    sg_node_t **nodes = g ? calloc((size_t)g->nnodes + 1, sizeof *nodes) : NULL;
    if (g && !nodes)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0; r == CUDA_SUCCESS && i < g->nnodes; i++)
        if (!(nodes[i] = sg_node_copy(g->nodes[i])))
            r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS)
        r = sg_graph_new(nodes, g->nnodes, g->nlanes, phGraphClone); /* takes nodes */
    else if (nodes) {
        for (int i = 0; i < g->nnodes; i++)
            node_drop(nodes[i]);
        free(nodes);
    }
    if (r == CUDA_SUCCESS)
        for (int i = 0; i < g->nnodes; i++) {
            nodes[i]->origin = NULL;
            sg_handle_add(nodes[i], SG_H_NODE);
        }
    sg_unlock();
    return r;
}

/* ---- instantiation with parameters, upload ---- */

#define KNOWN_FLAGS                                                                    \
    (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD | \
     CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)

/* An upload does nothing here: a replay needs nothing on the device
 * beforehand. The stream is checked all the same. */
static CUresult upload_stream_ok(CUstream hs, bool pt)
{
    sg_lock();
    bool ok = sg_stream_get(hs, pt) != NULL;
    sg_unlock();
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* Device launch (CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) is not
 * modelled: CUDA_ERROR_NOT_SUPPORTED. */
static CUresult instantiate_params(CUgraphExec *out, CUgraph hg, CUDA_GRAPH_INSTANTIATE_PARAMS *p,
                                   bool pt)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    p->hErrNode_out = NULL;
    p->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
    if (p->flags & ~(cuuint64_t)KNOWN_FLAGS)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult r = p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD
                     ? upload_stream_ok(p->hUploadStream, pt)
                     : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS)
        return r;
    return sg_graph_instantiate(out, hg, &p->result_out);
}

SG_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    SG_ENTER(cuGraphInstantiateWithParams, API);
    return instantiate_params(phGraphExec, hGraph, instantiateParams, false);
}

SG_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(
    CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    SG_ENTER(cuGraphInstantiateWithParams, API);
    return instantiate_params(phGraphExec, hGraph, instantiateParams, true);
}

static CUresult upload(CUgraphExec he, CUstream hs, bool pt)
{
    sg_lock();
    bool ok = sg_exec_of(he) != NULL;
    sg_unlock();
    return ok ? upload_stream_ok(hs, pt) : CUDA_ERROR_INVALID_VALUE;
}

SG_EXPORT CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
    SG_ENTER(cuGraphUpload, API);
    return upload(hGraphExec, hStream, false);
}

SG_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    SG_ENTER(cuGraphUpload, API);
    return upload(hGraphExec, hStream, true);
}

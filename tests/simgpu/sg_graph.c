/*
 * Graphs: what a capture made (sg_capture.c) or the explicit API built
 * (sg_graphbuild.c, sg_graphparams.c), instantiated and replayed.
 *
 * A graph is its nodes, each with its dependencies and its lane: the
 * captured stream it came from, 0 for the origin (and for built nodes).
 * Capture order is topological; edges added later need not be, so an
 * exec holds copies of the nodes in a topological order (sg_graph_order).
 * An instantiated graph owns one stream per lane past the
 * first. cuGraphLaunch issues a fresh copy of every node's op, in order:
 * lane 0 on the launch stream, the others on the exec's own streams, each
 * after the copies of its dependencies and the first of each lane after
 * the launch stream's earlier work; the launch stream then waits for every
 * lane's last op. So a replay keeps the captured dependencies and no
 * more than the lanes add, and in virtual time a copy node on one lane
 * runs on its copy engine alongside a kernel on another. Each replay
 * computes its virtual time from the backing at replay.
 */
#include "sg.h"

#include <stdlib.h>

/* sg.h defines it: sg_graphbuild.c and sg_graphparams.c build and update
 * graphs too. */
typedef sg_graph_t graph_t;

CUresult sg_graph_new(sg_node_t **nodes, int nnodes, int nlanes, CUgraph *out)
{
    graph_t *g = calloc(1, sizeof *g);
    if (!g) {
        sg_nodes_free(nodes, nnodes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g->nodes = nodes;
    g->nnodes = nnodes;
    g->nlanes = nlanes;
    sg_handle_add(g, SG_H_GRAPH);
    *out = (CUgraph)g;
    return CUDA_SUCCESS;
}

CUresult sg_graph_append(CUgraph hg, sg_node_t **nodes, int nnodes, int nlanes)
{
    graph_t *g = (graph_t *)hg;
    sg_node_t **all = realloc(g->nodes, (size_t)(g->nnodes + nnodes + 1) * sizeof *all);
    if (!all) {
        sg_nodes_free(nodes, nnodes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g->nodes = all;
    for (int i = 0; i < nnodes; i++) {
        for (int d = 0; d < nodes[i]->ndeps; d++)
            nodes[i]->deps[d] += g->nnodes; /* indices into the whole graph */
        g->nodes[g->nnodes + i] = nodes[i];
    }
    g->nnodes += nnodes;
    if (nlanes > g->nlanes)
        g->nlanes = nlanes;
    free(nodes);
    return CUDA_SUCCESS;
}

/* An empty graph, for cuStreamBeginCaptureToGraph to fill. */
SG_EXPORT CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    SG_ENTER(cuGraphCreate, API);
    if (!phGraph || flags)
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    CUresult r = sg_graph_new(NULL, 0, 1, phGraph);
    sg_unlock();
    return r;
}

static void exec_free(graph_t *e)
{
    for (int i = 0; i < e->nnodes; i++) {
        if (e->nodes[i]) {
            sg_op_put(e->nodes[i]->op);
            free(e->nodes[i]->deps);
            free(e->nodes[i]);
        }
    }
    free(e->nodes);
    for (int i = 1; i < e->nlanes; i++)
        if (e->lanes && e->lanes[i])
            sg_stream_destroy(e->lanes[i]);
    free(e->lanes);
    free(e->order);
    free(e);
}

sg_node_t *sg_node_copy(const sg_node_t *n)
{
    sg_node_t *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    *c = *n;
    c->op = sg_op_clone(n->op);
    c->deps = malloc((size_t)(n->ndeps + 1) * sizeof *c->deps);
    if (!c->op || !c->deps) {
        if (c->op)
            sg_op_put(c->op);
        free(c->deps);
        free(c);
        return NULL;
    }
    for (int i = 0; i < n->ndeps; i++)
        c->deps[i] = n->deps[i];
    return c;
}

/* Node k of the exec is a copy of graph node e->order[k]: a replay issues
 * nodes in array order, so the exec's order must be topological, and
 * dependencies added with cuGraphAddDependencies may point forward in the
 * graph's. Each copy remembers its graph node, for cuGraphExec*SetParams. */
static CUresult copy_nodes(graph_t *e, const graph_t *g)
{
    int *pos = malloc(((size_t)g->nnodes + 1) * sizeof *pos);
    if (!pos)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (int k = 0; k < g->nnodes; k++)
        pos[e->order[k]] = k;
    for (e->nnodes = 0; e->nnodes < g->nnodes; e->nnodes++) {
        sg_node_t *from = g->nodes[e->order[e->nnodes]];
        sg_node_t *c = sg_node_copy(from);
        if (!c) {
            free(pos);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        for (int d = 0; d < c->ndeps; d++)
            c->deps[d] = pos[c->deps[d]];
        c->origin = from;
        e->nodes[e->nnodes] = c;
    }
    free(pos);
    return CUDA_SUCCESS;
}

CUresult sg_graph_instantiate(CUgraphExec *out, CUgraph hg, CUgraphInstantiateResult *res)
{
    *res = CUDA_GRAPH_INSTANTIATE_ERROR;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    if (sg_handle_kind(hg) != SG_H_GRAPH) {
        sg_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    const graph_t *g = (const graph_t *)hg;
    graph_t *e = calloc(1, sizeof *e);
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!e)
        goto out;
    e->nlanes = g->nlanes;
    e->nodes = calloc((size_t)g->nnodes + 1, sizeof *e->nodes);
    e->lanes = calloc((size_t)g->nlanes, sizeof *e->lanes);
    e->order = calloc((size_t)g->nnodes + 1, sizeof *e->order);
    if (!e->nodes || !e->lanes || !e->order)
        goto fail;
    if ((r = sg_graph_order(g, e->order)) != CUDA_SUCCESS) {
        *res = CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE; /* a cycle */
        goto fail;
    }
    if ((r = copy_nodes(e, g)) != CUDA_SUCCESS)
        goto fail;
    for (int i = 1; i < e->nlanes; i++)
        if ((r = sg_stream_create(CU_STREAM_NON_BLOCKING, 0, &e->lanes[i])) != CUDA_SUCCESS)
            goto fail;
    sg_handle_add(e, SG_H_EXEC);
    *out = (CUgraphExec)e;
    *res = CUDA_GRAPH_INSTANTIATE_SUCCESS;
    r = CUDA_SUCCESS;
    goto out;
fail:
    exec_free(e);
out:
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                               unsigned long long flags)
{
    SG_ENTER(cuGraphInstantiateWithFlags, API);
    CUgraphInstantiateResult res;
    return sg_graph_instantiate(phGraphExec, hGraph, &res);
}

SG_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                         CUgraphNode *phErrorNode, char *logBuffer,
                                         size_t bufferSize)
{
    SG_ENTER(cuGraphInstantiate, API);
    CUgraphInstantiateResult res;
    return sg_graph_instantiate(phGraphExec, hGraph, &res);
}

/* Issues one node's op on its lane. issued[] holds a reference to each
 * issued op, for its dependents. */
static CUresult issue(graph_t *e, int i, sg_stream_t *s, sg_op_t *before, sg_op_t **issued)
{
    const sg_node_t *n = e->nodes[i];
    sg_op_t *op = sg_op_clone(n->op);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (int d = 0; d < n->ndeps; d++)
        sg_op_add_dep(op, issued[n->deps[d]]);
    if (n->lane != 0 && n->ndeps == 0 && before)
        sg_op_add_dep(op, before);
    if (n->wait_event && n->wait_event->op)
        sg_op_add_dep(op, n->wait_event->op);
    op->refs++;
    CUresult r = sg_submit(n->lane ? e->lanes[n->lane] : s, op);
    if (r != CUDA_SUCCESS) {
        sg_op_put(op);
        return r;
    }
    issued[i] = op;
    if (n->record_event) {
        sg_op_put(n->record_event->op);
        n->record_event->op = op;
        op->refs++;
        n->record_event->time_ns = op->end_ns;
    }
    return CUDA_SUCCESS;
}

/* The launch stream waits for the last op of every other lane. */
static CUresult join_lanes(graph_t *e, sg_stream_t *s, sg_op_t **issued)
{
    if (e->nlanes < 2)
        return CUDA_SUCCESS;
    sg_op_t *join = sg_op_new(SG_OP_MARKER, "cuGraphLaunch");
    if (!join)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (int lane = 1; lane < e->nlanes; lane++)
        for (int i = e->nnodes - 1; i >= 0; i--)
            if (e->nodes[i]->lane == lane && issued[i]) {
                sg_op_add_dep(join, issued[i]);
                break;
            }
    return sg_submit(s, join);
}

static CUresult graph_launch(CUgraphExec he, CUstream hs, bool pt)
{
    sg_lock();
    sg_stream_t *s = sg_stream_get(hs, pt);
    CUresult r = CUDA_SUCCESS;
    if (sg_handle_kind(he) != SG_H_EXEC)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!s)
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (s->capture)
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* child graphs are not modelled */
    if (r != CUDA_SUCCESS) {
        sg_unlock();
        return r;
    }
    graph_t *e = (graph_t *)he;
    sg_op_t **issued = calloc((size_t)e->nnodes + 1, sizeof *issued);
    if (!issued) {
        sg_unlock();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    SG->st.graph_launches++;
    sg_op_t *before = s->last;
    if (before)
        before->refs++;
    for (int i = 0; i < e->nnodes && r == CUDA_SUCCESS; i++)
        r = issue(e, i, s, before, issued);
    if (r == CUDA_SUCCESS)
        r = join_lanes(e, s, issued);
    for (int i = 0; i < e->nnodes; i++)
        if (issued[i])
            sg_op_put(issued[i]);
    if (before)
        sg_op_put(before);
    free(issued);
    sg_unlock();
    return r;
}

#define GLAUNCH_PARAMS (CUgraphExec hGraphExec, CUstream hStream)
SG_EXPORT CUresult cuGraphLaunch GLAUNCH_PARAMS
{
    SG_ENTER(cuGraphLaunch, LAUNCH);
    return graph_launch(hGraphExec, hStream, false);
}
SG_EXPORT CUresult cuGraphLaunch_ptsz GLAUNCH_PARAMS
{
    SG_ENTER(cuGraphLaunch, LAUNCH);
    return graph_launch(hGraphExec, hStream, true);
}

SG_EXPORT CUresult cuGraphDestroy(CUgraph hGraph)
{
    SG_ENTER(cuGraphDestroy, API);
    sg_lock();
    if (sg_handle_kind(hGraph) != SG_H_GRAPH) {
        sg_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    graph_t *g = (graph_t *)hGraph;
    sg_handle_del(g);
    sg_user_objects_graph_gone(hGraph); /* sg_userobj.c: the graph's references go */
    sg_nodes_free(g->nodes, g->nnodes);
    free(g);
    sg_unlock();
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    SG_ENTER(cuGraphExecDestroy, API);
    sg_lock();
    if (sg_handle_kind(hGraphExec) != SG_H_EXEC) {
        sg_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    sg_handle_del(hGraphExec);
    exec_free((graph_t *)hGraphExec);
    sg_unlock();
    return CUDA_SUCCESS;
}

/* ---- inspection ---- */

/* The driver's contract for lists: with a NULL array, the count; else up
 * to *n entries, the rest NULL, and *n the number filled in. */
SG_EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    SG_ENTER(cuGraphGetNodes, API);
    if (!numNodes)
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    if (sg_handle_kind(hGraph) != SG_H_GRAPH) {
        sg_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    const graph_t *g = (const graph_t *)hGraph;
    size_t have = (size_t)g->nnodes;
    if (nodes) {
        for (size_t i = 0; i < *numNodes; i++)
            nodes[i] = i < have ? (CUgraphNode)g->nodes[i] : NULL;
        if (*numNodes > have)
            *numNodes = have;
    } else {
        *numNodes = have;
    }
    sg_unlock();
    return CUDA_SUCCESS;
}

static CUresult get_edges(CUgraph hg, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *data,
                          size_t *num)
{
    if (!num || (!from) != (!to))
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    if (sg_handle_kind(hg) != SG_H_GRAPH) {
        sg_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    const graph_t *g = (const graph_t *)hg;
    size_t k = 0;
    for (int i = 0; i < g->nnodes; i++)
        for (int d = 0; d < g->nodes[i]->ndeps; d++, k++)
            if (from && k < *num) {
                from[k] = (CUgraphNode)g->nodes[g->nodes[i]->deps[d]];
                to[k] = (CUgraphNode)g->nodes[i];
                if (data)
                    data[k] = (CUgraphEdgeData){0};
            }
    if (from) {
        for (size_t i = k; i < *num; i++)
            from[i] = to[i] = NULL;
        if (*num > k)
            *num = k;
    } else {
        *num = k;
    }
    sg_unlock();
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
                                   size_t *numEdges)
{
    SG_ENTER(cuGraphGetEdges, API);
    return get_edges(hGraph, from, to, NULL, numEdges);
}

SG_EXPORT CUresult cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
                                      CUgraphEdgeData *edgeData, size_t *numEdges)
{
    SG_ENTER(cuGraphGetEdges, API);
    return get_edges(hGraph, from, to, edgeData, numEdges);
}

SG_EXPORT CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    SG_ENTER(cuGraphNodeGetType, API);
    if (!type)
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    if (sg_handle_kind(hNode) != SG_H_NODE) {
        sg_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    *type = sg_node_type((const sg_node_t *)hNode);
    sg_unlock();
    return CUDA_SUCCESS;
}

CUgraphNodeType sg_node_type(const sg_node_t *n)
{
    switch (n->op->kind) {
    case SG_OP_KERNEL: return CU_GRAPH_NODE_TYPE_KERNEL;
    case SG_OP_COPY: return CU_GRAPH_NODE_TYPE_MEMCPY;
    case SG_OP_MEMSET: return CU_GRAPH_NODE_TYPE_MEMSET;
    case SG_OP_HOST_FUNC: return CU_GRAPH_NODE_TYPE_HOST;
    case SG_OP_FREE: return CU_GRAPH_NODE_TYPE_MEM_FREE;
    case SG_OP_MEM_ALLOC: return CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    default:
        return n->record_event ? CU_GRAPH_NODE_TYPE_EVENT_RECORD
               : n->wait_event ? CU_GRAPH_NODE_TYPE_WAIT_EVENT
               : n->child      ? CU_GRAPH_NODE_TYPE_GRAPH
                               : CU_GRAPH_NODE_TYPE_EMPTY;
    }
}

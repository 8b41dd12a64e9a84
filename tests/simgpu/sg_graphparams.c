/*
 * Node parameters and updates: get and set of a kernel, memcpy or memset
 * node's parameters (on a graph's node, or on an exec's copy of it) and
 * cuGraphExecUpdate; and the parameter checks sg_graphbuild.c adds nodes
 * with.
 *
 * An exec's node is a copy of a graph node and remembers it (origin):
 * cuGraphExec*SetParams name the graph's node and change only the exec's
 * copy. cuGraphExecUpdate pairs exec node k with the new graph's node of
 * the index it was made from, and after an update the copies remember the
 * new graph's nodes, as the driver documents. A kernel node's arguments
 * are packed as a launch packs them (sg_pack_args), so its ranges are a
 * launch's.
 */
#include "sg.h"

#include <stdlib.h>
#include <string.h>

typedef sg_graph_t graph_t;

/* ---- handles ---- */

/* The exec's copy of graph node h; NULL when h is not a node of the
 * graph the exec was made from (or last updated from). */
static sg_node_t *exec_node(CUgraphExec he, CUgraphNode h)
{
    graph_t *e = sg_exec_of(he);
    if (!e || !sg_node_of(h))
        return NULL;
    for (int k = 0; k < e->nnodes; k++)
        if (e->nodes[k]->origin == (sg_node_t *)h)
            return e->nodes[k];
    return NULL;
}

/* ---- kernel node parameters ---- */

/* Sets a kernel op from node parameters, packing the arguments exactly as
 * a launch does. want_dev >= 0: the device may not change (an exec's
 * node: "the owning context of the function cannot change"). Nothing
 * changes on failure. g.lock held (the ranges may peek at a table under
 * mem_lock, a reader: allowed under g.lock). */
CUresult sg_kernel_node_set(sg_op_t *op, const CUDA_KERNEL_NODE_PARAMS *p, int want_dev)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    void *h = p->func ? (void *)p->func : (void *)p->kern;
    int fdev = -1;
    const sg_kernel_t *k = h ? sg_func_kernel(h, &fdev) : NULL;
    /* kern is a CUkernel's field; func takes either kind, as launches do */
    if (!k || (!p->func && sg_handle_kind(h) != SG_H_KERNEL))
        return CUDA_ERROR_INVALID_VALUE;
    int dev = !p->func && p->ctx ? sg_ctx_device(p->ctx) : sg_current_device();
    if ((!p->func && p->ctx && dev < 0) || sg_other_device(fdev, dev))
        return CUDA_ERROR_INVALID_VALUE;
    dev = dev > 0 ? dev : 0;
    if (want_dev >= 0 && dev != want_dev)
        return CUDA_ERROR_INVALID_VALUE;
    if (!p->gridDimX || !p->gridDimY || !p->gridDimZ || !p->blockDimX || !p->blockDimY ||
        !p->blockDimZ)
        return CUDA_ERROR_INVALID_VALUE;
    /* Packed apart first: kernelParams may point into op->args (what
     * cuGraphKernelNodeGetParams handed out). */
    _Alignas(16) unsigned char args[SG_MAX_ARGS];
    CUresult r = sg_pack_args(k, p->kernelParams, p->extra, args);
    if (r != CUDA_SUCCESS)
        return r;
    memcpy(op->args, args, sizeof args);
    op->kernel = k;
    op->name = k->name;
    op->nranges = k->ranges(op->args, op->ranges, sg_mem_peek);
    op->device = dev;
    op->func = h;
    op->kern_field = !p->func;
    op->grid[0] = p->gridDimX, op->grid[1] = p->gridDimY, op->grid[2] = p->gridDimZ;
    op->block[0] = p->blockDimX, op->block[1] = p->blockDimY, op->block[2] = p->blockDimZ;
    op->smem = p->sharedMemBytes;
    return CUDA_SUCCESS;
}

/* kernelParams point into the node's own op->args, one per parameter at
 * the kernel's offsets: valid until its parameters change or its graph is
 * destroyed. */
static CUresult kernel_get(sg_node_t *n, CUDA_KERNEL_NODE_PARAMS *p)
{
    if (!p || !n || n->op->kind != SG_OP_KERNEL)
        return CUDA_ERROR_INVALID_VALUE;
    const sg_op_t *op = n->op;
    for (int i = 0; i < op->kernel->nparams; i++)
        n->kparams[i] = (void *)(op->args + op->kernel->param_off[i]);
    *p = (CUDA_KERNEL_NODE_PARAMS){
        .func = op->kern_field ? NULL : (CUfunction)op->func,
        .kern = op->kern_field ? (CUkernel)op->func : NULL,
        .ctx = op->kern_field ? sg_primary_ctx(op->device) : NULL,
        .gridDimX = op->grid[0], .gridDimY = op->grid[1], .gridDimZ = op->grid[2],
        .blockDimX = op->block[0], .blockDimY = op->block[1], .blockDimZ = op->block[2],
        .sharedMemBytes = op->smem,
        .kernelParams = n->kparams,
    };
    return CUDA_SUCCESS;
}

CUDA_KERNEL_NODE_PARAMS sg_kernel_params_from_v1(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    return (CUDA_KERNEL_NODE_PARAMS){
        .func = p->func, .gridDimX = p->gridDimX, .gridDimY = p->gridDimY,
        .gridDimZ = p->gridDimZ, .blockDimX = p->blockDimX, .blockDimY = p->blockDimY,
        .blockDimZ = p->blockDimZ, .sharedMemBytes = p->sharedMemBytes,
        .kernelParams = p->kernelParams, .extra = p->extra,
    };
}

static CUresult kernel_get_locked(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS *p)
{
    sg_lock();
    CUresult r = kernel_get(sg_node_of(h), p);
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode,
                                                 CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    SG_ENTER(cuGraphKernelNodeGetParams, API);
    return kernel_get_locked(hNode, nodeParams);
}

/* The v1 structure has no kern field: a CUkernel comes back in func, as
 * launches take one there. */
SG_EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode,
                                              CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    SG_ENTER(cuGraphKernelNodeGetParams, API);
    CUDA_KERNEL_NODE_PARAMS p;
    CUresult r = nodeParams ? kernel_get_locked(hNode, &p) : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        *nodeParams = (CUDA_KERNEL_NODE_PARAMS_v1){
            .func = p.func ? p.func : (CUfunction)p.kern, .gridDimX = p.gridDimX,
            .gridDimY = p.gridDimY, .gridDimZ = p.gridDimZ, .blockDimX = p.blockDimX,
            .blockDimY = p.blockDimY, .blockDimZ = p.blockDimZ,
            .sharedMemBytes = p.sharedMemBytes, .kernelParams = p.kernelParams,
        };
    return r;
}

/* he NULL: the graph's node itself; else the exec's copy of it. */
static CUresult kernel_set_node(CUgraphExec he, CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS *p)
{
    sg_lock();
    sg_node_t *n = he ? exec_node(he, h) : sg_node_of(h);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (n && n->op->kind == SG_OP_KERNEL)
        r = sg_kernel_node_set(n->op, p, he ? n->op->device : -1);
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode,
                                                 const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    SG_ENTER(cuGraphKernelNodeSetParams, API);
    return kernel_set_node(NULL, hNode, nodeParams);
}

SG_EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode,
                                              const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    SG_ENTER(cuGraphKernelNodeSetParams, API);
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS p = sg_kernel_params_from_v1(nodeParams);
    return kernel_set_node(NULL, hNode, &p);
}

SG_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                     const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    SG_ENTER(cuGraphExecKernelNodeSetParams, API);
    if (!hGraphExec)
        return CUDA_ERROR_INVALID_VALUE;
    return kernel_set_node(hGraphExec, hNode, nodeParams);
}

SG_EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                  const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    SG_ENTER(cuGraphExecKernelNodeSetParams, API);
    if (!hGraphExec || !nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS p = sg_kernel_params_from_v1(nodeParams);
    return kernel_set_node(hGraphExec, hNode, &p);
}

/* ---- memcpy and memset node parameters ---- */

/* One side of a CUDA_MEMCPY3D: its first byte, and whether it may be plain
 * (pageable) host memory. */
static CUresult copy_side(CUmemorytype type, const void *host, CUdeviceptr dev, size_t x,
                          size_t y, size_t z, size_t pitch, size_t height, uint64_t *addr,
                          bool *pageable)
{
    uint64_t base;
    switch (type) {
    case CU_MEMORYTYPE_HOST: base = (uint64_t)host; break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED: base = dev; break;
    case CU_MEMORYTYPE_ARRAY: return CUDA_ERROR_NOT_SUPPORTED; /* no CUarrays here */
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    if (!base || (type == CU_MEMORYTYPE_DEVICE && !sg_gpu_visible(base)))
        return CUDA_ERROR_INVALID_VALUE;
    *addr = base + x + y * pitch + z * pitch * height;
    *pageable = type != CU_MEMORYTYPE_DEVICE && !sg_gpu_visible(base);
    return CUDA_SUCCESS;
}

/* A copy node's op from a CUDA_MEMCPY3D: one contiguous span per side.
 * A pitched 2D/3D shape whose rows are not back to back is not modelled
 * (CUDA_ERROR_NOT_SUPPORTED). Nothing changes on failure. */
CUresult sg_copy_node_set(sg_op_t *op, const CUDA_MEMCPY3D *p)
{
    if (!p || !p->WidthInBytes || !p->Height || !p->Depth || p->srcLOD || p->dstLOD)
        return CUDA_ERROR_INVALID_VALUE;
    size_t w = p->WidthInBytes;
    bool rows = p->Height > 1 || p->Depth > 1;
    if (rows && (p->srcPitch < w || p->dstPitch < w))
        return CUDA_ERROR_INVALID_VALUE;
    if (rows && (p->srcPitch != w || p->dstPitch != w ||
                 (p->Depth > 1 && (p->srcHeight != p->Height || p->dstHeight != p->Height))))
        return CUDA_ERROR_NOT_SUPPORTED;
    uint64_t src, dst;
    bool sp, dp;
    CUresult r = copy_side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY,
                           p->srcZ, p->srcPitch, p->srcHeight, &src, &sp);
    if (r == CUDA_SUCCESS)
        r = copy_side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY,
                      p->dstZ, p->dstPitch, p->dstHeight, &dst, &dp);
    if (r != CUDA_SUCCESS)
        return r;
    uint64_t len = (uint64_t)w * p->Height * p->Depth;
    op->ranges[0] = (sg_range_t){.addr = dst, .len = len, .write = true};
    op->ranges[1] = (sg_range_t){.addr = src, .len = len};
    op->nranges = 2;
    op->pageable = (unsigned)dp | (unsigned)sp << 1;
    return CUDA_SUCCESS;
}

/* An equivalent 1D description: how the copy was first described (pitch,
 * offsets, UNIFIED) is not kept. */
static CUresult copy_get(const sg_node_t *n, CUDA_MEMCPY3D *p)
{
    if (!p || !n || n->op->kind != SG_OP_COPY)
        return CUDA_ERROR_INVALID_VALUE;
    const sg_op_t *op = n->op;
    uint64_t dst = op->ranges[0].addr, src = op->ranges[1].addr, len = op->ranges[0].len;
    bool dh = !sg_mem_is_device_va(dst), sh = !sg_mem_is_device_va(src);
    *p = (CUDA_MEMCPY3D){
        .srcMemoryType = sh ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE,
        .srcHost = sh ? (const void *)src : NULL, .srcDevice = sh ? 0 : src,
        .srcPitch = len, .srcHeight = 1,
        .dstMemoryType = dh ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE,
        .dstHost = dh ? (void *)dst : NULL, .dstDevice = dh ? 0 : dst,
        .dstPitch = len, .dstHeight = 1,
        .WidthInBytes = len, .Height = 1, .Depth = 1,
    };
    return CUDA_SUCCESS;
}

/* A 2D memset whose rows are not back to back is not modelled: an op
 * sets one span. */
CUresult sg_memset_node_set(sg_op_t *op, const CUDA_MEMSET_NODE_PARAMS *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned es = p->elementSize;
    if ((es != 1 && es != 2 && es != 4) || !p->width || !p->height || !p->dst ||
        p->dst % es || !sg_gpu_visible(p->dst))
        return CUDA_ERROR_INVALID_VALUE;
    size_t row = p->width * es;
    if (p->height > 1 && p->pitch < row)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->height > 1 && p->pitch != row)
        return CUDA_ERROR_NOT_SUPPORTED;
    op->ranges[0] = (sg_range_t){.addr = p->dst, .len = (uint64_t)row * p->height, .write = true};
    op->nranges = 1;
    op->memset_width = es;
    op->memset_value = es == 4 ? p->value : es == 2 ? (uint16_t)p->value : (uint8_t)p->value;
    return CUDA_SUCCESS;
}

static CUresult memset_get(const sg_node_t *n, CUDA_MEMSET_NODE_PARAMS *p)
{
    if (!p || !n || n->op->kind != SG_OP_MEMSET)
        return CUDA_ERROR_INVALID_VALUE;
    const sg_op_t *op = n->op;
    unsigned es = op->memset_width;
    *p = (CUDA_MEMSET_NODE_PARAMS){
        .dst = op->ranges[0].addr, .pitch = op->ranges[0].len, .value = (unsigned)op->memset_value,
        .elementSize = es, .width = op->ranges[0].len / es, .height = 1,
    };
    return CUDA_SUCCESS;
}

/* The context a memcpy or memset node runs in: a device's, or NULL for
 * the current one. */
bool sg_node_ctx_ok(CUcontext ctx)
{
    return !ctx || sg_ctx_device(ctx) >= 0;
}

/* Get and set of a copy or memset node's parameters. The new parameters
 * are checked on a scratch op so that a refused set changes nothing. */
typedef CUresult (*set_fn)(sg_op_t *op, const void *p);

static CUresult node_set(CUgraphExec he, CUgraphNode h, sg_op_kind_t kind, set_fn set,
                         const void *p)
{
    sg_op_t *scratch = sg_op_new(kind, NULL);
    if (!scratch)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = set(scratch, p);
    sg_lock();
    sg_node_t *n = he ? exec_node(he, h) : sg_node_of(h);
    if (r == CUDA_SUCCESS && (!n || n->op->kind != kind))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        r = set(n->op, p);
    sg_op_put(scratch);
    sg_unlock();
    return r;
}

static CUresult copy_set_v(sg_op_t *op, const void *p) { return sg_copy_node_set(op, p); }
static CUresult memset_set_v(sg_op_t *op, const void *p) { return sg_memset_node_set(op, p); }

SG_EXPORT CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D *nodeParams)
{
    SG_ENTER(cuGraphMemcpyNodeGetParams, API);
    sg_lock();
    CUresult r = copy_get(sg_node_of(hNode), nodeParams);
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D *nodeParams)
{
    SG_ENTER(cuGraphMemcpyNodeSetParams, API);
    return node_set(NULL, hNode, SG_OP_COPY, copy_set_v, nodeParams);
}

SG_EXPORT CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                  const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
    SG_ENTER(cuGraphExecMemcpyNodeSetParams, API);
    if (!hGraphExec || !sg_node_ctx_ok(ctx))
        return CUDA_ERROR_INVALID_VALUE;
    return node_set(hGraphExec, hNode, SG_OP_COPY, copy_set_v, copyParams);
}

SG_EXPORT CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode,
                                              CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
    SG_ENTER(cuGraphMemsetNodeGetParams, API);
    sg_lock();
    CUresult r = memset_get(sg_node_of(hNode), nodeParams);
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode,
                                              const CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
    SG_ENTER(cuGraphMemsetNodeSetParams, API);
    return node_set(NULL, hNode, SG_OP_MEMSET, memset_set_v, nodeParams);
}

SG_EXPORT CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                  const CUDA_MEMSET_NODE_PARAMS *memsetParams,
                                                  CUcontext ctx)
{
    SG_ENTER(cuGraphExecMemsetNodeSetParams, API);
    if (!hGraphExec || !sg_node_ctx_ok(ctx))
        return CUDA_ERROR_INVALID_VALUE;
    return node_set(hGraphExec, hNode, SG_OP_MEMSET, memset_set_v, memsetParams);
}

/* ---- cuGraphExecUpdate ---- */

/* Whether graph node gi has the same dependencies as exec node k, read
 * through the graph indices the exec's nodes were made from; *missing is
 * the first dependency of gi that does not match (-1: a count differs). */
static bool same_deps(const graph_t *e, int k, const sg_node_t *gn, int *missing)
{
    const sg_node_t *en = e->nodes[k];
    *missing = -1;
    if (en->ndeps != gn->ndeps)
        return false;
    for (int d = 0; d < gn->ndeps; d++) {
        bool found = false;
        for (int x = 0; x < en->ndeps && !found; x++)
            found = e->order[en->deps[x]] == gn->deps[d];
        if (!found) {
            *missing = gn->deps[d];
            return false;
        }
    }
    return true;
}

/* Checks hg against exec e without changing it: node k of e pairs with
 * node e->order[k] of hg. */
static CUgraphExecUpdateResult update_check(const graph_t *e, const graph_t *g,
                                            CUgraphNode *err, CUgraphNode *err_from)
{
    if (e->nnodes != g->nnodes)
        return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    for (int k = 0; k < e->nnodes; k++) {
        const sg_node_t *gn = g->nodes[e->order[k]], *en = e->nodes[k];
        int missing;
        *err = (CUgraphNode)gn;
        if (sg_node_type(gn) != sg_node_type(en))
            return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
        if (!same_deps(e, k, gn, &missing)) {
            if (missing >= 0)
                *err_from = (CUgraphNode)g->nodes[missing];
            return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        }
        /* the owning context of a kernel's function cannot change */
        if (gn->op->kind == SG_OP_KERNEL && gn->op->device != en->op->device)
            return CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE;
        /* a copy's memory types cannot change */
        if (gn->op->kind == SG_OP_COPY && gn->op->pageable != en->op->pageable)
            return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
    }
    *err = NULL;
    return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

/* Every exec node takes its graph node's work (a fresh copy of its op:
 * kernel arguments and ranges, copy and memset parameters, host function)
 * and remembers that node. All copies are made before any is swapped in,
 * so the exec is unchanged when memory runs out. */
static CUresult update_apply(graph_t *e, const graph_t *g)
{
    sg_op_t **ops = calloc((size_t)e->nnodes + 1, sizeof *ops);
    bool ok = ops != NULL;
    for (int k = 0; ok && k < e->nnodes; k++)
        ok = (ops[k] = sg_op_clone(g->nodes[e->order[k]]->op)) != NULL;
    if (!ok) {
        for (int k = 0; ops && k < e->nnodes; k++)
            sg_op_put(ops[k]);
        free(ops);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (int k = 0; k < e->nnodes; k++) {
        sg_node_t *en = e->nodes[k], *gn = g->nodes[e->order[k]];
        sg_op_put(en->op);
        en->op = ops[k];
        en->record_event = gn->record_event;
        en->wait_event = gn->wait_event;
        en->origin = gn;
    }
    free(ops);
    return CUDA_SUCCESS;
}

static CUresult exec_update(CUgraphExec he, CUgraph hg, CUgraphExecUpdateResultInfo *info)
{
    info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
    info->errorNode = info->errorFromNode = NULL;
    sg_lock();
    graph_t *e = sg_exec_of(he);
    const graph_t *g = sg_graph_of(hg);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (e && g) {
        info->result = update_check(e, g, &info->errorNode, &info->errorFromNode);
        r = info->result == CU_GRAPH_EXEC_UPDATE_SUCCESS ? update_apply(e, g)
                                                         : CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
        if (r == CUDA_ERROR_OUT_OF_MEMORY)
            info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
    }
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                                        CUgraphExecUpdateResultInfo *resultInfo)
{
    SG_ENTER(cuGraphExecUpdate, API);
    if (!resultInfo)
        return CUDA_ERROR_INVALID_VALUE;
    return exec_update(hGraphExec, hGraph, resultInfo);
}

SG_EXPORT CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                                     CUgraphNode *hErrorNode_out,
                                     CUgraphExecUpdateResult *updateResult_out)
{
    SG_ENTER(cuGraphExecUpdate, API);
    if (!hErrorNode_out || !updateResult_out)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphExecUpdateResultInfo info;
    CUresult r = exec_update(hGraphExec, hGraph, &info);
    *hErrorNode_out = info.errorNode;
    *updateResult_out = info.result;
    return r;
}

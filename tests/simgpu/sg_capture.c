/*
 * Stream capture and graphs.
 *
 * A capturing stream records ops instead of issuing them; a graph is that
 * list, and cuGraphLaunch issues a fresh copy of each op on the launch
 * stream, so a replay runs the recorded arguments again and its virtual
 * time is computed from the backing at replay. Captures are linear: one
 * stream, in order.
 *
 * A call that would synchronize during a capture is refused with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture, as the
 * driver does; spillway must never make one.
 */
#include "sg.h"

#include <stdlib.h>

typedef struct {
    sg_op_t *head;
} graph_t;

static uint64_t next_capture_id = 1;

static void ops_free(sg_op_t *op)
{
    while (op) {
        sg_op_t *next = op->next;
        sg_op_put(op);
        op = next;
    }
}

CUresult sg_capture_record(sg_capture_t *c, sg_op_t *op)
{
    if (c->invalidated) {
        sg_op_put(op);
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    /* Dependencies belong to this issue, not to the replays. */
    for (int i = 0; i < op->ndeps; i++)
        sg_op_put(op->deps[i]);
    free(op->deps);
    op->deps = NULL;
    op->ndeps = 0;
    op->next = NULL;
    if (c->tail)
        c->tail->next = op;
    else
        c->head = op;
    c->tail = op;
    return CUDA_SUCCESS;
}

CUresult sg_capture_guard(sg_stream_t *stream)
{
    CUresult r = CUDA_SUCCESS;
    for (sg_capture_t *c = SG->captures; c; c = c->next) {
        bool hit;
        if (stream)
            hit = c->stream == stream;
        else if (c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)
            hit = true;
        else if (c->mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            hit = pthread_equal(c->thread, pthread_self());
        else
            hit = false;
        if (hit) {
            c->invalidated = true;
            r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
    }
    return r;
}

/* ---- capture API ---- */

static CUresult begin_capture(CUstream hs, CUstreamCaptureMode mode, bool pt, void *into)
{
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    sg_stream_t *s = sg_stream_get(hs, pt);
    CUresult r = CUDA_SUCCESS;
    if (!s)
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (s == SG->legacy)
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the legacy stream cannot be captured */
    else if (s->capture)
        r = CUDA_ERROR_ILLEGAL_STATE;
    else if (into && sg_handle_kind(into) != SG_H_GRAPH)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        sg_capture_t *c = calloc(1, sizeof *c);
        if (!c) {
            sg_unlock();
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        c->stream = s;
        c->mode = mode;
        c->into = into;
        c->thread = pthread_self();
        c->id = next_capture_id++;
        c->next = SG->captures;
        SG->captures = c;
        s->capture = c;
    }
    sg_unlock();
    return r;
}

#define BEGIN_PARAMS (CUstream hStream, CUstreamCaptureMode mode)

SG_EXPORT CUresult cuStreamBeginCapture_v2 BEGIN_PARAMS
{
    SG_ENTER(cuStreamBeginCapture, API);
    return begin_capture(hStream, mode, false, NULL);
}
SG_EXPORT CUresult cuStreamBeginCapture_v2_ptsz BEGIN_PARAMS
{
    SG_ENTER(cuStreamBeginCapture, API);
    return begin_capture(hStream, mode, true, NULL);
}
SG_EXPORT CUresult cuStreamBeginCapture(CUstream hStream)
{
    SG_ENTER(cuStreamBeginCapture, API);
    return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, false, NULL);
}
SG_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream hStream)
{
    SG_ENTER(cuStreamBeginCapture, API);
    return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, true, NULL);
}

/* Dependencies (a capture's first nodes wait on them) are not modelled:
 * the captured work is appended to the graph, which is linear. */
#define TOGRAPH_PARAMS                                                                 \
    (CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,                \
     const CUgraphEdgeData *dependencyData, size_t numDependencies, CUstreamCaptureMode mode)
SG_EXPORT CUresult cuStreamBeginCaptureToGraph TOGRAPH_PARAMS
{
    SG_ENTER(cuStreamBeginCaptureToGraph, API);
    if (!hGraph)
        return CUDA_ERROR_INVALID_VALUE;
    return begin_capture(hStream, mode, false, hGraph);
}
SG_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz TOGRAPH_PARAMS
{
    SG_ENTER(cuStreamBeginCaptureToGraph, API);
    if (!hGraph)
        return CUDA_ERROR_INVALID_VALUE;
    return begin_capture(hStream, mode, true, hGraph);
}

SG_EXPORT CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    SG_ENTER(cuGraphCreate, API);
    if (!phGraph || flags)
        return CUDA_ERROR_INVALID_VALUE;
    graph_t *g = calloc(1, sizeof *g);
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sg_lock();
    sg_handle_add(g, SG_H_GRAPH);
    sg_unlock();
    *phGraph = (CUgraph)g;
    return CUDA_SUCCESS;
}

/* unjoined: SIMGPU_FAIL named this call, and it fails as the driver does
 * for a capture that forked into a stream it never joined back: the
 * capture is over, its work discarded, and no graph is returned. */
static CUresult end_capture(CUstream hs, CUgraph *out, bool pt, bool unjoined)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    *out = NULL;
    sg_lock();
    sg_stream_t *s = sg_stream_get(hs, pt);
    if (!s || !s->capture) {
        sg_unlock();
        return s ? CUDA_ERROR_ILLEGAL_STATE : CUDA_ERROR_INVALID_HANDLE;
    }
    sg_capture_t *c = s->capture;
    for (sg_capture_t **p = &SG->captures; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    s->capture = NULL;
    CUresult r = CUDA_SUCCESS;
    graph_t *g = NULL;
    if (c->invalidated || unjoined) {
        ops_free(c->head);
        r = unjoined ? CUDA_ERROR_STREAM_CAPTURE_UNJOINED : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else if (c->into) {
        g = c->into;
        sg_op_t **tail = &g->head;
        while (*tail)
            tail = &(*tail)->next;
        *tail = c->head;
        *out = (CUgraph)g;
    } else if (!(g = malloc(sizeof *g))) {
        ops_free(c->head);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        g->head = c->head;
        sg_handle_add(g, SG_H_GRAPH);
        *out = (CUgraph)g;
    }
    free(c);
    sg_unlock();
    return r;
}

#define END_PARAMS (CUstream hStream, CUgraph *phGraph)
static CUresult end_entry(CUstream hs, CUgraph *out, bool pt)
{
    CUresult r = sg_enter(SG_FN_cuStreamEndCapture, SG_COST_API);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
        return r;
    return end_capture(hs, out, pt, r == CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
}
SG_EXPORT CUresult cuStreamEndCapture END_PARAMS
{
    return end_entry(hStream, phGraph, false);
}
SG_EXPORT CUresult cuStreamEndCapture_ptsz END_PARAMS
{
    return end_entry(hStream, phGraph, true);
}

static CUresult capture_info(CUstream hs, bool pt, CUstreamCaptureStatus *status, cuuint64_t *id)
{
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    sg_stream_t *s = sg_stream_get(hs, pt);
    if (!s) {
        sg_unlock();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    sg_capture_t *c = s->capture;
    *status = !c ? CU_STREAM_CAPTURE_STATUS_NONE
                 : c->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                  : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (id && c)
        *id = c->id;
    sg_unlock();
    return CUDA_SUCCESS;
}

#define ISCAP_PARAMS (CUstream hStream, CUstreamCaptureStatus *captureStatus)
SG_EXPORT CUresult cuStreamIsCapturing ISCAP_PARAMS
{
    SG_ENTER(cuStreamIsCapturing, API);
    return capture_info(hStream, false, captureStatus, NULL);
}
SG_EXPORT CUresult cuStreamIsCapturing_ptsz ISCAP_PARAMS
{
    SG_ENTER(cuStreamIsCapturing, API);
    return capture_info(hStream, true, captureStatus, NULL);
}

/* Dependencies and edges are not modelled: a capture is linear, and the
 * lists are reported empty. */
static CUresult info_v3(CUstream hs, bool pt, CUstreamCaptureStatus *st, cuuint64_t *id,
                        CUgraph *graph, const CUgraphNode **deps, const CUgraphEdgeData **edges,
                        size_t *ndeps)
{
    CUresult r = capture_info(hs, pt, st, id);
    if (graph)
        *graph = NULL;
    if (deps)
        *deps = NULL;
    if (edges)
        *edges = NULL;
    if (ndeps)
        *ndeps = 0;
    return r;
}

#define INFO1_PARAMS (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out)
#define INFO2_PARAMS                                                                      \
    (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,      \
     CUgraph *graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out)
#define INFO3_PARAMS                                                                      \
    (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,      \
     CUgraph *graph_out, const CUgraphNode **dependencies_out,                            \
     const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out)

SG_EXPORT CUresult cuStreamGetCaptureInfo INFO1_PARAMS
{
    SG_ENTER(cuStreamGetCaptureInfo, API);
    return capture_info(hStream, false, captureStatus_out, id_out);
}
SG_EXPORT CUresult cuStreamGetCaptureInfo_ptsz INFO1_PARAMS
{
    SG_ENTER(cuStreamGetCaptureInfo, API);
    return capture_info(hStream, true, captureStatus_out, id_out);
}
SG_EXPORT CUresult cuStreamGetCaptureInfo_v2 INFO2_PARAMS
{
    SG_ENTER(cuStreamGetCaptureInfo, API);
    return info_v3(hStream, false, captureStatus_out, id_out, graph_out, dependencies_out, NULL,
                   numDependencies_out);
}
SG_EXPORT CUresult cuStreamGetCaptureInfo_v2_ptsz INFO2_PARAMS
{
    SG_ENTER(cuStreamGetCaptureInfo, API);
    return info_v3(hStream, true, captureStatus_out, id_out, graph_out, dependencies_out, NULL,
                   numDependencies_out);
}
SG_EXPORT CUresult cuStreamGetCaptureInfo_v3 INFO3_PARAMS
{
    SG_ENTER(cuStreamGetCaptureInfo, API);
    return info_v3(hStream, false, captureStatus_out, id_out, graph_out, dependencies_out,
                   edgeData_out, numDependencies_out);
}
SG_EXPORT CUresult cuStreamGetCaptureInfo_v3_ptsz INFO3_PARAMS
{
    SG_ENTER(cuStreamGetCaptureInfo, API);
    return info_v3(hStream, true, captureStatus_out, id_out, graph_out, dependencies_out,
                   edgeData_out, numDependencies_out);
}

/* ---- graphs ---- */

static CUresult instantiate(CUgraphExec *out, CUgraph hg)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    CUresult r = CUDA_SUCCESS;
    graph_t *e = NULL;
    if (sg_handle_kind(hg) != SG_H_GRAPH) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (!(e = calloc(1, sizeof *e))) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        sg_op_t **tail = &e->head;
        for (sg_op_t *op = ((graph_t *)hg)->head; op; op = op->next) {
            if (!(*tail = sg_op_clone(op))) {
                ops_free(e->head);
                free(e);
                sg_unlock();
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            tail = &(*tail)->next;
        }
        sg_handle_add(e, SG_H_EXEC);
        *out = (CUgraphExec)e;
    }
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                               unsigned long long flags)
{
    SG_ENTER(cuGraphInstantiateWithFlags, API);
    return instantiate(phGraphExec, hGraph);
}

SG_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                         CUgraphNode *phErrorNode, char *logBuffer,
                                         size_t bufferSize)
{
    SG_ENTER(cuGraphInstantiate, API);
    return instantiate(phGraphExec, hGraph);
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
    else
        SG->st.graph_launches++;
    for (sg_op_t *op = r == CUDA_SUCCESS ? ((graph_t *)he)->head : NULL; op && !r; op = op->next) {
        sg_op_t *c = sg_op_clone(op);
        r = c ? sg_submit(s, c) : CUDA_ERROR_OUT_OF_MEMORY;
    }
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

static CUresult graph_destroy(void *h, int kind)
{
    sg_lock();
    if (sg_handle_kind(h) != kind) {
        sg_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    sg_handle_del(h);
    ops_free(((graph_t *)h)->head);
    sg_unlock();
    free(h);
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGraphDestroy(CUgraph hGraph)
{
    SG_ENTER(cuGraphDestroy, API);
    return graph_destroy(hGraph, SG_H_GRAPH);
}

SG_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    SG_ENTER(cuGraphExecDestroy, API);
    return graph_destroy(hGraphExec, SG_H_EXEC);
}

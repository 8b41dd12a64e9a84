/*
 * Stream capture, across streams.
 *
 * A capturing stream records ops as graph nodes instead of issuing them.
 * Each stream in a capture has a frontier: the nodes its next op will
 * depend on. Events carry frontiers between streams, as in the driver:
 *
 *   A: BeginCapture ── EventRecord(fork) ── copy ── k1 ─────── Wait(join) ── k3 ── EndCapture
 *                            │                                     ▲
 *   B:               StreamWaitEvent(fork) ── memset ── k2 ── EventRecord(join)
 *
 *   cuEventRecord on a capturing stream makes the event stand for that
 *   stream's frontier (no node). cuStreamWaitEvent on such an event makes
 *   a stream outside any capture join it (its frontier becomes the
 *   event's: a fork), or merges the event's frontier into a stream of the
 *   same capture (a join). Waiting on an event from outside the capture is
 *   CUDA_ERROR_STREAM_CAPTURE_ISOLATION, and waiting on one from another
 *   capture too, unless the wait or record is external
 *   (CU_EVENT_WAIT_EXTERNAL, CU_EVENT_RECORD_EXTERNAL), which records an
 *   event wait or event record node instead.
 *
 * cuStreamEndCapture must be called on the origin stream
 * (CUDA_ERROR_STREAM_CAPTURE_UNMATCHED otherwise), and every other stream
 * that joined must have been joined back into it: each node on another
 * stream's frontier must be an ancestor of the origin's frontier.
 * Otherwise the capture fails with CUDA_ERROR_STREAM_CAPTURE_UNJOINED and
 * no graph is made, as the driver does. Either way every joined stream
 * leaves capture mode.
 *
 * A call that would synchronize during a capture is refused with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture;
 * cuStreamEndCapture then returns CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.
 * spillway must never make one. Graphs and replays: sg_graph.c.
 */
#include "sg.h"

#include <stdlib.h>
#include <string.h>

static uint64_t next_capture_id = 1;

/* ---- frontiers: small sets of node indices ---- */

static bool set_has(const int *set, int n, int v)
{
    for (int i = 0; i < n; i++)
        if (set[i] == v)
            return true;
    return false;
}

/* dst ∪= src. Returns false when out of memory (dst unchanged). */
static bool set_merge(int **dst, int *ndst, const int *src, int nsrc)
{
    int *d = realloc(*dst, (size_t)(*ndst + nsrc + 1) * sizeof *d);
    if (!d)
        return false;
    *dst = d;
    for (int i = 0; i < nsrc; i++)
        if (!set_has(d, *ndst, src[i]))
            d[(*ndst)++] = src[i];
    return true;
}

static void set_clear(int **set, int *n)
{
    free(*set);
    *set = NULL;
    *n = 0;
}

void sg_nodes_free(sg_node_t **nodes, int n)
{
    for (int i = 0; i < n; i++) {
        sg_handle_del(nodes[i]);
        sg_op_put(nodes[i]->op);
        free(nodes[i]->deps);
        free(nodes[i]);
    }
    free(nodes);
}

sg_capture_t *sg_capture_find(uint64_t id)
{
    for (sg_capture_t *c = SG->captures; c; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

static void invalidate(sg_capture_t *c)
{
    c->invalidated = true;
}

/* Adds op as a node on s's lane, after s's frontier, which becomes the
 * new node alone. Consumes op. */
static CUresult add_node(sg_stream_t *s, sg_op_t *op, sg_node_t **out)
{
    sg_capture_t *c = s->capture;
    sg_node_t *n = calloc(1, sizeof *n);
    int *front = malloc(sizeof *front);
    if (c->nnodes == c->nodes_cap) {
        int cap = c->nodes_cap ? 2 * c->nodes_cap : 16;
        sg_node_t **nn = realloc(c->nodes, (size_t)cap * sizeof *nn);
        if (nn) {
            c->nodes = nn;
            c->nodes_cap = cap;
        }
    }
    if (!n || !front || c->nnodes == c->nodes_cap) {
        free(n);
        free(front);
        sg_op_put(op);
        invalidate(c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    /* Dependencies of this issue (the legacy stream, events) are not the
     * graph's: the graph's are the frontier. */
    for (int i = 0; i < op->ndeps; i++)
        sg_op_put(op->deps[i]);
    free(op->deps);
    op->deps = NULL;
    op->ndeps = 0;
    op->next = NULL;
    n->op = op;
    n->deps = s->front;
    n->ndeps = s->nfront;
    n->lane = s->lane;
    front[0] = c->nnodes;
    s->front = front;
    s->nfront = 1;
    c->nodes[c->nnodes++] = n;
    sg_handle_add(n, SG_H_NODE);
    if (out)
        *out = n;
    return CUDA_SUCCESS;
}

CUresult sg_capture_record(sg_stream_t *s, sg_op_t *op)
{
    if (s->capture->invalidated) {
        sg_op_put(op);
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    return add_node(s, op, NULL);
}

CUresult sg_capture_event_record(sg_stream_t *s, sg_event_t *e, bool external)
{
    sg_capture_t *c = s->capture;
    if (c->invalidated)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (external) {
        sg_op_t *op = sg_op_new(SG_OP_MARKER, "cuEventRecord");
        sg_node_t *n = NULL;
        CUresult r = op ? add_node(s, op, &n) : CUDA_ERROR_OUT_OF_MEMORY;
        if (r != CUDA_SUCCESS)
            return r;
        n->record_event = e;
        return CUDA_SUCCESS;
    }
    int *front = NULL, nfront = 0;
    if (!set_merge(&front, &nfront, s->front, s->nfront)) {
        invalidate(c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    free(e->cap_front);
    e->cap_front = front;
    e->ncap_front = nfront;
    e->cap_id = c->id;
    return CUDA_SUCCESS;
}

/* s joins capture c with the given frontier: it records into c from now. */
static CUresult join(sg_stream_t *s, sg_capture_t *c, const int *front, int nfront)
{
    sg_stream_t **ss = realloc(c->streams, (size_t)(c->nstreams + 1) * sizeof *ss);
    if (!ss || !set_merge(&s->front, &s->nfront, front, nfront)) {
        if (ss)
            c->streams = ss;
        invalidate(c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    c->streams = ss;
    s->lane = c->nstreams;
    c->streams[c->nstreams++] = s;
    s->capture = c;
    return CUDA_SUCCESS;
}

CUresult sg_capture_wait(sg_stream_t *s, sg_event_t *e, bool external)
{
    sg_capture_t *ec = e->cap_id ? sg_capture_find(e->cap_id) : NULL;
    sg_capture_t *sc = s->capture;
    if (!ec && !sc)
        return CUDA_ERROR_NOT_FOUND;
    /* A never-recorded event is complete: there is nothing to wait for. */
    if (!ec && !e->op && !external)
        return sc->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS;
    if (sc && sc->invalidated)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (sc && external) {
        sg_op_t *op = sg_op_new(SG_OP_MARKER, "cuStreamWaitEvent");
        sg_node_t *n = NULL;
        CUresult r = op ? add_node(s, op, &n) : CUDA_ERROR_OUT_OF_MEMORY;
        if (r == CUDA_SUCCESS)
            n->wait_event = e;
        return r;
    }
    if (sc && ec == sc) {
        if (!set_merge(&s->front, &s->nfront, e->cap_front, e->ncap_front)) {
            invalidate(sc);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        return CUDA_SUCCESS;
    }
    if (!sc) {
        /* The legacy stream cannot take part in a capture. */
        if (s == SG->legacy) {
            invalidate(ec);
            return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        }
        return join(s, ec, e->cap_front, e->ncap_front);
    }
    /* An event recorded outside this capture: a dependency that crosses
     * the capture's boundary. */
    invalidate(sc);
    if (ec)
        invalidate(ec);
    return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
}

/* This thread's capture interaction mode (cuThreadExchangeStreamCaptureMode):
 * which captures an unsafe call of its own breaks. GLOBAL, the default:
 * its own (unless RELAXED) and any other thread's GLOBAL ones;
 * THREAD_LOCAL: its own (unless RELAXED); RELAXED: none. */
static __thread CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

CUresult sg_capture_guard(sg_stream_t *stream)
{
    CUresult r = CUDA_SUCCESS;
    for (sg_capture_t *c = SG->captures; c; c = c->next) {
        bool hit, own = pthread_equal(c->thread, pthread_self());
        if (stream)
            hit = stream->capture == c;
        else if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
            hit = false;
        else if (own)
            hit = c->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
        else
            hit = thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                  c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
        if (hit) {
            invalidate(c);
            r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
    }
    return r;
}

/* ---- capture API ---- */

/* PyTorch's caching allocator sets RELAXED around every allocation it
 * makes during a capture, and puts the old mode back after. */
SG_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    SG_ENTER(cuThreadExchangeStreamCaptureMode, API);
    if (!mode || (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
                  *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
                  *mode != CU_STREAM_CAPTURE_MODE_RELAXED))
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

static CUresult begin_capture(CUstream hs, CUstreamCaptureMode mode, bool pt, void *into)
{
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    sg_stream_t *s = sg_stream_get(hs, pt);
    CUresult r = CUDA_SUCCESS;
    sg_capture_t *c = NULL;
    if (!s)
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (s == SG->legacy)
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the legacy stream cannot be captured */
    else if (s->capture)
        r = CUDA_ERROR_ILLEGAL_STATE;
    else if (into && sg_handle_kind(into) != SG_H_GRAPH)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!(c = calloc(1, sizeof *c)) || !(c->streams = malloc(sizeof *c->streams)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        c->stream = s;
        c->mode = mode;
        c->into = into;
        c->thread = pthread_self();
        c->id = next_capture_id++;
        c->streams[0] = s;
        c->nstreams = 1;
        c->next = SG->captures;
        SG->captures = c;
        s->capture = c;
        s->lane = 0;
        set_clear(&s->front, &s->nfront);
    } else if (c) {
        free(c);
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

/* Marks in anc every ancestor of the nodes in front (themselves included). */
static void ancestors(const sg_capture_t *c, const int *front, int nfront, bool *anc)
{
    for (int i = 0; i < nfront; i++)
        anc[front[i]] = true;
    /* Capture order is topological: one backward sweep finds them all. */
    for (int i = c->nnodes - 1; i >= 0; i--)
        if (anc[i])
            for (int d = 0; d < c->nodes[i]->ndeps; d++)
                anc[c->nodes[i]->deps[d]] = true;
}

/* Work on a joined stream that the origin never waited for. */
static bool unjoined(const sg_capture_t *c)
{
    bool *anc = calloc((size_t)c->nnodes + 1, sizeof *anc);
    if (!anc)
        return true;
    const sg_stream_t *o = c->streams[0];
    ancestors(c, o->front, o->nfront, anc);
    bool bad = false;
    for (int i = 1; i < c->nstreams && !bad; i++)
        for (int j = 0; j < c->streams[i]->nfront; j++)
            bad |= !anc[c->streams[i]->front[j]];
    free(anc);
    return bad;
}

/* Dependencies (a capture's first nodes wait on them) are not modelled:
 * the captured nodes are appended to the graph's (sg_graph_append). */
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

/* fail_unjoined: SIMGPU_FAIL named this call, and it fails as the driver
 * does for a capture that forked into a stream it never joined back: the
 * capture is over, its work discarded, and no graph is returned. */
static CUresult end_capture(CUstream hs, CUgraph *out, bool pt, bool fail_unjoined)
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
    if (c->stream != s) {
        invalidate(c);
        sg_unlock();
        return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    }
    for (sg_capture_t **p = &SG->captures; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    CUresult r = CUDA_SUCCESS;
    if (c->invalidated)
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    else if (fail_unjoined || unjoined(c))
        r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    for (int i = 0; i < c->nstreams; i++) {
        c->streams[i]->capture = NULL;
        c->streams[i]->lane = 0;
        set_clear(&c->streams[i]->front, &c->streams[i]->nfront);
    }
    if (r == CUDA_SUCCESS && c->into) {
        r = sg_graph_append(c->into, c->nodes, c->nnodes, c->nstreams);
        if (r == CUDA_SUCCESS)
            *out = c->into;
    } else if (r == CUDA_SUCCESS) {
        r = sg_graph_new(c->nodes, c->nnodes, c->nstreams, out);
    } else {
        sg_nodes_free(c->nodes, c->nnodes);
    }
    free(c->streams);
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

/* The stream's frontier as node handles, in a buffer of the stream's that
 * stays valid until the next such call (the driver's: until the next API
 * call on the stream). False when out of memory. g.lock held. */
static bool frontier_out(sg_stream_t *s, const CUgraphNode **deps, size_t *ndeps)
{
    CUgraphNode *out = realloc(s->deps_out, ((size_t)s->nfront + 1) * sizeof *out);
    if (!out)
        return false;
    s->deps_out = out;
    for (int i = 0; i < s->nfront; i++)
        out[i] = (CUgraphNode)s->capture->nodes[s->front[i]];
    if (deps)
        *deps = s->nfront ? out : NULL;
    if (ndeps)
        *ndeps = (size_t)s->nfront;
    return true;
}

/* The graph under construction is not handed out: it does not exist as a
 * CUgraph until the capture ends. The stream's frontier is (its nodes are
 * what cuStreamUpdateCaptureDependencies takes); its edges carry no data. */
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
    if (r != CUDA_SUCCESS || *st != CU_STREAM_CAPTURE_STATUS_ACTIVE || (!deps && !ndeps))
        return r;
    sg_lock();
    sg_stream_t *s = sg_stream_get(hs, pt);
    if (s && s->capture && !frontier_out(s, deps, ndeps))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    sg_unlock();
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

/* ---- cuStreamUpdateCaptureDependencies ----
 * Replaces (SET) or extends (ADD) the frontier of a capturing stream: the
 * nodes its next captured op will depend on. The nodes must be the
 * capture's own. Edges here carry no data, so edge data other than the
 * default (all zero) is CUDA_ERROR_NOT_SUPPORTED. */
static bool edge_default(const CUgraphEdgeData *e)
{
    static const CUgraphEdgeData zero;
    return memcmp(e, &zero, sizeof zero) == 0;
}

static CUresult update_deps(CUstream hs, CUgraphNode *deps, const CUgraphEdgeData *data,
                            size_t n, unsigned flags, bool pt)
{
    if (flags > CU_STREAM_SET_CAPTURE_DEPENDENCIES || (n && !deps) || n > INT32_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; data && i < n; i++)
        if (!edge_default(&data[i]))
            return CUDA_ERROR_NOT_SUPPORTED;
    int *idx = malloc((n + 1) * sizeof *idx);
    if (!idx)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sg_lock();
    sg_stream_t *s = sg_stream_get(hs, pt);
    sg_capture_t *c = s ? s->capture : NULL;
    CUresult r = !s ? CUDA_ERROR_INVALID_HANDLE
                 : !c ? CUDA_ERROR_ILLEGAL_STATE
                 : c->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                                  : CUDA_SUCCESS;
    for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
        idx[i] = -1;
        for (int j = 0; j < c->nnodes && idx[i] < 0; j++)
            if ((CUgraphNode)c->nodes[j] == deps[i])
                idx[i] = j;
        if (idx[i] < 0)
            r = CUDA_ERROR_INVALID_VALUE; /* not a node of this capture */
    }
    if (r == CUDA_SUCCESS) {
        int *front = NULL, nfront = 0;
        if (flags == CU_STREAM_ADD_CAPTURE_DEPENDENCIES &&
            !set_merge(&front, &nfront, s->front, s->nfront))
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else if (!set_merge(&front, &nfront, idx, (int)n))
            r = CUDA_ERROR_OUT_OF_MEMORY;
        if (r == CUDA_SUCCESS) {
            free(s->front);
            s->front = front;
            s->nfront = nfront;
        } else {
            free(front);
        }
    }
    sg_unlock();
    free(idx);
    return r;
}

#define UPDATE_PARAMS (CUstream hStream, CUgraphNode *dependencies, size_t numDependencies, \
                       unsigned int flags)
#define UPDATE2_PARAMS                                                                   \
    (CUstream hStream, CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData, \
     size_t numDependencies, unsigned int flags)

SG_EXPORT CUresult cuStreamUpdateCaptureDependencies UPDATE_PARAMS
{
    SG_ENTER(cuStreamUpdateCaptureDependencies, API);
    return update_deps(hStream, dependencies, NULL, numDependencies, flags, false);
}
SG_EXPORT CUresult cuStreamUpdateCaptureDependencies_ptsz UPDATE_PARAMS
{
    SG_ENTER(cuStreamUpdateCaptureDependencies, API);
    return update_deps(hStream, dependencies, NULL, numDependencies, flags, true);
}
SG_EXPORT CUresult cuStreamUpdateCaptureDependencies_v2 UPDATE2_PARAMS
{
    SG_ENTER(cuStreamUpdateCaptureDependencies, API);
    return update_deps(hStream, dependencies, dependencyData, numDependencies, flags, false);
}
SG_EXPORT CUresult cuStreamUpdateCaptureDependencies_v2_ptsz UPDATE2_PARAMS
{
    SG_ENTER(cuStreamUpdateCaptureDependencies, API);
    return update_deps(hStream, dependencies, dependencyData, numDependencies, flags, true);
}

/*
 * The stream and event API over sg_stream.c: create, destroy, query,
 * synchronize, wait, record, elapsed time, and host functions.
 * Queries answer from virtual time (see sg_op_vt_done), so a polling loop
 * behaves the same on every run.
 */
#include "sg.h"

#include <stdlib.h>

/* Resolves a stream under g.lock, or returns INVALID_HANDLE. */
#define WITH_STREAM(s, hs, pt)                      \
    sg_lock();                                      \
    sg_stream_t *s = sg_stream_get(hs, pt);         \
    if (!s) {                                       \
        sg_unlock();                                \
        return CUDA_ERROR_INVALID_HANDLE;           \
    }

static CUresult stream_create(CUstream *ph, unsigned flags, int priority)
{
    CUresult r = sg_need_ctx();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ph || (flags & ~CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    priority = priority < -5 ? -5 : priority > 0 ? 0 : priority;
    sg_lock();
    sg_stream_t *s;
    r = sg_stream_create(flags, priority, &s);
    sg_unlock();
    if (r == CUDA_SUCCESS)
        *ph = (CUstream)s;
    return r;
}

/* Priorities range over [-5, 0] as on Hopper; lower is higher. */
SG_EXPORT CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    SG_ENTER(cuCtxGetStreamPriorityRange, API);
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    SG_ENTER(cuStreamCreate, API);
    return stream_create(phStream, Flags, 0);
}

SG_EXPORT CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    SG_ENTER(cuStreamCreateWithPriority, API);
    return stream_create(phStream, flags, priority);
}

SG_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream)
{
    SG_ENTER(cuStreamDestroy, API);
    sg_lock();
    CUresult r = sg_is_stream(hStream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    /* A stream that is part of a capture must end it or be joined back
     * first; destroying it would leave the capture without its work. */
    if (r == CUDA_SUCCESS && ((sg_stream_t *)hStream)->capture) {
        ((sg_stream_t *)hStream)->capture->invalidated = true;
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (r == CUDA_SUCCESS)
        sg_stream_destroy((sg_stream_t *)hStream);
    sg_unlock();
    return r;
}

static CUresult stream_query(CUstream hs, bool pt)
{
    WITH_STREAM(s, hs, pt);
    CUresult r = s->capture ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : SG->sticky;
    if (r == CUDA_SUCCESS && s->last && !sg_op_vt_done(s->last))
        r = CUDA_ERROR_NOT_READY;
    sg_unlock();
    return r;
}

static CUresult stream_sync(CUstream hs, bool pt)
{
    WITH_STREAM(s, hs, pt);
    CUresult r = sg_capture_guard(s);
    if (r == CUDA_SUCCESS)
        r = sg_stream_sync(s);
    sg_unlock();
    return r;
}

/* In a capture, a wait forks, joins or refuses (sg_capture_wait);
 * otherwise it orders s after the event's marker. */
static CUresult stream_wait(CUstream hs, CUevent he, unsigned flags, bool pt)
{
    WITH_STREAM(s, hs, pt);
    CUresult r = CUDA_SUCCESS;
    if (!sg_is_event(he))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
        r = CUDA_ERROR_INVALID_VALUE;
    sg_event_t *e = (sg_event_t *)he;
    if (r == CUDA_SUCCESS) {
        r = sg_capture_wait(s, e, flags & CU_EVENT_WAIT_EXTERNAL);
        if (r != CUDA_ERROR_NOT_FOUND) {
            sg_unlock();
            return r;
        }
        r = CUDA_SUCCESS;
    }
    if (r == CUDA_SUCCESS && e->op) {
        sg_op_t *op = sg_op_new(SG_OP_MARKER, "cuStreamWaitEvent");
        if (!op) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            sg_op_add_dep(op, e->op);
            r = sg_submit(s, op);
        }
    }
    sg_unlock();
    return r;
}

static CUresult stream_priority(CUstream hs, int *priority, bool pt)
{
    if (!priority)
        return CUDA_ERROR_INVALID_VALUE;
    WITH_STREAM(s, hs, pt);
    *priority = s->priority;
    sg_unlock();
    return CUDA_SUCCESS;
}

static CUresult stream_flags(CUstream hs, unsigned *flags, bool pt)
{
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    WITH_STREAM(s, hs, pt);
    *flags = s->flags;
    sg_unlock();
    return CUDA_SUCCESS;
}

/* A stream's context: its device's primary one; the legacy and
 * per-thread streams belong to the current context. */
static CUresult stream_ctx(CUstream hs, CUcontext *pctx, bool pt)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    WITH_STREAM(s, hs, pt);
    int dev = s->device >= 0 ? s->device : sg_current_device();
    sg_unlock();
    if (dev < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    *pctx = sg_primary_ctx(dev);
    return CUDA_SUCCESS;
}

static CUresult host_func(CUstream hs, CUhostFn fn, void *user, bool pt)
{
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    sg_op_t *op = sg_op_new(SG_OP_HOST_FUNC, "cuLaunchHostFunc");
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->fn = fn;
    op->user = user;
    sg_lock();
    sg_stream_t *s = sg_stream_get(hs, pt);
    CUresult r = s ? sg_submit(s, op) : CUDA_ERROR_INVALID_HANDLE;
    if (!s)
        sg_op_put(op);
    sg_unlock();
    return r;
}


/* Each pair: the legacy entry point and its per-thread twin. */
#define PAIR(sym, fn, cost, params, impl, ...)                     \
    SG_EXPORT CUresult sym params                                  \
    {                                                              \
        SG_ENTER(fn, cost);                                        \
        return impl(__VA_ARGS__, false);                           \
    }                                                              \
    SG_EXPORT CUresult sym##_ptsz params                           \
    {                                                              \
        SG_ENTER(fn, cost);                                        \
        return impl(__VA_ARGS__, true);                            \
    }

PAIR(cuStreamQuery, cuStreamQuery, API, (CUstream hStream), stream_query, hStream)
PAIR(cuStreamSynchronize, cuStreamSynchronize, API, (CUstream hStream), stream_sync, hStream)
PAIR(cuStreamWaitEvent, cuStreamWaitEvent, API, (CUstream hStream, CUevent hEvent, unsigned int Flags),
     stream_wait, hStream, hEvent, Flags)
PAIR(cuStreamGetPriority, cuStreamGetPriority, API, (CUstream hStream, int *priority),
     stream_priority, hStream, priority)
PAIR(cuStreamGetFlags, cuStreamGetFlags, API, (CUstream hStream, unsigned int *flags),
     stream_flags, hStream, flags)
PAIR(cuStreamGetCtx, cuStreamGetCtx, API, (CUstream hStream, CUcontext *pctx), stream_ctx,
     hStream, pctx)
PAIR(cuLaunchHostFunc, cuLaunchHostFunc, API, (CUstream hStream, CUhostFn fn, void *userData),
     host_func, hStream, fn, userData)

/* cuStreamAddCallback: a host function in stream order that gets the
 * stream handle as given, CUDA_SUCCESS, and userData (a context with a
 * sticky error runs no later work, callbacks included). cuLaunchHostFunc
 * is its capturable successor; simgpu refuses a callback on a capturing
 * stream with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the
 * capture, as it does other work it cannot record. */
static CUresult add_callback(CUstream hs, CUstreamCallback cb, void *user, unsigned flags, bool pt)
{
    if (!cb || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    sg_op_t *op = sg_op_new(SG_OP_HOST_FUNC, "cuStreamAddCallback");
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->callback = cb;
    op->callback_stream = hs;
    op->user = user;
    sg_lock();
    sg_stream_t *s = sg_stream_get(hs, pt);
    CUresult r = !s ? CUDA_ERROR_INVALID_HANDLE : s->capture ? sg_capture_guard(s) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS)
        r = sg_submit(s, op);
    else
        sg_op_put(op);
    sg_unlock();
    return r;
}

PAIR(cuStreamAddCallback, cuStreamAddCallback, API,
     (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags),
     add_callback, hStream, callback, userData, flags)

/* ---- events ---- */

SG_EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    SG_ENTER(cuEventCreate, API);
    if (!phEvent || (Flags & ~(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                               CU_EVENT_INTERPROCESS)))
        return CUDA_ERROR_INVALID_VALUE;
    sg_event_t *e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->flags = Flags;
    e->device = sg_current_device();
    sg_lock();
    sg_handle_add(e, SG_H_EVENT);
    sg_unlock();
    *phEvent = (CUevent)e;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuEventDestroy_v2(CUevent hEvent)
{
    SG_ENTER(cuEventDestroy, API);
    sg_lock();
    if (!sg_is_event(hEvent)) {
        sg_unlock();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    sg_event_t *e = (sg_event_t *)hEvent;
    sg_handle_del(e);
    sg_op_put(e->op);
    sg_unlock();
    free(e->cap_front);
    free(e);
    return CUDA_SUCCESS;
}

/* Records a marker. On a capturing stream the event instead stands for
 * the stream's place in the capture (sg_capture_event_record). The event
 * and the stream must be of one device, as in the driver; the legacy and
 * per-thread streams record in the current context, so there the current
 * device counts. (A wait across devices is allowed: stream_wait.) */
static CUresult event_record_flags(CUevent he, CUstream hs, unsigned flags, bool pt)
{
    WITH_STREAM(s, hs, pt);
    CUresult r = sg_is_event(he) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    int dev = s->device >= 0 ? s->device : sg_current_device();
    if (r == CUDA_SUCCESS && sg_other_device(((sg_event_t *)he)->device, dev))
        r = CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS && (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && s->capture) {
        r = sg_capture_event_record(s, (sg_event_t *)he, flags & CU_EVENT_RECORD_EXTERNAL);
        sg_unlock();
        return r;
    }
    sg_op_t *op = r == CUDA_SUCCESS ? sg_op_new(SG_OP_MARKER, "cuEventRecord") : NULL;
    if (r == CUDA_SUCCESS && !op)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (op) {
        op->refs++;
        r = sg_submit(s, op);
        if (r == CUDA_SUCCESS) {
            sg_event_t *e = (sg_event_t *)he;
            sg_op_put(e->op);
            e->op = op; /* takes the extra reference */
            e->time_ns = op->end_ns;
            e->cap_id = 0;
        } else {
            sg_op_put(op);
        }
    }
    sg_unlock();
    return r;
}

static CUresult event_record(CUevent he, CUstream hs, bool pt)
{
    return event_record_flags(he, hs, 0, pt);
}

PAIR(cuEventRecordWithFlags, cuEventRecord, API,
     (CUevent hEvent, CUstream hStream, unsigned int flags), event_record_flags, hEvent, hStream,
     flags)
PAIR(cuEventRecord, cuEventRecord, API, (CUevent hEvent, CUstream hStream), event_record,
     hEvent, hStream)

SG_EXPORT CUresult cuEventQuery(CUevent hEvent)
{
    SG_ENTER(cuEventQuery, API);
    sg_lock();
    sg_event_t *e = (sg_event_t *)hEvent;
    CUresult r = sg_is_event(e) ? SG->sticky : CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS && e->op && !sg_op_vt_done(e->op))
        r = CUDA_ERROR_NOT_READY;
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuEventSynchronize(CUevent hEvent)
{
    SG_ENTER(cuEventSynchronize, API);
    sg_lock();
    sg_event_t *e = (sg_event_t *)hEvent;
    CUresult r = sg_is_event(e) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS && e->op)
        sg_op_wait(e->op);
    if (r == CUDA_SUCCESS)
        r = SG->sticky;
    sg_unlock();
    return r;
}

static CUresult elapsed(float *ms, CUevent hs, CUevent he)
{
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    sg_event_t *s = (sg_event_t *)hs, *e = (sg_event_t *)he;
    CUresult r = CUDA_SUCCESS;
    if (!sg_is_event(s) || !sg_is_event(e) || !s->op || !e->op ||
        ((s->flags | e->flags) & CU_EVENT_DISABLE_TIMING))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (!s->op->done || !e->op->done)
        r = CUDA_ERROR_NOT_READY;
    else
        *ms = (float)((double)((int64_t)e->time_ns - (int64_t)s->time_ns) / 1e6);
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    SG_ENTER(cuEventElapsedTime, API);
    return elapsed(pMilliseconds, hStart, hEnd);
}

SG_EXPORT CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    SG_ENTER(cuEventElapsedTime, API);
    return elapsed(pMilliseconds, hStart, hEnd);
}

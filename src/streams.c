/*
 * The application's streams, as spillway's own stream must see them: it
 * is ordered after all of the application's work before it reads or
 * writes memory that work may touch (the streaming window's copies, the
 * remapping window's commit points), and the application can be ordered
 * after it.
 *
 * Three lists, with no cap (PyTorch's stream pools alone make 64 or more),
 * under ss.lock:
 *   seen     every stream already classified: noted when made, and at
 *            every launch, copy, memset, memory operation and replay on
 *            it, so that one made where spillway cannot see (a green
 *            context's) is listed before its work can write home;
 *   app      the non-blocking ones: spillway's stream is ordered after
 *            each, and each after spillway's latest work when asked;
 *   retired  an event recorded on each destroyed stream just before
 *            cuStreamDestroy, which returns while its work is still
 *            queued: the next ordering waits for that work too.
 * Blocking streams are covered through the legacy stream of each context.
 * An event may be recorded only on a stream of its own device, so each
 * context gets its own ordering event, and each non-blocking stream is
 * listed with its context (cuStreamGetCtx; where the driver lacks it, the
 * context current when the stream was first seen, the one it was made
 * in). A context that is gone has no work left: its streams leave the
 * lists and its legacy stream is not waited for. Should a list fail to
 * grow, `unordered` is set for good and callers fall back to
 * synchronizing. The launch path looks a stream up in a per-thread cache
 * of recent streams first; forgetting a stream bumps `gen`, which empties
 * every cache. This file calls the driver, and devices.c for the
 * contexts.
 */
#include "device.h"

#include <stdlib.h>
#include <string.h>

#define MAX_ORDER_CTX SW_MAX_CONTEXTS

static struct {
    pthread_mutex_t lock;     /* the lists, the ordering events and latest */
    sw_list_t seen, app, retired;
    sw_list_t app_ctx;        /* app's contexts, index for index */
    bool unordered;           /* a non-blocking stream is in no list */
    uint64_t gen;             /* bumped when a stream is forgotten */
    CUcontext order_ctx[MAX_ORDER_CTX]; /* sw_streams_order_all's events, */
    CUevent order_ev[MAX_ORDER_CTX];    /* one per context, made on first use */
    int norder;
    CUevent latest;           /* what a newly seen non-blocking stream waits for */
} ss = {.lock = PTHREAD_MUTEX_INITIALIZER};

bool sw_streams_unordered(void)
{
    return __atomic_load_n(&ss.unordered, __ATOMIC_ACQUIRE);
}

static bool list_add(sw_list_t *l, void *v)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        void **nv = realloc(l->v, (size_t)cap * sizeof *nv);
        if (!nv)
            return false;
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
    return true;
}

/* Removes v if listed, and the entry of `also` at the same index (a list
 * kept beside l, or NULL); whether it was. */
static bool list_drop(sw_list_t *l, const void *v, sw_list_t *also)
{
    for (int i = 0; i < l->n; i++)
        if (l->v[i] == v) {
            l->v[i] = l->v[--l->n];
            if (also)
                also->v[i] = also->v[--also->n];
            return true;
        }
    return false;
}

static bool list_has(const sw_list_t *l, const void *v)
{
    for (int i = 0; i < l->n; i++)
        if (l->v[i] == v)
            return true;
    return false;
}

/* A capturing stream may not wait for an event recorded outside its
 * capture; one that cannot say is taken to be capturing. */
static bool stream_capturing(CUstream s)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    return !SW_REAL(cuStreamIsCapturing) || SW_REAL(cuStreamIsCapturing)(s, &st) != CUDA_SUCCESS ||
           st != CU_STREAM_CAPTURE_STATUS_NONE;
}

#define RECENT 8
static __thread struct {
    uint64_t gen;
    CUstream s[RECENT];
    int next;
} recent;

/* Classifies s; false if it could not be (its flags unreadable). Lock
 * held. */
static bool classify(CUstream s)
{
    unsigned flags = 0;
    if (list_has(&ss.seen, s))
        return true;
    if (SW_REAL(cuStreamGetFlags)(s, &flags) != CUDA_SUCCESS)
        return false;
    /* Blocking streams are covered through the legacy stream. A
     * non-blocking one seen for the first time may have been made after
     * the latest commit ordered the streams it knew: it waits for that
     * commit's copies here, or it could read a slot before its bytes
     * arrive. A commit records batch_ev before it takes this lock to order
     * its streams, so one of the two covers s. */
    if (flags & CU_STREAM_NON_BLOCKING) {
        /* Listed with its context; with none known, not yet. */
        CUcontext ctx = NULL;
        if (SW_CALL(cuStreamGetCtx, (s, &ctx)) != CUDA_SUCCESS &&
            SW_CALL(cuCtxGetCurrent, (&ctx)) != CUDA_SUCCESS)
            return false;
        if (!ctx)
            return false;
        bool listed = list_add(&ss.app_ctx, ctx);
        if (listed && !list_add(&ss.app, s)) {
            ss.app_ctx.n--;
            listed = false;
        }
        if (!listed && !__atomic_load_n(&ss.unordered, __ATOMIC_RELAXED)) {
            __atomic_store_n(&ss.unordered, true, __ATOMIC_RELEASE);
            sw_warn("cannot record stream %p: each commit point now synchronizes the device",
                    (void *)s);
        }
        if (ss.latest && !stream_capturing(s))
            SW_REAL(cuStreamWaitEvent)(s, ss.latest, 0);
    }
    if (!list_add(&ss.seen, s))
        return false; /* classified again next time: harmless */
    return true;
}

void sw_streams_note(CUstream s)
{
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return;
    uint64_t gen = __atomic_load_n(&ss.gen, __ATOMIC_ACQUIRE);
    if (recent.gen == gen) {
        for (int i = 0; i < RECENT; i++)
            if (recent.s[i] == s)
                return;
    } else {
        memset(&recent, 0, sizeof recent);
        recent.gen = gen;
    }
    pthread_mutex_lock(&ss.lock);
    bool known = classify(s);
    /* Cached only if no stream was forgotten meanwhile. */
    if (known && __atomic_load_n(&ss.gen, __ATOMIC_ACQUIRE) == gen) {
        recent.s[recent.next] = s;
        recent.next = (recent.next + 1) % RECENT;
    }
    pthread_mutex_unlock(&ss.lock);
}

CUresult sw_note_stream(CUresult r, CUstream *s)
{
    if (r == CUDA_SUCCESS && s && !sw_opts()->disable)
        sw_streams_note(*s);
    return r;
}

/* Drops retired events whose work is done. Lock held. */
static void prune_retired(void)
{
    for (int i = 0; i < ss.retired.n; i++)
        if (SW_REAL(cuEventQuery)((CUevent)ss.retired.v[i]) == CUDA_SUCCESS) {
            SW_REAL(cuEventDestroy_v2)((CUevent)ss.retired.v[i]);
            ss.retired.v[i--] = ss.retired.v[--ss.retired.n];
        }
}

/* Retires s: its queued work is marked by an event the next commit waits
 * for, then s leaves the lists before the driver may reuse its handle.
 * Without an event, the host waits for s here instead. */
CUresult sw_forget_stream(CUstream s, CUresult (*destroy)(CUstream))
{
    if (!destroy)
        return CUDA_ERROR_NOT_FOUND;
    if (sw_opts()->disable || s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return destroy(s);
    const sw_real_t *r = sw_real();
    pthread_mutex_lock(&ss.lock);
    prune_retired();
    CUevent ev = NULL;
    if (r->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        ev = NULL;
    else if (r->cuEventRecord(ev, s) != CUDA_SUCCESS || !list_add(&ss.retired, ev)) {
        r->cuEventDestroy_v2(ev);
        ev = NULL;
    }
    /* An invalid or capturing s fails here as it will in destroy(). */
    if (!ev)
        r->cuStreamSynchronize(s);
    list_drop(&ss.app, s, &ss.app_ctx);
    list_drop(&ss.seen, s, NULL);
    __atomic_add_fetch(&ss.gen, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ss.lock);
    return destroy(s);
}

/* Makes ctx current in place of `current` (nothing to do when it is);
 * false when it cannot be, *gone when because ctx no longer exists (it
 * then has no work left to wait for). */
static bool enter(CUcontext ctx, CUcontext current, bool *gone)
{
    *gone = false;
    if (ctx == current)
        return true;
    CUresult r = SW_CALL(cuCtxSetCurrent, (ctx));
    *gone = r == CUDA_ERROR_INVALID_CONTEXT || r == CUDA_ERROR_CONTEXT_IS_DESTROYED;
    return r == CUDA_SUCCESS;
}

/* Puts the application's context back after enter(ctx). */
static void leave(CUcontext ctx, CUcontext current)
{
    if (ctx != current && SW_CALL(cuCtxSetCurrent, (current)) != CUDA_SUCCESS)
        sw_error("cannot make context %p current again: this thread is left on %p",
                 (void *)current, (void *)ctx);
}

/* ctx's ordering event, made with ctx current on first use; NULL when it
 * cannot be made (*gone: ctx no longer exists). Lock held. */
static CUevent order_event(CUcontext ctx, CUcontext current, bool *gone)
{
    *gone = false;
    for (int i = 0; i < ss.norder; i++)
        if (ss.order_ctx[i] == ctx)
            return ss.order_ev[i];
    CUevent ev = NULL;
    if (ss.norder == MAX_ORDER_CTX || !enter(ctx, current, gone))
        return NULL;
    if (SW_REAL(cuEventCreate)(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        ev = NULL;
    leave(ctx, current);
    if (ev) {
        ss.order_ctx[ss.norder] = ctx;
        ss.order_ev[ss.norder++] = ev;
    }
    return ev;
}

/* A record of ctx's event failed: ctx may be gone, and its handle may
 * come back as another context's, so its event is made anew next time.
 * Lock held. */
static void forget_event(CUcontext ctx)
{
    for (int i = 0; i < ss.norder; i++)
        if (ss.order_ctx[i] == ctx) {
            SW_REAL(cuEventDestroy_v2)(ss.order_ev[i]);
            ss.order_ctx[i] = ss.order_ctx[--ss.norder];
            ss.order_ev[i] = ss.order_ev[ss.norder];
            return;
        }
}

/* st waits for ctx's legacy stream (its blocking streams); true too when
 * ctx is gone. Lock held. */
static bool order_legacy(CUstream st, CUcontext ctx, CUcontext current)
{
    const sw_real_t *r = sw_real();
    bool gone;
    CUevent ev = order_event(ctx, current, &gone);
    if (!ev || !enter(ctx, current, &gone))
        return gone;
    bool ok = r->cuEventRecord(ev, CU_STREAM_LEGACY) == CUDA_SUCCESS &&
              r->cuStreamWaitEvent(st, ev, 0) == CUDA_SUCCESS;
    leave(ctx, current);
    if (!ok)
        forget_event(ctx);
    return ok;
}

/* st waits for app stream i; a stream whose context is gone went with it
 * and leaves the lists (*dropped). Lock held. */
static bool order_app(CUstream st, int i, CUcontext current, bool *dropped)
{
    const sw_real_t *r = sw_real();
    CUstream s = (CUstream)ss.app.v[i];
    CUcontext ctx = (CUcontext)ss.app_ctx.v[i];
    bool gone;
    CUevent ev = order_event(ctx, current, &gone);
    *dropped = gone;
    if (gone) {
        list_drop(&ss.app, s, &ss.app_ctx);
        list_drop(&ss.seen, s, NULL);
        __atomic_add_fetch(&ss.gen, 1, __ATOMIC_RELEASE);
        return true;
    }
    bool ok = ev && r->cuEventRecord(ev, s) == CUDA_SUCCESS &&
              r->cuStreamWaitEvent(st, ev, 0) == CUDA_SUCCESS;
    if (ev && !ok)
        forget_event(ctx);
    return ok;
}

bool sw_streams_order_all(CUstream st, sw_list_t *waited)
{
    const sw_real_t *r = sw_real();
    CUcontext current = NULL, others[SW_MAX_CONTEXTS];
    int nothers = sw_dev_contexts(others, SW_MAX_CONTEXTS);
    pthread_mutex_lock(&ss.lock);
    bool ok = !__atomic_load_n(&ss.unordered, __ATOMIC_ACQUIRE) &&
              SW_CALL(cuCtxGetCurrent, (&current)) == CUDA_SUCCESS && current &&
              order_legacy(st, current, current);
    /* Every other context spillway knows may have blocking work too. */
    for (int i = 0; i < nothers && ok; i++)
        ok = others[i] == current || order_legacy(st, others[i], current);
    /* One event per context serves its streams: a wait takes the record
     * before it. */
    for (int i = 0; i < ss.app.n && ok; i++) {
        bool dropped;
        ok = order_app(st, i, current, &dropped);
        i -= dropped; /* the last stream took its place */
    }
    for (int i = 0; i < ss.retired.n && ok; i++)
        ok = r->cuStreamWaitEvent(st, (CUevent)ss.retired.v[i], 0) == CUDA_SUCCESS;
    if (waited) {
        *waited = ss.retired;
        ss.retired = (sw_list_t){0};
    }
    pthread_mutex_unlock(&ss.lock);
    return ok;
}

CUresult sw_streams_order(CUstream st)
{
    return sw_streams_order_all(st, NULL) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

void sw_streams_release(sw_list_t *waited, bool done)
{
    pthread_mutex_lock(&ss.lock);
    for (int i = 0; i < waited->n; i++) {
        CUevent ev = waited->v[i];
        if (done || !list_add(&ss.retired, ev)) {
            if (!done) /* no room to keep it: wait for it here */
                SW_REAL(cuEventSynchronize)(ev);
            SW_REAL(cuEventDestroy_v2)(ev);
        }
    }
    pthread_mutex_unlock(&ss.lock);
    free(waited->v);
}

void sw_streams_wait(CUevent ev)
{
    const sw_real_t *r = sw_real();
    r->cuStreamWaitEvent(CU_STREAM_LEGACY, ev, 0);
    pthread_mutex_lock(&ss.lock);
    ss.latest = ev;
    for (int i = 0; i < ss.app.n; i++)
        r->cuStreamWaitEvent((CUstream)ss.app.v[i], ev, 0);
    pthread_mutex_unlock(&ss.lock);
}


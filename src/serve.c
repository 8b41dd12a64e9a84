/*
 * The streaming window's part of a launch: which named allocations are
 * read from window copies (window_use.c decides each), and the launch's
 * arguments rewritten into this thread's room to point at them, pointer
 * words and TMA descriptors alike, with what the launch could store
 * window addresses into looked at after it.
 */
#include "launch.h"

#include <stdlib.h>
#include <string.h>

/* Per-thread room for rewritten arguments: the launch's own are never
 * changed. Allocated on first use, so threads that never stream pay
 * nothing. */
#define PARAM_BYTES 32768 /* the largest parameter buffer CUDA allows (32,764) */
static __thread struct rewrite {
    void *params[MAX_PARAMS];
    unsigned char *store; /* PARAM_BYTES, 16-byte aligned */
    void *extra[5];
    size_t len;
} *rw;

/* A thread's room is freed when the thread exits (a program that starts
 * threads by the thousand must not keep 34 KiB for each): the key's
 * destructor frees it. Without a key (pthread_key_create failed) rooms
 * are kept until the process exits, as before. */
static pthread_key_t rw_key;
static bool rw_key_ok;
static pthread_once_t rw_key_once = PTHREAD_ONCE_INIT;

static void free_room(void *p)
{
    struct rewrite *r = p;
    rw = NULL; /* a later launch on this exiting thread allocates anew */
    free(r->store);
    free(r);
}

static void make_rw_key(void)
{
    rw_key_ok = pthread_key_create(&rw_key, free_room) == 0;
}

/* This thread's room, allocated on first use; NULL when out of memory (the
 * launch then reads every range in place). */
static struct rewrite *room(void)
{
    if (rw)
        return rw;
    struct rewrite *r = calloc(1, sizeof *r);
    if (!r || !(r->store = aligned_alloc(64, PARAM_BYTES))) {
        free(r);
        return NULL;
    }
    pthread_once(&rw_key_once, make_rw_key);
    if (rw_key_ok)
        pthread_setspecific(rw_key, r);
    return rw = r;
}

/* Every word pointing anywhere into a served allocation keeps its offset
 * into the copy: a slice, an interior pointer, the base of a fused weight. */
static bool substitute(uint64_t word, uint64_t *to, void *arg)
{
    marks_t *m = arg;
    for (int i = 0; i < m->nuse; i++) {
        stream_use_t *u = &m->use[i];
        if (u->served && word >= u->start && word - u->start < u->len) {
            *to = u->copy + (word - u->start);
            u->applied = true;
            return true;
        }
    }
    return false;
}

/* Drops the host chunks of [lo, +len) from what the launch reads in place. */
static void unnote(marks_t *m, uint64_t lo, uint64_t len)
{
    for (int i = 0; i < m->nhost; i++) {
        sw_chunk_t *c = sw_table_lookup(sw_tracked(), m->host_va[i]);
        if (c && c->va >= lo && c->va < lo + len) {
            m->host_bytes -= c->size < m->host_bytes ? c->size : m->host_bytes;
            m->host_va[i--] = m->host_va[--m->nhost];
        }
    }
    m->host = m->nhost > 0;
}

/* Points the TMA descriptors of the launch that name a served range at
 * its copy, in this thread's room: each descriptor's parameter is copied
 * there first if the word pass did not copy it already (params form), or
 * patched in the copied buffer (extra form). How many were retargeted;
 * *failed is set where the driver would not retarget one. */
static size_t retarget(marks_t *m, const sw_layout_t *l, void **params, const void *buf,
                       bool *failed)
{
    const sw_tmap_at_t *at = m->desc;
    size_t done = 0;
    for (size_t k = 0; k < m->ndesc; k++) {
        stream_use_t *u = NULL;
        for (int i = 0; i < m->nuse && !u; i++)
            if (m->use[i].served && at[k].v.addr >= m->use[i].start &&
                at[k].v.addr - m->use[i].start < m->use[i].len)
                u = &m->use[i];
        if (!u)
            continue;
        unsigned char *param = rw->store + l->offset[at[k].index];
        if (params && rw->params[at[k].index] != param) {
            memcpy(param, params[at[k].index], l->size[at[k].index]);
            rw->params[at[k].index] = param;
        }
        const void *desc = params ? (const unsigned char *)params[at[k].index] + at[k].offset
                                  : (const unsigned char *)buf + l->offset[at[k].index] +
                                        at[k].offset;
        if (sw_tmap_retarget(desc, u->copy + (at[k].v.addr - u->start), param + at[k].offset) ==
            CUDA_SUCCESS) {
            u->applied = true;
            done++;
        } else {
            *failed = true;
        }
    }
    return done;
}

/* What a launch served from copies could write, besides through the words
 * that name what is served: from each pointer argument, this far into its
 * allocation. A set-up kernel storing per-expert pointers writes a table
 * given by its start; spillway_unwindow looks there for window addresses
 * (window_use.c, "Escaped pointers"). */
#define STORE_SPAN (64u << 10)

typedef struct {
    int n;
    bool overflow; /* more than SW_UNWINDOW_SPANS: not served */
    uint64_t lo[SW_UNWINDOW_SPANS], len[SW_UNWINDOW_SPANS];
} spans_t;

/* [lo, end) of one allocation, at most STORE_SPAN of it, joined with a
 * span it overlaps (spans of two allocations never do). */
static void span_add(spans_t *sp, uint64_t lo, uint64_t end)
{
    uint64_t hi = end - lo > STORE_SPAN ? lo + STORE_SPAN : end;
    for (int i = 0; i < sp->n; i++)
        if (lo < sp->lo[i] + sp->len[i] && sp->lo[i] < hi) {
            uint64_t a = lo < sp->lo[i] ? lo : sp->lo[i];
            uint64_t b = hi > sp->lo[i] + sp->len[i] ? hi : sp->lo[i] + sp->len[i];
            sp->lo[i] = a;
            sp->len[i] = b - a;
            return;
        }
    if (sp->n == SW_UNWINDOW_SPANS) {
        sp->overflow = true;
        return;
    }
    sp->lo[sp->n] = lo;
    sp->len[sp->n++] = hi - lo;
}

/* An argument word: the span from it, if it points into device memory,
 * tracked (the table knows its allocation) or not (the driver does). */
static void span_of(uint64_t word, void *arg)
{
    spans_t *sp = arg;
    const sw_chunk_t *c = sw_table_lookup(sw_tracked(), word);
    CUdeviceptr base;
    size_t size;
    if (c && word < c->alloc->va + c->alloc->size)
        span_add(sp, word, c->alloc->va + c->alloc->size);
    else if (!c && word >= 4096 &&
             SW_CALL(cuMemGetAddressRange_v2, (&base, &size, word)) == CUDA_SUCCESS && base &&
             word < base + size)
        span_add(sp, word, base + size);
}

/* A span inside a served allocation is written in its copy: looked at
 * there, before the copy goes home. */
static void spans_to_copies(const marks_t *m, spans_t *sp)
{
    for (int i = 0; i < sp->n; i++)
        for (int k = 0; k < m->nuse; k++) {
            const stream_use_t *u = &m->use[k];
            if (u->served && sp->lo[i] >= u->start && sp->lo[i] - u->start < u->len) {
                sp->lo[i] = u->copy + (sp->lo[i] - u->start);
                break;
            }
        }
}

/* The window's part of a launch on s: each named allocation wholly on the
 * host is read from its window copy if the window can serve it (the
 * launch's arguments are then rewritten into this thread's room, *params
 * or *extra pointing there: pointer words and TMA descriptors); any other
 * is read in place, after any copy of it went home. A launch is served
 * only if what it could store window addresses into is few enough to be
 * looked at after it, and the window can look. */
void sw_serve(marks_t *m, const sw_layout_t *l, void ***params, void ***extra, CUstream s)
{
    int served = 0;
    uint64_t period = sw_period(m->seq);
    /* The launch runs on the current context's device: that device's
     * window serves it, and only with its own chunks (the window is that
     * device's memory); the rest are read in place. */
    int dev = sw_window_here();
    bool any = false, streamable[SW_WINDOW_MAX_USES];
    for (int i = 0; i < m->nuse; i++)
        any |= streamable[i] =
            dev >= 0 && sw_window_streamable(dev, m->use[i].start, m->use[i].len);
    spans_t sp = {0};
    const void *buf = NULL;
    size_t len = 0;
    if (any) {
        if (*params)
            sw_scan_args(l, *params, NULL, 0, span_of, &sp);
        else if (*extra && sw_extra_buffer(*extra, &buf, &len))
            sw_scan_args(l, NULL, buf, len, span_of, &sp);
        any = !sp.overflow && (!sp.n || sw_window_guarded(dev));
    }
    for (int i = 0; i < m->nuse; i++) {
        stream_use_t *u = &m->use[i];
        bool written;
        if (any && streamable[i] &&
            sw_window_use(dev, u->start, u->len, u->parts, m->seq, period, s, &u->copy,
                          &written)) {
            u->served = true;
            served++;
            if (written && !sw_capturing() && sw_dev_any_budget())
                sw_promote_defer_written(u->start, u->len, m->seq);
        } else {
            sw_window_touch(u->start, u->len, s);
        }
    }
    if (!served)
        return;
    room();
    /* A descriptor the driver would not retarget still names home: were
     * the launch's other words into that range pointed at the copy, the
     * kernel would reach the range both ways, and what it wrote at home
     * the copy's way home would overwrite. So then nothing is rewritten. */
    bool failed = false;
    if (rw && *params) {
        size_t changed =
            sw_rewrite_params(l, *params, rw->params, rw->store, PARAM_BYTES, substitute, m);
        changed += retarget(m, l, *params, NULL, &failed);
        if (changed && !failed)
            *params = rw->params;
    } else if (rw && *extra && sw_extra_buffer(*extra, &buf, &len) && len <= PARAM_BYTES) {
        size_t changed = sw_rewrite_buffer(l, buf, len, rw->store, substitute, m);
        changed += retarget(m, l, NULL, buf, &failed);
        rw->len = len;
        void *ex[5] = {CU_LAUNCH_PARAM_BUFFER_POINTER, rw->store, CU_LAUNCH_PARAM_BUFFER_SIZE,
                       &rw->len, CU_LAUNCH_PARAM_END};
        memcpy(rw->extra, ex, sizeof ex);
        if (changed && !failed)
            *extra = rw->extra;
    }
    /* A served range the arguments could not be pointed at (no room for
     * their copy, a descriptor the driver would not retarget) is read at
     * home: its copy goes home first, and the launch does not read it. */
    for (int i = 0; i < m->nuse; i++) {
        stream_use_t *u = &m->use[i];
        if (u->served && (!u->applied || failed)) {
            sw_window_unuse(u->start, s);
            u->served = false;
        } else if (u->served) {
            unnote(m, u->start, u->len);
        }
    }
    spans_to_copies(m, &sp);
    sw_window_spans(sp.lo, sp.len, sp.n);
}

/*
 * Streams, events and operations.
 *
 * Issuing an op (sg_submit, under g.lock) fixes everything about its
 * virtual time, from the host clock, its stream, its dependencies and the
 * engine it needs, so virtual time depends only on the order of API calls.
 * The op then joins its stream's queue, and the stream's worker thread
 * runs it for real: after a random jitter, once its dependencies have
 * really finished, holding mem_lock for reading so that no mapping changes
 * under it. The op leaves the queue when done; until then it is "in
 * flight", and an unmap that overlaps its ranges is a hazard.
 *
 *   submit ─► [queue: op op op] ─► worker: jitter, wait deps, run, done
 *                  ▲                                              │
 *   hazard check ──┘                           done_cv broadcast ◄┘
 */
#include "sg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>

/* ---- handle registry: which pointers are live handles of which kind ---- */
typedef struct {
    const void *h;
    int kind;
    UT_hash_handle hh;
} handle_t;

static handle_t *handles;
static uint64_t next_stream_id = 1;
static __thread sg_stream_t *per_thread_stream;

void sg_handle_add(void *h, int kind)
{
    handle_t *e = calloc(1, sizeof *e);
    if (!e)
        abort(); /* a test double may stop where a driver would fail */
    e->h = h;
    e->kind = kind;
    HASH_ADD_PTR(handles, h, e);
}

void sg_handle_del(void *h)
{
    handle_t *e;
    HASH_FIND_PTR(handles, &h, e);
    if (e) {
        HASH_DEL(handles, e);
        free(e);
    }
}

int sg_handle_kind(const void *h)
{
    handle_t *e;
    HASH_FIND_PTR(handles, &h, e);
    return e ? e->kind : SG_H_NONE;
}

bool sg_is_stream(void *h) { return sg_handle_kind(h) == SG_H_STREAM; }
bool sg_is_event(void *h) { return sg_handle_kind(h) == SG_H_EVENT; }

/* ---- ops ----------------------------------------------------------------- */

sg_op_t *sg_op_new(sg_op_kind_t kind, const char *name)
{
    sg_op_t *op = calloc(1, sizeof *op);
    if (!op)
        return NULL;
    op->kind = kind;
    op->name = name;
    op->refs = 1;
    return op;
}

void sg_op_add_dep(sg_op_t *op, sg_op_t *dep)
{
    sg_op_t **d = realloc(op->deps, (size_t)(op->ndeps + 1) * sizeof *d);
    if (!d)
        abort();
    op->deps = d;
    dep->refs++;
    op->deps[op->ndeps++] = dep;
}

void sg_op_put(sg_op_t *op)
{
    if (!op || --op->refs > 0)
        return;
    for (int i = 0; i < op->ndeps; i++)
        sg_op_put(op->deps[i]);
    free(op->deps);
    if (op->gmem)
        sg_gmem_put(op->gmem);
    free(op);
}

/* A fresh, unissued copy for a graph replay: same work, no dependencies. */
sg_op_t *sg_op_clone(const sg_op_t *op)
{
    sg_op_t *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    *c = *op;
    c->next = NULL;
    c->refs = 1;
    c->done = false;
    c->ndeps = 0;
    c->deps = NULL;
    c->nextents = 0; /* recomputed when the copy is issued */
    if (c->gmem)
        sg_gmem_ref(c->gmem); /* a replay's alloc or free holds the graph's memory */
    return c;
}

/* ---- streams -------------------------------------------------------------- */

static sg_stream_t *stream_alloc(unsigned flags, int priority, bool blocking)
{
    sg_stream_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->id = next_stream_id++;
    s->flags = flags;
    s->priority = priority;
    s->blocking = blocking;
    s->device = -1; /* sg_stream_create binds it */
    s->rng = (unsigned)(SG->cfg.seed * 2654435761u + s->id);
    pthread_cond_init(&s->cv, NULL);
    s->next = SG->streams;
    SG->streams = s;
    return s;
}

CUresult sg_stream_create(unsigned flags, int priority, sg_stream_t **out)
{
    sg_stream_t *s = stream_alloc(flags, priority, !(flags & CU_STREAM_NON_BLOCKING));
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->device = sg_current_device() > 0 ? sg_current_device() : 0;
    sg_handle_add(s, SG_H_STREAM);
    *out = s;
    return CUDA_SUCCESS;
}

sg_stream_t *sg_stream_get(CUstream h, bool per_thread)
{
    if (h == CU_STREAM_PER_THREAD || (h == NULL && per_thread)) {
        /* The per-thread default stream synchronizes with the legacy
         * stream but not with other streams. */
        if (!per_thread_stream)
            per_thread_stream = stream_alloc(0, 0, true);
        return per_thread_stream;
    }
    if (h == NULL || h == CU_STREAM_LEGACY) {
        if (!SG->legacy)
            SG->legacy = stream_alloc(0, 0, false);
        return SG->legacy;
    }
    return sg_is_stream(h) ? (sg_stream_t *)h : NULL;
}

static void stream_unlink(sg_stream_t *s)
{
    for (sg_stream_t **p = &SG->streams; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    sg_op_put(s->last);
    free(s->deps_out);
    pthread_cond_destroy(&s->cv);
    free(s);
}

/* Work already issued still runs; the worker frees the stream after it. */
void sg_stream_destroy(sg_stream_t *s)
{
    sg_handle_del(s);
    s->destroyed = true;
    if (s->has_thread)
        pthread_cond_signal(&s->cv);
    else
        stream_unlink(s);
}

/* ---- running ops (worker side, no g.lock held) ---------------------------- */

/* Returns false on a fault. Holds mem_lock for reading while bytes move. */
static bool run_op(sg_op_t *op)
{
    if (op->shape.width) {
        sg_mem_rdlock();
        bool ok = sg_pitched_run(op);
        sg_mem_unlock();
        return ok;
    }
    sg_range_t r[SG_MAX_RANGES];
    int n = op->nranges;
    if (op->kind == SG_OP_KERNEL)
        n = op->kernel->ranges(op->args, r, sg_mem_peek); /* reads the table now */
    else
        memcpy(r, op->ranges, sizeof r);
    void *host[SG_MAX_RANGES] = {0}; /* NULL past the ranges declared */
    bool ok = true;
    sg_mem_rdlock();
    for (int i = 0; i < n && ok; i++) {
        sg_xlate_t x;
        bool pageable = op->pageable >> i & 1;
        ok = sg_mem_xlate(r[i].addr, r[i].len, r[i].write, pageable, &x);
        /* A kernel reaches another device's memory only as the driver
         * lets it (peer access, or a VMM grant): on a GPU it faults. */
        if (ok && op->kind == SG_OP_KERNEL)
            ok = sg_mem_reachable(r[i].addr, r[i].len, op->device) &&
                 (r[i].align <= 1 || r[i].addr % r[i].align == 0);
        host[i] = x.host;
    }
    if (ok) {
        switch (op->kind) {
        case SG_OP_KERNEL:
            op->kernel->run(op->args, host);
            break;
        case SG_OP_COPY:
            memmove(host[0], host[1], r[0].len);
            break;
        case SG_OP_MEMSET:
            if (op->memset_width == 1) {
                memset(host[0], (int)op->memset_value, r[0].len);
            } else if (op->memset_width == 2) {
                uint16_t *p = host[0];
                for (uint64_t i = 0; i < r[0].len / 2; i++)
                    p[i] = (uint16_t)op->memset_value;
            } else if (op->memset_width == 4) {
                uint32_t *p = host[0];
                for (uint64_t i = 0; i < r[0].len / 4; i++)
                    p[i] = (uint32_t)op->memset_value;
            } else {
                uint64_t v = op->memset_value;
                for (uint64_t i = 0; i < r[0].len / 8; i++)
                    memcpy((char *)host[0] + 8 * i, &v, 8); /* a value need not be aligned on the host */
            }
            break;
        default:
            break;
        }
    }
    sg_mem_unlock();
    return ok;
}

static void run_free(sg_op_t *op)
{
    if (op->gmem) { /* a graph's memory: its use ends, the graph keeps it */
        sg_gmem_run(op->gmem, false);
        return;
    }
    CUdeviceptr base;
    uint64_t size;
    sg_mem_wrlock();
    if (sg_legacy_range(op->ranges[0].addr, &base, &size) && base == op->ranges[0].addr)
        sg_legacy_free(base);
    sg_mem_unlock();
}

static void *worker(void *arg)
{
    sg_stream_t *s = arg;
    sg_lock();
    for (;;) {
        while (!s->head && !s->destroyed)
            pthread_cond_wait(&s->cv, &SG->lock);
        if (!s->head)
            break;
        sg_op_t *op = s->head;
        if (SG->cfg.jitter_us) {
            unsigned d = (unsigned)(rand_r(&s->rng) % (SG->cfg.jitter_us + 1));
            sg_unlock();
            usleep(d);
            sg_lock();
        }
        for (int i = 0; i < op->ndeps; i++)
            while (!op->deps[i]->done)
                pthread_cond_wait(&SG->done_cv, &SG->lock);
        bool dead = SG->sticky != CUDA_SUCCESS;
        sg_unlock();
        bool ok = true;
        if (!dead) {
            if (op->kind == SG_OP_HOST_FUNC && op->callback)
                op->callback(op->callback_stream, CUDA_SUCCESS, op->user);
            else if (op->kind == SG_OP_HOST_FUNC)
                op->fn(op->user);
            else if (op->kind == SG_OP_MEM_ALLOC)
                sg_gmem_run(op->gmem, true);
            else if (op->kind == SG_OP_FREE)
                run_free(op);
            else
                ok = run_op(op);
        }
        sg_lock();
        if (!ok)
            sg_fault(op->name);
        op->done = true;
        /* A done alloc or free no longer holds a graph's memory: s->last
         * and events keep done ops, and must not keep the memory too. */
        if (op->gmem) {
            sg_gmem_put(op->gmem);
            op->gmem = NULL;
        }
        /* Done ops need no dependencies; the race check keeps ops a while,
         * and must not keep their chains too. */
        for (int i = 0; i < op->ndeps; i++)
            sg_op_put(op->deps[i]);
        op->ndeps = 0;
        s->head = op->next;
        if (!s->head)
            s->tail = NULL;
        pthread_cond_broadcast(&SG->done_cv);
        sg_op_put(op);
    }
    stream_unlink(s);
    sg_unlock();
    return NULL;
}

/* ---- issuing ops (g.lock held) --------------------------------------------- */

static double ns_for(uint64_t bytes, double gbps)
{
    return (double)bytes / gbps; /* 1 GB/s moves one byte per ns */
}

/* Backing of a range now, for the cost model and the handle hazards; an
 * untranslatable range counts as device memory (the op will fault when it
 * runs). */
static void backing(sg_op_t *op, const sg_range_t *r, bool pageable, uint64_t *dev, uint64_t *host)
{
    sg_xlate_t x;
    sg_mem_rdlock();
    if (sg_mem_xlate(r->addr, r->len, false, pageable, &x)) {
        *dev += x.device_bytes;
        *host += x.host_bytes;
        for (int i = 0; i < x.nextents && op->nextents < SG_MAX_RANGES * SG_MAX_PHYS; i++) {
            op->ext[op->nextents] = x.ext[i];
            op->ext[op->nextents].unordered = r->unordered;
            op->ext[op->nextents++].write = r->write;
        }
    } else {
        *dev += r->len;
    }
    sg_mem_unlock();
}

/* What an op costs, before its start is known: a fixed part, and bytes
 * that cross the PCIe link in each direction at up to a cap. The link's
 * share is only known once the start is (sg_link.c). */
typedef struct {
    uint64_t fixed_ns;     /* the time before the op's link traffic starts */
    double floor_ns;       /* a kernel's arithmetic: the op lasts at least this */
    double dev_ns;         /* device-memory traffic, serial with the link's */
    uint64_t link[2];      /* SG_LINK_*: bytes over the link */
    double cap_gbps[2];
} cost_t;

/* The bytes an op moves or sets: a pitched op's rows, not the padding
 * its bounding ranges include. */
static uint64_t payload(const sg_op_t *op)
{
    if (op->shape.width)
        return op->shape.width * op->shape.height * op->shape.depth;
    return op->ranges[0].len;
}

/* Whether [a, +alen) and [b, +blen) share a byte. */
static bool overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
    return a < b + blen && b < a + alen;
}

/* A pitched op's share of a bounding range's backed bytes. */
static uint64_t scaled(uint64_t bytes, const sg_op_t *op)
{
    uint64_t len = op->ranges[0].len;
    return len ? (uint64_t)((double)bytes * (double)payload(op) / (double)len) : bytes;
}

/* ---- conditional write-backs ----
 * spillway_copy_if_changed copies its range home only if a kernel wrote
 * the range since it last went home. Its cost is fixed at issue, so the
 * decision is foreseen from what was issued: every kernel write and
 * memset issued is logged (a ring), and a write-back is charged when one
 * of them overlaps its source after the previous write-back from there.
 * A kernel writing the same bytes back is charged though the kernel will
 * not copy; a ring overrun charges too: never less than the truth.
 * Under g.lock (sg_submit). */
#define WRITE_LOG 1024
#define HOMED_LOG 512
static struct { uint64_t addr, len, seq; } written[WRITE_LOG];
static uint64_t nwritten;
static struct { uint64_t src, seq; } homed[HOMED_LOG];
static unsigned nhomed;
static uint64_t tick; /* orders writes and write-backs as issued (op->seq comes later) */

static void log_writes(const sg_op_t *op)
{
    for (int i = 0; i < op->nranges; i++) {
        const sg_range_t *r = &op->ranges[i];
        if (!r->write || r->maybe)
            continue;
        written[nwritten % WRITE_LOG].addr = r->addr;
        written[nwritten % WRITE_LOG].len = r->len;
        written[nwritten % WRITE_LOG].seq = ++tick;
        nwritten++;
    }
}

/* Whether a write-back from [src, +len) issued now will copy; notes it. */
static bool will_copy(uint64_t src, uint64_t len)
{
    unsigned k = 0;
    while (k < nhomed && homed[k].src != src)
        k++;
    uint64_t since = k < nhomed ? homed[k].seq : 0;
    if (k == nhomed)
        k = nhomed < HOMED_LOG ? nhomed++ : (unsigned)(tick % HOMED_LOG);
    homed[k].src = src;
    homed[k].seq = ++tick;
    uint64_t first = nwritten > WRITE_LOG ? nwritten - WRITE_LOG : 0;
    if (first > 0 && written[first % WRITE_LOG].seq > since)
        return true; /* the log lost what came after `since` */
    for (uint64_t i = first; i < nwritten; i++)
        if (written[i % WRITE_LOG].seq > since &&
            overlap(written[i % WRITE_LOG].addr, written[i % WRITE_LOG].len, src, len))
            return true;
    return false;
}

/* The range spillway's conditional write-back copies from, by its
 * ranges' order (sg_kernels.c), or -1 for any other kernel. */
static int write_back_source(const sg_op_t *op)
{
    if (op->nranges < 5)
        return -1;
    if (op->nranges == 5 && strcmp(op->kernel->name, "spillway_copy_if_changed") == 0)
        return 3;
    if (op->nranges == 5 && strcmp(op->kernel->name, "spillway_way_home") == 0)
        return 0;
    if (strcmp(op->kernel->name, "spillway_unwindow_home") == 0)
        return 0; /* its spans follow */
    return -1;
}

static cost_t op_cost(sg_op_t *op)
{
    const sg_config_t *cfg = &SG->cfg;
    sg_stats_t *st = &SG->st;
    cost_t c = {0};
    uint64_t dev = 0, host = 0;
    switch (op->kind) {
    case SG_OP_KERNEL: {
        /* Host-backed bytes a kernel reads cross host to device, once per
         * read; those it writes cross device to host. */
        int from = write_back_source(op);
        bool maybe_done = from >= 0 && will_copy(op->ranges[from].addr, op->ranges[from].len);
        log_writes(op);
        for (int i = 0; i < op->nranges; i++) {
            const sg_range_t *r = &op->ranges[i];
            uint64_t h = 0;
            if (r->maybe && !maybe_done)
                continue;
            backing(op, r, false, &dev, &h);
            h *= r->host_reads ? r->host_reads : 1;
            c.link[r->write ? SG_LINK_D2H : SG_LINK_H2D] += h;
            host += h;
        }
        st->kernels++;
        st->kernel_bytes_device += dev;
        st->kernel_bytes_host += host;
        c.fixed_ns = cfg->kernel_ns;
        c.dev_ns = ns_for(dev, cfg->hbm_gbps);
        c.floor_ns = op->kernel->flops(op->args) / (cfg->tflops * 1e3);
        c.cap_gbps[SG_LINK_H2D] = c.cap_gbps[SG_LINK_D2H] = cfg->zerocopy_gbps;
        op->engine = SG_ENGINE_COMPUTE;
        return c;
    }
    case SG_OP_COPY: {
        uint64_t ddev = 0, dhost = 0, sdev = 0, shost = 0, n = payload(op);
        backing(op, &op->ranges[0], op->pageable & 1, &ddev, &dhost);
        backing(op, &op->ranges[1], op->pageable >> 1 & 1, &sdev, &shost);
        bool dst_host = dhost > ddev, src_host = shost > sdev;
        if (src_host && !dst_host) {
            op->engine = SG_ENGINE_H2D;
            st->dma_h2d_bytes += n;
            c.link[SG_LINK_H2D] = n;
            c.cap_gbps[SG_LINK_H2D] = cfg->h2d_gbps;
        } else if (!src_host && !dst_host) {
            op->engine = SG_ENGINE_COMPUTE;
            st->dma_d2d_bytes += n;
            c.dev_ns = ns_for(n, cfg->d2d_gbps);
        } else {
            /* a copy between two host-backed ranges counts as D2H */
            op->engine = SG_ENGINE_D2H;
            st->dma_d2h_bytes += n;
            c.link[SG_LINK_D2H] = n;
            c.cap_gbps[SG_LINK_D2H] = cfg->d2h_gbps;
        }
        return c;
    }
    case SG_OP_MEMSET:
        log_writes(op);
        backing(op, &op->ranges[0], false, &dev, &host);
        dev = scaled(dev, op);
        host = scaled(host, op);
        op->engine = SG_ENGINE_COMPUTE;
        c.fixed_ns = cfg->kernel_ns;
        c.dev_ns = ns_for(dev, cfg->hbm_gbps);
        c.link[SG_LINK_D2H] = host;
        c.cap_gbps[SG_LINK_D2H] = cfg->zerocopy_gbps;
        return c;
    default:
        op->engine = -1;
        return c;
    }
}

/* The op's duration from its start: the fixed part, then its link
 * traffic (reads, then writes) booked on the link from there, then its
 * device-memory traffic; a kernel lasts at least its arithmetic. */
static uint64_t op_duration(const cost_t *c, uint64_t start)
{
    uint64_t t = start + c->fixed_ns;
    double mem_ns = c->dev_ns;
    for (int dir = SG_LINK_H2D; dir <= SG_LINK_D2H; dir++) {
        uint64_t d = sg_link_book(dir, t, c->link[dir], c->cap_gbps[dir]);
        t += d;
        mem_ns += (double)d;
    }
    return c->fixed_ns + (uint64_t)(mem_ns > c->floor_ns ? mem_ns : c->floor_ns);
}

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static void start_worker(sg_stream_t *s)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&s->thread, &a, worker, s) != 0) {
        fprintf(stderr, "simgpu: cannot start a stream thread\n");
        abort();
    }
    pthread_attr_destroy(&a);
    s->has_thread = true;
}

/* ---- races ----
 * Two operations on different streams that reach the same bytes, one of
 * them writing, must be ordered: by a stream wait, by the host waiting
 * for the first, or through the legacy stream. Every such order shows in
 * virtual time, where an op starts no earlier than the end of whatever it
 * is ordered after. So an op whose start (its dependencies, not its
 * engine) comes before the end of an earlier op it conflicts with is not
 * ordered after it: on a GPU the two could run in either order. The check
 * looks at the last SG_RECENT ops issued, by physical handle and offset,
 * so it sees a copy into a handle through one address and a kernel
 * reading it through another. */
static bool conflict(const sg_op_t *a, const sg_op_t *b)
{
    for (int i = 0; i < a->nextents; i++)
        for (int j = 0; j < b->nextents; j++) {
            const sg_extent_t *x = &a->ext[i], *y = &b->ext[j];
            if ((x->write || y->write) && !x->unordered && !y->unordered && x->id == y->id &&
                overlap(x->off, x->len, y->off, y->len))
                return true;
        }
    return false;
}

static void check_races(sg_op_t *op, const sg_stream_t *s, uint64_t start)
{
    if (op->nextents == 0)
        return;
    for (unsigned i = 0; i < SG_RECENT; i++) {
        const sg_op_t *p = SG->recent[i];
        if (p && p->end_ns > start && p->stream_id != s->id && conflict(op, p))
            sg_hazard("race: %s (stream %llu) and %s (op %llu, stream %llu) reach the same "
                      "bytes, one writing, with no order between them",
                      op->name, (unsigned long long)s->id, p->name, (unsigned long long)p->seq,
                      (unsigned long long)p->stream_id);
    }
    unsigned at = SG->recent_at++ % SG_RECENT;
    sg_op_put(SG->recent[at]);
    SG->recent[at] = op;
    op->refs++;
}

/* Appends op to s's queue, numbered, and wakes s's worker (started on
 * first use). The queue takes a reference; the caller's becomes s->last.
 * g.lock held. */
static void enqueue(sg_stream_t *s, sg_op_t *op)
{
    op->seq = ++SG->op_seq;
    op->stream_id = s->id;
    op->next = NULL;
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    op->refs++;
    sg_op_put(s->last);
    s->last = op;
    if (!s->has_thread)
        start_worker(s);
    pthread_cond_signal(&s->cv);
}

/* SIMGPU_TIMELINE: where each op ran in virtual time, for reading a
 * schedule by eye or by script. Called under the simgpu lock. */
static void timeline(const sg_op_t *op, const sg_stream_t *s, uint64_t start, const cost_t *c)
{
    static FILE *f;
    if (!SG->cfg.timeline[0])
        return;
    if (!f && !(f = fopen(SG->cfg.timeline, "a"))) {
        fprintf(stderr, "simgpu: SIMGPU_TIMELINE=%s: %s\n", SG->cfg.timeline, strerror(errno));
        SG->cfg.timeline[0] = 0;
        return;
    }
    const char *what = op->kind == SG_OP_KERNEL ? op->kernel->name
                       : op->kind == SG_OP_COPY ? "copy"
                       : op->kind == SG_OP_MEMSET ? "memset" : "other";
    fprintf(f, "%llu %s %llu %llu %llu %llu\n", (unsigned long long)s->id, what, (unsigned long long)start,
            (unsigned long long)op->end_ns, (unsigned long long)c->link[SG_LINK_H2D],
            (unsigned long long)c->link[SG_LINK_D2H]);
    fflush(f);
}

/* The first time from `ready` at which e is free for `dur` (sg.h). */
static uint64_t engine_gap(const sg_engine_t *e, uint64_t ready, uint64_t dur)
{
    uint64_t t = max_u64(ready, e->floor);
    for (int i = 0; i < e->n; i++) {
        if (e->end[i] <= t)
            continue;
        if (e->start[i] >= t + dur)
            break;
        t = e->end[i];
    }
    return t;
}

/* Books [start, end) on e, forgetting what ended before the host's clock
 * (nothing issued now can start earlier); full, the earliest booking is
 * forgotten and no gap before its end is offered again. */
static void engine_book(sg_engine_t *e, uint64_t start, uint64_t end)
{
    int k = 0;
    while (k < e->n && e->end[k] <= SG->host_ns)
        k++;
    if (k == 0 && e->n == SG_ENGINE_BOOKINGS) {
        e->floor = max_u64(e->floor, e->end[0]);
        k = 1;
    }
    e->n -= k;
    memmove(e->start, e->start + k, (size_t)e->n * sizeof *e->start);
    memmove(e->end, e->end + k, (size_t)e->n * sizeof *e->end);
    int i = e->n;
    while (i > 0 && e->start[i - 1] > start) {
        e->start[i] = e->start[i - 1];
        e->end[i] = e->end[i - 1];
        i--;
    }
    e->start[i] = start;
    e->end[i] = end;
    e->n++;
    e->last = max_u64(e->last, end);
}

CUresult sg_submit(sg_stream_t *s, sg_op_t *op)
{
    if (s->capture)
        return sg_capture_record(s, op);
    if (SG->sticky != CUDA_SUCCESS) {
        sg_op_put(op);
        return SG->sticky;
    }
    /* Legacy default stream semantics: it waits for every blocking
     * stream, and every blocking stream waits for it. */
    sg_stream_t *legacy = SG->legacy;
    uint64_t start = max_u64(SG->host_ns, s->ready_ns);
    /* The order holds in virtual time whether or not the earlier work has
     * really finished yet; only the real wait is skipped when it has. */
    if (s == legacy) {
        for (sg_stream_t *t = SG->streams; t; t = t->next)
            if (t != s && t->blocking && t->last) {
                start = max_u64(start, t->ready_ns);
                if (!t->last->done)
                    sg_op_add_dep(op, t->last);
            }
    } else if (s->blocking && legacy && legacy->last) {
        start = max_u64(start, legacy->ready_ns);
        if (!legacy->last->done)
            sg_op_add_dep(op, legacy->last);
    }
    for (int i = 0; i < op->ndeps; i++)
        start = max_u64(start, op->deps[i]->end_ns);
    cost_t cost = op_cost(op);
    check_races(op, s, start);
    sg_link_trim(SG->host_ns);
    if (op->engine >= 0) {
        sg_engine_t *e = &SG->engine[op->engine];
        bool linked = cost.link[SG_LINK_H2D] || cost.link[SG_LINK_D2H];
        if (linked)
            start = max_u64(start, e->last);
        else
            start = engine_gap(e, start, op_duration(&cost, start));
    }
    op->end_ns = start + op_duration(&cost, start);
    if (op->engine >= 0)
        engine_book(&SG->engine[op->engine], start, op->end_ns);
    timeline(op, s, start, &cost);
    s->ready_ns = op->end_ns;
    SG->last_end_ns = max_u64(SG->last_end_ns, op->end_ns);
    enqueue(s, op);
    return CUDA_SUCCESS;
}

/* simgpu's service stream: its ops are housekeeping that no API call
 * orders (the driver runs destructors on threads of its own), so they take
 * no virtual time and are kept out of the race check. cuCtxSynchronize
 * still waits for them, which makes a test's wait for a destructor exact. */
void sg_service(sg_op_t *op)
{
    static sg_stream_t *service;
    if (!service) {
        service = stream_alloc(CU_STREAM_NON_BLOCKING, 0, false);
        if (!service)
            abort();
        service->device = -1; /* every device's */
    }
    enqueue(service, op);
}

void sg_op_wait(sg_op_t *op)
{
    while (!op->done)
        pthread_cond_wait(&SG->done_cv, &SG->lock);
    SG->host_ns = max_u64(SG->host_ns, op->end_ns);
}

/* Virtually complete, and then really complete within a second; the bound
 * keeps a query from hanging on a host function that waits for the
 * caller. */
bool sg_op_vt_done(sg_op_t *op)
{
    if (SG->host_ns < op->end_ns)
        return false;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    while (!op->done)
        if (pthread_cond_timedwait(&SG->done_cv, &SG->lock, &until) == ETIMEDOUT)
            return op->done;
    return true;
}

/* Waits for the newest op of the first stream (among those `pick` selects)
 * that is still busy, then starts over: the lock is released while
 * waiting, and a destroyed stream's worker may unlink and free it then, so
 * neither the list position nor the op may be kept across the wait (the op
 * is held by a reference). Returns false when none is busy. */
static bool wait_one(bool (*pick)(const sg_stream_t *t, const sg_stream_t *s), const sg_stream_t *s)
{
    for (sg_stream_t *t = SG->streams; t; t = t->next) {
        if (!pick(t, s) || !t->last || t->last->done)
            continue;
        sg_op_t *op = t->last;
        op->refs++;
        sg_op_wait(op);
        sg_op_put(op);
        return true;
    }
    return false;
}

static bool pick_all(const sg_stream_t *t, const sg_stream_t *s) { return true; }
static bool pick_blocking(const sg_stream_t *t, const sg_stream_t *s) { return t->blocking; }
/* s stands for the device: its number in s->device. */
static bool pick_device(const sg_stream_t *t, const sg_stream_t *s)
{
    return t->device < 0 || t->device == s->device;
}

CUresult sg_stream_sync(sg_stream_t *s)
{
    if (s->last) {
        sg_op_t *op = s->last;
        op->refs++;
        sg_op_wait(op);
        sg_op_put(op);
    }
    /* The legacy stream also waits for the blocking streams, in virtual
     * time too when their work has already really finished. */
    while (s == SG->legacy && wait_one(pick_blocking, s))
        ;
    for (sg_stream_t *t = SG->streams; s == SG->legacy && t; t = t->next)
        if (t->blocking)
            SG->host_ns = max_u64(SG->host_ns, t->ready_ns);
    SG->host_ns = max_u64(SG->host_ns, s->ready_ns);
    return SG->sticky;
}

CUresult sg_ctx_sync(void)
{
    while (wait_one(pick_all, NULL))
        ;
    SG->host_ns = max_u64(SG->host_ns, SG->last_end_ns);
    return SG->sticky;
}

CUresult sg_ctx_sync_device(int dev)
{
    const sg_stream_t which = {.device = dev};
    while (wait_one(pick_device, &which))
        ;
    /* Virtual time: as far as the streams waited for reach. */
    for (sg_stream_t *t = SG->streams; t; t = t->next)
        if (pick_device(t, &which))
            SG->host_ns = max_u64(SG->host_ns, t->ready_ns);
    return SG->sticky;
}

void sg_check_hazard(const char *call, uint64_t addr, uint64_t len)
{
    sg_dmabuf_check(call, addr, len);
    for (sg_stream_t *s = SG->streams; s; s = s->next)
        for (sg_op_t *op = s->head; op; op = op->next)
            for (int i = 0; i < op->nranges; i++) {
                const sg_range_t *r = &op->ranges[i];
                if (overlap(r->addr, r->len, addr, len)) {
                    sg_hazard("%s(0x%llx, %llu) while %s (op %llu, stream %llu) "
                              "still references [0x%llx, +%llu)",
                              call, (unsigned long long)addr, (unsigned long long)len,
                              op->name, (unsigned long long)op->seq,
                              (unsigned long long)op->stream_id,
                              (unsigned long long)r->addr, (unsigned long long)r->len);
                    break;
                }
            }
}

void sg_check_hazard_handle(const char *call, uint64_t id)
{
    for (sg_stream_t *s = SG->streams; s; s = s->next)
        for (sg_op_t *op = s->head; op; op = op->next)
            for (int i = 0; i < op->nextents; i++)
                if (op->ext[i].id == id) {
                    sg_hazard("%s(handle %llu) frees memory that %s (op %llu, stream %llu) "
                              "still uses",
                              call, (unsigned long long)id, op->name,
                              (unsigned long long)op->seq, (unsigned long long)op->stream_id);
                    break;
                }
}

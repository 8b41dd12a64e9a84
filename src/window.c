/*
 * The streaming window: device memory mapped once and sized in bytes.
 * Ranges of host-resident memory are copied into it ahead of the kernels
 * that read them, and those kernels get their arguments rewritten to point
 * at the copy. No mapping changes, and the host never waits.
 *
 * One window per device (devices.c, "Windows"), all as below: its memory,
 * its streams and events are made in the context of its device's first
 * tracked allocation, and it serves the launches in that context with
 * that device's chunks. Work that writes a home in place may come from
 * any device (a peer copy), so touches and flushes ask every window: a
 * stream may wait for another device's events, though it may record
 * only its own device's.
 *
 *   window (device, made once):   [ e3 | e4 | e5 |  free  | e1 | e2 ]
 *                                                 ^ head: the next copy
 *   a range's own address:        still maps its home (host memory)
 *
 * ORDER, all on the GPU, by events:
 *   fill   spillway's stream st waits for the application's streams (so
 *          the copy reads home after every write issued to it) and for
 *          the readers of what the space held, copies home -> window,
 *          records `filled`;
 *   read   the launch's stream s waits for `filled`, the launch runs with
 *          its rewritten arguments;
 *   home   right after it, on s, the copy goes home if the launch changed
 *          it: spillway_fingerprint takes its fingerprint and
 *          spillway_copy_if_changed compares it with home's and copies
 *          only on a difference (fingerprint.cu), also for a range its
 *          kernels write (a training step): in one step most launches
 *          only read it (the forward pass), and asking costs a pass over
 *          the copy at device speed where copying it home costs all of it
 *          over the link. Then `read[s]` is recorded.
 * So home is current as soon as the launch's stream has passed it: any
 * work the application orders after the launch, on any stream, by any
 * pointer, reads right bytes at home. The copies home of one range are
 * chained across streams (`homed`), so two streams never update its
 * fingerprint at once.
 *
 * WHY IT STAYS CORRECT. The range's own address keeps mapping its home, so
 * a kernel that reaches it through a pointer spillway cannot see reads the
 * right bytes in place. Writes to home in place (a copy, a memset, a
 * launch not rewritten, a move) drop the window copy first, after the
 * fills that read home, and home's fingerprint is forgotten
 * (sw_window_touch). Not covered (README, known limits): a kernel writing
 * home through a pointer spillway cannot see while the range has a copy
 * in the window (later rewritten launches read the old copy), and a kernel
 * that stores an argument pointer, a window address then, for a later
 * kernel.
 *
 * WHAT IS STREAMED. A whole tracked allocation an argument points into,
 * anywhere: CUDA promises a kernel every byte of it, so a copy of less
 * would be a guess a fused weight or an interior pointer runs off. It is
 * streamed when its chunks are on the host (all, or some with the rest on
 * the device, which the copy takes device to device), it fits in the window,
 * it recurs with the launch loop (one of its last uses lies one period
 * back; in a capture, any, since a graph is replayed as a loop), and the
 * tensors its launches name span it whole: over each of its last two
 * visits (its uses within a quarter of the loop of each other); each
 * launch alone in a capture, where a copy serves one launch, and for a
 * range its readers write, whose copy goes home whole after each launch
 * that changes it. A segment holding a tensor only a pointer table
 * reaches, or one layer of which an update writes, is read in place
 * instead: its copy would move every byte of it, where reading in place
 * moves only what the kernels read (as fast as a copy for a kernel that
 * reads each byte once; a GEMM that re-reads its weight pays the re-reads
 * over the link: README, known limits).
 * Every argument word into it keeps its offset into the copy (launch.c).
 * One copy per allocation means no two copies hold the same bytes. An
 * allocation bigger than the window keeps its own address: it is
 * resident, or read in place. A copy the loop does not repay
 * is a copy wasted: the rest (a random pick of experts) are read in place
 * until popular enough to become resident (launch.c). So may a range
 * whose copies its readers change, which goes home after every use (a
 * GEMM library's workspace): launch.c asks at each served use whether it
 * should be resident instead (*written of sw_window_use). A range a pointer
 * table in device memory also reaches, whose launches name all of it, is
 * streamed too: its copy goes home right after each launch, before
 * anything ordered after it reads the table. A window that serves nothing
 * for a loop, or copies less in one than five times its size (the link
 * then carries less with its room resident), is given back to the
 * resident set (sw_window_worth, alloc.c). The order ranges are used in
 * is learned as a successor chain: after range u, the ranges used after u
 * last time are copied ahead, as far as the window goes without evicting
 * a copy that was made ahead and not read yet. A copy is no slower than
 * reading in place (55 against 50 GB/s on an H100's PCIe Gen5,
 * docs/gpu-facts.md), and a kernel re-reading its weight (a GEMM, once
 * per tile row) reads it at HBM speed, so a recurring range the chain did
 * not predict is still copied when its launch comes. Unless measured
 * otherwise: each range's first visits are read in place, and its first
 * copies made, with events timing both on the GPU (timers.c, core/cost.c);
 * a range a visit read in place faster than its copy took (a copy costing
 * at most its link bytes at the best rate any copy reached: one timed
 * beside kernels reading host memory is slowed by them) is read in place
 * from then on. That is a copy carrying bytes no kernel reads (a 16
 * MiB tensor alone in a 20 MiB allocator segment: 337.5 us in place
 * against 381.3 us copied on simgpu), which the pointers cannot show.
 *
 * LOCKING. One mutex per window, `lock`, guards everything in it; `wins`
 * is written only under the gate held exclusively. Callers hold the gate
 * (shared or exclusive), so no chunk moves meanwhile.
 */
#include "residency.h"

#include <stdlib.h>
#include <string.h>

#define MAX_UNITS 4096
#define MAX_ENTRIES 512
#define READERS 4   /* streams that may read one copy before it is evicted */
#define LOOKAHEAD 32 /* ranges copied ahead at most, per use */

#define RECALL 4 /* uses a range remembers, to see it recur with the loop */
#define SPANS_ALL 58 /* of 64 parts: a range its tensors span whole (a tail of slack aside) */

typedef struct {
    uint64_t start, len; /* home: [start, start + len) */
    uint64_t used[RECALL]; /* its latest uses (launch numbers), newest first */
    uint64_t named;      /* the parts (sw_parts) its launches' tensors span, this visit */
    uint64_t named_last; /* the same over its visit before; 0 unknown */
    uint64_t named_prev; /* and over the visit before that (a training step's
                          * forward pass and update visit a weight each) */
    uint8_t parted;      /* bit 0: a launch of this visit named part of it;
                          * bits 1, 2: of the visit before, and the one before */
    int next;            /* the unit used after it last time, -1 none */
    int entry;           /* its copy in the window, -1 none */
    bool live;
    bool written;        /* a copy was found changed (said once, in the log) */
    bool fp_known;       /* fp_home holds the fingerprint of home */
    bool escapes;        /* a kernel stored a pointer into its copy: never served again */
    CUevent homed;       /* after its latest copy home (made on first use) */
    CUstream homed_on;   /* the stream that copy home ran on */
    uint32_t id;         /* which range this is, of those the slot held: timers name it */
    uint32_t visits;     /* visits begun (visit) */
    bool first;          /* its latest use began a visit */
    sw_cost_t cost;      /* a visit read in place against a copy, timed (core/cost.c) */
    uint64_t linked;     /* bytes its latest copy moved over the link (host chunks) */
    uint64_t place_linked; /* its bytes on the host when its visits were timed in place */
    bool said_partly;    /* a copy found it partly on the device (said once, in the log) */
    /* The visit being timed in place, every launch of it, summed. */
    uint8_t session;     /* its number (tags its timers), 0 none */
    uint32_t session_visit;
    uint16_t started, settled; /* its launches timed, and those whose times are in */
    float sum_ms;
    bool broken;         /* a launch of it went untimed, or read a copy */
    bool cheap;          /* read in place by its costs (said once, in the log) */
} unit_t;

typedef struct {
    int unit;            /* -1: free */
    uint64_t off;        /* in the window */
    bool ahead;          /* filled ahead and not read yet */
    int pins;            /* launches about to read it (their read not recorded yet) */
    CUevent filled;
    CUevent read[READERS];
    CUstream reader[READERS];
    int nread;
} entry_t;

typedef struct {
    pthread_mutex_t lock;
    int dev;             /* whose memory it is */
    CUcontext ctx;       /* the context it serves, that of its setup */
    const sw_table_t *table; /* the tracked allocations (alloc.c) */
    CUdeviceptr base;    /* the window */
    uint64_t size, head;
    uint64_t slot;       /* the largest range it streams (alloc.c, window_bytes) */
    CUstream side;       /* where copies go: st, or cst during a capture */
    CUstream st;         /* the device's copy stream (sw_dev_copy_stream) */
    CUstream cst;        /* spillway's stream for captures, made on first use */
    CUstream origin;     /* the capturing stream the window serves, or NULL */
    bool cst_in;         /* cst joined that capture: it must rejoin the origin */
    bool broken;         /* the capture lost a step its graph needs: it must fail */
    bool graphs;         /* some graph holds copies: replays take turns */
    CUevent replayed;    /* after the latest such replay */
    CUevent done;        /* after the latest evictions, for others to wait on */
    bool fp_on;          /* fingerprints: else every copy goes home */
    CUdeviceptr fp;      /* per unit: home's fingerprint, then the copy's */
    uint32_t *changed;   /* per unit, pinned: spillway_copy_if_changed copied */
    uint32_t *escaped;   /* per unit, pinned: spillway_unwindow put a stored pointer back */
    unit_t units[MAX_UNITS];
    entry_t entries[MAX_ENTRIES];
    int nunits;
    int live;            /* entries holding a copy (atomic reads outside the lock) */
    int last;            /* the unit used last, for the chain */
    sw_worth_t worth;    /* its clocks and counts (core/worth.c, sw_window_worth) */
    /* Relaxed atomics: read without the lock. */
    uint64_t served_at;  /* the launch it served last; 0 none */
    int idle_replays;    /* graph launches since it last served, while no graph held a copy */
    sw_timers_t *timers; /* NULL: nothing is timed, every range is copied */
    uint32_t ids;        /* ranges given a unit so far */
    uint8_t sessions;    /* visits timed in place so far (wraps, skipping 0) */
    bool said_repaid;    /* repaid() said timing lowered its bar */
    /* Launches between sw_window_use and sw_window_read holding a copy or
     * a timer of it (hold): it is not freed under them (sw_window_release). */
    int holders;
    float ratios[MAX_UNITS]; /* repaid()'s scratch */
    double copy_rate;        /* the most bytes per ms a copy reached (core/cost.c) */
} win_t;

/* Each device's window (NULL: none), made when the device's budget first
 * binds, or at its first tracked allocation when its size is given
 * (alloc.c). Written under the exclusive gate, read under the shared one. */
static win_t *wins[SW_MAX_DEVICES];
static bool any_on;   /* some window is on */
static bool any_unit; /* some window has had a range (sw_window_busy) */

static __thread struct {
    /* The window the launch reads copies of or is timed by, its device's:
     * one at most, counted among its holders until sw_window_read (hold). */
    win_t *w;
    int n;
    int e[SW_WINDOW_MAX_USES];
    bool waited; /* one of them had not landed when the launch was issued */
    int nspans;  /* what else the launch could write (sw_window_spans) */
    bool timed;  /* w's timer `timer` times the launch, read in place */
    int timer;
    uint64_t lo[SW_UNWINDOW_SPANS], len[SW_UNWINDOW_SPANS];
} pending; /* entries the launch being issued on this thread reads */

static CUdeviceptr fp_home(win_t *w, int ui) { return w->fp + (uint64_t)ui * 2 * SW_FP_BYTES; }
static CUdeviceptr fp_now(win_t *w, int ui) { return fp_home(w, ui) + SW_FP_BYTES; }

static win_t *win(int dev)
{
    return dev >= 0 && dev < SW_MAX_DEVICES ? __atomic_load_n(&wins[dev], __ATOMIC_ACQUIRE)
                                            : NULL;
}

bool sw_window_on(void)
{
    return __atomic_load_n(&any_on, __ATOMIC_RELAXED);
}

uint64_t sw_window_size(int dev)
{
    win_t *w = win(dev);
    return w ? w->size : 0;
}

int sw_window_here(void)
{
    CUcontext ctx = NULL;
    if (!sw_window_on() || SW_CALL(cuCtxGetCurrent, (&ctx)) != CUDA_SUCCESS || !ctx)
        return -1;
    for (int dev = 0; dev < SW_MAX_DEVICES; dev++) {
        win_t *w = win(dev);
        if (w && w->ctx == ctx)
            return dev;
    }
    return -1;
}

/* Makes w's memory, streams and events in the current context, dev's;
 * false, with nothing left allocated, when one cannot be made. */
static bool make(win_t *w, int dev, uint64_t size)
{
    const sw_real_t *r = sw_real();
    if (r->cuCtxGetCurrent(&w->ctx) != CUDA_SUCCESS || !w->ctx)
        return false;
    if (r->cuMemAlloc_v2(&w->base, size) != CUDA_SUCCESS) {
        sw_warn("device %d: cannot allocate a %llu-byte streaming window: streaming is off there",
                dev, (unsigned long long)size);
        return false;
    }
    /* The capture stream is made now: a capture in the global mode may
     * not make one. Without it captures read in place. */
    if (r->cuStreamCreate(&w->cst, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        w->cst = NULL;
    /* Copies go on the stream moves of dev's chunks use: a move's copy
     * follows every window copy of its home on the GPU (sw_move). */
    if (sw_dev_copy_stream(dev, &w->st) == CUDA_SUCCESS &&
        r->cuEventCreate(&w->replayed, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS) {
        if (r->cuEventCreate(&w->done, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS)
            return true;
        r->cuEventDestroy_v2(w->replayed);
    }
    if (w->cst)
        r->cuStreamDestroy_v2(w->cst);
    r->cuMemFree_v2(w->base);
    sw_warn("device %d: cannot set up the streaming window: streaming is off there", dev);
    return false;
}

uint64_t sw_window_setup(int dev, uint64_t size, uint64_t slot, const sw_table_t *t)
{
    const sw_options_t *o = sw_opts();
    const sw_real_t *r = sw_real();
    size -= size % SW_WINDOW_ALIGN;
    if (o->policy != SW_POLICY_LEARNED || size == 0 || win(dev) || dev < 0 ||
        dev >= SW_MAX_DEVICES)
        return 0;
    win_t *w = calloc(1, sizeof *w);
    if (!w || !make(w, dev, size)) {
        free(w);
        return 0;
    }
    pthread_mutex_init(&w->lock, NULL);
    w->dev = dev;
    w->last = -1;
    w->timers = sw_timers_new();
    w->fp_on = sw_fp_ready(dev) &&
              r->cuMemAlloc_v2(&w->fp, (size_t)MAX_UNITS * 2 * SW_FP_BYTES) == CUDA_SUCCESS &&
              r->cuMemAllocHost_v2((void **)&w->changed, MAX_UNITS * sizeof *w->changed) ==
                  CUDA_SUCCESS &&
              r->cuMemAllocHost_v2((void **)&w->escaped, MAX_UNITS * sizeof *w->escaped) ==
                  CUDA_SUCCESS;
    if (w->fp_on) {
        memset(w->changed, 0, MAX_UNITS * sizeof *w->changed);
        memset(w->escaped, 0, MAX_UNITS * sizeof *w->escaped);
    }
    for (int i = 0; i < MAX_ENTRIES; i++)
        w->entries[i].unit = -1;
    w->side = w->st;
    w->table = t;
    w->size = size;
    w->slot = slot && slot < size ? slot : size;
    __atomic_store_n(&wins[dev], w, __ATOMIC_RELEASE);
    __atomic_store_n(&any_on, true, __ATOMIC_RELAXED);
    sw_info("device %d: streaming window: %llu bytes%s", dev, (unsigned long long)size,
            w->fp_on ? "" : " (no fingerprints: every copy goes home)");
    return size;
}

/* Forgets e's copy without sending it home (its range is being freed, or
 * a capture that failed made it). Lock held. */
/* Counts this thread's launch among w's holders, once. Lock held. */
static void hold(win_t *w)
{
    if (!pending.w) {
        pending.w = w;
        __atomic_add_fetch(&w->holders, 1, __ATOMIC_RELAXED);
    }
}

static void drop_entry(win_t *w, entry_t *e)
{
    w->units[e->unit].entry = -1;
    sw_stat_add(SW_STAT_window_bytes, -(int64_t)w->units[e->unit].len);
    e->unit = -1;
    e->nread = 0;
    e->ahead = false;
    __atomic_sub_fetch(&w->live, 1, __ATOMIC_RELAXED);
}

/* A step the capture's graph needs could not be issued into it (a copy
 * home, a fence): a replay would lose bytes or race. The capture must
 * fail: synchronizing a capturing stream is invalid and invalidates it
 * (docs/cuda-facts.md), so the driver itself ends it with
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED; should it not, sw_capture_end
 * answers that (sw_window_capture_ends). Lock held. */
static void break_capture(win_t *w)
{
    w->broken = true;
    SW_REAL(cuStreamSynchronize)(w->origin);
}

/* Work queued on the copies' stream that reads home is past the point
 * where a fence could be recorded after it: nothing would order a later
 * write of home after it. Eagerly the host waits for it; in a capture it
 * cannot. Lock held. */
static void unfenced(win_t *w)
{
    if (w->origin)
        break_capture(w);
    else if (SW_REAL(cuStreamSynchronize)(w->side) != CUDA_SUCCESS)
        sw_error("cannot wait for a window copy: a write of its home may race with it");
}

/* Whether [start, +len) may be copied into w: no bigger than a slot
 * (asked first, so a big one is not walked chunk by chunk), w's device's
 * chunks, some of them on the host and the rest on the device. A range
 * partly resident is copied whole too (the extent rule), its resident
 * chunks at device speed: read in place, a GEMM would re-read its host
 * part once per tile row (the H200's prefill, 2026-11-28: chunk moves left
 * 128 MiB layers half resident, read in place every step at 1.84x the
 * link bound). Asked of a launch's ranges and of the ones copied ahead
 * alike. */
static bool streamable(const win_t *w, uint64_t start, uint64_t len)
{
    if (len > w->slot)
        return false;
    bool host = false;
    for (uint64_t p = start; p < start + len;) {
        const sw_chunk_t *c = sw_table_lookup(w->table, p);
        /* A fixed chunk's handle is mapped elsewhere too (appvmm.c): a
         * write through that address would leave a copy stale. A chunk
         * of another device is streamed by that device's window. */
        if (!c || c->slot >= 0 || c->fixed || c->alloc->dev != w->dev)
            return false;
        host |= c->where == SW_ON_HOST;
        p = c->va + c->size;
    }
    return host;
}

/* Copies len bytes between home at `home` and a window copy, into home
 * when `to_home`, on s (NULL: synchronously): one copy per run of home's
 * chunks in one place, so that no single copy spans host and device
 * memory. The bytes that cross the link (home's on the host), or 0 if a
 * copy failed (the driver's answer in *res). */
static uint64_t copy_runs(const win_t *w, uint64_t home, CUdeviceptr copy, uint64_t len,
                          bool to_home, CUstream s, CUresult *res)
{
    const sw_real_t *r = sw_real();
    uint64_t linked = 0;
    *res = CUDA_SUCCESS;
    for (uint64_t p = home; p < home + len;) {
        const sw_chunk_t *c = sw_table_lookup(w->table, p);
        sw_where_t where = c ? c->where : SW_ON_HOST;
        uint64_t end = p;
        while (end < home + len) {
            const sw_chunk_t *n = sw_table_lookup(w->table, end);
            if ((n ? n->where : SW_ON_HOST) != where)
                break;
            end = n ? n->va + n->size : home + len;
        }
        if (end > home + len)
            end = home + len;
        CUdeviceptr at = copy + (p - home), to = to_home ? p : at, from = to_home ? at : p;
        *res = s ? r->cuMemcpyDtoDAsync_v2(to, from, end - p, s)
                 : r->cuMemcpyDtoD_v2(to, from, end - p);
        if (*res != CUDA_SUCCESS)
            return 0;
        if (where == SW_ON_HOST)
            linked += end - p;
        p = end;
    }
    return linked;
}

/* The bytes of [start, +len) on the host now: what its copy moves over
 * the link, and what a kernel reading all of it in place reads there. */
static uint64_t host_bytes(const win_t *w, uint64_t start, uint64_t len)
{
    uint64_t host = 0;
    for (uint64_t p = start; p < start + len;) {
        const sw_chunk_t *c = sw_table_lookup(w->table, p);
        if (!c)
            break;
        uint64_t end = c->va + c->size < start + len ? c->va + c->size : start + len;
        if (c->where == SW_ON_HOST)
            host += end - p;
        p = end;
    }
    return host;
}

bool sw_window_streamable(int dev, uint64_t start, uint64_t len)
{
    const win_t *w = win(dev);
    return w && streamable(w, start, len);
}

/* ---- units ---- */

static int unit_find(win_t *w, uint64_t start)
{
    for (int i = 0; i < w->nunits; i++)
        if (w->units[i].live && w->units[i].start == start)
            return i;
    return -1;
}

static int unit_get(win_t *w, uint64_t start, uint64_t len)
{
    int ui = unit_find(w, start);
    if (ui >= 0)
        return ui;
    for (ui = 0; ui < w->nunits && w->units[ui].live; ui++)
        ;
    if (ui == MAX_UNITS)
        return -1;
    if (ui == w->nunits)
        __atomic_store_n(&w->nunits, w->nunits + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&any_unit, true, __ATOMIC_RELAXED);
    /* A dead unit's event is kept for the new one (teardown destroys it),
     * not dropped: with homed_on NULL nothing waits on its old record. A
     * new id: the old one's timers still out settle into nothing. */
    CUevent homed = w->units[ui].homed;
    w->units[ui] = (unit_t){.start = start, .len = len, .next = -1, .entry = -1, .live = true,
                            .homed = homed, .id = ++w->ids};
    if (w->fp_on) {
        w->changed[ui] = 0;
        w->escaped[ui] = 0;
    }
    return ui;
}

/* ---- the copies (lock held) ---- */

/* The copies' stream waits for every stream the application issued work
 * on (home may be written by it); in a capture, for the capturing one. */
static CUresult after_app(win_t *w)
{
    if (!w->origin)
        return sw_streams_order(w->st);
    /* In a capture, cst joins it before every fill: a kernel node the
     * program changes after instantiation (graphnodes.c) may write any
     * home in place, and no capture can tell which. */
    const sw_real_t *r = sw_real();
    CUresult e = r->cuEventRecord(w->done, w->origin);
    if (e == CUDA_SUCCESS && (e = r->cuStreamWaitEvent(w->cst, w->done, 0)) == CUDA_SUCCESS) {
        w->cst_in = true;
    }
    return e;
}

/* Frees e's space for a fill on the copies' stream: that stream waits
 * for every launch that read e (and its copy home after it). Home is
 * current already. On failure e is kept and its space is not reused. */
static CUresult evict(win_t *w, entry_t *e)
{
    const sw_real_t *r = sw_real();
    CUresult c = CUDA_SUCCESS;
    for (int i = 0; i < e->nread && c == CUDA_SUCCESS; i++)
        c = r->cuStreamWaitEvent(w->side, e->read[i], 0);
    if (c == CUDA_SUCCESS)
        drop_entry(w, e);
    return c;
}

static bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
    return a < b + blen && b < a + alen;
}

/* Makes [at, at + len) of the window free by evicting what overlaps it;
 * false, evicting nothing, if one of those is about to be read, or was
 * copied ahead and not read yet while `ahead` (a copy ahead never pushes
 * out another one: the chain would thrash). */
static bool make_room(win_t *w, uint64_t at, uint64_t len, bool ahead)
{
    for (int i = 0; i < MAX_ENTRIES; i++) {
        entry_t *e = &w->entries[i];
        if (e->unit >= 0 && overlaps(at, len, e->off, w->units[e->unit].len) &&
            (e->pins || (ahead && e->ahead)))
            return false;
    }
    for (int i = 0; i < MAX_ENTRIES; i++) {
        entry_t *e = &w->entries[i];
        if (e->unit >= 0 && overlaps(at, len, e->off, w->units[e->unit].len) &&
            evict(w, e) != CUDA_SUCCESS)
            return false;
    }
    return true;
}

static entry_t *free_entry(win_t *w)
{
    for (int i = 0; i < MAX_ENTRIES; i++) {
        entry_t *e = &w->entries[i];
        if (e->unit < 0 && !e->pins) {
            if (!e->filled && SW_REAL(cuEventCreate)(&e->filled, CU_EVENT_DISABLE_TIMING) !=
                                  CUDA_SUCCESS) {
                e->filled = NULL;
                return NULL;
            }
            return e;
        }
    }
    return NULL;
}

/* ---- timing the two ways a range is read (core/cost.c; lock held) ----
 * A visit read in place is timed launch by launch and summed (two layers
 * of one segment, each read in place, against one copy of the segment);
 * a copy, on its own. */

/* Not in a capture: an event recorded there is a node of its graph, and
 * times nothing until a replay. */
static bool can_time(const win_t *w)
{
    return w->timers && !w->origin && !sw_capturing();
}

#define TAG_UNIT 0xffffu
#define TAG_ID 0xffffffu

static uint64_t tag_of(int ui, const unit_t *u, sw_cost_kind_t k)
{
    return (uint64_t)ui | (uint64_t)(u->id & TAG_ID) << 16 | (uint64_t)u->session << 40 |
           (uint64_t)k << 48;
}

/* Ends u's session once its visit is over and every launch of it is
 * timed: the sum is a sample where none went untimed. */
static void session_end(unit_t *u)
{
    if (!u->session || u->session_visit == u->visits || u->settled < u->started)
        return;
    if (!u->broken && u->started)
        sw_cost_note(&u->cost, SW_COST_PLACE, u->sum_ms);
    u->session = 0;
}

static void timed(uint64_t tag, float ms, void *arg)
{
    win_t *w = arg;
    int ui = (int)(tag & TAG_UNIT);
    sw_cost_kind_t k = (sw_cost_kind_t)(tag >> 48);
    unit_t *u = ui < w->nunits ? &w->units[ui] : NULL;
    if (!u || !u->live || (u->id & TAG_ID) != (tag >> 16 & TAG_ID))
        return;
    if (k == SW_COST_COPY) {
        sw_cost_note(&u->cost, SW_COST_COPY, ms);
        sw_cost_rate_note(&w->copy_rate, u->linked, ms);
        return;
    }
    if (u->session != (uint8_t)(tag >> 40))
        return;
    u->settled++;
    if (ms > 0)
        u->sum_ms += ms;
    else
        u->broken = true;
    session_end(u);
}

/* Times this launch of ui, read in place on s, as part of the visit being
 * timed; a visit's first launch begins one where u wants a sample. One
 * timer a launch: a launch reading two host ranges counts for the first
 * (too long for it: the copy is favoured, as before timing). */
static void time_in_place(win_t *w, int ui, CUstream s)
{
    unit_t *u = &w->units[ui];
    if (!u->session) {
        if (!u->first)
            return;
        /* Samples of another placement of the range time other bytes:
         * a layer half resident reads half as much in place. */
        uint64_t host = host_bytes(w, u->start, u->len);
        if (host != u->place_linked) {
            sw_cost_forget(&u->cost, SW_COST_PLACE);
            u->place_linked = host;
            u->cheap = false;
        }
        if (!sw_cost_wants(&u->cost, SW_COST_PLACE) || !can_time(w) || pending.timed ||
            (pending.w && pending.w != w))
            return;
        u->session = ++w->sessions ? w->sessions : ++w->sessions;
        u->session_visit = u->visits;
        u->started = u->settled = 0;
        u->sum_ms = 0;
        u->broken = false;
    } else if (u->session_visit != u->visits) {
        return; /* the visit before, still settling */
    }
    int i = can_time(w) && !pending.timed && (!pending.w || pending.w == w) &&
                    u->started < UINT16_MAX
                ? sw_timer_start(w->timers, tag_of(ui, u, SW_COST_PLACE), s)
                : -1;
    if (i < 0) {
        u->broken = true;
        return;
    }
    u->started++;
    pending.timed = true;
    pending.timer = i;
    hold(w);
}

/* Whether u's two ways were timed with its range placed as it is now
 * (the bytes its copy carries over the link, linked). */
static bool placed_alike(const unit_t *u)
{
    return u->place_linked == u->linked;
}

/* u's time read in place over its copy's (sw_cost_ratio), where both
 * were timed with its range placed alike; 0 otherwise. */
static double place_ratio(const win_t *w, const unit_t *u)
{
    return placed_alike(u) ? sw_cost_ratio(&u->cost, u->linked, w->copy_rate) : 0;
}

/* Whether u is read in place by its costs: a visit read there was faster
 * than its copy. Said once. */
static bool cheaper_in_place(const win_t *w, unit_t *u)
{
    if (!placed_alike(u) || !sw_cost_in_place(&u->cost, u->linked, w->copy_rate))
        return false;
    if (!u->cheap) {
        sw_stat_add(SW_STAT_ranges_read_in_place, 1);
        sw_info("device %d: allocation 0x%llx +%llu is read in place: a visit reads it there "
                "in %.1f us, its copy takes %.1f us",
                w->dev, (unsigned long long)u->start, (unsigned long long)u->len,
                1e3 * u->cost.best[SW_COST_PLACE],
                1e3 * u->cost.best[SW_COST_PLACE] / place_ratio(w, u));
    }
    u->cheap = true;
    return true;
}

/* Copies unit ui into the window at the head; its entry, or NULL when
 * there is no room (see make_room) or a call failed: the range is then
 * read in place, which is always correct. */
static entry_t *fill(win_t *w, int ui, bool ahead)
{
    const sw_real_t *r = sw_real();
    unit_t *u = &w->units[ui];
    uint64_t at = w->head + u->len <= w->size ? w->head : 0;
    entry_t *e = free_entry(w);
    if (!e || !make_room(w, at, u->len, ahead))
        return NULL;
    CUdeviceptr copy = w->base + at;
    /* In a capture, after the range's latest copy home in it. */
    if (w->origin && u->homed_on && r->cuStreamWaitEvent(w->side, u->homed, 0) != CUDA_SUCCESS)
        return NULL;
    int timer = can_time(w) && sw_cost_wants(&u->cost, SW_COST_COPY)
                    ? sw_timer_start(w->timers, tag_of(ui, u, SW_COST_COPY), w->side)
                    : -1;
    CUresult c;
    uint64_t linked = copy_runs(w, u->start, copy, u->len, false, w->side, &c);
    if (c != CUDA_SUCCESS) {
        sw_timer_drop(w->timers, timer);
        return NULL;
    }
    sw_timer_stop(w->timers, timer, w->side);
    if (linked != u->linked) {
        sw_cost_forget(&u->cost, SW_COST_COPY); /* another placement: see time_in_place */
        u->linked = linked;
    }
    if (linked < u->len && !u->said_partly) {
        sw_debug("range 0x%llx +%llu is partly on the device: %llu bytes of its copy cross "
                 "the link",
                 (unsigned long long)u->start, (unsigned long long)u->len,
                 (unsigned long long)linked);
        u->said_partly = true;
    }
    /* home's fingerprint: the bytes just copied, taken from the window at
     * device speed, once; each copy home keeps it current (send_home). A
     * graph takes it at every fill: a node changed after capture may have
     * written home in place since the last. */
    if ((!u->fp_known || w->origin) && w->fp_on)
        u->fp_known = sw_fp_queue(w->dev, copy, u->len, fp_home(w, ui), w->side) == CUDA_SUCCESS;
    if (r->cuEventRecord(e->filled, w->side) != CUDA_SUCCESS) {
        /* Nothing reads the copy, and the next fill here follows it on
         * the same stream; but a write of home must not overtake it. */
        unfenced(w);
        return NULL;
    }
    e->unit = ui;
    e->off = at;
    e->ahead = ahead;
    e->nread = 0;
    u->entry = (int)(e - w->entries);
    w->head = at + u->len;
    __atomic_add_fetch(&w->live, 1, __ATOMIC_RELAXED);
    sw_worth_copied(&w->worth, u->len, ahead || place_ratio(w, u) > SW_COST_LINK_RATIO,
                    2 * u->len <= w->size);
    sw_stats_batch_begin();
    sw_stat_add(SW_STAT_window_bytes, (int64_t)u->len);
    sw_stat_add(SW_STAT_bytes_streamed, (int64_t)u->len);
    sw_stat_add(sw_dev_stat(w->dev, SW_STAT_dev0_bytes_streamed), (int64_t)u->len);
    sw_stat_add(ahead ? SW_STAT_prefetches : SW_STAT_prefetch_late, 1);
    sw_stats_batch_end();
    return e;
}

/* Whether stream s may read e: it already does, or there is room to
 * record its read. */
static bool reader_ok(const entry_t *e, CUstream s)
{
    for (int i = 0; i < e->nread; i++)
        if (e->reader[i] == s)
            return true;
    return e->nread < READERS;
}

/* Whether launches' tensors spanning `parts` of a range read all of it,
 * near enough: else a copy would carry bytes only pointers spillway does
 * not see reach, if anything, and they read home anyway. */
static bool spans_all(uint64_t parts)
{
    return __builtin_popcountll(parts) >= SPANS_ALL;
}

/* Whether u's launches spanned it whole over each of its last two visits
 * (those not over yet count as whole). */
static bool spanned(const unit_t *u)
{
    return (!u->named_last || spans_all(u->named_last)) &&
           (!u->named_prev || spans_all(u->named_prev));
}

/* Whether a holds one tensor, as far as its learned starts tell. */
static bool one_tensor(const sw_alloc_t *a)
{
    return sw_segment_count(a) <= 1;
}

typedef struct {
    win_t *w;
    uint64_t now, room;
    int skip;            /* the unit being served */
    sw_alloc_t *best;
    uint64_t best_next;
} soonest_t;

static void find_soonest(sw_alloc_t *a, void *arg)
{
    soonest_t *f = arg;
    const sw_chunk_t *c = &a->chunks[0];
    if (a->dev != f->w->dev || !one_tensor(a) || a->size > f->room ||
        c->where != SW_ON_HOST || !sw_learn_state(c).loop)
        return;
    uint64_t next = sw_learn_next_use(c, f->now);
    if (next == UINT64_MAX || (f->best && next >= f->best_next))
        return;
    int ui = unit_find(f->w, a->va);
    if (ui == f->skip || (ui >= 0 && (f->w->units[ui].entry >= 0 || f->w->units[ui].cheap)) ||
        !streamable(f->w, a->va, a->size))
        return;
    f->best = a;
    f->best_next = next;
}

/* Where the chain does not know what comes after ui yet (a range that
 * has just moved to the host has no successor until the loop comes
 * round), the host allocation of one tensor its learned schedule says is
 * used soonest: its unit, or -1. */
static int soonest(win_t *w, int ui, uint64_t now, uint64_t room)
{
    soonest_t f = {.w = w, .now = now, .room = room, .skip = ui};
    sw_table_each(w->table, find_soonest, &f);
    return f.best ? unit_get(w, f.best->va, f.best->size) : -1;
}

/* The chain: the ranges used after ui last time, copied ahead while the
 * window has room for them. */
static void copy_ahead(win_t *w, int ui, uint64_t now)
{
    uint64_t room = w->size - w->units[ui].len;
    int v = w->units[ui].next;
    if (v < 0)
        v = soonest(w, ui, now, room);
    for (int k = 0; k < LOOKAHEAD && v >= 0 && v != ui; k++, v = w->units[v].next) {
        unit_t *u = &w->units[v];
        /* Not one its own launch would not copy (sw_window_use): named
         * in part by its last visits, or written and named in part by one
         * of their launches. */
        if (u->entry >= 0 || !spanned(u) || (u->written && (u->parted & 6)) ||
            cheaper_in_place(w, u))
            continue;
        if (u->len > room || !streamable(w, u->start, u->len) || !fill(w, v, true))
            break;
        room -= u->len;
    }
}

/* s comes after ev: on the GPU, or else, outside a capture, because the
 * host waited for ev. On failure (neither could be done) the driver's
 * last error. */
static CUresult order_after(win_t *w, CUstream s, CUevent ev)
{
    const sw_real_t *r = sw_real();
    CUresult c = r->cuStreamWaitEvent(s, ev, 0);
    if (c == CUDA_SUCCESS || w->origin)
        return c;
    return r->cuEventSynchronize(ev);
}

/* Home in [lo, lo + len) is about to be read or written in place by work
 * on s: every copy of an overlapping range but `keep` is dropped, with s
 * after its fill (which reads home) and after the launches that read it
 * (with their copies home). false, dropping nothing more, if s cannot be
 * ordered so; a copy about to be read (pinned) is left alone. */
static bool drop_overlaps(win_t *w, uint64_t lo, uint64_t len, int keep, CUstream s)
{
    for (int i = 0; i < MAX_ENTRIES; i++) {
        entry_t *e = &w->entries[i];
        if (e->unit < 0 || e->unit == keep || e->pins ||
            !overlaps(lo, len, w->units[e->unit].start, w->units[e->unit].len))
            continue;
        if (order_after(w, s, e->filled) != CUDA_SUCCESS)
            return false;
        for (int k = 0; k < e->nread; k++)
            if (e->reader[k] != s && order_after(w, s, e->read[k]) != CUDA_SUCCESS)
                return false;
        /* Its space is free at once, but only s waited for its readers:
         * the next fill waits for every application stream, or in a
         * capture for the origin (after_app). */
        drop_entry(w, e);
    }
    return true;
}

/* drop_overlaps for work about to write home in place: a copy it could
 * not drop would be read, stale, by later rewritten launches. A capture
 * is failed; eagerly only a wait that failed twice leaves one (logged). */
static void drop_for_write(win_t *w, uint64_t lo, uint64_t len, CUstream s)
{
    if (drop_overlaps(w, lo, len, -1, s))
        return;
    if (w->origin)
        break_capture(w);
    else
        sw_error("cannot order work after the window's copies of 0x%llx +%llu: they may go stale",
                 (unsigned long long)lo, (unsigned long long)len);
}

/* Queues on s, right after the launch that read e, e's way home if that
 * launch changed it (see "home" above), after the range's previous copy
 * home on another stream. Lock held. */
static CUresult send_home(win_t *w, entry_t *e, CUstream s)
{
    const sw_real_t *r = sw_real();
    int ui = e->unit;
    unit_t *u = &w->units[ui];
    CUdeviceptr copy = w->base + e->off;
    CUresult c = CUDA_SUCCESS;
    if (!u->homed && r->cuEventCreate(&u->homed, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
        u->homed = NULL;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (u->homed_on && u->homed_on != s)
        c = r->cuStreamWaitEvent(s, u->homed, 0);
    if (c == CUDA_SUCCESS && (!w->fp_on || !u->fp_known)) {
        copy_runs(w, u->start, copy, u->len, true, s, &c);
        if (c == CUDA_SUCCESS) {
            sw_stat_add(SW_STAT_bytes_written_back, (int64_t)u->len);
            /* home's fingerprint is now the copy's: taken on the way */
            u->fp_known = w->fp_on &&
                          sw_fp_queue(w->dev, copy, u->len, fp_home(w, ui), s) == CUDA_SUCCESS;
        }
    } else if (c == CUDA_SUCCESS) {
        c = sw_fp_queue(w->dev, copy, u->len, fp_now(w, ui), s);
        if (c == CUDA_SUCCESS)
            c = sw_fp_copy_if_changed(w->dev, copy, u->start, u->len, fp_home(w, ui), fp_now(w, ui),
                                      (CUdeviceptr)(uintptr_t)&w->changed[ui], s);
        /* Home now holds the copy's bytes either way. */
        if (c == CUDA_SUCCESS)
            c = r->cuMemcpyDtoDAsync_v2(fp_home(w, ui), fp_now(w, ui), SW_FP_BYTES, s);
    }
    if (c == CUDA_SUCCESS && (c = r->cuEventRecord(u->homed, s)) == CUDA_SUCCESS)
        u->homed_on = s;
    return c;
}

/* Notes use `now` of u; whether one of its earlier uses lies one loop
 * period back (within 1/8): then u recurs with the loop and is worth a
 * copy each time. A range used twice a step (a weight read forward and
 * updated) recurs too. */
static bool one_loop(uint64_t gap, uint64_t period)
{
    uint64_t d = gap > period ? gap - period : period - gap;
    return period && d * 8 <= period;
}

static bool recurs(unit_t *u, uint64_t now, uint64_t period)
{
    bool yes = false;
    for (int i = 0; i < RECALL && u->used[i] && period; i++)
        yes |= one_loop(now - u->used[i], period);
    if (u->used[0] != now) {
        memmove(u->used + 1, u->used, (RECALL - 1) * sizeof u->used[0]);
        u->used[0] = now;
    }
    return yes;
}

/* Whether u, an allocation of one tensor, is read once a loop by its
 * chunks' own history (their learned loop): one just moved to the host
 * streams from its first use there, where u's record of uses starts
 * empty. Not a segment of several: its chunks' loop is its busiest
 * tensor's. */
static bool loops_whole(const win_t *w, const unit_t *u, uint64_t period)
{
    const sw_chunk_t *c = sw_table_lookup(w->table, u->start);
    return c && c->alloc->va == u->start && c->alloc->size == u->len && one_tensor(c->alloc) &&
           one_loop(sw_learn_state(c).loop, period);
}

/* A use `now` of u, naming `parts`: a visit is the uses of u within a
 * quarter of the loop of each other (the layers of a segment, one after
 * another); what the two before named is kept. */
static void visit(unit_t *u, uint64_t parts, uint64_t now, uint64_t period)
{
    u->first = !u->used[0];
    if (period && u->used[0] && now - u->used[0] > period / 4) {
        u->visits++;
        u->first = true;
        session_end(u);
        u->named_prev = u->named_last;
        u->named_last = u->named;
        u->named = 0;
        u->parted = (uint8_t)(u->parted << 1 & 6);
    }
    u->named |= parts;
    u->parted |= !spans_all(parts);
}

bool sw_window_use(int dev, uint64_t start, uint64_t len, uint64_t parts, uint64_t now,
                   uint64_t period, CUstream s, uint64_t *copy, bool *written)
{
    win_t *w = win(dev);
    /* One launch reads one window, its device's. */
    if (!w || (pending.w && pending.w != w))
        return false;
    pthread_mutex_lock(&w->lock);
    bool ok = false;
    /* In a capture, only the stream the window serves (w->origin). */
    if (sw_capturing() && w->origin != s) {
        pthread_mutex_unlock(&w->lock);
        return false;
    }
    sw_timers_settle(w->timers, timed, w);
    int ui = unit_get(w, start, len), timed_ui = -1;
    if (ui < 0 || pending.n == SW_WINDOW_MAX_USES)
        goto out;
    unit_t *u = &w->units[ui];
    if (u->len != len) { /* a new segment start split it: a new shape */
        if (u->entry >= 0 && w->entries[u->entry].pins)
            goto out;
        if (!drop_overlaps(w, u->start, u->len, -1, s))
            goto out;
        u->len = len;
        u->fp_known = false;
        u->named = u->named_last = u->named_prev = 0; /* 64ths of another length */
        u->parted = 0;
    }
    if (w->fp_on && !u->written && __atomic_load_n(&w->changed[ui], __ATOMIC_RELAXED)) {
        u->written = true;
        sw_debug("range 0x%llx +%llu is written by its kernels: its copies go home when changed",
                 (unsigned long long)u->start, (unsigned long long)u->len);
    }
    if (w->fp_on && !u->escapes && __atomic_load_n(&w->escaped[ui], __ATOMIC_RELAXED)) {
        u->escapes = true;
        sw_info("allocation 0x%llx +%llu: a kernel stored a pointer into its window copy; it "
                "is read at its own address from now on",
                (unsigned long long)u->start, (unsigned long long)u->len);
    }
    if (u->escapes)
        goto out;
    if (!drop_overlaps(w, start, len, ui, s))
        goto out;
    /* What a capture records is replayed as a loop by construction. A
     * copy already made serves every launch of the visit that made it
     * (the layers of a shared segment, one after another), recurring or
     * not: it is paid for. */
    visit(u, parts, now, period);
    /* Read in place below, the launch is timed (core/cost.c). */
    timed_ui = ui;
    if (!recurs(u, now, period) && u->entry < 0 && !w->origin && !loops_whole(w, u, period))
        goto out;
    /* A range its last visits' launches did not span whole (a segment whose
     * other tensors only a pointer table reaches) is read in place: a
     * copy moves all of it, and each tensor read at home moves only what
     * it reads. The same holds of each launch in a capture, where a copy
     * serves one launch, and of a range its readers write, whose copy
     * goes home whole after each launch that changes it (one layer's
     * update in a segment of five). */
    bool whole = w->origin || u->written ? spans_all(parts) : spanned(u);
    if (!whole)
        goto out;
    if (len > w->size)
        goto out;
    /* A copy made serves, paid for; none is made of a range a visit read
     * in place faster than its copy took. */
    if (u->entry < 0 && cheaper_in_place(w, u))
        goto out;
    /* In a capture a copy serves the one launch it is made for: a node of
     * the graph may be changed after it is instantiated to write home in
     * place (cuGraphExecKernelNodeSetParams, graphnodes.c), and every later
     * node must then read what it wrote. So each use copies home again,
     * after the readers of the copy before (evict). */
    if (w->origin && u->entry >= 0 && !w->entries[u->entry].pins &&
        evict(w, &w->entries[u->entry]) != CUDA_SUCCESS)
        goto out;
    if (w->last >= 0 && w->last != ui)
        w->units[w->last].next = ui;
    w->last = ui;
    /* Every copy this use queues reads home after what the application
     * issued so far, which may write it. */
    bool ordered = after_app(w) == CUDA_SUCCESS;
    if (u->entry < 0 && ordered)
        fill(w, ui, false);
    entry_t *e = u->entry >= 0 ? &w->entries[u->entry] : NULL;
    if (!e || !reader_ok(e, s))
        goto out;
    const sw_real_t *r = sw_real();
    /* In a capture nothing has run: the replay must always wait. */
    bool landed = !w->origin && r->cuEventQuery(e->filled) == CUDA_SUCCESS;
    if (!landed && r->cuStreamWaitEvent(s, e->filled, 0) != CUDA_SUCCESS)
        goto out;
    if (e->ahead)
        sw_stat_add(SW_STAT_prefetch_hits, 1);
    pending.waited |= !landed;
    e->ahead = false;
    e->pins++;
    pending.e[pending.n++] = u->entry;
    hold(w);
    *copy = w->base + e->off;
    *written = u->written;
    __atomic_store_n(&w->served_at, now, __ATOMIC_RELAXED);
    __atomic_store_n(&w->idle_replays, 0, __ATOMIC_RELAXED);
    ok = true;
    /* Not into a graph: a copy ahead is a guess, and a graph would make
     * it at every replay, reading an allocation its own kernels may never
     * use, which the program may have freed by then. */
    if (ordered && !w->origin)
        copy_ahead(w, ui, now);
out:
    if (ok && w->units[ui].session && w->units[ui].session_visit == w->units[ui].visits)
        w->units[ui].broken = true; /* this visit reads a copy too */
    if (!ok && timed_ui >= 0)
        time_in_place(w, timed_ui, s);
    pthread_mutex_unlock(&w->lock);
    return ok;
}

void sw_window_unuse(uint64_t start, CUstream s)
{
    win_t *w = pending.w;
    if (!pending.n)
        return;
    pthread_mutex_lock(&w->lock);
    int ui = unit_find(w, start);
    int ei = ui >= 0 ? w->units[ui].entry : -1;
    for (int k = 0; ei >= 0 && k < pending.n; k++)
        if (pending.e[k] == ei) {
            pending.e[k] = pending.e[--pending.n];
            w->entries[ei].pins--;
            drop_for_write(w, start, w->units[ui].len, s);
            break;
        }
    pthread_mutex_unlock(&w->lock);
}

/* send_home could not queue e's way home on s, or only part of it: the
 * host takes it home itself, so no byte the launch wrote is lost. It
 * waits for the whole context, not only s: an earlier copy home of the
 * range on another stream (the chain send_home could not wait for) must
 * not land after this one. Part of send_home may have run, so home's
 * fingerprint is no longer known. In a capture nothing can wait: it
 * fails. Lock held. */
static void home_by_host(win_t *w, entry_t *e, CUstream s)
{
    const sw_real_t *r = sw_real();
    unit_t *u = &w->units[e->unit];
    u->fp_known = false;
    if (w->origin) {
        break_capture(w);
        return;
    }
    /* A capture the window does not serve may run elsewhere: a context
     * synchronization would invalidate it, so then only s is waited for. */
    CUresult c = sw_capturing() ? r->cuStreamSynchronize(s) : r->cuCtxSynchronize();
    if (c == CUDA_SUCCESS)
        copy_runs(w, u->start, w->base + e->off, u->len, true, NULL, &c);
    if (c != CUDA_SUCCESS)
        sw_error("range 0x%llx: its window copy at 0x%llx could not go home",
                 (unsigned long long)u->start, (unsigned long long)(w->base + e->off));
}

void sw_window_spans(const uint64_t *lo, const uint64_t *len, int n)
{
    pending.nspans = n < SW_UNWINDOW_SPANS ? n : SW_UNWINDOW_SPANS;
    memcpy(pending.lo, lo, (size_t)pending.nspans * sizeof *lo);
    memcpy(pending.len, len, (size_t)pending.nspans * sizeof *len);
}

bool sw_window_guarded(int dev)
{
    const win_t *w = win(dev);
    return w && w->fp_on;
}

/* ESCAPED POINTERS. A launch served from copies holds window addresses
 * in its arguments, and may store pointers derived from them (a grouped
 * GEMM's set-up kernel fills a table of per-expert pointers). A later
 * kernel reading that table would reach the copy after its space was
 * reused. So right after the launch, on its stream, spillway_unwindow
 * puts every such address it finds in the spans the launch could write
 * (launch.c: 64 KiB from each of its other pointer arguments) back to
 * the same offset in the copy's home, which is current once the copy
 * went home just after; and it flags the unit, which is read at its own
 * address from then on. Should the kernel not be queued, the units are
 * never served again, and the host cannot put back what the launch may
 * have stored: that is said. Lock held. */
static void unwindow(win_t *w, CUstream s)
{
    sw_unwindow_t a = {.nspans = (uint32_t)pending.nspans, .found = w->escaped};
    for (int i = 0; i < pending.nspans; i++) {
        a.lo[i] = pending.lo[i];
        a.len[i] = pending.len[i];
    }
    for (int k = 0; k < pending.n; k++) {
        const entry_t *e = &w->entries[pending.e[k]];
        a.copy[k] = w->base + e->off;
        a.copy_len[k] = w->units[e->unit].len;
        a.home[k] = w->units[e->unit].start;
        a.unit[k] = (uint32_t)e->unit;
    }
    a.ncopies = (uint32_t)pending.n;
    if (sw_fp_unwindow(w->dev, &a, s) == CUDA_SUCCESS)
        return;
    for (int k = 0; k < pending.n; k++)
        w->units[w->entries[pending.e[k]].unit].escapes = true;
    sw_error("cannot queue the check for pointers stored into window copies: a pointer a kernel "
             "stored may reach a reused copy");
}

/* The copies this thread's launch read (pending): s reads them now. */
static void read_copies(CUstream s)
{
    if (!pending.n) {
        pending.nspans = 0;
        return;
    }
    const sw_real_t *r = sw_real();
    win_t *w = pending.w;
    pthread_mutex_lock(&w->lock);
    if (pending.nspans)
        unwindow(w, s);
    pending.nspans = 0;
    for (int k = 0; k < pending.n; k++) {
        entry_t *e = &w->entries[pending.e[k]];
        if (send_home(w, e, s) != CUDA_SUCCESS)
            home_by_host(w, e, s);
        int i = 0;
        while (i < e->nread && e->reader[i] != s)
            i++;
        if (i == e->nread) {
            if (!e->read[i] &&
                r->cuEventCreate(&e->read[i], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
                e->read[i] = NULL;
            e->reader[i] = s;
        }
        /* Without its read recorded, a fill could not wait for this launch
         * and its copy home: the host waits for them here instead (rare),
         * which in a capture fails it. */
        if (!e->read[i] || r->cuEventRecord(e->read[i], s) != CUDA_SUCCESS) {
            if (w->origin)
                break_capture(w);
            else
                r->cuStreamSynchronize(s);
        } else if (i == e->nread) {
            e->nread++;
        }
        e->pins--;
    }
    sw_stat_add(SW_STAT_rewritten_launches, 1);
    if (pending.waited)
        sw_stat_add(SW_STAT_launches_waited, 1);
    pending.n = 0;
    pending.waited = false;
    pthread_mutex_unlock(&w->lock);
}

void sw_window_read(CUstream s, bool issued)
{
    win_t *held = pending.w;
    if (pending.timed) {
        pthread_mutex_lock(&held->lock);
        if (issued)
            sw_timer_stop(held->timers, pending.timer, s);
        else
            sw_timer_drop(held->timers, pending.timer);
        pthread_mutex_unlock(&held->lock);
        pending.timed = false;
    }
    read_copies(s);
    /* The last touch of held: once its holders reach 0 it may be freed. */
    if (held) {
        pending.w = NULL;
        __atomic_sub_fetch(&held->holders, 1, __ATOMIC_RELEASE);
    }
}

/* Frees everything w holds but the device's copy stream, which moves
 * share. No launch is in flight (the gate is held exclusively), so no
 * thread's pending entries name w. */
static void teardown(win_t *w)
{
    const sw_real_t *r = sw_real();
    bool ok = r->cuMemFree_v2(w->base) == CUDA_SUCCESS;
    if (w->fp_on)
        ok &= r->cuMemFree_v2(w->fp) == CUDA_SUCCESS &&
              r->cuMemFreeHost(w->changed) == CUDA_SUCCESS &&
              r->cuMemFreeHost(w->escaped) == CUDA_SUCCESS;
    if (!ok)
        sw_warn("device %d: the streaming window's memory could not all be freed", w->dev);
    for (int i = 0; i < MAX_ENTRIES; i++) {
        entry_t *e = &w->entries[i];
        if (e->filled)
            r->cuEventDestroy_v2(e->filled);
        for (int k = 0; k < READERS; k++)
            if (e->read[k])
                r->cuEventDestroy_v2(e->read[k]);
    }
    for (int i = 0; i < w->nunits; i++)
        if (w->units[i].homed)
            r->cuEventDestroy_v2(w->units[i].homed);
    sw_timers_free(w->timers);
    r->cuEventDestroy_v2(w->replayed);
    r->cuEventDestroy_v2(w->done);
    if (w->cst)
        r->cuStreamDestroy_v2(w->cst);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* The next window after device *dev's, *dev moved to its device; NULL
 * after the last: for (int d = -1; (w = next_window(&d));) */
static win_t *next_window(int *dev)
{
    while (++*dev < SW_MAX_DEVICES) {
        win_t *w = win(*dev);
        if (w)
            return w;
    }
    return NULL;
}

/* How many times its size w must copy a loop to repay its room, by the
 * ranges timed both ways (sw_cost_repaid), those read in place by their
 * costs too: they tell what the program's kernels are, and leaving them
 * out would leave a few slow samples to speak for them. Said when timing
 * lowers it. Lock held. */
static double repaid(void *arg)
{
    win_t *w = arg;
    int n = 0;
    for (int i = 0; i < w->nunits; i++) {
        const unit_t *u = &w->units[i];
        double ratio = u->live ? place_ratio(w, u) : 0;
        if (ratio > 0)
            w->ratios[n++] = (float)ratio;
    }
    double times = sw_cost_repaid(w->ratios, n);
    if (times < SW_COST_REPAID && !w->said_repaid) {
        sw_info("device %d: the ranges the streaming window copies take longer read in place "
                "than the link rates make them: it repays its room from %.1f times its size "
                "copied a loop",
                w->dev, times);
        w->said_repaid = true;
    }
    return times;
}

uint64_t sw_window_fits(int dev)
{
    win_t *w = win(dev);
    if (!w)
        return 0;
    pthread_mutex_lock(&w->lock);
    uint64_t slot = w->worth.fits;
    pthread_mutex_unlock(&w->lock);
    return slot;
}

bool sw_window_capture_room(int dev, uint64_t *room)
{
    win_t *w = win(dev);
    if (!w)
        return false;
    pthread_mutex_lock(&w->lock);
    /* Held copies fix the window whatever the ranges' times say. */
    bool changes = !w->graphs && !w->origin;
    if (changes) {
        const sw_worth_ask_t q = {.repaid = repaid, .arg = w};
        *room = sw_worth_capture(&q, w->slot < w->size ? w->slot : w->size);
        changes = *room != w->size;
    }
    pthread_mutex_unlock(&w->lock);
    return changes;
}

sw_window_worth_t sw_window_worth(int dev, uint64_t now, uint64_t period, uint64_t guess)
{
    win_t *w = win(dev);
    if (!w)
        return SW_WINDOW_WORTH;
    if (__atomic_load_n(&w->idle_replays, __ATOMIC_RELAXED) >= SW_WINDOW_IDLE_LOOPS)
        return SW_WINDOW_IDLE;
    pthread_mutex_lock(&w->lock);
    const sw_worth_ask_t q = {
        .now = now,
        .period = period,
        .guess = guess,
        .size = w->size,
        .align = SW_WINDOW_ALIGN,
        .served_at = __atomic_load_n(&w->served_at, __ATOMIC_RELAXED),
        .graphs = w->graphs,
        .repaid = repaid,
        .arg = w,
    };
    sw_window_worth_t why = sw_worth_judge(&w->worth, &q);
    pthread_mutex_unlock(&w->lock);
    return why;
}

uint64_t sw_window_release(int dev)
{
    win_t *w = win(dev);
    /* Not while a launch holds copies or a timer of it (holders): this
     * thread's, or another's that set its shared hold on the gate aside to
     * move a chunk mid-launch (sw_gate_wr), and reads them after. */
    if (!w || w->graphs || w->origin || sw_capturing() ||
        __atomic_load_n(&w->holders, __ATOMIC_ACQUIRE))
        return 0;
    /* Every launch that read a copy sent it home right after, and the
     * device has finished: home is current, the copies can simply go. */
    uint64_t size = w->size;
    for (int i = 0; i < MAX_ENTRIES; i++)
        if (w->entries[i].unit >= 0)
            drop_entry(w, &w->entries[i]);
    __atomic_store_n(&wins[dev], NULL, __ATOMIC_RELEASE);
    /* With no window left, launches stop noting what they name for one. */
    int d = -1;
    __atomic_store_n(&any_on, next_window(&d) != NULL, __ATOMIC_RELAXED);
    teardown(w);
    sw_info("device %d: streaming window released (%llu bytes)", dev, (unsigned long long)size);
    return size;
}

bool sw_window_busy(void)
{
    return __atomic_load_n(&any_unit, __ATOMIC_RELAXED);
}

bool sw_window_holds(uint64_t addr)
{
    win_t *w;
    for (int d = -1; (w = next_window(&d));)
        if (addr - w->base < w->size)
            return true;
    return false;
}

/* Work on s during a capture the window serves on another stream: the
 * capture's copies belong to the graph, not to s. Lock held. */
static bool foreign(win_t *w, CUstream s)
{
    return w->origin && s != w->origin;
}

/* Work on a stream other than the capture's origin (one the capture
 * forked into, say) writes home in [lo, +len): the capture's copies of it
 * are stale for what the origin reads after joining it, so they are
 * dropped, and the next use copies again. No order is needed here: each
 * copy went home right after its readers on the origin, before any fork
 * after them, and the next fill follows the origin (after_app). Lock held. */
static void drop_captured(win_t *w, uint64_t lo, uint64_t len)
{
    for (int i = 0; i < MAX_ENTRIES; i++) {
        entry_t *e = &w->entries[i];
        if (e->unit >= 0 && !e->pins &&
            overlaps(lo, len, w->units[e->unit].start, w->units[e->unit].len))
            drop_entry(w, e);
    }
}

/* Home's fingerprint of every unit is forgotten: what wrote home is not
 * known (a replay, a copy of unknown ranges), or what host state says was
 * taken belongs to a graph that may never run. Lock held. */
static void forget_fingerprints(win_t *w)
{
    for (int i = 0; i < w->nunits; i++)
        w->units[i].fp_known = false;
}

/* Every copy is dropped, s after its fill and its readers, and every
 * fingerprint of home forgotten: s may write any home. Lock held. */
static void flush_all(win_t *w, CUstream s)
{
    drop_for_write(w, 0, UINT64_MAX, s);
    forget_fingerprints(w);
}

/* Home of [lo, +len) is on one device, but work of any device may write
 * it (a peer copy), so every window is asked: s waits for another
 * device's events as well as its own (cuStreamWaitEvent crosses devices). */
void sw_window_touch(uint64_t lo, uint64_t len, CUstream s)
{
    if (!sw_window_busy() || !len)
        return;
    win_t *w;
    for (int d = -1; (w = next_window(&d));) {
        pthread_mutex_lock(&w->lock);
        /* Home may be written: copies of it are stale once it is, and
         * its fingerprint is no longer known. */
        if (!foreign(w, s))
            drop_for_write(w, lo, len, s);
        else
            drop_captured(w, lo, len);
        for (int i = 0; i < w->nunits; i++)
            if (w->units[i].live && overlaps(lo, len, w->units[i].start, w->units[i].len))
                w->units[i].fp_known = false;
        /* In a capture, cst rejoins the origin before every fill, so the
         * next fill follows this write: at once when s is the origin, and
         * when s is a stream the capture forked into, once the origin has
         * joined it back (as a program does before it reads what s wrote). */
        pthread_mutex_unlock(&w->lock);
    }
}

void sw_window_touch_memops(unsigned n, const CUstreamBatchMemOpParams *ops, CUstream s)
{
    for (unsigned i = 0; ops && i < n; i++) {
        switch (ops[i].operation) {
        case CU_STREAM_MEM_OP_WRITE_VALUE_32:
            sw_window_touch(ops[i].writeValue.address, 4, s);
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_64:
            sw_window_touch(ops[i].writeValue.address, 8, s);
            break;
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
            sw_window_touch(ops[i].waitValue.address, 4, s);
            break;
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
            sw_window_touch(ops[i].waitValue.address, 8, s);
            break;
        default: /* barriers and flushes name no memory */
            break;
        }
    }
}

void sw_window_flush(CUstream s)
{
    if (!sw_window_busy())
        return;
    win_t *w;
    for (int d = -1; (w = next_window(&d));) {
        pthread_mutex_lock(&w->lock);
        if (!foreign(w, s))
            flush_all(w, s);
        pthread_mutex_unlock(&w->lock);
    }
}

void sw_window_forget(uint64_t lo, uint64_t len)
{
    win_t *w;
    for (int d = -1; (w = next_window(&d));) {
        pthread_mutex_lock(&w->lock);
        for (int i = 0; i < w->nunits; i++) {
            unit_t *u = &w->units[i];
            if (!u->live || !overlaps(lo, len, u->start, u->len))
                continue;
            if (u->entry >= 0)
                drop_entry(w, &w->entries[u->entry]);
            u->live = false;
        }
        for (int i = 0; i < w->nunits; i++)
            if (w->units[i].live && w->units[i].next >= 0 && !w->units[w->units[i].next].live)
                w->units[i].next = -1;
        if (w->last >= 0 && !w->units[w->last].live)
            w->last = -1;
        pthread_mutex_unlock(&w->lock);
    }
}

/* ---- captures ----
 * A capture on one stream, the origin, streams like eager work: the same
 * copies, fences and rewrites go into the capture, on cst, which joins it
 * through events recorded on the origin. Every replay then streams, with
 * no host involvement. The capture starts with an empty window (every
 * copy went home first) and ends with every copy it made on its way home
 * and cst joined back to the origin, so each replay leaves home right and
 * the window free. A graph is built to stay right when the program later
 * changes a kernel node to write a home in place (graphnodes.c): each of
 * its copies serves one launch, each fill follows everything before it
 * on the origin and takes home's fingerprint anew. Work on other streams
 * during the capture, and a second capture at once, read in place.
 * Afterwards eager work and replays take
 * turns: eager copies wait for the application's streams, the replay's
 * among them (its stream is noted), and each replay waits for eager copies
 * and for the replay before it that used the window.
 */
/* The chains of copies home start again: an event recorded inside a
 * capture may not be waited for outside it, nor one from outside inside.
 * Lock held. */
static void unchain(win_t *w)
{
    for (int i = 0; i < w->nunits; i++)
        w->units[i].homed_on = NULL;
}

void sw_window_capture_begins(CUstream s)
{
    if (!sw_window_on() || !sw_gate_rd())
        return;
    win_t *w;
    for (int d = -1; (w = next_window(&d));) {
        pthread_mutex_lock(&w->lock);
        if (!w->origin)
            flush_all(w, s);
        pthread_mutex_unlock(&w->lock);
    }
    sw_gate_unrd();
}

/* The capture is served by the window of the current context's device,
 * the one its launches run on. */
void sw_window_captured(CUstream s, CUresult r)
{
    win_t *w = r == CUDA_SUCCESS ? win(sw_window_here()) : NULL;
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    if (!w->origin && w->cst && __atomic_load_n(&w->live, __ATOMIC_RELAXED) == 0) {
        unchain(w);
        w->origin = s;
        w->cst_in = false;
        w->broken = false;
        w->side = w->cst;
        w->head = 0;
    }
    pthread_mutex_unlock(&w->lock);
}

bool sw_window_capture_ends(CUstream s)
{
    const sw_real_t *r = sw_real();
    bool broken = false;
    win_t *w;
    for (int d = -1; (w = next_window(&d));) {
        pthread_mutex_lock(&w->lock);
        if (w->origin && w->origin == s) {
            broken |= w->broken;
            bool used = false;
            /* Home is current (each read sent its copy home on s); the
             * copies belong to the graph from now on. */
            for (int i = 0; i < MAX_ENTRIES; i++)
                if (w->entries[i].unit >= 0) {
                    used = true;
                    drop_entry(w, &w->entries[i]);
                }
            /* cst rejoins the origin, or the capture would end unjoined. */
            if (w->cst_in && !w->broken &&
                (r->cuEventRecord(w->done, w->cst) != CUDA_SUCCESS ||
                 r->cuStreamWaitEvent(s, w->done, 0) != CUDA_SUCCESS))
                sw_error("cannot join spillway's capture stream back: the capture will fail");
            unchain(w);
            forget_fingerprints(w);
            w->graphs |= used;
            w->origin = NULL;
            w->side = w->st;
            w->head = 0;
        }
        pthread_mutex_unlock(&w->lock);
    }
    return broken;
}

/* Two replays of graphs holding copies of one window must not overlap:
 * they use the same space. A graph holds copies of the window of the
 * device it was captured on, whose stream it is replayed on, in the
 * current context (sw_window_here): that window orders its replays, every
 * window sends its copies home first. */
CUresult sw_window_replay(CUresult (*launch)(CUgraphExec, CUstream), CUgraphExec g, CUstream s)
{
    if (!launch)
        return CUDA_ERROR_NOT_FOUND;
    bool gated = sw_gate_rd();
    const sw_real_t *r = sw_real();
    CUresult e = CUDA_SUCCESS;
    win_t *w, *here = gated ? win(sw_window_here()) : NULL;
    bool ordered = false; /* here holds graphs' copies: this replay is ordered */
    if (gated && sw_window_on())
        sw_streams_note(s);
    for (int d = -1; gated && e == CUDA_SUCCESS && (w = next_window(&d));) {
        pthread_mutex_lock(&w->lock);
        /* A window serving a capture on another stream holds only that
         * capture's copies, which nothing runs yet: waiting for their
         * events would pull the replay into the capture. */
        if (!foreign(w, s))
            flush_all(w, s);
        else
            forget_fingerprints(w);
        if (w == here && (ordered = w->graphs))
            e = order_after(w, s, w->replayed); /* unordered, it is not launched */
        else if (w == here)
            __atomic_add_fetch(&w->idle_replays, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&w->lock);
    }
    if (e != CUDA_SUCCESS) {
        if (gated)
            sw_gate_unrd();
        return e;
    }
    e = launch(g, s);
    if (ordered && e == CUDA_SUCCESS &&
        r->cuEventRecord(here->replayed, s) != CUDA_SUCCESS)
        r->cuStreamSynchronize(s); /* the next replay could not wait for this one */
    if (gated)
        sw_gate_unrd();
    return e;
}

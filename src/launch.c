/*
 * The launch path: which tracked chunks a kernel's arguments point into,
 * when they were last used, and whether to bring a host chunk back first.
 *
 *   nothing tracked ──► call the driver (no lock, no scan)
 *   otherwise       ──► gate shared, layout (cached per function), scan
 *                       every 8-byte word and look up every TMA
 *                       descriptor (tensormap.c), stamp the chunks hit (a
 *                       pointer's whole segment at once) with the launch
 *                       sequence number, launch, release the gate.
 *
 * A launch that touches a host chunk runs correctly as it is (zero-copy);
 * when a GPU budget is set and has room, the chunk is promoted first.
 * Under capture nothing is promoted (it would synchronize).
 */
#include "residency.h"

#include <stdlib.h>
#include <string.h>

static __thread bool hash_oom;
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (hash_oom = true)
#include <uthash.h>

#define MAX_PARAMS 256
#define MAX_PROMOTE 64

typedef struct fn {
    void *handle;
    void *owner;       /* the module or library it came from; NULL unknown */
    int kind;          /* SW_HANDLE_*, 0 when unknown */
    bool have_layout;  /* layout below is valid */
    bool no_layout;    /* the driver would not say: never scan this one */
    uint8_t tries;     /* queries that failed or disagreed */
    sw_layout_t layout;
    uint32_t storage[2 * MAX_PARAMS];
    struct fn *retired; /* on the retired list */
    UT_hash_handle hh;
} fn_t;

static pthread_mutex_t fn_lock = PTHREAD_MUTEX_INITIALIZER;
static fn_t *fns;
/* Entries no handle maps to any more, whose layouts a launch that holds
 * the gate shared may still be reading: freed under the gate held
 * exclusively (sw_unload). */
static fn_t *retired;
/* Bumped whenever an entry is retired: each thread's cache of recent
 * layouts (layout_of) is emptied when it sees a new value. */
static unsigned layouts_gen;

/* This thread's runtime wrapper, if one is calling the real runtime
 * (residency.h, sw_rt_state_t). */
static __thread sw_rt_state_t rt_state;

sw_rt_state_t *sw_rt_state(void)
{
    return &rt_state;
}

/* ---- handle provenance ---- */

static fn_t *fn_get(void *h)
{
    fn_t *f;
    HASH_FIND_PTR(fns, &h, f);
    if (f)
        return f;
    f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->handle = h;
    hash_oom = false;
    HASH_ADD_PTR(fns, handle, f);
    if (hash_oom) {
        free(f);
        return NULL;
    }
    return f;
}

/* Unhooks f from the table; its memory lives on until retired_free.
 * fn_lock held. */
static void retire(fn_t *f)
{
    HASH_DEL(fns, f);
    f->retired = retired;
    retired = f;
    __atomic_add_fetch(&layouts_gen, 1, __ATOMIC_SEQ_CST);
}

CUresult sw_note_handle(CUresult r, void **h, int kind, void *owner)
{
    if (r != CUDA_SUCCESS || !h || !*h)
        return r;
    pthread_mutex_lock(&fn_lock);
    fn_t *f;
    HASH_FIND_PTR(fns, h, f);
    /* A handle seen before under another owner (or none: a launch saw it
     * first) may have been recycled by an unload spillway did not see:
     * its layout need not be this one's. Retiring costs a new query. */
    if (f && f->owner != owner)
        retire(f);
    f = fn_get(*h);
    if (f) {
        f->kind = kind;
        f->owner = owner;
    }
    pthread_mutex_unlock(&fn_lock);
    return r;
}

CUresult sw_note_kernel_function(CUresult r, CUfunction *pf, CUkernel k)
{
    void *owner = NULL;
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&fn_lock);
        fn_t *kf;
        HASH_FIND_PTR(fns, &k, kf);
        owner = kf ? kf->owner : NULL;
        pthread_mutex_unlock(&fn_lock);
    }
    return sw_note_handle(r, (void **)pf, SW_HANDLE_FUNC, owner);
}

CUresult sw_unload(CUresult (*unload)(void *), void *owner)
{
    if (!unload)
        return CUDA_ERROR_NOT_FOUND;
    /* Exclusive: no launch is scanning with a layout while entries go,
     * and none can launch a recycled handle before they have gone. */
    sw_gate_wr();
    CUresult r = unload(owner);
    pthread_mutex_lock(&fn_lock);
    if (r == CUDA_SUCCESS) {
        fn_t *f, *tmp;
        HASH_ITER(hh, fns, f, tmp)
            if (f->owner == owner)
                retire(f);
    }
    fn_t *dead = retired;
    retired = NULL;
    pthread_mutex_unlock(&fn_lock);
    sw_gate_unwr();
    while (dead) {
        fn_t *next = dead->retired;
        free(dead);
        dead = next;
    }
    return r;
}

/* ---- parameter layout ---- */

typedef CUresult (*param_info_fn)(void *, size_t, size_t *, size_t *);

static bool query_layout(fn_t *f, param_info_fn info)
{
    uint32_t n = 0, total = 0;
    f->layout.offset = f->storage;
    f->layout.size = f->storage + MAX_PARAMS;
    for (; n < MAX_PARAMS; n++) {
        size_t off, size;
        CUresult r = info(f->handle, n, &off, &size);
        if (r == CUDA_ERROR_INVALID_VALUE)
            break; /* past the last parameter: how 13.0 gives the count */
        if (r != CUDA_SUCCESS)
            return false;
        f->layout.offset[n] = (uint32_t)off;
        f->layout.size[n] = (uint32_t)size;
        if (off + size > total)
            total = (uint32_t)(off + size);
    }
    f->layout.nparams = n;
    f->layout.total = total;
    return true;
}

/* query_layout, asked twice: the end of the list is told by an error
 * (CUDA_ERROR_INVALID_VALUE), so a query that failed part way would
 * look like a shorter list, and a launch scanned with it would miss its
 * last pointers. A layout is kept only when both answers agree. */
static bool query_twice(fn_t *f, param_info_fn info)
{
    fn_t again;
    again.handle = f->handle;
    if (!query_layout(f, info) || !query_layout(&again, info))
        return false;
    const sw_layout_t *a = &f->layout, *b = &again.layout;
    return a->nparams == b->nparams && a->total == b->total &&
           memcmp(a->offset, b->offset, a->nparams * sizeof *a->offset) == 0 &&
           memcmp(a->size, b->size, a->nparams * sizeof *a->size) == 0;
}

/* Queries that may fail before a handle is given up as one the driver
 * will not describe: a failure may be passing (out of memory). */
#define LAYOUT_TRIES 3

/* The layout of a function or kernel handle, cached. A CUkernel must be
 * asked with cuKernelGetParamInfo (cuFuncGetParamInfo refuses it); a
 * handle of unknown origin is tried both ways. NULL: unknown, and *final
 * says whether it will stay so (else the next launch asks again). */
static const sw_layout_t *layout_lookup(CUfunction h, bool *final)
{
    pthread_mutex_lock(&fn_lock);
    fn_t *f = fn_get(h);
    const sw_layout_t *l = NULL;
    if (f && !f->have_layout && !f->no_layout) {
        const sw_real_t *r = sw_real();
        param_info_fn by_func = (param_info_fn)r->cuFuncGetParamInfo;
        param_info_fn by_kernel = (param_info_fn)r->cuKernelGetParamInfo;
        bool ok = false;
        if (f->kind != SW_HANDLE_KERNEL && by_func)
            ok = query_twice(f, by_func);
        if (!ok && f->kind != SW_HANDLE_FUNC && by_kernel)
            ok = query_twice(f, by_kernel);
        f->have_layout = ok;
        f->no_layout = !ok && ++f->tries >= LAYOUT_TRIES;
        if (f->no_layout)
            sw_debug("no parameter layout for function %p: its launches are not scanned", h);
    }
    if (f && f->have_layout)
        l = &f->layout;
    *final = !f || f->have_layout || f->no_layout;
    pthread_mutex_unlock(&fn_lock);
    return l;
}

/* Each thread keeps the layouts it used last, direct-mapped by handle, so
 * a launch takes no lock once its function is known. A launch reads them
 * holding the gate shared; entries are freed only under the gate held
 * exclusively, after layouts_gen changed, so a cache is emptied before it
 * could lead to freed memory. */
#define TLS_WAYS 64
static __thread struct {
    void *h;
    const sw_layout_t *l;
} recent[TLS_WAYS];
static __thread unsigned recent_gen;

static const sw_layout_t *layout_of(CUfunction h)
{
    unsigned gen = __atomic_load_n(&layouts_gen, __ATOMIC_ACQUIRE);
    if (gen != recent_gen) {
        memset(recent, 0, sizeof recent);
        recent_gen = gen;
    }
    unsigned way = (unsigned)(((uintptr_t)h >> 4) ^ ((uintptr_t)h >> 12)) % TLS_WAYS;
    if (recent[way].h == h)
        return recent[way].l;
    bool final;
    const sw_layout_t *l = layout_lookup(h, &final);
    if (final) {
        recent[way].h = h;
        recent[way].l = l;
    }
    return l;
}

/* ---- marking ---- */

/* An allocation a launch names, [start, +len), that the window may serve:
 * whole, since CUDA lets a kernel reach every byte of the allocation any
 * of its pointers points into. */
typedef struct {
    uint64_t start, len, copy;
    uint64_t parts;                /* the 64ths of it the launch's tensors span (sw_parts) */
    bool served;                   /* sw_window_use said yes: [start, +len) becomes copy */
    bool applied;                  /* and the arguments were pointed at it */
} stream_use_t;

/* At most this many descriptors are learned from, or retargeted, per
 * launch: a GEMM passes two or three. */
#define MAX_DESCRIPTORS 16

typedef struct {
    uint64_t seq;
    int nuse;
    stream_use_t use[SW_WINDOW_MAX_USES];
    bool overflow;                 /* named more allocations than use[] holds */
    size_t ndesc;                  /* recognised TMA descriptors: where they lie */
    sw_tmap_at_t desc[MAX_DESCRIPTORS];
    bool host;                     /* touches a host chunk */
    bool window;                   /* touches a chunk the window brought in */
    bool recording;                /* captured: the words hit go to the recording */
    int nhost;
    uint64_t host_va[MAX_PROMOTE]; /* addresses: chunks may go while the gate is down */
    uint64_t host_bytes;           /* what the kernel would read in place */
} marks_t;

/* Guards every allocation's learned segment starts (sw_alloc_t's bounds,
 * nbounds, spacing): launches on several threads note them at once, and
 * a trade's policy reads them (next_trade), where a note's realloc
 * would pull the array from under it. */
static pthread_mutex_t segment_lock = PTHREAD_MUTEX_INITIALIZER;

static bool stream_capturing(CUstream s);

/* Notes c for this launch's promotion and statistics, once per launch
 * (a chunk stamped by this launch already was noted then). */
static void note(marks_t *m, const sw_chunk_t *c)
{
    if (c->slot >= 0) {
        m->window = true;
    } else if (c->where == SW_ON_HOST) {
        m->host = true;
        m->host_bytes += c->size;
        if (m->nhost < MAX_PROMOTE)
            m->host_va[m->nhost++] = c->va;
    }
}

/* Stamps c, the one chunk of its allocation, for this launch. Launches on
 * other threads may stamp the same chunk at once (the gate is only
 * shared): each field is a relaxed atomic (sw.h, sw_sched_load), and a
 * lost or reordered update skews a prediction (sw_learn_touch ignores a
 * seq older than the last), never a result, since correctness does not
 * depend on the schedule. */
static void touch(marks_t *m, sw_chunk_t *c)
{
    if (__atomic_load_n(&c->last_use, __ATOMIC_RELAXED) == m->seq)
        return;
    sw_learn_touch(c, m->seq);
    note(m, c);
}

/* Whether chunks [first, end) of a are all on the device and in no slot,
 * as a walk found them at the last move: then a launch has nothing to
 * note in them, and need not look at each. segment_lock held. */
static bool clean(const sw_alloc_t *a, uint32_t first, uint32_t end)
{
    return a->clean_moved == a->moved && first >= a->clean_first && end <= a->clean_end;
}

/* A launch names allocation a, the tensor [word, end) of it: the
 * streaming window may serve it, if it lies wholly on the host and the
 * launches' tensors span it (window.c). The decision waits until the scan
 * is over (serve), when every stamp is in. One that does not fit in use[]
 * is read in place, and every copy goes home first (sw_mark). */
static void consider(marks_t *m, const sw_alloc_t *a, uint64_t word, uint64_t end)
{
    uint64_t parts = sw_parts(a->va, a->size, word, end);
    for (int i = 0; i < m->nuse; i++)
        if (m->use[i].start == a->va) {
            m->use[i].parts |= parts;
            return;
        }
    if (m->nuse == SW_WINDOW_MAX_USES) {
        m->overflow = true;
        return;
    }
    m->use[m->nuse++] = (stream_use_t){.start = a->va, .len = a->size, .parts = parts};
}

/* The end of the tensor at word in a, which becomes a segment start: the
 * next one. A launch into an allocation of one chunk asks only while the
 * window is on (a lock per launch otherwise not taken). */
static uint64_t tensor_end(sw_alloc_t *a, uint64_t word)
{
    pthread_mutex_lock(&segment_lock);
    sw_segment_note(a, word);
    uint64_t end = sw_segment_end(a, word);
    pthread_mutex_unlock(&segment_lock);
    return end;
}

/* The index after the chunk holding the last byte before end. */
static uint32_t chunk_after(uint64_t end)
{
    return sw_table_lookup(sw_tracked(), end - 1)->index + 1;
}

/* A word inside a tracked allocation. The window serves the whole
 * allocation if it serves the word at all (consider). For the schedule,
 * the kernel is predicted to read from the word to the next learned
 * segment start (a weight among many in one buffer), so every chunk of
 * that range is touched: a guess that steers only what is moved when,
 * never what a kernel can reach.
 *
 * The cost is not that range's length: the stamps go to the learner as
 * one range (sw_learn_touch_range, O(1) when it is the range stamped last
 * time), and the chunks are looked at one by one for host and window
 * chunks only when some chunk of the allocation moved since a walk found
 * the range clean. Moves happen under the gate held exclusively and this
 * runs under it shared, so no chunk changes place between the check and
 * the launch. Stamps and notes are exactly what a chunk-by-chunk walk
 * gives: a chunk the launch stamped already is not noted again. */
static void hit(uint64_t word, void *arg)
{
    marks_t *m = arg;
    sw_chunk_t *c = sw_table_lookup(sw_tracked(), word);
    if (!c)
        return;
    if (m->recording)
        sw_record_word(word);
    sw_alloc_t *a = c->alloc;
    if (a->nchunks == 1) {
        touch(m, c);
        if (word < a->va + a->size && sw_window_on())
            consider(m, a, word, tensor_end(a, word));
        return;
    }
    pthread_mutex_lock(&segment_lock);
    uint32_t first = c->index, end = first + 1;
    uint64_t tend = 0;
    if (word < a->va + a->size) {
        sw_segment_note(a, word);
        tend = sw_segment_end(a, word);
        end = chunk_after(tend);
    }
    if (!clean(a, first, end)) {
        bool all_device = true;
        for (uint32_t i = first; i < end; i++) {
            const sw_chunk_t *ci = &a->chunks[i];
            all_device &= ci->slot < 0 && ci->where == SW_ON_DEVICE;
            if (sw_learn_state(ci).last_use != m->seq)
                note(m, ci);
        }
        /* Ranges found clean since the last move join into one, when they
         * touch, so that pointers to neighbouring segments do not evict
         * each other's record. */
        if (all_device) {
            bool join = a->clean_moved == a->moved && first <= a->clean_end &&
                        a->clean_first <= end;
            a->clean_first = join && a->clean_first < first ? a->clean_first : first;
            a->clean_end = join && a->clean_end > end ? a->clean_end : end;
            a->clean_moved = a->moved;
        }
    }
    sw_learn_touch_range(a, first, end, m->seq);
    pthread_mutex_unlock(&segment_lock);
    if (word < a->va + a->size && sw_window_on())
        consider(m, a, word, tend);
}

/* Whether the launch of m reads word's allocation at home, not through a
 * window copy: what its graph's replays read there (sw_graph_learn). A
 * range a capture copied is copied at every replay wherever it lies, so
 * shown to the learner it would only draw residency from the ranges
 * the graph reads in place: 20 x 4 MiB layers at batch 256, whose GEMMs
 * re-read each weight they read in place, took 2.01 ms a replay where
 * the capture's own placement took 1.49. */
static bool read_at_home(uint64_t word, void *arg)
{
    const marks_t *m = arg;
    for (int i = 0; i < m->nuse; i++)
        if (m->use[i].served && word - m->use[i].start < m->use[i].len)
            return false;
    return true;
}

/* Pointer tables (grouped GEMM, batched cuBLAS) are small; weights and
 * activations are not, and are not worth a scan. */
#define POINTER_TABLE_MAX (64u << 10)

static void mark_pointed(uint64_t word, void *arg)
{
    (void)arg;
    sw_chunk_t *c = sw_table_lookup(sw_tracked(), word);
    if (!c)
        return;
    sw_alloc_t *a = c->alloc;
    /* A pointer in a table is a tensor's start as much as an argument is:
     * the segment before it ends there, for the schedule and for what a
     * launch's tensors span of its allocation (hit). Every chunk of the
     * tensor is reached, not only the one it starts in: a table-only layer
     * of two chunks is adopted whole, or half of it stays read in place.
     * Copies on other threads may mark them at once. */
    uint32_t end = word < a->va + a->size ? chunk_after(tensor_end(a, word)) : c->index + 1;
    for (uint32_t i = c->index; i < end; i++)
        __atomic_store_n(&a->chunks[i].pointed, true, __ATOMIC_RELAXED);
}

void sw_note_pointers(const void *src, size_t n)
{
    if (!src || n > POINTER_TABLE_MAX || sw_opts()->policy != SW_POLICY_LEARNED || !sw_gate_rd())
        return;
    sw_scan_words(src, n, mark_pointed, NULL);
    sw_gate_unrd();
}

/* keep() for promotions: what the launch at seq uses, the window's, and
 * every chunk of another device than dev, whose room is not dev's. */
typedef struct {
    uint64_t seq;
    int dev;
} keep_t;

static bool touched_now(const sw_chunk_t *c, void *arg)
{
    const keep_t *k = arg;
    return sw_learn_state(c).last_use == k->seq || c->slot >= 0 || c->alloc->dev != k->dev;
}

static const sw_link_t link = SW_LINK_DEFAULT;

/* A chunk read in place is not asked again whether it should displace a
 * colder one for this many launches: asking walks every device chunk, and
 * heat changes by halves over SW_HEAT_HALF_LIFE launches, not per launch. */
#define DISPLACE_EVERY 8

/* Whether host chunk c, touched at k->seq, would take a colder device
 * chunk's place; asked of each chunk at most once every DISPLACE_EVERY
 * launches (the hint may race with another launch's: a question asked a
 * little early or late). */
static bool would_displace(sw_chunk_t *c, keep_t *k)
{
    if (k->seq < __atomic_load_n(&c->displace_next, __ATOMIC_RELAXED))
        return false;
    if (sw_policy_displace(sw_tracked(), c, k->seq, touched_now, k))
        return true;
    __atomic_store_n(&c->displace_next, k->seq + DISPLACE_EVERY, __ATOMIC_RELAXED);
    return false;
}

/* Whether any host chunk this launch touches is to move, as the policy
 * says: the verdicts, taken under the shared hold. A launch that reads
 * its chunks in place, the usual case once the budget is full, so never
 * takes the gate exclusively. */
static bool worth_moving(marks_t *m, uint64_t period)
{
    const sw_options_t *o = sw_opts();
    for (int i = 0; i < m->nhost; i++) {
        sw_chunk_t *c = sw_table_lookup(sw_tracked(), m->host_va[i]);
        if (!c || c->where != SW_ON_HOST)
            continue;
        uint64_t room = sw_device_room(c->alloc->dev);
        keep_t k = {m->seq, c->alloc->dev};
        if (o->policy == SW_POLICY_LRU) {
            /* The baseline brings in whatever it touches, making room. */
            if (sw_policy_on_touch(c, UINT64_MAX, false) == SW_VERDICT_PROMOTE)
                return true;
            continue;
        }
        if (sw_policy_on_touch_learned(c, room, false, period, &link) == SW_VERDICT_PROMOTE)
            return true;
        if (room < c->size && would_displace(c, &k))
            return true;
    }
    return false;
}

/* The learned policy's move for host chunk c, touched at k->seq: promoted
 * if the budget has room and the policy says so, or in place of a colder
 * chunk if c is hot enough to displace one. The device is synchronized
 * once per hold (*synced). Gate held exclusively. False when that
 * synchronization failed: nothing more may move in this hold. */
static bool promote_learned(sw_chunk_t *c, uint64_t period, keep_t *k, bool *synced,
                            bool *moved)
{
    uint64_t room = sw_device_room(c->alloc->dev);
    sw_verdict_t verdict = sw_policy_on_touch_learned(c, room, sw_capturing(), period, &link);
    /* No room: a popular chunk may take a colder one's place. */
    sw_chunk_t *cold = verdict != SW_VERDICT_PROMOTE && room < c->size
                           ? sw_policy_displace(sw_tracked(), c, k->seq, touched_now, k)
                           : NULL;
    *moved = false;
    if (verdict != SW_VERDICT_PROMOTE && !cold)
        return true;
    if (!*synced && sw_safe_sync() != CUDA_SUCCESS)
        return false;
    *synced = true;
    if (cold && sw_move(cold, SW_ON_HOST) != CUDA_SUCCESS)
        return true;
    *moved = sw_move(c, SW_ON_DEVICE) == CUDA_SUCCESS;
    return true;
}

/* Moves the host chunks this launch touches to the device, as the policy
 * says. Called with the gate shared; returns with it shared. */
static void bring_in(marks_t *m)
{
    const sw_options_t *o = sw_opts();
    if (!sw_remap_on() &&
        !worth_moving(m, o->policy == SW_POLICY_LEARNED ? sw_period(m->seq) : 0))
        return;
    sw_gate_unrd();
    sw_gate_wr();
    if (sw_capturing()) {
        /* A capture began since the check on the launch path: it must see
         * no synchronization (see "capture" below). */
    } else if (sw_remap_on()) {
        sw_remap_commit(m->host_va, m->nhost, m->seq);
    } else {
        bool synced = false, moved;
        uint64_t period = o->policy == SW_POLICY_LEARNED ? sw_period(m->seq) : 0;
        for (int i = 0; i < m->nhost; i++) {
            sw_chunk_t *c = sw_table_lookup(sw_tracked(), m->host_va[i]);
            if (!c || c->where != SW_ON_HOST)
                continue;
            keep_t k = {m->seq, c->alloc->dev};
            if (o->policy == SW_POLICY_LEARNED) {
                if (!promote_learned(c, period, &k, &synced, &moved))
                    break;
                if (moved)
                    m->host_bytes -= c->size;
                continue;
            }
            /* The baseline (LRU): make room by evicting the least recently
             * used chunks this launch does not touch, then bring it in. */
            uint64_t room = sw_device_room(c->alloc->dev);
            if (room < c->size) {
                sw_chunk_t *v[MAX_PROMOTE];
                uint64_t freed;
                size_t n = sw_policy_victims(sw_tracked(), c->size - room, touched_now, &k,
                                             v, MAX_PROMOTE, &freed);
                if (n && !synced && sw_safe_sync() != CUDA_SUCCESS)
                    break;
                synced |= n > 0;
                for (size_t j = 0; j < n; j++)
                    sw_move(v[j], SW_ON_HOST);
                room = sw_device_room(c->alloc->dev);
            }
            if (sw_policy_on_touch(c, room, false) != SW_VERDICT_PROMOTE)
                continue;
            if (!synced && sw_safe_sync() != CUDA_SUCCESS)
                break;
            synced = true;
            if (sw_move(c, SW_ON_DEVICE) == CUDA_SUCCESS)
                m->host_bytes -= c->size;
        }
    }
    /* A device handle a demotion pooled serves a promotion of this same
     * hold; one left over is memory no count shows, so none outlives the
     * hold (pool.c). Host handles stay for the next demotion. */
    sw_pool_drain(SW_ON_DEVICE);
    sw_gate_unwr();
    sw_gate_rd_always();
}

/* ---- promotions that wait for the next launch ----
 * A range the window serves is never read in place, so bring_in() never
 * asks whether it should be resident. Two kinds should: in a capture,
 * where every use of a served range is a copy of its own and nothing may
 * synchronize (a graph's replays are not launches spillway sees one by
 * one), a range used often enough to displace a colder chunk; and out of
 * one, a range whose copies its readers write, which then goes home after
 * every use (a GEMM library's workspace, written by every kernel). Their
 * chunks are noted and moved at the next launch or graph launch outside
 * any capture (the launch that noted them reads the copy); a graph's
 * copies of them then copy device memory. */
#define DEFERRED 16

static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t deferred[DEFERRED];
static int ndeferred; /* read without the lock to skip the common case */

/* Notes host chunk c, touched at launch seq, for promotion if the budget
 * has room for it or it is hot enough to displace a colder chunk (asked
 * no more often than of a chunk read in place: this runs at every served
 * use of a written range). */
static void want_promoted(sw_chunk_t *c, uint64_t seq)
{
    keep_t k = {seq, c->alloc->dev};
    if (sw_opts()->policy != SW_POLICY_LEARNED || c->where != SW_ON_HOST ||
        (sw_device_room(c->alloc->dev) < c->size && !would_displace(c, &k)))
        return;
    pthread_mutex_lock(&deferred_lock);
    bool known = false;
    for (int j = 0; j < ndeferred && !known; j++)
        known = deferred[j] == c->va;
    if (!known && ndeferred < DEFERRED) {
        deferred[ndeferred] = c->va;
        __atomic_store_n(&ndeferred, ndeferred + 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&deferred_lock);
}

static void defer_hot(const marks_t *m)
{
    for (int i = 0; i < m->nhost; i++) {
        sw_chunk_t *c = sw_table_lookup(sw_tracked(), m->host_va[i]);
        if (c)
            want_promoted(c, m->seq);
    }
}

/* A served range its readers write goes home after every use: the host
 * chunks of [lo, +len) are noted for promotion, asked as for any chunk
 * read in place, at the next launch (this one reads the copy). */
static void defer_written(uint64_t lo, uint64_t len, uint64_t seq)
{
    for (uint64_t p = lo; p < lo + len;) {
        sw_chunk_t *c = sw_table_lookup(sw_tracked(), p);
        if (!c)
            return;
        want_promoted(c, seq);
        p = c->va + c->size;
    }
}

void sw_promote_deferred(void)
{
    /* Nothing may synchronize while a capture runs: not asked then. */
    if (!__atomic_load_n(&ndeferred, __ATOMIC_RELAXED) || !sw_tracking_any() || sw_capturing())
        return;
    sw_gate_wr();
    pthread_mutex_lock(&deferred_lock);
    /* Asked again once no capture runs: none can begin under the gate. */
    int n = sw_capturing() ? 0 : ndeferred;
    uint64_t va[DEFERRED];
    memcpy(va, deferred, (size_t)n * sizeof va[0]);
    if (n)
        __atomic_store_n(&ndeferred, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&deferred_lock);
    bool synced = false, moved;
    uint64_t now = sw_launch_now();
    for (int i = 0; i < n; i++) {
        sw_chunk_t *c = sw_table_lookup(sw_tracked(), va[i]);
        if (!c || c->where != SW_ON_HOST || c->va != va[i])
            continue;
        keep_t k = {now, c->alloc->dev};
        if (!promote_learned(c, sw_period(now), &k, &synced, &moved))
            break;
    }
    sw_pool_drain(SW_ON_DEVICE);
    sw_gate_unwr();
}

/* Trades of resident places, made at most every TRADE_EVERY launches,
 * all at once under one synchronization, as the core's verdicts say:
 *   filling, with a budget: room a move left free takes the fullest host
 *     chunk on the loop (sw_policy_into_room), nothing going home;
 *   adoption, with the streaming window (sw_policy_adopt): a host chunk
 *     only a pointer table in device memory reaches (sw_policy_unseen) is
 *     read in place, where the window cannot serve it; it takes the
 *     resident place of a chunk the window can stream, the one used
 *     furthest ahead;
 *   packing, with a budget: a full host chunk takes the resident places
 *     of emptier ones, the tails of allocations the granularity rounds up
 *     (sw_policy_pack): 24 layers of 5.06 MiB under 48 MiB, each a 4 MiB
 *     chunk and a 2 MiB one half empty, went from 1.20x to 1.14x their
 *     link bound on simgpu (2026-11-28); or full host chunks together
 *     take the place of one emptier chunk bigger than each.
 * Called with the gate shared; returns with it shared. */
#define TRADE_EVERY 64
#define TRADE_RETRY 8 /* after trades, or a chunk to adopt found no victim: more may follow */

typedef struct {
    sw_pack_t moves;            /* out[0..nout) go home, then in[0..nin) come */
    bool adopted;               /* adoption's, else packing's or free room's */
} trade_t;

/* keep() for packing: a chunk the launch at *arg uses stays. */
static bool used_now(const sw_chunk_t *c, void *arg)
{
    return sw_learn_state(c).last_use == *(const uint64_t *)arg;
}

/* next_trade's questions to policy, which reads the learned segment
 * starts: segment_lock held. */
static bool ask_policy(uint64_t now, uint64_t period, const uint64_t *room, const uint64_t *window,
                       trade_t *t, bool *waiting)
{
    sw_pack_t *m = &t->moves;
    if ((m->in[0] = sw_policy_into_room(sw_tracked(), period, room))) {
        m->nin = 1;
        return true;
    }
    m->nout = sw_policy_adopt(sw_tracked(), now, window, &m->in[0], m->out);
    *waiting = m->in[0] && m->nout == 0;
    if (m->nout == 1) {
        m->nin = 1;
        t->adopted = true;
        return true;
    }
    return period && sw_policy_pack(sw_tracked(), period, window, used_now, &now, m, SW_PACK_MAX);
}

/* The next trade, asked under any hold of the gate; false: none, and
 * *waiting says whether a chunk to adopt found no victim at this launch
 * (another launch has other chunks not in use). A chunk adopted trades
 * with one of its own device, whose window streams the victim from then
 * on. Asked for a replay (sw_graph_learn), the windows count as none: a
 * graph's copies were recorded with it and nothing new is streamed, so a
 * chunk only a table reaches has no better claim than any other (adopted
 * there, tails of 1.06 MiB displaced full chunks: 24 layers of 5.06 MiB,
 * odd ones in 20 MiB segments, under 49 MiB, read 4.7 MiB a replay more). */
static bool next_trade(uint64_t now, bool replay, trade_t *t, bool *waiting)
{
    uint64_t period = sw_agreed_period(now), room[SW_MAX_DEVICES], window[SW_MAX_DEVICES];
    for (int dev = 0; dev < SW_MAX_DEVICES; dev++) {
        room[dev] = sw_device_room(dev);
        if (room[dev] == UINT64_MAX) /* no budget: nothing to fill */
            room[dev] = 0;
        window[dev] = replay ? 0 : sw_window_size(dev);
    }
    sw_pack_t *m = &t->moves;
    m->nin = m->nout = 0;
    t->adopted = false;
    *waiting = false;
    pthread_mutex_lock(&segment_lock);
    bool any = ask_policy(now, period, room, window, t, waiting);
    pthread_mutex_unlock(&segment_lock);
    return any;
}

static void trade(uint64_t now, bool replay)
{
    /* Not before the loop has come round twice: until then a chunk no
     * argument named yet may simply not have had its turn. */
    static uint64_t next;
    trade_t t;
    bool waiting;
    if (now < __atomic_load_n(&next, __ATOMIC_RELAXED) || !sw_budget_set())
        return;
    uint64_t period = sw_period(now);
    if (!period || now < 2 * period)
        return;
    bool any = next_trade(now, replay, &t, &waiting);
    __atomic_store_n(&next, now + (waiting ? TRADE_RETRY : TRADE_EVERY), __ATOMIC_RELAXED);
    if (!any)
        return;
    sw_gate_unrd();
    sw_gate_wr();
    bool synced = false, moved = true;
    while (moved && !sw_capturing() && next_trade(now, replay, &t, &waiting) &&
           (synced || sw_safe_sync() == CUDA_SUCCESS)) {
        synced = true;
        const sw_pack_t *m = &t.moves;
        for (size_t i = 0; i < m->nout && moved; i++)
            moved = sw_move(m->out[i], SW_ON_HOST) == CUDA_SUCCESS;
        for (size_t i = 0; i < m->nin && moved; i++)
            moved = sw_move(m->in[i], SW_ON_DEVICE) == CUDA_SUCCESS;
        if (moved && m->nout == 0)
            sw_debug("launch %llu: 0x%llx (%llu bytes of data) resident in free room",
                     (unsigned long long)now, (unsigned long long)m->in[0]->va,
                     (unsigned long long)sw_chunk_data(m->in[0]));
        else if (moved)
            sw_debug("launch %llu: 0x%llx (%llu bytes of data) and %zu more resident instead of "
                     "0x%llx and %zu more: %s", (unsigned long long)now,
                     (unsigned long long)m->in[0]->va, (unsigned long long)sw_chunk_data(m->in[0]),
                     m->nin - 1, (unsigned long long)m->out[0]->va, m->nout - 1,
                     t.adopted ? "reached through a pointer table" : "fuller");
    }
    /* Trades made, more may wait for chunks this launch uses: asked again
     * soon, as a chunk to adopt that found no victim. */
    if (synced || waiting)
        __atomic_store_n(&next, now + TRADE_RETRY, __ATOMIC_RELAXED);
    sw_pool_drain(SW_ON_DEVICE);
    sw_gate_unwr();
    sw_gate_rd_always();
}

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
 * patched in the copied buffer (extra form). How many were retargeted. */
static size_t retarget(marks_t *m, const sw_layout_t *l, void **params, const void *buf)
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
static void serve(marks_t *m, const sw_layout_t *l, void ***params, void ***extra, CUstream s)
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
            if (written && !sw_capturing() && sw_budget_set())
                defer_written(u->start, u->len, m->seq);
        } else {
            sw_window_touch(u->start, u->len, s);
        }
    }
    if (!served)
        return;
    room();
    if (rw && *params) {
        size_t changed =
            sw_rewrite_params(l, *params, rw->params, rw->store, PARAM_BYTES, substitute, m);
        changed += retarget(m, l, *params, NULL);
        if (changed)
            *params = rw->params;
    } else if (rw && *extra && sw_extra_buffer(*extra, &buf, &len) && len <= PARAM_BYTES) {
        size_t changed = sw_rewrite_buffer(l, buf, len, rw->store, substitute, m);
        changed += retarget(m, l, NULL, buf);
        rw->len = len;
        void *ex[5] = {CU_LAUNCH_PARAM_BUFFER_POINTER, rw->store, CU_LAUNCH_PARAM_BUFFER_SIZE,
                       &rw->len, CU_LAUNCH_PARAM_END};
        memcpy(rw->extra, ex, sizeof ex);
        if (changed)
            *extra = rw->extra;
    }
    /* A served range the arguments could not be pointed at (no room for
     * their copy, a descriptor the driver would not retarget) is read at
     * home: its copy goes home first, and the launch does not read it. */
    for (int i = 0; i < m->nuse; i++) {
        stream_use_t *u = &m->use[i];
        if (u->served && !u->applied) {
            sw_window_unuse(u->start, s);
            u->served = false;
        } else if (u->served) {
            unnote(m, u->start, u->len);
        }
    }
    spans_to_copies(m, &sp);
    sw_window_spans(sp.lo, sp.len, sp.n);
}

/* A TMA descriptor spillway saw made names its tensor's address where no
 * word of the arguments does: learned from as a pointer word is. Where
 * each lies is kept in m, for retarget() to re-make it for a window copy. */
static void learn_descriptors(const sw_layout_t *l, void **params, const void *buf, size_t len,
                              marks_t *m)
{
    m->ndesc = sw_tmap_locate(sw_tmaps(), l, params, buf, len, m->desc, MAX_DESCRIPTORS);
    for (size_t i = 0; i < m->ndesc; i++)
        hit(m->desc[i].v.addr, m);
    if (m->ndesc)
        sw_stat_add(SW_STAT_descriptors_recognised, (int64_t)m->ndesc);
}

const sw_layout_t *sw_layout(CUfunction f)
{
    return layout_of(f);
}

void sw_mark(CUfunction f, void ***pparams, void ***pextra, CUstream s)
{
    const sw_layout_t *l = layout_of(f);
    sw_promote_deferred();
    marks_t m = {.seq = sw_launch_next()};
    void **params = *pparams, **extra = *pextra;
    sw_stat_add(SW_STAT_launches, 1);
    if (!l) {
        /* Its arguments are unknown: it may write any range's home in
         * place, so every window copy goes home first, as for a copy
         * whose ranges are unknown (SW_GATED_IO_ALL). */
        sw_window_flush(s);
        return;
    }
    sw_streams_note(s);
    /* A launch into a capture recorded for its replays (sw_graph_learn). */
    m.recording = sw_recording_on() && stream_capturing(s);
    const void *buf = NULL;
    size_t len = 0;
    if (params)
        sw_scan_args(l, params, NULL, 0, hit, &m);
    else if (extra && sw_extra_buffer(extra, &buf, &len))
        sw_scan_args(l, NULL, buf, len, hit, &m);
    learn_descriptors(l, params, buf, len, &m);
    /* Allocations past use[] are read in place, and may be written there:
     * no copy of them may stay to be read stale later. */
    if (m.overflow)
        sw_window_flush(s);
    /* In a capture every use of a range the window serves is a copy of
     * its own: a range used often enough to displace a colder chunk is
     * noted before serve() takes it off the host list, to be promoted
     * once the capture is over. */
    if (m.host && sw_capturing() && sw_budget_set())
        defer_hot(&m);
    if (m.nuse) {
        /* Before serve(): a window given back must hold no copy this
         * launch is about to read. */
        if (!sw_capturing())
            sw_window_reclaim(false);
        serve(&m, l, pparams, pextra, s);
    }
    if (m.recording)
        sw_record_launch(read_at_home, &m);
    /* Trades are asked at launches that read host memory, in place or
     * through the window: where a trade can change what crosses the link. */
    if ((m.nuse || m.host) && !sw_capturing())
        trade(m.seq, false);
    if (m.window && !m.host)
        sw_stat_add(SW_STAT_prefetch_hits, 1);
    if (!m.host)
        return;
    sw_stat_add(SW_STAT_launches_touching_host, 1);
    /* Under capture nothing may synchronize; without a budget there is no
     * room to bring anything into but what OOM left. */
    if (!sw_capturing() && sw_budget_set())
        bring_in(&m);
    if (m.host_bytes)
        sw_stat_add(SW_STAT_bytes_zero_copy_estimated, (int64_t)m.host_bytes);
}

/* A launch with nothing tracked: counted, not scanned. */
static void count_unscanned(void)
{
    if (!sw_opts()->disable)
        sw_stat_add(SW_STAT_launches, 1);
}

/* True when a runtime wrapper on this thread owns this launch: it holds
 * the gate and has scanned (or, when it could not name the function,
 * leaves the scan to this, its driver-level twin). */
static bool from_runtime(CUfunction f, void ***params, void ***extra, CUstream s)
{
    sw_rt_state_t *rt = sw_rt_state();
    if (!rt->inside)
        return false;
    if (!rt->handled) {
        if (rt->gated)
            sw_mark(f, params, extra, s);
        else
            count_unscanned();
        rt->handled = true;
    }
    return true;
}

CUresult sw_launch(sw_launch_fn real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                   unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s,
                   void **params, void **extra)
{
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    if (from_runtime(f, &params, &extra, s)) {
        CUresult r = real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
        sw_window_read(s, r == CUDA_SUCCESS);
        return r;
    }
    if (!sw_gate_rd()) {
        count_unscanned();
        return real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
    }
    sw_mark(f, &params, &extra, s);
    CUresult r = real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
    sw_window_read(s, r == CUDA_SUCCESS);
    sw_gate_unrd();
    return r;
}

/* cuLaunchCooperativeKernel takes cuLaunchKernel's parameters less
 * `extra`, so it goes through sw_launch by way of an adapter that calls
 * this thread's real function. */
static __thread sw_coop_fn coop_real;

static CUresult call_cooperative(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                 unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                 CUstream s, void **params, void **extra)
{
    (void)extra; /* NULL: sw_launch_cooperative passes none */
    return coop_real(f, gx, gy, gz, bx, by, bz, shmem, s, params);
}

CUresult sw_launch_cooperative(sw_coop_fn real, CUfunction f, unsigned gx, unsigned gy,
                               unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                               CUstream s, void **params)
{
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    coop_real = real;
    return sw_launch(call_cooperative, f, gx, gy, gz, bx, by, bz, shmem, s, params, NULL);
}

CUresult sw_launch_ex(sw_launch_ex_fn real, const CUlaunchConfig *config, CUfunction f,
                      void **params, void **extra)
{
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    CUstream st = config ? config->hStream : NULL;
    if (from_runtime(f, &params, &extra, st)) {
        CUresult r = real(config, f, params, extra);
        sw_window_read(st, r == CUDA_SUCCESS);
        return r;
    }
    if (!sw_gate_rd()) {
        count_unscanned();
        return real(config, f, params, extra);
    }
    sw_mark(f, &params, &extra, st);
    CUresult r = real(config, f, params, extra);
    sw_window_read(st, r == CUDA_SUCCESS);
    sw_gate_unrd();
    return r;
}

/* ---- capture ----
 * Moves synchronize, and a synchronization inside a capture invalidates
 * it. Every move happens under the gate held exclusively, after a check
 * of sw_capturing() made under that same hold; a capture begins, and is
 * counted, with writers excluded (SW_CAPTURE_BEGIN), which an exclusive
 * hold also does. So either the begin comes first, and the move's check
 * sees it, or the move's synchronization is over before the capture
 * begins: a begin on one thread can never fall between another thread's
 * check and its synchronization. The begin does not wait for launches
 * (readers), which never synchronize. Ends need no such order: counting a
 * capture a little longer only skips moves. */

/* Whether the driver says s is capturing (active or invalidated, both of
 * which an end finishes). false when it cannot say. */
static bool stream_capturing(CUstream s)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    const sw_real_t *r = sw_real();
    return r->cuStreamIsCapturing && r->cuStreamIsCapturing(s, &st) == CUDA_SUCCESS &&
           st != CU_STREAM_CAPTURE_STATUS_NONE;
}

CUresult sw_capture_end(CUresult (*end)(CUstream, CUgraph *), CUstream s, CUgraph *g,
                        bool per_thread)
{
    if (!end)
        return CUDA_ERROR_NOT_FOUND;
    /* The per-thread default stream, named so that the legacy query finds it. */
    CUstream q = per_thread && !s ? CU_STREAM_PER_THREAD : s;
    bool was = stream_capturing(q);
    /* Shared, so that no window is released (under the exclusive gate)
     * while its capture state changes: the count of captures keeps
     * sw_window_release away only from one it counted, and an end may
     * come on a stream that was not capturing. */
    sw_gate_rd_always();
    bool broken = sw_window_capture_ends(q);
    sw_gate_unrd();
    CUresult r = end(s, g);
    /* Success and invalidation always end it; another error (an unjoined
     * fork, out of memory) may or may not: the stream says. */
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED ||
        (was && !stream_capturing(q))) {
        sw_capture_over();
        sw_record_over(r == CUDA_SUCCESS && !broken && g ? *g : NULL);
    }
    /* The window broke the capture (a copy home or a fence could not be
     * issued into it) and the driver did not see it invalidated: its
     * graph would lose bytes, so the application is told what the driver
     * says of an invalidated capture. The graph is left to it: with
     * cuStreamBeginCaptureToGraph it is the application's own. */
    if (broken && r == CUDA_SUCCESS) {
        sw_error("a window step failed inside the capture: it is invalidated");
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    return r;
}

/* ---- replays ----
 * A graph launch runs the captured launches again without a call spillway
 * sees, so the learner is shown them here, before it: each recorded launch
 * is marked as its capture marked it (stamps, segment starts, the host
 * chunks it reads), then asked what a launch is asked, promotions and
 * trades. Not the window's questions: a graph's copies were recorded with
 * it. */
void sw_graph_learn(CUgraphExec g)
{
    /* Nothing on the host: nothing a replay reads could move. */
    if (sw_capturing() || sw_opts()->policy != SW_POLICY_LEARNED || !sw_budget_set() ||
        !sw_stat_get(SW_STAT_host_bytes))
        return;
    sw_recording_t *rec = sw_recording_of(g);
    if (!rec)
        return;
    if (sw_gate_rd()) {
        for (uint32_t i = 0, n = sw_recording_launches(rec); i < n; i++) {
            marks_t m = {.seq = sw_launch_next()};
            uint32_t nw;
            const uint64_t *w = sw_recording_words(rec, i, &nw);
            for (uint32_t k = 0; k < nw; k++)
                hit(w[k], &m);
            if (!m.host)
                continue;
            if (!sw_capturing())
                bring_in(&m);
            trade(m.seq, true);
        }
        sw_gate_unrd();
    }
    sw_recording_put(rec);
}

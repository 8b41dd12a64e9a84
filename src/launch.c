/*
 * The launch path: which tracked chunks a kernel's arguments point into,
 * when they were last used, and whether to bring a host chunk back first.
 *
 *   nothing tracked ──► call the driver (no lock, no scan)
 *   otherwise       ──► gate shared, layout (cached per function), scan
 *                       every 8-byte word, stamp each chunk hit with the
 *                       launch sequence number, launch, release the gate.
 *
 * A launch that touches a host chunk runs correctly as it is (zero-copy);
 * when a GPU budget is set and has room, the chunk is promoted first.
 * Under capture nothing is promoted (it would synchronize).
 */
#include "mech.h"

#include <stdlib.h>
#include <string.h>

static __thread bool hash_oom;
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (hash_oom = true)
#include <uthash.h>

#define MAX_PARAMS 256
#define MAX_PROMOTE 16

typedef struct {
    void *handle;
    int kind;          /* SW_HANDLE_*, 0 when unknown */
    bool have_layout;  /* layout below is valid */
    bool no_layout;    /* the driver would not say: never scan this one */
    sw_layout_t layout;
    uint32_t storage[2 * MAX_PARAMS];
    UT_hash_handle hh;
} fn_t;

static pthread_mutex_t fn_lock = PTHREAD_MUTEX_INITIALIZER;
static fn_t *fns;
static uint64_t launch_seq;
static int captures;

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

CUresult sw_note_handle(CUresult r, void **h, int kind)
{
    if (r != CUDA_SUCCESS || !h || !*h)
        return r;
    pthread_mutex_lock(&fn_lock);
    fn_t *f = fn_get(*h);
    if (f)
        f->kind = kind;
    pthread_mutex_unlock(&fn_lock);
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

/* The layout of a function or kernel handle, cached. A CUkernel must be
 * asked with cuKernelGetParamInfo (cuFuncGetParamInfo refuses it); a
 * handle of unknown origin is tried both ways. NULL: unknown. */
static const sw_layout_t *layout_lookup(CUfunction h)
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
            ok = query_layout(f, by_func);
        if (!ok && f->kind != SW_HANDLE_FUNC && by_kernel)
            ok = query_layout(f, by_kernel);
        f->have_layout = ok;
        f->no_layout = !ok;
        if (!ok)
            sw_debug("no parameter layout for function %p: its launches are not scanned", h);
    }
    if (f && f->have_layout)
        l = &f->layout;
    pthread_mutex_unlock(&fn_lock);
    return l;
}

/* Each thread keeps the layouts it used last, direct-mapped by handle, so
 * a launch takes no lock once its function is known. Entries are never
 * freed, so a cached pointer stays valid. */
#define TLS_WAYS 64
static __thread struct {
    void *h;
    const sw_layout_t *l;
} recent[TLS_WAYS];

static const sw_layout_t *layout_of(CUfunction h)
{
    unsigned way = (unsigned)(((uintptr_t)h >> 4) ^ ((uintptr_t)h >> 12)) % TLS_WAYS;
    if (recent[way].h == h)
        return recent[way].l;
    const sw_layout_t *l = layout_lookup(h);
    recent[way].h = h;
    recent[way].l = l;
    return l;
}

/* ---- marking ---- */

typedef struct {
    uint64_t seq;
    bool host;
    int npromote;
    uint64_t promote[MAX_PROMOTE]; /* addresses: chunks may go while the gate is down */
} marks_t;

static void hit(uint64_t word, void *arg)
{
    marks_t *m = arg;
    sw_chunk_t *c = sw_table_lookup(sw_tracked(), word);
    if (!c || c->last_use == m->seq)
        return;
    /* Racing launches on other threads may interleave these stores; both
     * values are recent, which is all LRU needs. */
    __atomic_store_n(&c->last_use, m->seq, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->uses, 1, __ATOMIC_RELAXED);
    if (c->where == SW_ON_HOST) {
        m->host = true;
        if (m->npromote < MAX_PROMOTE)
            m->promote[m->npromote++] = c->va;
    }
}

/* Brings the host chunks this launch touches to the device while the
 * budget has room. Called with the gate shared; returns with it shared. */
static void promote(const marks_t *m)
{
    sw_gate_unrd();
    sw_gate_wr();
    bool synced = false;
    for (int i = 0; i < m->npromote; i++) {
        sw_chunk_t *c = sw_table_lookup(sw_tracked(), m->promote[i]);
        if (!c || c->where != SW_ON_HOST ||
            sw_policy_on_touch(c, sw_device_room(), sw_capturing()) != SW_VERDICT_PROMOTE)
            continue;
        if (!synced && sw_safe_sync() != CUDA_SUCCESS)
            break;
        synced = true;
        sw_move(c, SW_ON_DEVICE);
    }
    sw_gate_unwr();
    sw_gate_rd_always();
}

void sw_mark(CUfunction f, void **params, void **extra)
{
    const sw_layout_t *l = layout_of(f);
    marks_t m = {.seq = __atomic_add_fetch(&launch_seq, 1, __ATOMIC_RELAXED)};
    sw_stat_add(SW_STAT_launches, 1);
    if (!l)
        return;
    const void *buf = NULL;
    size_t len = 0;
    if (params)
        sw_scan_args(l, params, NULL, 0, hit, &m);
    else if (extra && sw_extra_buffer(extra, &buf, &len))
        sw_scan_args(l, NULL, buf, len, hit, &m);
    if (!m.host)
        return;
    sw_stat_add(SW_STAT_launches_touching_host, 1);
    if (sw_budget_set() && !sw_capturing() && sw_device_room() > 0)
        promote(&m);
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
static bool from_runtime(CUfunction f, void **params, void **extra)
{
    sw_rt_state_t *rt = sw_rt_state();
    if (!rt->inside)
        return false;
    if (!rt->handled) {
        if (rt->gated)
            sw_mark(f, params, extra);
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
    if (from_runtime(f, params, extra))
        return real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
    if (!sw_gate_rd()) {
        count_unscanned();
        return real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
    }
    sw_mark(f, params, extra);
    CUresult r = real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
    sw_gate_unrd();
    return r;
}

CUresult sw_launch_ex(sw_launch_ex_fn real, const CUlaunchConfig *config, CUfunction f,
                      void **params, void **extra)
{
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    if (from_runtime(f, params, extra))
        return real(config, f, params, extra);
    if (!sw_gate_rd()) {
        count_unscanned();
        return real(config, f, params, extra);
    }
    sw_mark(f, params, extra);
    CUresult r = real(config, f, params, extra);
    sw_gate_unrd();
    return r;
}

/* ---- capture ---- */

CUresult sw_capture_begin(CUresult r)
{
    if (r == CUDA_SUCCESS)
        __atomic_add_fetch(&captures, 1, __ATOMIC_RELEASE);
    return r;
}

/* A capture ends on success and on invalidation alike. */
CUresult sw_capture_end(CUresult r)
{
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        __atomic_sub_fetch(&captures, 1, __ATOMIC_RELEASE);
    return r;
}

bool sw_capturing(void)
{
    return __atomic_load_n(&captures, __ATOMIC_ACQUIRE) > 0;
}

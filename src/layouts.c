/*
 * What the launch path knows of a kernel handle: where it came from (a
 * module or library, forgotten when that is unloaded) and its parameter
 * layout, asked of the driver once and cached, per thread for the last
 * ones used, so that a launch's arguments can be scanned (launch.c).
 */
#include "launch.h"

#include <stdlib.h>
#include <string.h>

static __thread bool hash_oom;
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (hash_oom = true)
#include <uthash.h>

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
 * layouts (sw_layout) is emptied when it sees a new value. */
static unsigned layouts_gen;

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

const sw_layout_t *sw_layout(CUfunction h)
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

/*
 * The allocation table: which tracked allocation and chunk an address
 * belongs to, in O(1).
 *
 * Every chunk's address and size are multiples of one granule (the VMM
 * granularity), so an address maps to a chunk through its granule index:
 *
 *     addr >> shift  ──►  { chunk }          one entry per granule
 *     base va        ──►  { allocation }     for frees and iteration
 *
 * A 1 GiB allocation at 2 MiB granules takes 512 index entries; the launch
 * path does one hash lookup per argument word that passes the [lo, hi)
 * pre-filter. uthash is used with HASH_NONFATAL_OOM: an interposer must
 * never exit() the application from inside a hash insert.
 */
#include "../sw.h"

#include <stdlib.h>
#include <string.h>

static __thread bool hash_oom;
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (hash_oom = true)
/* Every key is one 64-bit integer (a granule index or an address): a
 * multiplicative hash spreads them well at a fraction of the cost of
 * uthash's default, and this lookup runs for every argument word of every
 * launch that might point into tracked memory. */
#define HASH_FUNCTION(keyptr, keylen, hashv)                                       \
    do {                                                                           \
        uint64_t k_;                                                               \
        memcpy(&k_, (keyptr), sizeof k_);                                          \
        (hashv) = (unsigned)((k_ * 0x9E3779B97F4A7C15ull) >> 32);                  \
    } while (0)
#include <uthash.h>

typedef struct {
    uint64_t granule;  /* key: addr >> shift */
    sw_chunk_t *chunk;
    UT_hash_handle hh;
} gentry_t;

typedef struct {
    uint64_t va;       /* key */
    sw_alloc_t *alloc;
    UT_hash_handle hh;
} bentry_t;

struct sw_table {
    unsigned shift;
    gentry_t *granules;
    bentry_t *bases;
    uint64_t lo, hi;   /* every tracked byte lies in [lo, hi) */
    size_t nchunks;    /* of every allocation registered */
};

sw_table_t *sw_table_new(uint64_t granule)
{
    if (granule == 0 || (granule & (granule - 1)))
        return NULL;
    sw_table_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->shift = (unsigned)__builtin_ctzll(granule);
    t->lo = UINT64_MAX;
    return t;
}

void sw_table_free(sw_table_t *t)
{
    if (!t)
        return;
    gentry_t *g, *gt;
    HASH_ITER(hh, t->granules, g, gt) {
        HASH_DEL(t->granules, g);
        free(g);
    }
    bentry_t *b, *bt;
    HASH_ITER(hh, t->bases, b, bt) {
        HASH_DEL(t->bases, b);
        free(b);
    }
    free(t);
}

static gentry_t *gfind(const sw_table_t *t, uint64_t key)
{
    gentry_t *g;
    HASH_FIND(hh, t->granules, &key, sizeof key, g);
    return g;
}

/* Removes the index entries of a's granules that point into a. */
static void unindex(sw_table_t *t, const sw_alloc_t *a)
{
    for (uint64_t k = a->va >> t->shift; k < (a->va + a->reserved) >> t->shift; k++) {
        gentry_t *g = gfind(t, k);
        if (g && g->chunk->alloc == a) {
            HASH_DEL(t->granules, g);
            free(g);
        }
    }
}

static void recompute_bounds(sw_table_t *t)
{
    t->lo = UINT64_MAX;
    t->hi = 0;
    for (bentry_t *b = t->bases; b; b = b->hh.next) {
        if (b->va < t->lo)
            t->lo = b->va;
        if (b->va + b->alloc->reserved > t->hi)
            t->hi = b->va + b->alloc->reserved;
    }
}

int sw_table_insert(sw_table_t *t, sw_alloc_t *a)
{
    uint64_t first = a->va >> t->shift, end = (a->va + a->reserved) >> t->shift;
    for (uint64_t k = first; k < end; k++)
        if (gfind(t, k))
            return -1; /* overlaps a tracked allocation */
    bentry_t *b = calloc(1, sizeof *b);
    if (!b)
        return -1;
    b->va = a->va;
    b->alloc = a;
    hash_oom = false;
    HASH_ADD(hh, t->bases, va, sizeof b->va, b);
    if (hash_oom) {
        free(b);
        return -1;
    }
    for (uint32_t i = 0; i < a->nchunks; i++) {
        sw_chunk_t *c = &a->chunks[i];
        for (uint64_t k = c->va >> t->shift; k < (c->va + c->size) >> t->shift; k++) {
            gentry_t *g = calloc(1, sizeof *g);
            if (g) {
                g->granule = k;
                g->chunk = c;
                hash_oom = false;
                HASH_ADD(hh, t->granules, granule, sizeof g->granule, g);
            }
            if (!g || hash_oom) {
                free(hash_oom ? g : NULL);
                unindex(t, a);
                HASH_DEL(t->bases, b);
                free(b);
                return -1;
            }
        }
    }
    if (a->va < t->lo)
        t->lo = a->va;
    if (a->va + a->reserved > t->hi)
        t->hi = a->va + a->reserved;
    t->nchunks += a->nchunks;
    return 0;
}

void sw_table_remove(sw_table_t *t, sw_alloc_t *a)
{
    bentry_t *b;
    HASH_FIND(hh, t->bases, &a->va, sizeof a->va, b);
    if (!b || b->alloc != a)
        return;
    unindex(t, a);
    HASH_DEL(t->bases, b);
    free(b);
    t->nchunks -= a->nchunks;
    recompute_bounds(t);
}

bool sw_table_maybe(const sw_table_t *t, uint64_t addr)
{
    return addr >= t->lo && addr < t->hi;
}

sw_chunk_t *sw_table_lookup(const sw_table_t *t, uint64_t addr)
{
    if (!sw_table_maybe(t, addr))
        return NULL;
    gentry_t *g = gfind(t, addr >> t->shift);
    return g ? g->chunk : NULL;
}

sw_alloc_t *sw_table_find_base(const sw_table_t *t, uint64_t va)
{
    bentry_t *b;
    HASH_FIND(hh, t->bases, &va, sizeof va, b);
    return b ? b->alloc : NULL;
}

void sw_table_each(const sw_table_t *t, void (*fn)(sw_alloc_t *a, void *arg), void *arg)
{
    for (bentry_t *b = t->bases; b; b = b->hh.next)
        fn(b->alloc, arg);
}

size_t sw_table_count(const sw_table_t *t)
{
    return HASH_COUNT(t->bases);
}

/* A walk's visits a launch pays for: where a table is small, the callers'
 * own spacing rules hold; where it is large, the walks' cost is spread.
 * An in-place read of one chunk among 1,600 allocations cost 19,200
 * instructions a launch, nearly all in walks (simgpu, 2026-12-03). */
#define WALK_SHARE 64

uint64_t sw_table_walk_every(const sw_table_t *t, uint64_t least)
{
    uint64_t every = t ? t->nchunks / WALK_SHARE : 0;
    return every > least ? every : least;
}

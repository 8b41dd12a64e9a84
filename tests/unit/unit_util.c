/* Helpers the core suites share. */
#include <stdlib.h>

#include "sw.h"
#include "unit.h"

sw_alloc_t *unit_mk_alloc(uint64_t va, const uint64_t *sizes, uint32_t n)
{
    sw_alloc_t *a = calloc(1, sizeof(*a));
    ck_assert_ptr_nonnull(a);
    a->chunks = calloc(n ? n : 1, sizeof(sw_chunk_t));
    ck_assert_ptr_nonnull(a->chunks);
    a->va = va;
    a->nchunks = n;
    uint64_t off = 0;
    for (uint32_t i = 0; i < n; i++) {
        sw_chunk_t *c = &a->chunks[i];
        c->va = va + off;
        c->size = sizes[i];
        c->where = SW_ON_DEVICE;
        c->handle = 0x1000 + i;
        c->alloc = a;
        c->index = i;
        c->slot = -1;
        off += sizes[i];
    }
    a->reserved = off;
    a->size = off; /* what the app asked for: at most reserved */
    return a;
}

void unit_free_alloc(sw_alloc_t *a)
{
    if (!a)
        return;
    sw_segment_free(a);
    free(a->chunks);
    free(a);
}

bool unit_keep_listed(const sw_chunk_t *c, void *arg)
{
    keep_set_t *k = arg;
    ck_assert_uint_eq(k->magic, KEEP_MAGIC);
    k->calls++;
    for (int i = 0; i < k->n; i++)
        if (k->chunks[i] == c)
            return true;
    return false;
}

keep_set_t *unit_keep_none(void)
{
    keep_set_t *k = calloc(1, sizeof(*k));
    ck_assert_ptr_nonnull(k);
    k->magic = KEEP_MAGIC;
    return k;
}

bool unit_contains(sw_chunk_t *const *out, size_t n, const sw_chunk_t *c)
{
    for (size_t i = 0; i < n; i++)
        if (out[i] == c)
            return true;
    return false;
}

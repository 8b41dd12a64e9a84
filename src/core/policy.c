/*
 * Residency policy: pure decisions over the table, returned as verdicts.
 * The mechanism (vmm.c) acts on them; nothing here moves memory.
 *
 * For now the policy is least-recently-used, by the launch sequence number
 * of the last launch whose arguments pointed into a chunk. Under a cyclic
 * access pattern LRU evicts exactly the chunk needed next; the learned
 * policy (furthest next use) is the prefetch issue's job, behind this same
 * interface.
 */
#include "../sw.h"

#include <stdlib.h>

typedef struct {
    sw_chunk_t **v;
    size_t n, cap;
    bool (*keep)(const sw_chunk_t *c, void *arg);
    void *arg;
    bool oom;
} cands_t;

static void collect(sw_alloc_t *a, void *arg)
{
    cands_t *cs = arg;
    for (uint32_t i = 0; i < a->nchunks; i++) {
        sw_chunk_t *c = &a->chunks[i];
        if (c->where != SW_ON_DEVICE || (cs->keep && cs->keep(c, cs->arg)))
            continue;
        if (cs->n == cs->cap) {
            size_t cap = cs->cap ? cs->cap * 2 : 256;
            sw_chunk_t **v = realloc(cs->v, cap * sizeof *v);
            if (!v) {
                cs->oom = true;
                return;
            }
            cs->v = v;
            cs->cap = cap;
        }
        cs->v[cs->n++] = c;
    }
}

/* Colder first: older last use, then fewer uses, then lower address. */
static int colder(const void *pa, const void *pb)
{
    const sw_chunk_t *a = *(sw_chunk_t *const *)pa, *b = *(sw_chunk_t *const *)pb;
    if (a->last_use != b->last_use)
        return a->last_use < b->last_use ? -1 : 1;
    if (a->uses != b->uses)
        return a->uses < b->uses ? -1 : 1;
    return a->va < b->va ? -1 : a->va > b->va;
}

size_t sw_policy_victims(const sw_table_t *t, uint64_t need,
                         bool (*keep)(const sw_chunk_t *c, void *arg), void *arg,
                         sw_chunk_t **out, size_t max, uint64_t *freed)
{
    *freed = 0;
    if (need == 0 || max == 0)
        return 0;
    cands_t cs = {.keep = keep, .arg = arg};
    sw_table_each(t, collect, &cs);
    /* On allocation failure the candidates found so far still give a
     * correct (if smaller) answer. */
    if (cs.n > 1)
        qsort(cs.v, cs.n, sizeof *cs.v, colder); /* qsort's array must be valid even for 0 */
    size_t n = 0;
    for (size_t i = 0; i < cs.n && n < max && *freed < need; i++) {
        out[n++] = cs.v[i];
        *freed += cs.v[i]->size;
    }
    free(cs.v);
    return n;
}

sw_verdict_t sw_policy_on_touch(const sw_chunk_t *c, uint64_t device_free, bool capturing)
{
    /* Promoting needs a device synchronization, which a capture forbids. */
    if (capturing || device_free < c->size)
        return SW_VERDICT_ZERO_COPY;
    return SW_VERDICT_PROMOTE;
}

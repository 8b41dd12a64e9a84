/*
 * A range's two ways of being read, weighed by what the GPU measured: a
 * launch reading it in place, and its copy into the streaming window.
 *
 * The copy moves every byte of the allocation (a kernel may read any of
 * them); a kernel reading in place moves only what it reads. Where an
 * allocation holds bytes no kernel reads (a 16 MiB tensor in a 20 MiB
 * allocator segment, an embedding table read a few rows a step), its copy
 * takes longer than the launch that reads it in place, whatever the link.
 * A kernel that re-reads its weight (a GEMM, once per tile row) takes
 * longer in place than its copy, and so does one whose compute the copy
 * would hide. Neither can be told from the pointers: both are timed.
 *
 * The fastest of a few samples of each is kept: a sample is slowed, never
 * sped up, by whatever shares the link with it.
 */
#include "sw.h"

bool sw_cost_wants(const sw_cost_t *c, sw_cost_kind_t k)
{
    return c->seen[k] < SW_COST_SAMPLES;
}

void sw_cost_note(sw_cost_t *c, sw_cost_kind_t k, float ms)
{
    if (!(ms > 0) || c->seen[k] >= SW_COST_SAMPLES)
        return;
    if (!c->seen[k] || ms < c->best[k])
        c->best[k] = ms;
    c->seen[k]++;
}

bool sw_cost_in_place(const sw_cost_t *c)
{
    return c->seen[SW_COST_PLACE] && c->seen[SW_COST_COPY] &&
           c->best[SW_COST_PLACE] * SW_COST_MARGIN < c->best[SW_COST_COPY];
}

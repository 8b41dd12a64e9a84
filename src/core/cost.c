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

#include <stdlib.h>

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

static int by_value(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

double sw_cost_repaid(float *ratio, int n)
{
    if (n <= 0)
        return SW_COST_REPAID;
    qsort(ratio, (size_t)n, sizeof *ratio, by_value);
    double median = n % 2 ? ratio[n / 2] : ((double)ratio[n / 2 - 1] + ratio[n / 2]) / 2;
    if (!(median > SW_COST_LINK_RATIO))
        return SW_COST_REPAID;
    return SW_COST_REPAID * (SW_COST_LINK_RATIO - 1) / (median - 1);
}

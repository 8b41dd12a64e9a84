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
 * sped up, by whatever shares the link with it. A copy's time is also
 * bounded by its bytes at the best rate any copy reached: a range's first
 * copies run while other ranges are still read in place, and kernels
 * reading host memory take most of the link from a copy beside them. On
 * an H200 (2026-11-28), 32 MiB copies timed at 1.4-2.9 ms where the link
 * moves them in 0.61, and three of 32 layers were judged in place (0.8 ms)
 * that copy faster; simgpu shares the link evenly and never showed it.
 *
 * A copy also costs the stream that reads it: after each launch it
 * serves, the way home passes over all of it (window.c, ORDER). A
 * segment of twenty 1 MiB tensors is twenty passes over 20 MiB and sixty
 * small kernels a visit, more than its twenty launches read in place
 * take; the copy itself runs beside them on the link. So a visit served
 * costs the longer of its copy and its ways home (simgpu, 2026-11-30:
 * 400 x 1 MiB layers in 20 MiB segments, every one named, served 2.02x
 * the link bound, 9.2 ms a step of which 4.5 ms were ways home); their
 * sum where the window has room for no copy beside it, which then waits
 * for the readers of the one before (the same layers under 120 MiB, a
 * window of one 20 MiB copy: 2.54x the link bound served, 1.41x in place).
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

void sw_cost_forget(sw_cost_t *c, sw_cost_kind_t k)
{
    c->best[k] = 0;
    c->seen[k] = 0;
}

void sw_cost_rate_note(double *rate, uint64_t bytes, float ms)
{
    if (ms > 0 && (double)bytes / ms > *rate)
        *rate = (double)bytes / ms;
}

double sw_cost_copy_ms(const sw_cost_t *c, uint64_t bytes, double rate)
{
    double copy = c->best[SW_COST_COPY];
    if (rate > 0 && (double)bytes / rate < copy)
        copy = (double)bytes / rate;
    return copy;
}

double sw_cost_home_ms(const sw_cost_t *c, uint32_t uses)
{
    return (double)uses * c->best[SW_COST_HOME];
}

double sw_cost_ratio(const sw_cost_t *c, uint64_t bytes, double rate, uint32_t uses, bool ahead)
{
    if (!c->seen[SW_COST_PLACE] || !c->seen[SW_COST_COPY])
        return 0;
    double copy = sw_cost_copy_ms(c, bytes, rate), home = sw_cost_home_ms(c, uses);
    double served = !ahead ? copy + home : home > copy ? home : copy;
    return c->best[SW_COST_PLACE] / served;
}

bool sw_cost_in_place(const sw_cost_t *c, uint64_t bytes, double rate, uint32_t uses, bool ahead)
{
    double ratio = sw_cost_ratio(c, bytes, rate, uses, ahead);
    return ratio > 0 && ratio * SW_COST_MARGIN < 1;
}

static int by_value(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

double sw_cost_repaid(float *ratio, int n)
{
    if (n < SW_COST_REPAID_RANGES)
        return SW_COST_REPAID;
    qsort(ratio, (size_t)n, sizeof *ratio, by_value);
    double median = n % 2 ? ratio[n / 2] : ((double)ratio[n / 2 - 1] + ratio[n / 2]) / 2;
    if (!(median > SW_COST_LINK_RATIO))
        return SW_COST_REPAID;
    return SW_COST_REPAID * (SW_COST_LINK_RATIO - 1) / (median - 1);
}

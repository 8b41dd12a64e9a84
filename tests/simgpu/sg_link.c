/*
 * The PCIe link between host and device, one per direction, shared by
 * everything that crosses it: copy-engine copies and kernels reading or
 * writing host-backed memory in place (zero-copy).
 *
 * Each transfer keeps its own cap (SIMGPU_H2D_GBPS for a DMA copy,
 * SIMGPU_ZEROCOPY_GBPS for a kernel's reads, ...), and together the
 * transfers on one direction never exceed SIMGPU_LINK_GBPS. A transfer's
 * time is fixed when its op is issued, and an issued op's time never
 * changes afterwards (later ops, events and host waits already depend on
 * it). So the link is shared first come, first served in issue order: a
 * new transfer takes, at each instant, the least of its cap and what the
 * transfers issued before it left free.
 *
 *   GB/s                 link total (57)
 *   57 ┤- - - - - - - - - - - - - - - - - - -
 *      │████ zero-copy read, issued 2nd ████
 *   55 ┤─────────────────┐   (gets 2, then 35)
 *      │ H2D copy,       │██████████████████
 *      │ issued first    │
 *      │ (its cap, 55)   │
 *    0 ┼─────────────────┴──────────────────► virtual time
 *
 * Virtual time still depends only on the sequence of calls.
 */
#include "sg.h"

#include <stdlib.h>
#include <string.h>

static void grow(sg_link_t *l)
{
    if (l->n < l->cap)
        return;
    int cap = l->cap ? 2 * l->cap : 64;
    uint64_t *t = realloc(l->t, (size_t)cap * sizeof *t);
    if (t)
        l->t = t;
    double *rate = realloc(l->rate, (size_t)cap * sizeof *rate);
    if (!t || !rate)
        abort();
    l->rate = rate;
    l->cap = cap;
}

/* Makes `at` a breakpoint and returns its index; the new segment inherits
 * the rate already booked there. */
static int split(sg_link_t *l, uint64_t at)
{
    int lo = 0, hi = l->n; /* first index with t >= at */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (l->t[mid] < at)
            lo = mid + 1;
        else
            hi = mid;
    }
    int i = lo;
    if (i < l->n && l->t[i] == at)
        return i;
    grow(l);
    memmove(l->t + i + 1, l->t + i, (size_t)(l->n - i) * sizeof *l->t);
    memmove(l->rate + i + 1, l->rate + i, (size_t)(l->n - i) * sizeof *l->rate);
    l->t[i] = at;
    l->rate[i] = i > 0 ? l->rate[i - 1] : 0.0;
    l->n++;
    return i;
}

static double avail(const sg_link_t *l, int i, double cap)
{
    double free = SG->cfg.link_gbps - l->rate[i];
    double a = cap < free ? cap : free;
    return a > 1e-9 ? a : 0.0;
}

uint64_t sg_link_book(int dir, uint64_t start, uint64_t bytes, double cap_gbps)
{
    sg_link_t *l = &SG->link[dir];
    if (bytes == 0)
        return 0;
    int i = split(l, start);
    /* Walk the segments from start; time is kept relative to start, so an
     * idle link gives exactly bytes / cap (1 GB/s moves a byte per ns). */
    double left = (double)bytes, d = 0.0;
    for (int j = i;; j++) {
        double a = avail(l, j, cap_gbps);
        if (j == l->n - 1) { /* nothing is booked past the last point */
            d += left / a;
            break;
        }
        double len = (double)(l->t[j + 1] - l->t[j]);
        if (a * len >= left) {
            d += left / a;
            break;
        }
        left -= a * len;
        d += len;
    }
    uint64_t dur = (uint64_t)d;
    if (dur == 0)
        return 0;
    int e = split(l, start + dur);
    i = split(l, start); /* indices may have moved */
    for (int j = i; j < e; j++)
        l->rate[j] += avail(l, j, cap_gbps);
    return dur;
}

void sg_link_trim(uint64_t now)
{
    for (int dir = 0; dir < 2; dir++) {
        sg_link_t *l = &SG->link[dir];
        int k = 0; /* points before now whose segment also ends before now */
        while (k + 1 < l->n && l->t[k + 1] <= now)
            k++;
        if (k == 0)
            continue;
        memmove(l->t, l->t + k, (size_t)(l->n - k) * sizeof *l->t);
        memmove(l->rate, l->rate + k, (size_t)(l->n - k) * sizeof *l->rate);
        l->n -= k;
    }
}

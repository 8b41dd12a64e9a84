/*
 * What spillway does not manage. Memory that reaches the application by a
 * route spillway does not track is never offloaded; a user who turned such
 * a route on (graph memory, an exportable pool, managed memory) should be
 * told, not left to wonder why the budget does not hold. Each route
 * counts the bytes it handed out (passthrough_bytes_<route>, one list in
 * include/spillway/stats_fields.h) and is named once, at info level, the first
 * time it is taken, and warned of once where it outgrows the budget.
 */
#include "residency.h"

static const char *const route_names[SW_ROUTE_COUNT] = {
#define SW_ROUTE_NAME(X, name, help) #name,
    SW_PASSTHROUGH_ROUTES(SW_ROUTE_NAME, _)
#undef SW_ROUTE_NAME
};

static const char *const route_help[SW_ROUTE_COUNT] = {
#define SW_ROUTE_HELP(X, name, help) help,
    SW_PASSTHROUGH_ROUTES(SW_ROUTE_HELP, _)
#undef SW_ROUTE_HELP
};

/* The counters follow one another in the field list, in route order. */
_Static_assert(SW_STAT_passthrough_bytes_off - SW_STAT_passthrough_bytes_small ==
                   SW_ROUTE_off - SW_ROUTE_small,
               "passthrough_bytes_* fields out of route order");

static bool said[SW_ROUTE_COUNT];   /* atomic: each route named once */
static bool warned[SW_ROUTE_COUNT]; /* atomic: and warned of once */

/* A route whose bytes, with the tracked ones on the current device, pass
 * that device's GPU budget is warned of, once, at the default log level:
 * the budget the user set does not bound that memory (40 layers of 1 MiB
 * under a 16 MiB budget held 40 MiB on the device, none of it tracked).
 * The bytes are those handed out so far: frees of untracked memory are not
 * seen. Not while spillway is off, which the user chose. */
static void warn_if_unbounded(sw_route_t route, uint64_t handed_out)
{
    uint64_t budget;
    int dev;
    if (route == SW_ROUTE_off || __atomic_load_n(&warned[route], __ATOMIC_RELAXED) ||
        (dev = sw_dev_current()) < 0)
        return;
    /* Budgets change under the exclusive hold (devices.c). */
    sw_gate_rd_always();
    uint64_t tracked = sw_dev_bytes(dev);
    bool over = sw_dev_budget_meant(dev, &budget) && handed_out + tracked > budget;
    sw_gate_unrd();
    if (!over || __atomic_exchange_n(&warned[route], true, __ATOMIC_RELAXED))
        return;
    sw_warn("%s: %llu bytes so far (frees not counted), which with the %llu tracked ones on "
            "device %d pass its GPU budget of %llu: the budget does not bound them "
            "(passthrough_bytes_%s)%s",
            route_help[route], (unsigned long long)handed_out,
            (unsigned long long)tracked, dev, (unsigned long long)budget,
            route_names[route],
            route == SW_ROUTE_small ? "; a smaller SPILLWAY_MIN_ALLOC tracks them, each in whole "
                                      "granules of the device's VMM granularity"
                                    : "");
}

void sw_untracked(sw_route_t route, uint64_t bytes)
{
    if ((unsigned)route >= SW_ROUTE_COUNT)
        return;
    sw_stat_id_t id = (sw_stat_id_t)(SW_STAT_passthrough_bytes_small + route);
    sw_stat_add(id, (int64_t)bytes);
    if (!__atomic_exchange_n(&said[route], true, __ATOMIC_RELAXED))
        sw_info("not managed (passthrough_bytes_%s): %s; first one %llu bytes", route_names[route],
                route_help[route], (unsigned long long)bytes);
    warn_if_unbounded(route, sw_stat_get(id));
}

/* Managed memory migrates by itself, page by page: it is the driver's to
 * place, not spillway's. */
CUresult sw_alloc_managed(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    CUresult r = SW_CALL(cuMemAllocManaged, (dptr, bytesize, flags));
    if (r == CUDA_SUCCESS) {
        sw_stat_add(SW_STAT_passthrough_allocs, 1);
        sw_untracked(SW_ROUTE_managed, bytesize);
    }
    return r;
}

/* The pitch is the driver's choice, made for its own layout rules. */
CUresult sw_alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                        unsigned int elemsize)
{
    CUresult r = SW_CALL(cuMemAllocPitch_v2, (dptr, pitch, width, height, elemsize));
    if (r == CUDA_SUCCESS) {
        sw_stat_add(SW_STAT_passthrough_allocs, 1);
        sw_untracked(SW_ROUTE_pitch, (uint64_t)*pitch * height);
    }
    return r;
}

/*
 * What spillway does not manage. Memory that reaches the application by a
 * route spillway does not track is never offloaded; a user who turned such
 * a route on (graph memory, an exportable pool, managed memory) should be
 * told, not left to wonder why the budget does not hold. Each route
 * counts the bytes it handed out (passthrough_bytes_<route>, one list in
 * include/spillway/stats_fields.h) and is named once, at info level, the first
 * time it is taken.
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

static bool said[SW_ROUTE_COUNT]; /* atomic: each route named once */

void sw_untracked(sw_route_t route, uint64_t bytes)
{
    if ((unsigned)route >= SW_ROUTE_COUNT)
        return;
    sw_stat_add((sw_stat_id_t)(SW_STAT_passthrough_bytes_small + route), (int64_t)bytes);
    if (!__atomic_exchange_n(&said[route], true, __ATOMIC_RELAXED))
        sw_info("not managed (passthrough_bytes_%s): %s; first one %llu bytes", route_names[route],
                route_help[route], (unsigned long long)bytes);
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

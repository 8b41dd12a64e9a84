/*
 * The control API (include/spillway.h): the functions a cooperating program
 * reaches with dlsym, exported under the symbol version SPILLWAY_1
 * (spillway.map). Like the driver hooks, each is thin: it checks its
 * arguments and hands the request to the layer that owns the state
 * (control.c for budgets and hints, stats.c for statistics). The answer
 * codes and their meanings are the header's.
 */
#include "api.h"

#include "spillway.h"
#include "stats_file.h"

#include <string.h>

SW_EXPORT int spillway_query(spillway_info_t *info)
{
    /* The caller's struct may be older (shorter) or newer (longer) than
     * ours: fill the common prefix, never past info->size. */
    if (!info || info->size < offsetof(spillway_info_t, gpu_budget))
        return SPILLWAY_EINVAL;
    const sw_options_t *o = sw_opts();
    spillway_info_t mine = {.size = sizeof mine,
                            .api_version = SPILLWAY_API_VERSION,
                            .stats_version = SW_STATS_VERSION,
                            .min_alloc = o->min_alloc,
                            .chunk = o->chunk};
    bool resolved;
    sw_budgets_get(&mine.gpu_budget, &mine.host_budget, &resolved);
    mine.flags = (o->disable ? SPILLWAY_INFO_DISABLED : 0) |
                 (resolved ? SPILLWAY_INFO_TRACKING : 0) |
                 (o->policy == SW_POLICY_LEARNED ? SPILLWAY_INFO_LEARNED : 0) |
                 (o->rewrite ? SPILLWAY_INFO_REWRITE : 0);
    uint32_t size = info->size < sizeof mine ? info->size : (uint32_t)sizeof mine;
    memcpy((char *)info + sizeof info->size, (char *)&mine + sizeof mine.size,
           size - sizeof info->size);
    return SPILLWAY_OK;
}

SW_EXPORT int spillway_stat(const char *name, uint64_t *value, uint64_t *peak)
{
    if (!name)
        return SPILLWAY_EINVAL;
    for (int i = 0; i < SW_STAT_COUNT; i++)
        if (strcmp(sw_stat_fields[i].name, name) == 0) {
            if (value)
                *value = sw_stat_get((sw_stat_id_t)i);
            if (peak)
                *peak = sw_stat_peak((sw_stat_id_t)i);
            return SPILLWAY_OK;
        }
    return SPILLWAY_EINVAL;
}

SW_EXPORT const char *spillway_stat_name(uint32_t i)
{
    return i < SW_STAT_COUNT ? sw_stat_fields[i].name : NULL;
}

SW_EXPORT int spillway_set_budgets(uint64_t gpu_bytes, uint64_t host_bytes)
{
    return sw_budgets_change(gpu_bytes, host_bytes);
}

SW_EXPORT int spillway_hint(uint64_t ptr, uint64_t bytes, int hint)
{
    return sw_hint_range(ptr, bytes, hint);
}

SW_EXPORT int spillway_phase(void)
{
    sw_phase();
    return SPILLWAY_OK;
}

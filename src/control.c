/*
 * The control API's requests (api.c, include/spillway.h): budgets read
 * and changed at run time (chunks over a lowered budget demoted at once,
 * by the policy, as for an allocation), hints on ranges, and a new phase
 * of the program (the learned schedule forgotten).
 */
#include "residency.h"

#include "spillway.h"

void sw_budgets_get(uint64_t *gpu, uint64_t *host, bool *resolved)
{
    sw_gate_rd_always();
    *resolved = sw_tracked() != NULL;
    uint64_t b;
    if (sw_tracked()) {
        /* Budgets are per device; the first device's stands for them all
         * (spillway_set_budgets sets every device's alike). */
        *gpu = sw_dev_budget(sw_dev_home(), &b) ? b : SPILLWAY_BUDGET_NONE;
        *host = sw_host_budget();
    } else {
        /* Not resolved yet: a percentage of the device is not known. */
        const sw_options_t *o = sw_opts();
        uint64_t gpu_pending, host_pending;
        sw_budgets_pending(&gpu_pending, &host_pending);
        *gpu = gpu_pending != SPILLWAY_BUDGET_KEEP ? gpu_pending
               : !o->gpu_budget.set               ? SPILLWAY_BUDGET_NONE
               : o->gpu_budget.is_percent         ? SPILLWAY_BUDGET_UNKNOWN
                                                  : o->gpu_budget.bytes;
        *host = host_pending != SPILLWAY_BUDGET_KEEP
                    ? host_pending
                    : sw_amount_resolve(&o->host_budget, sw_physical_ram());
    }
    sw_gate_unrd();
}

int sw_budgets_change(uint64_t gpu, uint64_t host)
{
    if (gpu == SPILLWAY_BUDGET_UNKNOWN || host == SPILLWAY_BUDGET_NONE ||
        host == SPILLWAY_BUDGET_UNKNOWN)
        return SPILLWAY_EINVAL;
    sw_gate_wr();
    /* No capture can begin while the gate is held exclusively
     * (SW_CAPTURE_BEGIN), so this answer holds until sw_gate_unwr. */
    if (sw_capturing()) {
        sw_gate_unwr();
        return SPILLWAY_EBUSY;
    }
    /* Every device seen from now on gets it too (devices.c). */
    if (gpu != SPILLWAY_BUDGET_KEEP)
        sw_dev_set_budgets(gpu != SPILLWAY_BUDGET_NONE, gpu != SPILLWAY_BUDGET_NONE ? gpu : 0);
    if (!sw_tracked()) {
        sw_budgets_pend(gpu, host);
        sw_gate_unwr();
        return SPILLWAY_OK;
    }
    if (host != SPILLWAY_BUDGET_KEEP)
        sw_set_host_budget(host);
    int rc = SPILLWAY_OK;
    /* The same path an allocation takes to make room, device by device:
     * victims by the policy (resident chunks are none), one
     * synchronization first. */
    bool synced = false;
    uint64_t budget;
    for (int dev = sw_dev_next(-1); dev >= 0; dev = sw_dev_next(dev)) {
        uint64_t used = sw_dev_bytes(dev);
        if (!sw_dev_budget(dev, &budget) || used <= budget)
            continue;
        sw_demote_some(dev, used - budget, &synced);
        sw_pool_drain(SW_ON_DEVICE);
        if (sw_dev_bytes(dev) > budget)
            rc = SPILLWAY_EPARTIAL;
    }
    sw_info("budgets changed: gpu %s%llu bytes, host %llu bytes",
            gpu == SPILLWAY_BUDGET_KEEP ? "(kept) " : gpu == SPILLWAY_BUDGET_NONE ? "(none) " : "",
            (unsigned long long)(gpu < SPILLWAY_BUDGET_NONE ? gpu : 0),
            (unsigned long long)sw_host_budget());
    sw_gate_unwr();
    return rc;
}

int sw_hint_range(uint64_t ptr, uint64_t bytes, int hint)
{
    if (bytes == 0 || hint < SPILLWAY_HINT_NONE || hint > SPILLWAY_HINT_READ_ONLY)
        return SPILLWAY_EINVAL;
    sw_gate_wr();
    sw_chunk_t *c = sw_tracked() && sw_tracking_any() ? sw_table_lookup(sw_tracked(), ptr) : NULL;
    sw_alloc_t *a = c ? c->alloc : NULL;
    int rc = SPILLWAY_OK;
    if (!a || ptr >= a->va + a->size)
        rc = SPILLWAY_ENOTTRACKED; /* the rounding behind an allocation is no one's */
    else if (bytes > a->va + a->size - ptr)
        rc = SPILLWAY_EOVERLAP;
    else if (hint != SPILLWAY_HINT_NONE && hint != SPILLWAY_HINT_KEEP_RESIDENT)
        rc = SPILLWAY_ENOTSUP;
    else
        for (uint32_t i = c->index; i < a->nchunks && a->chunks[i].va < ptr + bytes; i++)
            a->chunks[i].resident = hint == SPILLWAY_HINT_KEEP_RESIDENT;
    sw_gate_unwr();
    return rc;
}

void sw_phase(void)
{
    sw_gate_wr();
    if (sw_tracked())
        sw_learn_forget(sw_tracked());
    sw_gate_unwr();
}

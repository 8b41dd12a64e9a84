/*
 * Process state and the bookkeeping every API call shares: call counts,
 * fault injection, the sticky error and the host's virtual clock.
 */
#include "sg.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sg_state_t state = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .done_cv = PTHREAD_COND_INITIALIZER,
};
static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static volatile bool forked; /* set in a fork child, read without the lock */

static const sg_cost_t fn_cost[] = {
#define SG_FN_COST(name, err, cost) SG_COST_##cost,
    SG_FUNCS(SG_FN_COST)
#undef SG_FN_COST
};

static const CUresult fn_error[] = {
#define SG_FN_ERR(name, err, cost) err,
    SG_FUNCS(SG_FN_ERR)
#undef SG_FN_ERR
};

sg_state_t *sg_st(void)
{
    return &state;
}

void sg_lock(void)
{
    pthread_mutex_lock(&state.lock);
}

void sg_unlock(void)
{
    pthread_mutex_unlock(&state.lock);
}

static void load_config(void)
{
    sg_config_load(&state.cfg);
}

static uint64_t cost_ns(sg_cost_t c)
{
    const sg_config_t *cfg = &state.cfg;
    switch (c) {
    case SG_COST_FREE: return 0;
    case SG_COST_API: return cfg->api_ns;
    case SG_COST_LAUNCH: return cfg->launch_ns;
    case SG_COST_MEMCREATE: return cfg->memcreate_ns;
    case SG_COST_MEMMAP: return cfg->memmap_ns;
    case SG_COST_SETACCESS: return cfg->setaccess_ns;
    case SG_COST_UNMAP: return cfg->unmap_ns;
    case SG_COST_RESERVE: return cfg->reserve_ns;
    case SG_COST_RELEASE: return cfg->release_ns;
    }
    return 0;
}

static void fork_child(void)
{
    forked = true;
}

void sg_fork_model(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}

bool sg_forked(void)
{
    return forked;
}

CUresult sg_enter(sg_fn_t fn, sg_cost_t cost)
{
    (void)cost; /* the table is authoritative; the argument documents the call site */
    if (forked) /* error names and entry points need no device */
        return fn_cost[fn] == SG_COST_FREE ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
    pthread_once(&config_once, load_config);
    sg_lock();
    uint64_t n = ++state.st.calls[fn];
    if (state.cfg.trace)
        fprintf(stderr, "simgpu: call %s\n", sg_fn_name(fn));
    CUresult r = CUDA_SUCCESS;
    bool needs_init = fn_cost[fn] != SG_COST_FREE && fn != SG_FN_cuInit &&
                      fn != SG_FN_cuDriverGetVersion;
    bool inject = false;
    for (int i = 0; i < SG_MAX_FAILS && state.cfg.fail_nth[fn][i]; i++)
        inject |= state.cfg.fail_nth[fn][i] == n;
    if (inject)
        r = fn_error[fn];
    else if (needs_init && !state.initialized)
        r = CUDA_ERROR_NOT_INITIALIZED;
    else if (needs_init && state.sticky != CUDA_SUCCESS)
        r = state.sticky;
    else
        state.host_ns += cost_ns(fn_cost[fn]);
    sg_unlock();
    return r;
}

void sg_charge_host_backed(uint64_t device_ns, uint64_t host_ns, uint64_t mib_ns, uint64_t bytes)
{
    const uint64_t MiB = 1ull << 20;
    if (bytes > 2 * MiB)
        host_ns += (bytes - 2 * MiB) / MiB * mib_ns + (bytes - 2 * MiB) % MiB * mib_ns / MiB;
    if (host_ns <= device_ns)
        return;
    sg_lock();
    state.host_ns += host_ns - device_ns;
    sg_unlock();
}

/* Caller holds g.lock. */
void sg_hazard(const char *fmt, ...)
{
    uint64_t i = state.st.hazards++;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "simgpu: HAZARD: %s\n", buf);
    if (i < SG_MAX_HAZARD_TEXT)
        state.hazard_text[i] = strdup(buf);
}

/* Caller holds g.lock. The context is dead from here on, as on a GPU. */
void sg_fault(const char *what)
{
    state.st.faults++;
    if (state.sticky == CUDA_SUCCESS)
        fprintf(stderr, "simgpu: illegal address in %s: context is now unusable\n", what);
    state.sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
}

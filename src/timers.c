/*
 * Timers: a ring of event pairs that time work on the GPU without ever
 * waiting for it. A timer is started and stopped on a stream (its events
 * recorded there), and settled later, oldest first, once its end has
 * passed: what it timed is then handed to the caller with its tag. The
 * window times with them how long a launch reading a range in place takes,
 * and how long the range's copy takes (window_cost.c, core/cost.c).
 *
 * Oldest first: work on one stream ends in order, and a timer not ended
 * yet (or not stopped yet: its launch is being issued) holds back the
 * ones after it, settled at a later call, rather than having every call
 * query every timer. Every timer started must be stopped or dropped.
 *
 * Not thread-safe: the window's lock guards its timers.
 */
#include "device.h"

#include <stdlib.h>

#define TIMERS 128

typedef struct {
    CUevent start, end; /* made on first use, kept for reuse */
    uint64_t tag;
    enum { RUNNING, STOPPED, BROKEN } state;
} gpu_timer_t;

struct sw_timers {
    gpu_timer_t t[TIMERS];
    unsigned head, n; /* the oldest timer in use, and how many are */
};

sw_timers_t *sw_timers_new(void)
{
    return SW_REAL(cuEventElapsedTime_v2) ? calloc(1, sizeof(sw_timers_t)) : NULL;
}

void sw_timers_free(sw_timers_t *ts)
{
    if (!ts)
        return;
    for (int i = 0; i < TIMERS; i++) {
        if (ts->t[i].start)
            SW_REAL(cuEventDestroy_v2)(ts->t[i].start);
        if (ts->t[i].end)
            SW_REAL(cuEventDestroy_v2)(ts->t[i].end);
    }
    free(ts);
}

int sw_timer_start(sw_timers_t *ts, uint64_t tag, CUstream s)
{
    const sw_real_t *r = sw_real();
    if (!ts || ts->n == TIMERS)
        return -1;
    int i = (int)((ts->head + ts->n) % TIMERS);
    gpu_timer_t *t = &ts->t[i];
    if (!t->start && r->cuEventCreate(&t->start, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        t->start = NULL;
    if (!t->end && r->cuEventCreate(&t->end, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        t->end = NULL;
    if (!t->start || !t->end || r->cuEventRecord(t->start, s) != CUDA_SUCCESS)
        return -1;
    t->tag = tag;
    t->state = RUNNING;
    ts->n++;
    return i;
}

void sw_timer_stop(sw_timers_t *ts, int i, CUstream s)
{
    /* A timer that could not be stopped settles as failed. */
    if (ts && i >= 0 && i < TIMERS)
        ts->t[i].state = SW_REAL(cuEventRecord)(ts->t[i].end, s) == CUDA_SUCCESS ? STOPPED : BROKEN;
}

void sw_timers_settle(sw_timers_t *ts, void (*done)(uint64_t tag, float ms, void *arg), void *arg)
{
    const sw_real_t *r = sw_real();
    while (ts && ts->n) {
        gpu_timer_t *t = &ts->t[ts->head];
        float ms = -1;
        if (t->state == RUNNING)
            return;
        if (t->state == STOPPED) {
            CUresult q = r->cuEventQuery(t->end);
            if (q == CUDA_ERROR_NOT_READY)
                return;
            if (q != CUDA_SUCCESS ||
                r->cuEventElapsedTime_v2(&ms, t->start, t->end) != CUDA_SUCCESS)
                ms = -1;
        }
        ts->head = (ts->head + 1) % TIMERS;
        ts->n--;
        done(t->tag, ms, arg);
    }
}

void sw_timer_drop(sw_timers_t *ts, int i)
{
    if (ts && i >= 0 && i < TIMERS)
        ts->t[i].state = BROKEN;
}

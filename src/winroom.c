/*
 * Which window there is (sw_window_kind: the streaming one, window.c, or
 * the remapping one, remap.c), and the streaming window's room in each
 * device's budget: its size (given, or fitted to the allocations it could
 * stream), made when the budget first binds, and given back or made anew
 * as its verdicts say (sw_window_worth, sw_window_capture_room): the room
 * it leaves is filled at once with the host chunks used next.
 */
#include "residency.h"

#define MAX_FILL 4096

typedef struct {
    int dev;
    uint64_t want, largest;
} extent_t;

static void largest_fitting(sw_alloc_t *a, void *arg)
{
    extent_t *e = arg;
    if (a->dev == e->dev && a->size <= e->want && a->size > e->largest)
        e->largest = a->size;
}

/* The streaming window's bytes out of dev's budget: SPILLWAY_PREFETCH_BYTES
 * of it; with that option not given, fitted to the largest allocation it
 * could stream (sw_policy_window_fit): such a window is made when the
 * budget first binds, once the program's allocations so far are known,
 * and a window larger than the copies it can hold takes residency for
 * nothing (the H200's decode gave four 128 MiB layers' room to a window
 * two copies fill). Gate held exclusively. */
bool sw_winroom_fitted(void)
{
    return !sw_opts()->prefetch_bytes.set && sw_opts()->rewrite;
}

/* Whether spillway chose the size of dev's window (a device's window
 * exists for dev >= 0 only), and so may give it back or make it anew: a
 * window of a size the user gave is kept, they asked for it. */
static bool window_ours(int dev)
{
    return dev >= 0 && (sw_winroom_fitted() || sw_dev_budget_picked(dev));
}

uint64_t sw_winroom_bytes(int dev, uint64_t budget, uint64_t *slot)
{
    const sw_options_t *o = sw_opts();
    extent_t e = {.dev = dev, .want = sw_amount_resolve(&o->prefetch_bytes, budget)};
    *slot = e.want;
    if (!sw_winroom_fitted() || !sw_tracked())
        return e.want;
    sw_table_each(sw_tracked(), largest_fitting, &e);
    /* The window's size is rounded down to SW_WINDOW_ALIGN: the extent
     * is rounded up to it, or the copies it was fitted to would not fit.
     * A window fitted to two copies streams nothing bigger than one: a
     * bigger range would fill it alone, each copy then waiting for the
     * launches of the one before (4 MiB layers, the odd ones in 8 MiB
     * segments, at batch 16 and compute about equal to copy: 2.04x the
     * all-resident step with the segments streamed, 1.20x without). */
    *slot = sw_round_up(e.largest, SW_WINDOW_ALIGN);
    return sw_policy_window_fit(e.want, *slot, budget);
}

/* ---- the two strategies behind sw_window_kind ---- */

static uint64_t streaming_make(int dev, uint64_t size, uint64_t slot, uint64_t budget)
{
    (void)budget;
    return sw_window_setup(dev, size, slot, sw_tracked());
}

/* The streaming window serves a launch at its scan, never at a commit point. */
static bool streaming_commits(void)
{
    return false;
}

static void streaming_forget(sw_alloc_t *a)
{
    sw_window_forget(a->va, a->reserved);
}

static uint64_t remapping_make(int dev, uint64_t size, uint64_t slot, uint64_t budget)
{
    (void)size, (void)slot;
    return dev == sw_dev_home() ? sw_remap_setup(budget) : 0;
}

const sw_window_kind_t *sw_window_kind(void)
{
    static const sw_window_kind_t streaming = {streaming_make, streaming_commits, NULL,
                                               streaming_forget};
    static const sw_window_kind_t remapping = {remapping_make, sw_remap_on, sw_remap_commit,
                                               sw_remap_forget};
    return sw_opts()->rewrite ? &streaming : &remapping;
}

/* Makes dev's window out of its budget, if it has one. Once, whether it
 * could be made or not. */
void sw_winroom_make(int dev)
{
    uint64_t budget;
    if (!sw_dev_window_due(dev) || !sw_dev_budget(dev, &budget))
        return;
    sw_dev_window_tried(dev);
    uint64_t slot, size = sw_winroom_bytes(dev, budget, &slot);
    uint64_t made = sw_window_kind()->make(dev, size, slot, budget);
    sw_place_count(dev, SW_ON_DEVICE, (int64_t)made);
}

/* Gives dev's window back, its bytes leaving the device's count. The
 * device is synchronized first unless *synced says it is. Its bytes (0:
 * none, or it could not go). Gate held exclusively. */
static uint64_t give_window_back(int dev, bool *synced)
{
    if (!sw_window_size(dev))
        return 0;
    if (!*synced) {
        if (sw_safe_sync() != CUDA_SUCCESS)
            return 0;
        *synced = true;
    }
    uint64_t bytes = sw_window_release(dev);
    if (bytes)
        sw_place_count(dev, SW_ON_DEVICE, -(int64_t)bytes);
    return bytes;
}

/* Gives dev's window back if spillway chose to make it (a picked budget):
 * again, for the next binding to make anew; else for good. */
uint64_t sw_winroom_release_picked(int dev, bool again, bool *synced)
{
    if (!sw_dev_budget_picked(dev))
        return 0;
    uint64_t bytes = give_window_back(dev, synced);
    if (bytes && again)
        sw_dev_window_untried(dev);
    return bytes;
}

/* Chunks in the prefetch window are not the policy's to demote, and
 * another device's chunks make no room on *dev. */
bool sw_winroom_keep(const sw_chunk_t *c, void *dev)
{
    return c->slot >= 0 || c->alloc->dev != *(const int *)dev;
}

/* Brings host chunks of dev in while its budget has room, the next used
 * first: room a window gave back, which launches read in place or graph
 * replays may never ask for. Gate held exclusively, device synchronized. */
static bool not_fillable(const sw_chunk_t *c, void *dev)
{
    return c->fixed || sw_winroom_keep(c, dev);
}

/* The trades that spread dev's resident allocations among the streamed
 * ones (sw_policy_spread), made now, while the device is synchronized
 * for the room given up, rather than a loop or two later, in a
 * synchronization of their own (20 x 16 MiB layers under 128 MiB, the
 * window made one copy in step 3: step 5 took 5225 us against 4180 in
 * step 6, a trade's two moves and its wait; simgpu, 2026-11-30). */
#define SPREAD_NOW_MAX 8

static void spread_now(int dev, uint64_t now, uint64_t period)
{
    uint64_t window[SW_MAX_DEVICES] = {0};
    window[dev] = sw_window_size(dev);
    sw_pack_t m;
    for (int k = 0; k < SPREAD_NOW_MAX; k++)
        if (!sw_policy_spread(sw_tracked(), now, period, window, sw_used_at, &now, &m) ||
            !sw_trade(&m))
            return;
}

/* Fills dev's free room with the host chunks used next in the loop of
 * `period`; with none learned (0), with any, those used before first. */
static void fill_room(int dev, uint64_t now, uint64_t period)
{
    static sw_chunk_t *in[MAX_FILL];
    uint64_t room = sw_dev_room(dev);
    size_t n = period ? sw_policy_prefetch(sw_tracked(), now, period, room, not_fillable, &dev,
                                           in, MAX_FILL)
                      : sw_policy_fill(sw_tracked(), now, room, not_fillable, &dev, in,
                                       MAX_FILL);
    for (size_t i = 0; i < n && sw_move(in[i], SW_ON_DEVICE) == CUDA_SUCCESS; i++)
        ;
    if (period)
        spread_now(dev, now, period);
    sw_pool_drain(SW_ON_DEVICE);
}

/* For size > 0, makes dev's window anew at that size (ranges up to slot;
 * short_launches and lead: sw_window_resize), in place where it can,
 * else gives it back and makes another; for 0, gives it back. The room
 * it leaves is filled at once with the host chunks used next. Its bytes
 * before (0: it could not go); *made: the new window's. Gate held
 * exclusively. */
static uint64_t refit(int dev, uint64_t size, uint64_t slot, bool short_launches, uint64_t lead,
                      uint64_t now, uint64_t period, bool *synced, uint64_t *made)
{
    uint64_t bytes = sw_window_size(dev);
    *made = 0;
    if (!bytes)
        return 0;
    /* Made anew in place, the ranges it learned are kept: given back and
     * made again, it relearned their order and costs, copying ranges it
     * had found faster read in place to time them again. */
    if (size && (*synced || sw_safe_sync() == CUDA_SUCCESS)) {
        *synced = true;
        *made = sw_window_resize(dev, size, slot, short_launches, lead);
    }
    if (*made || !sw_window_size(dev)) {
        sw_place_count(dev, SW_ON_DEVICE, (int64_t)*made - (int64_t)bytes);
    } else {
        if (!(bytes = give_window_back(dev, synced)))
            return 0;
        if (size) {
            *made = sw_window_setup(dev, size, slot, sw_tracked());
            sw_place_count(dev, SW_ON_DEVICE, (int64_t)*made);
        }
    }
    fill_room(dev, now, period);
    return bytes;
}

/* Acts on the verdict `why` on dev's window: one bigger than the copies
 * of the longest range it copies it needs (two, or one where its
 * launches are short beside a copy, or one and a lead where the lead
 * outlasts them) is made anew at that size, each byte it gives up a
 * weight byte that no longer crosses the link every loop (on the H200,
 * 64 x 32 MiB layers: a 128 MiB window 1.10x the link bound, 64 MiB
 * 1.06x); any other is given back. Gate held exclusively. */
static void answer(int dev, sw_window_worth_t why, uint64_t now, uint64_t period, bool *synced)
{
    uint64_t made;
    const sw_worth_t j = sw_window_last_loop(dev); /* before refit: it may release the window */
    uint64_t slot = why == SW_WINDOW_OVERSIZED ? j.fits : 0;
    uint64_t bytes = refit(dev, slot ? j.room : 0, slot, j.copies == 1 && !j.lead, j.lead, now,
                           period, synced, &made);
    if (!bytes)
        return;
    if (made && j.lead)
        sw_info("device %d: the streaming window is one copy of the longest range it copies "
                "and a lead of %llu bytes now, %llu bytes (the longest visit it serves takes "
                "%.2f of its copy's time: each copy's lead goes while the launch before it "
                "runs, its rest after, which costs less than a copy more a loop, or than "
                "waiting for the launches it serves, %.2f of one copy's time): %llu are the "
                "resident set's",
                dev, (unsigned long long)j.lead, (unsigned long long)made, j.served_most,
                j.served_share, (unsigned long long)(bytes - made));
    else if (made && j.copies == 1)
        sw_info("device %d: the streaming window is one copy of the longest range it copies "
                "now, %llu bytes (the launches it serves in a loop take %.2f of one copy's "
                "time, each copy's rest waiting for them costs less than a copy more a loop): "
                "%llu are the resident set's",
                dev, (unsigned long long)made, j.served_share, (unsigned long long)(bytes - made));
    else if (made)
        sw_info("device %d: the streaming window is two copies of the longest range it "
                "copies now, %llu bytes%s: %llu are the resident set's",
                dev, (unsigned long long)made,
                made < 2 * slot ? " (less a part of one, so that the resident set's room is "
                                  "whole granules)"
                                : "",
                (unsigned long long)(bytes - made));
    else if (why == SW_WINDOW_UNREPAID && j.hopeless)
        sw_info("device %d: the ranges the streaming window may copy, those not faster read "
                "in place, add up to %llu bytes a loop, less than the %llu that would repay "
                "its room (at launch %llu in a loop of %llu): its %llu bytes are the resident "
                "set's now",
                dev, (unsigned long long)j.per_loop, (unsigned long long)j.bar,
                (unsigned long long)now, (unsigned long long)period, (unsigned long long)bytes);
    else if (why == SW_WINDOW_UNREPAID)
        /* The numbers say which side moved where the same program keeps
         * its window on one run and not another (the H200, 2026-11-30). */
        sw_info("device %d: the streaming window copied too little in a loop to repay its "
                "room (%llu bytes of the %llu it had to, at launch %llu in a loop of %llu; "
                "resident, its bytes save more): its %llu bytes are the resident set's now",
                dev, (unsigned long long)j.per_loop, (unsigned long long)j.bar,
                (unsigned long long)now, (unsigned long long)period, (unsigned long long)bytes);
    else
        sw_info("device %d: the streaming window %s: its %llu bytes are the resident set's now",
                dev,
                why == SW_WINDOW_IDLE       ? "served nothing for a loop"
                : why == SW_WINDOW_LOOPLESS ? "found no loop the memory agrees on, nothing to "
                                              "copy ahead of"
                                            : "could not be made smaller",
                (unsigned long long)bytes);
}

/* A capture's copies go one at a time, so its window needs one range's
 * room, where it needs any (sw_worth_capture), and every byte more is a
 * weight byte crossing the link at each replay: 20 x 16 MiB layers under
 * a 128 MiB budget, a graph of one step, 1.31x the link bound with two
 * copies' room, 1.22x with one, 1.13x with none; 20 x 64 MiB under 512
 * MiB 1.27x, 1.18x; 20 x 4 MiB at batch 256 1.73x, 1.63x (2026-11-27,
 * simgpu). Made anew before the first capture it serves: not inside one
 * (a synchronization would break it), nor once a graph holds its copies.
 * Eager work after it streams in that room too. */
void sw_capture_prepare(CUstream s)
{
    uint64_t room;
    if (sw_window_on() && sw_gate_rd()) {
        int dev = sw_window_here();
        if (window_ours(dev) && !sw_capturing() && sw_window_capture_room(dev, &room)) {
            sw_gate_wr();
            bool synced = false;
            uint64_t made, bytes = 0, now = sw_launch_now();
            if (!sw_capturing() && sw_window_here() == dev && sw_window_capture_room(dev, &room))
                bytes = refit(dev, room, room, false, 0, now, sw_period(now), &synced, &made);
            if (bytes && made)
                sw_info("device %d: a capture's copies go one at a time: the streaming window "
                        "is one range, %llu bytes: %llu are the resident set's",
                        dev, (unsigned long long)made, (unsigned long long)(bytes - made));
            else if (bytes)
                sw_info("device %d: a capture's copies go one at a time, and %s: the capture "
                        "reads in place, the streaming window's %llu bytes are the resident "
                        "set's",
                        dev,
                        room ? "the window could not be made smaller"
                             : "no range it copies was timed slower read in place than copied",
                        (unsigned long long)bytes);
            sw_gate_unwr();
        }
        sw_gate_unrd();
    }
    sw_window_capture_begins(s);
}

/* Launches between questions: idleness takes loops to show, but a window
 * not worth its room is best given back before the program's steps settle. */
#define RECLAIM_EVERY 16

void sw_window_reclaim(bool replay)
{
    static uint64_t asked;
    uint64_t now = sw_launch_now();
    if (!sw_window_on() || sw_capturing() ||
        (!replay && now - __atomic_load_n(&asked, __ATOMIC_RELAXED) < RECLAIM_EVERY))
        return;
    __atomic_store_n(&asked, now, __ATOMIC_RELAXED);
    if (!sw_gate_rd())
        return;
    /* Judged only in a loop most of the memory agrees on: a window
     * judged while the loop is still being learned has served nothing
     * yet (sw_learn_period). With none agreed on, the loop the gaps
     * suggest says how long to wait for one (SW_WINDOW_LOOPLESS). */
    uint64_t period = sw_agreed_period(now), guess = sw_period(now);
    int dev = sw_window_here();
    if (window_ours(dev) && sw_window_worth(dev, now, period, guess) != SW_WINDOW_WORTH) {
        sw_gate_wr();
        bool synced = false;
        sw_window_worth_t why;
        if (!sw_capturing() && sw_window_here() == dev &&
            (why = sw_window_worth(dev, now, period, guess)) != SW_WINDOW_WORTH)
            answer(dev, why, now, period, &synced);
        sw_gate_unwr();
    }
    sw_gate_unrd();
}

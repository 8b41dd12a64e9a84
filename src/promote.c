/*
 * Host chunks brought to the device, as the policy says: at the launch
 * that reads them in place (sw_promote_bring_in), at the next launch for
 * those a capture or a written window copy cannot move now (deferred),
 * and by trades of resident places every few launches (filling, adoption,
 * packing). Every move happens under the gate held exclusively, after one
 * synchronization (the safety rule, README).
 */
#include "launch.h"

#include <string.h>

/* keep() for promotions: what the launch at seq uses, the window's, and
 * every chunk of another device than dev, whose room is not dev's. */
typedef struct {
    uint64_t seq;
    int dev;
} keep_t;

static bool touched_now(const sw_chunk_t *c, void *arg)
{
    const keep_t *k = arg;
    return sw_learn_state(c).last_use == k->seq || c->slot >= 0 || c->alloc->dev != k->dev;
}

static const sw_link_t link = SW_LINK_DEFAULT;

/* A chunk read in place is not asked again whether it should displace a
 * colder one for this many launches: asking walks every device chunk, and
 * heat changes by halves over SW_HEAT_HALF_LIFE launches, not per launch. */
#define DISPLACE_EVERY 8

/* Whether host chunk c, touched at k->seq, would take a colder device
 * chunk's place; asked of each chunk at most once every DISPLACE_EVERY
 * launches (the hint may race with another launch's: a question asked a
 * little early or late), and of any chunk at most once every
 * sw_table_walk_every launches: in a loop read in place each launch reads
 * other chunks, and each asked. One not asked is asked at a later touch. */
static bool would_displace(sw_chunk_t *c, keep_t *k)
{
    static uint64_t walked; /* the launch that last asked; relaxed atomic */
    if (k->seq < __atomic_load_n(&c->displace_next, __ATOMIC_RELAXED))
        return false;
    /* A chunk not hot enough to displace any is answered without a walk,
     * and not asked again for DISPLACE_EVERY launches all the same: asked
     * at its next touch instead, a 2 MiB chunk of a buffer of 1 MiB
     * layers, hot by its second launch, displaced another every 12
     * launches (test_policies.c, a budget too small for two chunks). */
    if (sw_learn_state(c).uses >= SW_HOT_USES) {
        uint64_t every = sw_table_walk_every(sw_tracked(), 1);
        if (every > 1 && k->seq < __atomic_load_n(&walked, __ATOMIC_RELAXED) + every)
            return false;
        __atomic_store_n(&walked, k->seq, __ATOMIC_RELAXED);
        if (sw_policy_displace(sw_tracked(), c, k->seq, touched_now, k))
            return true;
    }
    __atomic_store_n(&c->displace_next, k->seq + DISPLACE_EVERY, __ATOMIC_RELAXED);
    return false;
}

/* Whether any host chunk this launch touches is to move, as the policy
 * says: the verdicts, taken under the shared hold. A launch that reads
 * its chunks in place, the usual case once the budget is full, so never
 * takes the gate exclusively. */
static bool worth_moving(marks_t *m, uint64_t period)
{
    const sw_options_t *o = sw_opts();
    for (int i = 0; i < m->nhost; i++) {
        sw_chunk_t *c = sw_table_lookup(sw_tracked(), m->host_va[i]);
        if (!c || c->where != SW_ON_HOST)
            continue;
        uint64_t room = sw_dev_room(c->alloc->dev);
        keep_t k = {m->seq, c->alloc->dev};
        if (o->policy == SW_POLICY_LRU) {
            /* The baseline brings in whatever it touches, making room. */
            if (sw_policy_on_touch(c, UINT64_MAX, false) == SW_VERDICT_PROMOTE)
                return true;
            continue;
        }
        if (sw_policy_on_touch_learned(c, room, false, period, &link) == SW_VERDICT_PROMOTE)
            return true;
        if (room < c->size && would_displace(c, &k))
            return true;
    }
    return false;
}

/* The learned policy's move for host chunk c, touched at k->seq: promoted
 * if the budget has room and the policy says so, or in place of a colder
 * chunk if c is hot enough to displace one. The device is synchronized
 * once per hold (*synced). Gate held exclusively. False when that
 * synchronization failed: nothing more may move in this hold. */
static bool promote_learned(sw_chunk_t *c, uint64_t period, keep_t *k, bool *synced,
                            bool *moved)
{
    uint64_t room = sw_dev_room(c->alloc->dev);
    sw_verdict_t verdict = sw_policy_on_touch_learned(c, room, sw_capturing(), period, &link);
    /* No room: a popular chunk may take a colder one's place. */
    sw_chunk_t *cold = verdict != SW_VERDICT_PROMOTE && room < c->size
                           ? sw_policy_displace(sw_tracked(), c, k->seq, touched_now, k)
                           : NULL;
    *moved = false;
    if (verdict != SW_VERDICT_PROMOTE && !cold)
        return true;
    if (!*synced && sw_safe_sync() != CUDA_SUCCESS)
        return false;
    *synced = true;
    if (cold && sw_move(cold, SW_ON_HOST) != CUDA_SUCCESS)
        return true;
    *moved = sw_move(c, SW_ON_DEVICE) == CUDA_SUCCESS;
    return true;
}

/* Moves the host chunks this launch touches to the device, as the policy
 * says. Called with the gate shared; returns with it shared. */
void sw_promote_bring_in(marks_t *m)
{
    const sw_options_t *o = sw_opts();
    const sw_window_kind_t *window = sw_window_kind();
    bool commits = window->commits();
    if (!commits && !worth_moving(m, o->policy == SW_POLICY_LEARNED ? sw_period(m->seq) : 0))
        return;
    sw_gate_unrd();
    sw_gate_wr();
    if (sw_capturing()) {
        /* A capture began since the check on the launch path: it must see
         * no synchronization (see "capture" in launch.c). */
    } else if (commits) {
        window->commit(m->host_va, m->nhost, m->seq);
    } else {
        bool synced = false, moved;
        uint64_t period = o->policy == SW_POLICY_LEARNED ? sw_period(m->seq) : 0;
        for (int i = 0; i < m->nhost; i++) {
            sw_chunk_t *c = sw_table_lookup(sw_tracked(), m->host_va[i]);
            if (!c || c->where != SW_ON_HOST)
                continue;
            keep_t k = {m->seq, c->alloc->dev};
            if (o->policy == SW_POLICY_LEARNED) {
                if (!promote_learned(c, period, &k, &synced, &moved))
                    break;
                if (moved)
                    m->host_bytes -= c->size;
                continue;
            }
            /* The baseline (LRU): make room by evicting the least recently
             * used chunks this launch does not touch, then bring it in. */
            uint64_t room = sw_dev_room(c->alloc->dev);
            if (room < c->size) {
                sw_chunk_t *v[MAX_PROMOTE];
                uint64_t freed;
                size_t n = sw_policy_victims(sw_tracked(), c->size - room, touched_now, &k,
                                             v, MAX_PROMOTE, &freed);
                if (n && !synced && sw_safe_sync() != CUDA_SUCCESS)
                    break;
                synced |= n > 0;
                for (size_t j = 0; j < n; j++)
                    sw_move(v[j], SW_ON_HOST);
                room = sw_dev_room(c->alloc->dev);
            }
            if (sw_policy_on_touch(c, room, false) != SW_VERDICT_PROMOTE)
                continue;
            if (!synced && sw_safe_sync() != CUDA_SUCCESS)
                break;
            synced = true;
            if (sw_move(c, SW_ON_DEVICE) == CUDA_SUCCESS)
                m->host_bytes -= c->size;
        }
    }
    /* A device handle a demotion pooled serves a promotion of this same
     * hold; one left over is memory no count shows, so none outlives the
     * hold (pool.c). Host handles stay for the next demotion. */
    sw_pool_drain(SW_ON_DEVICE);
    sw_gate_unwr();
    sw_gate_rd_always();
}

/* ---- promotions that wait for the next launch ----
 * A range the window serves is never read in place, so sw_promote_bring_in() never
 * asks whether it should be resident. Two kinds should: in a capture,
 * where every use of a served range is a copy of its own and nothing may
 * synchronize (a graph's replays are not launches spillway sees one by
 * one), a range used often enough to displace a colder chunk; and out of
 * one, a range whose copies its readers write, which then goes home after
 * every use (a GEMM library's workspace, written by every kernel). Their
 * chunks are noted and moved at the next launch or graph launch outside
 * any capture (the launch that noted them reads the copy); a graph's
 * copies of them then copy device memory. */
#define DEFERRED 16

static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t deferred[DEFERRED];
static int ndeferred; /* read without the lock to skip the common case */

/* Notes host chunk c, touched at launch seq, for promotion if the budget
 * has room for it or it is hot enough to displace a colder chunk (asked
 * no more often than of a chunk read in place: this runs at every served
 * use of a written range). */
static void want_promoted(sw_chunk_t *c, uint64_t seq)
{
    keep_t k = {seq, c->alloc->dev};
    if (sw_opts()->policy != SW_POLICY_LEARNED || c->where != SW_ON_HOST ||
        (sw_dev_room(c->alloc->dev) < c->size && !would_displace(c, &k)))
        return;
    pthread_mutex_lock(&deferred_lock);
    bool known = false;
    for (int j = 0; j < ndeferred && !known; j++)
        known = deferred[j] == c->va;
    if (!known && ndeferred < DEFERRED) {
        deferred[ndeferred] = c->va;
        __atomic_store_n(&ndeferred, ndeferred + 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&deferred_lock);
}

void sw_promote_defer_hot(const marks_t *m)
{
    for (int i = 0; i < m->nhost; i++) {
        sw_chunk_t *c = sw_table_lookup(sw_tracked(), m->host_va[i]);
        if (c)
            want_promoted(c, m->seq);
    }
}

/* A served range its readers write goes home after every use: the host
 * chunks of [lo, +len) are noted for promotion, asked as for any chunk
 * read in place, at the next launch (this one reads the copy). */
void sw_promote_defer_written(uint64_t lo, uint64_t len, uint64_t seq)
{
    for (uint64_t p = lo; p < lo + len;) {
        sw_chunk_t *c = sw_table_lookup(sw_tracked(), p);
        if (!c)
            return;
        want_promoted(c, seq);
        p = c->va + c->size;
    }
}

void sw_promote_deferred(void)
{
    /* Nothing may synchronize while a capture runs: not asked then. */
    if (!__atomic_load_n(&ndeferred, __ATOMIC_RELAXED) || !sw_tracking_any() || sw_capturing())
        return;
    sw_gate_wr();
    pthread_mutex_lock(&deferred_lock);
    /* Asked again once no capture runs: none can begin under the gate. */
    int n = sw_capturing() ? 0 : ndeferred;
    uint64_t va[DEFERRED];
    memcpy(va, deferred, (size_t)n * sizeof va[0]);
    if (n)
        __atomic_store_n(&ndeferred, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&deferred_lock);
    bool synced = false, moved;
    uint64_t now = sw_launch_now();
    for (int i = 0; i < n; i++) {
        sw_chunk_t *c = sw_table_lookup(sw_tracked(), va[i]);
        if (!c || c->where != SW_ON_HOST || c->va != va[i])
            continue;
        keep_t k = {now, c->alloc->dev};
        if (!promote_learned(c, sw_period(now), &k, &synced, &moved))
            break;
    }
    sw_pool_drain(SW_ON_DEVICE);
    sw_gate_unwr();
}

/* Trades of resident places, made at most every TRADE_EVERY launches,
 * all at once under one synchronization, as the core's verdicts say:
 *   filling, with a budget: room a move left free takes the fullest host
 *     chunk on the loop (sw_policy_into_room), nothing going home;
 *   adoption, with the streaming window (sw_policy_adopt): a host chunk
 *     only a pointer table in device memory reaches (sw_policy_unseen) is
 *     read in place, where the window cannot serve it; it takes the
 *     resident place of a chunk the window can stream, the one used
 *     furthest ahead;
 *   packing, with a budget: a full host chunk takes the resident places
 *     of emptier ones, the tails of allocations the granularity rounds up
 *     (sw_policy_pack): 24 layers of 5.06 MiB under 48 MiB, each a 4 MiB
 *     chunk and a 2 MiB one half empty, went from 1.20x to 1.14x their
 *     link bound on simgpu (2026-11-28); or full host chunks together
 *     take the place of one emptier chunk bigger than each.
 * Called with the gate shared; returns with it shared. */
#define TRADE_EVERY 64
#define TRADE_RETRY 8 /* after trades, or a chunk to adopt found no victim: more may follow */

typedef struct {
    sw_pack_t moves;            /* out[0..nout) go home, then in[0..nin) come */
    const char *why;            /* for the log, where a chunk goes home */
    bool spread;                /* spreading's: the window's count starts again */
} trade_t;

/* Spreading sorts the loop's chunks: asked once a loop while it finds no
 * trade, and after one, at once again. Asked from the second loop, as the
 * other trades are, before the window's first loop is judged: asked only
 * once a window had shown it repays its room, a loop later, its trades
 * fell in the bench's timed steps (prefill 1.08x -> 1.92x, decode-2M-deep
 * 1.03x -> 2.05x over steps 4-7). A window not yet seen to repay is then
 * judged as it would have been (sw_window_residency_moved): a training
 * step's, given back a loop later when its count started again, took
 * 1.19x -> 1.31x there. */
static bool spread(uint64_t now, uint64_t period, const uint64_t *window, sw_pack_t *m)
{
    static uint64_t next; /* relaxed atomic */
    if (now < __atomic_load_n(&next, __ATOMIC_RELAXED))
        return false;
    bool found = sw_policy_spread(sw_tracked(), now, period, window, sw_used_at, &now, m);
    if (!found)
        __atomic_store_n(&next, now + period, __ATOMIC_RELAXED);
    return found;
}

/* next_trade's questions to policy, which reads the learned segment
 * starts: segment_lock held. */
static bool ask_policy(uint64_t now, uint64_t period, const uint64_t *room, const uint64_t *window,
                       trade_t *t, bool *waiting)
{
    sw_pack_t *m = &t->moves;
    if ((m->in[0] = sw_policy_into_room(sw_tracked(), period, window, room))) {
        m->nin = 1;
        return true;
    }
    m->nout = sw_policy_adopt(sw_tracked(), now, window, &m->in[0], m->out);
    *waiting = m->in[0] && m->nout == 0;
    if (m->nout == 1) {
        m->nin = 1;
        t->why = "reached through a pointer table";
        return true;
    }
    if (!period)
        return false;
    t->why = "fuller";
    if (sw_policy_pack(sw_tracked(), period, window, sw_used_at, &now, m, SW_PACK_MAX))
        return true;
    t->why = "spread among the streamed";
    t->spread = true;
    return spread(now, period, window, m);
}

/* The next sw_promote_trade, asked under any hold of the gate; false: none, and
 * *waiting says whether a chunk to adopt found no victim at this launch
 * (another launch has other chunks not in use). A chunk adopted trades
 * with one of its own device, whose window streams the victim from then
 * on. Asked for a replay (sw_graph_learn), the windows count as none: a
 * graph's copies were recorded with it and nothing new is streamed, so a
 * chunk only a table reaches has no better claim than any other (adopted
 * there, tails of 1.06 MiB displaced full chunks: 24 layers of 5.06 MiB,
 * odd ones in 20 MiB segments, under 49 MiB, read 4.7 MiB a replay more). */
static bool next_trade(uint64_t now, bool replay, trade_t *t, bool *waiting)
{
    uint64_t period = sw_agreed_period(now), room[SW_MAX_DEVICES], window[SW_MAX_DEVICES];
    for (int dev = 0; dev < SW_MAX_DEVICES; dev++) {
        room[dev] = sw_dev_room(dev);
        if (room[dev] == UINT64_MAX) /* no budget: nothing to fill */
            room[dev] = 0;
        window[dev] = replay ? 0 : sw_window_size(dev);
    }
    sw_pack_t *m = &t->moves;
    m->nin = m->nout = 0;
    t->why = NULL;
    t->spread = false;
    *waiting = false;
    sw_segments_lock();
    bool any = ask_policy(now, period, room, window, t, waiting);
    sw_segments_unlock();
    return any;
}

void sw_promote_trade(uint64_t now, bool replay)
{
    /* Not before the loop has come round twice: until then a chunk no
     * argument named yet may simply not have had its turn. */
    static uint64_t next;
    static unsigned fruitless; /* checks in a row that found no trade; relaxed atomic */
    trade_t t;
    bool waiting;
    if (now < __atomic_load_n(&next, __ATOMIC_RELAXED) || !sw_dev_any_budget())
        return;
    uint64_t period = sw_period(now);
    if (!period || now < 2 * period)
        return;
    bool any = next_trade(now, replay, &t, &waiting);
    /* After `f` checks in a row that found no trade, the next waits twice
     * as long with each, up to a loop's launches. Each check walks every
     * chunk several times (free room, adoption, packing), and a loop's
     * trades are made in its first loops, after which there is nothing to
     * find until the program changes: 600 layers of 2.25 MiB, 1,200
     * chunks, paid 12,300 instructions a launch for checks every 64
     * launches that found nothing (steps 5-6; simgpu, 2026-12-03). */
    unsigned f = any ? 0 : __atomic_load_n(&fruitless, __ATOMIC_RELAXED);
    __atomic_store_n(&fruitless, any ? 0 : f + (f < 64), __ATOMIC_RELAXED);
    uint64_t every = sw_spacing_doubled(waiting ? TRADE_RETRY : TRADE_EVERY, f, period);
    __atomic_store_n(&next, now + sw_table_walk_every(sw_tracked(), every), __ATOMIC_RELAXED);
    if (!any)
        return;
    sw_gate_unrd();
    sw_gate_wr();
    bool synced = false, moved = true;
    unsigned spread_devs = 0; /* devices spreading traded on: their windows count anew, after */
    while (moved && !sw_capturing() && next_trade(now, replay, &t, &waiting) &&
           (synced || sw_safe_sync() == CUDA_SUCCESS)) {
        synced = true;
        const sw_pack_t *m = &t.moves;
        moved = sw_trade(m);
        if (t.spread)
            spread_devs |= 1u << m->out[0]->alloc->dev;
        if (moved && m->nout == 0)
            sw_debug("launch %llu: 0x%llx (%llu bytes of data) resident in free room",
                     (unsigned long long)now, (unsigned long long)m->in[0]->va,
                     (unsigned long long)sw_chunk_data(m->in[0]));
        else if (moved)
            sw_debug("launch %llu: 0x%llx (%llu bytes of data) and %zu more resident instead of "
                     "0x%llx and %zu more: %s", (unsigned long long)now,
                     (unsigned long long)m->in[0]->va, (unsigned long long)sw_chunk_data(m->in[0]),
                     m->nin - 1, (unsigned long long)m->out[0]->va, m->nout - 1, t.why);
    }
    for (int dev = 0; dev < SW_MAX_DEVICES; dev++)
        if (spread_devs & 1u << dev)
            sw_window_residency_moved(dev, now, period);
    /* Trades made, more may wait for chunks this launch uses: asked again
     * soon, as a chunk to adopt that found no victim. */
    if (synced || waiting)
        __atomic_store_n(&next, now + sw_table_walk_every(sw_tracked(), TRADE_RETRY),
                         __ATOMIC_RELAXED);
    sw_pool_drain(SW_ON_DEVICE);
    sw_gate_unwr();
    sw_gate_rd_always();
}

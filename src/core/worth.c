/*
 * Whether a streaming window is worth its room, judged loop by loop.
 *
 * The window's room is budget the resident set does not have: every byte
 * of it, resident, would save a byte of link each loop. The window keeps
 * it while it copies enough in a loop to repay it (ask->repaid times its
 * size), serves anything at all, and finds a loop to copy ahead of. The
 * mechanism (window.c) counts what it copies and asks; this file keeps
 * the clocks and gives the verdict. Pure: no CUDA, no locks (the caller
 * holds its window's).
 */
#include <math.h>

#include "../sw.h"

void sw_worth_copied(sw_worth_t *j, uint64_t len, bool repays, bool may_repay)
{
    if (repays || (may_repay && !j->judged))
        j->copied += len;
    if (len > j->longest)
        j->longest = len;
}

/* The bytes counted since j->loop_at, scaled to one loop of q->period
 * (q->now past loop_at). */
static double per_loop_of(const sw_worth_t *j, const sw_worth_ask_t *q)
{
    return (double)j->copied * (double)q->period / (double)(q->now - j->loop_at);
}

/* The bytes a loop must copy: the times its size q->repaid says, of the
 * size it would have made anew at two of its longest copies (slot) where
 * those take less room. */
static double bar_of(const sw_worth_ask_t *q, uint64_t slot)
{
    return q->repaid(q->arg) * (double)(slot && 2 * slot < q->size ? 2 * slot : q->size);
}

/* A window of one copy and a lead (sw_worth_t.lead) copies each lead
 * while the launch before it runs, its rest after: the lead is the
 * longest visit's share of its copy times this, so that a visit a little
 * longer than it was timed still ends before the lead is over. 20 x 64
 * MiB layers at batch 16, a GEMM 0.36 of a copy, under 512 MiB, steps
 * 7-10, SPILLWAY_PREFETCH_BYTES given (simgpu, 2026-12-01): a lead of
 * 0.34 of a copy (86 MiB) 16683.3 us a step, the link idling at each
 * copy's rest; 0.5 (96 MiB) 16500.1; two copies (128 MiB) 17087.9. */
#define SW_WORTH_LEAD_MARGIN 1.25

/* The lead of a window of one copy of slot bytes: the part of the next
 * copy its room holds past one, copied while the launch before it runs
 * and spillway's own work after it (SW_SERIAL_BYTES), the rest after:
 * the longest visit's share of its own copy (s->most) and that work,
 * times SW_WORTH_LEAD_MARGIN, rounded up to whole chunks (s->grain), as
 * a part of a chunk saved holds nothing resident. 0 where it would leave
 * no chunk of a second copy's room to the resident set: a range of one
 * chunk (20 x 16 MiB layers under 128 MiB, each its own chunk: 20 and
 * 24 MiB windows 4271.9 us a step, one copy 4167.2; simgpu, 2026-11-30). */
static uint64_t lead_of(const sw_served_t *s, uint64_t slot)
{
    if (!s->grain || !(s->most * SW_WORTH_LEAD_MARGIN < 1.0))
        return 0;
    /* Beside the served samples, SW_SERIAL_BYTES: core/policy.c's
     * estimate of the link a copy waiting for a launch loses besides
     * that launch (the event's wait, spillway's work after it). Not
     * measured apart here: it leaves the bench's leads as they were. */
    double part = (s->most * (double)slot + (double)SW_SERIAL_BYTES) * SW_WORTH_LEAD_MARGIN;
    uint64_t lead = sw_round_up((uint64_t)part, s->grain);
    return lead + s->grain <= slot ? lead : 0;
}

/* The room of two copies of slot bytes, trimmed so that the budget's
 * rest is whole granules (sw_policy_window_trim), where each range's
 * launches were timed shorter than the part of its copy before a trim's
 * (the rest waits for them): a prefill's GEMMs, about a copy's time,
 * made each copy wait (28 layers of 3.06 MiB at batch 16 under 34 MiB,
 * steps 6-11: 1893.7 -> 1902.4 us a step trimmed; 24 of 5.06 MiB under
 * 48 MiB 2583.9 -> 2591.8). A window fitted to two copies is made so
 * after its first loop judged, not before, when the order of its ranges
 * is still learned and a copy whose last part waits is often one copied
 * for nothing (28 layers of 3.06 MiB under 34 MiB, trimmed when made: 17
 * and 10 MiB more over the link in steps 1 and 2, 2 MiB less a step from
 * step 4; simgpu, 2026-11-30). */
static uint64_t two_copies(const sw_worth_ask_t *q, const sw_served_t *s, uint64_t slot)
{
    if (!(s->most <= 1.0 - 1.0 / SW_WINDOW_TRIM))
        return 2 * slot;
    return sw_policy_window_trim(2 * slot, slot, q->budget, q->granule);
}

/* Notes that the window is to be one copy and `lead` bytes (0: none),
 * for what it served (s). */
static void one_copy(sw_worth_t *j, const sw_served_t *s, uint64_t lead)
{
    j->copies = 1;
    j->lead = lead;
    j->served_share = s->share;
    j->served_most = s->most;
}

/* One copy and a lead where that takes less room than two copies (room),
 * decided in the loop judged that would trim them: made anew once, not
 * trimmed and then led (fewer_copies) a loop later, each costing a
 * synchronization and a refill (24 x 5.06 MiB decode layers in 2 MiB
 * chunks under 48 MiB, two streams: step 4 1875.5 us, the steps after
 * 1588.5-1598.8 against 1619.3 trimmed; simgpu, 2026-12-01). */
static void lead_instead(sw_worth_t *j, const sw_served_t *s, uint64_t slot, uint64_t *room)
{
    uint64_t lead = lead_of(s, slot);
    if (!lead || slot + lead >= *room)
        return;
    *room = slot + lead;
    one_copy(j, s, lead);
}

/*
 * Whether the latest whole loop, counted from the first question once the
 * loop is known, copied less than repaid() times the window's size; asked
 * again before the next loop's end, the same answer. The first loop
 * counted is the one in which streaming begins (a range is copied from
 * its second visit) and adoption trades places: early enough that the
 * room is resident before the program's steps settle: judged from the
 * fourth loop and asked every 64 launches, 16 x 4 MiB layers, odd ones in
 * 8 MiB segments, under 26 MiB, got their room back in the seventh step,
 * at 1.63x the link bound timed over steps 4-7, against 1.44x keeping the
 * window and 1.21x judged from the first loop known (never while a graph
 * holds copies: sw_worth_judge). The same loop notes whether two of its
 * longest copies would take less room than the window (fits).
 */
static bool unrepaid(sw_worth_t *j, const sw_worth_ask_t *q)
{
    if (q->now < q->period)
        return false;
    if (!j->loop_at) {
        j->loop_at = q->now;
        j->copied = j->longest = 0;
        return false;
    }
    /* A question older than the count (its launch read before another
     * thread's began it) would see a negative loop. */
    if (q->now < j->loop_at)
        return j->unpaid;
    if (q->now - j->loop_at >= q->period) {
        /* Scaled down to one loop: the questions come every 16 launches,
         * so a loop and up to 15 launches more are counted (1.5 loops of
         * 24 passed for one, and 12 x 16 MiB layers kept a window copying
         * three times its size). Judged at the size it would have: a
         * window made anew at two of its longest copies needs only to
         * repay those. */
        uint64_t slot = sw_round_up(j->longest, q->align);
        double per_loop = per_loop_of(j, q);
        j->copies = 2;
        j->lead = 0;
        /* Asked once for both: it walks every range. */
        const sw_served_t s = q->served ? q->served(q->arg, q->now, q->period)
                                        : (sw_served_t){.share = HUGE_VAL, .most = HUGE_VAL};
        uint64_t room = slot ? two_copies(q, &s, slot) : 0;
        if (room)
            lead_instead(j, &s, slot, &room);
        j->fits = room && room < q->size ? slot : 0;
        j->room = j->fits ? room : 0;
        double bar = bar_of(q, slot);
        j->unpaid = per_loop < bar;
        j->hopeless = false;
        j->per_loop = (uint64_t)per_loop;
        j->bar = (uint64_t)bar;
        j->copied = j->longest = 0;
        j->loop_at = q->now;
        j->judged = true;
    }
    return j->unpaid;
}

bool sw_worth_on_pace(const sw_worth_t *j, const sw_worth_ask_t *q)
{
    if (!q->period || !sw_learn_same_period(j->period, q->period))
        return false;
    if (j->judged)
        return !j->unpaid;
    if (!j->loop_at || q->now < j->loop_at || 2 * (q->now - j->loop_at) < q->period)
        return false;
    return per_loop_of(j, q) >= bar_of(q, sw_round_up(j->longest, q->align));
}

void sw_worth_moved(sw_worth_t *j)
{
    j->loop_at = 0;
    j->judged = false;
}

/* Whether fewer than two copies' room is enough, in a window on pace to
 * repay its room (one that is not is given back instead: made smaller,
 * its bar falls with it, and it could keep copying what the resident set
 * would hold better): one copy, each copy's rest waiting for the launches
 * served from the copy before, which costs a loop their time (s.share;
 * a second copy's room costs a loop one copy, SW_WORTH_ONE_COPY of it
 * counted against them); or one copy and a lead (lead_of), which costs a
 * loop the lead's bytes over the link and waits for nothing; the cheaper,
 * where it is cheaper than two copies and smaller than the window. Asked
 * a quarter loop apart from the first whole loop of the period on, not
 * waiting for a loop to be judged: a window made anew costs a
 * synchronization and a refill of the room it gives up, best paid while
 * the program's steps settle (20 x 64 MiB layers under 512 MiB, made
 * anew when the fifth step's loop was judged: steps 4-6 1.10x slower than
 * with two copies' room, steps 7-10 1.02x faster; simgpu, 2026-11-30). */
static bool fewer_copies(sw_worth_t *j, const sw_worth_ask_t *q)
{
    if (!q->served || q->now - j->period_at < q->period ||
        (j->served_asked && q->now - j->served_asked < q->period / 4) ||
        !sw_worth_on_pace(j, q))
        return false;
    j->served_asked = q->now;
    const sw_served_t s = q->served(q->arg, q->now, q->period);
    uint64_t slot = sw_round_up(s.longest, q->align), lead = lead_of(&s, slot);
    double one = s.share / SW_WORTH_ONE_COPY, led = lead ? (double)lead / (double)slot : HUGE_VAL;
    if (!slot || !(one < 1.0 || led < 1.0))
        return false;
    if (one <= led)
        lead = 0;
    if (slot + lead >= q->size)
        return false;
    j->fits = slot;
    j->room = slot + lead;
    one_copy(j, &s, lead);
    return true;
}

/* Whether the most the window may copy in a loop (q->copyable: the
 * ranges it knows not found faster read in place, each as often as
 * visited; UINT64_MAX where that is no bound) is below its bar: no loop
 * can repay its room, which it gives back now, not at the end of the
 * loop being counted. Asked a quarter loop apart (a walk over its
 * ranges), with a loop agreed on. 25 x 16 MiB layers alone in 20 MiB
 * segments under 160 MiB, each read in place faster than its segment
 * copies: given back in the fourth step, its refill and the trades after
 * it cost that step 4775 us more than the steps after it (simgpu,
 * 2026-12-01). */
static bool hopeless(sw_worth_t *j, const sw_worth_ask_t *q)
{
    if (!q->copyable || (j->copyable_asked && q->now - j->copyable_asked < q->period / 4))
        return false;
    j->copyable_asked = q->now;
    double may = (double)q->copyable(q->arg, q->now, q->period);
    double bar = bar_of(q, sw_round_up(j->longest, q->align));
    if (!(may < bar))
        return false;
    j->per_loop = (uint64_t)may;
    j->bar = (uint64_t)bar;
    j->unpaid = j->judged = j->hopeless = true;
    return true;
}

/* In the loop of q->period. A loop is judged only in the period it was
 * counted in: where the period moves (a new phase of the program), the
 * clocks start again. */
static sw_window_worth_t judge(sw_worth_t *j, const sw_worth_ask_t *q)
{
    if (!sw_learn_same_period(j->period, q->period)) {
        j->period_at = q->now;
        j->period = q->period;
        j->loop_at = 0;
        j->unpaid = false;
        j->judged = false;
        j->fits = j->room = 0;
        j->served_asked = j->copyable_asked = 0;
        return SW_WINDOW_WORTH;
    }
    uint64_t at = q->served_at < j->period_at ? j->period_at : q->served_at;
    if (q->now > at && q->now - at > SW_WINDOW_IDLE_LOOPS * q->period)
        return SW_WINDOW_IDLE;
    if (fewer_copies(j, q))
        return SW_WINDOW_OVERSIZED;
    if (hopeless(j, q) || unrepaid(j, q))
        return SW_WINDOW_UNREPAID;
    return j->fits ? SW_WINDOW_OVERSIZED : SW_WINDOW_WORTH;
}

/* Whether SW_WINDOW_NO_LOOP_PERIODS of the loop the memory's gaps suggest
 * (q->guess) went by with none agreed on: a program without a loop (the
 * experts of a MoE, picked by their router), whose copies cannot be made
 * ahead and wait at each launch. Counted from the first question with no
 * agreed loop since the last with one. */
static bool loopless(sw_worth_t *j, const sw_worth_ask_t *q)
{
    if (!j->unagreed_at || q->now < j->unagreed_at)
        j->unagreed_at = q->now;
    return q->guess && q->now - j->unagreed_at > SW_WINDOW_NO_LOOP_PERIODS * q->guess;
}

sw_window_worth_t sw_worth_judge(sw_worth_t *j, const sw_worth_ask_t *q)
{
    /* Not while a graph holds copies: they serve every replay, which the
     * window never sees (served_at, copied), and the window cannot be
     * given back or made anew under them (each asking cost a device
     * synchronization at every replay once replays taught the learner a
     * loop: 24 layers of 5.06 MiB, odd ones in 20 MiB segments, a graph
     * under 49 MiB). */
    if (q->graphs)
        return SW_WINDOW_WORTH;
    if (q->period) {
        j->unagreed_at = 0;
        return judge(j, q);
    }
    return loopless(j, q) ? SW_WINDOW_LOOPLESS : SW_WINDOW_WORTH;
}

/*
 * The room a capture's window needs. A capture's copies go one at a time,
 * each after everything captured before it, so none is made ahead of its
 * launch: each repays only the difference between its range read in place
 * and its copy, and the room it takes from the resident set crosses the
 * link at every replay. So the window keeps one range's room (slot) only
 * where its ranges were timed slower read in place than the link rates
 * make them (q->repaid below SW_COST_REPAID: a GEMM re-reading its weight,
 * 20 x 4 MiB at batch 256 a replay in 1.49 ms with it, 2.22 ms without);
 * with no such evidence, kernels that read a weight once, or a capture
 * before any eager step, none: the 48 layouts decode under a graph
 * at 1.24-1.55x the link bound with one range, 1.15-1.29x with none
 * (simgpu, 2026-11-29).
 */
uint64_t sw_worth_capture(const sw_worth_ask_t *q, uint64_t slot)
{
    return q->repaid(q->arg) < SW_COST_REPAID ? slot : 0;
}

/*
 * The streaming window and work on home it does not serve: a copy, a
 * memset, a stream memory operation, a launch read in place or a free
 * drops the copies of what it may write or free, ordered after their
 * fills and readers, and forgets home's fingerprint.
 */
#include "window.h"

/* Work on s during a capture the window serves on another stream: the
 * capture's copies belong to the graph, not to s. Lock held. */
bool sw_win_foreign(win_t *w, CUstream s)
{
    return w->origin && s != w->origin;
}

/* Work on a stream other than the capture's origin (one the capture
 * forked into, say) writes home in [lo, +len): the capture's copies of it
 * are stale for what the origin reads after joining it, so they are
 * dropped, and the next use copies again. No order is needed here: each
 * copy went home right after its readers on the origin, before any fork
 * after them, and the next fill follows the origin (sw_win_after_app). Lock held. */
static void drop_captured(win_t *w, uint64_t lo, uint64_t len)
{
    for (int i = 0; i < w->top; i++) {
        entry_t *e = &w->entries[i];
        if (e->unit >= 0 && !e->pins &&
            overlaps(lo, len, w->units[e->unit].start, w->units[e->unit].len))
            sw_win_drop_entry(w, e);
    }
}

/* Home of unit i may have been written in place: its fingerprint is
 * forgotten, so that its next way home copies it whole. Not yet where a
 * launch on another thread is about to read its copy (pinned): that
 * launch's way home must compare with the fingerprint its fill took, or
 * it would send the copy's old bytes over the new ones, though the
 * launch wrote nothing. Such a copy, stale now, goes at its last unpin
 * (unpin, window_use.c), and the fingerprint with it. Lock held. */
void sw_win_home_changed(win_t *w, int i)
{
    unit_t *u = &w->units[i];
    if (u->entry >= 0 && w->entries[u->entry].pins)
        w->entries[u->entry].stale = true;
    else
        u->fp_known = false;
}

/* Home's fingerprint of every unit is forgotten: what wrote home is not
 * known (a replay, a copy of unknown ranges), or what host state says was
 * taken belongs to a graph that may never run. Lock held. */
void sw_win_forget_fingerprints(win_t *w)
{
    for (int i = 0; i < w->nunits; i++)
        sw_win_home_changed(w, i);
}

/* Every copy is dropped, s after its fill and its readers, and every
 * fingerprint of home forgotten: s may write any home. Lock held. */
void sw_win_flush_all(win_t *w, CUstream s)
{
    sw_win_drop_for_write(w, 0, UINT64_MAX, s);
    sw_win_forget_fingerprints(w);
}

/* Home of [lo, +len) is on one device, but work of any device may write
 * it (a peer copy), so every window is asked: s waits for another
 * device's events as well as its own (cuStreamWaitEvent crosses devices). */
void sw_window_touch(uint64_t lo, uint64_t len, CUstream s)
{
    if (!sw_window_busy() || !len)
        return;
    win_t *w;
    for (int d = -1; (w = sw_win_next(&d));) {
        pthread_mutex_lock(&w->lock);
        /* Home may be written: copies of it are stale once it is, and
         * its fingerprint is no longer known. */
        if (!sw_win_foreign(w, s))
            sw_win_drop_for_write(w, lo, len, s);
        else
            drop_captured(w, lo, len);
        for (int i = 0; i < w->nunits; i++)
            if (w->units[i].live && overlaps(lo, len, w->units[i].start, w->units[i].len))
                sw_win_home_changed(w, i);
        /* In a capture, cst rejoins the origin before every fill, so the
         * next fill follows this write: at once when s is the origin, and
         * when s is a stream the capture forked into, once the origin has
         * joined it back (as a program does before it reads what s wrote). */
        pthread_mutex_unlock(&w->lock);
    }
}

void sw_window_touch_memops(unsigned n, const CUstreamBatchMemOpParams *ops, CUstream s)
{
    for (unsigned i = 0; ops && i < n; i++) {
        switch (ops[i].operation) {
        case CU_STREAM_MEM_OP_WRITE_VALUE_32:
            sw_window_touch(ops[i].writeValue.address, 4, s);
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_64:
            sw_window_touch(ops[i].writeValue.address, 8, s);
            break;
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
            sw_window_touch(ops[i].waitValue.address, 4, s);
            break;
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
            sw_window_touch(ops[i].waitValue.address, 8, s);
            break;
        default: /* barriers and flushes name no memory */
            break;
        }
    }
}

void sw_window_flush(CUstream s)
{
    if (!sw_window_busy())
        return;
    win_t *w;
    for (int d = -1; (w = sw_win_next(&d));) {
        pthread_mutex_lock(&w->lock);
        if (!sw_win_foreign(w, s))
            sw_win_flush_all(w, s);
        pthread_mutex_unlock(&w->lock);
    }
}

void sw_window_forget(uint64_t lo, uint64_t len)
{
    win_t *w;
    for (int d = -1; (w = sw_win_next(&d));) {
        pthread_mutex_lock(&w->lock);
        for (int i = 0; i < w->nunits; i++) {
            unit_t *u = &w->units[i];
            if (!u->live || !overlaps(lo, len, u->start, u->len))
                continue;
            if (u->entry >= 0)
                sw_win_drop_entry(w, &w->entries[u->entry]);
            sw_win_unit_end(w, i);
        }
        for (int i = 0; i < w->nunits; i++) {
            unit_t *u = &w->units[i];
            if (u->live && u->next >= 0 && !w->units[u->next].live)
                u->next = -1;
            if (u->live && u->next_within >= 0 && !w->units[u->next_within].live)
                u->next_within = -1;
        }
        if (w->last >= 0 && !w->units[w->last].live)
            w->last = -1;
        pthread_mutex_unlock(&w->lock);
    }
}

/*
 * The streaming window in captures and replays. A capture on one stream,
 * the origin, streams like eager work: the same copies, fences and
 * rewrites go into the capture, on cst, which joins it through events
 * recorded on the origin. Every replay then streams, with no host
 * involvement. The capture starts with an empty window (every copy went
 * home first) and ends with every copy it made on its way home and cst
 * joined back to the origin, so each replay leaves home right and the
 * window free. A graph is built to stay right when the program later
 * changes a kernel node to write a home in place (graphnodes.c): each of
 * its copies serves one launch, each fill follows everything before it
 * on the origin and takes home's fingerprint anew. Work on other streams
 * during the capture, and a second capture at once, read in place.
 * Afterwards eager work and replays take turns: eager copies wait for the
 * application's streams, the replay's among them (its stream is noted),
 * and each replay waits for eager copies and for the replay before it
 * that used the window.
 */
#include "window.h"

/* The chains of copies home start again: an event recorded inside a
 * capture may not be waited for outside it, nor one from outside inside.
 * Lock held. */
static void unchain(win_t *w)
{
    for (int i = 0; i < w->nunits; i++)
        w->units[i].homed_on = NULL;
}

void sw_window_capture_begins(CUstream s)
{
    if (!sw_window_on() || !sw_gate_rd())
        return;
    win_t *w;
    for (int d = -1; (w = sw_win_next(&d));) {
        pthread_mutex_lock(&w->lock);
        if (!w->origin)
            sw_win_flush_all(w, s);
        pthread_mutex_unlock(&w->lock);
    }
    sw_gate_unrd();
}

/* The capture is served by the window of the current context's device,
 * the one its launches run on. */
void sw_window_captured(CUstream s, CUresult r)
{
    win_t *w = r == CUDA_SUCCESS ? sw_win_get(sw_window_here()) : NULL;
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    if (!w->origin && w->cst && __atomic_load_n(&w->live, __ATOMIC_RELAXED) == 0) {
        unchain(w);
        w->origin = s;
        w->cst_in = false;
        w->broken = false;
        w->side = w->cst;
        w->head = 0;
    }
    pthread_mutex_unlock(&w->lock);
}

bool sw_window_capture_ends(CUstream s)
{
    const sw_real_t *r = sw_real();
    bool broken = false;
    win_t *w;
    for (int d = -1; (w = sw_win_next(&d));) {
        pthread_mutex_lock(&w->lock);
        if (w->origin && w->origin == s) {
            broken |= w->broken;
            bool used = false;
            /* Home is current (each read sent its copy home on s); the
             * copies belong to the graph from now on. */
            for (int i = 0; i < w->top; i++)
                if (w->entries[i].unit >= 0) {
                    used = true;
                    sw_win_drop_entry(w, &w->entries[i]);
                }
            /* cst rejoins the origin, or the capture would end unjoined. */
            if (w->cst_in && !w->broken &&
                (r->cuEventRecord(w->done, w->cst) != CUDA_SUCCESS ||
                 r->cuStreamWaitEvent(s, w->done, 0) != CUDA_SUCCESS))
                sw_error("cannot join spillway's capture stream back: the capture will fail");
            unchain(w);
            sw_win_forget_fingerprints(w);
            w->graphs |= used;
            w->origin = NULL;
            w->side = w->st;
            w->head = 0;
        }
        pthread_mutex_unlock(&w->lock);
    }
    return broken;
}

/* Before a replay on s, w's copies go home: the graph's kernels read
 * homes in place, and its own copies may lie where they are. A window
 * serving a capture on another stream holds only that capture's copies,
 * which nothing runs yet: waiting for their events would pull the replay
 * into the capture. Lock held. */
static void before_replay(win_t *w, CUstream s)
{
    if (!sw_win_foreign(w, s))
        sw_win_flush_all(w, s);
    else
        sw_win_forget_fingerprints(w);
}

/* Two replays of graphs holding copies of one window must not overlap:
 * they use the same space. Every window sends its copies home first; one
 * that holds graphs' copies also orders the replay after its latest
 * replay, and keeps its lock from its copies' flush to the replay's
 * record, so that no launch on another thread fills a copy into the space
 * the graph's copies use before the replay is issued (once it is, each
 * fill comes after s: sw_win_after_app), and no other replay waits on the
 * record before this one. Which window a graph's copies are in is not
 * asked of the context current now, which need not be the one the graph
 * was captured in: every window holding graphs' copies orders it, their
 * locks taken in device order, so that two replays never each hold a lock
 * the other waits for. */
CUresult sw_window_replay(CUresult (*launch)(CUgraphExec, CUstream), CUgraphExec g, CUstream s)
{
    if (!launch)
        return CUDA_ERROR_NOT_FOUND;
    if (!sw_gate_rd())
        return launch(g, s);
    const sw_real_t *r = sw_real();
    CUresult e = CUDA_SUCCESS;
    win_t *w, *here = sw_win_get(sw_window_here()), *held[SW_MAX_DEVICES];
    int nheld = 0;
    sw_streams_note(s);
    for (int d = -1; (w = sw_win_next(&d));) {
        pthread_mutex_lock(&w->lock);
        before_replay(w, s);
        if (w->graphs) {
            held[nheld++] = w;
            continue;
        }
        if (w == here)
            __atomic_add_fetch(&w->idle_replays, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&w->lock);
    }
    /* Not ordered, the replay is not launched. */
    for (int i = 0; i < nheld && e == CUDA_SUCCESS; i++)
        e = sw_win_order_after(held[i], s, held[i]->replayed);
    if (e == CUDA_SUCCESS)
        e = launch(g, s);
    for (int i = 0; i < nheld; i++) {
        /* Unrecorded, the next replay could not wait for this one. */
        if (e == CUDA_SUCCESS && r->cuEventRecord(held[i]->replayed, s) != CUDA_SUCCESS)
            r->cuStreamSynchronize(s);
        pthread_mutex_unlock(&held[i]->lock);
    }
    sw_gate_unrd();
    return e;
}

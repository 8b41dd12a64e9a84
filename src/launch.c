/*
 * The launch path: which tracked chunks a kernel's arguments point into,
 * when they were last used, and whether to bring a host chunk back first.
 *
 *   nothing tracked ──► call the driver (no lock, no scan)
 *   otherwise       ──► gate shared, layout (cached per function), scan
 *                       every 8-byte word and look up every TMA
 *                       descriptor (tensormap.c), stamp the chunks hit (a
 *                       pointer's whole segment at once) with the launch
 *                       sequence number, launch, release the gate.
 *
 * A launch that touches a host chunk runs correctly as it is (zero-copy);
 * when a GPU budget is set and has room, the chunk is promoted first.
 * Under capture nothing is promoted (it would synchronize).
 *
 * FILES. launch.c (this one): the entry points, a launch marked, served
 * and promoted in that order, captures ended and replays shown to the
 * learner; marks.c: what a launch names; serve.c: its ranges read from
 * window copies; promote.c: host chunks brought in, and trades;
 * layouts.c: kernel handles and their parameter layouts. Shared types:
 * launch.h.
 */
#include "launch.h"

/* This thread's runtime wrapper, if one is calling the real runtime
 * (residency.h, sw_rt_state_t). */
static __thread sw_rt_state_t rt_state;

sw_rt_state_t *sw_rt_state(void)
{
    return &rt_state;
}

static bool stream_capturing(CUstream s);

/* A TMA descriptor spillway saw made names its tensor's address where no
 * word of the arguments does: learned from as a pointer word is. Where
 * each lies is kept in m, for retarget() to re-make it for a window copy. */
static void learn_descriptors(const sw_layout_t *l, void **params, const void *buf, size_t len,
                              marks_t *m)
{
    m->ndesc = sw_tmap_locate(sw_tmaps(), l, params, buf, len, m->desc, MAX_DESCRIPTORS);
    for (size_t i = 0; i < m->ndesc; i++)
        sw_marks_hit(m->desc[i].v.addr, m);
    if (m->ndesc)
        sw_stat_add(SW_STAT_descriptors_recognised, (int64_t)m->ndesc);
}

void sw_mark(CUfunction f, void ***pparams, void ***pextra, CUstream s)
{
    const sw_layout_t *l = sw_layout(f);
    sw_promote_deferred();
    marks_t m;
    sw_marks_begin(&m, sw_launch_next());
    void **params = *pparams, **extra = *pextra;
    sw_stat_add(SW_STAT_launches, 1);
    sw_streams_note(s);
    if (!l) {
        /* Its arguments are unknown: it may write any range's home in
         * place, so every window copy goes home first, as for a copy
         * whose ranges are unknown (SW_GATED_IO_ALL). */
        sw_window_flush(s);
        return;
    }
    /* A launch into a capture recorded for its replays (sw_graph_learn). */
    m.recording = sw_recording_on() && stream_capturing(s);
    const void *buf = NULL;
    size_t len = 0;
    if (params)
        sw_scan_args(l, params, NULL, 0, sw_marks_hit, &m);
    else if (extra && sw_extra_buffer(extra, &buf, &len))
        sw_scan_args(l, NULL, buf, len, sw_marks_hit, &m);
    learn_descriptors(l, params, buf, len, &m);
    /* Allocations past use[] are read in place, and may be written there:
     * no copy of them may stay to be read stale later. */
    if (m.overflow)
        sw_window_flush(s);
    /* In a capture every use of a range the window serves is a copy of
     * its own: a range used often enough to displace a colder chunk is
     * noted before sw_serve() takes it off the host list, to be promoted
     * once the capture is over. */
    if (m.host && sw_capturing() && sw_dev_any_budget())
        sw_promote_defer_hot(&m);
    if (m.nuse) {
        /* Before sw_serve(): a window given back must hold no copy this
         * launch is about to read. */
        if (!sw_capturing())
            sw_window_reclaim(false);
        sw_serve(&m, l, pparams, pextra, s);
    }
    if (m.recording)
        sw_record_launch(sw_marks_at_home, &m);
    /* Trades are asked at launches that read host memory, in place or
     * through the window: where a trade can change what crosses the link. */
    if ((m.nuse || m.host) && !sw_capturing())
        sw_promote_trade(m.seq, false);
    if (m.window && !m.host)
        sw_stat_add(SW_STAT_prefetch_hits, 1);
    if (!m.host)
        return;
    sw_stat_add(SW_STAT_launches_touching_host, 1);
    /* Under capture nothing may synchronize; without a budget there is no
     * room to bring anything into but what OOM left. */
    if (!sw_capturing() && sw_dev_any_budget())
        sw_promote_bring_in(&m);
    if (m.host_bytes)
        sw_stat_add(SW_STAT_bytes_zero_copy_estimated, (int64_t)m.host_bytes);
}

/* A launch with nothing tracked: counted, not scanned. */
static void count_unscanned(void)
{
    if (!sw_opts()->disable)
        sw_stat_add(SW_STAT_launches, 1);
}

/* True when a runtime wrapper on this thread owns this launch: it holds
 * the gate and has scanned (or, when it could not name the function,
 * leaves the scan to this, its driver-level twin). */
static bool from_runtime(CUfunction f, void ***params, void ***extra, CUstream s)
{
    sw_rt_state_t *rt = sw_rt_state();
    if (!rt->inside)
        return false;
    if (!rt->handled) {
        if (rt->gated)
            sw_mark(f, params, extra, s);
        else
            count_unscanned();
        rt->handled = true;
    }
    return true;
}

CUresult sw_launch(sw_launch_fn real, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                   unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s,
                   void **params, void **extra)
{
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    if (from_runtime(f, &params, &extra, s)) {
        CUresult r = real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
        sw_window_read(s, r == CUDA_SUCCESS);
        return r;
    }
    if (!sw_gate_rd()) {
        count_unscanned();
        return real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
    }
    sw_mark(f, &params, &extra, s);
    CUresult r = real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
    sw_window_read(s, r == CUDA_SUCCESS);
    sw_gate_unrd();
    return r;
}

/* cuLaunchCooperativeKernel takes cuLaunchKernel's parameters less
 * `extra`, so it goes through sw_launch by way of an adapter that calls
 * this thread's real function. */
static __thread sw_coop_fn coop_real;

static CUresult call_cooperative(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                 unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                 CUstream s, void **params, void **extra)
{
    (void)extra; /* NULL: sw_launch_cooperative passes none */
    return coop_real(f, gx, gy, gz, bx, by, bz, shmem, s, params);
}

CUresult sw_launch_cooperative(sw_coop_fn real, CUfunction f, unsigned gx, unsigned gy,
                               unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                               CUstream s, void **params)
{
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    coop_real = real;
    return sw_launch(call_cooperative, f, gx, gy, gz, bx, by, bz, shmem, s, params, NULL);
}

CUresult sw_launch_ex(sw_launch_ex_fn real, const CUlaunchConfig *config, CUfunction f,
                      void **params, void **extra)
{
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    CUstream st = config ? config->hStream : NULL;
    if (from_runtime(f, &params, &extra, st)) {
        CUresult r = real(config, f, params, extra);
        sw_window_read(st, r == CUDA_SUCCESS);
        return r;
    }
    if (!sw_gate_rd()) {
        count_unscanned();
        return real(config, f, params, extra);
    }
    sw_mark(f, &params, &extra, st);
    CUresult r = real(config, f, params, extra);
    sw_window_read(st, r == CUDA_SUCCESS);
    sw_gate_unrd();
    return r;
}

/* cuLaunchCooperativeKernelMultiDevice (deprecated): a kernel on each of
 * n devices, each on its own stream, arguments unscanned. As for a kernel
 * whose layout is unknown, every window copy goes home first, each
 * launch's stream after it, and the gate is held, so that no chunk is
 * remapped under the kernels. */
CUresult sw_launch_multi_device(sw_multi_fn real, CUDA_LAUNCH_PARAMS *list, unsigned n,
                                unsigned flags)
{
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    bool gated = sw_gate_rd();
    for (unsigned i = 0; gated && list && i < n; i++)
        sw_window_flush(list[i].hStream);
    CUresult r = real(list, n, flags);
    if (gated)
        sw_gate_unrd();
    return r;
}

/* ---- capture ----
 * Moves synchronize, and a synchronization inside a capture invalidates
 * it. Every move happens under the gate held exclusively, after a check
 * of sw_capturing() made under that same hold; a capture begins, and is
 * counted, with writers excluded (SW_CAPTURE_BEGIN), which an exclusive
 * hold also does. So either the begin comes first, and the move's check
 * sees it, or the move's synchronization is over before the capture
 * begins: a begin on one thread can never fall between another thread's
 * check and its synchronization. The begin does not wait for launches
 * (readers), which never synchronize. Ends need no such order: counting a
 * capture a little longer only skips moves. */

/* Whether the driver says s is capturing (active or invalidated, both of
 * which an end finishes). false when it cannot say. */
static bool stream_capturing(CUstream s)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    const sw_real_t *r = sw_real();
    return r->cuStreamIsCapturing && r->cuStreamIsCapturing(s, &st) == CUDA_SUCCESS &&
           st != CU_STREAM_CAPTURE_STATUS_NONE;
}

CUresult sw_capture_end(CUresult (*end)(CUstream, CUgraph *), CUstream s, CUgraph *g,
                        bool per_thread)
{
    if (!end)
        return CUDA_ERROR_NOT_FOUND;
    /* The per-thread default stream, named so that the legacy query finds it. */
    CUstream q = per_thread && !s ? CU_STREAM_PER_THREAD : s;
    bool was = stream_capturing(q);
    /* Shared, so that no window is released (under the exclusive gate)
     * while its capture state changes: the count of captures keeps
     * sw_window_release away only from one it counted, and an end may
     * come on a stream that was not capturing. */
    sw_gate_rd_always();
    bool broken = sw_window_capture_ends(q);
    sw_gate_unrd();
    CUresult r = end(s, g);
    /* Success and invalidation always end it; another error (an unjoined
     * fork, out of memory) may or may not: the stream says. */
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED ||
        (was && !stream_capturing(q))) {
        sw_capture_over();
        sw_record_over(r == CUDA_SUCCESS && !broken && g ? *g : NULL);
    }
    /* The window broke the capture (a copy home or a fence could not be
     * issued into it) and the driver did not see it invalidated: its
     * graph would lose bytes, so the application is told what the driver
     * says of an invalidated capture. The graph is left to it: with
     * cuStreamBeginCaptureToGraph it is the application's own. */
    if (broken && r == CUDA_SUCCESS) {
        sw_error("a window step failed inside the capture: it is invalidated");
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    return r;
}

/* ---- replays ----
 * A graph launch runs the captured launches again without a call spillway
 * sees, so the learner is shown them here, before it: each recorded launch
 * is marked as its capture marked it (stamps, segment starts, the host
 * chunks it reads), then asked what a launch is asked, promotions and
 * trades. Not the window's questions: a graph's copies were recorded with
 * it. */
void sw_graph_learn(CUgraphExec g)
{
    /* Nothing on the host: nothing a replay reads could move. */
    if (sw_capturing() || sw_opts()->policy != SW_POLICY_LEARNED || !sw_dev_any_budget() ||
        !sw_stat_get(SW_STAT_host_bytes))
        return;
    sw_recording_t *rec = sw_recording_of(g);
    if (!rec)
        return;
    if (sw_gate_rd()) {
        for (uint32_t i = 0, n = sw_recording_launches(rec); i < n; i++) {
            marks_t m;
            sw_marks_begin(&m, sw_launch_next());
            uint32_t nw;
            const uint64_t *w = sw_recording_words(rec, i, &nw);
            for (uint32_t k = 0; k < nw; k++)
                sw_marks_hit(w[k], &m);
            if (!m.host)
                continue;
            if (!sw_capturing())
                sw_promote_bring_in(&m);
            sw_promote_trade(m.seq, true);
        }
        sw_gate_unrd();
    }
    sw_recording_put(rec);
}

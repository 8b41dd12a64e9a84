/*
 * diff_graph.c: sg-diff's stream captures and graph replays.
 *
 * A capture records two to six kernels, asynchronous copies and memsets
 * on one stream; half the time the middle of them runs on a second
 * stream, forked from the first by an event and joined back by another,
 * so the graph has two lanes whose nodes are ordered end to end. The
 * operations are drawn by the same code as eager ones (diff_ops.c);
 * diff_touch sees st->capturing and collects the buffers instead of
 * ordering them. What a graph's nodes need from the host is made before
 * the capture begins, since a capture allows no allocation and no
 * synchronous copy: its pinned source bytes, and half the time a pointer
 * table.
 */
#include <stdlib.h>

#include "diff.h"

static int replay(diff_t *st, diff_graph_t *g, int s)
{
    for (int i = 0; i < g->nbufs; i++) {
        int rc = diff_touch(st, s, g->bufs[i]);
        if (rc != DIFF_OK)
            return rc;
    }
    DCK(st, st->d.GraphLaunch(g->exec, st->stream[s]));
    st->counts[9]++;
    return DIFF_OK;
}

/* What the graph needs from the host, made before its capture: touches
 * made now only count the table's weights as the graph's. */
static int prepare(diff_t *st, diff_graph_t *g)
{
    DCK(st, st->d.MemAllocHost(&g->host, DIFF_GRAPH_HOST));
    diff_random_words(st, g->host, DIFF_GRAPH_HOST);
    if (!diff_chance(st, 50))
        return DIFF_OK;
    int rc = diff_table_new(st, &g->table);
    if (rc != DIFF_OK || !g->table.table)
        return rc;
    g->has_table = true;
    st->capturing = g;
    for (uint32_t i = 0; i < g->table.n && rc == DIFF_OK; i++)
        rc = diff_touch(st, 0, g->table.entry[i]);
    st->capturing = NULL;
    return rc;
}

/* Moves the capture from stream from to stream to, through ev. */
static int hand_over(diff_t *st, CUevent ev, int from, int to)
{
    DCK(st, st->d.EventRecord(ev, st->stream[from]));
    DCK(st, st->d.StreamWaitEvent(st->stream[to], ev, 0));
    return DIFF_OK;
}

static int record(diff_t *st, diff_graph_t *g)
{
    int s = (int)diff_range(st, 1, DIFF_STREAMS - 1);
    int s2 = 1 + (s % (DIFF_STREAMS - 1)); /* another non-default stream */
    int n = (int)diff_range(st, 2, 6);
    bool fork = diff_chance(st, 50);
    int fork_at = fork ? (int)diff_range(st, 0, n - 1) : n;
    int join_at = fork ? (int)diff_range(st, fork_at + 1, n) : n;
    DCK(st, st->d.StreamBeginCapture(st->stream[s], CU_STREAM_CAPTURE_MODE_GLOBAL));
    st->capturing = g;
    int rc = DIFF_OK;
    for (int i = 0; i < n && rc == DIFF_OK; i++) {
        if (i == fork_at)
            rc = hand_over(st, st->fork_ev, s, s2);
        int on = i >= fork_at && i < join_at ? s2 : s;
        if (rc == DIFF_OK)
            rc = diff_chance(st, 65) ? diff_kernel_on(st, on) : diff_transfer_on(st, on);
        if (rc == DIFF_OK && fork && i + 1 == join_at)
            rc = hand_over(st, st->join_ev, s2, s);
    }
    st->capturing = NULL;
    if (rc != DIFF_OK)
        return rc;
    DCK(st, st->d.StreamEndCapture(st->stream[s], &g->graph));
    DCK(st, st->d.GraphInstantiateWithFlags(&g->exec, g->graph, 0));
    return DIFF_OK;
}

int diff_op_capture(diff_t *st)
{
    if (st->nbufs < 2)
        return DIFF_OK;
    if (st->ngraphs == DIFF_GRAPHS) {
        int rc = diff_graph_destroy(st, (int)diff_range(st, 0, DIFF_GRAPHS - 1));
        if (rc != DIFF_OK)
            return rc;
    }
    diff_graph_t *g = calloc(1, sizeof *g);
    if (!g)
        return DIFF_NOMEM;
    st->graphs[st->ngraphs++] = g; /* destroyed with the rest on failure */
    st->counts[8]++;
    int rc = prepare(st, g);
    if (rc == DIFF_OK)
        rc = record(st, g);
    for (int k = (int)diff_range(st, 1, 2); k > 0 && rc == DIFF_OK; k--)
        rc = replay(st, g, (int)diff_range(st, 0, DIFF_STREAMS - 1));
    return rc;
}

int diff_op_replay(diff_t *st)
{
    if (st->ngraphs == 0)
        return DIFF_OK;
    diff_graph_t *g = st->graphs[diff_range(st, 0, (uint64_t)st->ngraphs - 1)];
    return replay(st, g, (int)diff_range(st, 0, DIFF_STREAMS - 1));
}

int diff_op_graph_destroy(diff_t *st)
{
    if (st->ngraphs == 0)
        return DIFF_OK;
    return diff_graph_destroy(st, (int)diff_range(st, 0, (uint64_t)st->ngraphs - 1));
}

/* After a synchronize: its replays may still read its table and host
 * bytes. */
int diff_graph_destroy(diff_t *st, int i)
{
    diff_graph_t *g = st->graphs[i];
    int rc = diff_sync_all(st);
    if (rc != DIFF_OK)
        return rc;
    if (g->exec)
        DCK(st, st->d.GraphExecDestroy(g->exec));
    if (g->graph)
        DCK(st, st->d.GraphDestroy(g->graph));
    if (g->has_table)
        DCK(st, st->d.MemFree(g->table.table));
    if (g->host)
        DCK(st, st->d.MemFreeHost(g->host));
    for (int k = 0; k < g->nbufs; k++)
        g->bufs[k]->graph_refs--;
    st->graphs[i] = st->graphs[--st->ngraphs];
    free(g);
    return DIFF_OK;
}

/*
 * diff_order.c: what makes sg-diff's result independent of timing: the
 * generator, the checksum, the per-buffer ordering of streams and the host
 * bytes of asynchronous copies (see diff.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"

uint64_t diff_rand(diff_t *st)
{
    uint64_t z = (st->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t diff_range(diff_t *st, uint64_t lo, uint64_t hi)
{
    return lo + diff_rand(st) % (hi - lo + 1);
}

bool diff_chance(diff_t *st, unsigned pct)
{
    return diff_rand(st) % 100 < pct;
}

void diff_fold(diff_t *st, const void *bytes, uint64_t n)
{
    const unsigned char *p = bytes;
    uint64_t h = st->hash;
    for (uint64_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001B3ull;
    }
    st->hash = h;
}

void diff_fold_u64(diff_t *st, uint64_t v)
{
    diff_fold(st, &v, sizeof v);
}

void diff_random_words(diff_t *st, void *dst, uint64_t bytes)
{
    unsigned char *p = dst;
    uint64_t i = 0;
    for (; i + 4 <= bytes; i += 4) {
        float f = (float)((int)(diff_rand(st) & 0xFF) - 128) / 64.0f;
        memcpy(p + i, &f, 4);
    }
    for (; i < bytes; i++)
        p[i] = (unsigned char)diff_rand(st);
}

/* Accesses to one buffer form a chain: each waits for the one before it.
 * Waiting for the stream that touched it last suffices, since that
 * stream's access itself waited for the one before. */
int diff_touch(diff_t *st, int s, diff_buf_t *b)
{
    if (st->trace)
        fprintf(stderr, "diff: touch buffer %u [0x%llx, +%llu) on stream %d%s\n", b->id,
                (unsigned long long)b->ptr, (unsigned long long)b->bytes, s,
                st->capturing ? " (capture)" : "");
    if (st->capturing) {
        diff_graph_t *g = st->capturing;
        for (int i = 0; i < g->nbufs; i++)
            if (g->bufs[i] == b)
                return DIFF_OK;
        g->bufs[g->nbufs++] = b;
        b->graph_refs++;
        return DIFF_OK;
    }
    if (b->last >= 0 && b->last != s) {
        DCK(st, st->d.EventRecord(st->ev[b->last], st->stream[b->last]));
        DCK(st, st->d.StreamWaitEvent(st->stream[s], st->ev[b->last], 0));
    }
    b->last = s;
    return DIFF_OK;
}

void *diff_pending_new(diff_t *st, int s, uint64_t bytes, bool pinned, bool fold)
{
    diff_pending_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->bytes = bytes;
    p->fold = fold;
    p->pinned = pinned;
    if (pinned && st->d.MemAllocHost(&p->host, bytes ? bytes : 1) != CUDA_SUCCESS)
        p->host = NULL;
    if (!pinned)
        p->host = malloc(bytes ? bytes : 1);
    if (!p->host) {
        free(p);
        return NULL;
    }
    *st->pending_tail[s] = p;
    st->pending_tail[s] = &p->next;
    return p->host;
}

/* Folds and frees stream s's pending bytes, in issue order. */
static void drain(diff_t *st, int s)
{
    diff_pending_t *p = st->pending[s];
    while (p) {
        diff_pending_t *next = p->next;
        if (p->fold)
            diff_fold(st, p->host, p->bytes);
        if (p->pinned)
            st->d.MemFreeHost(p->host);
        else
            free(p->host);
        free(p);
        p = next;
    }
    st->pending[s] = NULL;
    st->pending_tail[s] = &st->pending[s];
}

int diff_sync_stream(diff_t *st, int s)
{
    DCK(st, st->d.StreamSynchronize(st->stream[s]));
    drain(st, s);
    return DIFF_OK;
}

int diff_sync_all(diff_t *st)
{
    DCK(st, st->d.CtxSynchronize());
    for (int s = 0; s < DIFF_STREAMS; s++)
        drain(st, s);
    return DIFF_OK;
}

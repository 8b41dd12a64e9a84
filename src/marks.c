/*
 * What a launch names: each argument word and descriptor address that
 * lands in a tracked allocation stamps its chunks for the learner (the
 * segment from the word to the next learned start), notes the host chunks
 * it reads in place, and lists the allocations the streaming window may
 * serve (launch.c, serve.c). A pointer-table entry (a small host-to-device
 * copy's words) is a segment start too, and marks its tensor's chunks as
 * reached through memory no launch names; no launch stamps it.
 */
#include "launch.h"

/* Guards every allocation's learned segment starts (sw_alloc_t's bounds,
 * nbounds, spacing): launches on several threads note them at once, and
 * a trade's policy reads them (promote.c, next_trade), where a note's
 * realloc would pull the array from under it. */
static pthread_mutex_t segment_lock = PTHREAD_MUTEX_INITIALIZER;

void sw_segments_lock(void)
{
    pthread_mutex_lock(&segment_lock);
}

void sw_segments_unlock(void)
{
    pthread_mutex_unlock(&segment_lock);
}

/* Notes c for this launch's promotion and statistics, once per launch
 * (a chunk stamped by this launch already was noted then). */
static void note(marks_t *m, const sw_chunk_t *c)
{
    if (c->slot >= 0) {
        m->window = true;
    } else if (c->where == SW_ON_HOST) {
        m->host = true;
        m->host_bytes += c->size;
        if (m->nhost < MAX_PROMOTE)
            m->host_va[m->nhost++] = c->va;
    }
}

/* Stamps c, the one chunk of its allocation, for this launch. Launches on
 * other threads may stamp the same chunk at once (the gate is only
 * shared): each field is a relaxed atomic (sw.h, sw_sched_load), and a
 * lost or reordered update skews a prediction (sw_learn_touch ignores a
 * seq older than the last), never a result, since correctness does not
 * depend on the schedule. */
static void touch(marks_t *m, sw_chunk_t *c)
{
    if (__atomic_load_n(&c->last_use, __ATOMIC_RELAXED) == m->seq)
        return;
    sw_learn_touch(c, m->seq);
    note(m, c);
}

/* Whether chunks [first, end) of a are all on the device and in no slot,
 * as a walk found them at the last move: then a launch has nothing to
 * note in them, and need not look at each. segment_lock held. */
static bool clean(const sw_alloc_t *a, uint32_t first, uint32_t end)
{
    return a->clean_moved == a->moved && first >= a->clean_first && end <= a->clean_end;
}

/* A launch names allocation a, the tensor [word, end) of it: the
 * streaming window may serve it, if it lies wholly on the host and the
 * launches' tensors span it (window.c). The decision waits until the scan
 * is over (serve.c), when every stamp is in. One that does not fit in use[]
 * is read in place, and every copy goes home first (sw_mark). */
static void consider(marks_t *m, const sw_alloc_t *a, uint64_t word, uint64_t end)
{
    uint64_t parts = sw_parts(a->va, a->size, word, end);
    for (int i = 0; i < m->nuse; i++)
        if (m->use[i].start == a->va) {
            m->use[i].parts |= parts;
            return;
        }
    if (m->nuse == SW_WINDOW_MAX_USES) {
        m->overflow = true;
        return;
    }
    m->use[m->nuse++] = (stream_use_t){.start = a->va, .len = a->size, .parts = parts};
}

/* The end of the tensor at word in a, which becomes a segment start: the
 * next one. A launch into an allocation of one chunk asks only while the
 * window is on (a lock per launch otherwise not taken). */
static uint64_t tensor_end(sw_alloc_t *a, uint64_t word)
{
    sw_segments_lock();
    sw_segment_note(a, word);
    uint64_t end = sw_segment_end(a, word);
    sw_segments_unlock();
    return end;
}

/* The index after the chunk holding the last byte before end. */
static uint32_t chunk_after(uint64_t end)
{
    return sw_table_lookup(sw_tracked(), end - 1)->index + 1;
}

/* A word inside a tracked allocation. The window serves the whole
 * allocation if it serves the word at all (consider). For the schedule,
 * the kernel is predicted to read from the word to the next learned
 * segment start (a weight among many in one buffer), so every chunk of
 * that range is touched: a guess that steers only what is moved when,
 * never what a kernel can reach.
 *
 * The cost is not that range's length: the stamps go to the learner as
 * one range (sw_learn_touch_range, O(1) when it is the range stamped last
 * time), and the chunks are looked at one by one for host and window
 * chunks only when some chunk of the allocation moved since a walk found
 * the range clean. Moves happen under the gate held exclusively and this
 * runs under it shared, so no chunk changes place between the check and
 * the launch. Stamps and notes are exactly what a chunk-by-chunk walk
 * gives: a chunk the launch stamped already is not noted again. */
void sw_marks_hit(uint64_t word, void *arg)
{
    marks_t *m = arg;
    sw_chunk_t *c = sw_table_lookup(sw_tracked(), word);
    if (!c)
        return;
    if (m->recording)
        sw_record_word(word);
    sw_alloc_t *a = c->alloc;
    if (a->nchunks == 1) {
        touch(m, c);
        if (word < a->va + a->size && sw_window_on())
            consider(m, a, word, tensor_end(a, word));
        return;
    }
    sw_segments_lock();
    uint32_t first = c->index, end = first + 1;
    uint64_t tend = 0;
    if (word < a->va + a->size) {
        sw_segment_note(a, word);
        tend = sw_segment_end(a, word);
        end = chunk_after(tend);
    }
    if (!clean(a, first, end)) {
        bool all_device = true;
        for (uint32_t i = first; i < end; i++) {
            const sw_chunk_t *ci = &a->chunks[i];
            all_device &= ci->slot < 0 && ci->where == SW_ON_DEVICE;
            if (sw_learn_state(ci).last_use != m->seq)
                note(m, ci);
        }
        /* Ranges found clean since the last move join into one, when they
         * touch, so that pointers to neighbouring segments do not evict
         * each other's record. */
        if (all_device) {
            bool join = a->clean_moved == a->moved && first <= a->clean_end &&
                        a->clean_first <= end;
            a->clean_first = join && a->clean_first < first ? a->clean_first : first;
            a->clean_end = join && a->clean_end > end ? a->clean_end : end;
            a->clean_moved = a->moved;
        }
    }
    sw_learn_touch_range(a, first, end, m->seq);
    sw_segments_unlock();
    if (word < a->va + a->size && sw_window_on())
        consider(m, a, word, tend);
}

/* Whether the launch of m reads word's allocation at home, not through a
 * window copy: what its graph's replays read there (sw_graph_learn). A
 * range a capture copied is copied at every replay wherever it lies, so
 * shown to the learner it would only draw residency from the ranges
 * the graph reads in place: 20 x 4 MiB layers at batch 256, whose GEMMs
 * re-read each weight they read in place, took 2.01 ms a replay where
 * the capture's own placement took 1.49. */
bool sw_marks_at_home(uint64_t word, void *arg)
{
    const marks_t *m = arg;
    for (int i = 0; i < m->nuse; i++)
        if (m->use[i].served && word - m->use[i].start < m->use[i].len)
            return false;
    return true;
}

/* Pointer tables (grouped GEMM, batched cuBLAS) are small; weights and
 * activations are not, and are not worth a scan. */
#define POINTER_TABLE_MAX (64u << 10)

static void mark_pointed(uint64_t word, void *arg)
{
    (void)arg;
    sw_chunk_t *c = sw_table_lookup(sw_tracked(), word);
    if (!c)
        return;
    sw_alloc_t *a = c->alloc;
    /* A pointer in a table is a tensor's start as much as an argument is:
     * the segment before it ends there, for the schedule and for what a
     * launch's tensors span of its allocation (sw_marks_hit). Every chunk of the
     * tensor is reached, not only the one it starts in: a table-only layer
     * of two chunks is adopted whole, or half of it stays read in place.
     * Copies on other threads may mark them at once. */
    uint32_t end = word < a->va + a->size ? chunk_after(tensor_end(a, word)) : c->index + 1;
    for (uint32_t i = c->index; i < end; i++)
        __atomic_store_n(&a->chunks[i].pointed, true, __ATOMIC_RELAXED);
}

void sw_note_pointers(const void *src, size_t n)
{
    if (!src || n > POINTER_TABLE_MAX || sw_opts()->policy != SW_POLICY_LEARNED || !sw_gate_rd())
        return;
    sw_scan_words(src, n, mark_pointed, NULL);
    sw_gate_unrd();
}

/*
 * Graph recordings: what a capture's launches pointed at, kept for each
 * graph and each executable graph made from it, so that every replay can
 * be shown to the learner as the launches it repeats (launch.c,
 * sw_graph_learn). A replay is one call that spillway cannot look inside:
 * without this the learner sees a graph's kernels once, at capture, and
 * the resident set stays as the capture found it. A graph captured before
 * any eager step kept a segment's untouched slack resident for good, its
 * layers read in place every replay (12 x 4 MiB layers, the odd ones in
 * 20 MiB segments, under 19 MiB: 1.66x the link bound, 1.44x with replays
 * learned; simgpu, 2026-11-29).
 *
 * A recording is the words of each captured launch's arguments (and
 * recognised descriptors) that pointed into tracked memory the launch
 * read at home, launch by launch: a range the capture copied into the
 * window is copied at every replay wherever it lies (launch.c,
 * read_at_home). It is kept only for a capture that ran alone: launches of two
 * captures at once cannot be told apart here, and a recording that mixed
 * them would teach a loop neither graph runs. It is a guess about what
 * the replay reads, like every stamp: correctness never depends on it,
 * and an allocation freed since is simply not found.
 *
 * LOCKING. `lock` guards the capture in progress and both tables, and is
 * taken only once the driver answered a call with success (fork.c); a
 * recording bound to a graph is never changed again, and is freed when
 * its last holder (graph, executable graph, a replay learning from it)
 * lets go.
 */
#include "residency.h"

#include <stdlib.h>
#include <string.h>

/* A capture bigger than this is not recorded (a model's step is a few
 * thousand launches of a few pointers each). */
#define MAX_WORDS (1u << 18)

struct sw_recording {
    uint64_t *words;   /* every launch's words, in launch order */
    uint32_t *ends;    /* ends[i]: the end of launch i's words in words[] */
    uint32_t nwords, nlaunches, cap_words, cap_launches;
    int refs;          /* lock held to change */
};

typedef struct {
    uintptr_t key;     /* a CUgraph or a CUgraphExec */
    sw_recording_t *rec;
} binding_t;

typedef struct {
    binding_t *at;
    size_t n, cap;
} bindings_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sw_recording_t *recording; /* the capture in progress, or NULL */
static int captures;              /* captures begun and not over */
static bool mixed;                /* two ran at once: nothing is kept */
static bindings_t graphs, execs;

/* One launch's words, gathered on its thread before being appended. */
#define LAUNCH_WORDS 64
static __thread uint64_t pending[LAUNCH_WORDS];
static __thread uint32_t npending;

static void put(sw_recording_t *r)
{
    if (r && --r->refs == 0) {
        free(r->words);
        free(r->ends);
        free(r);
    }
}

/* Grows *p (of *cap elements of size sz) to hold need; false if it could not. */
static bool grow(void **p, uint32_t *cap, uint32_t need, size_t sz)
{
    if (need <= *cap)
        return true;
    uint32_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, (size_t)n * sz);
    if (!q)
        return false;
    *p = q;
    *cap = n;
    return true;
}

void sw_record_begun(CUresult r)
{
    if (r != CUDA_SUCCESS)
        return;
    pthread_mutex_lock(&lock);
    if (captures++ == 0) {
        mixed = false;
        sw_recording_t *rec = calloc(1, sizeof *rec);
        if (rec)
            rec->refs = 1;
        __atomic_store_n(&recording, rec, __ATOMIC_RELAXED); /* read unlocked: sw_recording_on */
    } else {
        mixed = true;
    }
    pthread_mutex_unlock(&lock);
}

bool sw_recording_on(void)
{
    return __atomic_load_n(&recording, __ATOMIC_RELAXED) != NULL;
}

void sw_record_word(uint64_t word)
{
    if (npending < LAUNCH_WORDS)
        pending[npending++] = word;
}

void sw_record_launch(bool (*keep)(uint64_t word, void *arg), void *arg)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < npending; i++)
        if (keep(pending[i], arg))
            pending[n++] = pending[i];
    npending = 0;
    pthread_mutex_lock(&lock);
    sw_recording_t *r = mixed ? NULL : recording;
    if (r && (r->nwords + n > MAX_WORDS ||
              !grow((void **)&r->words, &r->cap_words, r->nwords + n, sizeof *r->words) ||
              !grow((void **)&r->ends, &r->cap_launches, r->nlaunches + 1, sizeof *r->ends)))
        mixed = true; /* too big to keep, or no memory: none is kept */
    else if (r) {
        if (n) /* words is NULL until a launch keeps one */
            memcpy(r->words + r->nwords, pending, n * sizeof *pending);
        r->nwords += n;
        r->ends[r->nlaunches++] = r->nwords;
    }
    pthread_mutex_unlock(&lock);
}

/* Binds key to r in b (one more holder of r), replacing what key had. */
static void bind(bindings_t *b, uintptr_t key, sw_recording_t *r)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->at[i].key == key) {
            put(b->at[i].rec);
            b->at[i].rec = r;
            r->refs++;
            return;
        }
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        binding_t *at = realloc(b->at, cap * sizeof *at);
        if (!at)
            return;
        b->at = at;
        b->cap = cap;
    }
    b->at[b->n] = (binding_t){key, r};
    __atomic_store_n(&b->n, b->n + 1, __ATOMIC_RELAXED); /* read unlocked: sw_recording_of */
    r->refs++;
}

static sw_recording_t *bound(const bindings_t *b, uintptr_t key)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->at[i].key == key)
            return b->at[i].rec;
    return NULL;
}

static void unbind(bindings_t *b, uintptr_t key)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->at[i].key == key) {
            put(b->at[i].rec);
            b->at[i] = b->at[b->n - 1];
            __atomic_store_n(&b->n, b->n - 1, __ATOMIC_RELAXED);
            return;
        }
}

void sw_record_over(CUgraph g)
{
    pthread_mutex_lock(&lock);
    if (captures > 0 && --captures == 0) {
        sw_recording_t *r = recording;
        __atomic_store_n(&recording, NULL, __ATOMIC_RELAXED);
        if (r && g && !mixed && r->nwords)
            bind(&graphs, (uintptr_t)g, r);
        put(r);
    }
    pthread_mutex_unlock(&lock);
}

CUresult sw_graph_instantiated(CUresult res, const CUgraphExec *e, CUgraph g)
{
    if (res != CUDA_SUCCESS || !e)
        return res;
    pthread_mutex_lock(&lock);
    sw_recording_t *r = bound(&graphs, (uintptr_t)g);
    if (r)
        bind(&execs, (uintptr_t)*e, r);
    else
        unbind(&execs, (uintptr_t)*e); /* an old executable graph's, at a reused address */
    pthread_mutex_unlock(&lock);
    return res;
}

/* key of b was destroyed if the driver says so (res). */
static CUresult gone(CUresult res, bindings_t *b, uintptr_t key)
{
    if (res != CUDA_SUCCESS)
        return res;
    pthread_mutex_lock(&lock);
    unbind(b, key);
    pthread_mutex_unlock(&lock);
    return res;
}

CUresult sw_graph_gone(CUresult res, CUgraph g)
{
    return gone(res, &graphs, (uintptr_t)g);
}

CUresult sw_exec_gone(CUresult res, CUgraphExec e)
{
    return gone(res, &execs, (uintptr_t)e);
}

sw_recording_t *sw_recording_of(CUgraphExec e)
{
    /* Asked at every graph launch: most programs record nothing. */
    if (!__atomic_load_n(&execs.n, __ATOMIC_RELAXED))
        return NULL;
    pthread_mutex_lock(&lock);
    sw_recording_t *r = bound(&execs, (uintptr_t)e);
    if (r)
        r->refs++;
    pthread_mutex_unlock(&lock);
    return r;
}

void sw_recording_put(sw_recording_t *r)
{
    pthread_mutex_lock(&lock);
    put(r);
    pthread_mutex_unlock(&lock);
}

uint32_t sw_recording_launches(const sw_recording_t *r)
{
    return r->nlaunches;
}

const uint64_t *sw_recording_words(const sw_recording_t *r, uint32_t i, uint32_t *n)
{
    uint32_t from = i ? r->ends[i - 1] : 0;
    *n = r->ends[i] - from;
    return r->words + from;
}

/*
 * Fuzzes the scan of small host-to-device copies for pointers into
 * tracked memory (sw_note_pointers in marks.c, run on every
 * cuMemcpyHtoD* of at most 64 KiB: pointer tables of grouped GEMMs).
 * Its pure parts are fuzzed here as marks.c composes them: sw_scan_words
 * over the copied bytes, sw_table_lookup of each word, and for a pointer
 * into an allocation of several chunks, sw_segment_note. The composition
 * (mark_pointed, five lines) is marks.c's, restated in note() below,
 * since marks.c needs the driver.
 *
 * The input builds a table (granule 4 KiB to 2 MiB, up to 8 allocations
 * of up to 8 chunks each, any of them refused for overlapping one
 * already in), then a copy: any length and alignment, each word either
 * input bytes or a pointer into (or just past) an allocation. Then some
 * allocations are removed and the copy scanned again.
 *
 * Checks, against a model of the allocations:
 *   - an insert is refused exactly when it overlaps one already in;
 *   - sw_table_lookup finds the chunk holding the address, or NULL when
 *     no tracked allocation does (removed ones included);
 *     sw_table_find_base finds each allocation by its base;
 *   - sw_scan_words passes every nonzero whole word of the copy, once;
 *   - each chunk is marked pointed exactly when a word pointed into it;
 *   - each allocation's segment starts are sorted, distinct, inside
 *     [va, va + size), and exactly the words noted; sw_segment_end
 *     gives the next start above any address, else the end.
 */
#include <stdbool.h>

#include "fuzz.h"
#include "sw.h"

#define MAX_ALLOCS 8
#define MAX_CHUNKS 8
#define MAX_COPY 4096
#define BASE 0x7f0000000000ull

typedef struct {
    sw_alloc_t *a[MAX_ALLOCS];
    bool in[MAX_ALLOCS];      /* in the table now */
    size_t n;
    sw_table_t *t;
    /* The words each allocation's segments must hold, per marks.c. */
    uint64_t noted[MAX_ALLOCS][MAX_COPY / 8];
    size_t nnoted[MAX_ALLOCS];
    bool pointed[MAX_ALLOCS][MAX_CHUNKS];
    size_t hits;
} world_t;

/* The model's chunk for addr: allocation and chunk index, or false. */
static bool model_find(const world_t *w, uint64_t addr, size_t *ai, uint32_t *ci)
{
    for (size_t i = 0; i < w->n; i++) {
        const sw_alloc_t *a = w->a[i];
        if (!w->in[i] || addr < a->va || addr - a->va >= a->reserved)
            continue;
        for (uint32_t c = 0; c < a->nchunks; c++)
            if (addr >= a->chunks[c].va && addr - a->chunks[c].va < a->chunks[c].size) {
                *ai = i;
                *ci = c;
                return true;
            }
    }
    return false;
}

/* marks.c's mark_pointed, on the table here, with the model kept. */
static void note(uint64_t word, void *arg)
{
    world_t *w = arg;
    FUZZ_CHECK(word != 0, "a zero word was passed");
    w->hits++;
    sw_chunk_t *c = sw_table_lookup(w->t, word);
    size_t ai;
    uint32_t ci;
    bool tracked = model_find(w, word, &ai, &ci);
    FUZZ_CHECK(c == (tracked ? &w->a[ai]->chunks[ci] : NULL), "lookup of %llx",
               (unsigned long long)word);
    if (!c)
        return;
    c->pointed = true;
    w->pointed[ai][ci] = true;
    if (c->alloc->nchunks > 1 && word < c->alloc->va + c->alloc->size) {
        sw_segment_note(c->alloc, word);
        bool known = false;
        for (size_t k = 0; k < w->nnoted[ai] && !known; k++)
            known = w->noted[ai][k] == word;
        if (!known)
            w->noted[ai][w->nnoted[ai]++] = word;
    }
}

static void check_segments(const world_t *w, uint64_t probe)
{
    for (size_t i = 0; i < w->n; i++) {
        const sw_alloc_t *a = w->a[i];
        FUZZ_CHECK(a->nbounds == w->nnoted[i], "allocation %zu: %u starts, %zu noted", i,
                   a->nbounds, w->nnoted[i]);
        for (uint32_t k = 0; k < a->nbounds; k++) {
            FUZZ_CHECK(a->bounds[k] >= a->va && a->bounds[k] - a->va < a->size,
                       "a start outside its allocation");
            FUZZ_CHECK(k == 0 || a->bounds[k - 1] < a->bounds[k], "starts not sorted");
            bool noted = false;
            for (size_t j = 0; j < w->nnoted[i] && !noted; j++)
                noted = w->noted[i][j] == a->bounds[k];
            FUZZ_CHECK(noted, "a start no word gave");
        }
        for (uint32_t c = 0; c < a->nchunks; c++)
            FUZZ_CHECK(a->chunks[c].pointed == w->pointed[i][c], "allocation %zu chunk %u pointed",
                       i, c);
        /* The next start above p, else the end: for the probe, each start
         * and the bytes either side of it. */
        uint64_t ps[3] = {a->va + probe % (a->size + 1), a->va, a->va + a->size - 1};
        for (uint32_t k = 0; k <= a->nbounds; k++) {
            for (int j = 0; j < 3; j++) {
                uint64_t p = ps[j], want = a->va + a->size;
                for (size_t m = 0; m < w->nnoted[i]; m++)
                    if (w->noted[i][m] > p && w->noted[i][m] < want)
                        want = w->noted[i][m];
                uint64_t got = sw_segment_end(a, p);
                FUZZ_CHECK(got == want, "segment end after %llx: %llx, expected %llx",
                           (unsigned long long)p, (unsigned long long)got,
                           (unsigned long long)want);
            }
            if (k < a->nbounds) {
                ps[0] = a->bounds[k] - 1;
                ps[1] = a->bounds[k];
                ps[2] = a->bounds[k] + 1;
            }
        }
    }
}

static sw_alloc_t *make_alloc(fuzz_in_t *in, unsigned shift)
{
    uint64_t g = 1ull << shift;
    sw_alloc_t *a = calloc(1, sizeof *a);
    FUZZ_CHECK(a, "calloc");
    a->nchunks = 1 + fuzz_u8(in) % MAX_CHUNKS;
    a->chunks = calloc(a->nchunks, sizeof *a->chunks);
    FUZZ_CHECK(a->chunks, "calloc");
    a->va = BASE + (fuzz_u8(in) % 128) * g;
    uint64_t off = 0;
    for (uint32_t c = 0; c < a->nchunks; c++) {
        sw_chunk_t *ch = &a->chunks[c];
        ch->va = a->va + off;
        ch->size = (1 + fuzz_u8(in) % 4) * g;
        ch->alloc = a;
        ch->index = c;
        ch->slot = -1;
        off += ch->size;
    }
    a->reserved = off;
    a->size = off - fuzz_u32(in) % off; /* what the program asked: at most reserved */
    return a;
}

static void free_alloc(sw_alloc_t *a)
{
    sw_segment_free(a);
    free(a->chunks);
    free(a);
}

/* The copy: n bytes at an offset of 0 to 7 into buf (the source of a
 * copy need not be aligned), each word input bytes or a pointer. */
static size_t make_copy(fuzz_in_t *in, const world_t *w, uint8_t *buf, const uint8_t **src)
{
    size_t n = fuzz_u16(in) % (MAX_COPY + 1);
    uint8_t *at = buf + fuzz_u8(in) % 8;
    for (size_t off = 0; off < n; off += 8) {
        uint8_t kind = fuzz_u8(in);
        uint64_t word;
        if (kind < 128 && w->n) {
            const sw_alloc_t *a = w->a[kind % w->n];
            word = a->va + fuzz_u32(in) % (a->reserved + 16); /* or just past it */
        } else {
            word = fuzz_u64(in);
        }
        memcpy(at + off, &word, n - off < 8 ? n - off : 8);
    }
    *src = at;
    return n;
}

static void scan(world_t *w, const uint8_t *src, size_t n)
{
    size_t want = 0;
    for (size_t off = 0; off + 8 <= n; off += 8) {
        uint64_t word;
        memcpy(&word, src + off, 8);
        want += word != 0;
    }
    w->hits = 0;
    size_t got = sw_scan_words(src, n, note, w);
    FUZZ_CHECK(got == want && w->hits == want, "%zu words returned, %zu passed, %zu expected",
               got, w->hits, want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    unsigned shift = 12 + fuzz_u8(&in) % 10;
    world_t *w = calloc(1, sizeof *w);
    FUZZ_CHECK(w, "calloc");
    w->t = sw_table_new(1ull << shift);
    FUZZ_CHECK(w->t && !sw_table_new(3) && !sw_table_new(0), "sw_table_new");
    size_t want = 1 + fuzz_u8(&in) % MAX_ALLOCS;
    for (size_t i = 0; i < want; i++) {
        sw_alloc_t *a = make_alloc(&in, shift);
        bool overlaps = false;
        for (size_t j = 0; j < w->n; j++)
            overlaps |= a->va < w->a[j]->va + w->a[j]->reserved &&
                        w->a[j]->va < a->va + a->reserved;
        int rc = sw_table_insert(w->t, a);
        FUZZ_CHECK(rc == (overlaps ? -1 : 0), "insert says %d, overlap %d", rc, overlaps);
        if (rc) {
            free_alloc(a);
            continue;
        }
        w->in[w->n] = true;
        w->a[w->n++] = a;
    }
    FUZZ_CHECK(sw_table_count(w->t) == w->n, "count %zu of %zu", sw_table_count(w->t), w->n);
    for (size_t i = 0; i < w->n; i++)
        FUZZ_CHECK(sw_table_find_base(w->t, w->a[i]->va) == w->a[i], "find_base");

    uint8_t *buf = malloc(MAX_COPY + 8);
    FUZZ_CHECK(buf, "malloc");
    const uint8_t *src;
    size_t n = make_copy(&in, w, buf, &src);
    scan(w, src, n);
    check_segments(w, fuzz_u64(&in));

    /* Frees: the table forgets them; the same copy scanned again marks
     * only what is left (the model's pointed marks stay, as the chunks'
     * do). */
    uint8_t gone = fuzz_u8(&in);
    for (size_t i = 0; i < w->n; i++)
        if (gone >> i & 1) {
            sw_table_remove(w->t, w->a[i]);
            w->in[i] = false;
            FUZZ_CHECK(!sw_table_find_base(w->t, w->a[i]->va), "a removed base is found");
        }
    scan(w, src, n);
    check_segments(w, fuzz_u64(&in));

    sw_table_free(w->t);
    for (size_t i = 0; i < w->n; i++)
        free_alloc(w->a[i]);
    free(buf);
    free(w);
    return 0;
}

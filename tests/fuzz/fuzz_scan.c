/*
 * Fuzzes the kernel-argument scanner and rewriter (core/scan.c): every
 * function the launch path runs on a launch's parameters, in both of
 * cuLaunchKernel's forms (kernelParams, and the packed buffer of
 * `extra`), and the parser of the `extra` array itself.
 *
 * The input gives a parameter layout (up to 16 parameters, laid out in
 * order without overlap, as the driver's are, with any gaps, sizes and
 * alignment), which parameters are NULL, the packed buffer's bytes and
 * length (shorter or longer than the layout), the room for rewritten
 * copies, which words the rewriter maps and to what, and an `extra`
 * array of any keys. Every parameter and buffer is allocated to the byte,
 * so a read or write past one is a sanitizer's report.
 *
 * Each result is checked against a model written from sw.h's contract:
 * the words hit and their order; the windows offered as TMA descriptors;
 * the rewritten copies, word for word, with nothing written outside the
 * parameters rewritten and nothing written to the caller's memory; what
 * sw_extra_buffer finds, or that it refuses.
 */
#include <stdbool.h>

#include "fuzz.h"
#include "sw.h"

#define MAX_PARAMS 16
#define MAX_WORDS 4096

typedef struct {
    uint64_t w[MAX_WORDS];
    size_t n;
} words_t;

static void record(uint64_t word, void *arg)
{
    words_t *h = arg;
    FUZZ_CHECK(word != 0, "hit was passed a zero word");
    FUZZ_CHECK(h->n < MAX_WORDS, "more words than the parameters hold");
    h->w[h->n++] = word;
}

static uint64_t word_at(const void *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* Which words the rewriter replaces, and by what: a word maps when its
 * low byte is below `below` (so the fuzzer picks how many), to itself
 * xor key. */
typedef struct {
    uint8_t below;
    uint64_t key;
    size_t calls;
} map_t;

static bool maps(const map_t *m, uint64_t w, uint64_t *to)
{
    if ((w & 0xff) >= m->below)
        return false;
    *to = w ^ m->key;
    return true;
}

static bool map_fn(uint64_t word, uint64_t *to, void *arg)
{
    map_t *m = arg;
    FUZZ_CHECK(word != 0, "map was passed a zero word");
    m->calls++;
    return maps(m, word, to);
}

typedef struct {
    uint32_t index, offset;
    const void *window;
} window_t;

typedef struct {
    window_t w[MAX_WORDS];
    size_t n;
} windows_t;

static void on_window(uint32_t index, uint32_t offset, const void *window, void *arg)
{
    windows_t *c = arg;
    FUZZ_CHECK(c->n < MAX_WORDS, "too many windows");
    c->w[c->n++] = (window_t){index, offset, window};
}

/* kernelParams form: the words of each parameter, in order. */
static void check_scan_params(const sw_layout_t *l, void **params)
{
    words_t got = {.n = 0}, want = {.n = 0};
    size_t n = sw_scan_args(l, params, NULL, 0, record, &got);
    for (uint32_t i = 0; i < l->nparams; i++)
        for (size_t off = 0; params[i] && off + 8 <= l->size[i]; off += 8)
            if (word_at((uint8_t *)params[i] + off))
                want.w[want.n++] = word_at((uint8_t *)params[i] + off);
    FUZZ_CHECK(n == got.n && got.n == want.n, "%zu words returned, %zu hit, %zu expected", n,
               got.n, want.n);
    FUZZ_CHECK(memcmp(got.w, want.w, want.n * 8) == 0, "other words, or in another order");
}

/* extra form: the words of the buffer up to min(buflen, total). */
static void check_scan_buffer(const sw_layout_t *l, const uint8_t *buf, size_t buflen)
{
    words_t got = {.n = 0}, want = {.n = 0};
    size_t n = sw_scan_args(l, NULL, buf, buflen, record, &got);
    size_t end = buflen < l->total ? buflen : l->total;
    for (size_t off = 0; off + 8 <= end; off += 8)
        if (word_at(buf + off))
            want.w[want.n++] = word_at(buf + off);
    FUZZ_CHECK(n == got.n && got.n == want.n, "%zu words returned, %zu hit, %zu expected", n,
               got.n, want.n);
    FUZZ_CHECK(memcmp(got.w, want.w, want.n * 8) == 0, "other words, or in another order");
    FUZZ_CHECK(sw_scan_args(l, NULL, NULL, buflen, record, &got) == 0, "no buffer, no words");
}

/* Windows of 128 bytes at parameter offsets 0, 64, ... of parameters of
 * at least 128 bytes; in the extra form only those ending within
 * min(buflen, total). */
static void check_descriptors(const sw_layout_t *l, void **params, const uint8_t *buf,
                              size_t buflen)
{
    windows_t got = {.n = 0};
    size_t n = sw_scan_descriptors(l, params, buf, buflen, on_window, &got);
    size_t limit = buflen < l->total ? buflen : l->total, k = 0;
    FUZZ_CHECK(n == got.n, "%zu windows returned, %zu passed", n, got.n);
    for (uint32_t i = 0; i < l->nparams; i++) {
        if (params && !params[i])
            continue;
        for (uint64_t off = 0; off + SW_TMAP_BYTES <= l->size[i]; off += 64) {
            if (!params && l->offset[i] + off + SW_TMAP_BYTES > limit)
                break;
            const uint8_t *at = params ? (uint8_t *)params[i] + off : buf + l->offset[i] + off;
            FUZZ_CHECK(k < got.n, "window %u+%llu not passed", i, (unsigned long long)off);
            FUZZ_CHECK(got.w[k].index == i && got.w[k].offset == off && got.w[k].window == at,
                       "window %zu is %u+%u, expected %u+%llu", k, got.w[k].index,
                       got.w[k].offset, i, (unsigned long long)off);
            k++;
        }
    }
    FUZZ_CHECK(k == got.n, "%zu windows passed, %zu expected", got.n, k);
}

static void check_rewrite_params(const sw_layout_t *l, void **params, size_t storelen,
                                 map_t *m)
{
    /* 0xa5 marks the room: any byte the rewriter should not write stays. */
    uint8_t *store = malloc(storelen ? storelen : 1), *saved[MAX_PARAMS];
    FUZZ_CHECK(store, "malloc");
    memset(store, 0xa5, storelen);
    for (uint32_t i = 0; i < l->nparams; i++) {
        saved[i] = params[i] ? malloc(l->size[i] ? l->size[i] : 1) : NULL;
        if (params[i])
            memcpy(saved[i], params[i], l->size[i]);
    }
    void *out[MAX_PARAMS];
    m->calls = 0;
    size_t changed = sw_rewrite_params(l, params, out, store, storelen, map_fn, m), want = 0;
    bool written[MAX_PARAMS] = {false};
    for (uint32_t i = 0; i < l->nparams; i++) {
        if (params[i])
            FUZZ_CHECK(memcmp(saved[i], params[i], l->size[i]) == 0,
                       "parameter %u of the caller was written", i);
        size_t mapped = 0;
        uint64_t to;
        for (size_t off = 0; params[i] && off + 8 <= l->size[i]; off += 8) {
            uint64_t w = word_at((uint8_t *)params[i] + off);
            mapped += w && maps(m, w, &to);
        }
        bool fits = (uint64_t)l->offset[i] + l->size[i] <= storelen;
        if (!params[i] || !fits || !mapped) {
            FUZZ_CHECK(out[i] == params[i], "parameter %u rewritten: null %d, fits %d, %zu mapped",
                       i, !params[i], fits, mapped);
            continue;
        }
        FUZZ_CHECK(out[i] == store + l->offset[i], "parameter %u not at its offset in store", i);
        written[i] = true;
        want += mapped;
        const uint8_t *copy = out[i];
        size_t off = 0;
        for (; off + 8 <= l->size[i]; off += 8) {
            uint64_t w = word_at((uint8_t *)params[i] + off), c = word_at(copy + off);
            FUZZ_CHECK(c == (w && maps(m, w, &to) ? to : w), "parameter %u word %zu", i, off);
        }
        FUZZ_CHECK(memcmp(copy + off, (uint8_t *)params[i] + off, l->size[i] - off) == 0,
                   "parameter %u: its tail is not copied", i);
    }
    FUZZ_CHECK(changed == want, "%zu words replaced, %zu expected", changed, want);
    for (size_t b = 0; b < storelen; b++) {
        bool inside = false;
        for (uint32_t i = 0; i < l->nparams && !inside; i++)
            inside = written[i] && b >= l->offset[i] && b < (size_t)l->offset[i] + l->size[i];
        FUZZ_CHECK(inside || store[b] == 0xa5, "store byte %zu written outside a copy", b);
    }
    for (uint32_t i = 0; i < l->nparams; i++)
        free(saved[i]);
    free(store);
}

static void check_rewrite_buffer(const sw_layout_t *l, const uint8_t *buf, size_t len, map_t *m)
{
    uint8_t *out = malloc(len ? len : 1), *saved = malloc(len ? len : 1);
    FUZZ_CHECK(out && saved, "malloc");
    memcpy(saved, buf, len);
    size_t changed = sw_rewrite_buffer(l, buf, len, out, map_fn, m), want = 0;
    FUZZ_CHECK(memcmp(saved, buf, len) == 0, "the caller's buffer was written");
    size_t scan = len < l->total ? len : l->total;
    for (size_t off = 0; off < len; off++) {
        size_t word = off & ~(size_t)7;
        uint64_t w, to;
        bool patched = word + 8 <= scan && (w = word_at(buf + word)) && maps(m, w, &to);
        if (patched && off == word)
            want++;
        uint8_t expect = patched ? ((const uint8_t *)&to)[off - word] : buf[off];
        FUZZ_CHECK(out[off] == expect, "buffer byte %zu", off);
    }
    FUZZ_CHECK(changed == want, "%zu words replaced, %zu expected", changed, want);
    free(out);
    free(saved);
}

/* An `extra` array of up to 8 pairs: keys END (0), BUFFER_POINTER (1),
 * BUFFER_SIZE (2) or another, values NULL or not, then END. The model:
 * pairs up to the first END; any other key refuses the array; the last
 * pointer and the last size win; a NULL among them refuses it. */
static void check_extra(fuzz_in_t *in, const uint8_t *buf, size_t buflen)
{
    void *extra[2 * 8 + 1];
    size_t sizes[8];
    uint8_t npairs = fuzz_u8(in) % 9;
    const void *want_buf = NULL;
    const size_t *want_len = NULL;
    bool ended = false, bad = false;
    for (uint8_t i = 0; i < npairs; i++) {
        uint8_t k = fuzz_u8(in), key = k % 4, v = k >> 2;
        sizes[i] = buflen + v;
        extra[2 * i] = (void *)(uintptr_t)key;
        if (key == 1)
            extra[2 * i + 1] = v & 1 ? (void *)(buf + (v >> 1) % (buflen + 1)) : NULL;
        else if (key == 2)
            extra[2 * i + 1] = v & 1 ? &sizes[i] : NULL;
        else
            extra[2 * i + 1] = (void *)(uintptr_t)v;
        if (ended)
            continue;
        if (key == 0)
            ended = true;
        else if (key == 1)
            want_buf = extra[2 * i + 1];
        else if (key == 2)
            want_len = extra[2 * i + 1];
        else
            bad = true;
    }
    extra[2 * npairs] = NULL;
    const void *got_buf = NULL;
    size_t got_len = 0;
    bool ok = sw_extra_buffer(extra, &got_buf, &got_len);
    bool want = !bad && want_buf && want_len;
    FUZZ_CHECK(ok == want, "sw_extra_buffer says %d, expected %d", ok, want);
    if (ok)
        FUZZ_CHECK(got_buf == want_buf && got_len == *want_len, "sw_extra_buffer found another");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint32_t offset[MAX_PARAMS], psize[MAX_PARAMS];
    sw_layout_t l = {.nparams = fuzz_u8(&in) % (MAX_PARAMS + 1), .offset = offset, .size = psize};
    uint8_t nulls = fuzz_u8(&in);
    uint32_t at = 0;
    for (uint32_t i = 0; i < l.nparams; i++) {
        at += fuzz_u8(&in) % 16; /* any gap, any alignment */
        offset[i] = at;
        psize[i] = fuzz_u16(&in) % 400;
        at += psize[i];
    }
    l.total = at;
    size_t buflen = fuzz_u16(&in) % 2048, storelen = fuzz_u16(&in) % 2048;
    map_t m = {.below = fuzz_u8(&in)}; /* one read per statement: see fuzz.h */
    m.key = fuzz_u64(&in);
    fuzz_in_t extra_in = {in.p, in.n < 17 ? in.n : 17};
    in.p += extra_in.n;
    in.n -= extra_in.n;

    /* The packed buffer, to the byte, then each parameter copied out of a
     * longer one into its own allocation. */
    size_t whole = buflen > l.total ? buflen : l.total;
    uint8_t *bytes = malloc(whole ? whole : 1), *buf = malloc(buflen ? buflen : 1);
    FUZZ_CHECK(bytes && buf, "malloc");
    fuzz_bytes(&in, bytes, whole);
    memcpy(buf, bytes, buflen);
    void *params[MAX_PARAMS];
    for (uint32_t i = 0; i < l.nparams; i++) {
        params[i] = NULL;
        if (nulls >> (i % 8) & 1 && i < 8)
            continue;
        params[i] = malloc(psize[i] ? psize[i] : 1);
        FUZZ_CHECK(params[i], "malloc");
        memcpy(params[i], bytes + offset[i], psize[i]);
    }

    check_scan_params(&l, params);
    check_scan_buffer(&l, buf, buflen);
    check_descriptors(&l, params, NULL, 0);
    check_descriptors(&l, NULL, buf, buflen);
    FUZZ_CHECK(sw_scan_descriptors(&l, NULL, NULL, buflen, on_window, NULL) == 0,
               "no parameters and no buffer, no windows");
    check_rewrite_params(&l, params, storelen, &m);
    check_rewrite_buffer(&l, buf, buflen, &m);
    check_extra(&extra_in, buf, buflen);

    for (uint32_t i = 0; i < l.nparams; i++)
        free(params[i]);
    free(bytes);
    free(buf);
    return 0;
}

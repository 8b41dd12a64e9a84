/*
 * test_scan.c: which words of a launch's arguments are looked at
 * (core/scan.c), black-box, from the contract in sw.h.
 *
 * sw_scan_args, kernelParams form: every 8-byte word at parameter offsets
 * 0, 8, ... that fits inside the parameter; parameters under 8 bytes are
 * skipped; zero words are skipped; the return value counts the calls to
 * hit. Pointers hidden in by-value structs must be seen.
 * extra form: words at 8-aligned offsets of the packed buffer, bounded by
 * min(buflen, total).
 *
 * Over-reads are caught with a guard page: the bytes under test end exactly
 * where a PROT_NONE page begins, so reading one byte too far is a SIGSEGV,
 * which check (fork mode) reports as an error in that test.
 *
 * One reading is left open by the contract: whether the extra form also
 * skips parameters smaller than 8 bytes (it says "words at 8-aligned
 * offsets in [0, min(buflen, total))", which suggests not). The extra-form
 * tests accept either: such a word is "optional", neither required nor
 * forbidden.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sw.h"
#include "unit.h"

/* The `extra` keys, hard-coded: the core must not include cuda.h. Where the
 * toolkit's header is on the include path, check they agree. */
#define T_PARAM_END ((void *)0x00)
#define T_PARAM_BUFFER_POINTER ((void *)0x01)
#define T_PARAM_BUFFER_SIZE ((void *)0x02)
#if defined(__has_include)
#if __has_include(<cuda.h>)
#include <cuda.h>
_Static_assert(CU_LAUNCH_PARAM_END_AS_INT == 0x00, "CU_LAUNCH_PARAM_END");
_Static_assert(CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT == 0x01, "CU_LAUNCH_PARAM_BUFFER_POINTER");
_Static_assert(CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT == 0x02, "CU_LAUNCH_PARAM_BUFFER_SIZE");
#endif
#endif

/* --- helpers ------------------------------------------------------------ */

#define MAXHITS 1024

typedef struct {
    uint64_t words[MAXHITS];
    size_t n;
} hits_t;

static void on_hit(uint64_t word, void *arg)
{
    hits_t *h = arg;
    ck_assert_msg(word != 0, "hit() was passed a zero word");
    ck_assert_uint_lt(h->n, MAXHITS);
    h->words[h->n++] = word;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Asserts that the hits are exactly the multiset want[0..n). */
static void assert_hits(hits_t *h, const uint64_t *want, size_t n)
{
    uint64_t *w = malloc((n ? n : 1) * sizeof(*w));
    ck_assert_ptr_nonnull(w);
    memcpy(w, want, n * sizeof(*w));
    qsort(w, n, sizeof(*w), cmp_u64);
    qsort(h->words, h->n, sizeof(h->words[0]), cmp_u64);
    ck_assert_msg(h->n == n, "%zu words passed to hit, expected %zu", h->n, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(h->words[i] == w[i], "hit word %zu is 0x%llx, expected 0x%llx", i,
                      (unsigned long long)h->words[i], (unsigned long long)w[i]);
    free(w);
}

/* Asserts every required word was hit (as often as listed), and that any
 * other hit is one of the optional words. */
static void assert_hits_between(const hits_t *h, const uint64_t *req, size_t nreq,
                                const uint64_t *opt, size_t nopt)
{
    bool used[MAXHITS] = {false};
    for (size_t i = 0; i < nreq; i++) {
        bool found = false;
        for (size_t j = 0; j < h->n && !found; j++) {
            if (!used[j] && h->words[j] == req[i]) {
                used[j] = true;
                found = true;
            }
        }
        ck_assert_msg(found, "word 0x%llx was not passed to hit", (unsigned long long)req[i]);
    }
    for (size_t j = 0; j < h->n; j++) {
        if (used[j])
            continue;
        bool ok = false;
        for (size_t i = 0; i < nopt; i++)
            ok = ok || h->words[j] == opt[i];
        ck_assert_msg(ok, "unexpected word 0x%llx passed to hit", (unsigned long long)h->words[j]);
    }
}

/* A layout of up to 32 parameters. */
typedef struct {
    sw_layout_t l;
    uint32_t offset[32], size[32];
} layout_t;

/* sizes[0..n): offsets follow with each parameter aligned to min(size, 8)
 * rounded down to a power of two, like the C ABI for scalars and structs
 * made of them. */
static void mk_layout(layout_t *lt, const uint32_t *sizes, uint32_t n)
{
    memset(lt, 0, sizeof(*lt));
    ck_assert_uint_le(n, 32);
    uint32_t off = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t align = 1;
        while (align * 2 <= sizes[i] && align < 8)
            align *= 2;
        off = (off + align - 1) & ~(align - 1);
        lt->offset[i] = off;
        lt->size[i] = sizes[i];
        off += sizes[i];
    }
    lt->l.nparams = n;
    lt->l.total = off;
    lt->l.offset = lt->offset;
    lt->l.size = lt->size;
}

/* The first byte of an inaccessible page, right after an accessible one:
 * bytes placed just below it can be read, one byte further faults. */
static unsigned char *guard(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    unsigned char *p = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(p, MAP_FAILED);
    ck_assert_int_eq(mprotect(p + pg, (size_t)pg, PROT_NONE), 0);
    memset(p, 0, (size_t)pg);
    return p + pg;
}

/* Copies n bytes so that they end at the guard page; returns where. */
static void *at_guard(const void *src, size_t n)
{
    unsigned char *end = guard();
    memcpy(end - n, src, n);
    return end - n;
}

/* Pointer-like values, as a device address would look. */
#define P1 0x7f0000001000ULL
#define P2 0x7f0000200000ULL
#define P3 0x7f0000400008ULL
#define P4 0x7ffffe000010ULL
#define P5 0x7f1234567890ULL

/* The by-value struct of the brief: three pointers and two dims. */
typedef struct {
    float *W, *x, *y;
    uint32_t rows, cols;
} mv_args_t;
_Static_assert(sizeof(mv_args_t) == 32, "mv_args_t is 32 bytes");

static mv_args_t mv_args(void)
{
    mv_args_t s = {(float *)(uintptr_t)P1, (float *)(uintptr_t)P2, (float *)(uintptr_t)P3, 768,
                   3072};
    return s;
}

/* rows | cols << 32 read as one little-endian word */
#define MV_DIMS (768ULL | (3072ULL << 32))

/* --- kernelParams form ---------------------------------------------------- */

START_TEST(scan_params_finds_pointer_params)
{
    uint64_t a = P1, b = P2, c = P3;
    void *params[] = {&a, &b, &c};
    const uint32_t sizes[] = {8, 8, 8};
    layout_t lt;
    mk_layout(&lt, sizes, 3);
    hits_t h = {0};
    size_t n = sw_scan_args(&lt.l, params, NULL, 0, on_hit, &h);
    ck_assert_uint_eq(n, 3);
    const uint64_t want[] = {P1, P2, P3};
    assert_hits(&h, want, 3);
}
END_TEST

START_TEST(scan_params_finds_pointers_inside_by_value_struct)
{
    int32_t count = 4096;
    mv_args_t s = mv_args();
    float alpha = 0.5f;
    void *params[] = {&count, &s, &alpha};
    const uint32_t sizes[] = {4, 32, 4};
    layout_t lt;
    mk_layout(&lt, sizes, 3);
    hits_t h = {0};
    size_t n = sw_scan_args(&lt.l, params, NULL, 0, on_hit, &h);
    ck_assert_uint_eq(n, 4);
    const uint64_t want[] = {P1, P2, P3, MV_DIMS};
    assert_hits(&h, want, 4);
}
END_TEST

START_TEST(scan_params_finds_every_word_of_a_large_struct)
{
    /* like PyTorch's TensorIterator: an array of pointers in one struct */
    enum { NW = 512 };
    uint64_t *big = calloc(NW, sizeof(uint64_t));
    uint64_t want[NW];
    size_t nwant = 0;
    ck_assert_ptr_nonnull(big);
    for (int i = 0; i < NW; i++) {
        big[i] = i % 5 == 4 ? 0 : P1 + (uint64_t)i * 0x200000;
        if (big[i])
            want[nwant++] = big[i];
    }
    void *params[] = {big};
    const uint32_t sizes[] = {NW * 8};
    layout_t lt;
    mk_layout(&lt, sizes, 1);
    hits_t h = {0};
    size_t n = sw_scan_args(&lt.l, params, NULL, 0, on_hit, &h);
    ck_assert_uint_eq(n, nwant);
    assert_hits(&h, want, nwant);
    free(big);
}
END_TEST

START_TEST(scan_params_skips_params_smaller_than_8_bytes)
{
    /* each small parameter ends at a guard page: an 8-byte read faults */
    float f = 1.5f;
    uint32_t u = 0xdeadbeefu;
    uint16_t s = 0xbeef;
    uint8_t c = 0x7f;
    unsigned char odd[7] = {1, 2, 3, 4, 5, 6, 7};
    void *params[] = {at_guard(&f, 4), at_guard(&u, 4), at_guard(&s, 2), at_guard(&c, 1),
                      at_guard(odd, 7)};
    const uint32_t sizes[] = {4, 4, 2, 1, 7};
    layout_t lt;
    mk_layout(&lt, sizes, 5);
    hits_t h = {0};
    size_t n = sw_scan_args(&lt.l, params, NULL, 0, on_hit, &h);
    ck_assert_uint_eq(n, 0);
    ck_assert_uint_eq(h.n, 0);
}
END_TEST

START_TEST(scan_params_scans_12_byte_param_at_offset_0_only)
{
    unsigned char p12[12];
    uint64_t w = P4;
    uint32_t tail = 0xffffffffu;
    memcpy(p12, &w, 8);
    memcpy(p12 + 8, &tail, 4);
    void *params[] = {at_guard(p12, 12)};
    const uint32_t sizes[] = {12};
    layout_t lt;
    mk_layout(&lt, sizes, 1);
    hits_t h = {0};
    size_t n = sw_scan_args(&lt.l, params, NULL, 0, on_hit, &h);
    ck_assert_uint_eq(n, 1);
    const uint64_t want[] = {P4};
    assert_hits(&h, want, 1);
}
END_TEST

START_TEST(scan_params_scans_only_whole_words_of_odd_sized_param)
{
    /* 20 bytes: words at 0 and 8; bytes 16..19 are not a word */
    unsigned char p20[20];
    uint64_t w0 = P1, w1 = P2;
    memcpy(p20, &w0, 8);
    memcpy(p20 + 8, &w1, 8);
    memset(p20 + 16, 0xab, 4);
    void *params[] = {at_guard(p20, 20)};
    const uint32_t sizes[] = {20};
    layout_t lt;
    mk_layout(&lt, sizes, 1);
    hits_t h = {0};
    size_t n = sw_scan_args(&lt.l, params, NULL, 0, on_hit, &h);
    ck_assert_uint_eq(n, 2);
    const uint64_t want[] = {P1, P2};
    assert_hits(&h, want, 2);
}
END_TEST

START_TEST(scan_params_reads_params_only_within_their_size)
{
    /* every parameter ends at a guard page, sizes 8, 16, 32, 24 */
    uint64_t a = P1, b[2] = {P2, P3};
    mv_args_t s = mv_args();
    uint64_t d[3] = {P4, 0, P5};
    void *params[] = {at_guard(&a, 8), at_guard(b, 16), at_guard(&s, 32), at_guard(d, 24)};
    const uint32_t sizes[] = {8, 16, 32, 24};
    layout_t lt;
    mk_layout(&lt, sizes, 4);
    hits_t h = {0};
    size_t n = sw_scan_args(&lt.l, params, NULL, 0, on_hit, &h);
    const uint64_t want[] = {P1, P2, P3, P1, P2, P3, MV_DIMS, P4, P5};
    ck_assert_uint_eq(n, 9);
    assert_hits(&h, want, 9);
}
END_TEST

START_TEST(scan_params_skips_zero_words)
{
    uint64_t null_ptr = 0, zero64 = 0;
    mv_args_t s = mv_args();
    s.W = NULL; /* an optional input left out */
    s.y = NULL;
    void *params[] = {&null_ptr, &s, &zero64};
    const uint32_t sizes[] = {8, 32, 8};
    layout_t lt;
    mk_layout(&lt, sizes, 3);
    hits_t h = {0};
    size_t n = sw_scan_args(&lt.l, params, NULL, 0, on_hit, &h);
    ck_assert_uint_eq(n, 2);
    const uint64_t want[] = {P2, MV_DIMS};
    assert_hits(&h, want, 2);
}
END_TEST

START_TEST(scan_params_returns_number_of_words_passed)
{
    /* the same pointer twice is two words; small and zero ones are none */
    uint64_t a = P1, a2 = P1, zero = 0;
    int32_t k = 7;
    double dbl = 2.0; /* 8 bytes, not a pointer, but a nonzero word */
    uint64_t arr[3] = {P2, 0, P3};
    void *params[] = {&a, &k, &a2, &zero, &dbl, arr};
    const uint32_t sizes[] = {8, 4, 8, 8, 8, 24};
    layout_t lt;
    mk_layout(&lt, sizes, 6);
    hits_t h = {0};
    size_t n = sw_scan_args(&lt.l, params, NULL, 0, on_hit, &h);
    uint64_t dbl_bits;
    memcpy(&dbl_bits, &dbl, 8);
    const uint64_t want[] = {P1, P1, dbl_bits, P2, P3};
    ck_assert_uint_eq(n, h.n);
    ck_assert_uint_eq(n, 5);
    assert_hits(&h, want, 5);
}
END_TEST

START_TEST(scan_params_with_no_parameters_reports_nothing)
{
    void *params[1] = {NULL};
    layout_t lt;
    mk_layout(&lt, NULL, 0);
    hits_t h = {0};
    ck_assert_uint_eq(sw_scan_args(&lt.l, params, NULL, 0, on_hit, &h), 0);
    ck_assert_uint_eq(h.n, 0);
}
END_TEST

START_TEST(scan_params_form_ignores_the_buffer)
{
    /* with kernelParams given, buf must not even be read: it is a guard page */
    uint64_t a = P1;
    void *params[] = {&a};
    const uint32_t sizes[] = {8};
    layout_t lt;
    mk_layout(&lt, sizes, 1);
    hits_t h = {0};
    size_t n = sw_scan_args(&lt.l, params, guard(), 64, on_hit, &h);
    ck_assert_uint_eq(n, 1);
    const uint64_t want[] = {P1};
    assert_hits(&h, want, 1);
}
END_TEST

/* --- extra form ------------------------------------------------------------ */

/* A packed buffer for (float *a, int n, mv_args_t s, float *b):
 * a@0, n@8, s@16..48, b@48; total 56. */
static void mv_buffer(unsigned char buf[56], layout_t *lt, int32_t count)
{
    const uint32_t sizes[] = {8, 4, 32, 8};
    mk_layout(lt, sizes, 4);
    ck_assert_uint_eq(lt->l.total, 56);
    ck_assert_uint_eq(lt->offset[2], 16);
    memset(buf, 0, 56);
    uint64_t a = P4, b = P5;
    mv_args_t s = mv_args();
    memcpy(buf + 0, &a, 8);
    memcpy(buf + 8, &count, 4);
    memcpy(buf + 16, &s, 32);
    memcpy(buf + 48, &b, 8);
}

START_TEST(scan_extra_finds_pointers_in_packed_buffer)
{
    unsigned char raw[56];
    layout_t lt;
    mv_buffer(raw, &lt, 4096);
    hits_t h = {0};
    size_t n = sw_scan_args(&lt.l, NULL, at_guard(raw, 56), 56, on_hit, &h);
    const uint64_t req[] = {P4, P1, P2, P3, MV_DIMS, P5};
    const uint64_t opt[] = {4096}; /* the int and its padding, as one word */
    ck_assert_uint_eq(n, h.n);
    assert_hits_between(&h, req, 6, opt, 1);
}
END_TEST

START_TEST(scan_extra_stops_at_buflen_when_shorter_than_total)
{
    /* seven pointer parameters, but the caller's buffer holds only three;
     * the buffer ends at a guard page */
    const uint32_t sizes[] = {8, 8, 8, 8, 8, 8, 8};
    layout_t lt;
    mk_layout(&lt, sizes, 7);
    uint64_t words[3] = {P1, P2, P3};
    hits_t h = {0};
    size_t n = sw_scan_args(&lt.l, NULL, at_guard(words, 24), 24, on_hit, &h);
    ck_assert_uint_eq(n, 3);
    assert_hits(&h, words, 3);
}
END_TEST

START_TEST(scan_extra_stops_at_total_when_shorter_than_buflen)
{
    const uint32_t sizes[] = {8, 8};
    layout_t lt;
    mk_layout(&lt, sizes, 2);
    ck_assert_uint_eq(lt.l.total, 16);
    /* junk beyond total that looks like pointers */
    uint64_t words[5] = {P1, P2, P3, P4, P5};
    hits_t h = {0};
    size_t n = sw_scan_args(&lt.l, NULL, words, sizeof(words), on_hit, &h);
    ck_assert_uint_eq(n, 2);
    const uint64_t want[] = {P1, P2};
    assert_hits(&h, want, 2);
}
END_TEST

START_TEST(scan_extra_does_not_read_past_unaligned_buflen)
{
    /* buflen 20: words at 0 and 8 fit; the one at 16 would cross the end
     * of the buffer, which touches the guard page */
    const uint32_t sizes[] = {8, 8, 8};
    layout_t lt;
    mk_layout(&lt, sizes, 3);
    unsigned char raw[20] = {0};
    uint64_t w0 = P1, w1 = P2;
    memcpy(raw, &w0, 8);
    memcpy(raw + 8, &w1, 8);
    hits_t h = {0};
    size_t n = sw_scan_args(&lt.l, NULL, at_guard(raw, 20), 20, on_hit, &h);
    ck_assert_uint_eq(n, 2);
    const uint64_t want[] = {P1, P2};
    assert_hits(&h, want, 2);
}
END_TEST

START_TEST(scan_extra_skips_zero_words)
{
    unsigned char raw[56];
    layout_t lt;
    mv_buffer(raw, &lt, 0);
    memset(raw + 0, 0, 8);  /* a = NULL */
    memset(raw + 24, 0, 8); /* s.x = NULL */
    hits_t h = {0};
    size_t n = sw_scan_args(&lt.l, NULL, raw, 56, on_hit, &h);
    ck_assert_uint_eq(n, 4);
    const uint64_t want[] = {P1, P3, MV_DIMS, P5};
    assert_hits(&h, want, 4);
}
END_TEST

START_TEST(scan_extra_with_empty_buffer_reads_nothing)
{
    const uint32_t sizes[] = {8, 8};
    layout_t lt;
    mk_layout(&lt, sizes, 2);
    hits_t h = {0};
    /* buflen 0: buf points at an inaccessible page */
    ck_assert_uint_eq(sw_scan_args(&lt.l, NULL, guard(), 0, on_hit, &h), 0);
    ck_assert_uint_eq(h.n, 0);
    /* total 0: a kernel without parameters */
    layout_t none;
    mk_layout(&none, NULL, 0);
    uint64_t words[2] = {P1, P2};
    ck_assert_uint_eq(sw_scan_args(&none.l, NULL, words, sizeof(words), on_hit, &h), 0);
    ck_assert_uint_eq(h.n, 0);
}
END_TEST

START_TEST(scan_extra_array_end_to_end)
{
    /* what serve.c does: parse `extra`, then scan the buffer it names */
    unsigned char raw[56];
    layout_t lt;
    mv_buffer(raw, &lt, 0);
    size_t size = sizeof(raw);
    void *extra[] = {T_PARAM_BUFFER_POINTER, raw, T_PARAM_BUFFER_SIZE, &size, T_PARAM_END};
    const void *buf = NULL;
    size_t len = 0;
    ck_assert(sw_extra_buffer(extra, &buf, &len));
    hits_t h = {0};
    size_t n = sw_scan_args(&lt.l, NULL, buf, len, on_hit, &h);
    ck_assert_uint_eq(n, 6);
    const uint64_t want[] = {P4, P1, P2, P3, MV_DIMS, P5};
    assert_hits(&h, want, 6);
}
END_TEST

/* --- sw_extra_buffer ------------------------------------------------------- */

START_TEST(extra_buffer_parses_pointer_then_size)
{
    unsigned char raw[40];
    size_t size = sizeof(raw);
    void *extra[] = {T_PARAM_BUFFER_POINTER, raw, T_PARAM_BUFFER_SIZE, &size, T_PARAM_END};
    const void *buf = NULL;
    size_t len = 0;
    ck_assert(sw_extra_buffer(extra, &buf, &len));
    ck_assert_ptr_eq(buf, raw);
    ck_assert_uint_eq(len, 40);
}
END_TEST

START_TEST(extra_buffer_accepts_size_then_pointer)
{
    unsigned char raw[24];
    size_t size = 24;
    void *extra[] = {T_PARAM_BUFFER_SIZE, &size, T_PARAM_BUFFER_POINTER, raw, T_PARAM_END};
    const void *buf = NULL;
    size_t len = 0;
    ck_assert(sw_extra_buffer(extra, &buf, &len));
    ck_assert_ptr_eq(buf, raw);
    ck_assert_uint_eq(len, 24);
}
END_TEST

START_TEST(extra_buffer_reads_size_through_the_pointer)
{
    /* the value after BUFFER_SIZE is a pointer to a size_t, not the size */
    unsigned char raw[8];
    size_t size = 4104;
    void *extra[] = {T_PARAM_BUFFER_POINTER, raw, T_PARAM_BUFFER_SIZE, &size, T_PARAM_END};
    const void *buf = NULL;
    size_t len = 0;
    ck_assert(sw_extra_buffer(extra, &buf, &len));
    ck_assert_uint_eq(len, 4104);
}
END_TEST

START_TEST(extra_buffer_rejects_missing_size)
{
    unsigned char raw[16];
    void *extra[] = {T_PARAM_BUFFER_POINTER, raw, T_PARAM_END};
    const void *buf = NULL;
    size_t len = 0;
    ck_assert(!sw_extra_buffer(extra, &buf, &len));
}
END_TEST

START_TEST(extra_buffer_rejects_missing_pointer)
{
    size_t size = 16;
    void *extra[] = {T_PARAM_BUFFER_SIZE, &size, T_PARAM_END};
    const void *buf = NULL;
    size_t len = 0;
    ck_assert(!sw_extra_buffer(extra, &buf, &len));
}
END_TEST

START_TEST(extra_buffer_rejects_empty_array)
{
    void *extra[] = {T_PARAM_END};
    const void *buf = NULL;
    size_t len = 0;
    ck_assert(!sw_extra_buffer(extra, &buf, &len));
}
END_TEST

START_TEST(extra_buffer_rejects_unknown_key)
{
    unsigned char raw[16];
    size_t size = 16;
    const void *buf = NULL;
    size_t len = 0;
    /* an unknown key before, between and after the known ones */
    void *e1[] = {(void *)0x03, raw, T_PARAM_BUFFER_POINTER, raw, T_PARAM_BUFFER_SIZE, &size,
                  T_PARAM_END};
    void *e2[] = {T_PARAM_BUFFER_POINTER, raw, (void *)0x7f, &size, T_PARAM_BUFFER_SIZE, &size,
                  T_PARAM_END};
    void *e3[] = {T_PARAM_BUFFER_POINTER, raw, T_PARAM_BUFFER_SIZE, &size, (void *)0x04, raw,
                  T_PARAM_END};
    ck_assert(!sw_extra_buffer(e1, &buf, &len));
    ck_assert(!sw_extra_buffer(e2, &buf, &len));
    ck_assert(!sw_extra_buffer(e3, &buf, &len));
}
END_TEST

START_TEST(extra_buffer_rejects_null_size_pointer)
{
    /* reading: a BUFFER_SIZE whose size_t cannot be read is malformed, and
     * must not be dereferenced */
    unsigned char raw[16];
    void *extra[] = {T_PARAM_BUFFER_POINTER, raw, T_PARAM_BUFFER_SIZE, NULL, T_PARAM_END};
    const void *buf = NULL;
    size_t len = 0;
    ck_assert(!sw_extra_buffer(extra, &buf, &len));
}
END_TEST

/* --- a copied buffer (pointer tables) ------------------------------------- */

START_TEST(scan_words_reads_whole_words_of_an_unaligned_buffer)
{
    /* 21 bytes at an odd address: words at 0, 8 and (zero) 16 would need
     * 24; only the two whole ones are read, the zero one never reported,
     * and nothing past the end (a guard page) is touched. */
    unsigned char raw[22] = {0};
    uint64_t w0 = P1, w1 = P2;
    memcpy(raw + 1, &w0, 8);
    memcpy(raw + 9, &w1, 8);
    hits_t h = {0};
    ck_assert_uint_eq(sw_scan_words(at_guard(raw + 1, 21), 21, on_hit, &h), 2);
    const uint64_t want[] = {P1, P2};
    assert_hits(&h, want, 2);
    ck_assert_uint_eq(sw_scan_words(guard(), 7, on_hit, &h), 0);
}
END_TEST

/* --- suite ---------------------------------------------------------------- */

static void add_case(Suite *s, const TTest *t)
{
    TCase *tc = tcase_create(t->name);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, t);
    suite_add_tcase(s, tc);
}

Suite *scan_suite(void)
{
    Suite *s = suite_create("scan");
    add_case(s, scan_params_finds_pointer_params);
    add_case(s, scan_params_finds_pointers_inside_by_value_struct);
    add_case(s, scan_params_finds_every_word_of_a_large_struct);
    add_case(s, scan_params_skips_params_smaller_than_8_bytes);
    add_case(s, scan_params_scans_12_byte_param_at_offset_0_only);
    add_case(s, scan_params_scans_only_whole_words_of_odd_sized_param);
    add_case(s, scan_params_reads_params_only_within_their_size);
    add_case(s, scan_params_skips_zero_words);
    add_case(s, scan_params_returns_number_of_words_passed);
    add_case(s, scan_params_with_no_parameters_reports_nothing);
    add_case(s, scan_params_form_ignores_the_buffer);
    add_case(s, scan_extra_finds_pointers_in_packed_buffer);
    add_case(s, scan_extra_stops_at_buflen_when_shorter_than_total);
    add_case(s, scan_extra_stops_at_total_when_shorter_than_buflen);
    add_case(s, scan_extra_does_not_read_past_unaligned_buflen);
    add_case(s, scan_extra_skips_zero_words);
    add_case(s, scan_words_reads_whole_words_of_an_unaligned_buffer);
    add_case(s, scan_extra_with_empty_buffer_reads_nothing);
    add_case(s, scan_extra_array_end_to_end);
    add_case(s, extra_buffer_parses_pointer_then_size);
    add_case(s, extra_buffer_accepts_size_then_pointer);
    add_case(s, extra_buffer_reads_size_through_the_pointer);
    add_case(s, extra_buffer_rejects_missing_size);
    add_case(s, extra_buffer_rejects_missing_pointer);
    add_case(s, extra_buffer_rejects_empty_array);
    add_case(s, extra_buffer_rejects_unknown_key);
    add_case(s, extra_buffer_rejects_null_size_pointer);
    return s;
}

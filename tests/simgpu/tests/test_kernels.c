/*
 * test_kernels.c: each built-in kernel against a host reference written as
 * the README specifies (sequential float sums in index order), compared bit
 * for bit.  Outputs are surrounded by guard words that must stay untouched.
 */
#include "sgt.h"

#include <stdlib.h>
#include <string.h>

#define GUARD 64 /* guard elements after every output */
#define GUARD_WORD 0xa5a5a5a5u

static float *randv(size_t n, uint64_t seed)
{
    float *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    uint64_t st = seed;
    for (size_t i = 0; i < n; i++)
        v[i] = sgt_randf(&st);
    return v;
}

static CUdeviceptr upload(const void *h, size_t bytes)
{
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, bytes));
    SGT_OK(cuMemcpyHtoD(d, h, bytes));
    return d;
}

/* An output of n 4-byte elements followed by guard words, all preset. */
static CUdeviceptr output(size_t n)
{
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, (n + GUARD) * 4));
    SGT_OK(cuMemsetD32(d, GUARD_WORD, n + GUARD));
    return d;
}

/* Download n floats and check the guard words after them. */
static void download(void *h, CUdeviceptr d, size_t n)
{
    SGT_OK(cuCtxSynchronize());
    uint32_t *all = malloc((n + GUARD) * 4);
    SGT_OK(cuMemcpyDtoH(all, d, (n + GUARD) * 4));
    for (size_t i = n; i < n + GUARD; i++)
        ck_assert_msg(all[i] == GUARD_WORD, "guard word %zu overwritten", i - n);
    memcpy(h, all, n * 4);
    free(all);
}

static void assert_bits(const float *got, const float *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(memcmp(&got[i], &want[i], sizeof(float)) == 0,
                      "element %zu: got %a, want %a", i, got[i], want[i]);
}

static void launch(const char *name, void **params)
{
    SGT_OK(sgt_launch(sgt_func(name), NULL, params));
}

static void ref_gemv(const float *W, const float *x, float *y, uint32_t rows,
                     uint32_t cols)
{
    for (uint32_t r = 0; r < rows; r++) {
        float acc = 0.0f;
        for (uint32_t c = 0; c < cols; c++)
            acc += W[(size_t)r * cols + c] * x[c];
        y[r] = acc;
    }
}

START_TEST(kernel_fill_u32)
{
    sgt_init();
    const uint64_t n = 100003;
    CUdeviceptr d = output(n);
    CUdeviceptr dst = d;
    uint32_t value = 0x600dc0deu;
    uint64_t count = n;
    void *params[] = {&dst, &value, &count};
    launch("sg_fill_u32", params);
    uint32_t *h = malloc(n * 4);
    download(h, d, n);
    for (uint64_t i = 0; i < n; i++)
        ck_assert_uint_eq(h[i], value);
    free(h);
}
END_TEST

START_TEST(kernel_axpy_f32)
{
    sgt_init();
    const uint64_t n = 10007;
    float *x = randv(n, 1), *y = randv(n, 2), *want = malloc(n * 4),
          *got = malloc(n * 4);
    float a = 1.7f;
    for (uint64_t i = 0; i < n; i++)
        want[i] = a * x[i] + y[i];
    CUdeviceptr dx = upload(x, n * 4), dy = output(n);
    SGT_OK(cuMemcpyHtoD(dy, y, n * 4));
    uint64_t nn = n;
    void *params[] = {&a, &dx, &dy, &nn};
    launch("sg_axpy_f32", params);
    download(got, dy, n);
    assert_bits(got, want, n);
    free(x);
    free(y);
    free(want);
    free(got);
}
END_TEST

START_TEST(kernel_relu_f32)
{
    sgt_init();
    const uint64_t n = 5000;
    float *x = randv(n, 3), *got = malloc(n * 4);
    CUdeviceptr dx = output(n);
    SGT_OK(cuMemcpyHtoD(dx, x, n * 4));
    uint64_t nn = n;
    void *params[] = {&dx, &nn};
    launch("sg_relu_f32", params);
    download(got, dx, n);
    for (uint64_t i = 0; i < n; i++)
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
    assert_bits(got, x, n);
    free(x);
    free(got);
}
END_TEST

START_TEST(kernel_gemv_f32)
{
    sgt_init();
    uint32_t rows = 37, cols = 129;
    float *W = randv((size_t)rows * cols, 4), *x = randv(cols, 5);
    float want[37], got[37];
    ref_gemv(W, x, want, rows, cols);
    CUdeviceptr dW = upload(W, (size_t)rows * cols * 4), dx = upload(x, cols * 4);
    CUdeviceptr dy = output(rows);
    void *params[] = {&dW, &dx, &dy, &rows, &cols};
    launch("sg_gemv_f32", params);
    download(got, dy, rows);
    assert_bits(got, want, rows);
    free(W);
    free(x);
}
END_TEST

START_TEST(kernel_gemv_struct_f32)
{
    sgt_init();
    uint32_t rows = 23, cols = 300;
    float *W = randv((size_t)rows * cols, 6), *x = randv(cols, 7);
    float want[23], got[23];
    ref_gemv(W, x, want, rows, cols);
    struct {
        CUdeviceptr W, x, y;
        uint32_t rows, cols;
    } arg;
    ck_assert_uint_eq(sizeof arg, 32);
    memset(&arg, 0, sizeof arg);
    arg.W = upload(W, (size_t)rows * cols * 4);
    arg.x = upload(x, cols * 4);
    arg.y = output(rows);
    arg.rows = rows;
    arg.cols = cols;
    void *params[] = {&arg};
    launch("sg_gemv_struct_f32", params);
    download(got, arg.y, rows);
    assert_bits(got, want, rows);
    free(W);
    free(x);
}
END_TEST

START_TEST(kernel_gemv_table_f32)
{
    sgt_init();
    uint32_t rows = 16, cols = 64;
    CUdeviceptr table_h[3];
    float *Ws[3];
    for (int t = 0; t < 3; t++) {
        Ws[t] = randv((size_t)rows * cols, 10 + (uint64_t)t);
        table_h[t] = upload(Ws[t], (size_t)rows * cols * 4);
    }
    /* Written with a synchronous copy before the launch, as documented. */
    CUdeviceptr table = upload(table_h, sizeof table_h);
    float *x = randv(cols, 8);
    float want[16], got[16];
    uint32_t index = 2;
    ref_gemv(Ws[index], x, want, rows, cols);
    CUdeviceptr dx = upload(x, cols * 4), dy = output(rows);
    void *params[] = {&table, &index, &dx, &dy, &rows, &cols};
    launch("sg_gemv_table_f32", params);
    download(got, dy, rows);
    assert_bits(got, want, rows);
    for (int t = 0; t < 3; t++)
        free(Ws[t]);
    free(x);
}
END_TEST

START_TEST(kernel_checksum_u64)
{
    sgt_init();
    const uint64_t n = 100003; /* not a multiple of 8 */
    unsigned char *h = malloc(n);
    sgt_pattern(h, n, 12);
    CUdeviceptr src = upload(h, n), out;
    SGT_OK(cuMemAlloc(&out, 8));
    uint64_t bytes = n;
    void *params[] = {&src, &bytes, &out};
    launch("sg_checksum_u64", params);
    SGT_OK(cuCtxSynchronize());
    uint64_t got = 0;
    SGT_OK(cuMemcpyDtoH(&got, out, 8));
    ck_assert_uint_eq(got, sgt_fnv1a(h, n));
    /* FNV-1a 64 of nothing is the offset basis. */
    bytes = 0;
    launch("sg_checksum_u64", params);
    SGT_OK(cuCtxSynchronize());
    SGT_OK(cuMemcpyDtoH(&got, out, 8));
    ck_assert_uint_eq(got, 0xcbf29ce484222325ULL);
    /* A known vector: FNV-1a 64("a") = af63dc4c8601ec8c. */
    SGT_OK(cuMemcpyHtoD(src, "a", 1));
    bytes = 1;
    launch("sg_checksum_u64", params);
    SGT_OK(cuCtxSynchronize());
    SGT_OK(cuMemcpyDtoH(&got, out, 8));
    ck_assert_uint_eq(got, 0xaf63dc4c8601ec8cULL);
}
END_TEST

/* spillway_fingerprint, as the README specifies it. */
static uint64_t ref_fp_mix0(uint64_t w, uint64_t i)
{
    w += (i + 1) * 0x9E3779B97F4A7C15ull;
    w ^= w >> 33;
    w *= 0xFF51AFD7ED558CCDull;
    w ^= w >> 33;
    w *= 0xC4CEB9FE1A85EC53ull;
    return w ^ (w >> 33);
}

static uint64_t ref_fp_mix1(uint64_t w, uint64_t i)
{
    w ^= (i + 1) * 0xD6E8FEB86659FD93ull;
    w ^= w >> 30;
    w *= 0xBF58476D1CE4E5B9ull;
    w ^= w >> 27;
    w *= 0x94D049BB133111EBull;
    return w ^ (w >> 31);
}

static void ref_fp(const unsigned char *h, uint64_t bytes, uint64_t out[2])
{
    uint64_t n = bytes / 8, w;
    out[0] = out[1] = 0;
    for (uint64_t i = 0; i <= n; i++) {
        if (i == n && bytes % 8 == 0)
            break;
        w = 0;
        memcpy(&w, h + 8 * i, i < n ? 8 : bytes % 8);
        out[0] += ref_fp_mix0(w, i);
        out[1] += ref_fp_mix1(w, i);
    }
}

/* The built-in's two words for [src, +bytes), into out (16 bytes). */
static void fingerprint(CUdeviceptr src, uint64_t bytes, CUdeviceptr out, uint64_t got[2])
{
    void *params[] = {&src, &bytes, &out};
    SGT_OK(cuMemsetD8(out, 0, 16));
    launch("spillway_fingerprint", params);
    SGT_OK(cuCtxSynchronize());
    SGT_OK(cuMemcpyDtoH(got, out, 16));
}

START_TEST(kernel_fingerprint_reference)
{
    sgt_init();
    const uint64_t n = 100003; /* the tail is zero-padded */
    unsigned char *h = malloc(n);
    sgt_pattern(h, n, 21);
    CUdeviceptr src = upload(h, n), out = output(4);
    uint64_t got[2], want[2];
    for (uint64_t bytes = n - 8; bytes <= n; bytes++) {
        fingerprint(src, bytes, out, got);
        ref_fp(h, bytes, want);
        ck_assert_msg(got[0] == want[0] && got[1] == want[1],
                      "%llu bytes: got %016llx%016llx, want %016llx%016llx",
                      (unsigned long long)bytes, (unsigned long long)got[1],
                      (unsigned long long)got[0], (unsigned long long)want[1],
                      (unsigned long long)want[0]);
    }
    /* The guard words after the two words are untouched. */
    uint32_t all[4 + GUARD];
    SGT_OK(cuMemcpyDtoH(all, out, sizeof all));
    for (int i = 4; i < 4 + GUARD; i++)
        ck_assert_uint_eq(all[i], GUARD_WORD);
    free(h);
}
END_TEST

/* The changes a sum of weak terms let cancel, at many pairs of indices of
 * an fp64 buffer: both sign bits flipped (two values negated), bits 61 and
 * 62 flipped in both words or one in each, one word's sign with the
 * other's bit 62, and the two words swapped. Each must change the
 * fingerprint. The sum of mix(w, i) = (w ^ i*K) * C ^ >> 31 it replaces
 * missed about half of the sign-bit pairs. */
START_TEST(kernel_fingerprint_targeted)
{
    sgt_init();
    enum { N = 4096, NIDX = 40 };
    double *v = malloc(N * sizeof *v);
    for (int i = 0; i < N; i++)
        v[i] = (i % 7 - 3) * 0.375 + i * 1e-3; /* mixed signs and exponents */
    CUdeviceptr src = upload(v, N * sizeof *v), out = output(4);
    uint64_t base[2], got[2];
    fingerprint(src, N * sizeof *v, out, base);
    static const uint64_t pats[][2] = {
        {1ull << 63, 1ull << 63},
        {3ull << 61, 3ull << 61},
        {1ull << 61, 1ull << 62},
        {1ull << 62, 1ull << 61},
        {1ull << 63, 1ull << 62},
        {0, 0}, /* swap */
    };
    int idx[NIDX];
    for (int k = 0; k < NIDX; k++)
        idx[k] = (k * 104729) % N; /* spread over the buffer */
    int checked = 0;
    for (size_t p = 0; p < sizeof pats / sizeof pats[0]; p++)
        for (int x = 0; x < NIDX; x++)
            for (int y = x + 1; y < NIDX; y++) {
                int a = idx[x], b = idx[y];
                uint64_t wa, wb, na, nb;
                memcpy(&wa, &v[a], 8);
                memcpy(&wb, &v[b], 8);
                if (pats[p][0] | pats[p][1]) {
                    na = wa ^ pats[p][0];
                    nb = wb ^ pats[p][1];
                } else {
                    if (wa == wb)
                        continue; /* nothing changes */
                    na = wb;
                    nb = wa;
                }
                SGT_OK(cuMemcpyHtoD(src + 8 * (uint64_t)a, &na, 8));
                SGT_OK(cuMemcpyHtoD(src + 8 * (uint64_t)b, &nb, 8));
                fingerprint(src, N * sizeof *v, out, got);
                ck_assert_msg(got[0] != base[0] || got[1] != base[1],
                              "pattern %zu at words %d and %d: fingerprint unchanged", p, a, b);
                SGT_OK(cuMemcpyHtoD(src + 8 * (uint64_t)a, &wa, 8));
                SGT_OK(cuMemcpyHtoD(src + 8 * (uint64_t)b, &wb, 8));
                checked++;
            }
    ck_assert_int_gt(checked, 4000);
    /* Restored, the buffer has its first fingerprint again. */
    fingerprint(src, N * sizeof *v, out, got);
    ck_assert(got[0] == base[0] && got[1] == base[1]);
    free(v);
}
END_TEST

/* spillway_way_home's arguments and what one run of it left: dst's
 * bytes, its words (fp_home, then acc) and the flag. */
typedef struct {
    CUdeviceptr src, dst, words, changed;
    uint64_t bytes;
    unsigned char *back;
    uint64_t got[8];
    uint32_t flag;
} way_home_t;

static void way_home(way_home_t *t)
{
    CUdeviceptr fp_home = t->words, acc = t->words + 16;
    void *params[] = {&t->src, &t->dst, &t->bytes, &fp_home, &acc, &t->changed};
    launch("spillway_way_home", params);
    SGT_OK(cuCtxSynchronize());
    SGT_OK(cuMemcpyDtoH(t->back, t->dst, t->bytes));
    SGT_OK(cuMemcpyDtoH(t->got, t->words, sizeof t->got));
    SGT_OK(cuMemcpyDtoH(&t->flag, t->changed, 4));
}

/* spillway_way_home: the fingerprint of src added to the zeroed acc and
 * compared with fp_home. Equal, nothing is written but acc, left zero;
 * different, src goes to dst, *changed is set and fp_home takes src's
 * fingerprint, so the same bytes again are not copied. */
START_TEST(kernel_way_home_copies_only_a_changed_copy)
{
    sgt_init();
    const uint64_t n = 100003;
    unsigned char *h = malloc(n), *zero = calloc(1, n);
    sgt_pattern(h, n, 5);
    way_home_t t = {.src = upload(h, n), .dst = upload(zero, n), .words = upload(zero, 64),
                    .changed = upload(zero, 4), .bytes = n, .back = malloc(n)};
    uint64_t want[2];
    ref_fp(h, n, want);
    SGT_OK(cuMemcpyHtoD(t.words, want, 16)); /* home holds src's bytes: nothing goes */
    way_home(&t);
    ck_assert(memcmp(t.back, zero, n) == 0);
    ck_assert_uint_eq(t.flag, 0);
    ck_assert(t.got[0] == want[0] && t.got[1] == want[1]);
    ck_assert(t.got[2] == 0 && t.got[3] == 0 && t.got[4] == 0);
    SGT_OK(cuMemsetD8(t.words, 0, 16)); /* home's fingerprint differs: src goes */
    way_home(&t);
    ck_assert(memcmp(t.back, h, n) == 0);
    ck_assert_uint_eq(t.flag, 1);
    ck_assert(t.got[0] == want[0] && t.got[1] == want[1]);
    ck_assert(t.got[2] == 0 && t.got[3] == 0 && t.got[4] == 0);
    SGT_OK(cuMemsetD8(t.changed, 0, 4)); /* and the same bytes again stay */
    SGT_OK(cuMemsetD8(t.dst, 0, n));
    way_home(&t);
    ck_assert(memcmp(t.back, zero, n) == 0);
    ck_assert_uint_eq(t.flag, 0);
    free(h);
    free(zero);
    free(t.back);
}
END_TEST

/* spillway_unwindow's parameter, and spillway_unwindow_home's: the look's,
 * then the way home's six (src/device.h, field for field). */
typedef struct {
    uint64_t lo[8], len[8];
    uint64_t copy[16], copy_len[16], home[16];
    uint32_t unit[16];
    uint32_t nspans, ncopies;
    uint32_t *found;
} look_t;
typedef struct {
    look_t look;
    uint64_t src, dst, bytes, fp_home, acc, changed;
} look_home_t;

/* A served launch's aftermath: a copy C of home H, a word in C and one in
 * another output O holding addresses in C, inside the spans the launch
 * could write (C's first 4 KiB, O's), and one in C outside them. */
enum { LH_BYTES = 1 << 16, LH_OUT = 4096, LH_UNIT = 3 };
typedef struct {
    CUdeviceptr c, o, h, words, changed;
    uint32_t *found;
    uint64_t c_back[LH_BYTES / 8], o_back[LH_OUT / 8], h_back[LH_BYTES / 8], got[5];
    uint32_t flag;
} look_run_t;

static void look_reset(look_run_t *t, const uint64_t fp_home[2])
{
    static uint64_t c[LH_BYTES / 8], o[LH_OUT / 8];
    sgt_pattern(c, sizeof c, 9);
    sgt_pattern(o, sizeof o, 10);
    c[10] = t->c + 1000; /* in the span inside the copy: put back */
    c[2000] = t->c + 8;  /* outside every span: left */
    o[3] = t->c + 24;    /* in the other span: put back */
    SGT_OK(cuMemcpyHtoD(t->c, c, sizeof c));
    SGT_OK(cuMemcpyHtoD(t->o, o, sizeof o));
    SGT_OK(cuMemsetD8(t->h, 0, LH_BYTES));
    SGT_OK(cuMemsetD8(t->words, 0, 40));
    SGT_OK(cuMemcpyHtoD(t->words, fp_home, 16));
    SGT_OK(cuMemsetD8(t->changed, 0, 4));
    memset(t->found, 0, 16 * 4);
}

static void look_read(look_run_t *t)
{
    SGT_OK(cuCtxSynchronize());
    SGT_OK(cuMemcpyDtoH(t->c_back, t->c, LH_BYTES));
    SGT_OK(cuMemcpyDtoH(t->o_back, t->o, LH_OUT));
    SGT_OK(cuMemcpyDtoH(t->h_back, t->h, LH_BYTES));
    SGT_OK(cuMemcpyDtoH(t->got, t->words, sizeof t->got));
    SGT_OK(cuMemcpyDtoH(&t->flag, t->changed, 4));
}

/* Runs the look and the way home, fused or one after the other. */
static void look_home(look_run_t *t, const uint64_t fp_home[2], bool fused)
{
    look_reset(t, fp_home);
    look_home_t a = {.look = {.lo = {t->c, t->o}, .len = {4096, LH_OUT}, .copy = {t->c},
                              .copy_len = {LH_BYTES}, .home = {t->h}, .unit = {LH_UNIT},
                              .nspans = 2, .ncopies = 1, .found = t->found},
                     .src = t->c, .dst = t->h, .bytes = LH_BYTES, .fp_home = t->words,
                     .acc = t->words + 16, .changed = t->changed};
    if (fused) {
        void *params[] = {&a};
        launch("spillway_unwindow_home", params);
    } else {
        void *look[] = {&a.look};
        launch("spillway_unwindow", look);
        void *params[] = {&a.src, &a.dst, &a.bytes, &a.fp_home, &a.acc, &a.changed};
        launch("spillway_way_home", params);
    }
    look_read(t);
}

/* spillway_unwindow_home is spillway_unwindow then spillway_way_home: the
 * span words holding copy addresses, in the copy and outside it, are put
 * back to home, a word outside the spans is left, the unit is flagged, and
 * the copy goes home as put back where home's fingerprint differs, not
 * where home already holds the copy put back. */
START_TEST(kernel_unwindow_home_is_the_look_then_the_way_home)
{
    sgt_init();
    static look_run_t a, b;
    CUdeviceptr c, o, h, words, changed;
    SGT_OK(cuMemAlloc(&c, LH_BYTES));
    SGT_OK(cuMemAlloc(&o, LH_OUT));
    SGT_OK(cuMemAlloc(&h, LH_BYTES));
    SGT_OK(cuMemAlloc(&words, 40));
    SGT_OK(cuMemAlloc(&changed, 4));
    uint32_t *found;
    SGT_OK(cuMemAllocHost((void **)&found, 16 * 4));
    a = b = (look_run_t){.c = c, .o = o, .h = h, .words = words, .changed = changed,
                         .found = found};
    uint64_t differs[2] = {0, 0}, home_fp[2];
    look_home(&a, differs, true);
    uint32_t flagged = found[LH_UNIT];
    look_home(&b, differs, false);
    ck_assert(memcmp(a.c_back, b.c_back, sizeof a.c_back) == 0);
    ck_assert(memcmp(a.o_back, b.o_back, sizeof a.o_back) == 0);
    ck_assert(memcmp(a.h_back, b.h_back, sizeof a.h_back) == 0);
    ck_assert(memcmp(a.got, b.got, sizeof a.got) == 0);
    ck_assert_uint_eq(a.flag, b.flag);
    ck_assert_uint_eq(flagged, 1);
    ck_assert_uint_eq(found[LH_UNIT], 1);
    ck_assert(a.c_back[10] == h + 1000);
    ck_assert(a.c_back[2000] == c + 8);
    ck_assert(a.o_back[3] == h + 24);
    ck_assert(memcmp(a.h_back, a.c_back, LH_BYTES) == 0); /* home got the copy, put back */
    ck_assert_uint_eq(a.flag, 1);
    ref_fp((const unsigned char *)a.c_back, LH_BYTES, home_fp);
    ck_assert(a.got[0] == home_fp[0] && a.got[1] == home_fp[1]);
    ck_assert(a.got[2] == 0 && a.got[3] == 0 && a.got[4] == 0);
    look_home(&a, home_fp, true); /* home holds the copy put back: nothing goes */
    ck_assert(a.c_back[10] == h + 1000);
    ck_assert_uint_eq(a.h_back[10], 0);
    ck_assert_uint_eq(a.flag, 0);
    SGT_OK(cuMemFreeHost(found));
}
END_TEST

START_TEST(kernel_gemm_f32)
{
    sgt_init();
    uint32_t rows = 19, cols = 33, batch = 5;
    float *W = randv((size_t)rows * cols, 13),
          *X = randv((size_t)batch * cols, 14);
    float want[19 * 5], got[19 * 5];
    for (uint32_t b = 0; b < batch; b++)
        ref_gemv(W, X + (size_t)b * cols, want + (size_t)b * rows, rows, cols);
    CUdeviceptr dW = upload(W, (size_t)rows * cols * 4);
    CUdeviceptr dX = upload(X, (size_t)batch * cols * 4);
    CUdeviceptr dY = output((size_t)rows * batch);
    void *params[] = {&dW, &dX, &dY, &rows, &cols, &batch};
    launch("sg_gemm_f32", params);
    download(got, dY, (size_t)rows * batch);
    assert_bits(got, want, (size_t)rows * batch);
    free(W);
    free(X);
}
END_TEST

Suite *kernels_suite(void)
{
    Suite *s = suite_create("kernels");
    sgt_case(s, kernel_fill_u32);
    sgt_case(s, kernel_axpy_f32);
    sgt_case(s, kernel_relu_f32);
    sgt_case(s, kernel_gemv_f32);
    sgt_case(s, kernel_gemv_struct_f32);
    sgt_case(s, kernel_gemv_table_f32);
    sgt_case(s, kernel_checksum_u64);
    sgt_case(s, kernel_fingerprint_reference);
    sgt_case(s, kernel_fingerprint_targeted);
    sgt_case(s, kernel_way_home_copies_only_a_changed_copy);
    sgt_case(s, kernel_unwindow_home_is_the_look_then_the_way_home);
    sgt_case(s, kernel_gemm_f32);
    return s;
}

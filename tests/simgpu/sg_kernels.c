/*
 * The built-in kernels: a stable contract other tests rely on (README.md).
 * Each kernel's parameters are a C struct, so the parameter layout that
 * cuFuncGetParamInfo reports is exactly what a C caller lays out.
 * Float sums run sequentially in index order in a float accumulator that
 * starts at 0.0f, so a host reference written the same way matches bit for
 * bit.
 */
#include "sg.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct { uint32_t *dst; uint32_t value; uint64_t count; } fill_args_t;
typedef struct { float a; const float *x; float *y; uint64_t n; } axpy_args_t;
typedef struct { float *x; uint64_t n; } relu_args_t;
typedef struct { const float *W; const float *x; float *y; uint32_t rows, cols; } gemv_args_t;
typedef struct { gemv_args_t s; } gemv_struct_args_t;
typedef struct {
    const float *const *table; uint32_t index; const float *x; float *y; uint32_t rows, cols;
} gemv_table_args_t;
typedef struct { const void *src; uint64_t bytes; uint64_t *out; } checksum_args_t;
typedef struct { const float *p; int64_t lo, hi; float *out; } sum_args_t;
typedef struct { const void *base; uint64_t stride, n; uint64_t *table; } ptrs_args_t;
#define FOREACH_MAX 20
typedef struct {
    uint32_t n, add; uint64_t words[FOREACH_MAX]; uint32_t *t[FOREACH_MAX];
} foreach_args_t;
typedef struct {
    const float *W; const float *X; float *Y; uint32_t rows, cols, batch;
} gemm_args_t;

static sg_range_t R(const void *p, uint64_t len, bool write)
{
    return (sg_range_t){.addr = (uint64_t)p, .len = len, .write = write};
}

/* ---- fill ---- */
static int fill_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    const fill_args_t *p = a;
    r[0] = R(p->dst, p->count * 4, true);
    return 1;
}
static double fill_flops(const void *a) { return (double)((const fill_args_t *)a)->count; }
static void fill_run(const void *a, void *const *h)
{
    const fill_args_t *p = a;
    uint32_t *d = h[0];
    for (uint64_t i = 0; i < p->count; i++)
        d[i] = p->value;
}

/* ---- foreach: one add over many tensors, named in one struct passed by
 * value, as PyTorch's multi-tensor apply does (a fused optimizer step) */
static int foreach_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    const foreach_args_t *p = a;
    int n = p->n < FOREACH_MAX ? (int)p->n : FOREACH_MAX;
    for (int i = 0; i < n; i++)
        r[i] = R(p->t[i], p->words[i] * 4, true);
    return n;
}
static double foreach_flops(const void *a)
{
    const foreach_args_t *p = a;
    double words = 0;
    for (uint32_t i = 0; i < p->n && i < FOREACH_MAX; i++)
        words += (double)p->words[i];
    return words;
}
static void foreach_run(const void *a, void *const *h)
{
    const foreach_args_t *p = a;
    int n = p->n < FOREACH_MAX ? (int)p->n : FOREACH_MAX;
    for (int i = 0; i < n; i++) {
        uint32_t *d = h[i];
        for (uint64_t k = 0; k < p->words[i]; k++)
            d[k] += p->add;
    }
}

/* ---- axpy ---- */
static int axpy_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    const axpy_args_t *p = a;
    r[0] = R(p->x, p->n * 4, false);
    r[1] = R(p->y, p->n * 4, true);
    return 2;
}
static double axpy_flops(const void *a) { return 2.0 * (double)((const axpy_args_t *)a)->n; }
static void axpy_run(const void *a, void *const *h)
{
    const axpy_args_t *p = a;
    const float *x = h[0];
    float *y = h[1];
    for (uint64_t i = 0; i < p->n; i++)
        y[i] = p->a * x[i] + y[i];
}

/* ---- relu ---- */
static int relu_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    const relu_args_t *p = a;
    r[0] = R(p->x, p->n * 4, true);
    return 1;
}
static double relu_flops(const void *a) { return (double)((const relu_args_t *)a)->n; }
static void relu_run(const void *a, void *const *h)
{
    const relu_args_t *p = a;
    float *x = h[0];
    for (uint64_t i = 0; i < p->n; i++)
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* ---- gemv, in three forms ---- */
static void gemv(const float *W, const float *x, float *y, uint32_t rows, uint32_t cols)
{
    for (uint32_t r = 0; r < rows; r++) {
        float acc = 0.0f;
        for (uint32_t c = 0; c < cols; c++)
            acc += W[(uint64_t)r * cols + c] * x[c];
        y[r] = acc;
    }
}
static int gemv_ranges_of(const gemv_args_t *p, sg_range_t *r)
{
    r[0] = R(p->W, (uint64_t)p->rows * p->cols * 4, false);
    r[1] = R(p->x, (uint64_t)p->cols * 4, false);
    r[2] = R(p->y, (uint64_t)p->rows * 4, true);
    return 3;
}
static double gemv_flops_of(uint32_t rows, uint32_t cols) { return 2.0 * rows * (double)cols; }

static int gemv_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    return gemv_ranges_of(a, r);
}
static double gemv_flops(const void *a)
{
    const gemv_args_t *p = a;
    return gemv_flops_of(p->rows, p->cols);
}
static void gemv_run(const void *a, void *const *h)
{
    const gemv_args_t *p = a;
    gemv(h[0], h[1], h[2], p->rows, p->cols);
}

static int gemv_struct_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    return gemv_ranges_of(&((const gemv_struct_args_t *)a)->s, r);
}
static double gemv_struct_flops(const void *a)
{
    return gemv_flops(&((const gemv_struct_args_t *)a)->s);
}
static void gemv_struct_run(const void *a, void *const *h)
{
    gemv_run(&((const gemv_struct_args_t *)a)->s, h);
}

/* The weight's address is loaded from device memory: range 0 is the table
 * slot, range 1 the weight it points to. An unreadable slot yields a
 * zero-length weight range; the slot range itself then faults. */
static int gemv_table_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    const gemv_table_args_t *p = a;
    uint64_t slot = (uint64_t)p->table + 8ull * p->index, W = 0;
    r[0] = R((void *)slot, 8, false);
    bool ok = peek(slot, &W, sizeof W);
    gemv_args_t g = {(const float *)W, p->x, p->y, p->rows, p->cols};
    gemv_ranges_of(&g, r + 1);
    if (!ok)
        r[1].len = 0;
    return 4;
}
static double gemv_table_flops(const void *a)
{
    const gemv_table_args_t *p = a;
    return gemv_flops_of(p->rows, p->cols);
}
static void gemv_table_run(const void *a, void *const *h)
{
    const gemv_table_args_t *p = a;
    gemv(h[1], h[2], h[3], p->rows, p->cols);
}

/* ---- checksum: FNV-1a 64 ---- */
static int checksum_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    const checksum_args_t *p = a;
    r[0] = R(p->src, p->bytes, false);
    r[1] = R(p->out, 8, true);
    return 2;
}
static double checksum_flops(const void *a) { return 2.0 * (double)((const checksum_args_t *)a)->bytes; }
static void checksum_run(const void *a, void *const *h)
{
    const checksum_args_t *p = a;
    const unsigned char *s = h[0];
    uint64_t v = 0xcbf29ce484222325ull;
    for (uint64_t i = 0; i < p->bytes; i++) {
        v ^= s[i];
        v *= 0x100000001b3ull;
    }
    memcpy(h[1], &v, 8);
}

/* ---- sum: out = p[lo] + ... + p[hi - 1], offsets from p, negative too ---- */
static int sum_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    const sum_args_t *p = a;
    uint64_t n = p->hi > p->lo ? (uint64_t)(p->hi - p->lo) : 0;
    r[0] = R((const char *)p->p + p->lo * 4, n * 4, false);
    r[1] = R(p->out, 4, true);
    return 2;
}
static double sum_flops(const void *a)
{
    const sum_args_t *p = a;
    return p->hi > p->lo ? (double)(p->hi - p->lo) : 0;
}
static void sum_run(const void *a, void *const *h)
{
    const sum_args_t *p = a;
    const float *x = h[0];
    float acc = 0.0f;
    for (int64_t i = 0; i < p->hi - p->lo; i++)
        acc += x[i];
    memcpy(h[1], &acc, 4);
}

/* ---- ptrs: table[i] = base + i * stride, pointers a kernel derives from
 * its argument and stores for later kernels (a grouped GEMM's set-up).
 * It reads nothing behind base. ---- */
static int ptrs_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    const ptrs_args_t *p = a;
    r[0] = R(p->table, p->n * 8, true);
    return 1;
}
static double ptrs_flops(const void *a) { return (double)((const ptrs_args_t *)a)->n; }
static void ptrs_run(const void *a, void *const *h)
{
    const ptrs_args_t *p = a;
    uint64_t *t = h[0];
    for (uint64_t i = 0; i < p->n; i++)
        t[i] = (uint64_t)p->base + i * p->stride;
}

/* ---- spillway_fingerprint: spillway's own kernel, the host version ----
 * out[k] = sum over 8-byte words i (the tail zero-padded) of mix_k(w_i, i),
 * mod 2^64, k = 0, 1: two keyed full-avalanche finalizers (fmix64,
 * SplitMix64), each a bijection of w. src/fingerprint.cu says what it
 * promises; this must match it bit for bit. */
typedef struct { const void *src; uint64_t bytes; uint64_t *out; } fp_args_t;
static int fp_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    const fp_args_t *p = a;
    r[0] = R(p->src, p->bytes, false);
    r[0].align = 8; /* read as 8-byte words (fingerprint.cu) */
    r[1] = R(p->out, 16, true);
    return 2;
}
static double fp_flops(const void *a) { return (double)((const fp_args_t *)a)->bytes / 2; }
static uint64_t fp_mix0(uint64_t w, uint64_t i)
{
    w += (i + 1) * 0x9E3779B97F4A7C15ull;
    w ^= w >> 33;
    w *= 0xFF51AFD7ED558CCDull;
    w ^= w >> 33;
    w *= 0xC4CEB9FE1A85EC53ull;
    return w ^ (w >> 33);
}
static uint64_t fp_mix1(uint64_t w, uint64_t i)
{
    w ^= (i + 1) * 0xD6E8FEB86659FD93ull;
    w ^= w >> 30;
    w *= 0xBF58476D1CE4E5B9ull;
    w ^= w >> 27;
    w *= 0x94D049BB133111EBull;
    return w ^ (w >> 31);
}
static void fp_run(const void *a, void *const *h)
{
    const fp_args_t *p = a;
    const unsigned char *s = h[0];
    uint64_t sum[2] = {0, 0}, n = p->bytes / 8, w;
    for (uint64_t i = 0; i < n; i++) {
        memcpy(&w, s + 8 * i, 8);
        sum[0] += fp_mix0(w, i);
        sum[1] += fp_mix1(w, i);
    }
    if (p->bytes % 8) {
        w = 0;
        memcpy(&w, s + 8 * n, p->bytes % 8);
        sum[0] += fp_mix0(w, n);
        sum[1] += fp_mix1(w, n);
    }
    memcpy(h[1], sum, 16);
}

/* ---- spillway_copy_if_changed: spillway's write-back (fingerprint.cu) ----
 * Copies src to dst when the two fingerprints differ, and sets *changed.
 * Whether it copies is known only when it runs, so the copy's ranges are
 * "maybe" ranges: hazard-checked, not charged (README.md, Virtual time). */
typedef struct {
    const void *src; void *dst; uint64_t bytes;
    const uint64_t *fp_home, *fp_now; uint32_t *changed;
} cic_args_t;
static int cic_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    const cic_args_t *p = a;
    r[0] = R(p->fp_home, 16, false);
    r[1] = R(p->fp_now, 16, false);
    r[2] = R(p->changed, 4, true);
    r[3] = R(p->src, p->bytes, false);
    r[4] = R(p->dst, p->bytes, true);
    r[2].maybe = r[3].maybe = r[4].maybe = true; /* written only on a difference */
    return 5;
}
static double cic_flops(const void *a) { return 0; }
static void cic_run(const void *a, void *const *h)
{
    const cic_args_t *p = a;
    if (memcmp(h[0], h[1], 16) == 0)
        return;
    uint32_t one = 1;
    memcpy(h[2], &one, 4);
    memcpy(h[4], h[3], p->bytes);
}

/* ---- spillway_way_home: the fingerprint and write-back in one kernel
 * (fingerprint.cu): the copy's fingerprint added to acc[0..1], compared
 * with fp_home; on a difference the copy goes to dst, *changed is set and
 * fp_home takes the new one; acc[0..2] is left zero. The copy, the flag
 * and fp_home are "maybe" writes, as spillway_copy_if_changed's. ---- */
typedef struct {
    const void *src; void *dst; uint64_t bytes;
    uint64_t *fp_home, *acc; uint32_t *changed;
} wh_args_t;
static int wh_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    const wh_args_t *p = a;
    r[0] = R(p->src, p->bytes, false);
    r[0].align = 8; /* read as 8-byte words (fingerprint.cu) */
    r[1] = R(p->acc, 24, true);
    r[2] = R(p->fp_home, 16, true);
    r[3] = R(p->changed, 4, true);
    r[4] = R(p->dst, p->bytes, true);
    r[2].maybe = r[3].maybe = r[4].maybe = true; /* written only on a difference */
    return 5;
}
static double wh_flops(const void *a) { return (double)((const wh_args_t *)a)->bytes / 2; }
static void wh_run(const void *a, void *const *h)
{
    const wh_args_t *p = a;
    fp_args_t fp = {p->src, p->bytes, NULL};
    uint64_t sum[2], acc[3], home[2];
    void *fh[2] = {h[0], sum};
    fp_run(&fp, fh);
    memcpy(acc, h[1], sizeof acc);
    sum[0] += acc[0];
    sum[1] += acc[1];
    memset(acc, 0, sizeof acc);
    memcpy(h[1], acc, sizeof acc);
    memcpy(home, h[2], sizeof home);
    if (home[0] == sum[0] && home[1] == sum[1])
        return;
    uint32_t one = 1;
    memcpy(h[3], &one, 4);
    memcpy(h[2], sum, sizeof sum);
    memcpy(h[4], h[0], p->bytes);
}

/* ---- gemm: the compute-bound case ----
 * A tiled GEMM reads its weight once per tile row of the activations.
 * Host-backed, every such read crosses PCIe. cuBLAS on an H200 (fp16
 * 8192 x 8192, docs/gpu-facts.md, 2026-11-27) read it once up to batch
 * 128, twice at 256 and 512, then once per 256 rows (16 times at 4096):
 * tiles of 128 rows up to a batch of 256, of 256 above. Device-backed, W
 * counts once: a re-read of 4 bytes at HBM speed (1.3 ps at 3000 GB/s)
 * hides behind the 256 flops a 128-row tile does with them (4.3 ps at 60
 * TFLOPS). */
static uint32_t gemm_host_reads(uint32_t batch)
{
    uint32_t tile = batch <= 256 ? 128 : 256;
    return (batch + tile - 1) / tile;
}

static int gemm_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    const gemm_args_t *p = a;
    r[0] = R(p->W, (uint64_t)p->rows * p->cols * 4, false);
    r[0].host_reads = gemm_host_reads(p->batch);
    r[1] = R(p->X, (uint64_t)p->batch * p->cols * 4, false);
    r[2] = R(p->Y, (uint64_t)p->batch * p->rows * 4, true);
    return 3;
}
static double gemm_flops(const void *a)
{
    const gemm_args_t *p = a;
    return gemv_flops_of(p->rows, p->cols) * p->batch;
}
static void gemm_run(const void *a, void *const *h)
{
    const gemm_args_t *p = a;
    const float *X = h[1];
    float *Y = h[2];
    for (uint32_t b = 0; b < p->batch; b++)
        gemv(h[0], X + (uint64_t)b * p->cols, Y + (uint64_t)b * p->rows, p->rows, p->cols);
}

/* ---- gemv through a TMA descriptor ----
 * W arrives only inside a CUtensorMap (by value, 128 bytes): rank 2,
 * FLOAT32, globalDim = {cols, rows}, globalStrides = {row pitch in
 * bytes}. y[r] = sum over c of W[r][c] * x[c]. A descriptor that is not
 * one, or not of that shape, makes the kernel read address 0: it faults,
 * as a malformed descriptor does on a GPU. */
typedef struct { CUtensorMap W; const float *x; float *y; } gemv_tma_args_t;

/* Decodes the arguments at a into *p and *t. They are copied first: a
 * CUtensorMap is 128-byte aligned, and a launch's argument buffer is not
 * (reading it in place is undefined behaviour, which UBSan reports). */
static bool tma_matrix(const void *a, gemv_tma_args_t *p, sg_tensormap_t *t)
{
    memcpy(p, a, sizeof *p);
    return sg_tensormap_decode(&p->W, t) && t->rank == 2 &&
           t->type == CU_TENSOR_MAP_DATA_TYPE_FLOAT32 && t->stride[0] >= t->dim[0] * 4;
}
static int gemv_tma_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    gemv_tma_args_t args, *p = &args;
    sg_tensormap_t t;
    if (!tma_matrix(a, p, &t)) {
        r[0] = R(NULL, 4, false);
        return 1;
    }
    r[0] = R((void *)t.addr, (t.dim[1] - 1) * t.stride[0] + t.dim[0] * 4, false);
    r[1] = R(p->x, t.dim[0] * 4, false);
    r[2] = R(p->y, t.dim[1] * 4, true);
    return 3;
}
static double gemv_tma_flops(const void *a)
{
    gemv_tma_args_t p;
    sg_tensormap_t t;
    return tma_matrix(a, &p, &t) ? gemv_flops_of((uint32_t)t.dim[1], (uint32_t)t.dim[0]) : 0;
}
static void gemv_tma_run(const void *a, void *const *h)
{
    gemv_tma_args_t p;
    sg_tensormap_t t;
    if (!tma_matrix(a, &p, &t))
        return;
    const unsigned char *W = h[0];
    const float *x = h[1];
    float *y = h[2];
    for (uint64_t r = 0; r < t.dim[1]; r++) {
        const float *row = (const float *)(W + r * t.stride[0]);
        float acc = 0.0f;
        for (uint64_t c = 0; c < t.dim[0]; c++)
            acc += row[c] * x[c];
        y[r] = acc;
    }
}

/* ---- spillway_unwindow: spillway's guard for stored pointers, the host
 * version (src/fingerprint.cu says what it does; the layout matches its
 * unwindow_args). Each span is declared an unordered read: the kernel
 * writes only words that hold an address in a copy the launch just before
 * it on the same stream was given, which only that launch can have
 * stored, so another stream touching them races with that launch
 * already; and a word it only reads is no one else's concern, though a
 * span reaches past what the launch wrote into what other streams may be
 * writing (a neighbour's output in one buffer). The flags in host memory
 * are written only when such a word is found, as on a GPU (set_found). ---- */
#define UNWINDOW_SPANS 8
#define UNWINDOW_COPIES 16
typedef struct {
    uint64_t lo[UNWINDOW_SPANS], len[UNWINDOW_SPANS];
    uint64_t copy[UNWINDOW_COPIES], copy_len[UNWINDOW_COPIES], home[UNWINDOW_COPIES];
    uint32_t unit[UNWINDOW_COPIES];
    uint32_t nspans, ncopies;
    uint32_t *found;
} unwindow_args_t;
_Static_assert(sizeof(unwindow_args_t) <= SG_MAX_ARGS, "spillway_unwindow's parameter fits");
static int unwindow_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    unwindow_args_t p;
    memcpy(&p, a, sizeof p);
    int n = 0;
    for (uint32_t s = 0; s < p.nspans && s < UNWINDOW_SPANS; s++) {
        r[n] = R((void *)p.lo[s], p.len[s], false);
        r[n++].unordered = true;
    }
    return n;
}
static double unwindow_flops(const void *a)
{
    unwindow_args_t p;
    memcpy(&p, a, sizeof p);
    double words = 0;
    for (uint32_t s = 0; s < p.nspans && s < UNWINDOW_SPANS; s++)
        words += (double)p.len[s] / 8;
    return words * (p.ncopies + 1);
}
/* Sets a unit's flag, in the host memory the args name: not a declared
 * range, since it is written only when a stored window address is found,
 * which is known only as the kernel runs. The memory lock is held for
 * reading, as a translation needs. */
static void set_found(uint32_t *flag)
{
    sg_xlate_t x;
    uint32_t one = 1;
    if (sg_mem_xlate((uint64_t)flag, 4, true, true, &x) && x.host)
        memcpy(x.host, &one, 4);
}

static void unwindow_run(const void *a, void *const *h)
{
    unwindow_args_t p;
    memcpy(&p, a, sizeof p);
    uint32_t nspans = p.nspans < UNWINDOW_SPANS ? p.nspans : UNWINDOW_SPANS;
    for (uint32_t s = 0; s < nspans; s++) {
        uint64_t first = (p.lo[s] + 7) & ~7ull, end = (p.lo[s] + p.len[s]) & ~7ull;
        unsigned char *base = (unsigned char *)h[s] + (first - p.lo[s]);
        for (uint64_t i = 0; first + 8 * i < end; i++) {
            uint64_t v;
            memcpy(&v, base + 8 * i, 8);
            for (uint32_t k = 0; k < p.ncopies && k < UNWINDOW_COPIES; k++)
                if (v - p.copy[k] < p.copy_len[k]) {
                    v = p.home[k] + (v - p.copy[k]);
                    memcpy(base + 8 * i, &v, 8);
                    set_found(p.found + p.unit[k]);
                    break;
                }
        }
    }
}

/* ---- spillway_unwindow_home: spillway_unwindow and spillway_way_home in
 * one kernel (src/fingerprint.cu): the way home's five ranges first, as
 * write_back_source() (sg_stream.c) expects, then the spans. On a GPU the
 * span words inside the copy are put back by the threads that hash them;
 * here, one thread, the whole look runs first and the way home hashes
 * what it left, the same bytes. ---- */
typedef struct {
    unwindow_args_t uw;
    const void *src; void *dst; uint64_t bytes;
    uint64_t *fp_home, *acc; uint32_t *changed;
} uwh_args_t;
_Static_assert(sizeof(uwh_args_t) == 640, "spillway_unwindow_home's parameter is 640 bytes");
static wh_args_t uwh_way_home(const uwh_args_t *p)
{
    return (wh_args_t){p->src, p->dst, p->bytes, p->fp_home, p->acc, p->changed};
}
static int uwh_ranges(const void *a, sg_range_t *r, sg_peek_fn peek)
{
    uwh_args_t p;
    memcpy(&p, a, sizeof p);
    wh_args_t wh = uwh_way_home(&p);
    int n = wh_ranges(&wh, r, peek);
    return n + unwindow_ranges(&p.uw, r + n, peek);
}
static double uwh_flops(const void *a)
{
    uwh_args_t p;
    memcpy(&p, a, sizeof p);
    wh_args_t wh = uwh_way_home(&p);
    return wh_flops(&wh) + unwindow_flops(&p.uw);
}
static void uwh_run(const void *a, void *const *h)
{
    uwh_args_t p;
    memcpy(&p, a, sizeof p);
    wh_args_t wh = uwh_way_home(&p);
    unwindow_run(&p.uw, h + 5);
    wh_run(&wh, h);
}

/* ---- the table ---- */
#define P(T, f) offsetof(T, f)
#define S(T, f) sizeof(((T *)0)->f)
#define K(nm, T, stem, n, ...) \
    {nm, n, __VA_ARGS__, sizeof(T), stem##_ranges, stem##_flops, stem##_run}

static const sg_kernel_t kernels[] = {
    K("sg_fill_u32", fill_args_t, fill, 3,
      {P(fill_args_t, dst), P(fill_args_t, value), P(fill_args_t, count)},
      {S(fill_args_t, dst), S(fill_args_t, value), S(fill_args_t, count)}),
    K("sg_foreach_add_u32", foreach_args_t, foreach, 1, {0}, {sizeof(foreach_args_t)}),
    K("sg_axpy_f32", axpy_args_t, axpy, 4,
      {P(axpy_args_t, a), P(axpy_args_t, x), P(axpy_args_t, y), P(axpy_args_t, n)},
      {S(axpy_args_t, a), S(axpy_args_t, x), S(axpy_args_t, y), S(axpy_args_t, n)}),
    K("sg_relu_f32", relu_args_t, relu, 2,
      {P(relu_args_t, x), P(relu_args_t, n)}, {S(relu_args_t, x), S(relu_args_t, n)}),
    K("sg_gemv_f32", gemv_args_t, gemv, 5,
      {P(gemv_args_t, W), P(gemv_args_t, x), P(gemv_args_t, y), P(gemv_args_t, rows),
       P(gemv_args_t, cols)},
      {S(gemv_args_t, W), S(gemv_args_t, x), S(gemv_args_t, y), S(gemv_args_t, rows),
       S(gemv_args_t, cols)}),
    K("sg_gemv_struct_f32", gemv_struct_args_t, gemv_struct, 1,
      {P(gemv_struct_args_t, s)}, {S(gemv_struct_args_t, s)}),
    K("sg_gemv_table_f32", gemv_table_args_t, gemv_table, 6,
      {P(gemv_table_args_t, table), P(gemv_table_args_t, index), P(gemv_table_args_t, x),
       P(gemv_table_args_t, y), P(gemv_table_args_t, rows), P(gemv_table_args_t, cols)},
      {S(gemv_table_args_t, table), S(gemv_table_args_t, index), S(gemv_table_args_t, x),
       S(gemv_table_args_t, y), S(gemv_table_args_t, rows), S(gemv_table_args_t, cols)}),
    K("sg_checksum_u64", checksum_args_t, checksum, 3,
      {P(checksum_args_t, src), P(checksum_args_t, bytes), P(checksum_args_t, out)},
      {S(checksum_args_t, src), S(checksum_args_t, bytes), S(checksum_args_t, out)}),
    K("sg_sum_f32", sum_args_t, sum, 4,
      {P(sum_args_t, p), P(sum_args_t, lo), P(sum_args_t, hi), P(sum_args_t, out)},
      {S(sum_args_t, p), S(sum_args_t, lo), S(sum_args_t, hi), S(sum_args_t, out)}),
    K("sg_ptrs_u64", ptrs_args_t, ptrs, 4,
      {P(ptrs_args_t, base), P(ptrs_args_t, stride), P(ptrs_args_t, n), P(ptrs_args_t, table)},
      {S(ptrs_args_t, base), S(ptrs_args_t, stride), S(ptrs_args_t, n), S(ptrs_args_t, table)}),
    K("spillway_fingerprint", fp_args_t, fp, 3,
      {P(fp_args_t, src), P(fp_args_t, bytes), P(fp_args_t, out)},
      {S(fp_args_t, src), S(fp_args_t, bytes), S(fp_args_t, out)}),
    K("spillway_copy_if_changed", cic_args_t, cic, 6,
      {P(cic_args_t, src), P(cic_args_t, dst), P(cic_args_t, bytes), P(cic_args_t, fp_home),
       P(cic_args_t, fp_now), P(cic_args_t, changed)},
      {S(cic_args_t, src), S(cic_args_t, dst), S(cic_args_t, bytes), S(cic_args_t, fp_home),
       S(cic_args_t, fp_now), S(cic_args_t, changed)}),
    K("spillway_unwindow", unwindow_args_t, unwindow, 1, {0}, {sizeof(unwindow_args_t)}),
    K("spillway_way_home", wh_args_t, wh, 6,
      {P(wh_args_t, src), P(wh_args_t, dst), P(wh_args_t, bytes), P(wh_args_t, fp_home),
       P(wh_args_t, acc), P(wh_args_t, changed)},
      {S(wh_args_t, src), S(wh_args_t, dst), S(wh_args_t, bytes), S(wh_args_t, fp_home),
       S(wh_args_t, acc), S(wh_args_t, changed)}),
    K("spillway_unwindow_home", uwh_args_t, uwh, 1, {0}, {sizeof(uwh_args_t)}),
    K("sg_gemm_f32", gemm_args_t, gemm, 6,
      {P(gemm_args_t, W), P(gemm_args_t, X), P(gemm_args_t, Y), P(gemm_args_t, rows),
       P(gemm_args_t, cols), P(gemm_args_t, batch)},
      {S(gemm_args_t, W), S(gemm_args_t, X), S(gemm_args_t, Y), S(gemm_args_t, rows),
       S(gemm_args_t, cols), S(gemm_args_t, batch)}),
    K("sg_gemv_tma_f32", gemv_tma_args_t, gemv_tma, 3,
      {P(gemv_tma_args_t, W), P(gemv_tma_args_t, x), P(gemv_tma_args_t, y)},
      {S(gemv_tma_args_t, W), S(gemv_tma_args_t, x), S(gemv_tma_args_t, y)}),
};

const sg_kernel_t *sg_kernel_find(const char *name)
{
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        if (strcmp(kernels[i].name, name) == 0)
            return &kernels[i];
    return NULL;
}

int sg_kernel_count(void)
{
    return (int)(sizeof kernels / sizeof kernels[0]);
}

const sg_kernel_t *sg_kernel_at(int i)
{
    return &kernels[i];
}

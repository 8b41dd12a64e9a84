/*
 * diff_ops.c: sg-diff's operations on data, each drawn at random: where,
 * how much, on which stream, synchronous or not. Every access goes through
 * diff_touch first (diff.h: the ordering), every byte a buffer holds was
 * written by the program (new buffers are initialized, so a recycled
 * handle's old bytes never show), and every word a kernel reads lies
 * inside its buffer's size, never in the rounding after it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"

#define MIB (1024ull * 1024ull)
#define BLOCK 256u

enum { K_FILL, K_AXPY, K_RELU, K_GEMV, K_GEMV_STRUCT, K_GEMV_TABLE, K_CHECKSUM, K_GEMM, K_KINDS };

/* ---- picking ---- */

static int pick_stream(diff_t *st)
{
    return (int)diff_range(st, 0, DIFF_STREAMS - 1);
}

/* A random buffer of at least min bytes other than not (may be NULL);
 * NULL when there is none. */
static diff_buf_t *pick_buf(diff_t *st, uint64_t min, const diff_buf_t *not)
{
    if (st->nbufs == 0)
        return NULL;
    int start = (int)diff_range(st, 0, (uint64_t)st->nbufs - 1);
    for (int k = 0; k < st->nbufs; k++) {
        diff_buf_t *b = st->bufs[(start + k) % st->nbufs];
        if (b->bytes >= min && b != not)
            return b;
    }
    return NULL;
}

/* A range of whole words inside b: the whole buffer a third of the time,
 * else a random one of at most max bytes. */
static void pick_range(diff_t *st, const diff_buf_t *b, uint64_t max, uint64_t *off,
                       uint64_t *len)
{
    uint64_t words = b->bytes / 4;
    if (b->bytes <= max && diff_chance(st, 33)) {
        *off = 0;
        *len = words * 4;
        return;
    }
    uint64_t n = diff_range(st, 1, words < max / 4 ? words : max / 4);
    *off = diff_range(st, 0, words - n) * 4;
    *len = n * 4;
}

static uint32_t small_float_bits(diff_t *st)
{
    float f = (float)((int)diff_range(st, 0, 255) - 128) / 32.0f;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint32_t grid(uint64_t n)
{
    return (uint32_t)((n + BLOCK - 1) / BLOCK);
}

static int launch(diff_t *st, CUfunction f, const char *name, uint64_t n, int s, void **params,
                  int np)
{
    if (st->trace) {
        /* The first word of each parameter: the pointers, for most. */
        fprintf(stderr, "diff: launch %s on stream %d:", name, s);
        for (int i = 0; i < np; i++)
            fprintf(stderr, " 0x%llx", *(unsigned long long *)params[i]);
        fprintf(stderr, "\n");
    }
    DCK(st, st->d.LaunchKernel(f, grid(n ? n : 1), 1, 1, BLOCK, 1, 1, 0, st->stream[s], params,
                               NULL));
    st->counts[0]++;
    return DIFF_OK;
}

#define LAUNCH(st, f, n, s, p) launch((st), (st)->f, #f, (n), (s), (p), sizeof(p) / sizeof(p)[0])

/* ---- allocation ---- */

/* Sizes below, around and above spillway's default 2 MiB threshold, up to
 * 40 MiB; whole 16-byte multiples. */
static uint64_t pick_size(diff_t *st)
{
    unsigned r = (unsigned)diff_range(st, 0, 99);
    uint64_t n;
    if (r < 25)
        n = diff_range(st, 16, 16ull << diff_range(st, 0, 16));
    else if (r < 35)
        n = diff_range(st, 2 * MIB - 64 * 1024, 2 * MIB + 64 * 1024);
    else if (r < 80)
        n = diff_range(st, 2 * MIB, 12 * MIB);
    else
        n = diff_range(st, 12 * MIB, 40 * MIB);
    if (n > st->cap / 4 * 3)
        n = st->cap / 4 * 3; /* room for it without freeing everything */
    n &= ~15ull;
    return n ? n : 16;
}

static int freeable(diff_t *st)
{
    if (st->nbufs == 0)
        return -1;
    int start = (int)diff_range(st, 0, (uint64_t)st->nbufs - 1);
    for (int k = 0; k < st->nbufs; k++) {
        int i = (start + k) % st->nbufs;
        if (st->bufs[i]->graph_refs == 0)
            return i;
    }
    return -1;
}

int diff_free_tables(diff_t *st)
{
    while (st->ntables > 0) {
        CUdeviceptr t = st->tables[--st->ntables];
        DCK(st, st->d.MemFree(t));
    }
    return DIFF_OK;
}

/* Keeps creation order in the table: the final checksum's order. */
int diff_free_buf(diff_t *st, int i)
{
    diff_buf_t *b = st->bufs[i];
    int rc = diff_free_tables(st);
    if (rc != DIFF_OK)
        return rc;
    DCK(st, st->d.MemFree(b->ptr));
    st->live -= b->bytes;
    memmove(&st->bufs[i], &st->bufs[i + 1], (size_t)(st->nbufs - i - 1) * sizeof st->bufs[0]);
    st->nbufs--;
    free(b);
    st->counts[2]++;
    return DIFF_OK;
}

/* Cuts a new buffer into 1 to DIFF_TENSORS tensors at 256-byte
 * boundaries. Kernels are given only tensor starts and read or write
 * only inside the tensor they are given, as a program's tensors are
 * used: spillway's rewriting window relies on it (README, Known limits:
 * a kernel reads [P, next learned start)). */
static void split(diff_t *st, diff_buf_t *b)
{
    uint64_t blocks = b->bytes / 256;
    int n = (int)diff_range(st, 1, DIFF_TENSORS);
    b->ntensors = 1;
    b->tensor[0] = 0;
    for (int i = 1; i < n && blocks > 1; i++) {
        uint64_t at = diff_range(st, 1, blocks - 1) * 256;
        int k = b->ntensors;
        bool dup = false;
        for (int j = 0; j < k; j++)
            dup |= b->tensor[j] == at;
        if (dup)
            continue;
        while (k > 0 && b->tensor[k - 1] > at) {
            b->tensor[k] = b->tensor[k - 1];
            k--;
        }
        b->tensor[k] = at;
        b->ntensors++;
    }
    b->tensor[b->ntensors] = b->bytes;
}

/* Fills all of a new buffer, one of four ways. */
static int initialize(diff_t *st, diff_buf_t *b)
{
    int s = pick_stream(st);
    unsigned how = (unsigned)diff_range(st, 0, 3);
    uint32_t v = small_float_bits(st);
    if (how == 3 && b->bytes > 4 * MIB)
        how = 0;
    int rc = diff_touch(st, how == 0 || how == 3 ? 0 : s, b);
    if (rc != DIFF_OK)
        return rc;
    if (how == 0) {
        DCK(st, st->d.MemsetD32(b->ptr, v, b->bytes / 4));
    } else if (how == 1) {
        DCK(st, st->d.MemsetD8Async(b->ptr, (unsigned char)v, b->bytes, st->stream[s]));
    } else if (how == 2) {
        CUdeviceptr dst = b->ptr;
        uint64_t count = b->bytes / 4;
        void *p[] = {&dst, &v, &count};
        return LAUNCH(st, fill, count, s, p);
    } else {
        void *h = malloc(b->bytes);
        if (!h)
            return DIFF_NOMEM;
        diff_random_words(st, h, b->bytes);
        CUresult r = st->d.MemcpyHtoD(b->ptr, h, b->bytes);
        free(h);
        DCK(st, r);
    }
    return DIFF_OK;
}

int diff_op_alloc(diff_t *st)
{
    uint64_t bytes = pick_size(st);
    while (st->nbufs == DIFF_BUFS || st->live + bytes > st->cap) {
        int i = freeable(st);
        if (i < 0)
            return DIFF_OK; /* everything is in a graph: no room this time */
        int rc = diff_free_buf(st, i);
        if (rc != DIFF_OK)
            return rc;
    }
    diff_buf_t *b = calloc(1, sizeof *b);
    if (!b)
        return DIFF_NOMEM;
    snprintf(st->where, sizeof st->where, "%llu bytes", (unsigned long long)bytes);
    CUresult r = st->d.MemAlloc(&b->ptr, bytes);
    if (r != CUDA_SUCCESS) {
        free(b);
        DCK(st, r);
    }
    b->bytes = bytes;
    split(st, b);
    b->id = st->next_id++;
    b->last = -1;
    st->bufs[st->nbufs++] = b;
    st->live += bytes;
    st->counts[1]++;
    return initialize(st, b);
}

int diff_op_free(diff_t *st)
{
    int i = freeable(st);
    return i < 0 ? DIFF_OK : diff_free_buf(st, i);
}

/* ---- copies and memsets ---- */

/* Host source bytes for a copy to the device on s: the graph's own in a
 * capture (they must outlive every replay), else pending bytes. */
static void *source_bytes(diff_t *st, int s, uint64_t len)
{
    if (st->capturing)
        return st->capturing->host;
    void *h = diff_pending_new(st, s, len, diff_chance(st, 50), false);
    if (h)
        diff_random_words(st, h, len);
    return h;
}

static int htod_async(diff_t *st, int s, diff_buf_t *b, uint64_t max)
{
    uint64_t off, len;
    pick_range(st, b, max, &off, &len);
    void *h = source_bytes(st, s, len);
    if (!h)
        return DIFF_NOMEM;
    int rc = diff_touch(st, s, b);
    if (rc != DIFF_OK)
        return rc;
    DCK(st, st->d.MemcpyHtoDAsync(b->ptr + off, h, len, st->stream[s]));
    return DIFF_OK;
}

int diff_op_htod(diff_t *st)
{
    diff_buf_t *b = pick_buf(st, 4, NULL);
    if (!b)
        return DIFF_OK;
    st->counts[3]++;
    if (diff_chance(st, 50))
        return htod_async(st, pick_stream(st), b, 8 * MIB);
    uint64_t off, len;
    pick_range(st, b, 8 * MIB, &off, &len);
    void *h = malloc(len);
    if (!h)
        return DIFF_NOMEM;
    diff_random_words(st, h, len);
    int rc = diff_touch(st, 0, b);
    CUresult r = rc == DIFF_OK ? st->d.MemcpyHtoD(b->ptr + off, h, len) : CUDA_SUCCESS;
    free(h);
    if (rc != DIFF_OK)
        return rc;
    DCK(st, r);
    return DIFF_OK;
}

int diff_op_dtoh(diff_t *st)
{
    diff_buf_t *b = pick_buf(st, 4, NULL);
    if (!b)
        return DIFF_OK;
    st->counts[4]++;
    uint64_t off, len;
    pick_range(st, b, 8 * MIB, &off, &len);
    if (diff_chance(st, 50)) {
        int s = pick_stream(st);
        void *h = diff_pending_new(st, s, len, diff_chance(st, 50), true);
        if (!h)
            return DIFF_NOMEM;
        int rc = diff_touch(st, s, b);
        if (rc != DIFF_OK)
            return rc;
        DCK(st, st->d.MemcpyDtoHAsync(h, b->ptr + off, len, st->stream[s]));
        return DIFF_OK;
    }
    void *h = malloc(len);
    if (!h)
        return DIFF_NOMEM;
    int rc = diff_touch(st, 0, b);
    CUresult r = rc == DIFF_OK ? st->d.MemcpyDtoH(h, b->ptr + off, len) : CUDA_SUCCESS;
    if (rc == DIFF_OK && r == CUDA_SUCCESS)
        diff_fold(st, h, len);
    free(h);
    if (rc != DIFF_OK)
        return rc;
    DCK(st, r);
    return DIFF_OK;
}

/* Source and destination ranges of one length: in two buffers, or in the
 * two halves of one (a copy's ranges must not overlap). */
static void pick_copy(diff_t *st, diff_buf_t **src, diff_buf_t **dst, uint64_t *so,
                      uint64_t *dof, uint64_t *len)
{
    *src = pick_buf(st, 8, NULL);
    *dst = diff_chance(st, 20) ? *src : pick_buf(st, 4, *src);
    if (!*dst)
        *dst = *src;
    if (*dst == *src) {
        uint64_t half = (*src)->bytes / 8 * 4;
        uint64_t n = diff_range(st, 1, half / 4 < 2 * MIB ? half / 4 : 2 * MIB);
        *len = n * 4;
        uint64_t a = diff_range(st, 0, half / 4 - n) * 4;
        uint64_t b = half + diff_range(st, 0, half / 4 - n) * 4;
        bool swap = diff_chance(st, 50);
        *so = swap ? b : a;
        *dof = swap ? a : b;
        return;
    }
    uint64_t off, l;
    pick_range(st, *src, 16 * MIB, &off, &l);
    uint64_t dw = (*dst)->bytes / 4;
    if (l / 4 > dw)
        l = dw * 4;
    *so = off;
    *len = l;
    *dof = diff_range(st, 0, dw - l / 4) * 4;
}

static int dtod_on(diff_t *st, int s, bool sync)
{
    diff_buf_t *src, *dst;
    uint64_t so, dof, len;
    if (!pick_buf(st, 8, NULL))
        return DIFF_OK;
    pick_copy(st, &src, &dst, &so, &dof, &len);
    int rc = diff_touch(st, s, src);
    if (rc == DIFF_OK)
        rc = diff_touch(st, s, dst);
    if (rc != DIFF_OK)
        return rc;
    if (sync)
        DCK(st, st->d.MemcpyDtoD(dst->ptr + dof, src->ptr + so, len));
    else
        DCK(st, st->d.MemcpyDtoDAsync(dst->ptr + dof, src->ptr + so, len, st->stream[s]));
    return DIFF_OK;
}

int diff_op_dtod(diff_t *st)
{
    st->counts[5]++;
    bool sync = diff_chance(st, 40);
    return dtod_on(st, sync ? 0 : pick_stream(st), sync);
}

static int memset_on(diff_t *st, int s, bool sync)
{
    diff_buf_t *b = pick_buf(st, 4, NULL);
    if (!b)
        return DIFF_OK;
    uint64_t off, len;
    pick_range(st, b, 64 * MIB, &off, &len);
    uint32_t v = diff_chance(st, 50) ? small_float_bits(st) : (uint32_t)diff_rand(st);
    bool d8 = diff_chance(st, 30);
    if (d8 && diff_chance(st, 50))
        len -= diff_range(st, 0, len > 3 ? 3 : len - 1); /* any byte count */
    int rc = diff_touch(st, s, b);
    if (rc != DIFF_OK)
        return rc;
    CUdeviceptr p = b->ptr + off;
    if (d8 && sync)
        DCK(st, st->d.MemsetD8(p, (unsigned char)v, len));
    else if (d8)
        DCK(st, st->d.MemsetD8Async(p, (unsigned char)v, len, st->stream[s]));
    else if (sync)
        DCK(st, st->d.MemsetD32(p, v, len / 4));
    else
        DCK(st, st->d.MemsetD32Async(p, v, len / 4, st->stream[s]));
    return DIFF_OK;
}

int diff_op_memset(diff_t *st)
{
    st->counts[6]++;
    bool sync = diff_chance(st, 40);
    return memset_on(st, sync ? 0 : pick_stream(st), sync);
}

int diff_transfer_on(diff_t *st, int s)
{
    unsigned k = (unsigned)diff_range(st, 0, 2);
    if (k == 0) {
        diff_buf_t *b = pick_buf(st, 4, NULL);
        return b ? htod_async(st, s, b, DIFF_GRAPH_HOST) : DIFF_OK;
    }
    return k == 1 ? dtod_on(st, s, false) : memset_on(st, s, false);
}

/* ---- kernels ---- */

/* With --slices: any word of a buffer of at least min bytes, up to the
 * buffer's end. */
static diff_buf_t *pick_slice(diff_t *st, uint64_t min, const diff_buf_t *not, CUdeviceptr *p,
                              uint64_t *len)
{
    diff_buf_t *b = pick_buf(st, min, not);
    if (!b)
        return NULL;
    uint64_t off = diff_range(st, 0, (b->bytes - min) / 4) * 4;
    *p = b->ptr + off;
    *len = b->bytes - off;
    return b;
}

/* A tensor of at least min bytes in a buffer other than not: its buffer
 * (NULL when there is none), start and length. */
static diff_buf_t *pick_tensor(diff_t *st, uint64_t min, const diff_buf_t *not, CUdeviceptr *p,
                               uint64_t *len)
{
    if (st->slices)
        return pick_slice(st, min, not, p, len);
    if (st->nbufs == 0)
        return NULL;
    int start = (int)diff_range(st, 0, (uint64_t)st->nbufs - 1);
    for (int k = 0; k < st->nbufs; k++) {
        diff_buf_t *b = st->bufs[(start + k) % st->nbufs];
        if (b == not)
            continue;
        int first = (int)diff_range(st, 0, (uint64_t)b->ntensors - 1);
        for (int j = 0; j < b->ntensors; j++) {
            int t = (first + j) % b->ntensors;
            uint64_t n = b->tensor[t + 1] - b->tensor[t];
            if (n >= min) {
                *p = b->ptr + b->tensor[t];
                *len = n;
                return b;
            }
        }
    }
    return NULL;
}

/* Words of a tensor a kernel covers: all of it half the time, else a
 * prefix. */
static uint64_t prefix_words(diff_t *st, uint64_t len)
{
    return diff_chance(st, 50) ? len / 4 : diff_range(st, 1, len / 4);
}

static int k_fill(diff_t *st, int s)
{
    CUdeviceptr dst;
    uint64_t len;
    diff_buf_t *b = pick_tensor(st, 4, NULL, &dst, &len);
    if (!b)
        return DIFF_OK;
    uint32_t v = small_float_bits(st);
    uint64_t count = prefix_words(st, len);
    int rc = diff_touch(st, s, b);
    if (rc != DIFF_OK)
        return rc;
    void *p[] = {&dst, &v, &count};
    return LAUNCH(st, fill, count, s, p);
}

/* y = a*x + y: x and y in two buffers, or the same tensor. */
static int k_axpy(diff_t *st, int s)
{
    CUdeviceptr xp, yp;
    uint64_t xl, yl;
    diff_buf_t *y = pick_tensor(st, 4, NULL, &yp, &yl);
    if (!y)
        return DIFF_OK;
    diff_buf_t *x = diff_chance(st, 15) ? NULL : pick_tensor(st, 4, y, &xp, &xl);
    if (!x)
        x = y, xp = yp, xl = yl;
    uint64_t n = prefix_words(st, xl < yl ? xl : yl);
    float a = (float)((int)diff_range(st, 0, 8) - 4) / 4.0f;
    int rc = diff_touch(st, s, x);
    if (rc == DIFF_OK)
        rc = diff_touch(st, s, y);
    if (rc != DIFF_OK)
        return rc;
    void *p[] = {&a, &xp, &yp, &n};
    return LAUNCH(st, axpy, n, s, p);
}

static int k_relu(diff_t *st, int s)
{
    CUdeviceptr x;
    uint64_t len;
    diff_buf_t *b = pick_tensor(st, 4, NULL, &x, &len);
    if (!b)
        return DIFF_OK;
    uint64_t n = prefix_words(st, len);
    int rc = diff_touch(st, s, b);
    if (rc != DIFF_OK)
        return rc;
    void *p[] = {&x, &n};
    return LAUNCH(st, relu, n, s, p);
}

static bool pick_mv(diff_t *st, diff_mv_t *m, uint32_t max_dim, uint32_t max_batch)
{
    uint64_t len;
    m->rows = (uint32_t)diff_range(st, 1, max_dim);
    m->cols = (uint32_t)diff_range(st, 1, max_dim);
    m->batch = (uint32_t)diff_range(st, 1, max_batch);
    uint64_t wbytes = 4ull * m->rows * m->cols;
    uint64_t xbytes = 4ull * m->cols * m->batch, ybytes = 4ull * m->rows * m->batch;
    m->wb = pick_tensor(st, wbytes, NULL, &m->W, &len);
    m->xb = m->wb ? pick_tensor(st, xbytes, NULL, &m->x, &len) : NULL;
    m->yb = m->xb ? pick_tensor(st, ybytes, m->wb, &m->y, &len) : NULL;
    return m->yb && m->yb != m->xb;
}

static int touch_mv(diff_t *st, int s, const diff_mv_t *m)
{
    int rc = diff_touch(st, s, m->wb);
    if (rc == DIFF_OK)
        rc = diff_touch(st, s, m->xb);
    if (rc == DIFF_OK)
        rc = diff_touch(st, s, m->yb);
    return rc;
}

static int k_gemv(diff_t *st, int s, bool by_struct)
{
    diff_mv_t m;
    if (!pick_mv(st, &m, 384, 1))
        return k_fill(st, s);
    int rc = touch_mv(st, s, &m);
    if (rc != DIFF_OK)
        return rc;
    if (by_struct) {
        struct {
            CUdeviceptr W, x, y;
            uint32_t rows, cols;
        } a = {m.W, m.x, m.y, m.rows, m.cols};
        void *p[] = {&a};
        return LAUNCH(st, gemv_struct, m.rows, s, p);
    }
    void *p[] = {&m.W, &m.x, &m.y, &m.rows, &m.cols};
    return LAUNCH(st, gemv, m.rows, s, p);
}

static int k_gemm(diff_t *st, int s)
{
    diff_mv_t m;
    if (!pick_mv(st, &m, 128, 8))
        return k_fill(st, s);
    int rc = touch_mv(st, s, &m);
    if (rc != DIFF_OK)
        return rc;
    void *p[] = {&m.W, &m.x, &m.y, &m.rows, &m.cols, &m.batch};
    return LAUNCH(st, gemm, (uint64_t)m.rows * m.batch, s, p);
}
int diff_table_new(diff_t *st, diff_table_t *t)
{
    CUdeviceptr w[4];
    t->table = 0;
    if (!pick_mv(st, &t->m, 256, 1))
        return DIFF_OK;
    uint64_t wbytes = 4ull * t->m.rows * t->m.cols;
    t->n = (uint32_t)diff_range(st, 1, 4);
    t->index = (uint32_t)diff_range(st, 0, t->n - 1);
    for (uint32_t i = 0; i < t->n; i++) {
        uint64_t len;
        diff_buf_t *b = i == t->index ? NULL : pick_tensor(st, wbytes, t->m.yb, &w[i], &len);
        t->entry[i] = b ? b : t->m.wb;
        if (!b)
            w[i] = t->m.W;
    }
    DCK(st, st->d.MemAlloc(&t->table, sizeof w));
    DCK(st, st->d.MemcpyHtoD(t->table, w, t->n * sizeof w[0]));
    DCK(st, st->d.StreamSynchronize(st->stream[0]));
    return DIFF_OK;
}

/* In a capture, the graph's own table (made before it began). */
static int k_gemv_table(diff_t *st, int s)
{
    diff_table_t own, *t = &own;
    if (st->capturing) {
        if (!st->capturing->has_table)
            return k_gemv(st, s, false);
        t = &st->capturing->table;
    } else {
        if (st->ntables == DIFF_TABLES) {
            int rc = diff_sync_all(st);
            if (rc == DIFF_OK)
                rc = diff_free_tables(st);
            if (rc != DIFF_OK)
                return rc;
        }
        int rc = diff_table_new(st, t);
        if (rc != DIFF_OK)
            return rc;
        if (!t->table)
            return k_fill(st, s);
        st->tables[st->ntables++] = t->table;
    }
    int rc = touch_mv(st, s, &t->m);
    if (rc != DIFF_OK)
        return rc;
    void *p[] = {&t->table, &t->index, &t->m.x, &t->m.y, &t->m.rows, &t->m.cols};
    return LAUNCH(st, gemv_table, t->m.rows, s, p);
}

static int k_checksum(diff_t *st, int s)
{
    CUdeviceptr sp, out;
    uint64_t len, olen;
    diff_buf_t *src = pick_tensor(st, 4, NULL, &sp, &len);
    diff_buf_t *dst = src ? pick_tensor(st, 8, src, &out, &olen) : NULL;
    if (!dst)
        return k_fill(st, s);
    len = prefix_words(st, len) * 4;
    int rc = diff_touch(st, s, src);
    if (rc == DIFF_OK)
        rc = diff_touch(st, s, dst);
    if (rc != DIFF_OK)
        return rc;
    void *p[] = {&sp, &len, &out};
    return LAUNCH(st, checksum, 1, s, p);
}

int diff_kernel_on(diff_t *st, int s)
{
    switch (diff_range(st, 0, K_KINDS - 1)) {
    case K_FILL: return k_fill(st, s);
    case K_AXPY: return k_axpy(st, s);
    case K_RELU: return k_relu(st, s);
    case K_GEMV: return k_gemv(st, s, false);
    case K_GEMV_STRUCT: return k_gemv(st, s, true);
    case K_GEMV_TABLE: return k_gemv_table(st, s);
    case K_CHECKSUM: return k_checksum(st, s);
    default: return k_gemm(st, s);
    }
}

/* One launch of a loop's body: fixed operands, replayed as they are. */
typedef struct {
    int kind; /* K_GEMV, K_RELU or K_AXPY */
    int s;
    diff_mv_t m; /* gemv's operands; relu and axpy use x (read) and y */
    uint64_t n;
    float a;
} loop_step_t;

static bool loop_step_new(diff_t *st, loop_step_t *p)
{
    p->s = (int)diff_range(st, 0, DIFF_STREAMS - 1);
    p->kind = (int)diff_range(st, 0, 2) == 0 ? K_RELU : diff_chance(st, 50) ? K_GEMV : K_AXPY;
    p->a = (float)((int)diff_range(st, 0, 8) - 4) / 8.0f;
    if (!pick_mv(st, &p->m, 256, 1))
        return false;
    p->n = p->kind == K_GEMV ? 0 : prefix_words(st, 4ull * p->m.rows) ;
    return true;
}

static int loop_step_run(diff_t *st, loop_step_t *p)
{
    int rc = p->kind == K_GEMV ? touch_mv(st, p->s, &p->m) : diff_touch(st, p->s, p->m.yb);
    if (rc == DIFF_OK && p->kind == K_AXPY)
        rc = diff_touch(st, p->s, p->m.xb);
    if (rc != DIFF_OK)
        return rc;
    if (p->kind == K_GEMV) {
        void *q[] = {&p->m.W, &p->m.x, &p->m.y, &p->m.rows, &p->m.cols};
        return LAUNCH(st, gemv, p->m.rows, p->s, q);
    }
    if (p->kind == K_RELU) {
        void *q[] = {&p->m.y, &p->n};
        return LAUNCH(st, relu, p->n, p->s, q);
    }
    uint64_t n = p->n < p->m.cols ? p->n : p->m.cols; /* x holds cols words */
    void *q[] = {&p->a, &p->m.x, &p->m.y, &n};
    return LAUNCH(st, axpy, n, p->s, q);
}

/* A loop, as a model's steps are: two to six launches on fixed operands,
 * run three to eight times in a row, so ranges recur with a period and the
 * learned policy streams them eagerly (elsewhere only captures are
 * streamed: a random sequence has no period). */
int diff_op_loop(diff_t *st)
{
    loop_step_t body[6];
    int n = (int)diff_range(st, 2, 6), k = 0;
    for (int i = 0; i < n; i++)
        k += loop_step_new(st, &body[k]);
    int times = (int)diff_range(st, 3, 8), rc = DIFF_OK;
    st->counts[10]++;
    for (int t = 0; t < times && rc == DIFF_OK; t++)
        for (int i = 0; i < k && rc == DIFF_OK; i++)
            rc = loop_step_run(st, &body[i]);
    return rc;
}

int diff_op_kernel(diff_t *st)
{
    return diff_kernel_on(st, pick_stream(st));
}

/* ---- pointer queries ---- */

/* Folds what the driver says of a pointer into a buffer, as offsets from
 * the base, so the answer is the same wherever the allocation lies. */
int diff_op_query(diff_t *st)
{
    diff_buf_t *b = pick_buf(st, 1, NULL);
    if (!b)
        return DIFF_OK;
    st->counts[7]++;
    CUdeviceptr p = b->ptr + diff_range(st, 0, b->bytes - 1), base = 0, start = 0;
    size_t size = 0, rsize = 0;
    unsigned int type = 0;
    DCK(st, st->d.MemGetAddressRange(&base, &size, p));
    DCK(st, st->d.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
    DCK(st, st->d.PointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p));
    DCK(st, st->d.PointerGetAttribute(&rsize, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p));
    diff_fold_u64(st, p - base);
    diff_fold_u64(st, size);
    diff_fold_u64(st, type);
    diff_fold_u64(st, p - start);
    diff_fold_u64(st, rsize);
    return DIFF_OK;
}

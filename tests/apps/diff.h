/*
 * diff.h: sg-diff, a seeded random sequence of driver calls whose result
 * must not depend on where memory lives.
 *
 * The program draws, from one splitmix64 generator seeded by --seed, a
 * sequence of operations on a few streams: allocations of many sizes and
 * frees, copies of every direction (synchronous and asynchronous),
 * memsets, kernels that read, write and update in place (some through a
 * pointer table in device memory), stream captures and graph replays, and
 * pointer queries. At the end it copies every live buffer back and prints
 * one line whose checksum covers those bytes and everything read back on
 * the way. Run once all-resident and once under spillway, the two lines
 * must be identical (tests/spillway/diff.sh).
 *
 * Determinism. Nothing the result depends on may depend on timing or on
 * addresses:
 *   - every buffer remembers the stream that touched it last
 *     (diff_order.c); an operation on another stream first waits for an
 *     event recorded there, so the accesses to one buffer are totally
 *     ordered, whatever the streams' flags, and simgpu's race check sees
 *     the order;
 *   - bytes read back asynchronously are folded into the checksum only
 *     when the program synchronizes their stream, in issue order;
 *   - kernels are given only tensor starts (a buffer is cut into a few
 *     tensors when it is made) and stay inside the tensor, as a program's
 *     kernels do; copies, memsets and queries take any range. With
 *     --slices kernels take any range too: pointers into the middle of
 *     what other kernels were given, reads past them (right under
 *     spillway only without argument rewriting);
 *   - device addresses never enter the checksum: pointer tables are
 *     buffers of their own, never read back, and pointer queries are
 *     folded as offsets from the allocation's base.
 *
 * Graphs: a capture issues nothing, so it orders nothing; its buffers are
 * collected instead, and a replay orders its stream after every one of
 * them, as an eager operation on all of them would. A buffer a live graph
 * uses is never freed.
 */
#ifndef SG_APPS_DIFF_H
#define SG_APPS_DIFF_H

#include <stdbool.h>
#include <stdint.h>

#include "drv.h"

#define DIFF_STREAMS 4  /* index 0 is the legacy default stream */
#define DIFF_BUFS 48    /* live data buffers at most */
#define DIFF_GRAPHS 3   /* live graphs at most */
#define DIFF_TABLES 16  /* pointer tables awaiting their free */
#define DIFF_TENSORS 8  /* tensors a buffer is cut into, at most */
#define DIFF_GRAPH_HOST (256u * 1024u) /* a graph's own pinned source bytes */

enum { DIFF_OK = 0, DIFF_CUDA = 2, DIFF_USAGE = 3, DIFF_NOMEM = 4 };

typedef struct {
    CUdeviceptr ptr;
    uint64_t bytes;
    uint32_t id;    /* creation order: the final checksum's order */
    int last;       /* stream that touched it last, -1 for none */
    int graph_refs; /* live graphs that use it: not freeable while > 0 */
    int ntensors;   /* kernels' view of it (diff_ops.c): */
    uint64_t tensor[DIFF_TENSORS + 1]; /* starts, then bytes */
} diff_buf_t;

/* Host bytes an asynchronous copy uses until its stream is synchronized:
 * the source of a copy to the device, or the destination of one back. */
typedef struct diff_pending {
    struct diff_pending *next;
    void *host;
    uint64_t bytes;
    bool pinned; /* cuMemAllocHost, else malloc */
    bool fold;   /* read back: fold into the checksum at the sync */
} diff_pending_t;

/* A matrix-vector product's operands: W (rows x cols, times batch for
 * sg_gemm_f32) and x in any buffers, y in another one (written while the
 * others are read). */
typedef struct {
    diff_buf_t *wb, *xb, *yb;
    CUdeviceptr W, x, y;
    uint32_t rows, cols, batch;
} diff_mv_t;

/* A pointer table for sg_gemv_table_f32: up to four weights' addresses,
 * entry index being m.W. */
typedef struct {
    CUdeviceptr table;
    uint32_t index, n;
    diff_buf_t *entry[4];
    diff_mv_t m;
} diff_table_t;

typedef struct {
    CUgraph graph;
    CUgraphExec exec;
    void *host;         /* pinned, DIFF_GRAPH_HOST bytes: its copies' sources */
    bool has_table;
    diff_table_t table; /* made before the capture, freed with the graph */
    int nbufs;
    diff_buf_t *bufs[DIFF_BUFS]; /* each counted in graph_refs once */
} diff_graph_t;

typedef struct {
    sg_drv_t d;
    CUcontext ctx;
    CUdevice dev;
    CUmodule mod;
    CUfunction fill, axpy, relu, gemv, gemv_struct, gemv_table, checksum, gemm;
    CUstream stream[DIFF_STREAMS];
    CUevent ev[DIFF_STREAMS]; /* re-recorded for each cross-stream wait */
    CUevent fork_ev, join_ev; /* captures' fork and join */
    diff_pending_t *pending[DIFF_STREAMS], **pending_tail[DIFF_STREAMS];

    uint64_t rng;
    uint64_t hash; /* FNV-1a 64 of everything read back */
    uint64_t cap;  /* live data bytes at most */
    uint64_t live;
    uint32_t next_id;
    int nbufs;
    diff_buf_t *bufs[DIFF_BUFS];
    int ngraphs;
    diff_graph_t *graphs[DIFF_GRAPHS];
    int ntables;
    CUdeviceptr tables[DIFF_TABLES]; /* eager launches' tables */
    diff_graph_t *capturing; /* the graph being captured, or NULL */

    uint64_t counts[32]; /* operations done, by kind (diff.c) */
    int op;              /* the operation under way, from 0 */
    bool trace;          /* --trace: operations, touches, launches on stderr */
    bool slices;         /* --slices: kernels take any range, not tensors */
    bool loops;          /* --loops: diff_op_loop among the operations */
    char where[160];     /* the failed call's context */
} diff_t;

/* Evaluates a driver call; on failure records the call and returns
 * DIFF_CUDA from the enclosing function (which returns int). */
#define DCK(st, call)                                                           \
    do {                                                                       \
        CUresult rc_ = (call);                                                 \
        if (rc_ != CUDA_SUCCESS)                                               \
            return diff_cuda_fail((st), rc_, #call);                           \
    } while (0)

/* diff.c: prints the failed call and its context once; returns DIFF_CUDA. */
int diff_cuda_fail(diff_t *st, CUresult rc, const char *call);

/* ---- diff_order.c: randomness, checksum, ordering, pending host bytes ---- */
uint64_t diff_rand(diff_t *st);
/* Uniform in [lo, hi] (lo <= hi). */
uint64_t diff_range(diff_t *st, uint64_t lo, uint64_t hi);
/* True with probability pct/100. */
bool diff_chance(diff_t *st, unsigned pct);
void diff_fold(diff_t *st, const void *bytes, uint64_t n);
void diff_fold_u64(diff_t *st, uint64_t v);
/* Host bytes of small floats (k/64 for k in [-128, 127]): data that stays
 * finite through a few kernels. */
void diff_random_words(diff_t *st, void *dst, uint64_t bytes);
/* Orders work about to be issued on stream s after every earlier access
 * to b, or during a capture adds b to the graph. Returns DIFF_OK or
 * DIFF_CUDA. */
int diff_touch(diff_t *st, int s, diff_buf_t *b);
/* Host bytes for an asynchronous copy on s, kept until s is synchronized.
 * NULL when out of memory. */
void *diff_pending_new(diff_t *st, int s, uint64_t bytes, bool pinned, bool fold);
/* cuStreamSynchronize(s), then folds and frees s's pending bytes. */
int diff_sync_stream(diff_t *st, int s);
/* cuCtxSynchronize, then every stream's pending bytes, streams in order. */
int diff_sync_all(diff_t *st);

/* ---- diff_ops.c: one random operation of each kind ---- */
int diff_op_alloc(diff_t *st);
int diff_op_free(diff_t *st);
int diff_op_htod(diff_t *st);
int diff_op_dtoh(diff_t *st);
int diff_op_dtod(diff_t *st);
int diff_op_memset(diff_t *st);
int diff_op_kernel(diff_t *st);
int diff_op_query(diff_t *st);
int diff_op_loop(diff_t *st);
/* Frees the eager launches' pointer tables (the caller synchronizes). */
int diff_free_tables(diff_t *st);
/* Frees buffer i of the table (it must have no graph_refs). */
int diff_free_buf(diff_t *st, int i);
/* A new table and operands for it (diff_mv_t), written and waited for:
 * simgpu reads a table when the launch is issued. Returns DIFF_OK with
 * t->table 0 when no buffers fit, DIFF_CUDA on failure. */
int diff_table_new(diff_t *st, diff_table_t *t);
/* One kernel launch of a random kind on stream s, or nothing when no
 * buffers fit; in a capture, tables come from the graph. */
int diff_kernel_on(diff_t *st, int s);
/* One asynchronous copy or memset on stream s; in a capture copies to the
 * device come from the graph's own pinned bytes. */
int diff_transfer_on(diff_t *st, int s);

/* ---- diff_graph.c: captures, replays, destruction ---- */
int diff_op_capture(diff_t *st);
int diff_op_replay(diff_t *st);
int diff_op_graph_destroy(diff_t *st);
/* Destroys graph i, releasing its buffers, table and host bytes. */
int diff_graph_destroy(diff_t *st, int i);

#endif

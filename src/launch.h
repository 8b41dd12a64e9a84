/*
 * The launch path's own types, shared by its files and included by
 * nothing else: what one launch names and reads (marks_t). Which file
 * does what: launch.c. The files call one way only, each only those
 * after it in this list (the layering test keeps it so): launch.c,
 * serve.c, promote.c, marks.c, layouts.c.
 */
#ifndef SW_LAUNCH_H
#define SW_LAUNCH_H

#include "residency.h"

#include <stddef.h>
#include <string.h>

#define MAX_PARAMS 256
#define MAX_PROMOTE 64

/* An allocation a launch names, [start, +len), that the window may serve:
 * whole, since CUDA lets a kernel reach every byte of the allocation any
 * of its pointers points into. */
typedef struct {
    uint64_t start, len, copy;
    uint64_t parts;                /* the 64ths of it the launch's tensors span (sw_parts) */
    bool served;                   /* sw_window_use said yes: [start, +len) becomes copy */
    bool applied;                  /* and the arguments were pointed at it */
} stream_use_t;

/* At most this many descriptors are learned from, or retargeted, per
 * launch: a GEMM passes two or three. */
#define MAX_DESCRIPTORS 16

/* Counts and flags first, arrays last: sw_marks_begin zeroes only what
 * lies before use[]. */
typedef struct {
    uint64_t seq;
    int nuse;
    bool overflow;                 /* named more allocations than use[] holds */
    size_t ndesc;                  /* recognised TMA descriptors: where they lie */
    bool host;                     /* touches a host chunk */
    bool window;                   /* touches a chunk the window brought in */
    bool recording;                /* captured: the words hit go to the recording */
    int nhost;
    uint64_t host_bytes;           /* what the kernel would read in place */
    /* Read only below their counts. */
    stream_use_t use[SW_WINDOW_MAX_USES];
    sw_tmap_at_t desc[MAX_DESCRIPTORS];
    uint64_t host_va[MAX_PROMOTE]; /* addresses: chunks may go while the gate is down */
} marks_t;

/* A launch's marks, empty, numbered seq. Its arrays (2 KiB) are left as
 * they are: zeroed with the rest, they were a quarter of what a launch
 * naming a tracked allocation costs (255 of 1009 instructions, callgrind,
 * 2026-11-29). */
static inline void sw_marks_begin(marks_t *m, uint64_t seq)
{
    memset(m, 0, offsetof(marks_t, use));
    m->seq = seq;
}

/* ---- marks.c: the chunks a launch names, stamped for the learner ---- */
void sw_marks_hit(uint64_t word, void *arg); /* arg: the launch's marks_t */
bool sw_marks_at_home(uint64_t word, void *arg);
/* Held around every read or write of an allocation's learned segment
 * starts. */
void sw_segments_lock(void);
void sw_segments_unlock(void);

/* ---- promote.c: host chunks brought in, now, later, or by trades ---- */
void sw_promote_bring_in(marks_t *m);
void sw_promote_defer_hot(const marks_t *m);
void sw_promote_defer_written(uint64_t lo, uint64_t len, uint64_t seq);
void sw_promote_trade(uint64_t now, bool replay);

/* ---- serve.c: a launch's ranges read from window copies ---- */
void sw_serve(marks_t *m, const sw_layout_t *l, void ***params, void ***extra, CUstream s);

#endif

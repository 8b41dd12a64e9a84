/*
 * spillway internal header. One header; prototypes grouped under the file
 * that defines them. (driver.h, device.h, residency.h and api.h add the mechanism's, which
 * need cuda.h.)
 *
 * The layers, each calling only the ones below it:
 *   api        hooks.c (generated from hooks.def), runtime.c (the shared
 *              runtime's entry points), init.c (start-up), fork.c
 *   residency  alloc.c (allocations, budgets, moves; with winroom.c, the
 *              window's room in the budget; control.c, the control API's
 *              requests; ptrinfo.c, pointer questions), launch.c (the launch
 *              path; with marks.c, serve.c, promote.c and layouts.c:
 *              argument scanning and rewriting, promotion),
 *              window*.c (the streaming window: copies, fences, write-back;
 *              called by launch.c and winroom.c, calls only below; window.c
 *              says which file does what),
 *              remap.c (the remapping window, SPILLWAY_REWRITE=0; it and
 *              the streaming window are two strategies behind one
 *              interface, sw_window_kind_t, which winroom.c picks)
 *   device     vmm.c (VMM primitives, spillway's stream), fingerprint.c
 *              (spillway's kernels), streams.c (the application's streams)
 *   driver     driver.c: the one table of real entry points (sw_real), the
 *              gate, the reader-writer lock every mapping change holds,
 *              and the count of stream captures
 *   core/      pure C beside them: options parsing, the allocation table,
 *              the residency policy, learning, argument scanning. Never
 *              calls CUDA; unit-tested with check (tests/unit).
 * Plus the plumbing: log.c, stats.c and stats_file.c (the live stats file),
 * and tools/spillway-stat.
 */
#ifndef SW_H
#define SW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One spin-wait step: tells the core a thread is spinning (x86 pause;
 * isb on aarch64, which stalls for about as long, where yield is a no-op
 * on most cores). */
static inline void sw_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("isb" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

/* ======================= core (pure, no CUDA) ========================== */

/* ---- core/options.c: SPILLWAY_* parsing -------------------------------- */

/* A byte amount given as a size ("20GiB") or a percentage ("40%") of some
 * total known only later (device memory, machine RAM). */
typedef struct {
    uint64_t bytes;
    double percent; /* valid when is_percent */
    bool is_percent;
    bool set;       /* given by the user (vs default) */
} sw_amount_t;

enum { SW_LOG_ERROR, SW_LOG_WARN, SW_LOG_INFO, SW_LOG_DEBUG };
enum { SW_MEMINFO_PHYSICAL, SW_MEMINFO_VIRTUAL };

/* Devices spillway can tell apart: a per-device budget names one of
 * 0..SW_MAX_DEVICES-1 (an 8-GPU machine's). */
#define SW_MAX_DEVICES 8

/* SPILLWAY_CHUNK=auto: this, cut where a device's budget is small (alloc.c). */
#define SW_DEFAULT_CHUNK (32ull << 20)

typedef struct {
    sw_amount_t gpu_budget;  /* every device's, unless gpu_budget_dev says
                              * otherwise; unset: no budget, demote only on OOM */
    sw_amount_t gpu_budget_dev[SW_MAX_DEVICES]; /* "D:amount" entries; set: given */
    bool gpu_budget_off;     /* "none": no budget, demote only on out-of-memory */
    sw_amount_t host_budget; /* default: 6.25% of RAM, per process */
    uint64_t min_alloc;      /* default 2MiB */
    uint64_t chunk;          /* SW_DEFAULT_CHUNK unless given; rounded to granularity later */
    bool chunk_given;        /* SPILLWAY_CHUNK was a size: never cut to the budget (alloc.c) */
    bool disable;
    int log_level;           /* default SW_LOG_WARN */
    char log_file[1024];
    char report[1024];
    int meminfo;             /* default SW_MEMINFO_PHYSICAL */
    int policy;              /* SW_POLICY_*, default SW_POLICY_LEARNED */
    sw_amount_t prefetch_bytes; /* the window; a percentage is of the GPU budget; 0: no prefetch */
    bool rewrite;            /* default on: stream by copies and rewritten arguments; off: remap slots */
    char stats_dir[1024];    /* "" (default): the per-user rule in stats_file.c */
} sw_options_t;

/* Parses the SPILLWAY_* entries of env (a NULL-terminated "NAME=value"
 * array, like environ) into *o, starting from the defaults. On a bad value
 * returns -1 and writes one message naming the variable, the value and the
 * accepted forms into err. Unknown SPILLWAY_* names do not fail: for each,
 * a warning suggesting the closest known name is written into warn (lines
 * separated by '\n'). Never touches the process environment itself. */
int sw_options_parse(sw_options_t *o, char *const *env, char *err, size_t errlen,
                     char *warn, size_t warnlen);
/* Prints every effective option, one per line ("SPILLWAY_X=value"). */
void sw_options_print(const sw_options_t *o, FILE *f);
/* One entry of the options table, for the tools generated from it (the
 * launcher's command-line options, the manual page), so that they cannot
 * drift from what the library reads. */
typedef struct {
    const char *name;   /* without the SPILLWAY_ prefix */
    const char *dflt;   /* "": none */
    const char *help;
    char forms[160];    /* the accepted forms, worded as a bad value's message words them */
} sw_option_info_t;
/* Fills *out with entry i of the table, in table order; returns false
 * (out untouched) past the last entry. */
bool sw_option_info(size_t i, sw_option_info_t *out);
/* bytes for a size amount, or percent of total for a percentage. */
uint64_t sw_amount_resolve(const sw_amount_t *a, uint64_t total);
/* Device dev's GPU budget as the options give it: its own entry of a
 * per-device list, else the amount for every device (which may be unset:
 * no budget). dev outside 0..SW_MAX_DEVICES-1 gets the latter. */
const sw_amount_t *sw_gpu_budget_of(const sw_options_t *o, int dev);
/* Parsers shared with tools: return false on a malformed value. */
bool sw_parse_size(const char *s, uint64_t *out);   /* "64", "2MiB", "1G", "512k" */
bool sw_parse_bool(const char *s, bool *out);       /* 1/0 on/off yes/no true/false */

/* ---- core/table.c: allocations, chunks, and address lookup ------------- */

/* Where a chunk's bytes are. It changes only while the mechanism holds
 * the gate (driver.c) exclusively, so a reader holding it shared sees a
 * settled state. */
typedef enum {
    SW_ON_DEVICE,   /* mapped to a device handle */
    SW_ON_HOST,     /* mapped to a pinned host handle (zero-copy for kernels) */
} sw_where_t;

struct sw_alloc;

/* A chunk's learned schedule (core/learn.c), as sw_learn_state gives it. */
typedef struct {
    uint64_t last_use, uses, gap, visit, loop;
    uint32_t heat;
} sw_sched_t;

/* Chunks [first, end) of one allocation whose schedules are equal and
 * held once, in s (core/learn.c, sw_learn_touch_range). */
typedef struct {
    uint32_t first, end;
    sw_sched_t s;
} sw_run_t;

#define SW_RUNS 4

typedef struct sw_chunk {
    uint64_t va, size;          /* size: a multiple of the granularity */
    sw_where_t where;
    uint64_t handle;            /* the CUmemGenericAllocationHandle mapped at va */
    /* The schedule: read through sw_learn_state (a run of the allocation
     * may hold the true values; these are then stale). */
    union {
        sw_sched_t sched;
        struct {
            uint64_t last_use;  /* launch sequence number of the last launch seen touching it; 0 never */
            uint64_t uses;      /* launches seen touching it */
            uint64_t gap;       /* learned launches between uses (core/learn.c); 0 unknown */
            uint64_t visit;     /* the launch that began its latest visit; 0 none */
            uint64_t loop;      /* learned launches between visits' starts; 0 unknown */
            uint32_t heat;      /* recent uses, decaying (sw_learn_heat), as of last_use */
        };
    };
    bool resident;              /* the program asked to keep it on the device
                                 * (spillway_hint): never a victim */
    bool fixed;                 /* never moves: mapped elsewhere too, exported, bound
                                 * or a dma-buf's (appvmm.c); never streamed */
    struct sw_alloc *alloc;
    uint32_t index;             /* within alloc->chunks */
    /* Mechanism state (launch path, remap.c), opaque to the core. */
    int slot;                   /* window slot holding it, -1 none */
    uint64_t home;              /* host handle kept while on the device: while a slot
                                 * holds it, or as an exact copy (home_fp); 0 none */
    uint64_t home_fp[2];        /* fingerprint of the bytes home holds (not in a slot) */
    bool mirrored;              /* its host handle is mapped in alloc->mirror too */
    uint64_t displace_next;     /* launch before which promote.c does not ask
                                 * sw_policy_displace for it again */
    /* A copy to the device carried a pointer into it: kernels may read it
     * where no argument shows. Copies on any thread set it while launches
     * on others weigh it: read through sw_chunk_pointed. Last, beside no
     * field read plainly: a compiler may load neighbouring flags as one
     * wider word (resident and fixed, in find_coldest), which would read
     * it plainly too. */
    bool pointed;
} sw_chunk_t;

typedef struct sw_alloc {
    uint64_t va;                /* the reservation base == the pointer the app holds */
    uint64_t size;              /* bytes the app asked for */
    uint64_t reserved;          /* reservation size (sum of chunk sizes) */
    uint64_t born;              /* launches issued before it was allocated */
    uint32_t nchunks;
    sw_chunk_t *chunks;         /* nchunks entries, ascending va */
    /* Segment starts learned from kernel arguments (core/learn.c): sorted,
     * distinct, inside [va, va + size). */
    uint64_t *bounds;
    uint32_t nbounds, capbounds;
    uint64_t spacing;           /* the longest distance between two starts in a row (0
                                 * with fewer than two), kept by sw_segment_note: policy
                                 * weighs it per chunk, where a walk would cost each time */
    uint64_t read_span;         /* at most how far from va a visit reads, as timed read
                                 * in place (window_cost.c); 0 unknown. Relaxed atomic */
    /* Runs of chunks stamped together (core/learn.c): disjoint, each at
     * least two chunks long. */
    sw_run_t runs[SW_RUNS];
    uint32_t nruns;
    /* Mechanism state: a second reservation where host copies are also
     * mapped, so they can be read while the chunk's own address moves. */
    uint64_t mirror;
    int dev;                    /* the device it was allocated on (devices.c) */
    /* An application's own VMM mapping (appvmm.c), not a reservation of
     * spillway's: its record there, and the CUmemAllocationProp device
     * handles of it are made with. NULL for spillway's allocations. */
    void *app;
    const void *dev_prop;
    /* Bumped whenever one of its chunks changes place (where, slot); with
     * it marks.c remembers a range it found wholly on the device and in
     * no slot, [clean_first, clean_end) as of moved == clean_moved. */
    uint64_t moved, clean_moved;
    uint32_t clean_first, clean_end;
} sw_alloc_t;

typedef struct sw_table sw_table_t;

/* granule: a power of two dividing every chunk's va and size; NULL: no memory. */
sw_table_t *sw_table_new(uint64_t granule);
void sw_table_free(sw_table_t *t);
/* Registers a (fully built) allocation: one index entry per granule of
 * [va, va+reserved). Returns -1 (table unchanged) on OOM or overlap. */
int sw_table_insert(sw_table_t *t, sw_alloc_t *a);
/* Unregisters; the caller frees a. */
void sw_table_remove(sw_table_t *t, sw_alloc_t *a);
/* The chunk holding addr (anywhere in [va, va + reserved)), or NULL. O(1). */
sw_chunk_t *sw_table_lookup(const sw_table_t *t, uint64_t addr);
/* The allocation whose base is exactly va, or NULL. */
sw_alloc_t *sw_table_find_base(const sw_table_t *t, uint64_t va);
/* Cheap pre-filter: false when addr is certainly not tracked. */
bool sw_table_maybe(const sw_table_t *t, uint64_t addr);
/* Calls fn for each allocation, in no order; fn must not modify the table. */
void sw_table_each(const sw_table_t *t, void (*fn)(sw_alloc_t *a, void *arg), void *arg);
size_t sw_table_count(const sw_table_t *t);
/* Launches between two asks of a question that walks every chunk: at least
 * `least`, and one per 64 chunks, so that a launch pays for 64 visits. */
uint64_t sw_table_walk_every(const sw_table_t *t, uint64_t least);

/* ---- core/learn.c: the launch schedule, learned from arguments ---------
 * Launch sequence numbers (seq) count launches, from 1, in issue order.
 * A chunk's schedule is its last use and the learned gap between uses;
 * for a loop that touches every chunk once per iteration the gap is the
 * period, and the next use is last_use + gap. */

/* Records that launch seq touched c (seq never decreases; a second touch
 * by the same launch changes nothing). Updates last_use and uses, and
 * learns the gap: the first gap is taken as it is; later gaps move the
 * estimate by an exponential average (weight 1/4 on the new gap), except
 * that a gap less than half or more than twice the estimate replaces it
 * outright, so a changed pattern is followed within one iteration. */
void sw_learn_touch(sw_chunk_t *c, uint64_t seq);
/* Records that launch seq touched chunks [first, end) of a (end clamped
 * to a->nchunks): the same as sw_learn_touch on each, read back through
 * sw_learn_state, but O(1) when the same range was stamped last time
 * (see "runs" in learn.c). Ranges of one allocation must not be stamped
 * at once by two threads (callers hold a lock). */
void sw_learn_touch_range(sw_alloc_t *a, uint32_t first, uint32_t end, uint64_t seq);
/* Schedules are stamped by launches on any thread with the gate held only
 * shared (marks.c, touch) and read by the policy and prefetch the same
 * way, so every access to their fields, and to an allocation's runs, is a
 * relaxed atomic: each field reads as some stamp left it, never torn, and
 * the race is defined. A reader may see fields of two different stamps, a
 * prediction slightly off, never a result: where a chunk lives changes
 * only under the gate held exclusively. */
static inline sw_sched_t sw_sched_load(const sw_sched_t *s)
{
    return (sw_sched_t){__atomic_load_n(&s->last_use, __ATOMIC_RELAXED),
                        __atomic_load_n(&s->uses, __ATOMIC_RELAXED),
                        __atomic_load_n(&s->gap, __ATOMIC_RELAXED),
                        __atomic_load_n(&s->visit, __ATOMIC_RELAXED),
                        __atomic_load_n(&s->loop, __ATOMIC_RELAXED),
                        __atomic_load_n(&s->heat, __ATOMIC_RELAXED)};
}
static inline void sw_sched_store(sw_sched_t *d, const sw_sched_t *s)
{
    __atomic_store_n(&d->last_use, s->last_use, __ATOMIC_RELAXED);
    __atomic_store_n(&d->uses, s->uses, __ATOMIC_RELAXED);
    __atomic_store_n(&d->gap, s->gap, __ATOMIC_RELAXED);
    __atomic_store_n(&d->visit, s->visit, __ATOMIC_RELAXED);
    __atomic_store_n(&d->loop, s->loop, __ATOMIC_RELAXED);
    __atomic_store_n(&d->heat, s->heat, __ATOMIC_RELAXED);
}
/* c's schedule, as of now: its own fields, or those of the run that holds
 * it. Every reader of last_use, uses, gap and heat goes through this. */
sw_sched_t sw_learn_run_state(const sw_chunk_t *c);
static inline sw_sched_t sw_learn_state(const sw_chunk_t *c)
{
    /* Most allocations hold no run: no call. */
    return c->alloc && __atomic_load_n(&c->alloc->nruns, __ATOMIC_RELAXED)
               ? sw_learn_run_state(c)
               : sw_sched_load(&c->sched);
}

/* c's `pointed`: copies on any thread set it (marks.c, mark_pointed)
 * while launches on others weigh it, so both sides are relaxed atomics;
 * it only ever goes from false to true. */
static inline bool sw_chunk_pointed(const sw_chunk_t *c)
{
    return __atomic_load_n(&c->pointed, __ATOMIC_RELAXED);
}
/* A new phase of the program (spillway_phase): every chunk's predictions
 * (gap, heat) are dropped at once instead of decaying, so the next uses
 * teach the new pattern; the facts (last_use, uses) stay. Not while a
 * launch stamps (callers hold the gate exclusively). Can't fail. */
void sw_learn_forget(const sw_table_t *t);
/* The predicted sequence number of c's next use, as seen at launch now:
 * last_use + k*gap for the smallest k >= 1 that lands after now. Unknown
 * (UINT64_MAX) when gap is 0 (fewer than two uses). */
uint64_t sw_learn_next_use(const sw_chunk_t *c, uint64_t now);
/* How popular c is at launch now: its uses, SW_HEAT_ONE each, decaying
 * by half every SW_HEAT_HALF_LIFE launches (linearly in between), so a set
 * of chunks that stops being used (the experts of an earlier batch) cools
 * down. Saturates at UINT32_MAX. */
#define SW_HEAT_HALF_LIFE 1024
#define SW_HEAT_ONE 256
uint32_t sw_learn_heat(const sw_chunk_t *c, uint64_t now);
/* The learned period of the launch loop: the gap shared by the most bytes
 * among chunks with a known gap (gaps within 1/8 of each other count as
 * one), 0 when none is known, or while those chunks hold fewer bytes than
 * the chunks touched twice or more that are still in their first visit
 * (and whose visit is not four such periods long: a chunk every launch
 * touches has no loop to show). *agreed (if not NULL): whether those bytes
 * are more than half the bytes with a known gap. They are not while the
 * loop is still being learned: after a pass over the weights at another
 * rhythm than the steps' (a kernel writing each layer once at load), the
 * first loop gaps measured spread over up to twice their range. */
uint64_t sw_learn_period(const sw_table_t *t, bool *agreed);
/* Whether two learned periods are one loop: within 1/8 of a, as
 * sw_learn_period counts gaps alike (0 is the same as 0 only). */
bool sw_learn_same_period(uint64_t a, uint64_t b);

/* Notes that a kernel argument pointed at p inside a (a->va <= p <
 * a->va + a->size); p becomes a segment start. Returns -1 (nothing
 * changed) when out of memory or when a already holds 4096 starts. */
int sw_segment_note(sw_alloc_t *a, uint64_t p);
/* How many starts a holds, readable without the lock sw_segment_note's
 * callers hold (a count that only grows; a stale one is a smaller one). */
uint32_t sw_segment_count(const sw_alloc_t *a);
/* Where a kernel given p is predicted to stop reading: the smallest noted
 * start above p, else the end of the allocation (a->va + a->size). */
uint64_t sw_segment_end(const sw_alloc_t *a, uint64_t p);
/* Frees the segment starts (when the allocation goes). */
void sw_segment_free(sw_alloc_t *a);
/* [lo, hi) of the range [start, +len) as a mask of the 64 equal parts of
 * the range it overlaps (bit i: the i-th 64th). Empty ranges and bytes
 * outside give no bits. */
uint64_t sw_parts(uint64_t start, uint64_t len, uint64_t lo, uint64_t hi);

/* ---- core/cost.c: a range read in place against its copy -------------- */

/* The two ways a launch may read a host range the window could copy, and
 * what a served launch costs its own stream: the way home after it (the
 * look for stored window addresses, the copy's fingerprint, the copy home
 * if it changed), a pass over the whole copy at device speed and one or
 * two kernels' fixed cost, after every launch the copy serves. */
typedef enum {
    SW_COST_PLACE,
    SW_COST_COPY,
    SW_COST_HOME,
    SW_COST_SERVED, /* a served launch and its way home, on its stream, once its copy landed */
    SW_COST_KINDS
} sw_cost_kind_t;

/* Samples of each way kept, the fastest counting. */
#define SW_COST_SAMPLES 4
/* Reading in place must be this much faster than the copy to be chosen:
 * a copy also lets the kernel re-read at device speed, and spares the
 * link while other kernels read in place. */
#define SW_COST_MARGIN 1.05f

typedef struct {
    float best[SW_COST_KINDS];   /* the fastest sample of each way, in ms; 0 none */
    uint8_t seen[SW_COST_KINDS]; /* samples of each way taken */
} sw_cost_t;

/* Whether c wants another sample of way k. */
bool sw_cost_wants(const sw_cost_t *c, sw_cost_kind_t k);
/* A sample of way k took ms (a non-positive one is ignored). */
void sw_cost_note(sw_cost_t *c, sw_cost_kind_t k, float ms);
/* Forgets c's samples of way k (what they timed changed). */
void sw_cost_forget(sw_cost_t *c, sw_cost_kind_t k);
/* A copy of `bytes` took ms: *rate, the most bytes per ms any copy over the
 * link reached, rises to it if faster. */
void sw_cost_rate_note(double *rate, uint64_t bytes, float ms);
/* c's range's copy, of `bytes`: its fastest or its bytes at `rate`
 * (sw_cost_rate_note), whichever is less, in ms. */
double sw_cost_copy_ms(const sw_cost_t *c, uint64_t bytes, double rate);
/* The ways home of `uses` launches served from c's range's copy, in ms;
 * 0 until one was timed. */
double sw_cost_home_ms(const sw_cost_t *c, uint32_t uses);
/* c's range, of `bytes`, read in place over served from a copy: its
 * fastest visit in place over the longer of what serving a visit of
 * `uses` launches takes of the link and of the launches' stream, its copy
 * (sw_cost_copy_ms) and `uses` ways home, which run on the stream while
 * the link carries the next copy; their sum unless copies can be made
 * `ahead` (the window holds two). 0 until both ways were timed. */
double sw_cost_ratio(const sw_cost_t *c, uint64_t bytes, double rate, uint32_t uses, bool ahead);
/* Whether reading c's range in place was the faster by SW_COST_MARGIN
 * (sw_cost_ratio): it is then read in place. */
bool sw_cost_in_place(const sw_cost_t *c, uint64_t bytes, double rate, uint32_t uses, bool ahead);

/* How long a kernel takes to read host memory in place against a copy of
 * it, by the link rates alone: about 48 GB/s (50, less the link idle
 * through each kernel's fixed cost) against a copy's 55. */
#define SW_COST_LINK_RATIO 1.15
/* A window repays its room when a loop copies at least this many times its size into
 * it, where its ranges read in place take SW_COST_LINK_RATIO as long as copied. Given
 * back, its room keeps as many bytes resident, so that many fewer cross the link each
 * loop; kept, each byte it copies saves the difference between the two rates: by those
 * alone it pays from about 7 times its size, measured from about 5. On simgpu
 * (2026-11-27, against (model - budget) / 55 GB/s): 16 x 4 MiB layers on two streams
 * under 26 MiB, odd ones in 8 MiB segments (some read in place), a window of 8 MiB
 * copying 4.5 times its size a loop: 1.44x, given back 1.21x; 24 x 4 MiB on a 64 MiB
 * GPU, 5.5 to 7 times: 1.39x, given back 1.43x; the bench's decode, 7 times: 1.15x, 1.20x
 * in place. */
#define SW_COST_REPAID 5
/* Ranges that must be timed both ways before their median moves the bar. */
#define SW_COST_REPAID_RANGES 3
/* The times its size a window must copy a loop to repay its room, where
 * ratio[0..n) are the ranges timed both ways, each's time read in place
 * over its copy's (reordered): SW_COST_REPAID, or less in proportion where the
 * median range takes longer in place than the link rates make it (a GEMM
 * re-reading its weight once per tile row). The median, of at least
 * SW_COST_REPAID_RANGES: a sample taken while the link was busy is slow,
 * and one range's can be very slow (on the H200, 2026-11-28, the first one
 * or two timed put the bar at 0.0 times the window's size). */
double sw_cost_repaid(float *ratio, int n);

/* v rounded up to a multiple of a (a > 0): sizes to granularities, a
 * copy's room to a window slot's alignment. */
static inline uint64_t sw_round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

/* ---- a streaming window's worth (core/worth.c) ---- */

/* Verdicts on a window's room, in the loop of `period` (the clocks start
 * again where it moves). SW_WINDOW_IDLE: it served nothing for
 * SW_WINDOW_IDLE_LOOPS loops (no launch in the last `period` launches up
 * to `now`, counted from the first question in that period).
 * SW_WINDOW_UNREPAID: its latest whole loop, counted from the first
 * question in that period, copied too little to repay its room (five
 * times its size, fewer where its ranges were timed slower in place:
 * sw_cost_repaid), while no graph held a copy. SW_WINDOW_OVERSIZED:
 * that loop repaid it, but two of its longest copies would take less
 * room (fits); or, from the first whole loop of the period on, one copy
 * (copies 1) or one and a lead (core/worth.c, fewer_copies) would cost
 * the link less. None of those while no loop is agreed on
 * (`period` 0); SW_WINDOW_LOOPLESS then, once none has been for
 * SW_WINDOW_NO_LOOP_PERIODS times `guess` (the loop the memory's gaps
 * suggest, sw_period) launches, while no graph held a copy: the program
 * has no loop to copy ahead of. */
typedef enum {
    SW_WINDOW_WORTH,
    SW_WINDOW_IDLE,
    SW_WINDOW_UNREPAID,
    SW_WINDOW_OVERSIZED,
    SW_WINDOW_LOOPLESS
} sw_window_worth_t;
#define SW_WINDOW_IDLE_LOOPS 1      /* loops a window may serve nothing in */
#define SW_WINDOW_NO_LOOP_PERIODS 4 /* guessed loops a window is kept with none agreed on */

/* One window's clocks and counts; zero is the start. */
typedef struct {
    uint64_t copied;      /* bytes copied since loop_at */
    uint64_t longest;     /* the longest range copied since loop_at */
    uint64_t loop_at;     /* the launch the loop being counted began at; 0 not yet */
    bool unpaid;          /* the loop before copied too little */
    bool judged;          /* a whole loop was judged in this period */
    uint64_t fits;        /* the loop before's longest copy rounded up to the slot
                           * alignment, where `room` is less than the window; else 0 */
    uint32_t copies;      /* the copies' room it needs: 1 or 2 */
    uint64_t lead;        /* where copies is 1: the bytes of the next copy its room holds, 0 none */
    uint64_t room;        /* that room: `copies` of `fits` and the lead, where
                           * two less a trim (sw_policy_window_trim); 0 with fits */
    double served_share, served_most; /* where copies is 1: sw_served_t's */
    uint64_t served_asked, copyable_asked; /* the launches they were last asked at; 0 none */
    bool hopeless;        /* unpaid: what it may copy a loop (per_loop) is below bar */
    uint64_t per_loop;    /* the last loop judged: the bytes it copied that
                           * count, scaled to one loop ... */
    uint64_t bar;         /* ... and the bytes they had to reach */
    uint64_t period;      /* the loop it is judged in; 0 none yet */
    uint64_t period_at;   /* the launch that period was first asked at */
    uint64_t unagreed_at; /* the first question since the last with no loop agreed on; 0 none */
} sw_worth_t;

/* The launches a window served in a loop, each timed with its way home
 * once its copy landed (sw_worth_ask_t.served). HUGE_VAL times where one
 * was not timed. */
typedef struct {
    double share;     /* their time over one copy of the longest range they read */
    double most;      /* the longest visit of one range over its own copy's time */
    uint64_t longest; /* that longest range's bytes; 0 none served */
    uint64_t grain;   /* its first chunk's bytes: room in part of a chunk holds nothing */
} sw_served_t;

/* A question, at launch now. */
typedef struct {
    uint64_t now, period, guess; /* period: the agreed loop, 0 none; guess: the gaps' */
    uint64_t size;               /* the window's bytes */
    uint64_t align;              /* a slot's alignment (a copy's room is rounded up to it) */
    uint64_t budget, granule;    /* its device's budget (0: none) and VMM granularity */
    uint64_t served_at;          /* the launch it served last; 0 none */
    bool graphs;                 /* a graph holds copies in it */
    /* The times its size a loop must copy to repay it (SW_COST_REPAID or
     * fewer, sw_cost_repaid), asked once a loop. */
    double (*repaid)(void *arg);
    /* What it served in the loop of `period` before `now`; NULL: not asked. */
    sw_served_t (*served)(void *arg, uint64_t now, uint64_t period);
    /* The most it may copy in that loop (the ranges it knows on the host, not found
     * faster in place, as often as visited); UINT64_MAX unknown; NULL: not asked. */
    uint64_t (*copyable)(void *arg, uint64_t now, uint64_t period);
    void *arg;
} sw_worth_ask_t;

/* A window needs room for a second copy only where the launches it serves in a loop, with
 * their ways home, take at least this share of one copy's time. In one copy's room each
 * copy waits for the launches reading the copy before it (its rest does, window_copy.c),
 * so a loop pays their time once more; with two, it pays one copy more each loop, the room
 * a resident range would hold. On simgpu, 2026-11-30 (steps 4-7): 20 x 16 MiB layers on
 * two streams under 128 MiB, the launches 0.60 of a copy, 4277.1 us a step with two
 * copies' room, 4171.8 made one copy in step 3; 64 MiB layers under 512 MiB, 17095.4 and
 * 16511.4; 4 MiB layers under 32 MiB, whose launches take about a copy's time (3.4 us of
 * kernel and 3.4 of way home beside a 76 us copy, 13 a step), 1072.4 with two and 1093.2
 * given one. */
#define SW_WORTH_ONE_COPY 0.75

/* Counts a copy of len bytes into the window; toward repaying its room
 * only where it repays: one made ahead of the launch that reads it, or of
 * a range that reads slower in place than the link rates make it
 * (repays); in the first loop judged in a period, also one that could be
 * made ahead once the order of ranges is learned (may_repay: at most half
 * the window's size), as its first copies wait. A window too small to
 * hold a copy beside the next makes each at the launch that needs it,
 * after the work before it, so the link idles through every kernel; it
 * saves only the difference between a copy's rate and an in-place read's,
 * less spillway's checks around it (a window of one 8 MiB copy beside
 * 5.06 MiB layers, odd ones in 8 MiB segments, copied 56 MiB a loop this
 * way: 1.56x the link bound where, given back, 1.27x). So does a window
 * whose half-size copies alternate with ranges that fill it: counted in
 * every loop, 24 x 9 MiB layers, odd ones two to a 20 MiB segment, at
 * batch 16 and compute about equal to copy, kept a window of one
 * segment's copy whose every copy waited (190 of 199): 2.25x the
 * all-resident step, given back 1.08x (2026-11-29, simgpu). */
void sw_worth_copied(sw_worth_t *j, uint64_t len, bool repays, bool may_repay);
/* Whether the window repays its room as far as can be told at q->now: its
 * last loop judged in this period did, or with none judged yet, the half
 * loop or more counted so far is on pace to. Changes nothing. */
bool sw_worth_on_pace(const sw_worth_t *j, const sw_worth_ask_t *q);
/* The resident set changed under the loop being counted: the count starts
 * again at the next question, and its first loop counts the copies that
 * could be made ahead, as in a new period. */
void sw_worth_moved(sw_worth_t *j);
/* The window's worth, as above; updates j's clocks. */
sw_window_worth_t sw_worth_judge(sw_worth_t *j, const sw_worth_ask_t *q);
/* The room a window serving a capture needs: slot (one range) where its
 * ranges read slower in place than copied (q->repaid), else 0. Only
 * q->repaid and q->arg are read. */
uint64_t sw_worth_capture(const sw_worth_ask_t *q, uint64_t slot);

/* ---- core/policy.c: residency decisions (verdicts only) ---------------- */

typedef enum { SW_POLICY_LRU, SW_POLICY_LEARNED } sw_policy_kind_t;

/* Every choice of a chunk to leave the device (victims, displacement,
 * adoption) passes over chunks marked resident: a program's hint that it
 * must stay is obeyed, even when that leaves a budget exceeded. */

/* Chooses chunks to demote so that at least `need` bytes of device-resident
 * chunks are freed: device chunks only, least recently used first (ties:
 * fewer uses first, then lower address), skipping any chunk for which
 * keep(chunk, arg) returns true (e.g. chunks the current launch touches).
 * Writes up to max pointers into out and returns how many. Freed bytes may
 * fall short of need when there are not enough candidates; *freed says how
 * many bytes the chosen chunks hold. Pure: looks, never changes. */
size_t sw_policy_victims(const sw_table_t *t, uint64_t need,
                         bool (*keep)(const sw_chunk_t *c, void *arg), void *arg,
                         sw_chunk_t **out, size_t max, uint64_t *freed);

/* What to do with a host chunk a launch touches. */
typedef enum {
    SW_VERDICT_ZERO_COPY, /* leave it on the host; the kernel reads over PCIe */
    SW_VERDICT_PROMOTE,   /* move it to the device before the launch */
} sw_verdict_t;

/* device_free: budget room (bytes) left on the device for tracked chunks. */
sw_verdict_t sw_policy_on_touch(const sw_chunk_t *c, uint64_t device_free, bool capturing);

/* The learned policy's victims: like sw_policy_victims, but furthest
 * predicted next use (sw_learn_next_use at now) first, unknown counting as
 * furthest; ties: lower uses first, then lower address. For a cyclic scan
 * this is Belady's choice. */
size_t sw_policy_victims_learned(const sw_table_t *t, uint64_t need, uint64_t now,
                                 bool (*keep)(const sw_chunk_t *c, void *arg), void *arg,
                                 sw_chunk_t **out, size_t max, uint64_t *freed);

/* Displacement: which device chunk (where == SW_ON_DEVICE, not kept)
 * should make room for host chunk hot, which a launch at now needs, or
 * NULL when none should. The candidate is the coldest (lowest heat, then
 * oldest last use, then lower address) among chunks at least as large
 * as hot, so that its room is enough; it is displaced only when hot has been
 * used at least SW_HOT_USES times and is half again as hot
 * (2 * heat(hot) >= 3 * heat(victim), and hotter), so two chunks of equal
 * popularity never trade places back and forth. Nor is a chunk the loop
 * comes back to before hot's next visit (both known: sw_learn's visits)
 * a candidate: in a cyclic scan the coldest chunk is the one needed
 * soonest, and trading it would cost a copy each visit. A chunk no argument has
 * ever pointed at is a candidate only SW_UNSEEN_GRACE launches after its
 * allocation, and never if a copy to the device pointed into it: it may
 * be read through a pointer the arguments do not show. Pure: looks, never
 * changes. */
#define SW_HOT_USES 2
#define SW_UNSEEN_GRACE 256
sw_chunk_t *sw_policy_displace(const sw_table_t *t, const sw_chunk_t *hot, uint64_t now,
                               bool (*keep)(const sw_chunk_t *c, void *arg), void *arg);

/* A host chunk (where == SW_ON_HOST, slot < 0) that a copy to the device
 * pointed into (pointed) and no kernel argument ever has (uses == 0): it
 * is read, if at all, through pointers in device memory, which prefetch
 * cannot follow, so it has the better claim on a resident place than a
 * chunk prefetch can stream. The lowest address first; NULL if none.
 * Pure: looks, never changes. */
sw_chunk_t *sw_policy_unseen(const sw_table_t *t);

/* Adoption: *in, sw_policy_unseen's chunk, and out[0], the resident
 * chunk of its device the window could stream in its place: one arguments
 * name in the loop (a known gap), not used at launch now, no bigger than
 * window[dev] (that device's window), the one used furthest ahead
 * (sw_policy_victims_learned), worth no more than *in as sw_policy_pack
 * weighs it. Returns 1; or 0, with *in set where it found no such chunk
 * at this launch (one in use now may be free at the next), NULL where
 * there is none to adopt or the victim is worth more. Pure: looks, never
 * changes. */
size_t sw_policy_adopt(const sw_table_t *t, uint64_t now, const uint64_t window[SW_MAX_DEVICES],
                       sw_chunk_t **in, sw_chunk_t **out);

/* The chunks to bring in next: host chunks (where == SW_ON_HOST, not kept,
 * slot < 0) whose predicted next use lies in (now, now + horizon],
 * soonest first (ties: lower address), as many as fit in `bytes` (a chunk
 * that does not fit is skipped, smaller later ones may still be taken),
 * at most max. Returns how many were written to out. */
size_t sw_policy_prefetch(const sw_table_t *t, uint64_t now, uint64_t horizon, uint64_t bytes,
                          bool (*keep)(const sw_chunk_t *c, void *arg), void *arg,
                          sw_chunk_t **out, size_t max);
/* Host chunks to fill free room with when no schedule says what comes
 * next: as sw_policy_prefetch with no horizon, then the chunks whose next
 * use is unknown, lower address first. */
size_t sw_policy_fill(const sw_table_t *t, uint64_t now, uint64_t bytes,
                      bool (*keep)(const sw_chunk_t *c, void *arg), void *arg, sw_chunk_t **out,
                      size_t max);

/* Packing. Residency holds whole chunks, and the granularity rounds an
 * allocation's last chunk up: a 3.06 MiB layer takes two 2 MiB chunks,
 * the second about half empty. Where the loop reads every chunk once, a
 * resident byte is a byte the link need not carry each loop, so a full
 * host chunk has the better claim on a resident place than half-empty
 * ones, and one read in place a better claim than one copied.
 * sw_chunk_data: the bytes of c its allocation asked for. */
uint64_t sw_chunk_data(const sw_chunk_t *c);
/* A trade that packs the device fuller: in[], host chunks (slot < 0, not
 * fixed) to bring in, and out[], device chunks of their device (not
 * resident, fixed or in a remapping slot) to send home first, freeing
 * at least the room the others take. Every chunk in the trade is read
 * once a loop, so what tells them apart is its worth: the link a loop
 * it saves resident, in bytes of copies. That is its data, counted as a
 * tensor surely holds it: in an allocation of a round size (an allocator's
 * segment) a chunk past the last tensor start learned counts only as far
 * as the longest distance between two of its starts reaches past the
 * last, or with one start, the longest tensor the table shows (none: all
 * of it): the rest may be slack. One only a pointer in device memory
 * reaches (pointed, never named), which the window cannot stream, is
 * worth SW_COST_LINK_RATIO times its data where its device has a window
 * (window[dev] bytes): on the host it is read in place, where a named
 * one would be copied. Either the worthiest host chunk for its size
 * comes in for the least worthy device chunks, or, where that pays
 * nothing, the densest host chunks that fit in the least dense device
 * chunk's room come in for it, where its device has no window. Only
 * chunks on the loop trade: ones the loop's arguments name (a gap within
 * 1/8 of period) and table-only ones. keep() holds a device chunk back
 * (one the launch uses). A trade is made only where what comes in is
 * worth SW_PACK_GAIN times what goes home (each trade costs a copy and
 * a synchronization). At most max (<= SW_PACK_MAX) chunks either way.
 * Returns whether there is a trade. Pure: looks, never changes. */
#define SW_PACK_GAIN 1.25
#define SW_PACK_MAX 4
/* The most chunks a trade moves either way: packing's SW_PACK_MAX, or
 * spreading's whole allocations. */
#define SW_TRADE_MAX 16
typedef struct {
    sw_chunk_t *in[SW_TRADE_MAX], *out[SW_TRADE_MAX];
    size_t nin, nout;
} sw_pack_t;
bool sw_policy_pack(const sw_table_t *t, uint64_t period, const uint64_t window[SW_MAX_DEVICES],
                    bool (*keep)(const sw_chunk_t *c, void *arg), void *arg, sw_pack_t *trade,
                    size_t max);
/* The host chunk (slot < 0, not fixed) to bring into its device's free
 * room (room[dev] bytes, 0 where none may be taken), no chunk going home:
 * of those on the loop, the worthiest for its size that fits, weighed as
 * sw_policy_pack does with window[] (NULL: every device has a window;
 * a replay's trades count none, as its copies were recorded with it).
 * Room the window gives back when it shrinks to its copies is free until
 * something takes it, and launches the window serves bring nothing in: 4
 * MiB of it stayed free for a thousand launches (4 MiB layers, the odd
 * ones in 8 MiB segments). NULL: none. Pure. */
sw_chunk_t *sw_policy_into_room(const sw_table_t *t, uint64_t period,
                                const uint64_t window[SW_MAX_DEVICES],
                                const uint64_t room[SW_MAX_DEVICES]);

/* What keeping a chunk resident saves a loop, as sw_policy_pack weighs
 * it, for other policies that must not undo its trades: made once per
 * question (it reads the whole table), then asked per chunk. */
typedef struct {
    uint64_t longest;       /* the longest tensor the table shows */
    const uint64_t *window; /* each device's window bytes; NULL: every one has one */
} sw_policy_worth_t;
sw_policy_worth_t sw_policy_worth_of(const sw_table_t *t, const uint64_t *window);
double sw_policy_worth(const sw_chunk_t *c, const sw_policy_worth_t *w);

/* Spreading (core/spread.c): a trade of equal worth that moves a resident
 * allocation out of a long run of resident ones in the loop and a
 * streamed one in, so that the window's copies run while resident kernels
 * do. Of devices with a window (window[dev] bytes), whole allocations of
 * at most SW_TRADE_MAX chunks, all visited by one launch each loop of
 * period launches (as of launch now), all on the device or all on the
 * host; the resident one sent home splits the longest stretch of launches
 * between two streamed visits nearest its middle, the streamed one of
 * its chunks' sizes, worth no less, brought in where its two stretches
 * are shortest, where the first product (the launches either side) is at
 * least twice the second, and not zero: the sum of the stretches'
 * squares falls with each trade, so repeated trades end. keep() holds a
 * device chunk back (one the launch uses). One allocation's chunks
 * either way, in order; false: none. Pure. */
bool sw_policy_spread(const sw_table_t *t, uint64_t now, uint64_t period,
                      const uint64_t window[SW_MAX_DEVICES],
                      bool (*keep)(const sw_chunk_t *c, void *arg), void *arg, sw_pack_t *trade);

/* The link, for cost-model verdicts. */
typedef struct {
    double h2d_gbps;      /* DMA host to device */
    double zerocopy_gbps; /* a kernel reading host memory */
    double move_ns;       /* fixed cost of a chunk's visit to the device:
                           * remapping it in and out, whatever its size */
} sw_link_t;

/* Promote a host chunk a launch touches, or let the kernel read it in
 * place? Promoting costs one DMA of the chunk (size / h2d) and pays off
 * when the chunk will be read again while resident; reading in place
 * costs size / zerocopy per use. The learned verdict promotes when room
 * allows, not capturing, and the expected reads before the chunk would
 * leave (uses per period, from gap and period; 1 when unknown) make
 * in-place reads dearer than the DMA: uses * size / zerocopy >
 * size / h2d. */
sw_verdict_t sw_policy_on_touch_learned(const sw_chunk_t *c, uint64_t device_free,
                                        bool capturing, uint64_t period, const sw_link_t *link);

/* The streaming window's size out of `want` bytes (SPILLWAY_PREFETCH_BYTES
 * of a budget of `budget` bytes), when the largest allocation that fits
 * in want is `extent` bytes (0: none does): room for two such copies, one
 * read while the next fills, or for as many as want holds when that is
 * fewer, so that the rest of want stays resident instead of idle; where
 * want holds one, room for two (up to half the budget) when extents are
 * small enough beside the budget that copying one at a time would cost
 * more than a second copy's room (policy.c). 0 when no extent fits:
 * no window. Can't fail. */
uint64_t sw_policy_window_fit(uint64_t want, uint64_t extent, uint64_t budget);

/* A copy's part a window may fall short of two by, still two (sw_policy_window_trim). */
#define SW_WINDOW_TRIM 8
#define SW_SERIAL_BYTES (1100ull * 1000) /* spillway's work after a launch (core/policy.c) */
/* A window of `size` bytes fitted to copies of `slot` bytes, made smaller
 * so that the room it leaves in a budget of `budget` bytes is whole
 * granules of `granule` bytes, where that takes at most an eighth of a
 * copy and leaves more than one: residency holds whole granules, so the
 * bytes past the last whole one hold nothing, where in the window they
 * only let each copy's last part go without waiting for the launch
 * before. Else `size`. Can't fail. */
uint64_t sw_policy_window_trim(uint64_t size, uint64_t slot, uint64_t budget, uint64_t granule);

/* ---- core/scan.c: which tracked memory a launch's arguments point into -- */

typedef struct {
    uint32_t nparams;
    uint32_t total;             /* bytes of the packed parameter buffer */
    uint32_t *offset, *size;    /* nparams entries each */
} sw_layout_t;

/* Calls hit(word, arg) for every 8-byte-aligned 8-byte word of every
 * parameter, read from kernelParams (params[i] points at parameter i) when
 * params != NULL, else from the packed buffer buf of buflen bytes (the
 * `extra` form; words at 8-aligned offsets in [0, min(buflen, total))).
 * Parameters smaller than 8 bytes are skipped; a parameter of size s >= 8 is
 * scanned at parameter offsets 0, 8, ... while the word fits. Words equal to
 * zero are skipped. Returns the number of words passed to hit. */
size_t sw_scan_args(const sw_layout_t *l, void *const *params, const void *buf, size_t buflen,
                    void (*hit)(uint64_t word, void *arg), void *arg);
/* Calls hit(word, arg) for every nonzero 8-byte word at offsets 0, 8, ...
 * of buf that fits in len bytes (buf need not be aligned). Returns the
 * number of words passed to hit. */
size_t sw_scan_words(const void *buf, size_t len, void (*hit)(uint64_t word, void *arg), void *arg);
/* Argument rewriting (the streaming window): every word sw_scan_args
 * would pass to hit, for which map(word, &to, arg) returns true, is
 * replaced by `to` in a copy. Parameters with no such word are passed as
 * they are. sw_rewrite_params fills out[0..nparams) (kernelParams form);
 * a rewritten parameter i is copied to store + offset[i], which must fit
 * in storelen (one that does not is left unrewritten). sw_rewrite_buffer
 * copies the packed buffer (`extra` form) to out (len bytes) and patches
 * it. Both return how many words were replaced; neither writes to the
 * caller's parameters. */
size_t sw_rewrite_params(const sw_layout_t *l, void *const *params, void **out, unsigned char *store,
                         size_t storelen, bool (*map)(uint64_t word, uint64_t *to, void *arg),
                         void *arg);
size_t sw_rewrite_buffer(const sw_layout_t *l, const void *buf, size_t len, unsigned char *out,
                         bool (*map)(uint64_t word, uint64_t *to, void *arg), void *arg);
/* Parses a cuLaunchKernel `extra` array: finds the buffer pointer and size.
 * Returns false when extra is malformed. */
bool sw_extra_buffer(void *const *extra, const void **buf, size_t *len);

/* Calls fn(index, offset, window, arg) for every 128-byte window that may
 * hold a TMA descriptor (a CUtensorMap, SW_TMAP_BYTES bytes, 64-byte
 * aligned): in every parameter of at least 128 bytes, at parameter offsets
 * 0, 64, 128, ... while 128 bytes fit. A parameter of exactly 128 bytes is
 * the descriptor a kernel takes by value; a larger one may be a by-value
 * struct holding descriptors as members (CUTLASS 3 passes one Params
 * struct), which align them to 64. window points into the parameter's
 * storage: params[index] + offset when params != NULL, else the packed
 * buffer buf at l->offset[index] + offset, where only windows that end
 * within min(buflen, l->total) are passed. It need not be aligned. Returns
 * the number of windows passed. Can't fail. */
size_t sw_scan_descriptors(const sw_layout_t *l, void *const *params, const void *buf,
                           size_t buflen,
                           void (*fn)(uint32_t index, uint32_t offset, const void *window,
                                      void *arg),
                           void *arg);

/* ---- core/tmap.c: TMA descriptors spillway saw made --------------------
 * A descriptor is opaque: where the driver keeps the address in its 128
 * bytes is undocumented (docs/cuda-facts.md §2). So each one a
 * cuTensorMapEncode* call (or cuTensorMapReplaceAddress) returned is
 * recorded whole, with the global address it was given, and a launch
 * argument is recognised only when its bytes are exactly those.
 *
 * Bounded: when full, an insert evicts one entry, found by the clock
 * (second chance): the oldest entry not looked up since the clock hand
 * last passed it. Not refused: a descriptor can't be destroyed, so a
 * long-running process accumulates stale ones (activations re-encoded at
 * new addresses each step), and refusing would stop it learning for good;
 * not plain oldest-first: the weights' descriptors, made once at load and
 * looked up every step, must outlive a stream of one-off ones. A stale
 * entry is harmless: the same bytes can only mean the same address.
 *
 * Thread-safe on its own: the table has a reader-writer lock, taken
 * exclusively by inserts (encode calls, rare) and shared by lookups
 * (launches, many threads at once). It is a leaf lock: held for no call
 * out of this file, so callers may hold any lock of theirs (launches hold
 * the gate shared) while they call these. */

#define SW_TMAP_BYTES 128

typedef struct sw_tmap sw_tmap_t;

/* What a lookup finds: the global address the descriptor was made for,
 * and the bytes of the tensor from there (sw_tmap_extent; 0 unknown). */
typedef struct {
    uint64_t addr, bytes;
} sw_tmap_val_t;

/* A table of at most max entries (1 <= max <= 1 << 24), all allocated
 * now, so inserts never fail. NULL when out of memory or max is out of
 * range. */
sw_tmap_t *sw_tmap_new(size_t max);
/* Frees t (NULL: nothing); no other thread may be using it. */
void sw_tmap_free(sw_tmap_t *t);
/* Records desc (SW_TMAP_BYTES bytes, any alignment) -> v. The same bytes
 * again replace the value and count as looked up. A full table evicts
 * one entry (the clock, above). Can't fail. */
void sw_tmap_insert(sw_tmap_t *t, const void *desc, sw_tmap_val_t v);
/* The value recorded for exactly these bytes into *v; false (v
 * untouched) when none is, or t is NULL. */
bool sw_tmap_lookup(sw_tmap_t *t, const void *desc, sw_tmap_val_t *v);
/* Entries held (0 for NULL). Lock-free: lookups skip an empty table. */
size_t sw_tmap_count(const sw_tmap_t *t);

/* Where a recognised descriptor lies in a launch's parameters: parameter
 * index, and offset within that parameter (in the packed `extra` buffer
 * it starts at l->offset[index] + offset). A rewriter replaces those 128
 * bytes in its copy of the arguments (sw_tmap_retarget makes them). */
typedef struct {
    uint32_t index, offset;
    sw_tmap_val_t v;
} sw_tmap_at_t;

/* The recorded descriptors among a launch's parameters (the windows of
 * sw_scan_descriptors, same params/buf/buflen forms), in parameter order:
 * writes up to max into out, and returns how many it wrote (the first max
 * found when there are more). 0 when t is NULL or empty. Takes t's lock
 * shared once for the whole launch. Can't fail. */
size_t sw_tmap_locate(sw_tmap_t *t, const sw_layout_t *l, void *const *params, const void *buf,
                      size_t buflen, sw_tmap_at_t *out, size_t max);

/* The bytes a tiled or im2col tensor spans from its global address: one
 * row of dim[0] elements of elem_bytes, plus (dim[i] - 1) * strides[i - 1]
 * for every outer dimension i < rank (strides: rank - 1 entries, in
 * bytes, as cuTensorMapEncode* takes them; not read when rank is 1). 0
 * (unknown) when elem_bytes is 0, rank is outside 1..5, a dim is 0, or
 * the sum overflows. */
uint64_t sw_tmap_extent(uint32_t rank, const uint64_t *dim, const uint64_t *strides,
                        uint32_t elem_bytes);

/* ---- core/gate.c: the gate, a reader-writer lock (no CUDA) -------------
 * Shared: many holders at once; exclusive: one, with no shared holder.
 * Reentrant per thread: a thread that holds it (either way) and takes it
 * again never waits; one that holds it shared and takes it exclusively
 * lets its shared hold go first and gets it back at sw_gate_unwr. Waiters
 * sleep (futex) until the gate opens. Can't fail. */
void sw_gate_rd_always(void);
void sw_gate_unrd(void);
void sw_gate_wr(void);
void sw_gate_unwr(void);
/* Excludes writers (sw_gate_wr) only; readers go on. Reentrant too. */
void sw_gate_lock_writers(void);
void sw_gate_unlock_writers(void);
/* Whether this thread holds the gate (any way / exclusively). */
bool sw_gate_held(void);
bool sw_gate_held_wr(void);

/* ======================= plumbing ====================================== */

/* ---- log.c ---- */
void sw_log_init(const sw_options_t *o);
/* The process runs setuid or setgid (AT_SECURE): options that name files
 * (SPILLWAY_LOG_FILE, SPILLWAY_REPORT, SPILLWAY_STATS_DIR) are ignored, so
 * the user cannot make it write where only its owner may. */
bool sw_secure(void);
void sw_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define sw_error(...) sw_log(SW_LOG_ERROR, __VA_ARGS__)
#define sw_warn(...) sw_log(SW_LOG_WARN, __VA_ARGS__)
#define sw_info(...) sw_log(SW_LOG_INFO, __VA_ARGS__)
#define sw_debug(...) sw_log(SW_LOG_DEBUG, __VA_ARGS__)

/* ---- stats.c: one field list (include/spillway/stats_fields.h) ---- */
#include "spillway/stats_fields.h"

/* Updates are cheap and thread-safe. Gauges track current and peak. */
void sw_stat_add(sw_stat_id_t id, int64_t delta);
uint64_t sw_stat_get(sw_stat_id_t id);
/* A gauge's peak; 0 for a counter or an id out of range. */
uint64_t sw_stat_peak(sw_stat_id_t id);
/* Creates this process's stats file (see stats.c for the path rules);
 * failure only logs: stats are optional, the application is not. */
void sw_stats_publish(void);
/* Writes the final stats as JSON to path (SPILLWAY_REPORT). */
void sw_stats_report(const char *path);
/* Removes the stats file (at exit). */
void sw_stats_unpublish(void);

/* ==== plumbing additions (options.c, stats.c) ========================= */

/* options.c: every option with its accepted forms, default and help, for
 * people (README, --help). Can't fail. */
void sw_options_help(FILE *f);
/* Note on sw_options_parse's messages: err and each warn line start with
 * "spillway: " already, so print them as they are, not through sw_log,
 * which adds its own prefix. Every warn line ends in '\n' (fputs it); err
 * has no '\n'. */

/* stats.c: remembers the options publishing needs (o->stats_dir). Call once
 * at start-up, before sw_stats_publish; without it publish uses the default
 * directory. Can't fail. */
void sw_stats_init(const sw_options_t *o);
/* stats.c: bracket a group of sw_stat_add calls that readers must see all
 * or none of (a demotion moves bytes from device_bytes to host_bytes and
 * counts it). Groups are serialised by one mutex; lone sw_stat_add calls
 * outside a group stay lock-free. Can't fail. */
void sw_stats_batch_begin(void);
void sw_stats_batch_end(void);
/* stats.c: its part of fork (fork.c's handlers call them, inside the gate;
 * a stand-in without the gate registers them with pthread_atfork). The
 * child stops mirroring into the parent's file and never removes it.
 * Can't fail. */
void sw_stats_fork_prepare(void);
void sw_stats_fork_parent(void);
void sw_stats_fork_child(void);

#endif

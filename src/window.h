/*
 * The streaming window's own state, shared by its files and included by
 * nothing else: the window of each device (win_t), the ranges it has met
 * (unit_t) and the copies it holds (entry_t). What each file does, and the
 * design they keep together: window.c.
 *
 * The files call one way only, each only those after it in this list (the
 * layering test keeps it so): window_use.c, window_capture.c,
 * window_touch.c, window.c, window_copy.c, window_cost.c. Every function
 * here but window.c's is called with the window's lock held. Names: sw_win_
 * for what only the window's files call, sw_window_ for what the rest of
 * the layer calls (residency.h).
 */
#ifndef SW_WINDOW_H
#define SW_WINDOW_H

#include "residency.h"

#define MAX_UNITS 4096
#define UNIT_SLOTS_LOG2 13 /* the index of units by start: twice MAX_UNITS slots */
#define MAX_ENTRIES 512
#define READERS 4   /* streams that may read one copy before it is evicted */
#define LOOKAHEAD 32 /* ranges copied ahead at most, per use */
#define BLOCKERS 4   /* copies a fill's rest may wait for (window_copy.c, sw_win_fill) */

#define RECALL 4 /* visits a range remembers, to see it recur with the loop */
#define SERVED_SAMPLES 2 /* a served launch's time, taken twice (sw_win_served_share): a
                          * launch's kernels vary less than a copy beside other traffic */
#define SPANS_ALL 58 /* of 64 parts: a range its tensors span whole (a tail of slack aside) */

typedef struct {
    uint64_t start, len; /* home: [start, start + len) */
    uint64_t used[RECALL]; /* its latest visits' first uses (launch numbers), newest first */
    uint64_t latest;     /* its latest use; 0 none */
    uint64_t ended;      /* the last use of its visit before; 0 none */
    bool recurring;      /* its latest visit recurs with the loop (window_use.c) */
    uint64_t named;      /* the parts (sw_parts) its launches' tensors span, this visit */
    uint64_t named_last; /* the same over its visit before; 0 unknown */
    uint64_t named_prev; /* and over the visit before that (a training step's
                          * forward pass and update visit a weight each) */
    uint8_t parted;      /* bit 0: a launch of this visit named part of it;
                          * bits 1, 2: of the visit before, and the one before */
    int next;            /* the unit used after the latest use that began a
                          * visit of it, -1 none */
    int next_within;     /* after its latest use later in a visit: a
                          * segment whose layers alternate with another
                          * allocation's (L1 and L3 in it, L2 alone) is
                          * followed by L2's after L1, by L4's after L3 */
    int entry;           /* its copy in the window, -1 none */
    bool live;
    bool written;        /* a copy was found changed (said once, in the log) */
    bool fp_known;       /* fp_home holds the fingerprint of home */
    bool escapes;        /* a kernel stored a pointer into its copy: never served again */
    CUevent homed;       /* after its latest copy home (made on first use) */
    CUstream homed_on;   /* the stream that copy home ran on */
    uint32_t id;         /* which range this is, of those the slot held: timers name it */
    uint32_t visits;     /* visits begun (visit) */
    uint16_t uses;       /* launches of the visit being made */
    uint16_t uses_last;  /* launches of the visit before: each pays a way home, served */
    uint64_t began;      /* the first use of the visit being made */
    bool unsplit;        /* a use joined that visit with no loop known to end it
                          * by: its launches may be several loops' (visit) */
    bool first;          /* its latest use began a visit */
    uint64_t served_at;  /* its latest launch served from a copy; 0 none */
    sw_cost_t cost;      /* a visit read in place against a copy, timed (core/cost.c) */
    uint64_t linked;     /* bytes its latest copy moved over the link (host chunks) */
    uint64_t place_linked; /* its bytes on the host when its visits were timed in place */
    bool said_partly;    /* a copy found it partly on the device (said once, in the log) */
    bool lead_resident;  /* its latest copy's lead, where the ring's turn put it,
                          * held fewer of its host bytes than its other end
                          * (window_copy.c, place) */
    /* The visit being timed in place, every launch of it, summed. */
    uint8_t session;     /* its number (tags its timers), 0 none */
    uint32_t session_visit;
    uint16_t started, settled; /* its launches timed, and those whose times are in */
    float sum_ms;
    bool broken;         /* a launch of it went untimed, or read a copy */
    bool cheap;          /* read in place by its costs (said once, in the log) */
} unit_t;

/* The window bytes a copy of u takes: its length rounded up to
 * SW_COPY_ALIGN, so that the copy after it starts aligned as CUDA
 * promises an allocation (256 bytes): the fingerprint reads 8-byte words,
 * and served kernels may load vectors or build TMA descriptors from the
 * rewritten pointers. Every offset a copy is placed at is a multiple of
 * it (the window's size is a multiple of SW_WINDOW_ALIGN). */
#define SW_COPY_ALIGN 256u
static inline uint64_t sw_win_span(const unit_t *u)
{
    return sw_round_up(u->len, SW_COPY_ALIGN);
}

typedef struct {
    int unit;            /* -1: free */
    uint64_t off;        /* in the window */
    bool ahead;          /* filled ahead and not read yet */
    int pins;            /* launches about to read it (their read not recorded yet) */
    bool stale;          /* home written while pinned: dropped at the last unpin
                          * (a dropped entry is never stale: drop clears it) */
    CUevent filled;
    CUevent read[READERS];
    CUstream reader[READERS];
    int nread;
    /* A fill in two parts (sw_win_fill): the part of its copy where other
     * copies still lie, [rest_at, +rest_len) from off, is copied once
     * their readers are recorded; 0 bytes once whole. Those copies, by
     * entry and their unit's id: one gone since was dropped with only
     * its reader ordered after it, and the rest must follow every stream. */
    uint64_t rest_at, rest_len;
    int blockers[BLOCKERS];
    uint32_t blocker_ids[BLOCKERS];
    int nblockers;
    bool timed;          /* the rest is the whole copy, timed when made */
} entry_t;

typedef struct {
    pthread_mutex_t lock;
    int dev;             /* whose memory it is */
    CUcontext ctx;       /* the context it serves, that of its setup */
    const sw_table_t *table; /* the tracked allocations (alloc.c) */
    CUdeviceptr base;    /* the window */
    uint64_t size, head;
    uint64_t slot;       /* the largest range it streams (winroom.c) */
    CUstream side;       /* where copies go: st, or cst during a capture */
    CUstream st;         /* the device's copy stream (sw_dev_copy_stream) */
    CUstream cst;        /* spillway's stream for captures, made on first use */
    CUstream origin;     /* the capturing stream the window serves, or NULL */
    bool cst_in;         /* cst joined that capture: it must rejoin the origin */
    bool broken;         /* the capture lost a step its graph needs: it must fail */
    bool graphs;         /* some graph holds copies: replays take turns */
    CUevent replayed;    /* after the latest such replay */
    CUevent done;        /* after the latest evictions, for others to wait on */
    bool fp_on;          /* fingerprints: else every copy goes home */
    CUdeviceptr fp;      /* per unit: home's fingerprint, then the copy's */
    uint32_t *changed;   /* per unit, pinned: spillway_copy_if_changed copied */
    uint32_t *escaped;   /* per unit, pinned: spillway_unwindow put a stored pointer back */
    unit_t units[MAX_UNITS];
    int16_t unit_at[1 << UNIT_SLOTS_LOG2]; /* live units by start (window_copy.c): ui + 1, 0 none */
    entry_t entries[MAX_ENTRIES];
    int nunits;
    int live;            /* entries holding a copy (atomic reads outside the lock) */
    int top;             /* no entry from here up has held a copy since the window
                          * was made: the per-launch walks stop here, not at 512 */
    int unfinished;      /* entries whose fill's rest is still to copy: each served
                          * launch looks for them (sw_win_finish_fills) */
    int last;            /* the unit used last, for the chain */
    sw_worth_t worth;    /* its clocks and counts (core/worth.c, sw_window_worth) */
    /* Relaxed atomics: read without the lock. */
    uint64_t served_at;  /* the launch it served last; 0 none */
    int idle_replays;    /* graph launches since it last served, while no graph held a copy */
    sw_timers_t *timers; /* NULL: nothing is timed, every range is copied */
    uint32_t ids;        /* ranges given a unit so far */
    uint8_t sessions;    /* visits timed in place so far (wraps, skipping 0) */
    bool said_repaid;    /* repaid() said timing lowered its bar */
    /* Launches between sw_window_use and sw_window_read holding a copy or
     * a timer of it (window_use.c, hold): it is not freed under them (sw_window_release). */
    int holders;
    float ratios[MAX_UNITS]; /* repaid()'s scratch */
    double copy_rate;        /* the most bytes per ms a copy reached (core/cost.c) */
    bool short_launches;     /* made one copy for launches short beside a copy (sw_window_resize) */
    uint64_t lead;           /* made one copy and a lead of this many bytes (sw_window_resize); 0 not */
} win_t;

/* Each unit's words in w->fp: home's fingerprint, the copy's, and the
 * sums spillway_way_home adds into, zero between its runs. */
#define FP_UNIT_BYTES 64
_Static_assert(2 * SW_FP_BYTES + SW_FP_ACC_BYTES <= FP_UNIT_BYTES, "a unit's words fit");
static inline CUdeviceptr fp_home(const win_t *w, int ui)
{
    return w->fp + (uint64_t)ui * FP_UNIT_BYTES;
}
static inline CUdeviceptr fp_now(const win_t *w, int ui) { return fp_home(w, ui) + SW_FP_BYTES; }
static inline CUdeviceptr fp_acc(const win_t *w, int ui)
{
    return fp_home(w, ui) + 2 * SW_FP_BYTES;
}

static inline bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
    return a < b + blen && b < a + alen;
}

/* ---- window_cost.c: the two ways a range is read, timed ---- */
bool sw_win_can_time(const win_t *w);
uint64_t sw_win_tag(int ui, const unit_t *u, sw_cost_kind_t k);
/* The tag of a timer that times `part` bytes of u's copy, the rest
 * waiting for a launch: its sample is scaled to the whole copy. */
uint64_t sw_win_tag_part(int ui, const unit_t *u, uint64_t part);
void sw_win_session_end(unit_t *u);
void sw_win_timed(uint64_t tag, float ms, void *arg);
/* The timer begun for this launch of ui read in place on s, or -1: none
 * is begun unless `may` (the launch is timed by no other timer, nor holds
 * another device's window). */
int sw_win_time_in_place(win_t *w, int ui, CUstream s, bool may);
int sw_win_time_home(win_t *w, const int *entries, int n, CUstream s);
uint64_t sw_win_host_bytes(const win_t *w, uint64_t start, uint64_t len);
double sw_win_place_ratio(const win_t *w, const unit_t *u);
/* The part of a copy of len bytes that goes before its rest waits for
 * the launch reading the copy before it, so that the copy is made ahead
 * all the same: the lead w was made anew for (w->lead, sw_window_resize),
 * else all but a trim's (sw_policy_window_trim), where the launch is
 * shorter than the copy's first seven eighths (two_copies, core/worth.c). */
static inline uint64_t sw_win_lead(const win_t *w, uint64_t len)
{
    uint64_t trimmed = len - len / SW_WINDOW_TRIM;
    return w->lead && w->lead < trimmed ? w->lead : trimmed;
}
/* Whether w holds a copy of len bytes beside the lead of the next
 * (sw_win_lead): two copies, or less by a trim or down to a lead. Each
 * copy then overlaps the one before only in a last part, which waits for
 * that copy's launch while the lead is copied, so the copies are made
 * ahead as in two. */
static inline bool sw_win_holds_two(const win_t *w, uint64_t len)
{
    return len + sw_win_lead(w, len) <= w->size;
}
bool sw_win_cheaper_in_place(const win_t *w, unit_t *u);
double sw_win_repaid(void *arg);
sw_served_t sw_win_served_share(void *arg, uint64_t now, uint64_t period);
uint64_t sw_win_copyable(void *arg, uint64_t now, uint64_t period);

/* ---- window_copy.c: the ranges, their copies, the chain, the way home ---- */
void sw_win_drop_entry(win_t *w, entry_t *e);
void sw_win_break_capture(win_t *w);
bool sw_win_streamable(const win_t *w, uint64_t start, uint64_t len);
int sw_win_unit_find(win_t *w, uint64_t start);
int sw_win_unit_get(win_t *w, uint64_t start, uint64_t len);
void sw_win_unit_end(win_t *w, int ui);
CUresult sw_win_after_app(win_t *w);
CUresult sw_win_evict(win_t *w, entry_t *e);
entry_t *sw_win_fill(win_t *w, int ui, bool ahead);
void sw_win_finish_fills(win_t *w);
bool sw_win_reader_ok(const entry_t *e, CUstream s);
bool sw_win_spans_all(uint64_t parts);
bool sw_win_spanned(const unit_t *u);
bool sw_win_one_tensor(const sw_alloc_t *a);
void sw_win_copy_ahead(win_t *w, int ui, uint64_t now);
CUresult sw_win_order_after(win_t *w, CUstream s, CUevent ev);
bool sw_win_drop_overlaps(win_t *w, uint64_t lo, uint64_t len, int keep, CUstream s);
void sw_win_drop_for_write(win_t *w, uint64_t lo, uint64_t len, CUstream s);
bool sw_win_homes_in_one(const win_t *w, const entry_t *e);
CUresult sw_win_send_home(win_t *w, entry_t *e, CUstream s, const sw_unwindow_t *uw);
void sw_win_home_by_host(win_t *w, entry_t *e, CUstream s);

/* ---- window.c: each device's window, made and given back (no lock) ---- */
win_t *sw_win_get(int dev);
/* The next window after device *dev's, *dev moved to its device; NULL
 * after the last: for (int d = -1; (w = sw_win_next(&d));) */
win_t *sw_win_next(int *dev);

/* ---- window_touch.c: home written in place ---- */
bool sw_win_foreign(win_t *w, CUstream s);
void sw_win_forget_fingerprints(win_t *w);
void sw_win_home_changed(win_t *w, int i);
void sw_win_flush_all(win_t *w, CUstream s);

#endif

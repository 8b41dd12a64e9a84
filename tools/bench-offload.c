/*
 * bench-offload: how close spillway's offload comes to the best possible,
 * on simgpu's virtual clock, for every scenario in every mode, in one run.
 *
 *   bench-offload BUILD_DIR [--quick] [--only NAME[,NAME...]] [--markdown]
 *                 [--jobs N] [--keep] [--quiet]
 *
 * BUILD_DIR is a meson build directory of this project: the programs are
 * BUILD_DIR/tests/apps/{mlp,moe}, the library BUILD_DIR/src/libspillway.so
 * and simgpu's libcuda.so.1 is in BUILD_DIR/tests/simgpu.
 *
 * Scenario families (the targets of issue 26, print_targets; each model
 * is 2.5 times the GPU budget, which is a whole number of layers):
 *   decode   mlp, one vector per step (gemv): transfer-bound.  Layers of
 *            1, 4, 16 and 64 MiB, each in three layouts: one allocation
 *            per layer, --one-buffer, and --segments 20 (PyTorch's caching
 *            allocator); at 4 MiB also the odd layers alone packed into
 *            8 MiB segments (--odd-segments, a model whose fused layers
 *            share allocations); some on two streams (--streams 2); the one-buffer
 *            runs of 16 and 64 MiB with a workspace every layer writes
 *            (--workspace: cuBLAS's, made before the weights);
 *   graph    decode captured once and replayed (--graph), at two sizes;
 *   prefill  mlp --batch with SIMGPU_TFLOPS set so that one layer's GEMM
 *            takes as long as copying its weights at 55 GB/s, and at 64 MiB
 *            a third as long;
 *   train    mlp --train: after the forward pass every layer's weights
 *            are updated in place by a kernel, so offloaded weights that
 *            were written must go home each step;
 *   moe      moe, K of E experts per step drawn from a Zipf law, timed
 *            after 100 steps, once popularity is learned (steady state),
 *            and moe-early, timed after 20 steps: the cost of learning it.
 * Modes:
 *   all-resident  no spillway, device memory large enough for everything;
 *   prefetch-off  spillway, SPILLWAY_POLICY=learned, SPILLWAY_PREFETCH_BYTES=0;
 *   lru           spillway, SPILLWAY_POLICY=lru, SPILLWAY_PREFETCH_BYTES=0;
 *   learned       spillway with its defaults;
 *   rewrite-off   spillway, SPILLWAY_REWRITE=0 (the fallback of issue 12);
 *   uva           no spillway: mlp --offload uva --resident K, vLLM's UVA
 *                 offload written into the program: the first K layers in
 *                 device memory, the others in mapped pinned host memory,
 *                 read in place;
 *   prefetch      no spillway: mlp --offload prefetch --resident K, vLLM's
 *                 prefetch offload: the others copied a layer ahead into
 *                 two device buffers on a side stream, ordered by events.
 * Every spillway mode sets SPILLWAY_GPU_BUDGET and nothing else beyond
 * what its name says: learned measures spillway's defaults.  The two
 * baselines prefetch-off and lru run only in the scenarios that list them,
 * to keep the run short.  The hand-written peers uva and prefetch run in
 * the decode and prefill scenarios with one allocation per layer (the
 * layout they need), with the largest K whose device bytes (K layers,
 * and the two buffers of prefetch) fit in the budget spillway gets.  In
 * the spillway and peer modes SIMGPU_MEM is the budget plus 256 MiB, so
 * the budget, not the simulated GPU, is the limit.
 *
 * Each (scenario, mode) runs twice as a child process: once for W warm-up
 * steps only (the prefix run) and once for W + T steps with --time W.  The
 * program's routing and work do not depend on its step count, and simgpu's
 * clock depends only on the sequence of calls (spillway has no background
 * thread), so the first W steps of both runs are the same, and the
 * difference of their counters is what the T timed steps did.  This is how
 * the byte and count columns are measured; the step time comes from events
 * on the program's compute stream (mlp/moe --time).  Because the clock is
 * virtual, running several children at once (--jobs) changes no number.
 * Some scenarios also run learned and rewrite-off once more under
 * SIMGPU_JITTER (random real-time delays before every stream operation),
 * checked for correctness only.
 *
 * Exit status: 0 it ran and every run passed its check (whatever the
 * targets say: they are measurements, reported as PASS/MISS); 1 some run
 * failed its check (wrong result, hazard, fault, crash); 2 setup error;
 * 3 bad command line.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MIB (1024.0 * 1024.0)
#define MiB(n) ((uint64_t)(n) << 20)
/* simgpu's default SIMGPU_H2D_GBPS (tests/simgpu/README.md): 1 GB/s moves
 * one byte per ns.  The children run with SIMGPU_* cleared, so this is
 * what they see.  No single transfer crosses faster: a copy alone runs at
 * this cap, zero-copy reads at 50 GB/s; only a copy and reads together
 * can fill the 57 GB/s link, 3.6% more. */
#define H2D_BYTES_PER_NS 55.0
/* simgpu's default SIMGPU_D2H_GBPS: the cap of a copy home.  The link's
 * other direction, so write-back does not share the H2D link. */
#define D2H_BYTES_PER_NS 55.0
/* A child that runs longer than this is killed (SIGALRM, set before exec). */
#define CHILD_TIMEOUT_S 900
/* SIMGPU_JITTER of the jitter runs: up to 50 us before every stream op. */
#define JITTER_US "50"

/* ---- scenarios and modes ---- */

typedef enum { FAM_DECODE, FAM_GRAPH, FAM_PREFILL, FAM_TRAIN, FAM_MOE } family_t;
typedef enum { LAYOUT_PER_LAYER, LAYOUT_ONE, LAYOUT_SEGMENTS, LAYOUT_ODD } layout_t;

enum { M_RESIDENT, M_PREFETCH_OFF, M_LRU, M_LEARNED, M_REWRITE_OFF, M_UVA, M_PEER_PREFETCH,
       NMODES };

/* Modes of a scenario, as a mask of 1 << M_*: every scenario runs CORE;
 * BASELINES adds prefetch-off and lru.  PEERS (uva, prefetch) is added by
 * scenario_modes() where the peers apply. */
#define CORE ((1u << M_RESIDENT) | (1u << M_LEARNED) | (1u << M_REWRITE_OFF))
#define BASELINES (CORE | (1u << M_PREFETCH_OFF) | (1u << M_LRU))
#define PEERS ((1u << M_UVA) | (1u << M_PEER_PREFETCH))

/* --segments of the segments layout: PyTorch's caching allocator makes
 * 20 MiB segments for tensors of 1 to 10 MiB. */
#define SEGMENT_MIB 20
/* The odd layout (--segments 8 --odd-segments): each even layer an
 * allocation of its own, the odd ones packed into segments of at most
 * 8 MiB, as a model whose fused layers share an allocation (issue 26's
 * model-like program). */
#define ODD_SEGMENT_MIB 8

typedef struct scenario {
    const char *name;
    family_t fam;       /* also says the program: moe for FAM_MOE, else mlp */
    uint32_t count;     /* layers (mlp) or experts (moe) */
    uint32_t width;     /* each layer or expert is width x width floats */
    uint32_t batch;     /* mlp: vectors per step through sg_gemm_f32; 0: gemv */
    layout_t layout;    /* mlp: how the weights are allocated */
    uint32_t streams;   /* mlp --streams: 1 or 2 */
    uint32_t active;    /* moe: experts per step */
    uint32_t warmup;    /* W */
    uint32_t timed;     /* T */
    uint64_t budget;    /* SPILLWAY_GPU_BUDGET */
    const char *tflops; /* SIMGPU_TFLOPS, or NULL for simgpu's default */
    unsigned modes;     /* CORE or BASELINES */
    bool jitter;        /* also run learned and rewrite-off under SIMGPU_JITTER */
    uint32_t workspace; /* mlp --workspace, MiB (0: none): scratch every layer
                         * writes, made before the weights, as cuBLAS's is */
    bool halves;        /* mlp --widths W,W/2: layers of W x W/2 floats, from
                         * W wide to W/2 and back (a 2 MiB layer at 1024,
                         * which no square one is) */
} scenario_t;

/* Shorthands for the tables below. */
#define PL LAYOUT_PER_LAYER
#define ONE LAYOUT_ONE
#define SEG LAYOUT_SEGMENTS
#define ODD LAYOUT_ODD

/*
 * The full set.  Sizes are chosen so the whole run stays within minutes on
 * a small machine: the simulated kernels really compute, on the CPU, and
 * so does each program's host reference.  Budgets are whole layers, so the
 * bound's unit (a layer) loses nothing to rounding, except in decode-3M
 * and decode-5M: layers of 3.06 and 5.06 MiB, which the granularity rounds
 * up to 4 and 6 MiB (and the peers do not, on simgpu), as a model's
 * tensors are sized by its shapes, not by powers of two.  Proportions are a
 * deployment's (issue 26): every budget is at least 8 times the largest
 * allocation a scenario streams (a layer, or a 20 MiB segment), checked
 * by streamed_fits(); one buffer holding every layer is the exception its
 * own target is about.  decode-64M has no
 * segments variant: a 64 MiB layer is bigger than a segment and gets its
 * own allocation, which makes the very calls of decode-64M.
 *
 * decode-2M-deep: 256 layers of 2 MiB, a model of many small tensors,
 * under 288 MiB: the resident layers' kernels run for as long as ten or
 * more copies, so where they lie in the step decides whether the link
 * idles meanwhile (all at the front, as the peers keep them and as
 * allocation order leaves them).
 *
 * decode-8M-seg: a deployment's chunks. 120 layers of 8 MiB (1448^2
 * floats), two to a 20 MiB segment with 4 MiB of slack, under 384 MiB: a
 * budget of 256 MiB or more leaves `auto` its largest chunks, as a real
 * GPU's budget does, where the rows above, under 160 MiB or less, cut
 * every segment finer. W=4: its 120 layers are still learned in its
 * fourth step, which gives the window back and trades (18.3 ms).
 *
 * prefill: width 1024, batch 16 at 0.45 TFLOPS: a layer's GEMM computes
 * 2 * 1024^2 * 16 flops in 74.6 us, plus simgpu's 2 us per kernel, 76.6 us;
 * its 4 MiB take 76.3 us at 55 GB/s.  A batch below one 128-row GEMM tile
 * reads a host-resident weight once, like a copy.
 *
 * prefill-64M: the H200's prefill in proportion (32 layers of 128 MiB at
 * batch 4096, 2026-11-30: a GEMM a third of its layer's copy, the layers
 * bigger than a chunk): 64 MiB layers, each eight 8 MiB chunks under 512
 * MiB, at 1.3 TFLOPS a GEMM of 415 us against a copy of 1220 us, so the
 * link is the bound and the resident layers' compute is time it could
 * copy in.
 */
static const scenario_t full_set[] = {
    {"decode-1M", FAM_DECODE, 40, 512, 0, PL, 1, 0, 3, 4, MiB(16), NULL, CORE, false, 0, false},
    {"decode-1M-one", FAM_DECODE, 40, 512, 0, ONE, 1, 0, 3, 4, MiB(16), NULL, CORE, false, 0, false},
    {"decode-1M-seg", FAM_DECODE, 400, 512, 0, SEG, 2, 0, 3, 4, MiB(160), NULL, CORE, true, 0, false},
    {"decode-2M-deep", FAM_DECODE, 256, 1024, 0, PL, 2, 0, 3, 4, MiB(288), NULL, CORE, false, 0, true},
    {"decode-4M", FAM_DECODE, 20, 1024, 0, PL, 1, 0, 3, 4, MiB(32), NULL, CORE, false, 0, false},
    {"decode-4M-one", FAM_DECODE, 20, 1024, 0, ONE, 2, 0, 3, 4, MiB(32), NULL, BASELINES, false, 0, false},
    {"decode-4M-seg", FAM_DECODE, 100, 1024, 0, SEG, 2, 0, 3, 4, MiB(160), NULL, CORE, true, 0, false},
    {"decode-4M-odd", FAM_DECODE, 100, 1024, 0, ODD, 2, 0, 3, 4, MiB(160), NULL, CORE, false, 0, false},
    {"decode-16M", FAM_DECODE, 20, 2048, 0, PL, 2, 0, 3, 4, MiB(128), NULL, BASELINES, false, 0, false},
    {"decode-16M-one", FAM_DECODE, 20, 2048, 0, ONE, 1, 0, 3, 4, MiB(128), NULL, CORE, false, 4, false},
    {"decode-16M-seg", FAM_DECODE, 25, 2048, 0, SEG, 1, 0, 3, 4, MiB(160), NULL, CORE, false, 0, false},
    {"decode-8M-seg", FAM_DECODE, 120, 1448, 0, SEG, 2, 0, 4, 4, MiB(384), NULL, CORE, false, 0, false},
    {"decode-64M", FAM_DECODE, 20, 4096, 0, PL, 1, 0, 3, 3, MiB(512), NULL, CORE, false, 0, false},
    {"decode-3M", FAM_DECODE, 28, 896, 0, PL, 2, 0, 3, 4, MiB(34), NULL, CORE, false, 0, false},
    {"decode-5M", FAM_DECODE, 24, 1152, 0, PL, 2, 0, 3, 4, MiB(48), NULL, CORE, false, 0, false},
    {"decode-64M-one", FAM_DECODE, 10, 4096, 0, ONE, 2, 0, 3, 3, MiB(256), NULL, CORE, false, 8, false},
    {"graph-4M-seg", FAM_GRAPH, 100, 1024, 0, SEG, 2, 0, 3, 4, MiB(160), NULL, CORE, true, 0, false},
    {"graph-16M", FAM_GRAPH, 20, 2048, 0, PL, 1, 0, 3, 4, MiB(128), NULL, CORE, false, 0, false},
    {"prefill", FAM_PREFILL, 20, 1024, 16, PL, 1, 0, 3, 3, MiB(32), "0.45", BASELINES, false, 0, false},
    {"prefill-64M", FAM_PREFILL, 20, 4096, 16, PL, 1, 0, 3, 3, MiB(512), "1.3", CORE, false, 0, false},
    {"train", FAM_TRAIN, 20, 1024, 0, PL, 1, 0, 3, 4, MiB(32), NULL, BASELINES, false, 0, false},
    {"train-seg", FAM_TRAIN, 100, 1024, 0, SEG, 2, 0, 3, 4, MiB(160), NULL, CORE, true, 0, false},
    {"moe", FAM_MOE, 32, 1024, 0, PL, 1, 2, 100, 40, MiB(51), NULL, BASELINES, false, 0, false},
    {"moe-early", FAM_MOE, 32, 1024, 0, PL, 1, 2, 20, 40, MiB(51), NULL, BASELINES, false, 0, false},
};

/* --quick: the same families, tiny, for the test suite (correctness
 * only).  prefill: batch 2 at 0.056 TFLOPS keeps compute about equal to
 * copy (2 * 1024^2 * 2 flops in 74.9 us). */
static const scenario_t quick_set[] = {
    {"decode", FAM_DECODE, 20, 512, 0, PL, 1, 0, 2, 2, MiB(8), NULL, BASELINES, false, 0, false},
    {"decode-seg", FAM_DECODE, 20, 512, 0, SEG, 2, 0, 2, 2, MiB(8), NULL, CORE, true, 0, false},
    {"graph-one", FAM_GRAPH, 20, 512, 0, ONE, 2, 0, 2, 2, MiB(8), NULL, CORE, false, 0, false},
    {"prefill", FAM_PREFILL, 10, 1024, 2, PL, 1, 0, 2, 2, MiB(16), "0.056", CORE, false, 0, false},
    {"train", FAM_TRAIN, 10, 512, 0, SEG, 2, 0, 2, 2, MiB(4), NULL, CORE, true, 0, false},
    {"moe", FAM_MOE, 16, 1024, 0, PL, 1, 2, 8, 8, MiB(26), NULL, BASELINES, false, 0, false},
};

#undef PL
#undef ONE
#undef SEG
#undef ODD

typedef struct bmode {
    const char *name;
    bool preload;
    const char *policy;   /* SPILLWAY_POLICY, or NULL: the default */
    const char *prefetch; /* SPILLWAY_PREFETCH_BYTES, or NULL: the default */
    const char *rewrite;  /* SPILLWAY_REWRITE, or NULL: the default */
    const char *offload;  /* mlp --offload of a hand-written peer, or NULL */
} bmode_t;

static const bmode_t modes[NMODES] = {
    {"all-resident", false, NULL, NULL, NULL, NULL},
    {"prefetch-off", true, "learned", "0", NULL, NULL},
    {"lru", true, "lru", "0", NULL, NULL},
    {"learned", true, NULL, NULL, NULL, NULL},
    {"rewrite-off", true, NULL, NULL, "0", NULL},
    {"uva", false, NULL, NULL, NULL, "uva"},
    {"prefetch", false, NULL, NULL, NULL, "prefetch"},
};

static bool is_moe(const scenario_t *s)
{
    return s->fam == FAM_MOE;
}

static uint64_t unit_bytes(const scenario_t *s)
{
    return (uint64_t)s->width * (s->halves ? s->width / 2 : s->width) * sizeof(float);
}

static uint64_t model_bytes(const scenario_t *s)
{
    return s->count * unit_bytes(s);
}

/* The size of s's segments in MiB (mlp --segments), 0 for a layout
 * without them. */
static unsigned segment_mib(const scenario_t *s)
{
    if (s->layout == LAYOUT_SEGMENTS)
        return SEGMENT_MIB;
    return s->layout == LAYOUT_ODD ? ODD_SEGMENT_MIB : 0;
}

/* Whether s's budget is at least 8 times the largest allocation it
 * streams: a layer, or a segment (which holds whole layers, one at least);
 * one buffer of every layer is exempt. */
static bool streamed_fits(const scenario_t *s)
{
    uint64_t largest = unit_bytes(s);
    if (largest < MiB(segment_mib(s)))
        largest = MiB(segment_mib(s));
    return s->layout == LAYOUT_ONE || s->budget >= 8 * largest;
}

/* The hand-written peers need what vLLM's offloaders have: a model whose
 * every layer is a tensor of its own, read once per forward pass. */
static bool has_peers(const scenario_t *s)
{
    return (s->fam == FAM_DECODE || s->fam == FAM_PREFILL) && s->layout == LAYOUT_PER_LAYER;
}

static unsigned scenario_modes(const scenario_t *s)
{
    return s->modes | (has_peers(s) ? PEERS : 0);
}

/* A budgeted mode: under spillway, or a peer holding part of the model. */
static bool budgeted(int mode)
{
    return modes[mode].preload || modes[mode].offload != NULL;
}

/* Whole layers (experts) the budget holds beside the workspace, which
 * every launch uses: a policy that did not keep it resident would copy it
 * at every launch. */
static uint32_t layer_room(const scenario_t *s)
{
    return (uint32_t)((s->budget - MiB(s->workspace)) / unit_bytes(s));
}

/* --resident K of a peer mode: the most layers that fit in the budget
 * beside what the mode itself keeps on the GPU (prefetch: its two buffers
 * of a layer each, unless every layer fits and nothing is offloaded). */
static uint32_t peer_resident(const scenario_t *s, int mode)
{
    uint32_t room = layer_room(s);

    if (room > s->count)
        room = s->count;
    if (mode != M_PEER_PREFETCH || room == s->count)
        return room;
    return room > 2 ? room - 2 : 0;
}

/*
 * Device memory a run under spillway may hold beyond its budget: the
 * program's small buffers (mlp: two activation batches and the gemv
 * pointer table; moe: three vectors), which spillway may leave untracked
 * (SPILLWAY_MIN_ALLOC), plus 1 MiB for spillway's own small allocations.
 * G of --train is not in it: the bound counts G among what the budget
 * holds.
 */
static uint64_t allowed_over_budget(const scenario_t *s)
{
    uint64_t vec = (uint64_t)s->width * sizeof(float);
    uint64_t small = is_moe(s) ? 3 * vec
                               : 2 * vec * (s->batch > 0 ? s->batch : 1) +
                                     (s->batch > 0 ? 0 : (uint64_t)s->count * sizeof(uint64_t));

    return small + MiB(1);
}

/* ---- one child run ---- */

/* spillway report fields the bench reads.  A field missing from a report
 * (an older or newer spillway) is shown as "-", never as a zero. */
enum { SW_PROMOTED, SW_WRITTEN_BACK, SW_LATE, SW_STREAMED, SW_REWRITTEN, SW_WAITED,
       SW_PREFETCHES, SW_ZERO_COPY, NSW };
static const char *const sw_keys[NSW] = {
    "bytes_promoted", "bytes_written_back", "prefetch_late", "bytes_streamed",
    "rewritten_launches", "launches_waited", "prefetches", "bytes_zero_copy_estimated",
};

typedef struct run {
    /* what to run */
    const scenario_t *s;
    int mode;
    bool prefix; /* W steps only, no timing */
    bool jitter; /* under SIMGPU_JITTER (W + T steps, for correctness only) */
    char tag[96];
    /* what came back */
    int wstatus;
    bool waited;
    bool exited0;    /* exit status 0 */
    bool have_line;  /* the result line was found */
    bool match;      /* result=match */
    uint64_t checksum;
    double step_ns;
    bool have_step;
    bool have_sg;    /* simgpu report read */
    uint64_t hazards, faults, link;
    uint64_t dev_peak; /* simgpu's device_bytes_peak */
    bool have_sw;    /* spillway report read */
    uint64_t sw[NSW];
    bool sw_has[NSW]; /* the field was in the report */
    uint32_t *sched; /* moe, all-resident full run: experts of the timed steps */
    size_t nsched;
} run_t;

static char tmpdir[4096];
static const char *build;
static bool keep;

static void die_setup(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "bench-offload: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(2);
}

static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *p;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&p, fmt, ap);
    va_end(ap);
    if (n < 0)
        die_setup("out of memory");
    return p;
}

static char *path_of(const run_t *r, const char *ext)
{
    return xasprintf("%s/%s.%s", tmpdir, r->tag, ext);
}

/* The child's environment: ours without SIMGPU_*, SPILLWAY_*, LD_PRELOAD
 * and LD_LIBRARY_PATH, then exactly the settings of the run. In a
 * sanitized build (meson sets SANITIZER_PRELOAD for its tests) the
 * sanitizer's runtime comes first in LD_PRELOAD, as it must. */
static char **child_env(const run_t *r)
{
    const scenario_t *s = r->s;
    const bmode_t *m = &modes[r->mode];
    size_t n = 0, i = 0;
    char **env;

    while (environ[n] != NULL)
        n++;
    env = calloc(n + 16, sizeof(char *));
    if (env == NULL)
        die_setup("out of memory");
    for (size_t k = 0; k < n; k++) {
        const char *e = environ[k];

        if (strncmp(e, "SIMGPU_", 7) == 0 || strncmp(e, "SPILLWAY_", 9) == 0 ||
            strncmp(e, "LD_PRELOAD=", 11) == 0 || strncmp(e, "LD_LIBRARY_PATH=", 16) == 0)
            continue;
        env[i++] = (char *)e;
    }
    {
        const char *old = getenv("LD_LIBRARY_PATH");

        env[i++] = old != NULL && old[0] != '\0'
                       ? xasprintf("LD_LIBRARY_PATH=%s/tests/simgpu:%s", build, old)
                       : xasprintf("LD_LIBRARY_PATH=%s/tests/simgpu", build);
    }
    env[i++] = xasprintf("SIMGPU_REPORT=%s", path_of(r, "simgpu.json"));
    if (s->tflops != NULL)
        env[i++] = xasprintf("SIMGPU_TFLOPS=%s", s->tflops);
    if (r->jitter)
        env[i++] = xasprintf("SIMGPU_JITTER=%s", JITTER_US);
    if (!budgeted(r->mode)) {
        /* Room for everything, segments' slack included. */
        env[i++] = xasprintf("SIMGPU_MEM=%" PRIu64 "MiB", model_bytes(s) / MiB(1) * 2 + 256);
    } else if (!m->preload) {
        /* A peer keeps itself in the budget by its choice of K (--resident);
         * the simulated GPU is as big as spillway's. */
        env[i++] = xasprintf("SIMGPU_MEM=%" PRIu64 "MiB", s->budget / MiB(1) + 256);
    } else {
        env[i++] = xasprintf("SIMGPU_MEM=%" PRIu64 "MiB", s->budget / MiB(1) + 256);
        const char *first = getenv("SANITIZER_PRELOAD");
        env[i++] = first != NULL && first[0] != '\0'
                       ? xasprintf("LD_PRELOAD=%s %s/src/libspillway.so", first, build)
                       : xasprintf("LD_PRELOAD=%s/src/libspillway.so", build);
        env[i++] = xasprintf("SPILLWAY_GPU_BUDGET=%" PRIu64 "MiB", s->budget / MiB(1));
        env[i++] = xasprintf("SPILLWAY_REPORT=%s", path_of(r, "spillway.json"));
        env[i++] = xasprintf("SPILLWAY_STATS_DIR=%s/stats", tmpdir);
        if (m->policy != NULL)
            env[i++] = xasprintf("SPILLWAY_POLICY=%s", m->policy);
        if (m->prefetch != NULL)
            env[i++] = xasprintf("SPILLWAY_PREFETCH_BYTES=%s", m->prefetch);
        if (m->rewrite != NULL)
            env[i++] = xasprintf("SPILLWAY_REWRITE=%s", m->rewrite);
    }
    env[i] = NULL;
    return env;
}

/* The program's options of scenario s, less --steps and --time, into a
 * (at least 16 entries); returns how many. */
static int scenario_args(const scenario_t *s, char **a)
{
    int i = 0;

    if (is_moe(s)) {
        a[i++] = "--experts";
        a[i++] = xasprintf("%u", s->count);
        a[i++] = "--active";
        a[i++] = xasprintf("%u", s->active);
    } else {
        a[i++] = "--layers";
        a[i++] = xasprintf("%u", s->count);
    }
    if (s->halves) {
        a[i++] = "--widths";
        a[i++] = xasprintf("%u,%u", s->width, s->width / 2);
    } else {
        a[i++] = "--width";
        a[i++] = xasprintf("%u", s->width);
    }
    if (s->batch > 0) {
        a[i++] = "--batch";
        a[i++] = xasprintf("%u", s->batch);
    }
    if (s->layout == LAYOUT_ONE)
        a[i++] = "--one-buffer";
    if (segment_mib(s)) {
        a[i++] = "--segments";
        a[i++] = xasprintf("%u", segment_mib(s));
    }
    if (s->layout == LAYOUT_ODD)
        a[i++] = "--odd-segments";
    if (s->streams > 1) {
        a[i++] = "--streams";
        a[i++] = xasprintf("%u", s->streams);
    }
    if (s->fam == FAM_GRAPH)
        a[i++] = "--graph";
    if (s->fam == FAM_TRAIN)
        a[i++] = "--train";
    if (s->workspace > 0) {
        a[i++] = "--workspace";
        a[i++] = xasprintf("%u", s->workspace);
    }
    return i;
}

static char **child_argv(const run_t *r, char **exe)
{
    const scenario_t *s = r->s;
    char **a = calloc(32, sizeof(char *));
    int i = 0;
    uint32_t steps = r->prefix ? s->warmup : s->warmup + s->timed;

    if (a == NULL)
        die_setup("out of memory");
    *exe = xasprintf("%s/tests/apps/%s", build, is_moe(s) ? "moe" : "mlp");
    a[i++] = *exe;
    i += scenario_args(s, a + i);
    if (is_moe(s) && r->mode == M_RESIDENT && !r->prefix)
        a[i++] = "--schedule";
    if (modes[r->mode].offload != NULL) {
        a[i++] = "--offload";
        a[i++] = (char *)modes[r->mode].offload;
        a[i++] = "--resident";
        a[i++] = xasprintf("%u", peer_resident(s, r->mode));
    }
    a[i++] = "--steps";
    a[i++] = xasprintf("%u", steps);
    if (!r->prefix) {
        a[i++] = "--time";
        a[i++] = xasprintf("%u", s->warmup);
    }
    a[i] = NULL;
    return a;
}
static pid_t start(run_t *r)
{
    char *exe, **argv = child_argv(r, &exe), **envp = child_env(r);
    char *out = path_of(r, "out"), *sg = path_of(r, "simgpu.json"),
         *sw = path_of(r, "spillway.json");
    pid_t pid;

    /* A report left from an earlier run must not be read as this one's. */
    unlink(sg);
    unlink(sw);
    fflush(NULL);
    pid = fork();
    if (pid < 0)
        die_setup("fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        alarm(CHILD_TIMEOUT_S); /* kept across exec: a hang ends as SIGALRM */
        execve(exe, argv, envp);
        fprintf(stderr, "bench-offload: exec %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    return pid;
}

/* The whole file, NUL-terminated, or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t len = 0, cap = 0;

    if (f == NULL)
        return NULL;
    for (;;) {
        if (cap - len < 4096) {
            char *nb = realloc(buf, cap + 65536);

            if (nb == NULL) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap += 65536;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);

        len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

/* An unsigned number field of a flat JSON object into *v; false when the
 * field is absent (*v is then 0). */
static bool json_field(const char *json, const char *key, uint64_t *v)
{
    char pat[128];
    const char *p;

    *v = 0;
    snprintf(pat, sizeof(pat), "\"%s\"", key);
    if (json == NULL || (p = strstr(json, pat)) == NULL)
        return false;
    p += strlen(pat);
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p != ':')
        return false;
    p++;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    *v = strtoull(p, NULL, 10);
    return true;
}

/* The same, 0 when absent: for simgpu's fields, which always exist. */
static uint64_t json_u64(const char *json, const char *key)
{
    uint64_t v;

    json_field(json, key, &v);
    return v;
}
static void collect(run_t *r)
{
    char *out = slurp(path_of(r, "out"));
    char *sg = slurp(path_of(r, "simgpu.json"));
    char *sw = slurp(path_of(r, "spillway.json"));
    const char *prog = is_moe(r->s) ? "moe: " : "mlp: ";
    size_t cap = 0;

    r->exited0 = WIFEXITED(r->wstatus) && WEXITSTATUS(r->wstatus) == 0;
    for (char *line = out; line != NULL && *line != '\0';) {
        char *nl = strchr(line, '\n');
        char *p;

        if (nl != NULL)
            *nl = '\0';
        if (strncmp(line, prog, 5) == 0 && (p = strstr(line, " result=")) != NULL) {
            char *c = strstr(line, " checksum=0x"), *t = strstr(line, " step_ns=");

            r->have_line = true;
            r->match = strncmp(p + 8, "match", 5) == 0 && (p[13] == ' ' || p[13] == '\0');
            if (c != NULL)
                r->checksum = strtoull(c + 12, NULL, 16);
            if (t != NULL) {
                r->step_ns = strtod(t + 9, NULL);
                r->have_step = true;
            }
        } else if (strncmp(line, "moe-step ", 9) == 0) {
            char *end;
            unsigned long step = strtoul(line + 9, &end, 10);

            if (step >= r->s->warmup && *end == ':') {
                for (p = end + 1;;) {
                    unsigned long e = strtoul(p, &end, 10);

                    if (end == p)
                        break;
                    p = end;
                    if (r->nsched == cap) {
                        uint32_t *ns;

                        cap = cap ? cap * 2 : 256;
                        ns = realloc(r->sched, cap * sizeof(uint32_t));
                        if (ns == NULL)
                            die_setup("out of memory");
                        r->sched = ns;
                    }
                    r->sched[r->nsched++] = (uint32_t)e;
                }
            }
        }
        line = nl != NULL ? nl + 1 : NULL;
    }
    if (sg != NULL) {
        r->have_sg = strstr(sg, "\"virtual_time_ns\"") != NULL;
        r->hazards = json_u64(sg, "hazards");
        r->faults = json_u64(sg, "faults");
        r->dev_peak = json_u64(sg, "device_bytes_peak");
        r->link = json_u64(sg, "dma_h2d_bytes") + json_u64(sg, "dma_d2h_bytes") +
                  json_u64(sg, "kernel_bytes_host");
    }
    if (sw != NULL) {
        r->have_sw = strstr(sw, "\"pid\"") != NULL;
        for (int k = 0; k < NSW; k++)
            r->sw_has[k] = json_field(sw, sw_keys[k], &r->sw[k]);
    }
    free(out);
    free(sg);
    free(sw);
}

/* Run all, in the given order, at most `jobs` at a time. */
static void run_all(run_t **runs, size_t n, int jobs, bool verbose)
{
    pid_t *pids = calloc(n, sizeof(pid_t));
    size_t next = 0, done = 0;
    int active = 0;

    if (pids == NULL)
        die_setup("out of memory");
    while (done < n) {
        while (active < jobs && next < n) {
            pids[next] = start(runs[next]);
            if (verbose)
                fprintf(stderr, "bench-offload: [%zu/%zu] %s\n", next + 1, n, runs[next]->tag);
            next++;
            active++;
        }
        int st;
        pid_t pid = waitpid(-1, &st, 0);

        if (pid < 0) {
            if (errno == EINTR)
                continue;
            die_setup("waitpid: %s", strerror(errno));
        }
        for (size_t i = 0; i < next; i++)
            if (pids[i] == pid && !runs[i]->waited) {
                runs[i]->wstatus = st;
                runs[i]->waited = true;
                collect(runs[i]);
                active--;
                done++;
                break;
            }
    }
    free(pids);
}

/* ---- the lower bound ---- */

/*
 * Fewest misses any policy can have on the access sequence seq[0..n) with
 * room for `cap` units, where a miss may also be served without keeping
 * the unit (zero-copy: "bypass"), and where the units resident at the
 * start are chosen freely.  Belady's MIN with bypass is optimal for
 * unit-size items: on a miss with the room full, drop whichever of the
 * resident units and the missing one is next used furthest ahead.  From
 * an empty start that gives OPT_empty; a free start saves exactly the
 * first min(cap, distinct) loads, which MIN makes without evicting.
 */
static uint64_t opt_misses(const uint32_t *seq, size_t n, uint32_t cap, uint32_t nunits)
{
    size_t *next = malloc(n * sizeof(size_t)), *last = malloc(nunits * sizeof(size_t));
    uint32_t *res = malloc((cap + 1) * sizeof(uint32_t));
    size_t *res_next = malloc((cap + 1) * sizeof(size_t));
    bool *in = calloc(nunits, sizeof(bool)), *seen = calloc(nunits, sizeof(bool));
    uint64_t misses = 0, distinct = 0;
    uint32_t nres = 0;

    if (next == NULL || last == NULL || res == NULL || res_next == NULL || in == NULL ||
        seen == NULL)
        die_setup("out of memory");
    for (uint32_t u = 0; u < nunits; u++)
        last[u] = SIZE_MAX;
    for (size_t i = n; i-- > 0;) {
        next[i] = last[seq[i]];
        last[seq[i]] = i;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t u = seq[i];

        if (!seen[u]) {
            seen[u] = true;
            distinct++;
        }
        if (in[u]) {
            for (uint32_t k = 0; k < nres; k++)
                if (res[k] == u)
                    res_next[k] = next[i];
            continue;
        }
        misses++;
        if (cap == 0)
            continue;
        if (nres < cap) {
            res[nres] = u;
            res_next[nres++] = next[i];
            in[u] = true;
            continue;
        }
        uint32_t far = 0;

        for (uint32_t k = 1; k < nres; k++)
            if (res_next[k] > res_next[far])
                far = k;
        if (res_next[far] > next[i]) { /* else bypass: u is needed last */
            in[res[far]] = false;
            res[far] = u;
            res_next[far] = next[i];
            in[u] = true;
        }
    }
    free(next);
    free(last);
    free(res);
    free(res_next);
    free(in);
    free(seen);
    {
        uint64_t saved = distinct < cap ? distinct : cap;

        return misses > saved ? misses - saved : 0;
    }
}

/*
 * The least traffic per timed step that any policy needs, counted in
 * whole layers (or experts), the unit the programs read: each access to a
 * unit that is not on the GPU moves its bytes over the link at least once,
 * whether it is prefetched, copied on demand or read in place.
 *
 * h2d: unit bytes x the optimum above over the units the timed steps use,
 * with room for floor((budget - workspace) / unit) units.  mlp reads every layer in
 * order each step, so for decode and prefill this is (model - budget) per
 * step; --train then reads G and updates layer 0, G and layer 1, ...; moe
 * reads the experts its schedule names (the all-resident run's --schedule).
 *
 * d2h (--train only): every step writes every layer.  When a step ends at
 * most `room` units are on the GPU, so at least layers - room of the
 * layers it wrote have their only current copy at home: each went home,
 * copied or written in place, after its write in that step.
 *
 * Returns false if the schedule needed is missing.
 */
static bool min_bytes_per_step(const scenario_t *s, const run_t *resident, double *h2d,
                               double *d2h)
{
    uint32_t room = layer_room(s);
    uint32_t nunits = s->count + (s->fam == FAM_TRAIN); /* G is unit `count` */
    uint32_t *seq;
    size_t n = 0, per_step = s->fam == FAM_TRAIN ? 3 * (size_t)s->count : s->count;

    if (!is_moe(s)) {
        seq = malloc((size_t)s->timed * per_step * sizeof(uint32_t));
        if (seq == NULL)
            die_setup("out of memory");
        for (uint32_t t = 0; t < s->timed; t++) {
            for (uint32_t l = 0; l < s->count; l++)
                seq[n++] = l;
            for (uint32_t l = 0; s->fam == FAM_TRAIN && l < s->count; l++) {
                seq[n++] = s->count;
                seq[n++] = l;
            }
        }
    } else {
        if (resident->nsched != (size_t)s->timed * s->active)
            return false;
        seq = malloc(resident->nsched * sizeof(uint32_t));
        if (seq == NULL)
            die_setup("out of memory");
        for (size_t i = 0; i < resident->nsched; i++) {
            if (resident->sched[i] >= s->count) {
                free(seq);
                return false;
            }
            seq[n++] = resident->sched[i];
        }
    }
    *h2d = (double)opt_misses(seq, n, room, nunits) * (double)unit_bytes(s) / s->timed;
    *d2h = s->fam == FAM_TRAIN && s->count > room
               ? (double)(s->count - room) * (double)unit_bytes(s)
               : 0;
    free(seq);
    return true;
}

/* ---- the table ---- */

typedef struct cell {
    bool present;        /* the scenario runs this mode */
    run_t *full, *prefix;
    bool ok;
    char check[64];
    double step_ns;      /* <0: unknown */
    double moved, link;  /* per timed step; <0: unknown */
    double sw[NSW];      /* per timed step (SW_LATE: over the timed steps); <0: unknown */
    double min_h2d, min_d2h; /* per timed step; <0: unknown */
    double bound_ns;     /* <0: unknown */
    double peak;         /* device memory peak of the full run; <0: unknown */
    bool over_budget;    /* spillway modes: peak > budget + allowed_over_budget() */
} cell_t;

/* A run of a scenario under SIMGPU_JITTER, checked for correctness only. */
typedef struct jitter_run {
    size_t si;
    run_t *run;
    bool ok;
    char check[64];
} jitter_run_t;

static void why_failed(const run_t *r, char *buf, size_t len)
{
    if (WIFSIGNALED(r->wstatus))
        snprintf(buf, len, "%s: %s", r->prefix ? "prefix" : "run",
                 WTERMSIG(r->wstatus) == SIGALRM ? "timeout" : strsignal(WTERMSIG(r->wstatus)));
    else if (!r->exited0)
        snprintf(buf, len, "%s: exit %d", r->prefix ? "prefix" : "run", WEXITSTATUS(r->wstatus));
    else if (!r->have_line)
        snprintf(buf, len, "%s: no result line", r->prefix ? "prefix" : "run");
    else if (!r->match)
        snprintf(buf, len, "%s: mismatch", r->prefix ? "prefix" : "run");
    else if (!r->have_sg)
        snprintf(buf, len, "%s: no simgpu report", r->prefix ? "prefix" : "run");
    else if (r->hazards != 0)
        snprintf(buf, len, "%s: %" PRIu64 " hazards", r->prefix ? "prefix" : "run", r->hazards);
    else if (r->faults != 0)
        snprintf(buf, len, "%s: %" PRIu64 " faults", r->prefix ? "prefix" : "run", r->faults);
    else
        buf[0] = '\0';
}

/* Field k of the spillway reports per timed step ((full - prefix) / per),
 * or -1 when a report or the field is missing. */
static double sw_delta(const run_t *full, const run_t *prefix, int k, double per)
{
    if (!full->have_sw || !prefix->have_sw || !full->sw_has[k] || !prefix->sw_has[k] ||
        full->sw[k] < prefix->sw[k])
        return -1;
    return (double)(full->sw[k] - prefix->sw[k]) / per;
}

/* The check of a run against the all-resident one (NULL: it is that one). */
static bool check_run(const run_t *r, const cell_t *resident, char *why, size_t len)
{
    why_failed(r, why, len);
    if (why[0] == '\0' && resident != NULL) {
        if (!resident->ok)
            snprintf(why, len, "no reference");
        else if (r->checksum != (r->prefix ? resident->prefix : resident->full)->checksum)
            snprintf(why, len, "%s: checksum differs", r->prefix ? "prefix" : "run");
    }
    return why[0] == '\0';
}

static void fill_cell(cell_t *c, const scenario_t *s, int mode, const cell_t *resident,
                      double min_h2d, double min_d2h)
{
    const run_t *full = c->full, *prefix = c->prefix;
    char why[64];

    c->ok = check_run(full, resident, why, sizeof(why)) &&
            check_run(prefix, resident, why, sizeof(why));
    if (c->ok && !full->have_step) {
        c->ok = false;
        snprintf(why, sizeof(why), "no step_ns");
    }
    snprintf(c->check, sizeof(c->check), "%s", c->ok ? "ok" : why);
    c->step_ns = full->have_step ? full->step_ns : -1;
    c->peak = full->have_sg ? (double)full->dev_peak : -1;
    c->over_budget = budgeted(mode) && full->have_sg &&
                     full->dev_peak > s->budget + allowed_over_budget(s);
    c->link = -1;
    if (full->have_sg && prefix->have_sg && full->link >= prefix->link)
        c->link = (double)(full->link - prefix->link) / s->timed;
    for (int k = 0; k < NSW; k++)
        c->sw[k] = modes[mode].preload
                       ? sw_delta(full, prefix, k, k == SW_LATE ? 1.0 : (double)s->timed)
                       : -1;
    c->moved = c->sw[SW_PROMOTED] >= 0 && c->sw[SW_WRITTEN_BACK] >= 0
                   ? c->sw[SW_PROMOTED] + c->sw[SW_WRITTEN_BACK]
                   : -1;
    if (mode == M_RESIDENT) {
        c->min_h2d = c->min_d2h = 0;
        c->bound_ns = c->step_ns;
        return;
    }
    c->min_h2d = min_h2d;
    c->min_d2h = min_d2h;
    c->bound_ns = -1;
    if (resident->step_ns >= 0 && min_h2d >= 0) {
        double b = resident->step_ns;

        if (min_h2d / H2D_BYTES_PER_NS > b)
            b = min_h2d / H2D_BYTES_PER_NS;
        if (min_d2h / D2H_BYTES_PER_NS > b)
            b = min_d2h / D2H_BYTES_PER_NS;
        c->bound_ns = b;
    }
}

/* A number, or "-" when unknown, into buf. */
static const char *num(char *buf, size_t len, double v, double scale, int prec)
{
    if (v < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.*f", prec, v / scale);
    return buf;
}

/* One table row: cells of text, as markdown or aligned to widths w[]
 * (negative: left-aligned). */
static void row(bool md, int n, const int *w, const char *const *cell)
{
    for (int i = 0; i < n; i++) {
        if (md)
            printf("%s %s", i == 0 ? "|" : " |", cell[i]);
        else
            printf("%s%*s", i == 0 ? "" : "  ", w[i], cell[i]);
    }
    printf(md ? " |\n" : "\n");
}

/* The markdown separator row: text columns left, numbers right. */
static void md_rule(int n, const int *w)
{
    printf("|");
    for (int i = 0; i < n; i++)
        printf("%s|", w[i] < 0 ? "---" : "--:");
    printf("\n");
}

static void print_table(const scenario_t *set, size_t nsc, cell_t (*cells)[NMODES], bool md)
{
    static const char *const head[] = {"scenario", "mode", "step us", "bound us", "x bound",
                                       "moved MiB/step", "link MiB/step", "min MiB/step",
                                       "min wb MiB/step", "late", "peak MiB", "check"};
    static const int w[] = {-16, -12, 9, 9, 7, 14, 13, 12, 15, 5, 9, -1};
    enum { N = sizeof(w) / sizeof(w[0]) };

    row(md, N, w, head);
    if (md)
        md_rule(N, w);
    for (size_t si = 0; si < nsc; si++)
        for (int m = 0; m < NMODES; m++) {
            const cell_t *c = &cells[si][m];
            char a[32], b[32], r[32], mv[32], lk[32], mn[32], wb[32], lt[32], pk[40];
            double ratio = c->step_ns >= 0 && c->bound_ns > 0 ? c->step_ns / c->bound_ns : -1;
            const char *cell[N] = {set[si].name, modes[m].name, a, b, r, mv, lk, mn, wb, lt,
                                   pk, c->check};

            if (!c->present)
                continue;
            num(a, sizeof(a), c->step_ns, 1e3, 1);
            num(b, sizeof(b), c->bound_ns, 1e3, 1);
            num(r, sizeof(r), ratio, 1, 2);
            num(mv, sizeof(mv), c->moved, MIB, 1);
            num(lk, sizeof(lk), c->link, MIB, 1);
            num(mn, sizeof(mn), c->min_h2d, MIB, 1);
            num(wb, sizeof(wb), c->min_d2h, MIB, 1);
            num(lt, sizeof(lt), c->sw[SW_LATE], 1, 0);
            num(pk, sizeof(pk) - 1, c->peak, MIB, 1);
            if (c->over_budget)
                strcat(pk, "!");
            row(md, N, w, cell);
        }
}

/* spillway's streaming statistics (issue 12) for the default mode and its
 * rewrite-off fallback, per timed step. */
static void print_stream_table(const scenario_t *set, size_t nsc, cell_t (*cells)[NMODES],
                               bool md)
{
    static const char *const head[] = {"scenario", "mode", "streamed MiB/step",
                                       "rewritten/step", "waited/step", "prefetches/step",
                                       "zero-copy est MiB/step"};
    static const int w[] = {-16, -12, 17, 14, 11, 15, 22};
    static const int modes_shown[] = {M_LEARNED, M_REWRITE_OFF};
    enum { N = sizeof(w) / sizeof(w[0]) };

    printf("\nspillway's streaming statistics, per timed step:\n\n");
    row(md, N, w, head);
    if (md)
        md_rule(N, w);
    for (size_t si = 0; si < nsc; si++)
        for (size_t k = 0; k < sizeof(modes_shown) / sizeof(modes_shown[0]); k++) {
            int m = modes_shown[k];
            const cell_t *c = &cells[si][m];
            char st[32], rw[32], wt[32], pf[32], zc[32];
            const char *cell[N] = {set[si].name, modes[m].name, st, rw, wt, pf, zc};

            if (!c->present)
                continue;
            num(st, sizeof(st), c->sw[SW_STREAMED], MIB, 1);
            num(rw, sizeof(rw), c->sw[SW_REWRITTEN], 1, 1);
            num(wt, sizeof(wt), c->sw[SW_WAITED], 1, 1);
            num(pf, sizeof(pf), c->sw[SW_PREFETCHES], 1, 1);
            num(zc, sizeof(zc), c->sw[SW_ZERO_COPY], MIB, 1);
            row(md, N, w, cell);
        }
}

/* A step time and its ratio to the bound, as two cells. */
static void step_cells(const cell_t *c, char *us, char *ratio, size_t len)
{
    num(us, len, c->present ? c->step_ns : -1, 1e3, 1);
    num(ratio, len, c->present && c->step_ns >= 0 && c->bound_ns > 0 ? c->step_ns / c->bound_ns
                                                                     : -1,
        1, 2);
}

/* spillway's default beside the hand-written peers, where they run: the
 * same rows as in the table above, side by side. */
static void print_peer_table(const scenario_t *set, size_t nsc, cell_t (*cells)[NMODES],
                             bool md)
{
    static const char *const head[] = {"scenario", "bound us", "learned us", "x bound",
                                       "uva K", "uva us", "x bound", "prefetch K",
                                       "prefetch us", "x bound"};
    static const int w[] = {-16, 9, 10, 7, 5, 9, 7, 10, 11, 7};
    enum { N = sizeof(w) / sizeof(w[0]) };
    bool any = false;

    for (size_t si = 0; si < nsc; si++)
        any = any || has_peers(&set[si]);
    if (!any)
        return;
    printf("\nspillway (learned) beside the offloads written into the program (uva, "
           "prefetch), K layers resident:\n\n");
    row(md, N, w, head);
    if (md)
        md_rule(N, w);
    for (size_t si = 0; si < nsc; si++) {
        const cell_t *l = &cells[si][M_LEARNED], *u = &cells[si][M_UVA],
                     *p = &cells[si][M_PEER_PREFETCH];
        char b[32], lu[32], lr[32], uk[16], uu[32], ur[32], pk[16], pu[32], pr[32];
        const char *cell[N] = {set[si].name, b, lu, lr, uk, uu, ur, pk, pu, pr};

        if (!has_peers(&set[si]))
            continue;
        num(b, sizeof(b), l->bound_ns, 1e3, 1);
        step_cells(l, lu, lr, sizeof(lu));
        step_cells(u, uu, ur, sizeof(uu));
        step_cells(p, pu, pr, sizeof(pu));
        snprintf(uk, sizeof(uk), "%u", peer_resident(&set[si], M_UVA));
        snprintf(pk, sizeof(pk), "%u", peer_resident(&set[si], M_PEER_PREFETCH));
        row(md, N, w, cell);
    }
}

static void print_setup(const scenario_t *set, size_t nsc, bool md)
{
    printf("scenarios (W warm-up + T timed steps; SIMGPU_MEM = budget + 256 MiB under "
           "spillway and for the peers; modes all-resident, learned, rewrite-off, and where "
           "named prefetch-off, lru and the hand-written peers uva and prefetch with K "
           "resident layers):\n\n");
    for (size_t i = 0; i < nsc; i++) {
        const scenario_t *s = &set[i];
        char *a[32];
        int n = scenario_args(s, a);

        printf("%s%s: %s", md ? "- " : "  ", s->name, is_moe(s) ? "moe" : "mlp");
        for (int k = 0; k < n; k++)
            printf(" %s", a[k]);
        if (is_moe(s))
            printf(" (zipf 1.1, seed 1)");
        if (s->tflops != NULL)
            printf(", SIMGPU_TFLOPS=%s", s->tflops);
        printf("; model %.0f MiB, budget %.0f MiB (%.2fx); W=%u, T=%u%s%s",
               model_bytes(s) / MIB, s->budget / MIB, (double)model_bytes(s) / s->budget,
               s->warmup, s->timed, s->modes == BASELINES ? "; prefetch-off, lru" : "",
               s->jitter ? "; jitter runs" : "");
        if (has_peers(s))
            printf("; uva K=%u, prefetch K=%u", peer_resident(s, M_UVA),
                   peer_resident(s, M_PEER_PREFETCH));
        printf("\n");
    }
    printf("\n");
}

/* One note under the table: a markdown bullet, or plain text wrapped at 96
 * columns with a hanging indent. */
static void note(bool md, const char *text)
{
    const char *p = text;
    int col;

    if (md) {
        printf("- %s\n", text);
        return;
    }
    printf("  ");
    col = 2;
    while (*p != '\0') {
        size_t w = strcspn(p, " ");

        if (col > 4 && col + 1 + (int)w > 96) {
            printf("\n    ");
            col = 4;
        } else if (col > 2 && col != 4) {
            putchar(' ');
            col++;
        }
        fwrite(p, 1, w, stdout);
        col += (int)w;
        p += w;
        while (*p == ' ')
            p++;
    }
    putchar('\n');
}

static void print_footer(bool md)
{
    char buf[640];

    printf("\n");
    note(md, "step: average virtual time of the T timed steps, from events on the program's "
             "compute stream (--time W).");
    snprintf(buf, sizeof(buf),
             "bound: max(all-resident step, min / %.0f GB/s, min wb / %.0f GB/s): simgpu's "
             "H2D copy cap, the fastest one transfer crosses to the GPU, and its D2H copy "
             "cap, the fastest one goes home. The two directions are separate links, so "
             "the bound takes the larger, not the sum. x bound: step / bound.",
             H2D_BYTES_PER_NS, D2H_BYTES_PER_NS);
    note(md, buf);
    note(md, "min: bytes per timed step that must reach the GPU at least, whatever the policy "
             "(prefetch, stream, evict or read in place), counted in whole layers (experts): "
             "Belady's offline optimum with bypass and the best starting set over the layers "
             "the timed steps read, with room for floor((budget - workspace) / layer) of "
             "them. For decode, graph and prefill that is model - budget (+ the workspace "
             "rounded up to a layer, where there is one); train also reads G before each "
             "update; for moe it comes from the run's own expert sequence (moe --schedule).");
    note(md, "min wb: bytes per timed step that must go home at least: train writes every "
             "layer each step and at most floor(budget / layer) layers are on the GPU when "
             "the step ends, so the others went home after their write; 0 elsewhere.");
    note(md, "moved: spillway's bytes_promoted + bytes_written_back, per timed step: (value "
             "after W + T steps - value after a run of W steps) / T.");
    note(md, "link: simgpu's dma_h2d_bytes + dma_d2h_bytes + kernel_bytes_host (zero-copy), "
             "the same way: every byte that crossed PCIe, both directions, each step's input "
             "and output (a few KiB) included.");
    note(md, "late: spillway's prefetch_late over the timed steps.");
    note(md, "peak: simgpu's device_bytes_peak over the full run. \"!\": above the budget "
             "plus the program's small buffers (activations, pointer table) and 1 MiB: the "
             "bound, which assumes the budget holds, does not apply, and the target is a "
             "MISS.");
    note(md, "uva, prefetch: the program offloads for itself, without spillway (mlp --offload "
             "uva|prefetch --resident K), as vLLM does: K = floor(budget / layer) resident "
             "layers for uva, two fewer for prefetch, whose two copy buffers take their "
             "place; the other layers live in pinned host memory, read in place (uva) or "
             "copied a layer ahead on a side stream (prefetch). moved, late and the "
             "streaming statistics are spillway's, so \"-\" there.");
    note(md, "streaming statistics: spillway's bytes_streamed, rewritten_launches, "
             "launches_waited, prefetches and bytes_zero_copy_estimated, per timed step, "
             "measured like moved.");
    note(md, "\"-\": not measured (a report, or a field of it, is missing).");
    note(md, "check: both runs exit 0 with result=match and the all-resident checksums, and "
             "simgpu reports no hazards and no faults.");
}

static int find_scenario(const scenario_t *set, size_t nsc, const char *name)
{
    for (size_t i = 0; i < nsc; i++)
        if (strcmp(set[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* One target line: got <= factor x base gives PASS, else MISS (also when a
 * number is unknown).  Prints both numbers and their ratio. */
static void target(bool md, const char *what, double got, double base, double factor,
                   const char *base_name, const char *unit, double scale)
{
    int w = md ? 0 : 50;

    printf("%s%-*s ", md ? "- " : "  ", w, what);
    if (got < 0 || base < 0)
        printf("MISS (no data)\n");
    else if (base == 0)
        printf("%s (%.1f %s against %s 0)\n", got <= 0 ? "PASS" : "MISS", got / scale, unit,
               base_name);
    else
        printf("%s (%.1f %s against %s %.1f: %.2fx, limit %.2fx)\n",
               got <= factor * base ? "PASS" : "MISS", got / scale, unit, base_name,
               base / scale, got / base, factor);
}

/* The learned step against its bound, for one scenario; a run that failed
 * its check misses whatever its time. */
static void bound_target(bool md, const char *name, const cell_t *c, double factor)
{
    char what[96];

    snprintf(what, sizeof(what), "%s: learned step <= %.2f x bound", name, factor);
    if (!c->ok)
        printf("%s%-*s MISS (%s)\n", md ? "- " : "  ", md ? 0 : 50, what, c->check);
    else if (c->over_budget)
        printf("%s%-*s MISS (over budget: device peak %.1f MiB)\n", md ? "- " : "  ",
               md ? 0 : 50, what, c->peak / MIB);
    else
        target(md, what, c->step_ns, c->bound_ns, factor, "bound", "us", 1e3);
}

/* spillway, on the unmodified program, against the prefetch offload written
 * into it: strictly faster passes; a failed check on either side misses. */
static void peer_target(bool md, const char *name, const cell_t *l, const cell_t *p)
{
    char what[96];
    int w = md ? 0 : 50;
    const char *lead = md ? "- " : "  ";

    snprintf(what, sizeof(what), "%s: learned faster than prefetch", name);
    if (!l->ok || !p->ok)
        printf("%s%-*s MISS (%s: %s)\n", lead, w, what, !l->ok ? "learned" : "prefetch",
               !l->ok ? l->check : p->check);
    else if (l->over_budget || p->over_budget)
        printf("%s%-*s MISS (over budget: %s)\n", lead, w, what,
               l->over_budget ? "learned" : "prefetch");
    else if (l->step_ns < 0 || p->step_ns <= 0)
        printf("%s%-*s MISS (no data)\n", lead, w, what);
    else
        printf("%s%-*s %s (%.1f us against prefetch %.1f: %.2fx)\n", lead, w, what,
               l->step_ns < p->step_ns ? "PASS" : "MISS", l->step_ns / 1e3, p->step_ns / 1e3,
               l->step_ns / p->step_ns);
}

/* Issue 26's limit for decode scenario s, as a multiple of the bound:
 * one buffer of every layer 1.50; layers of at most 1/16 of the budget
 * 1.10; else 1.20. */
static double decode_limit(const scenario_t *s)
{
    if (s->layout == LAYOUT_ONE)
        return 1.50;
    return 16 * unit_bytes(s) <= s->budget ? 1.10 : 1.20;
}

/* The targets of issue 26 (those of issue 12, tightened where the engine
 * is meant to do better).  A hidden scenario family is checked the same
 * way, so these are measurements, not something to tune for. */
static void print_targets(const scenario_t *set, size_t nsc, cell_t (*cells)[NMODES],
                          const jitter_run_t *jit, size_t njit, bool md)
{
    int moe = find_scenario(set, nsc, "moe");
    bool all_ok = true;

    printf("\ntargets (from the numbers above):\n");
    if (md)
        printf("\n");
    for (size_t i = 0; i < nsc; i++) {
        const cell_t *c = &cells[i][M_LEARNED];

        switch (set[i].fam) {
        case FAM_DECODE:
            bound_target(md, set[i].name, c, decode_limit(&set[i]));
            if (cells[i][M_PEER_PREFETCH].present)
                peer_target(md, set[i].name, c, &cells[i][M_PEER_PREFETCH]);
            break;
        case FAM_GRAPH:
            bound_target(md, set[i].name, c, 1.25);
            break;
        case FAM_PREFILL:
            bound_target(md, set[i].name, c, 1.15);
            if (cells[i][M_PEER_PREFETCH].present)
                peer_target(md, set[i].name, c, &cells[i][M_PEER_PREFETCH]);
            break;
        case FAM_TRAIN:
            bound_target(md, set[i].name, c, 1.40);
            break;
        case FAM_MOE:
            break;
        }
    }
    if (moe >= 0 && cells[moe][M_LRU].present) {
        const cell_t *c = &cells[moe][M_LEARNED], *l = &cells[moe][M_LRU];

        target(md, "moe: learned link bytes <= 0.5 x lru's", c->link, l->link, 0.5, "lru",
               "MiB/step", MIB);
        target(md, "moe: learned step <= 0.7 x lru's", c->step_ns, l->step_ns, 0.7, "lru",
               "us", 1e3);
    }
    for (size_t i = 0; i < nsc; i++)
        for (int m = 0; m < NMODES; m++)
            all_ok = all_ok && (!cells[i][m].present || cells[i][m].ok);
    for (size_t k = 0; k < njit; k++)
        all_ok = all_ok && jit[k].ok;
    printf("%s%-*s %s\n", md ? "- " : "  ", md ? 0 : 50,
           "every run: same results, no hazards or faults", all_ok ? "PASS" : "MISS");
}

/* The jitter runs' checks, one line each. */
static void print_jitter(const scenario_t *set, const jitter_run_t *jit, size_t njit, bool md)
{
    if (njit == 0)
        return;
    printf("\njitter runs (SIMGPU_JITTER=%s, W + T steps, correctness only):\n\n", JITTER_US);
    for (size_t k = 0; k < njit; k++)
        printf("%s%s %s: %s\n", md ? "- " : "  ", set[jit[k].si].name,
               modes[jit[k].run->mode].name, jit[k].check);
}

/* ---- setup ---- */

static void need(const char *what, const char *path, int mode)
{
    if (access(path, mode) != 0)
        die_setup("%s %s: %s (is BUILD_DIR a built meson build directory?)", what, path,
                  strerror(errno));
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        char *p;
        struct stat st;

        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        p = xasprintf("%s/%s", dir, e->d_name);
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            rm_tree(p);
        else
            unlink(p);
        free(p);
    }
    closedir(d);
    rmdir(dir);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench-offload BUILD_DIR [--quick] [--only NAME[,NAME...]] [--markdown]\n"
            "                     [--jobs N] [--keep] [--quiet]\n"
            "  runs every scenario (decode at four layer sizes and three layouts, graph,\n"
            "  prefill, train, moe) in its modes (all-resident, learned, rewrite-off,\n"
            "  for some prefetch-off and lru, and in decode and prefill with a layer per\n"
            "  allocation the offloads written into the program, uva and prefetch) on\n"
            "  simgpu and prints the tables\n"
            "  --quick     tiny sizes (a smoke test of correctness, not of speed)\n"
            "  --only L    only the scenarios named in the comma-separated list L\n"
            "  --markdown  the tables and notes as markdown\n"
            "  --jobs N    children at once, 1..64 (default: online CPUs, at most 8);\n"
            "              the numbers do not depend on it (virtual time)\n"
            "  --keep      keep the temporary directory (outputs and reports)\n"
            "  --quiet     no progress lines on stderr\n"
            "exit status: 0 ran and every run passed its check, 1 some run failed its\n"
            "             check, 2 setup error, 3 bad command line.  Targets never change\n"
            "             the status.\n");
}

/* A bad command line: say what was wrong, then the usage, and exit 3. */
__attribute__((format(printf, 1, 2), noreturn))
static void bad_usage(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "bench-offload: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    usage(stderr);
    exit(3);
}

/* The scenarios of `from` named in the comma-separated list (all if it is
 * NULL), in the set's order, into a new array; *n gets their number. */
static scenario_t *select_scenarios(const scenario_t *from, size_t nfrom, const char *list,
                                    size_t *n)
{
    scenario_t *set = calloc(nfrom, sizeof(scenario_t));
    bool *want = calloc(nfrom, sizeof(bool));

    if (set == NULL || want == NULL)
        die_setup("out of memory");
    for (size_t i = 0; i < nfrom; i++)
        want[i] = list == NULL;
    for (const char *p = list; p != NULL && *p != '\0';) {
        size_t len = strcspn(p, ",");
        size_t i;

        for (i = 0; i < nfrom; i++)
            if (strlen(from[i].name) == len && strncmp(from[i].name, p, len) == 0)
                break;
        if (i == nfrom) {
            fprintf(stderr, "bench-offload: scenarios of this set:");
            for (size_t k = 0; k < nfrom; k++)
                fprintf(stderr, " %s", from[k].name);
            fprintf(stderr, "\n");
            bad_usage("bad value for --only: no scenario '%.*s' in '%s'", (int)len, p, list);
        }
        want[i] = true;
        p += len;
        if (*p == ',')
            p++;
    }
    *n = 0;
    for (size_t i = 0; i < nfrom; i++)
        if (want[i])
            set[(*n)++] = from[i];
    free(want);
    return set;
}

/* A rough real cost of a run, to start the longest first so that the
 * runs in parallel end close together: building the weights, and each
 * step's reads (times the batch: the GEMM and its reference compute). */
static double run_cost(const run_t *r)
{
    const scenario_t *s = r->s;
    uint32_t steps = r->prefix ? s->warmup : s->warmup + s->timed;
    double per_step = is_moe(s) ? (double)s->active * unit_bytes(s) : (double)model_bytes(s);

    return (double)model_bytes(s) + per_step * steps * (s->batch > 0 ? s->batch : 1);
}

static int by_cost(const void *a, const void *b)
{
    double ca = run_cost(*(run_t *const *)a), cb = run_cost(*(run_t *const *)b);

    return ca < cb ? 1 : ca > cb ? -1 : 0;
}

static void name_run(run_t *r, const char *what)
{
    snprintf(r->tag, sizeof(r->tag), "%s-%s-%s", r->s->name, modes[r->mode].name, what);
}

int main(int argc, char **argv)
{
    bool quick = false, md = false, verbose = true;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    const char *only = NULL;
    scenario_t *set;
    size_t nsc, nruns = 0, njit = 0;
    run_t *runs, **order;
    cell_t (*cells)[NMODES];
    jitter_run_t *jit;
    struct timespec t0, t1;
    const char *tmpbase;
    char *p;
    bool all_ok = true;

    if (jobs < 1)
        jobs = 1;
    if (jobs > 8)
        jobs = 8;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--markdown") == 0) {
            md = true;
        } else if (strcmp(argv[i], "--keep") == 0) {
            keep = true;
        } else if (strcmp(argv[i], "--quiet") == 0) {
            verbose = false;
        } else if (strcmp(argv[i], "--jobs") == 0 || strcmp(argv[i], "--only") == 0) {
            if (i + 1 >= argc)
                bad_usage("%s needs a value", argv[i]);
            if (strcmp(argv[i], "--only") == 0) {
                only = argv[++i];
            } else {
                char *end;

                jobs = strtol(argv[++i], &end, 10);
                if (argv[i][0] < '0' || argv[i][0] > '9' || *end != '\0' || jobs < 1 ||
                    jobs > 64)
                    bad_usage("bad value for --jobs: '%s' (1..64)", argv[i]);
            }
        } else if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-') {
            bad_usage("unknown option '%s'", argv[i]);
        } else if (build != NULL) {
            bad_usage("unexpected argument '%s' (BUILD_DIR is '%s')", argv[i], build);
        } else {
            build = argv[i];
        }
    }
    if (build == NULL)
        bad_usage("no BUILD_DIR");
    if (quick)
        set = select_scenarios(quick_set, sizeof(quick_set) / sizeof(quick_set[0]), only, &nsc);
    else
        set = select_scenarios(full_set, sizeof(full_set) / sizeof(full_set[0]), only, &nsc);
    for (size_t i = 0; !quick && i < nsc; i++)
        if (!streamed_fits(&set[i]))
            die_setup("scenario %s: its budget is under 8 times the largest allocation it streams",
                      set[i].name);
    need("program", p = xasprintf("%s/tests/apps/mlp", build), X_OK);
    need("program", p = xasprintf("%s/tests/apps/moe", build), X_OK);
    need("library", p = xasprintf("%s/src/libspillway.so", build), R_OK);
    need("simgpu", p = xasprintf("%s/tests/simgpu/libcuda.so.1", build), R_OK);
    tmpbase = getenv("TMPDIR");
    snprintf(tmpdir, sizeof(tmpdir), "%s/bench-offload.XXXXXX",
             tmpbase != NULL && tmpbase[0] != '\0' ? tmpbase : "/tmp");
    if (mkdtemp(tmpdir) == NULL) /* mode 0700 */
        die_setup("mkdtemp %s: %s", tmpdir, strerror(errno));
    p = xasprintf("%s/stats", tmpdir);
    if (mkdir(p, 0700) != 0)
        die_setup("mkdir %s: %s", p, strerror(errno));

    /* Every run: two per (scenario, mode), one per jitter run. */
    runs = calloc(nsc * (NMODES * 2 + 2), sizeof(run_t));
    order = calloc(nsc * (NMODES * 2 + 2), sizeof(run_t *));
    cells = calloc(nsc, sizeof(*cells));
    jit = calloc(nsc * 2, sizeof(jitter_run_t));
    if (runs == NULL || order == NULL || cells == NULL || jit == NULL)
        die_setup("out of memory");
    for (size_t si = 0; si < nsc; si++) {
        for (int m = 0; m < NMODES; m++) {
            cell_t *c = &cells[si][m];

            if (!(scenario_modes(&set[si]) & (1u << m)))
                continue;
            c->present = true;
            c->full = &runs[nruns++];
            c->prefix = &runs[nruns++];
            *c->full = (run_t){.s = &set[si], .mode = m};
            *c->prefix = (run_t){.s = &set[si], .mode = m, .prefix = true};
            name_run(c->full, "full");
            name_run(c->prefix, "prefix");
        }
        for (int k = 0; set[si].jitter && k < 2; k++) {
            run_t *r = &runs[nruns++];

            *r = (run_t){.s = &set[si], .mode = k == 0 ? M_LEARNED : M_REWRITE_OFF,
                         .jitter = true};
            name_run(r, "jitter");
            jit[njit++] = (jitter_run_t){.si = si, .run = r};
        }
    }
    for (size_t i = 0; i < nruns; i++)
        order[i] = &runs[i];
    qsort(order, nruns, sizeof(run_t *), by_cost);

    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (verbose)
        fprintf(stderr, "bench-offload: %zu runs, %ld at a time, in %s\n", nruns, jobs, tmpdir);
    run_all(order, nruns, (int)jobs, verbose);
    clock_gettime(CLOCK_MONOTONIC, &t1);

    for (size_t si = 0; si < nsc; si++) {
        cell_t *res = &cells[si][M_RESIDENT];
        double h2d = -1, d2h = -1;

        fill_cell(res, &set[si], M_RESIDENT, NULL, 0, 0);
        if (!min_bytes_per_step(&set[si], res->full, &h2d, &d2h))
            h2d = d2h = -1;
        for (int m = 1; m < NMODES; m++)
            if (cells[si][m].present)
                fill_cell(&cells[si][m], &set[si], m, res, h2d, d2h);
        for (int m = 0; m < NMODES; m++)
            all_ok = all_ok && (!cells[si][m].present || cells[si][m].ok);
    }
    for (size_t k = 0; k < njit; k++) {
        char why[64];

        jit[k].ok = check_run(jit[k].run, &cells[jit[k].si][M_RESIDENT], why, sizeof(why));
        snprintf(jit[k].check, sizeof(jit[k].check), "%s", jit[k].ok ? "ok" : why);
        all_ok = all_ok && jit[k].ok;
    }

    printf("%sbench-offload%s: spillway offload on simgpu (virtual time), build %s%s\n\n",
           md ? "**" : "", md ? "**" : "", build, quick ? ", --quick sizes" : "");
    print_setup(set, nsc, md);
    print_table(set, nsc, cells, md);
    print_peer_table(set, nsc, cells, md);
    print_stream_table(set, nsc, cells, md);
    print_jitter(set, jit, njit, md);
    print_footer(md);
    print_targets(set, nsc, cells, jit, njit, md);
    printf("\n%zu runs in %.1f s of real time, %ld at a time.\n", nruns,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, jobs);
    if (keep)
        printf("outputs and reports kept in %s\n", tmpdir);
    else
        rm_tree(tmpdir);
    if (!all_ok)
        fprintf(stderr, "bench-offload: some runs failed their check (see the check column)\n");
    return all_ok ? 0 : 1;
}

/*
 * moe: a mixture-of-experts decode loop, the access pattern that a plain
 * LRU handles badly.  E experts, each a W x W matrix in its own cuMemAlloc.
 * Each step routes one input vector x to K distinct experts drawn from a
 * Zipf distribution (a few experts are hot, most are cold) and computes
 *
 *     acc = sum over the chosen k of  g_k * relu(W_k x)
 *
 * with sg_gemv_f32, sg_relu_f32 and sg_axpy_f32 on one stream, then copies
 * acc back and compares it bit for bit with a host reference summed as the
 * simgpu contract sums (tests/simgpu/README.md).
 *
 * The routing comes from a seeded generator (splitmix64), drawn step by
 * step, so every run with the same --experts, --active, --zipf and --seed
 * picks the same experts in the same order, whatever --steps is: a run of
 * N steps is a prefix of a run of N + T steps.  Zipf rank r (0 is the
 * most popular) has weight 1 / (r + 1)^s; ranks are mapped to experts by a
 * seeded permutation, so the hot experts are scattered over the
 * allocations rather than being the first ones allocated.  The K experts of
 * a step are drawn without replacement (each draw from the weights of the
 * experts not yet chosen in that step).
 *
 * Weights, inputs and gate values come from a hash of their coordinates,
 * as in mlp, so they do not depend on the routing.
 *
 * Prints one line, e.g.
 *   moe: experts=32 width=1024 active=2 steps=50 zipf=1.10 seed=1
 *        weights=128.0MiB route=direct checksum=0x... result=match
 * (on one line; with --time W, step_ns=<n> is appended) and exits with
 * mlp's statuses: 0 match, 1 mismatch, 2 CUDA error, 3 bad usage, 4 out of
 * host memory.  With --schedule it first prints, for each step, the line
 *   moe-step S: E1 E2 ...
 * naming the experts that step uses, in the order it uses them.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drv.h"

enum {
    MOE_EXIT_MATCH = 0,
    MOE_EXIT_MISMATCH = 1,
    MOE_EXIT_CUDA = 2,
    MOE_EXIT_USAGE = 3,
    MOE_EXIT_HOST = 4,
};

#define BLOCK 256u
#define FNV_BASIS 0xcbf29ce484222325ull

/* Different salts keep weights, inputs and gates unrelated (and unlike
 * mlp's). */
#define WEIGHT_SALT 0x3e7e47a11ce5ull
#define INPUT_SALT 0x7a1e57b4d5ull
#define GATE_SALT 0x6a7e5a17ull

typedef struct moe_opts {
    uint32_t experts;
    uint32_t width;
    uint32_t active;
    uint32_t steps;
    double zipf;
    uint64_t seed;
    bool timed;
    uint32_t warmup;
    bool route_loader;
    bool schedule;
} moe_opts_t;

/* ---- host side: values, routing, reference ---- */

/* splitmix64's finalizer: a cheap, well-mixed 64-bit hash. */
static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A float in [-1, 1) from the hash's top 24 bits: k * 2^-23 - 1 is exact. */
static float unit(uint64_t h)
{
    return (float)(h >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

/* splitmix64 as a generator: a uniform double in [0, 1). */
typedef struct rng {
    uint64_t s;
} rng_t;

static uint64_t rng_next(rng_t *r)
{
    uint64_t z = r->s;

    r->s += 0x9e3779b97f4a7c15ull;
    return mix64(z);
}

static double rng_unit(rng_t *r)
{
    return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* The routing state: Zipf weights by rank, rank -> expert, the generator. */
typedef struct router {
    const moe_opts_t *o;
    double *weight;    /* experts entries: weight of rank r */
    uint32_t *expert;  /* experts entries: the expert holding rank r */
    bool *taken;       /* experts entries: scratch for one step's draws */
    rng_t rng;
} router_t;

static int router_init(router_t *rt, const moe_opts_t *o)
{
    rt->o = o;
    rt->weight = calloc(o->experts, sizeof(double));
    rt->expert = calloc(o->experts, sizeof(uint32_t));
    rt->taken = calloc(o->experts, sizeof(bool));
    if (rt->weight == NULL || rt->expert == NULL || rt->taken == NULL)
        return MOE_EXIT_HOST;
    rt->rng.s = o->seed;
    for (uint32_t r = 0; r < o->experts; r++) {
        rt->weight[r] = 1.0 / pow((double)r + 1.0, o->zipf);
        rt->expert[r] = r;
    }
    /* Fisher-Yates: which expert gets which rank. */
    for (uint32_t i = o->experts - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(rng_next(&rt->rng) % ((uint64_t)i + 1));
        uint32_t t = rt->expert[i];

        rt->expert[i] = rt->expert[j];
        rt->expert[j] = t;
    }
    return MOE_EXIT_MATCH;
}

static void router_free(router_t *rt)
{
    free(rt->weight);
    free(rt->expert);
    free(rt->taken);
}

/* The next step's K distinct experts, in the order they are used. */
static void router_next(router_t *rt, uint32_t *out)
{
    const moe_opts_t *o = rt->o;

    memset(rt->taken, 0, o->experts * sizeof(bool));
    for (uint32_t k = 0; k < o->active; k++) {
        double total = 0.0, u;
        uint32_t pick = UINT32_MAX;

        for (uint32_t r = 0; r < o->experts; r++)
            if (!rt->taken[r])
                total += rt->weight[r];
        u = rng_unit(&rt->rng) * total;
        for (uint32_t r = 0; r < o->experts; r++) {
            if (rt->taken[r])
                continue;
            pick = r; /* the last one left if rounding runs u past the end */
            if (u < rt->weight[r])
                break;
            u -= rt->weight[r];
        }
        rt->taken[pick] = true;
        out[k] = rt->expert[pick];
    }
}

static size_t expert_floats(const moe_opts_t *o)
{
    return (size_t)o->width * o->width;
}

/* Expert e's matrix into w (width x width, row-major). */
static void expert_weights(const moe_opts_t *o, uint32_t e, float *w)
{
    /* As in mlp: uniform in [-s, s) with s = sqrt(6/W) keeps relu(W x) at
     * the scale of x. */
    float scale = sqrtf(6.0f / (float)o->width);
    uint64_t ekey = mix64(WEIGHT_SALT ^ e);

    for (uint64_t r = 0; r < o->width; r++)
        for (uint64_t c = 0; c < o->width; c++)
            w[r * o->width + c] = unit(mix64(ekey ^ (r << 32 | c))) * scale;
}

static void step_input(const moe_opts_t *o, uint32_t step, float *x)
{
    uint64_t skey = mix64(INPUT_SALT ^ step);

    for (uint64_t c = 0; c < o->width; c++)
        x[c] = unit(mix64(skey ^ c));
}

/* The gate value of the k-th expert of a step: in [0.5, 1), exact. */
static float gate(uint32_t step, uint32_t k)
{
    return 0.75f + 0.25f * unit(mix64(GATE_SALT ^ ((uint64_t)step << 32 | k)));
}

/* The step on the host, summed as the contract sums; -ffp-contract=off
 * (meson) keeps every multiply and add rounded separately. */
static void reference(const moe_opts_t *o, const float *weights, const uint32_t *chosen,
                      uint32_t step, const float *x, float *acc, float *y)
{
    uint32_t n = o->width;

    for (uint32_t i = 0; i < n; i++)
        acc[i] = 0.0f;
    for (uint32_t k = 0; k < o->active; k++) {
        const float *w = weights + chosen[k] * expert_floats(o);
        float a = gate(step, k);

        for (uint32_t r = 0; r < n; r++) {
            float s = 0.0f;

            for (uint32_t c = 0; c < n; c++)
                s += w[(size_t)r * n + c] * x[c];
            y[r] = s < 0.0f ? 0.0f : s;
        }
        for (uint32_t i = 0; i < n; i++)
            acc[i] = a * y[i] + acc[i];
    }
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* ---- device side ---- */

static const char image[] = "simgpu-builtin";

typedef struct gpu {
    sg_drv_t d;
    const moe_opts_t *o;
    CUdevice dev;
    int retained;
    CUmodule mod;
    CUfunction gemv, relu, axpy, fill;
    CUstream stream;
    CUdeviceptr x, y, acc;
    CUdeviceptr *expert; /* experts entries */
    uint32_t nexpert;    /* allocated so far */
    CUevent mark[2];     /* --time: start of the first timed step, end of the last */
} gpu_t;

__attribute__((format(printf, 4, 5)))
static int gpu_fail(const gpu_t *g, CUresult rc, const char *call, const char *fmt, ...)
{
    char buf[32], what[160];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    fprintf(stderr, "moe: CUDA error %s in %s (%s)\n",
            sg_drv_errname(&g->d, rc, buf, sizeof(buf)), call, what);
    return MOE_EXIT_CUDA;
}

#define CK(expr, call, ...)                                                    \
    do {                                                                       \
        CUresult rc_ = (expr);                                                 \
        if (rc_ != CUDA_SUCCESS)                                               \
            return gpu_fail(g, rc_, call, __VA_ARGS__);                        \
    } while (0)

static double mib(size_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

static int gpu_open(gpu_t *g)
{
    const moe_opts_t *o = g->o;
    size_t vec = (size_t)o->width * sizeof(float);
    size_t bytes = expert_floats(o) * sizeof(float);
    const struct {
        const char *name;
        CUfunction *f;
    } fn[] = {
        {"sg_gemv_f32", &g->gemv},
        {"sg_relu_f32", &g->relu},
        {"sg_axpy_f32", &g->axpy},
        {"sg_fill_u32", &g->fill},
    };
    CUcontext ctx;

    if (o->route_loader) {
        sg_drv_err_t err = {0};
        CUresult rc = sg_drv_load(&g->d, &err);

        if (rc != CUDA_SUCCESS)
            return gpu_fail(g, rc, err.call, "%s", err.what);
    } else {
        sg_drv_link(&g->d);
    }
    CK(g->d.Init(0), "cuInit", "flags 0");
    CK(g->d.DeviceGet(&g->dev, 0), "cuDeviceGet", "device 0");
    CK(g->d.DevicePrimaryCtxRetain(&ctx, g->dev), "cuDevicePrimaryCtxRetain", "device 0");
    g->retained = 1;
    CK(g->d.CtxSetCurrent(ctx), "cuCtxSetCurrent", "primary context");
    CK(g->d.ModuleLoadData(&g->mod, image), "cuModuleLoadData", "built-in kernels");
    for (size_t i = 0; i < sizeof(fn) / sizeof(fn[0]); i++)
        CK(g->d.ModuleGetFunction(fn[i].f, g->mod, fn[i].name), "cuModuleGetFunction", "%s",
           fn[i].name);
    /* Blocking: ordered after the synchronous uploads on the legacy stream. */
    CK(g->d.StreamCreate(&g->stream, CU_STREAM_DEFAULT), "cuStreamCreate", "flags 0");
    /* Vectors first, experts last: when the model does not fit, the
     * failure names the expert that did not. */
    CK(g->d.MemAlloc(&g->x, vec), "cuMemAlloc", "input, %zu bytes", vec);
    CK(g->d.MemAlloc(&g->y, vec), "cuMemAlloc", "expert output, %zu bytes", vec);
    CK(g->d.MemAlloc(&g->acc, vec), "cuMemAlloc", "accumulator, %zu bytes", vec);
    g->expert = calloc(o->experts, sizeof(CUdeviceptr));
    if (g->expert == NULL) {
        fprintf(stderr, "moe: out of host memory\n");
        return MOE_EXIT_HOST;
    }
    for (uint32_t e = 0; e < o->experts; e++) {
        CK(g->d.MemAlloc(&g->expert[e], bytes), "cuMemAlloc", "expert %u, %.1fMiB", e,
           mib(bytes));
        g->nexpert = e + 1;
    }
    return MOE_EXIT_MATCH;
}

static int gpu_upload(gpu_t *g, const float *weights)
{
    const moe_opts_t *o = g->o;
    size_t n = expert_floats(g->o);

    for (uint32_t e = 0; e < o->experts; e++)
        CK(g->d.MemcpyHtoD(g->expert[e], weights + e * n, n * sizeof(float)), "cuMemcpyHtoD",
           "expert %u", e);
    return MOE_EXIT_MATCH;
}

static int launch(gpu_t *g, CUfunction f, const char *name, uint32_t step, void **params)
{
    unsigned grid = (g->o->width + BLOCK - 1) / BLOCK;

    CK(g->d.LaunchKernel(f, grid, 1, 1, BLOCK, 1, 1, 0, g->stream, params, NULL),
       "cuLaunchKernel", "%s, step %u", name, step);
    return MOE_EXIT_MATCH;
}

/* One step: input in, acc = 0, then per chosen expert y = relu(W x) and
 * acc += g_k y; acc out. */
static int gpu_step(gpu_t *g, uint32_t step, const uint32_t *chosen, const float *x, float *out)
{
    const moe_opts_t *o = g->o;
    size_t vec = (size_t)o->width * sizeof(float);
    uint32_t n = o->width, zero = 0;
    uint64_t count = o->width;
    int st;

    /* The events are made here, not at open, so that the steps before are
     * the very calls of a run without --time (bench-offload relies on it). */
    if (o->timed && step == o->warmup) {
        for (int i = 0; i < 2; i++)
            CK(g->d.EventCreate(&g->mark[i], CU_EVENT_DEFAULT), "cuEventCreate",
               "timing event %d", i);
        CK(g->d.EventRecord(g->mark[0], g->stream), "cuEventRecord", "start of step %u", step);
    }
    CK(g->d.MemcpyHtoDAsync(g->x, x, vec, g->stream), "cuMemcpyHtoDAsync", "input");
    {
        void *p[] = {&g->acc, &zero, &count};

        if ((st = launch(g, g->fill, "sg_fill_u32", step, p)) != 0)
            return st;
    }
    for (uint32_t k = 0; k < o->active; k++) {
        CUdeviceptr w = g->expert[chosen[k]];
        float a = gate(step, k);
        void *pg[] = {&w, &g->x, &g->y, &n, &n};
        void *pr[] = {&g->y, &count};
        void *pa[] = {&a, &g->y, &g->acc, &count};

        if ((st = launch(g, g->gemv, "sg_gemv_f32", step, pg)) != 0 ||
            (st = launch(g, g->relu, "sg_relu_f32", step, pr)) != 0 ||
            (st = launch(g, g->axpy, "sg_axpy_f32", step, pa)) != 0)
            return st;
    }
    CK(g->d.MemcpyDtoHAsync(out, g->acc, vec, g->stream), "cuMemcpyDtoHAsync", "output");
    if (o->timed && step == o->steps - 1)
        CK(g->d.EventRecord(g->mark[1], g->stream), "cuEventRecord", "end of step %u", step);
    CK(g->d.StreamSynchronize(g->stream), "cuStreamSynchronize", "end of step %u", step);
    return MOE_EXIT_MATCH;
}

static int gpu_elapsed_ns(gpu_t *g, double *ns)
{
    float ms = 0.0f;

    CK(g->d.EventSynchronize(g->mark[1]), "cuEventSynchronize", "end of the timed steps");
    CK(g->d.EventElapsedTime(&ms, g->mark[0], g->mark[1]), "cuEventElapsedTime", "timed steps");
    *ns = (double)ms * 1e6;
    return MOE_EXIT_MATCH;
}

/* Errors ignored: after a sticky error every call fails. */
static void gpu_close(gpu_t *g)
{
    const sg_drv_t *d = &g->d;

    if (g->stream != NULL)
        d->StreamDestroy(g->stream);
    for (int i = 0; i < 2; i++)
        if (g->mark[i] != NULL)
            d->EventDestroy(g->mark[i]);
    for (uint32_t e = 0; e < g->nexpert; e++)
        d->MemFree(g->expert[e]);
    if (g->acc != 0)
        d->MemFree(g->acc);
    if (g->y != 0)
        d->MemFree(g->y);
    if (g->x != 0)
        d->MemFree(g->x);
    if (g->mod != NULL)
        d->ModuleUnload(g->mod);
    if (g->retained)
        d->DevicePrimaryCtxRelease(g->dev);
    free(g->expert);
}

/* ---- command line ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: moe [options]\n"
            "  --experts E      number of experts, each its own W x W cuMemAlloc\n"
            "                   (default 32, 1..65536)\n"
            "  --width W        expert width (default 1024, 1..65536)\n"
            "  --active K       experts per step, distinct (default 2, 1..E)\n"
            "  --steps S        decode steps (default 16, 1..1000000)\n"
            "  --zipf S         Zipf exponent of expert popularity (default 1.1, 0..100;\n"
            "                   0 is uniform)\n"
            "  --seed N         routing seed (default 1)\n"
            "  --time W         after W warm-up steps, time the others with events\n"
            "                   on the compute stream (virtual time) and add\n"
            "                   step_ns=<average> to the result line (W < steps)\n"
            "  --schedule       print each step's experts first (moe-step S: E...)\n"
            "  --route R        direct: call the linked driver symbols (default);\n"
            "                   loader: dlopen libcuda.so.1 + cuGetProcAddress_v2\n"
            "  --help           this text\n"
            "exit status: 0 output matches the host reference, 1 mismatch,\n"
            "             2 CUDA error (out of memory included), 3 bad usage,\n"
            "             4 out of host memory\n");
}

/* A decimal in [min, max]; signs, spaces and trailing characters refused. */
static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    unsigned long long v;
    char *end;

    if (s[0] < '0' || s[0] > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
    uint64_t v;

    if (parse_u64(s, min, max, &v) != 0)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int parse_double(const char *s, double min, double max, double *out)
{
    char *end;
    double v;

    if ((s[0] < '0' || s[0] > '9') && s[0] != '.')
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !(v >= min && v <= max))
        return -1;
    *out = v;
    return 0;
}

static int parse_args(int argc, char **argv, moe_opts_t *o, int *done)
{
    enum { OPT_EXPERTS = 256, OPT_WIDTH, OPT_ACTIVE, OPT_STEPS, OPT_ZIPF, OPT_SEED, OPT_TIME,
           OPT_SCHEDULE, OPT_ROUTE, OPT_HELP };
    static const struct option longopts[] = {
        {"experts", required_argument, NULL, OPT_EXPERTS},
        {"width", required_argument, NULL, OPT_WIDTH},
        {"active", required_argument, NULL, OPT_ACTIVE},
        {"steps", required_argument, NULL, OPT_STEPS},
        {"zipf", required_argument, NULL, OPT_ZIPF},
        {"seed", required_argument, NULL, OPT_SEED},
        {"time", required_argument, NULL, OPT_TIME},
        {"schedule", no_argument, NULL, OPT_SCHEDULE},
        {"route", required_argument, NULL, OPT_ROUTE},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    int c;

    *done = 0;
    *o = (moe_opts_t){.experts = 32, .width = 1024, .active = 2, .steps = 16, .zipf = 1.1,
                      .seed = 1};
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        const char *bad = NULL;

        switch (c) {
        case OPT_EXPERTS:
            if (parse_u32(optarg, 1, 65536, &o->experts) != 0)
                bad = "--experts";
            break;
        case OPT_WIDTH:
            if (parse_u32(optarg, 1, 65536, &o->width) != 0)
                bad = "--width";
            break;
        case OPT_ACTIVE:
            if (parse_u32(optarg, 1, 65536, &o->active) != 0)
                bad = "--active";
            break;
        case OPT_STEPS:
            if (parse_u32(optarg, 1, 1000000, &o->steps) != 0)
                bad = "--steps";
            break;
        case OPT_ZIPF:
            if (parse_double(optarg, 0.0, 100.0, &o->zipf) != 0)
                bad = "--zipf";
            break;
        case OPT_SEED:
            if (parse_u64(optarg, 0, UINT64_MAX, &o->seed) != 0)
                bad = "--seed";
            break;
        case OPT_TIME:
            if (parse_u32(optarg, 0, 999999, &o->warmup) != 0)
                bad = "--time";
            o->timed = true;
            break;
        case OPT_SCHEDULE:
            o->schedule = true;
            break;
        case OPT_ROUTE:
            if (strcmp(optarg, "loader") == 0)
                o->route_loader = true;
            else if (strcmp(optarg, "direct") == 0)
                o->route_loader = false;
            else
                bad = "--route";
            break;
        case OPT_HELP:
            usage(stdout);
            *done = 1;
            return MOE_EXIT_MATCH;
        default: /* getopt_long has printed what was wrong */
            usage(stderr);
            return MOE_EXIT_USAGE;
        }
        if (bad != NULL) {
            fprintf(stderr, "moe: bad value for %s: '%s'\n", bad, optarg);
            usage(stderr);
            return MOE_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "moe: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return MOE_EXIT_USAGE;
    }
    if (o->active > o->experts) {
        fprintf(stderr, "moe: --active %u is more than the %u experts\n", o->active,
                o->experts);
        usage(stderr);
        return MOE_EXIT_USAGE;
    }
    if (o->timed && o->warmup >= o->steps) {
        fprintf(stderr, "moe: --time %u leaves no step to time (--steps %u)\n", o->warmup,
                o->steps);
        usage(stderr);
        return MOE_EXIT_USAGE;
    }
    return MOE_EXIT_MATCH;
}

/* ---- the run ---- */

typedef struct host {
    float *weights, *x, *out, *ref, *y;
    uint32_t *chosen;
    router_t rt;
} host_t;

static int host_alloc(const moe_opts_t *o, host_t *h)
{
    size_t n = expert_floats(o), vec = (size_t)o->width * sizeof(float);

    h->weights = malloc(n * o->experts * sizeof(float));
    h->x = malloc(vec);
    h->out = malloc(vec);
    h->ref = malloc(vec);
    h->y = malloc(vec);
    h->chosen = calloc(o->active, sizeof(uint32_t));
    if (h->weights == NULL || h->x == NULL || h->out == NULL || h->ref == NULL ||
        h->y == NULL || h->chosen == NULL || router_init(&h->rt, o) != 0) {
        fprintf(stderr, "moe: out of host memory\n");
        return MOE_EXIT_HOST;
    }
    for (uint32_t e = 0; e < o->experts; e++)
        expert_weights(o, e, h->weights + e * n);
    return MOE_EXIT_MATCH;
}

static void host_free(host_t *h)
{
    free(h->weights);
    free(h->x);
    free(h->out);
    free(h->ref);
    free(h->y);
    free(h->chosen);
    router_free(&h->rt);
}

/* Compare one step; print the first difference.  1 if they differ. */
static int compare(const moe_opts_t *o, uint32_t step, const float *got, const float *want)
{
    if (memcmp(got, want, (size_t)o->width * sizeof(float)) == 0)
        return 0;
    for (uint32_t i = 0; i < o->width; i++) {
        uint32_t gb, wb;

        memcpy(&gb, &got[i], sizeof(gb));
        memcpy(&wb, &want[i], sizeof(wb));
        if (gb != wb) {
            fprintf(stderr, "moe: step %u: output[%u] = %.9g (0x%08x), reference %.9g (0x%08x)\n",
                    step, i, got[i], gb, want[i], wb);
            break;
        }
    }
    return 1;
}

static int run(const moe_opts_t *o, gpu_t *g, host_t *h, uint64_t *checksum, int *mismatch,
               double *step_ns)
{
    int st;

    /* Device first: a model that does not fit fails on cuMemAlloc before
     * the host builds its weights. */
    if ((st = gpu_open(g)) != 0)
        return st;
    if ((st = host_alloc(o, h)) != 0)
        return st;
    if ((st = gpu_upload(g, h->weights)) != 0)
        return st;
    *checksum = FNV_BASIS;
    for (uint32_t s = 0; s < o->steps; s++) {
        router_next(&h->rt, h->chosen);
        if (o->schedule) {
            printf("moe-step %u:", s);
            for (uint32_t k = 0; k < o->active; k++)
                printf(" %u", h->chosen[k]);
            printf("\n");
        }
        step_input(o, s, h->x);
        if ((st = gpu_step(g, s, h->chosen, h->x, h->out)) != 0)
            return st;
        reference(o, h->weights, h->chosen, s, h->x, h->ref, h->y);
        if (compare(o, s, h->out, h->ref) && !*mismatch)
            *mismatch = 1;
        *checksum = fnv1a(*checksum, h->out, (size_t)o->width * sizeof(float));
    }
    if (o->timed) {
        double ns = 0;

        if ((st = gpu_elapsed_ns(g, &ns)) != 0)
            return st;
        *step_ns = ns / (o->steps - o->warmup);
    }
    return MOE_EXIT_MATCH;
}

int main(int argc, char **argv)
{
    moe_opts_t o;
    gpu_t g = {0};
    host_t h = {0};
    uint64_t checksum = 0;
    double step_ns = 0;
    int mismatch = 0, done, st;

    st = parse_args(argc, argv, &o, &done);
    if (st != 0 || done)
        return st;
    g.o = &o;
    st = run(&o, &g, &h, &checksum, &mismatch, &step_ns);
    gpu_close(&g);
    host_free(&h);
    if (st != 0)
        return st;
    printf("moe: experts=%u width=%u active=%u steps=%u zipf=%.2f seed=%" PRIu64
           " weights=%.1fMiB route=%s checksum=0x%016" PRIx64 " result=%s",
           o.experts, o.width, o.active, o.steps, o.zipf, o.seed,
           mib(expert_floats(&o) * sizeof(float) * o.experts),
           o.route_loader ? "loader" : "direct", checksum, mismatch ? "mismatch" : "match");
    if (o.timed)
        printf(" step_ns=%.0f", step_ns);
    printf("\n");
    return mismatch ? MOE_EXIT_MISMATCH : MOE_EXIT_MATCH;
}

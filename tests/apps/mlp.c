/*
 * mlp: the demo workload for spillway.  A stack of layers (square, or of
 * mixed sizes with --widths) whose weights are the bulk of device memory
 * and are read once per step, the way a decoder's weights are: the case
 * spillway exists for.  A model bigger than device memory fails here with
 * CUDA_ERROR_OUT_OF_MEMORY; under spillway it should run and still match.
 *
 * Every step's output is compared bit for bit with a host reference, so a
 * weight that was moved, copied or remapped wrongly shows up as a
 * mismatch rather than as a slightly different number.
 *
 * Prints one line, e.g.
 *   mlp: layers=8 width=1024 steps=4 batch=1 kernel=gemv buffers=per-layer
 *        streams=1 graph=no train=no weights=32.0MiB route=direct
 *        checksum=0x... result=match
 * (on one line; with --widths, widths=A,B,... in place of width=; with
 * --offload, offload=uva|prefetch resident=K follows route=; with --time W,
 * step_ns=<virtual ns per step after W warm-up steps> is appended) and
 * exits with one of the MLP_EXIT_* statuses (mlp.h).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mlp [options]\n"
            "  --layers L       number of layers (default 8, 1..65536)\n"
            "  --width W        layer width; each layer is W x W floats\n"
            "                   (default 1024, 1..65536)\n"
            "  --widths A,B,... layers of mixed sizes: the dimensions d_0..d_L cycle\n"
            "                   through the list, d_l = list[l %% n] (1..16 entries,\n"
            "                   each 1..65536); layer l is a d_(l+1) x d_l matrix, from\n"
            "                   d_l floats a vector to d_(l+1) (not with --width)\n"
            "  --steps S        forward passes (default 4, 1..1000000)\n"
            "  --batch B        B vectors per step through sg_gemm_f32\n"
            "                   (default: 1 vector through the three gemv forms,\n"
            "                   every third layer's weight read through a pointer\n"
            "                   table)\n"
            "  --no-tables      every layer's gemv names its weight: no pointer\n"
            "                   table (not with --batch)\n"
            "  --one-buffer     all layers' weights in one cuMemAlloc\n"
            "                   (default: one allocation per layer)\n"
            "  --segments M     weights packed into allocations of M MiB holding\n"
            "                   several layers each, as PyTorch's caching allocator\n"
            "                   packs tensors (1..4096; not with --one-buffer)\n"
            "  --odd-segments   with --segments: only the odd layers are packed, each\n"
            "                   even layer has an allocation of its own\n"
            "  --workspace M    a scratch allocation of M MiB, made before the weights,\n"
            "                   that every layer writes 4 KiB of after its kernels,\n"
            "                   as cuBLAS's split-K GEMMs write their workspace\n"
            "                   (1..4096; default none)\n"
            "  --streams N      1 (default), or 2: layers alternate between two\n"
            "                   non-blocking streams, ordered by events\n"
            "  --train          after the forward pass, update every layer's weights\n"
            "                   in place on the device (W = a * G + W)\n"
            "  --load-pass      before the steps, each layer's matrix kernel once, one\n"
            "                   launch a layer, as load-time kernels read or write\n"
            "                   the weights before a program's loop (not with --offload)\n"
            "  --graph          capture one step's kernels and replay them each step\n"
            "  --eager N        with --graph: run the first N steps' kernels eagerly and\n"
            "                   capture at step N, as frameworks warm up before they\n"
            "                   capture (default 0: capture before the first step)\n"
            "  --route R        direct: call the linked driver symbols (default);\n"
            "                   loader: dlopen libcuda.so.1 + cuGetProcAddress_v2\n"
            "  --time W         after W warm-up steps, time the others with events\n"
            "                   on the compute stream (virtual time) and add\n"
            "                   step_ns=<average> to the result line (W < steps)\n"
            "  --offload M      keep only the first --resident layers in device memory\n"
            "                   and the others in pinned host memory, as vLLM does:\n"
            "                   uva: read in place through mapped pointers;\n"
            "                   prefetch: copied a layer ahead into two device\n"
            "                   buffers on a side stream (not with --graph or --train);\n"
            "                   one allocation per layer (not with --one-buffer or\n"
            "                   --segments)\n"
            "  --resident K     with --offload: layers kept in device memory\n"
            "                   (default 0, 0..layers)\n"
            "  --help           this text\n"
            "exit status: 0 output matches the host reference, 1 mismatch,\n"
            "             2 CUDA error (out of memory included), 3 bad usage,\n"
            "             4 out of host memory\n");
}

/* Parse a decimal in [min, max] into *out; 0 on success, -1 otherwise.
 * Signs, spaces and trailing characters are refused (strtoul would accept
 * "-1" as a huge number). */
static int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
    unsigned long long v;
    char *end;

    if (s[0] < '0' || s[0] > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* --widths' list "A,B,..." into o->widths and o->nwidths; 0 on success,
 * -1 with what was wrong in why. */
static int parse_widths(const char *s, mlp_opts_t *o, char *why, size_t size)
{
    uint32_t n = 0;

    for (;;) {
        size_t len = strcspn(s, ",");
        char entry[8]; /* "65536" fits; a longer entry is bad anyway */

        if (n == MLP_WIDTHS_MAX) {
            snprintf(why, size, "more than %d entries", MLP_WIDTHS_MAX);
            return -1;
        }
        if (len == 0) {
            snprintf(why, size, "entry %u is empty", n + 1);
            return -1;
        }
        snprintf(entry, sizeof(entry), "%.*s", (int)len, s);
        if (len >= sizeof(entry) || parse_u32(entry, 1, 65536, &o->widths[n]) != 0) {
            snprintf(why, size, "entry %u, '%.*s', is not a number from 1 to 65536", n + 1,
                     (int)len, s);
            return -1;
        }
        n++;
        if (s[len] == '\0')
            break;
        s += len + 1;
    }
    o->nwidths = n;
    return 0;
}

static const char *offload_name(mlp_offload_mode_t m)
{
    return m == MLP_OFFLOAD_UVA ? "uva" : m == MLP_OFFLOAD_PREFETCH ? "prefetch" : "none";
}

/* The combinations --offload refuses, each with its reason; 0 or
 * MLP_EXIT_USAGE after the message and the usage text. */
static int check_offload(const mlp_opts_t *o, bool resident_given)
{
    const char *mode = offload_name(o->offload);
    char why[200];

    why[0] = '\0';
    if (o->offload == MLP_OFFLOAD_NONE && resident_given)
        snprintf(why, sizeof(why), "--resident %u needs --offload uva or --offload prefetch",
                 o->resident);
    else if (o->offload == MLP_OFFLOAD_NONE)
        return MLP_EXIT_MATCH;
    else if (o->resident > o->layers)
        snprintf(why, sizeof(why), "--resident %u is more than the %u layers (--layers)",
                 o->resident, o->layers);
    else if (o->one_buffer || o->segment_mib != 0)
        snprintf(why, sizeof(why), "--offload %s gives each layer an allocation of its own; "
                 "%s is another layout", mode, o->one_buffer ? "--one-buffer" : "--segments");
    else if (o->load_pass)
        snprintf(why, sizeof(why), "--offload %s places the layers itself; --load-pass is "
                 "for the layouts the device holds", mode);
    else if (o->offload == MLP_OFFLOAD_PREFETCH && o->graph)
        snprintf(why, sizeof(why), "--offload prefetch orders its copies anew each step; "
                 "--graph would replay one step's");
    else if (o->offload == MLP_OFFLOAD_PREFETCH && o->train)
        snprintf(why, sizeof(why), "--offload prefetch computes on device copies of the "
                 "weights; --train's updates would be lost with them");
    if (why[0] == '\0')
        return MLP_EXIT_MATCH;
    fprintf(stderr, "mlp: %s\n", why);
    usage(stderr);
    return MLP_EXIT_USAGE;
}

/* Fill *o from the command line; returns 0, or an exit status when the
 * program must stop (MLP_EXIT_USAGE after a message, or 0 after --help,
 * reported through *done). */
static int parse_args(int argc, char **argv, mlp_opts_t *o, int *done)
{
    enum { OPT_LAYERS = 256, OPT_WIDTH, OPT_WIDTHS, OPT_STEPS, OPT_BATCH, OPT_ONE, OPT_SEGMENTS,
           OPT_ODD, OPT_NO_TABLES, OPT_WORKSPACE, OPT_STREAMS, OPT_TRAIN, OPT_LOAD_PASS, OPT_GRAPH, OPT_EAGER,
           OPT_ROUTE, OPT_TIME, OPT_OFFLOAD, OPT_RESIDENT, OPT_HELP };
    static const struct option longopts[] = {
        {"layers", required_argument, NULL, OPT_LAYERS},
        {"width", required_argument, NULL, OPT_WIDTH},
        {"widths", required_argument, NULL, OPT_WIDTHS},
        {"steps", required_argument, NULL, OPT_STEPS},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"one-buffer", no_argument, NULL, OPT_ONE},
        {"segments", required_argument, NULL, OPT_SEGMENTS},
        {"odd-segments", no_argument, NULL, OPT_ODD},
        {"no-tables", no_argument, NULL, OPT_NO_TABLES},
        {"workspace", required_argument, NULL, OPT_WORKSPACE},
        {"streams", required_argument, NULL, OPT_STREAMS},
        {"train", no_argument, NULL, OPT_TRAIN},
        {"load-pass", no_argument, NULL, OPT_LOAD_PASS},
        {"graph", no_argument, NULL, OPT_GRAPH},
        {"eager", required_argument, NULL, OPT_EAGER},
        {"route", required_argument, NULL, OPT_ROUTE},
        {"time", required_argument, NULL, OPT_TIME},
        {"offload", required_argument, NULL, OPT_OFFLOAD},
        {"resident", required_argument, NULL, OPT_RESIDENT},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    bool resident_given = false, width_given = false;
    int c;

    *done = 0;
    *o = (mlp_opts_t){.layers = 8, .widths = {1024}, .nwidths = 1, .steps = 4, .batch = 1,
                      .streams = 1};
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        const char *bad = NULL;
        char why[80] = "";

        switch (c) {
        case OPT_LAYERS:
            if (parse_u32(optarg, 1, 65536, &o->layers) != 0)
                bad = "--layers";
            break;
        case OPT_WIDTH:
            if (parse_u32(optarg, 1, 65536, &o->widths[0]) != 0)
                bad = "--width";
            o->nwidths = 1;
            width_given = true;
            break;
        case OPT_WIDTHS:
            if (parse_widths(optarg, o, why, sizeof(why)) != 0)
                bad = "--widths";
            o->widths_given = true;
            break;
        case OPT_STEPS:
            if (parse_u32(optarg, 1, 1000000, &o->steps) != 0)
                bad = "--steps";
            break;
        case OPT_BATCH:
            if (parse_u32(optarg, 1, 65536, &o->batch) != 0)
                bad = "--batch";
            o->gemm = true;
            break;
        case OPT_ONE:
            o->one_buffer = true;
            break;
        case OPT_SEGMENTS:
            if (parse_u32(optarg, 1, 4096, &o->segment_mib) != 0)
                bad = "--segments";
            break;
        case OPT_ODD:
            o->odd_segments = true;
            break;
        case OPT_NO_TABLES:
            o->no_tables = true;
            break;
        case OPT_WORKSPACE:
            if (parse_u32(optarg, 1, 4096, &o->workspace_mib) != 0)
                bad = "--workspace";
            break;
        case OPT_STREAMS:
            if (parse_u32(optarg, 1, 2, &o->streams) != 0)
                bad = "--streams";
            break;
        case OPT_TRAIN:
            o->train = true;
            break;
        case OPT_LOAD_PASS:
            o->load_pass = true;
            break;
        case OPT_GRAPH:
            o->graph = true;
            break;
        case OPT_EAGER:
            if (parse_u32(optarg, 0, 999999, &o->eager_steps) != 0)
                bad = "--eager";
            break;
        case OPT_ROUTE:
            if (strcmp(optarg, "loader") == 0)
                o->route_loader = true;
            else if (strcmp(optarg, "direct") == 0)
                o->route_loader = false;
            else
                bad = "--route";
            break;
        case OPT_TIME:
            if (parse_u32(optarg, 0, 999999, &o->warmup) != 0)
                bad = "--time";
            o->timed = true;
            break;
        case OPT_OFFLOAD:
            if (strcmp(optarg, "uva") == 0)
                o->offload = MLP_OFFLOAD_UVA;
            else if (strcmp(optarg, "prefetch") == 0)
                o->offload = MLP_OFFLOAD_PREFETCH;
            else
                bad = "--offload";
            break;
        case OPT_RESIDENT:
            if (parse_u32(optarg, 0, 65536, &o->resident) != 0)
                bad = "--resident";
            resident_given = true;
            break;
        case OPT_HELP:
            usage(stdout);
            *done = 1;
            return MLP_EXIT_MATCH;
        default: /* getopt_long has printed what was wrong */
            usage(stderr);
            return MLP_EXIT_USAGE;
        }
        if (bad != NULL) {
            fprintf(stderr, "mlp: bad value for %s: '%s'%s%s\n", bad, optarg,
                    why[0] != '\0' ? ": " : "", why);
            usage(stderr);
            return MLP_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "mlp: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return MLP_EXIT_USAGE;
    }
    if (width_given && o->widths_given) {
        fprintf(stderr, "mlp: --width and --widths both give the layers' widths; give one\n");
        usage(stderr);
        return MLP_EXIT_USAGE;
    }
    if (o->one_buffer && o->segment_mib != 0) {
        fprintf(stderr, "mlp: --one-buffer and --segments %u are two layouts; give one\n",
                o->segment_mib);
        usage(stderr);
        return MLP_EXIT_USAGE;
    }
    if (o->no_tables && o->gemm) {
        fprintf(stderr, "mlp: --no-tables is for the gemv forms; --batch uses none\n");
        usage(stderr);
        return MLP_EXIT_USAGE;
    }
    if (o->odd_segments && o->segment_mib == 0) {
        fprintf(stderr, "mlp: --odd-segments needs --segments\n");
        usage(stderr);
        return MLP_EXIT_USAGE;
    }
    if (o->eager_steps != 0 && (!o->graph || o->eager_steps >= o->steps)) {
        fprintf(stderr, "mlp: --eager %u needs --graph and fewer than --steps %u\n",
                o->eager_steps, o->steps);
        usage(stderr);
        return MLP_EXIT_USAGE;
    }
    if (o->timed && o->warmup >= o->steps) {
        fprintf(stderr, "mlp: --time %u leaves no step to time (--steps %u)\n", o->warmup,
                o->steps);
        usage(stderr);
        return MLP_EXIT_USAGE;
    }
    return check_offload(o, resident_given);
}

/* Host buffers of one run. */
typedef struct host_bufs {
    float *weights;
    float *grad; /* --train only */
    float *in, *out, *ref, *tmp;
} host_bufs_t;

static int host_alloc(const mlp_opts_t *o, host_bufs_t *h)
{
    size_t act = mlp_act_floats(o) * sizeof(float);

    h->weights = mlp_weights_new(o);
    h->grad = o->train ? mlp_grad_new(o) : NULL;
    h->in = malloc(act);
    h->out = malloc(act);
    h->ref = malloc(act);
    h->tmp = malloc(act);
    if (h->weights == NULL || (o->train && h->grad == NULL) || h->in == NULL || h->out == NULL || h->ref == NULL ||
        h->tmp == NULL) {
        fprintf(stderr, "mlp: out of host memory\n");
        return MLP_EXIT_HOST;
    }
    return MLP_EXIT_MATCH;
}

static void host_free(host_bufs_t *h)
{
    free(h->weights);
    free(h->grad);
    free(h->in);
    free(h->out);
    free(h->ref);
    free(h->tmp);
}

/* Compare one step's output with the reference; print the first
 * difference.  Returns 1 if they differ. */
static int compare(const mlp_opts_t *o, uint32_t step, const float *got, const float *want)
{
    size_t n = mlp_batch_floats(o, o->layers), dim = mlp_dim(o, o->layers);

    if (memcmp(got, want, n * sizeof(float)) == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t g, w;

        memcpy(&g, &got[i], sizeof(g));
        memcpy(&w, &want[i], sizeof(w));
        if (g != w) {
            fprintf(stderr,
                    "mlp: step %u: output[%zu][%zu] = %.9g (0x%08x), reference %.9g (0x%08x)\n",
                    step, i / dim, i % dim, got[i], g, want[i], w);
            break;
        }
    }
    return 1;
}

/* All steps; *checksum covers every step's device output. */
static int run(const mlp_opts_t *o, mlp_gpu_t **g, host_bufs_t *h, uint64_t *checksum,
               int *mismatch, double *step_ns)
{
    size_t out_bytes = mlp_batch_floats(o, o->layers) * sizeof(float);
    int st;

    /* Device first: a model that does not fit fails on cuMemAlloc before
     * the host spends time and memory building its weights. */
    if ((st = mlp_gpu_open(g, o)) != 0)
        return st;
    if ((st = host_alloc(o, h)) != 0)
        return st;
    if ((st = mlp_gpu_upload(*g, h->weights, h->grad)) != 0)
        return st;
    *checksum = MLP_FNV_BASIS;
    for (uint32_t s = 0; s < o->steps; s++) {
        mlp_input(o, s, h->in);
        if ((st = mlp_gpu_step(*g, h->in, h->out)) != 0)
            return st;
        mlp_reference(o, h->weights, h->in, h->ref, h->tmp);
        if (o->train)
            mlp_update(o, h->weights, h->grad);
        if (compare(o, s, h->out, h->ref) && !*mismatch)
            *mismatch = 1;
        *checksum = mlp_fnv1a(*checksum, h->out, out_bytes);
    }
    if (o->timed) {
        double ns = 0;

        if ((st = mlp_gpu_elapsed_ns(*g, &ns)) != 0)
            return st;
        *step_ns = ns / (o->steps - o->warmup);
    }
    return MLP_EXIT_MATCH;
}

/* The result line's "width=W", or "widths=A,B,..." when --widths was
 * given, into buf. */
static void format_widths(const mlp_opts_t *o, char *buf, size_t size)
{
    int n;

    if (!o->widths_given) {
        snprintf(buf, size, "width=%u", o->widths[0]);
        return;
    }
    n = snprintf(buf, size, "widths=%u", o->widths[0]);
    for (uint32_t i = 1; i < o->nwidths && n > 0 && (size_t)n < size; i++)
        n += snprintf(buf + n, size - n, ",%u", o->widths[i]);
}

int main(int argc, char **argv)
{
    mlp_opts_t o;
    mlp_gpu_t *g = NULL;
    host_bufs_t h = {0};
    uint64_t checksum = 0;
    double step_ns = 0;
    int mismatch = 0, done, st;
    char buffers[32], widths[8 + 6 * MLP_WIDTHS_MAX]; /* "widths=" and each "65536," */

    st = parse_args(argc, argv, &o, &done);
    if (st != 0 || done)
        return st;
    st = run(&o, &g, &h, &checksum, &mismatch, &step_ns);
    mlp_gpu_close(g);
    host_free(&h);
    if (st != 0)
        return st;
    if (o.segment_mib != 0)
        snprintf(buffers, sizeof(buffers), "%ssegments-%uMiB", o.odd_segments ? "odd-" : "",
                 o.segment_mib);
    else
        snprintf(buffers, sizeof(buffers), "%s", o.one_buffer ? "one" : "per-layer");
    format_widths(&o, widths, sizeof(widths));
    printf("mlp: layers=%u %s steps=%u batch=%u kernel=%s buffers=%s streams=%u "
           "graph=%s train=%s weights=%.1fMiB route=%s",
           o.layers, widths, o.steps, o.batch, o.gemm ? "gemm" : "gemv", buffers, o.streams,
           o.graph ? "yes" : "no", o.train ? "yes" : "no",
           (double)mlp_layer_offset(&o, o.layers) * sizeof(float) / (1024.0 * 1024.0),
           o.route_loader ? "loader" : "direct");
    if (o.offload != MLP_OFFLOAD_NONE)
        printf(" offload=%s resident=%u", offload_name(o.offload), o.resident);
    if (o.workspace_mib != 0)
        printf(" workspace=%uMiB", o.workspace_mib);
    if (o.no_tables)
        printf(" tables=no");
    printf(" checksum=0x%016" PRIx64 " result=%s", checksum, mismatch ? "mismatch" : "match");
    if (o.timed)
        printf(" step_ns=%.0f", step_ns);
    printf("\n");
    return mismatch ? MLP_EXIT_MISMATCH : MLP_EXIT_MATCH;
}

/*
 * mlp.h: the demo model shared by mlp.c (options, steps, verdict),
 * mlp_model.c (host side: weights, inputs, reference) and mlp_gpu.c
 * (device side).
 *
 * The model has L layers over dimensions d_0..d_L, which cycle through
 * the list of widths (one entry, W, unless --widths gives several):
 * d_l = widths[l % n].  Layer l is a d_{l+1} x d_l matrix, row-major.  One
 * step takes a batch of B input vectors of d_0 floats and runs, for each
 * layer l, x = relu(W_l x), ending with B vectors of d_L floats.  With
 * --train the step then updates every layer in place, W_l = a * G + W_l,
 * with one fixed matrix G (a stand-in for a gradient) the size of the
 * largest layer, of which each update uses the first floats.  The device
 * result is compared bit for bit with a host reference summed the way the
 * simgpu contract sums (in float, in index order, from 0.0f).
 */
#ifndef SG_APPS_MLP_H
#define SG_APPS_MLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit statuses of mlp (also in the usage text and README.md). */
enum {
    MLP_EXIT_MATCH = 0,    /* every step matched the host reference */
    MLP_EXIT_MISMATCH = 1, /* some output differed */
    MLP_EXIT_CUDA = 2,     /* a CUDA call failed (out of memory included) */
    MLP_EXIT_USAGE = 3,    /* bad command line */
    MLP_EXIT_HOST = 4,     /* out of host memory */
};

/* --offload: where the layers past the first `resident` live, the two
 * ways vLLM offloads weights (mlp_offload.c). */
typedef enum mlp_offload_mode {
    MLP_OFFLOAD_NONE,     /* every layer in device memory */
    MLP_OFFLOAD_UVA,      /* pinned host memory, read in place by the kernels */
    MLP_OFFLOAD_PREFETCH, /* pinned host memory, copied a layer ahead into two
                           * device buffers on a side stream */
} mlp_offload_mode_t;

/* --widths: at most this many entries. */
#define MLP_WIDTHS_MAX 16

typedef struct mlp_opts {
    uint32_t layers;
    uint32_t widths[MLP_WIDTHS_MAX]; /* the dimensions cycle through these */
    uint32_t nwidths;  /* 1 (--width) to MLP_WIDTHS_MAX (--widths) */
    bool widths_given; /* --widths given: the result line lists them */
    uint32_t steps;
    uint32_t batch;
    bool gemm;         /* --batch given: sg_gemm_f32 instead of the gemv forms */
    bool one_buffer;   /* all weights in one cuMemAlloc */
    uint32_t segment_mib; /* --segments: weights packed into segments of this
                           * many MiB, several layers each; 0: not given */
    bool odd_segments; /* --odd-segments: only odd layers packed, even ones alone */
    bool no_tables;    /* --no-tables: no gemv reads its weight through a pointer table */
    uint32_t workspace_mib; /* --workspace: a scratch allocation of this many MiB
                             * every layer writes a little of; 0: none */
    uint32_t streams;  /* 1, or 2: layers alternate between two streams */
    bool train;        /* update every layer's weights after the forward pass */
    bool load_pass;    /* --load-pass: each layer's matrix kernel once before the steps */
    bool graph;        /* capture one forward pass, replay it every step */
    uint32_t eager_steps; /* --eager N: with graph, steps 0..N-1 run eagerly */
    bool route_loader; /* dlopen + cuGetProcAddress_v2 instead of linked symbols */
    bool timed;        /* --time given: measure the steps after the warm-up */
    uint32_t warmup;   /* --time W: steps before the timed ones */
    mlp_offload_mode_t offload;
    uint32_t resident; /* --resident K: layers 0..K-1 stay in device memory */
} mlp_opts_t;

/* Dimension l (0..layers): d_0 is the input's, d_{l+1} layer l's output's. */
static inline uint32_t mlp_dim(const mlp_opts_t *o, uint32_t l)
{
    return o->widths[l % o->nwidths];
}

/* Floats in layer l's weight matrix: d_{l+1} rows of d_l. */
static inline size_t mlp_layer_floats(const mlp_opts_t *o, uint32_t l)
{
    return (size_t)mlp_dim(o, l + 1) * mlp_dim(o, l);
}

/* Floats before layer l (0..layers) in the layers' concatenated weights;
 * mlp_layer_offset(o, o->layers) is the model's total.  The shapes repeat
 * every nwidths layers, so whole periods are counted at once and this
 * costs at most nwidths terms whatever l is. */
static inline size_t mlp_layer_offset(const mlp_opts_t *o, uint32_t l)
{
    size_t period = 0, part = 0;

    for (uint32_t k = 0; k < o->nwidths; k++) {
        if (k < l % o->nwidths)
            part += mlp_layer_floats(o, k);
        period += mlp_layer_floats(o, k);
    }
    return (size_t)(l / o->nwidths) * period + part;
}

/* The most floats of any layer from layer `first` on (0 if there is none);
 * one period of shapes covers them all. */
static inline size_t mlp_max_layer_floats(const mlp_opts_t *o, uint32_t first)
{
    size_t most = 0;

    for (uint32_t l = first; l < o->layers && l - first < o->nwidths; l++)
        if (mlp_layer_floats(o, l) > most)
            most = mlp_layer_floats(o, l);
    return most;
}

/* Floats in one batch of vectors of dimension d_l: the input at l = 0,
 * layer l - 1's output, the model's output at l = layers. */
static inline size_t mlp_batch_floats(const mlp_opts_t *o, uint32_t l)
{
    return (size_t)o->batch * mlp_dim(o, l);
}

/* The largest of d_0..d_L: the width of an activation buffer. */
static inline uint32_t mlp_max_dim(const mlp_opts_t *o)
{
    uint32_t most = 0;

    for (uint32_t l = 0; l <= o->layers && l < o->nwidths; l++)
        if (mlp_dim(o, l) > most)
            most = mlp_dim(o, l);
    return most;
}

/* Floats in one batch of activations of the widest dimension: the size of
 * each activation buffer, which every layer's input and output fit. */
static inline size_t mlp_act_floats(const mlp_opts_t *o)
{
    return (size_t)o->batch * mlp_max_dim(o);
}

/* mlp_model.c */

/* All layers' weights, layer after layer, row-major; NULL if out of
 * memory.  Free with free(). */
float *mlp_weights_new(const mlp_opts_t *o);
/* The fixed update matrix G of --train, shaped as the largest layer; NULL
 * if out of memory.  Free with free(). */
float *mlp_grad_new(const mlp_opts_t *o);
/* The step of --train on the host: every layer's W = MLP_TRAIN_RATE * G + W,
 * over the first mlp_layer_floats() of G, rounded as sg_axpy_f32 rounds.
 * Can't fail. */
void mlp_update(const mlp_opts_t *o, float *weights, const float *grad);
/* A power of two, so a * g is exact and only the add rounds; small, so the
 * weights drift slowly over many steps. */
#define MLP_TRAIN_RATE (-1.0f / 1024.0f)
/* Step `step`'s input batch (batch x d_0) into x.  Can't fail. */
void mlp_input(const mlp_opts_t *o, uint32_t step, float *x);
/* The forward pass on the host: out = model(in), batch x d_L floats, each
 * vector after the other, as sg_gemm_f32 lays them out.  out and tmp hold
 * mlp_act_floats() floats each: the layers ping-pong between them.  Can't
 * fail. */
void mlp_reference(const mlp_opts_t *o, const float *weights, const float *in,
                   float *out, float *tmp);
/* FNV-1a 64 of n bytes, continuing from h (start with MLP_FNV_BASIS). */
#define MLP_FNV_BASIS 0xcbf29ce484222325ull
uint64_t mlp_fnv1a(uint64_t h, const void *p, size_t n);

/* mlp_gpu.c: each int-returning call gives an MLP_EXIT_* status and, on a
 * CUDA error, has already printed "mlp: CUDA error NAME in CALL (...)". */
typedef struct mlp_gpu mlp_gpu_t;

/* Reach the driver by the chosen route, make the context current, load
 * the built-in kernels, create the stream and allocate every buffer.  On
 * failure *out may still hold a partial state for mlp_gpu_close(). */
int mlp_gpu_open(mlp_gpu_t **out, const mlp_opts_t *o);
/* Upload the weights (and the gemv pointer table, and G with --train),
 * then, with --graph, capture one step's kernels. */
int mlp_gpu_upload(mlp_gpu_t *g, const float *weights, const float *grad);
/* One step: copy in to the device, run the model (and the update, with
 * --train), copy the result to out. */
int mlp_gpu_step(mlp_gpu_t *g, const float *in, float *out);
/* With --time, step number o->warmup starts by recording an event on the
 * compute stream and the last step ends by recording another, before its
 * synchronize.  This gives the virtual nanoseconds between the two. */
int mlp_gpu_elapsed_ns(mlp_gpu_t *g, double *ns);
/* Free everything; NULL is fine.  Errors are ignored (after a sticky error
 * every call fails). */
void mlp_gpu_close(mlp_gpu_t *g);

#endif

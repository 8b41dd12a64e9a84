/*
 * mlp.h: the demo model shared by mlp.c (options, steps, verdict),
 * mlp_model.c (host side: weights, inputs, reference) and mlp_gpu.c
 * (device side).
 *
 * The model is L square layers of width W.  One step takes a batch of B
 * input vectors and runs, for each layer i, x = relu(W_i x).  With --train
 * the step then updates every layer in place, W_i = a * G + W_i, with one
 * fixed matrix G (a stand-in for a gradient).  The device result is
 * compared bit for bit with a host reference summed the way the simgpu
 * contract sums (in float, in index order, from 0.0f).
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

typedef struct mlp_opts {
    uint32_t layers;
    uint32_t width;
    uint32_t steps;
    uint32_t batch;
    bool gemm;         /* --batch given: sg_gemm_f32 instead of the gemv forms */
    bool one_buffer;   /* all weights in one cuMemAlloc */
    uint32_t segment_mib; /* --segments: weights packed into segments of this
                           * many MiB, several layers each; 0: not given */
    bool odd_segments; /* --odd-segments: only odd layers packed, even ones alone */
    uint32_t workspace_mib; /* --workspace: a scratch allocation of this many MiB
                             * every layer writes a little of; 0: none */
    uint32_t streams;  /* 1, or 2: layers alternate between two streams */
    bool train;        /* update every layer's weights after the forward pass */
    bool load_pass;    /* --load-pass: each layer's matrix kernel once before the steps */
    bool graph;        /* capture one forward pass, replay it every step */
    bool route_loader; /* dlopen + cuGetProcAddress_v2 instead of linked symbols */
    bool timed;        /* --time given: measure the steps after the warm-up */
    uint32_t warmup;   /* --time W: steps before the timed ones */
    mlp_offload_mode_t offload;
    uint32_t resident; /* --resident K: layers 0..K-1 stay in device memory */
} mlp_opts_t;

/* Floats in one layer's weight matrix, and in one batch of activations. */
static inline size_t mlp_layer_floats(const mlp_opts_t *o)
{
    return (size_t)o->width * o->width;
}

static inline size_t mlp_act_floats(const mlp_opts_t *o)
{
    return (size_t)o->batch * o->width;
}

/* mlp_model.c */

/* All layers' weights, layer after layer, row-major; NULL if out of
 * memory.  Free with free(). */
float *mlp_weights_new(const mlp_opts_t *o);
/* The fixed update matrix G of --train (width x width); NULL if out of
 * memory.  Free with free(). */
float *mlp_grad_new(const mlp_opts_t *o);
/* The step of --train on the host: every layer's W = MLP_TRAIN_RATE * G + W,
 * rounded as sg_axpy_f32 rounds.  Can't fail. */
void mlp_update(const mlp_opts_t *o, float *weights, const float *grad);
/* A power of two, so a * g is exact and only the add rounds; small, so the
 * weights drift slowly over many steps. */
#define MLP_TRAIN_RATE (-1.0f / 1024.0f)
/* Step `step`'s input batch (batch x width) into x.  Can't fail. */
void mlp_input(const mlp_opts_t *o, uint32_t step, float *x);
/* The forward pass on the host: out = model(in).  tmp holds
 * mlp_act_floats() floats.  Can't fail. */
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

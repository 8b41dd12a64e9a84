/*
 * mlp_model.c: the host side of the demo model: deterministic weights and
 * inputs, and the reference forward pass.
 *
 * Values come from a hash of their coordinates rather than from a random
 * generator's sequence, so any weight can be recomputed alone and every
 * run, route and buffer layout sees the same model.
 *
 * The reference must match simgpu bit for bit.  It therefore sums exactly
 * as the contract says (tests/simgpu/README.md): y[r] = sum over c of
 * W[r*cols+c] * x[c], in a float accumulator starting at 0.0f, c in
 * increasing order.  meson builds this file with -ffp-contract=off so the
 * compiler cannot fuse the multiply and add into an FMA, which would round
 * once instead of twice.
 */
#include <math.h>
#include <stdlib.h>

#include "mlp.h"

/* Different salts keep weights, inputs and G unrelated. */
#define WEIGHT_SALT 0x5157a11ee7ull
#define INPUT_SALT 0x1a7e57b47c4ull
#define GRAD_SALT 0x96adc0ffeeull

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

/* m = a rows x cols matrix, element (r, c) unit(hash of key, r and c) * scale. */
static void fill_matrix(float *m, uint64_t key, uint64_t rows, uint64_t cols, float scale)
{
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++)
            m[r * cols + c] = unit(mix64(key ^ (r << 32 | c))) * scale;
}

float *mlp_weights_new(const mlp_opts_t *o)
{
    float *w = malloc(mlp_layer_offset(o, o->layers) * sizeof(float));

    if (w == NULL)
        return NULL;
    for (uint32_t l = 0; l < o->layers; l++) {
        uint32_t cols = mlp_dim(o, l);
        /* Uniform in [-s, s) has variance s^2/3; with s = sqrt(6/cols) a
         * layer doubles the second moment and the ReLU halves it again, so
         * the activations neither vanish nor blow up however deep the
         * model, whatever its widths. */
        float scale = sqrtf(6.0f / (float)cols);

        fill_matrix(w + mlp_layer_offset(o, l), mix64(WEIGHT_SALT ^ l), mlp_dim(o, l + 1), cols,
                    scale);
    }
    return w;
}

/* Shaped as the first of the largest layers, so that with one width it is
 * the W x W matrix it always was. */
float *mlp_grad_new(const mlp_opts_t *o)
{
    size_t floats = mlp_max_layer_floats(o, 0);
    float *g = malloc(floats * sizeof(float));
    uint32_t l = 0;

    if (g == NULL)
        return NULL;
    while (mlp_layer_floats(o, l) != floats)
        l++;
    fill_matrix(g, mix64(GRAD_SALT), mlp_dim(o, l + 1), mlp_dim(o, l), 1.0f);
    return g;
}

/* sg_axpy_f32's y = a*x + y, element by element (two roundings: this file
 * is built with -ffp-contract=off). */
void mlp_update(const mlp_opts_t *o, float *weights, const float *grad)
{
    for (uint32_t l = 0; l < o->layers; l++) {
        float *w = weights + mlp_layer_offset(o, l);
        size_t n = mlp_layer_floats(o, l);

        for (size_t i = 0; i < n; i++)
            w[i] = MLP_TRAIN_RATE * grad[i] + w[i];
    }
}

void mlp_input(const mlp_opts_t *o, uint32_t step, float *x)
{
    fill_matrix(x, mix64(INPUT_SALT ^ step), o->batch, mlp_dim(o, 0), 1.0f);
}

/* y = W x for one vector, W rows x cols, summed as the contract sums. */
static void gemv(const float *w, const float *x, float *y, uint32_t rows, uint32_t cols)
{
    for (uint32_t r = 0; r < rows; r++) {
        float acc = 0.0f;

        for (uint32_t c = 0; c < cols; c++)
            acc += w[(size_t)r * cols + c] * x[c];
        y[r] = acc;
    }
}

/*
 * ReLU.  How sg_relu_f32 treats -0.0f does not matter: a sum that starts at
 * +0.0f can only reach zero as +0.0f (round to nearest), and the inputs
 * hold no -0.0f either (unit() computes k*2^-23 - 1).
 */
static void relu(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (x[i] < 0.0f)
            x[i] = 0.0f;
}

void mlp_reference(const mlp_opts_t *o, const float *weights, const float *in,
                   float *out, float *tmp)
{
    const float *x = in;

    for (uint32_t l = 0; l < o->layers; l++) {
        uint32_t rows = mlp_dim(o, l + 1), cols = mlp_dim(o, l);
        /* Ping-pong so that the last layer writes into out, like the
         * device, which alternates between two activation buffers. */
        float *y = ((o->layers - 1 - l) % 2 == 0) ? out : tmp;

        /* sg_gemm_f32's layout: vector b at b * cols in x, b * rows in y. */
        for (uint32_t b = 0; b < o->batch; b++)
            gemv(weights + mlp_layer_offset(o, l), x + (size_t)b * cols, y + (size_t)b * rows,
                 rows, cols);
        relu(y, mlp_batch_floats(o, l + 1));
        x = y;
    }
}

uint64_t mlp_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

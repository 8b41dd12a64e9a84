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

float *mlp_weights_new(const mlp_opts_t *o)
{
    size_t per_layer = mlp_layer_floats(o);
    /* Uniform in [-s, s) has variance s^2/3; with s = sqrt(6/W) a layer
     * doubles the second moment and the ReLU halves it again, so the
     * activations neither vanish nor blow up however deep the model. */
    float scale = sqrtf(6.0f / (float)o->width);
    float *w = malloc(per_layer * o->layers * sizeof(float));

    if (w == NULL)
        return NULL;
    for (uint64_t l = 0; l < o->layers; l++) {
        float *wl = w + l * per_layer;
        uint64_t lkey = mix64(WEIGHT_SALT ^ l);

        for (uint64_t r = 0; r < o->width; r++)
            for (uint64_t c = 0; c < o->width; c++)
                wl[r * o->width + c] = unit(mix64(lkey ^ (r << 32 | c))) * scale;
    }
    return w;
}

float *mlp_grad_new(const mlp_opts_t *o)
{
    float *g = malloc(mlp_layer_floats(o) * sizeof(float));
    uint64_t key = mix64(GRAD_SALT);

    if (g == NULL)
        return NULL;
    for (uint64_t r = 0; r < o->width; r++)
        for (uint64_t c = 0; c < o->width; c++)
            g[r * o->width + c] = unit(mix64(key ^ (r << 32 | c)));
    return g;
}

/* sg_axpy_f32's y = a*x + y, element by element (two roundings: this file
 * is built with -ffp-contract=off). */
void mlp_update(const mlp_opts_t *o, float *weights, const float *grad)
{
    size_t per_layer = mlp_layer_floats(o);

    for (uint32_t l = 0; l < o->layers; l++) {
        float *w = weights + l * per_layer;

        for (size_t i = 0; i < per_layer; i++)
            w[i] = MLP_TRAIN_RATE * grad[i] + w[i];
    }
}

void mlp_input(const mlp_opts_t *o, uint32_t step, float *x)
{
    uint64_t skey = mix64(INPUT_SALT ^ step);

    for (uint64_t b = 0; b < o->batch; b++)
        for (uint64_t c = 0; c < o->width; c++)
            x[b * o->width + c] = unit(mix64(skey ^ (b << 32 | c)));
}

/* y = W x for one vector, summed as the contract sums. */
static void gemv(const float *w, const float *x, float *y, uint32_t n)
{
    for (uint32_t r = 0; r < n; r++) {
        float acc = 0.0f;

        for (uint32_t c = 0; c < n; c++)
            acc += w[(size_t)r * n + c] * x[c];
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
    size_t per_layer = mlp_layer_floats(o), act = mlp_act_floats(o);
    const float *x = in;

    for (uint32_t l = 0; l < o->layers; l++) {
        /* Ping-pong so that the last layer writes into out, like the
         * device, which alternates between two activation buffers. */
        float *y = ((o->layers - 1 - l) % 2 == 0) ? out : tmp;

        for (uint32_t b = 0; b < o->batch; b++)
            gemv(weights + l * per_layer, x + (size_t)b * o->width,
                 y + (size_t)b * o->width, o->width);
        relu(y, act);
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

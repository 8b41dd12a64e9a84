/*
 * multi: a two-device pipeline, the shape of a model split across two
 * GPUs. Each device d holds L layers of W x W weights, each its own
 * cuMemAlloc, and one exchange buffer X_d of 4 MiB (also its own
 * allocation, so spillway tracks it like a weight). Each step:
 *
 *   device 0:  a = x0; L times a = relu(W0_i a)      (gemv, relu)
 *              X0[0, W) = a
 *   peer copy  X1[0, W) = X0[0, W)                   (cuMemcpyPeer)
 *   device 1:  b = X1[0, W); L times b = relu(W1_i b)
 *              X1[W, 2W) = b
 *   peer copy  X0[W, 2W) = X1[W, 2W)                 (cuMemcpyPeerAsync)
 *   device 1:  b = 0.5 * X0[W, 2W) + b               (sg_axpy_f32 reading
 *                                                     device 0's memory:
 *                                                     peer access)
 *   back       x0 = b                                (cuMemcpyDtoD across
 *                                                     devices, UVA)
 *
 * and b is copied to the host and folded into an FNV-1a checksum. Every
 * byte crosses between the devices both ways, by three copy routes and a
 * kernel's peer read, so a run under spillway with each device's weights
 * and exchange buffer demoted must give the checksum of a run with
 * everything resident.
 *
 * With --race, instead of the steps: device 1 queues, behind a host
 * function that sleeps 300 ms, two kernels reading device 0's memory (its
 * exchange buffer and first layer, through peer access); meanwhile the
 * host allocates 4 MiB more on device 0. Under a device 0 budget that
 * leaves no room, spillway must demote one of the two chunks those kernels
 * read: only safe once device 1's context has been waited for, which a
 * cuCtxSynchronize of device 0's context alone does not do (simgpu with
 * several devices waits for the context's own device only, and records an
 * unmap under queued work as a hazard). The checksum is of the kernels'
 * results.
 *
 * Reaches the driver through drv.h's linked route (tests/apps/drv.h), and
 * through the exported peer entry points drv.h does not list.
 *
 * Prints one line
 *   multi: devices=2 layers=L width=W steps=S weights=XMiB/device checksum=0x...
 * and exits 0; 2 on a CUDA error (out of memory, say: the line names the
 * call), 3 on bad usage, 4 out of host memory.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "drv.h"

enum { EXIT_OK = 0, EXIT_CUDA = 2, EXIT_USAGE = 3, EXIT_HOST = 4 };

#define NDEV 2
#define XBYTES (4u << 20) /* the exchange buffers: big enough to be tracked */
#define BLOCK 256u
#define FNV_BASIS 0xcbf29ce484222325ull

static const char image[] = "simgpu-builtin";

typedef struct {
    CUcontext ctx;
    CUmodule mod;
    CUfunction gemv, relu, axpy;
    CUstream s;
    CUdeviceptr *w;   /* layers */
    CUdeviceptr x;    /* the exchange buffer */
    CUdeviceptr a, b; /* two activation vectors (small, untracked) */
} side_t;

typedef struct {
    sg_drv_t d;
    side_t dev[NDEV];
    uint32_t layers, width, steps;
    int race;
} multi_t;

static int fail(CUresult r, const char *call, const char *what)
{
    const char *name = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
        name = "unknown CUresult";
    fprintf(stderr, "multi: %s failed (%s): %s\n", call, what, name);
    return EXIT_CUDA;
}

#define CK(call, what)                                \
    do {                                              \
        CUresult r_ = (call);                         \
        if (r_ != CUDA_SUCCESS)                       \
            return fail(r_, #call, what);             \
    } while (0)

/* A weight from its coordinates: small, so activations stay finite. */
static float weight(uint32_t dev, uint32_t layer, uint64_t i)
{
    uint64_t z = (i + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)dev << 48 | (uint64_t)layer << 32);
    z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ z >> 27) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return ((float)(z >> 40) / (float)(1u << 24) - 0.5f) / 16.0f;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

static unsigned grid(uint32_t n)
{
    return (n + BLOCK - 1) / BLOCK;
}

/* Device d's context, module, stream, small vectors, layers and exchange
 * buffer; the weights uploaded from host memory w (W * W floats). */
static int setup_side(multi_t *m, int d, float *w)
{
    side_t *s = &m->dev[d];
    size_t vec = (size_t)m->width * sizeof(float), mat = vec * m->width;
    CUdevice dev;
    CK(m->d.DeviceGet(&dev, d), "device");
    CK(m->d.DevicePrimaryCtxRetain(&s->ctx, dev), "primary context");
    CK(m->d.CtxSetCurrent(s->ctx), "primary context");
    CK(m->d.ModuleLoadData(&s->mod, image), "built-in kernels");
    CK(m->d.ModuleGetFunction(&s->gemv, s->mod, "sg_gemv_f32"), "sg_gemv_f32");
    CK(m->d.ModuleGetFunction(&s->relu, s->mod, "sg_relu_f32"), "sg_relu_f32");
    CK(m->d.ModuleGetFunction(&s->axpy, s->mod, "sg_axpy_f32"), "sg_axpy_f32");
    CK(m->d.StreamCreate(&s->s, CU_STREAM_NON_BLOCKING), "stream");
    CK(m->d.MemAlloc(&s->a, vec), "activation");
    CK(m->d.MemAlloc(&s->b, vec), "activation");
    s->w = calloc(m->layers, sizeof *s->w);
    if (!s->w)
        return EXIT_HOST;
    for (uint32_t l = 0; l < m->layers; l++) {
        CK(m->d.MemAlloc(&s->w[l], mat), "layer");
        for (uint64_t i = 0; i < (uint64_t)m->width * m->width; i++)
            w[i] = weight((uint32_t)d, l, i);
        CK(m->d.MemcpyHtoD(s->w[l], w, mat), "layer upload");
    }
    CK(m->d.MemAlloc(&s->x, XBYTES), "exchange buffer");
    return EXIT_OK;
}

/* The layers of device d on its stream: in = out = s->a, through s->b. */
static int layers(multi_t *m, int d)
{
    side_t *s = &m->dev[d];
    uint32_t w = m->width;
    uint64_t n = w;
    CK(m->d.CtxSetCurrent(s->ctx), "context");
    for (uint32_t l = 0; l < m->layers; l++) {
        void *gp[] = {&s->w[l], &s->a, &s->b, &w, &w};
        void *rp[] = {&s->b, &n};
        CK(m->d.LaunchKernel(s->gemv, grid(w), 1, 1, BLOCK, 1, 1, 0, s->s, gp, NULL), "gemv");
        CK(m->d.LaunchKernel(s->relu, grid(w), 1, 1, BLOCK, 1, 1, 0, s->s, rp, NULL), "relu");
        CK(cuMemcpyDtoDAsync(s->a, s->b, n * sizeof(float), s->s), "layer output");
    }
    return EXIT_OK;
}

static int step(multi_t *m, float *out, uint64_t *sum)
{
    side_t *s0 = &m->dev[0], *s1 = &m->dev[1];
    size_t vec = (size_t)m->width * sizeof(float);
    uint64_t n = m->width;
    float half = 0.5f;
    int e;
    if ((e = layers(m, 0)))
        return e;
    CK(cuMemcpyDtoDAsync(s0->x, s0->a, vec, s0->s), "to exchange");
    CK(m->d.StreamSynchronize(s0->s), "device 0");
    CK(cuMemcpyPeer(s1->x, s1->ctx, s0->x, s0->ctx, vec), "peer copy 0 -> 1");
    CK(m->d.CtxSetCurrent(s1->ctx), "context");
    CK(cuMemcpyDtoDAsync(s1->a, s1->x, vec, s1->s), "from exchange");
    if ((e = layers(m, 1)))
        return e;
    CK(cuMemcpyDtoDAsync(s1->x + vec, s1->a, vec, s1->s), "to exchange");
    CK(cuMemcpyPeerAsync(s0->x + vec, s0->ctx, s1->x + vec, s1->ctx, vec, s1->s),
       "peer copy 1 -> 0");
    CUdeviceptr remote = s0->x + vec;
    void *ap[] = {&half, &remote, &s1->a, &n};
    CK(m->d.LaunchKernel(s1->axpy, grid(m->width), 1, 1, BLOCK, 1, 1, 0, s1->s, ap, NULL),
       "axpy reading device 0");
    CK(m->d.StreamSynchronize(s1->s), "device 1");
    CK(m->d.MemcpyDtoH(out, s1->a, vec), "result");
    *sum = fnv1a(*sum, out, vec);
    CK(cuMemcpyDtoD(s0->a, s1->a, vec), "back to device 0");
    return EXIT_OK;
}

static void CUDA_CB nap(void *arg)
{
    (void)arg;
    struct timespec t = {0, 300 * 1000 * 1000};
    nanosleep(&t, NULL);
}

/* --race (above): returns with the kernels' results in *sum. */
static int race(multi_t *m, float *out, uint64_t *sum)
{
    side_t *s0 = &m->dev[0], *s1 = &m->dev[1];
    size_t vec = (size_t)m->width * sizeof(float);
    uint32_t w = m->width;
    uint64_t n = w;
    float one = 1.0f;
    CUdeviceptr more;
    CK(m->d.CtxSetCurrent(s1->ctx), "context");
    CK(cuLaunchHostFunc(s1->s, nap, NULL), "host function");
    void *ap[] = {&one, &s0->x, &s1->a, &n};
    CK(m->d.LaunchKernel(s1->axpy, grid(w), 1, 1, BLOCK, 1, 1, 0, s1->s, ap, NULL),
       "axpy reading device 0");
    void *gp[] = {&s0->w[0], &s1->a, &s1->b, &w, &w};
    CK(m->d.LaunchKernel(s1->gemv, grid(w), 1, 1, BLOCK, 1, 1, 0, s1->s, gp, NULL),
       "gemv reading device 0");
    CK(m->d.CtxSetCurrent(s0->ctx), "context");
    CK(m->d.MemAlloc(&more, XBYTES), "one more buffer on device 0");
    CK(m->d.StreamSynchronize(s1->s), "device 1");
    CK(m->d.MemcpyDtoH(out, s1->b, vec), "result");
    *sum = fnv1a(*sum, out, vec);
    CK(m->d.MemFree(more), "free");
    return EXIT_OK;
}

/* The devices set up: peer access, the first input, the steps (or the
 * race), the frees. Returns on the first CUDA error; run frees the host
 * memory whatever this returns. */
static int drive(multi_t *m, float *out, uint64_t *sum)
{
    int e = EXIT_OK;
    /* Device 1's kernels read device 0's memory: peer access, as without
     * it the read would fault on a GPU. */
    CK(m->d.CtxSetCurrent(m->dev[1].ctx), "context");
    CK(cuCtxEnablePeerAccess(m->dev[0].ctx, 0), "peer access 1 -> 0");
    /* The first input: the weights' pattern again, on device 0. */
    for (uint32_t i = 0; i < m->width; i++)
        out[i] = weight(9, 9, i) * 16.0f;
    CK(m->d.CtxSetCurrent(m->dev[0].ctx), "context");
    CK(m->d.MemcpyHtoD(m->dev[0].a, out, (size_t)m->width * sizeof(float)), "input");
    CK(m->d.MemcpyHtoD(m->dev[0].x, out, (size_t)m->width * sizeof(float)), "input");
    CK(m->d.CtxSetCurrent(m->dev[1].ctx), "context");
    CK(m->d.MemcpyHtoD(m->dev[1].a, out, (size_t)m->width * sizeof(float)), "input");
    *sum = FNV_BASIS;
    if (m->race)
        e = race(m, out, sum);
    for (uint32_t s = 0; s < m->steps && !e && !m->race; s++)
        e = step(m, out, sum);
    for (int d = 0; d < NDEV && !e; d++) {
        CK(m->d.CtxSetCurrent(m->dev[d].ctx), "context");
        for (uint32_t l = 0; l < m->layers; l++)
            CK(m->d.MemFree(m->dev[d].w[l]), "free");
        CK(m->d.MemFree(m->dev[d].x), "free");
    }
    return e;
}

static int run(multi_t *m, uint64_t *sum)
{
    size_t mat = (size_t)m->width * m->width * sizeof(float);
    float *w = malloc(mat), *out = malloc((size_t)m->width * sizeof(float));
    int e = EXIT_HOST;
    if (!w || !out)
        goto done;
    e = EXIT_OK;
    sg_drv_link(&m->d);
    CUresult r = m->d.Init(0);
    if (r != CUDA_SUCCESS) {
        e = fail(r, "cuInit", "flags 0");
        goto done;
    }
    for (int d = 0; d < NDEV && !e; d++)
        e = setup_side(m, d, w);
    if (!e)
        e = drive(m, out, sum);
done:
    for (int d = 0; d < NDEV; d++)
        free(m->dev[d].w);
    free(w);
    free(out);
    return e;
}

static int usage(void)
{
    fprintf(stderr, "usage: multi [--layers L] [--width W] [--steps S] [--race]\n");
    return EXIT_USAGE;
}

int main(int argc, char **argv)
{
    multi_t m = {.layers = 8, .width = 1024, .steps = 3};
    for (int i = 1; i < argc; i += 2) {
        char *end;
        if (!strcmp(argv[i], "--race")) {
            m.race = 1;
            i--;
            continue;
        }
        unsigned long v = i + 1 < argc ? strtoul(argv[i + 1], &end, 10) : 0;
        if (i + 1 >= argc || *end || v == 0 || v > 4096)
            return usage();
        if (!strcmp(argv[i], "--layers"))
            m.layers = (uint32_t)v;
        else if (!strcmp(argv[i], "--width") && v % 8 == 0 && 2 * v * sizeof(float) <= XBYTES)
            m.width = (uint32_t)v;
        else if (!strcmp(argv[i], "--steps"))
            m.steps = (uint32_t)v;
        else
            return usage();
    }
    uint64_t sum = 0;
    int e = run(&m, &sum);
    if (e)
        return e;
    printf("multi: devices=%d layers=%u width=%u steps=%u weights=%.1fMiB/device "
           "checksum=0x%016" PRIx64 "\n",
           NDEV, m.layers, m.width, m.steps,
           (double)m.layers * m.width * m.width * sizeof(float) / (1 << 20), sum);
    return EXIT_OK;
}

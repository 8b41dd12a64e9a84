/*
 * mlp_gpu.c: the device side of the demo model.  Every driver call goes
 * through one sg_drv_t table, filled either with the linked symbols or
 * through dlopen + cuGetProcAddress_v2 (drv.h), so both ways applications
 * reach the driver run the very same code.
 *
 * Device buffers:
 *
 *   act[0], act[1]   batch x width floats each; layer i reads act[i % 2]
 *                    and writes act[(i + 1) % 2].  The input goes to
 *                    act[0], the output is act[layers % 2].
 *   weights          layers x width x width floats, either one cuMemAlloc
 *                    per layer (the default: each layer can move alone) or
 *                    one for all (--one-buffer: layers share an allocation).
 *   table            the layers' weight addresses, read by
 *                    sg_gemv_table_f32 from device memory: a use of the
 *                    weights that no launch argument reveals.
 *
 * Layer i runs form i % 3 of gemv (plain pointers, pointers in a by-value
 * struct, pointer in the device table), so an interposer meets all three
 * ways a kernel can reach a buffer; with --batch, every layer is one
 * sg_gemm_f32 instead.  Each layer ends with sg_relu_f32.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "drv.h"
#include "mlp.h"

#define BLOCK 256u

/* simgpu accepts any image whose text starts with this. */
static const char image[] = "simgpu-builtin";

/* sg_gemv_struct_f32's one parameter, laid out as C lays it out; device
 * pointers are 64-bit, like the kernel's const float *. */
struct gemv_args {
    CUdeviceptr w;
    CUdeviceptr x;
    CUdeviceptr y;
    uint32_t rows;
    uint32_t cols;
};

struct mlp_gpu {
    sg_drv_t d;
    const mlp_opts_t *o;
    CUdevice dev;
    int retained;
    CUmodule mod;
    CUfunction gemv, gemv_struct, gemv_table, gemm, relu;
    CUstream stream;
    CUdeviceptr act[2];
    CUdeviceptr table;   /* gemv forms only */
    CUdeviceptr *weight; /* layers entries: where layer i's matrix starts */
    CUdeviceptr *alloc;  /* nalloc entries: what cuMemAlloc returned */
    uint32_t nalloc;
    CUgraph graph;
    CUgraphExec exec;
    CUevent mark[2];     /* --time: start of the first timed step, end of the last */
    uint32_t steps_done; /* steps queued so far */
};

/* Print the CUDA error line; returns MLP_EXIT_CUDA. */
__attribute__((format(printf, 4, 5)))
static int gpu_fail(const mlp_gpu_t *g, CUresult rc, const char *call, const char *fmt, ...)
{
    char buf[32], what[160];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    fprintf(stderr, "mlp: CUDA error %s in %s (%s)\n",
            sg_drv_errname(&g->d, rc, buf, sizeof(buf)), call, what);
    return MLP_EXIT_CUDA;
}

/* Run a driver call; on error report it with the call's name and a
 * description of what it was doing, and return from the function. */
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

/* Fill the table by the chosen route; see drv.h. */
static int open_driver(mlp_gpu_t *g)
{
    sg_drv_err_t err = {0};
    CUresult rc;

    if (!g->o->route_loader) {
        sg_drv_link(&g->d);
        return MLP_EXIT_MATCH;
    }
    rc = sg_drv_load(&g->d, &err);
    if (rc != CUDA_SUCCESS)
        return gpu_fail(g, rc, err.call, "%s", err.what);
    return MLP_EXIT_MATCH;
}

static int load_kernels(mlp_gpu_t *g)
{
    const struct {
        const char *name;
        CUfunction *f;
    } fn[] = {
        {"sg_gemv_f32", &g->gemv},
        {"sg_gemv_struct_f32", &g->gemv_struct},
        {"sg_gemv_table_f32", &g->gemv_table},
        {"sg_gemm_f32", &g->gemm},
        {"sg_relu_f32", &g->relu},
    };

    CK(g->d.ModuleLoadData(&g->mod, image), "cuModuleLoadData", "built-in kernels");
    for (size_t i = 0; i < sizeof(fn) / sizeof(fn[0]); i++)
        CK(g->d.ModuleGetFunction(fn[i].f, g->mod, fn[i].name), "cuModuleGetFunction", "%s",
           fn[i].name);
    return MLP_EXIT_MATCH;
}

/* Activations and table first, weights last: when the model does not fit,
 * the failure names the weight allocation that did not. */
static int alloc_buffers(mlp_gpu_t *g)
{
    const mlp_opts_t *o = g->o;
    size_t act_bytes = mlp_act_floats(o) * sizeof(float);
    size_t layer_bytes = mlp_layer_floats(o) * sizeof(float);

    for (int i = 0; i < 2; i++)
        CK(g->d.MemAlloc(&g->act[i], act_bytes), "cuMemAlloc", "activations %d, %.1fMiB", i,
           mib(act_bytes));
    if (!o->gemm)
        CK(g->d.MemAlloc(&g->table, o->layers * sizeof(CUdeviceptr)), "cuMemAlloc",
           "weight table, %u entries", o->layers);

    g->weight = calloc(o->layers, sizeof(CUdeviceptr));
    g->alloc = calloc(o->one_buffer ? 1 : o->layers, sizeof(CUdeviceptr));
    if (g->weight == NULL || g->alloc == NULL) {
        fprintf(stderr, "mlp: out of host memory\n");
        return MLP_EXIT_HOST;
    }
    if (o->one_buffer) {
        size_t bytes = layer_bytes * o->layers;

        CK(g->d.MemAlloc(&g->alloc[0], bytes), "cuMemAlloc", "weights of all %u layers, %.1fMiB",
           o->layers, mib(bytes));
        g->nalloc = 1;
        for (uint32_t l = 0; l < o->layers; l++)
            g->weight[l] = g->alloc[0] + (CUdeviceptr)l * layer_bytes;
    } else {
        for (uint32_t l = 0; l < o->layers; l++) {
            CK(g->d.MemAlloc(&g->alloc[l], layer_bytes), "cuMemAlloc",
               "weights of layer %u, %.1fMiB", l, mib(layer_bytes));
            g->nalloc = l + 1;
            g->weight[l] = g->alloc[l];
        }
    }
    return MLP_EXIT_MATCH;
}

int mlp_gpu_open(mlp_gpu_t **out, const mlp_opts_t *o)
{
    mlp_gpu_t *g = calloc(1, sizeof(*g));
    CUcontext ctx;
    int st;

    *out = g;
    if (g == NULL) {
        fprintf(stderr, "mlp: out of host memory\n");
        return MLP_EXIT_HOST;
    }
    g->o = o;
    if ((st = open_driver(g)) != 0)
        return st;
    CK(g->d.Init(0), "cuInit", "flags 0");
    CK(g->d.DeviceGet(&g->dev, 0), "cuDeviceGet", "device 0");
    CK(g->d.DevicePrimaryCtxRetain(&ctx, g->dev), "cuDevicePrimaryCtxRetain", "device 0");
    g->retained = 1;
    CK(g->d.CtxSetCurrent(ctx), "cuCtxSetCurrent", "primary context");
    if ((st = load_kernels(g)) != 0)
        return st;
    /* A blocking stream (flags 0) is ordered after the legacy default
     * stream's work, in particular the synchronous weight uploads, which
     * may return before a pageable copy has reached the device. */
    CK(g->d.StreamCreate(&g->stream, CU_STREAM_DEFAULT), "cuStreamCreate", "flags 0");
    return alloc_buffers(g);
}

static int launch(mlp_gpu_t *g, CUfunction f, const char *name, uint32_t layer,
                  unsigned grid_y, void **params)
{
    unsigned grid_x = (g->o->width + BLOCK - 1) / BLOCK;

    CK(g->d.LaunchKernel(f, grid_x, grid_y, 1, BLOCK, 1, 1, 0, g->stream, params, NULL),
       "cuLaunchKernel", "%s, layer %u", name, layer);
    return MLP_EXIT_MATCH;
}

/* Queue one forward pass on the stream (or record it, under capture). */
static int enqueue_forward(mlp_gpu_t *g)
{
    const mlp_opts_t *o = g->o;
    uint32_t n = o->width, batch = o->batch;
    uint64_t count = mlp_act_floats(o);
    int st;

    for (uint32_t l = 0; l < o->layers; l++) {
        CUdeviceptr x = g->act[l % 2], y = g->act[(l + 1) % 2];

        if (o->gemm) {
            void *p[] = {&g->weight[l], &x, &y, &n, &n, &batch};

            st = launch(g, g->gemm, "sg_gemm_f32", l, batch, p);
        } else if (l % 3 == 0) {
            void *p[] = {&g->weight[l], &x, &y, &n, &n};

            st = launch(g, g->gemv, "sg_gemv_f32", l, 1, p);
        } else if (l % 3 == 1) {
            struct gemv_args a = {g->weight[l], x, y, n, n};
            void *p[] = {&a};

            st = launch(g, g->gemv_struct, "sg_gemv_struct_f32", l, 1, p);
        } else {
            void *p[] = {&g->table, &l, &x, &y, &n, &n};

            st = launch(g, g->gemv_table, "sg_gemv_table_f32", l, 1, p);
        }
        if (st != 0)
            return st;
        {
            void *p[] = {&y, &count};

            if ((st = launch(g, g->relu, "sg_relu_f32", l, batch, p)) != 0)
                return st;
        }
    }
    return MLP_EXIT_MATCH;
}

/* Record one forward pass into a graph.  If recording fails, the capture
 * is still ended so the stream is usable (and destroyable) again. */
static int capture(mlp_gpu_t *g)
{
    int st;

    CK(g->d.StreamBeginCapture(g->stream, CU_STREAM_CAPTURE_MODE_GLOBAL),
       "cuStreamBeginCapture_v2", "forward pass");
    st = enqueue_forward(g);
    if (st != 0) {
        CUgraph partial = NULL;

        if (g->d.StreamEndCapture(g->stream, &partial) == CUDA_SUCCESS && partial != NULL)
            g->d.GraphDestroy(partial);
        return st;
    }
    CK(g->d.StreamEndCapture(g->stream, &g->graph), "cuStreamEndCapture", "forward pass");
    CK(g->d.GraphInstantiateWithFlags(&g->exec, g->graph, 0), "cuGraphInstantiateWithFlags",
       "forward pass");
    return MLP_EXIT_MATCH;
}

int mlp_gpu_upload(mlp_gpu_t *g, const float *weights)
{
    const mlp_opts_t *o = g->o;
    size_t layer_floats = mlp_layer_floats(o);

    for (uint32_t l = 0; l < o->layers; l++)
        CK(g->d.MemcpyHtoD(g->weight[l], weights + l * layer_floats, layer_floats * sizeof(float)),
           "cuMemcpyHtoD", "weights of layer %u", l);
    /* simgpu reads the table when a table launch is issued (so must a
     * tracker that wants to know what it touches): write it synchronously
     * before the first launch. */
    if (!o->gemm)
        CK(g->d.MemcpyHtoD(g->table, g->weight, o->layers * sizeof(CUdeviceptr)), "cuMemcpyHtoD",
           "weight table");
    return o->graph ? capture(g) : MLP_EXIT_MATCH;
}

int mlp_gpu_step(mlp_gpu_t *g, const float *in, float *out)
{
    const mlp_opts_t *o = g->o;
    size_t bytes = mlp_act_floats(o) * sizeof(float);
    uint32_t step = g->steps_done++;
    int st;

    /* The events are made here, not at open, so that the steps before are
     * the very calls of a run without --time (bench-offload relies on it). */
    if (o->timed && step == o->warmup) {
        for (int i = 0; i < 2; i++)
            CK(g->d.EventCreate(&g->mark[i], CU_EVENT_DEFAULT), "cuEventCreate",
               "timing event %d", i);
        CK(g->d.EventRecord(g->mark[0], g->stream), "cuEventRecord", "start of step %u", step);
    }
    /* With --graph this writes into the buffer the graph captured: the
     * replay reads whatever is there when it runs. */
    CK(g->d.MemcpyHtoDAsync(g->act[0], in, bytes, g->stream), "cuMemcpyHtoDAsync", "input");
    if (o->graph)
        CK(g->d.GraphLaunch(g->exec, g->stream), "cuGraphLaunch", "forward pass");
    else if ((st = enqueue_forward(g)) != 0)
        return st;
    CK(g->d.MemcpyDtoHAsync(out, g->act[o->layers % 2], bytes, g->stream), "cuMemcpyDtoHAsync",
       "output");
    if (o->timed && step == o->steps - 1)
        CK(g->d.EventRecord(g->mark[1], g->stream), "cuEventRecord", "end of step %u", step);
    CK(g->d.StreamSynchronize(g->stream), "cuStreamSynchronize", "end of step");
    return MLP_EXIT_MATCH;
}

int mlp_gpu_elapsed_ns(mlp_gpu_t *g, double *ns)
{
    float ms = 0.0f;

    CK(g->d.EventSynchronize(g->mark[1]), "cuEventSynchronize", "end of the timed steps");
    CK(g->d.EventElapsedTime(&ms, g->mark[0], g->mark[1]), "cuEventElapsedTime", "timed steps");
    *ns = (double)ms * 1e6;
    return MLP_EXIT_MATCH;
}

void mlp_gpu_close(mlp_gpu_t *g)
{
    const sg_drv_t *d;

    if (g == NULL)
        return;
    d = &g->d;
    /* The table's entries are NULL if resolution failed early. */
    if (g->exec != NULL)
        d->GraphExecDestroy(g->exec);
    if (g->graph != NULL)
        d->GraphDestroy(g->graph);
    if (g->stream != NULL)
        d->StreamDestroy(g->stream);
    for (int i = 0; i < 2; i++)
        if (g->mark[i] != NULL)
            d->EventDestroy(g->mark[i]);
    for (uint32_t i = 0; i < g->nalloc; i++)
        d->MemFree(g->alloc[i]);
    if (g->table != 0)
        d->MemFree(g->table);
    for (int i = 0; i < 2; i++)
        if (g->act[i] != 0)
            d->MemFree(g->act[i]);
    if (g->mod != NULL)
        d->ModuleUnload(g->mod);
    if (g->retained)
        d->DevicePrimaryCtxRelease(g->dev);
    free(g->alloc);
    free(g->weight);
    free(g);
}

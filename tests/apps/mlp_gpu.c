/*
 * mlp_gpu.c: the device side of the demo model.  Every driver call goes
 * through one sg_drv_t table, filled either with the linked symbols or
 * through dlopen + cuGetProcAddress_v2 (drv.h), so both ways applications
 * reach the driver run the very same code.
 *
 * Device buffers:
 *
 *   act[0], act[1]   batch x the widest dimension's floats each; layer i
 *                    reads act[i % 2] (batch x d_i floats) and writes
 *                    act[(i + 1) % 2] (batch x d_{i+1}).  The input goes
 *                    to act[0], the output is act[layers % 2].
 *   weights          each layer's d_{i+1} x d_i floats (mlp.h), either one
 *                    cuMemAlloc per layer (the default: each layer can
 *                    move alone), one for all (--one-buffer: layers share
 *                    an allocation) or packed into segments (--segments:
 *                    see alloc_segments()).
 *   table            the layers' weight addresses, read by
 *                    sg_gemv_table_f32 from device memory: a use of the
 *                    weights that no launch argument reveals.
 *   grad             --train only: the fixed matrix G of the update, the
 *                    size of the largest layer.
 *   ws               --workspace only: scratch that each layer's
 *                    sg_fill_u32 writes 4 KiB of (the next 4 KiB each
 *                    layer, round the allocation), as a GEMM library
 *                    writes its workspace at every call: memory every
 *                    launch uses, and none of the output depends on.
 *
 * Layer i runs form i % 3 of gemv (plain pointers, pointers in a by-value
 * struct, pointer in the device table), so an interposer meets all three
 * ways a kernel can reach a buffer; with --batch, every layer is one
 * sg_gemm_f32 instead.  Each layer ends with sg_relu_f32.  With --train,
 * sg_axpy_f32 then updates each layer's weights in place, in layer order:
 * kernels that write the weights every step.
 *
 * With --streams 2 the step's kernel work is a chain of items (the layers,
 * then the updates); item k runs on stream k % 2 after waiting for an
 * event recorded behind item k - 1, the way servers spread work over
 * streams: the order, and so the result, is the same as on one stream.
 *
 * With --offload, mlp_offload.c allocates and uploads the weights instead
 * (layers past --resident in pinned host memory) and orders its prefetch
 * copies around each layer's kernels; see there.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "drv.h"
#include "mlp.h"
#include "mlp_offload.h"

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
    CUfunction gemv, gemv_struct, gemv_table, gemm, relu, axpy, fill;
    CUstream stream[2];  /* [0]: copies, timing and item 0; [1]: --streams 2 */
    CUevent done[2];     /* --streams 2: recorded behind the last item on stream i */
    CUdeviceptr act[2];
    CUdeviceptr table;   /* gemv forms only */
    CUdeviceptr grad;    /* --train only */
    CUdeviceptr ws;      /* --workspace only */
    CUdeviceptr *weight; /* layers entries: where layer i's matrix starts */
    CUdeviceptr *alloc;  /* nalloc entries (at most layers): what cuMemAlloc returned */
    uint32_t nalloc;
    mlp_offload_t *off;  /* --offload only: owns the weights instead of alloc[] */
    CUgraph graph;
    CUgraphExec exec;
    CUevent mark[2];     /* --time: start of the first timed step, end of the last */
    uint32_t steps_done; /* steps queued so far */
};

int mlp_cuda_fail(const sg_drv_t *d, CUresult rc, const char *call, const char *fmt, ...)
{
    char buf[32], what[160];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    fprintf(stderr, "mlp: CUDA error %s in %s (%s)\n",
            sg_drv_errname(d, rc, buf, sizeof(buf)), call, what);
    return MLP_EXIT_CUDA;
}

/* Run a driver call; on error report it with the call's name and a
 * description of what it was doing, and return from the function. */
#define CK(expr, call, ...)                                                    \
    do {                                                                       \
        CUresult rc_ = (expr);                                                 \
        if (rc_ != CUDA_SUCCESS)                                               \
            return mlp_cuda_fail(&g->d, rc_, call, __VA_ARGS__);                   \
    } while (0)

double mlp_mib(size_t bytes)
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
        if (g->o->offload != MLP_OFFLOAD_NONE)
            sg_drv_link_host(&g->d);
        return MLP_EXIT_MATCH;
    }
    rc = sg_drv_load(&g->d, &err);
    if (rc == CUDA_SUCCESS && g->o->offload != MLP_OFFLOAD_NONE)
        rc = sg_drv_load_host(&g->d, &err);
    if (rc != CUDA_SUCCESS)
        return mlp_cuda_fail(&g->d, rc, err.call, "%s", err.what);
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
        {"sg_axpy_f32", &g->axpy},
        {"sg_fill_u32", &g->fill},
    };

    CK(g->d.ModuleLoadData(&g->mod, image), "cuModuleLoadData", "built-in kernels");
    for (size_t i = 0; i < sizeof(fn) / sizeof(fn[0]); i++)
        CK(g->d.ModuleGetFunction(fn[i].f, g->mod, fn[i].name), "cuModuleGetFunction", "%s",
           fn[i].name);
    return MLP_EXIT_MATCH;
}

/*
 * --segments M: pack the layers into allocations of M MiB, in layer order,
 * as PyTorch's caching allocator packs tensors into its 20 MiB segments:
 * each layer starts at the next 512-byte boundary (the allocator's
 * rounding) of the current segment; a layer that does not fit in what is
 * left starts a new segment, and one bigger than a segment gets an
 * allocation of its own size (the segment being filled stays open), as
 * does each even layer with --odd-segments (a model whose fused layers
 * share segments and whose others do not).
 */
static int alloc_segments(mlp_gpu_t *g)
{
    const size_t align = 512;
    size_t seg_bytes = (size_t)g->o->segment_mib << 20, used = 0;
    CUdeviceptr seg = 0; /* the segment being filled; 0: none yet */

    for (uint32_t l = 0; l < g->o->layers; l++) {
        size_t off = (used + align - 1) / align * align;
        size_t layer_bytes = mlp_layer_floats(g->o, l) * sizeof(float);

        if (layer_bytes > seg_bytes || (g->o->odd_segments && l % 2 == 0)) {
            CK(g->d.MemAlloc(&g->alloc[g->nalloc], layer_bytes), "cuMemAlloc",
               "weights of layer %u, %.1fMiB, bigger than a segment", l, mlp_mib(layer_bytes));
            g->weight[l] = g->alloc[g->nalloc++];
            continue;
        }
        if (seg == 0 || off + layer_bytes > seg_bytes) {
            CK(g->d.MemAlloc(&g->alloc[g->nalloc], seg_bytes), "cuMemAlloc",
               "segment %u for layer %u, %.1fMiB", g->nalloc, l, mlp_mib(seg_bytes));
            seg = g->alloc[g->nalloc++];
            off = 0;
        }
        g->weight[l] = seg + off;
        used = off + layer_bytes;
    }
    return MLP_EXIT_MATCH;
}

/* The workspace, activations and table first, weights last: when the
 * model does not fit, the failure names the weight allocation that did
 * not. (A GEMM library's handle, and its workspace, are made before the
 * model is loaded.) */
static int alloc_buffers(mlp_gpu_t *g)
{
    const mlp_opts_t *o = g->o;
    size_t act_bytes = mlp_act_floats(o) * sizeof(float);
    size_t grad_bytes = mlp_max_layer_floats(o, 0) * sizeof(float);

    if (o->workspace_mib != 0)
        CK(g->d.MemAlloc(&g->ws, (size_t)o->workspace_mib << 20), "cuMemAlloc",
           "workspace, %uMiB", o->workspace_mib);
    for (int i = 0; i < 2; i++)
        CK(g->d.MemAlloc(&g->act[i], act_bytes), "cuMemAlloc", "activations %d, %.1fMiB", i,
           mlp_mib(act_bytes));
    if (!o->gemm && !o->no_tables)
        CK(g->d.MemAlloc(&g->table, o->layers * sizeof(CUdeviceptr)), "cuMemAlloc",
           "weight table, %u entries", o->layers);
    if (o->train)
        CK(g->d.MemAlloc(&g->grad, grad_bytes), "cuMemAlloc", "update matrix G, %.1fMiB",
           mlp_mib(grad_bytes));

    g->weight = calloc(o->layers, sizeof(CUdeviceptr));
    g->alloc = calloc(o->layers, sizeof(CUdeviceptr));
    if (g->weight == NULL || g->alloc == NULL) {
        fprintf(stderr, "mlp: out of host memory\n");
        return MLP_EXIT_HOST;
    }
    if (o->offload != MLP_OFFLOAD_NONE)
        return mlp_offload_open(&g->off, &g->d, o, g->weight);
    if (o->segment_mib != 0)
        return alloc_segments(g);
    if (o->one_buffer) {
        size_t bytes = mlp_layer_offset(o, o->layers) * sizeof(float);

        CK(g->d.MemAlloc(&g->alloc[0], bytes), "cuMemAlloc", "weights of all %u layers, %.1fMiB",
           o->layers, mlp_mib(bytes));
        g->nalloc = 1;
        for (uint32_t l = 0; l < o->layers; l++)
            g->weight[l] = g->alloc[0] + mlp_layer_offset(o, l) * sizeof(float);
    } else {
        for (uint32_t l = 0; l < o->layers; l++) {
            size_t layer_bytes = mlp_layer_floats(o, l) * sizeof(float);

            CK(g->d.MemAlloc(&g->alloc[l], layer_bytes), "cuMemAlloc",
               "weights of layer %u, %.1fMiB", l, mlp_mib(layer_bytes));
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
    if (o->streams == 1) {
        /* A blocking stream (flags 0) is ordered after the legacy default
         * stream's work, in particular the synchronous weight uploads,
         * which may return before a pageable copy has reached the device. */
        CK(g->d.StreamCreate(&g->stream[0], CU_STREAM_DEFAULT), "cuStreamCreate", "flags 0");
    } else {
        /* Non-blocking, as servers make them: mlp_gpu_upload() waits for
         * the legacy stream instead. */
        for (int i = 0; i < 2; i++) {
            CK(g->d.StreamCreate(&g->stream[i], CU_STREAM_NON_BLOCKING), "cuStreamCreate",
               "stream %d, non-blocking", i);
            CK(g->d.EventCreate(&g->done[i], CU_EVENT_DISABLE_TIMING), "cuEventCreate",
               "ordering event %d", i);
        }
    }
    return alloc_buffers(g);
}

/* A kernel of layer `layer`: grid_x covers the layer's output rows. */
static int launch(mlp_gpu_t *g, CUstream s, CUfunction f, const char *name, uint32_t layer,
                  unsigned grid_y, void **params)
{
    unsigned grid_x = (mlp_dim(g->o, layer + 1) + BLOCK - 1) / BLOCK;

    CK(g->d.LaunchKernel(f, grid_x, grid_y, 1, BLOCK, 1, 1, 0, s, params, NULL),
       "cuLaunchKernel", "%s, layer %u", name, layer);
    return MLP_EXIT_MATCH;
}

/* The stream of item k of a step's chain (see the top of the file); with
 * two streams, it first waits for item k - 1. */
static int item_stream(mlp_gpu_t *g, uint32_t k, CUstream *s)
{
    *s = g->stream[k % g->o->streams];
    if (g->o->streams > 1 && k > 0)
        CK(g->d.StreamWaitEvent(*s, g->done[(k - 1) % 2], 0), "cuStreamWaitEvent",
           "item %u waits for item %u", k, k - 1);
    return MLP_EXIT_MATCH;
}

/* With two streams, mark the end of item k for item k + 1. */
static int item_done(mlp_gpu_t *g, uint32_t k, CUstream s)
{
    if (g->o->streams > 1)
        CK(g->d.EventRecord(g->done[k % 2], s), "cuEventRecord", "end of item %u", k);
    return MLP_EXIT_MATCH;
}

/* Layer l's matrix kernel on stream s: its gemv form, or gemm. */
static int enqueue_matrix(mlp_gpu_t *g, uint32_t l, CUstream s)
{
    const mlp_opts_t *o = g->o;
    uint32_t rows = mlp_dim(o, l + 1), cols = mlp_dim(o, l), batch = o->batch;
    CUdeviceptr x = g->act[l % 2], y = g->act[(l + 1) % 2];

    if (o->gemm) {
        void *p[] = {&g->weight[l], &x, &y, &rows, &cols, &batch};

        return launch(g, s, g->gemm, "sg_gemm_f32", l, batch, p);
    }
    if (l % 3 == 0 || o->no_tables) {
        void *p[] = {&g->weight[l], &x, &y, &rows, &cols};

        return launch(g, s, g->gemv, "sg_gemv_f32", l, 1, p);
    }
    if (l % 3 == 1) {
        struct gemv_args a = {g->weight[l], x, y, rows, cols};
        void *p[] = {&a};

        return launch(g, s, g->gemv_struct, "sg_gemv_struct_f32", l, 1, p);
    }
    void *p[] = {&g->table, &l, &x, &y, &rows, &cols};

    return launch(g, s, g->gemv_table, "sg_gemv_table_f32", l, 1, p);
}

/* Layer l's kernels on stream s: its matrix kernel, then relu. */
static int enqueue_layer(mlp_gpu_t *g, uint32_t l, CUstream s)
{
    const mlp_opts_t *o = g->o;
    uint64_t count = mlp_batch_floats(o, l + 1);
    CUdeviceptr y = g->act[(l + 1) % 2];
    void *relu_p[] = {&y, &count};
    int st = enqueue_matrix(g, l, s);

    if (st == 0)
        st = launch(g, s, g->relu, "sg_relu_f32", l, o->batch, relu_p);
    if (st == 0 && g->ws != 0) {
        uint64_t slots = ((uint64_t)o->workspace_mib << 20) / 4096, words = 1024;
        CUdeviceptr at = g->ws + (l % slots) * 4096;
        void *p[] = {&at, &l, &words};

        st = launch(g, s, g->fill, "sg_fill_u32 (workspace)", l, 1, p);
    }
    return st;
}

/* Layer l on stream s, with the ordering of --offload prefetch around it
 * (nothing otherwise). */
static int enqueue_offload_layer(mlp_gpu_t *g, uint32_t l, CUstream s)
{
    int st = mlp_offload_before_layer(g->off, l, s);

    if (st == 0)
        st = enqueue_layer(g, l, s);
    return st != 0 ? st : mlp_offload_after_layer(g->off, l, s);
}

/* --train: layer l's W = MLP_TRAIN_RATE * G + W, in place, on stream s,
 * over the first floats of G that the layer has. */
static int enqueue_update(mlp_gpu_t *g, uint32_t l, CUstream s)
{
    float a = MLP_TRAIN_RATE;
    uint64_t count = mlp_layer_floats(g->o, l);
    void *p[] = {&a, &g->grad, &g->weight[l], &count};
    unsigned grid_x = (unsigned)((count + BLOCK - 1) / BLOCK);

    CK(g->d.LaunchKernel(g->axpy, grid_x, 1, 1, BLOCK, 1, 1, 0, s, p, NULL), "cuLaunchKernel",
       "sg_axpy_f32, update of layer %u", l);
    return MLP_EXIT_MATCH;
}

/* Queue one step's kernels (or record them, under capture): the forward
 * pass, then with --train the updates.  Item k is layer k, then update
 * k - layers.  Everything ends ordered before stream 0's next work. */
static int enqueue_kernels(mlp_gpu_t *g)
{
    const mlp_opts_t *o = g->o;
    uint32_t items = o->train ? 2 * o->layers : o->layers;
    CUstream s = g->stream[0];
    int st;

    if ((st = mlp_offload_step_start(g->off)) != 0)
        return st;
    for (uint32_t k = 0; k < items; k++) {
        if ((st = item_stream(g, k, &s)) != 0)
            return st;
        st = k < o->layers ? enqueue_offload_layer(g, k, s)
                           : enqueue_update(g, k - o->layers, s);
        if (st != 0 || (st = item_done(g, k, s)) != 0)
            return st;
    }
    /* Join the last item back into stream 0: the output copy reads its
     * result, and a capture must end with every stream joined. */
    if (s != g->stream[0])
        CK(g->d.StreamWaitEvent(g->stream[0], g->done[(items - 1) % 2], 0), "cuStreamWaitEvent",
           "stream 0 waits for item %u", items - 1);
    return MLP_EXIT_MATCH;
}

/* What a step's kernels are, for error messages. */
static const char *pass_name(const mlp_gpu_t *g)
{
    return g->o->train ? "forward pass and updates" : "forward pass";
}

/* Record one step's kernels into a graph.  If recording fails, the capture
 * is still ended so the stream is usable (and destroyable) again. */
static int capture(mlp_gpu_t *g)
{
    const char *what = pass_name(g);
    int st;

    CK(g->d.StreamBeginCapture(g->stream[0], CU_STREAM_CAPTURE_MODE_GLOBAL),
       "cuStreamBeginCapture_v2", "%s", what);
    st = enqueue_kernels(g);
    if (st != 0) {
        CUgraph partial = NULL;

        if (g->d.StreamEndCapture(g->stream[0], &partial) == CUDA_SUCCESS && partial != NULL)
            g->d.GraphDestroy(partial);
        return st;
    }
    CK(g->d.StreamEndCapture(g->stream[0], &g->graph), "cuStreamEndCapture", "%s", what);
    CK(g->d.GraphInstantiateWithFlags(&g->exec, g->graph, 0), "cuGraphInstantiateWithFlags",
       "%s", what);
    return MLP_EXIT_MATCH;
}

int mlp_gpu_upload(mlp_gpu_t *g, const float *weights, const float *grad)
{
    const mlp_opts_t *o = g->o;
    int st;

    if (g->off != NULL && (st = mlp_offload_upload(g->off, weights)) != 0)
        return st;
    for (uint32_t l = 0; g->off == NULL && l < o->layers; l++)
        CK(g->d.MemcpyHtoD(g->weight[l], weights + mlp_layer_offset(o, l),
                           mlp_layer_floats(o, l) * sizeof(float)),
           "cuMemcpyHtoD", "weights of layer %u", l);
    /* simgpu reads the table when a table launch is issued (so must a
     * tracker that wants to know what it touches): write it synchronously
     * before the first launch. */
    if (!o->gemm && !o->no_tables)
        CK(g->d.MemcpyHtoD(g->table, g->weight, o->layers * sizeof(CUdeviceptr)), "cuMemcpyHtoD",
           "weight table");
    if (o->train)
        CK(g->d.MemcpyHtoD(g->grad, grad, mlp_max_layer_floats(o, 0) * sizeof(float)),
           "cuMemcpyHtoD", "update matrix G");
    /* --load-pass: each layer's matrix kernel once, in layer order, on the
     * legacy stream after the copies: a pass over the weights at another
     * rhythm than the steps' (one launch a layer instead of two or three),
     * as load-time kernels (initialisation on the device, conversion, a
     * checksum) make before a program's loop. Its outputs are overwritten
     * by the first step's input. */
    for (uint32_t l = 0; o->load_pass && l < o->layers; l++)
        if ((st = enqueue_matrix(g, l, NULL)) != 0)
            return st;
    /* Non-blocking streams are not ordered after the legacy stream, where
     * the synchronous copies above ran. */
    if (o->streams > 1)
        CK(g->d.StreamSynchronize(NULL), "cuStreamSynchronize", "legacy stream, after uploads");
    return o->graph && o->eager_steps == 0 ? capture(g) : MLP_EXIT_MATCH;
}

int mlp_gpu_step(mlp_gpu_t *g, const float *in, float *out)
{
    const mlp_opts_t *o = g->o;
    size_t in_bytes = mlp_batch_floats(o, 0) * sizeof(float);
    size_t out_bytes = mlp_batch_floats(o, o->layers) * sizeof(float);
    uint32_t step = g->steps_done++;
    int st;

    /* The events are made here, not at open, so that the steps before are
     * the very calls of a run without --time (bench-offload relies on it). */
    if (o->timed && step == o->warmup) {
        for (int i = 0; i < 2; i++)
            CK(g->d.EventCreate(&g->mark[i], CU_EVENT_DEFAULT), "cuEventCreate",
               "timing event %d", i);
        CK(g->d.EventRecord(g->mark[0], g->stream[0]), "cuEventRecord", "start of step %u",
           step);
    }
    /* --eager N: the capture comes after N eager steps, each synchronized. */
    bool replay = o->graph && step >= o->eager_steps;
    if (replay && step == o->eager_steps && o->eager_steps != 0 && (st = capture(g)) != 0)
        return st;
    /* With --graph this writes into the buffer the graph captured: the
     * replay reads whatever is there when it runs. */
    CK(g->d.MemcpyHtoDAsync(g->act[0], in, in_bytes, g->stream[0]), "cuMemcpyHtoDAsync",
       "input");
    if (replay)
        CK(g->d.GraphLaunch(g->exec, g->stream[0]), "cuGraphLaunch", "%s", pass_name(g));
    else if ((st = enqueue_kernels(g)) != 0)
        return st;
    /* enqueue_kernels() ended with stream 0 waiting for all of the step's
     * work, so one synchronize of stream 0 covers both streams. */
    CK(g->d.MemcpyDtoHAsync(out, g->act[o->layers % 2], out_bytes, g->stream[0]),
       "cuMemcpyDtoHAsync", "output");
    if (o->timed && step == o->steps - 1)
        CK(g->d.EventRecord(g->mark[1], g->stream[0]), "cuEventRecord", "end of step %u", step);
    CK(g->d.StreamSynchronize(g->stream[0]), "cuStreamSynchronize", "end of step");
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
    for (int i = 0; i < 2; i++) {
        if (g->stream[i] != NULL)
            d->StreamDestroy(g->stream[i]);
        if (g->done[i] != NULL)
            d->EventDestroy(g->done[i]);
        if (g->mark[i] != NULL)
            d->EventDestroy(g->mark[i]);
    }
    mlp_offload_close(g->off);
    for (uint32_t i = 0; i < g->nalloc; i++)
        d->MemFree(g->alloc[i]);
    if (g->table != 0)
        d->MemFree(g->table);
    if (g->grad != 0)
        d->MemFree(g->grad);
    if (g->ws != 0)
        d->MemFree(g->ws);
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

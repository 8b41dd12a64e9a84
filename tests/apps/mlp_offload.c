/*
 * mlp_offload.c: mlp --offload uva|prefetch --resident K, the two ways
 * vLLM offloads a model's weights, written by hand into the program, so
 * that tools/bench-offload can set spillway, which needs no change to the
 * program, beside what an application does for itself.
 *
 * In both, layers 0..K-1 are ordinary cuMemAlloc buffers, one per layer,
 * and every later layer has its own pinned host allocation:
 *
 *   uva       cuMemHostAlloc(DEVICEMAP); the kernels get the device
 *             pointer of cuMemHostGetDevicePointer and read the weights in
 *             place over the link (simgpu charges them as zero-copy reads),
 *             as vLLM's UVA offloader does.
 *   prefetch  cuMemAllocHost, copied a layer ahead into two device buffers
 *             sized for the largest offloaded layer (each copy moves only
 *             its own layer's bytes), as vLLM's prefetch offloader does: the
 *             j-th offloaded layer always uses buffer j % 2, so its weight
 *             address (in launch arguments and in the gemv table) never
 *             changes.  A non-blocking side stream copies layer j + 1 while
 *             layer j computes.  Two orders keep it right: the compute
 *             stream waits for `copied[b]` before a layer reads buffer b,
 *             and the side stream waits for `used[b]`, recorded behind the
 *             last layer that read buffer b, before overwriting it.
 *
 * The arithmetic is the same kernels on the same bytes, so the results are
 * bit for bit those of a plain run.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp_offload.h"

struct mlp_offload {
    const sg_drv_t *d;
    const mlp_opts_t *o;
    uint32_t first;      /* the first offloaded layer: o->resident */
    uint32_t noff;       /* offloaded layers: layers - first */
    CUdeviceptr *dev;    /* `first` entries: resident layers' cuMemAlloc */
    void **host;         /* `noff` entries: offloaded layers' pinned memory */
    CUdeviceptr buf[2];  /* prefetch: offloaded layer j is copied into buf[j % 2] */
    CUstream side;       /* prefetch: where the copies run */
    CUevent copied[2];   /* prefetch: behind the last copy into buf[b] */
    CUevent used[2];     /* prefetch: behind the last layer that read buf[b] */
};

#define CK(expr, call, ...)                                                    \
    do {                                                                       \
        CUresult rc_ = (expr);                                                 \
        if (rc_ != CUDA_SUCCESS)                                               \
            return mlp_cuda_fail(f->d, rc_, call, __VA_ARGS__);                        \
    } while (0)

static bool is_prefetch(const mlp_offload_t *f)
{
    return f != NULL && f->o->offload == MLP_OFFLOAD_PREFETCH && f->noff > 0;
}

static size_t layer_bytes(const mlp_offload_t *f, uint32_t l)
{
    return mlp_layer_floats(f->o, l) * sizeof(float);
}

/* Offloaded layer j's pinned memory, and the address its kernels read. */
static int alloc_host_layer(mlp_offload_t *f, uint32_t j, CUdeviceptr *weight)
{
    uint32_t l = f->first + j;
    size_t bytes = layer_bytes(f, l);

    if (f->o->offload == MLP_OFFLOAD_UVA) {
        CK(f->d->MemHostAlloc(&f->host[j], bytes, CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc",
           "weights of layer %u, %.1fMiB, mapped", l, mlp_mib(bytes));
        CK(f->d->MemHostGetDevicePointer(weight, f->host[j], 0), "cuMemHostGetDevicePointer",
           "weights of layer %u", l);
    } else {
        CK(f->d->MemAllocHost(&f->host[j], bytes), "cuMemAllocHost", "weights of layer %u, %.1fMiB",
           l, mlp_mib(bytes));
        *weight = f->buf[j % 2];
    }
    return MLP_EXIT_MATCH;
}

/* prefetch: the buffers (only as many as there are offloaded layers, at
 * most two, each big enough for the largest of them), the side stream and
 * its events. */
static int open_prefetch(mlp_offload_t *f)
{
    size_t bytes = mlp_max_layer_floats(f->o, f->first) * sizeof(float);

    for (uint32_t b = 0; b < 2 && b < f->noff; b++)
        CK(f->d->MemAlloc(&f->buf[b], bytes), "cuMemAlloc", "prefetch buffer %u, %.1fMiB", b,
           mlp_mib(bytes));
    /* Non-blocking: the copies need no order with the legacy stream (the
     * source is pinned memory the CPU wrote, the buffers are only ever
     * written here), and they must not wait for it. */
    CK(f->d->StreamCreate(&f->side, CU_STREAM_NON_BLOCKING), "cuStreamCreate",
       "prefetch side stream, non-blocking");
    for (int b = 0; b < 2; b++) {
        CK(f->d->EventCreate(&f->copied[b], CU_EVENT_DISABLE_TIMING), "cuEventCreate",
           "prefetch buffer %d copied", b);
        CK(f->d->EventCreate(&f->used[b], CU_EVENT_DISABLE_TIMING), "cuEventCreate",
           "prefetch buffer %d used", b);
    }
    return MLP_EXIT_MATCH;
}

int mlp_offload_open(mlp_offload_t **out, const sg_drv_t *d, const mlp_opts_t *o,
                     CUdeviceptr *weight)
{
    mlp_offload_t *f = calloc(1, sizeof(*f));
    int st;

    *out = f;
    if (f == NULL) {
        fprintf(stderr, "mlp: out of host memory\n");
        return MLP_EXIT_HOST;
    }
    f->d = d;
    f->o = o;
    f->first = o->resident;
    f->noff = o->layers - o->resident;
    f->dev = calloc(f->first + 1, sizeof(CUdeviceptr));
    f->host = calloc(f->noff + 1, sizeof(void *));
    if (f->dev == NULL || f->host == NULL) {
        fprintf(stderr, "mlp: out of host memory\n");
        return MLP_EXIT_HOST;
    }
    /* Device memory first, in the order a plain run allocates it, so that
     * a budget too small for K layers fails on a layer's cuMemAlloc. */
    for (uint32_t l = 0; l < f->first; l++) {
        CK(d->MemAlloc(&f->dev[l], layer_bytes(f, l)), "cuMemAlloc",
           "weights of layer %u, %.1fMiB", l, mlp_mib(layer_bytes(f, l)));
        weight[l] = f->dev[l];
    }
    if (is_prefetch(f) && (st = open_prefetch(f)) != 0)
        return st;
    for (uint32_t j = 0; j < f->noff; j++)
        if ((st = alloc_host_layer(f, j, &weight[f->first + j])) != 0)
            return st;
    return MLP_EXIT_MATCH;
}

int mlp_offload_upload(mlp_offload_t *f, const float *weights)
{
    for (uint32_t l = 0; l < f->first; l++)
        CK(f->d->MemcpyHtoD(f->dev[l], weights + mlp_layer_offset(f->o, l),
                            layer_bytes(f, l)),
           "cuMemcpyHtoD", "weights of layer %u", l);
    /* Pinned memory is the process's own: no queued work reads it yet. */
    for (uint32_t j = 0; j < f->noff; j++)
        memcpy(f->host[j], weights + mlp_layer_offset(f->o, f->first + j),
               layer_bytes(f, f->first + j));
    return MLP_EXIT_MATCH;
}

/* prefetch: copy offloaded layer j into its buffer on the side stream,
 * once the last layer that read that buffer is done with it. */
static int copy_ahead(mlp_offload_t *f, uint32_t j)
{
    uint32_t b = j % 2, l = f->first + j;

    CK(f->d->StreamWaitEvent(f->side, f->used[b], 0), "cuStreamWaitEvent",
       "copy of layer %u waits until buffer %u is read", l, b);
    CK(f->d->MemcpyHtoDAsync(f->buf[b], f->host[j], layer_bytes(f, l), f->side),
       "cuMemcpyHtoDAsync", "prefetch of layer %u into buffer %u", l, b);
    CK(f->d->EventRecord(f->copied[b], f->side), "cuEventRecord", "layer %u copied", l);
    return MLP_EXIT_MATCH;
}

int mlp_offload_step_start(mlp_offload_t *f)
{
    return is_prefetch(f) ? copy_ahead(f, 0) : MLP_EXIT_MATCH;
}

int mlp_offload_before_layer(mlp_offload_t *f, uint32_t l, CUstream s)
{
    uint32_t j;
    int st;

    if (!is_prefetch(f) || l < f->first)
        return MLP_EXIT_MATCH;
    j = l - f->first;
    /* Issued before this layer's wait, so the copy of the next layer runs
     * while this one computes: one layer ahead, no more (two buffers). */
    if (j + 1 < f->noff && (st = copy_ahead(f, j + 1)) != 0)
        return st;
    CK(f->d->StreamWaitEvent(s, f->copied[j % 2], 0), "cuStreamWaitEvent",
       "layer %u waits for its copy into buffer %u", l, j % 2);
    return MLP_EXIT_MATCH;
}

int mlp_offload_after_layer(mlp_offload_t *f, uint32_t l, CUstream s)
{
    uint32_t j;

    if (!is_prefetch(f) || l < f->first)
        return MLP_EXIT_MATCH;
    j = l - f->first;
    CK(f->d->EventRecord(f->used[j % 2], s), "cuEventRecord", "layer %u done with buffer %u", l,
       j % 2);
    return MLP_EXIT_MATCH;
}

void mlp_offload_close(mlp_offload_t *f)
{
    const sg_drv_t *d;

    if (f == NULL)
        return;
    d = f->d;
    /* The stream first: its queued copies read the pinned memory and
     * write the buffers freed below (cuMemFree and cuMemFreeHost
     * synchronize the device anyway). */
    if (f->side != NULL)
        d->StreamDestroy(f->side);
    for (int b = 0; b < 2; b++) {
        if (f->copied[b] != NULL)
            d->EventDestroy(f->copied[b]);
        if (f->used[b] != NULL)
            d->EventDestroy(f->used[b]);
        if (f->buf[b] != 0)
            d->MemFree(f->buf[b]);
    }
    for (uint32_t j = 0; f->host != NULL && j < f->noff; j++)
        if (f->host[j] != NULL)
            d->MemFreeHost(f->host[j]);
    for (uint32_t l = 0; f->dev != NULL && l < f->first; l++)
        if (f->dev[l] != 0)
            d->MemFree(f->dev[l]);
    free(f->host);
    free(f->dev);
    free(f);
}

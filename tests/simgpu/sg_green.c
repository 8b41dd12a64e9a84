/*
 * Green contexts, as far as a program needs them to make streams: a
 * device's SM resource, a descriptor of it, a green context over a
 * descriptor, and a stream in a green context (cuGreenCtxStreamCreate).
 * simgpu runs kernels one at a time, so SMs are not partitioned: a green
 * context is its device with a name, and cuCtxFromGreenCtx answers the
 * device's primary context (the driver answers a context of its own).
 * Its streams are non-blocking streams of the device, whatever context is
 * current, as the driver makes them.
 */
#include "sg.h"

#include <stdlib.h>
#include <string.h>

#define SG_SMS 132 /* an H100 SXM's, as cuDeviceGetAttribute answers */

typedef struct CUdevResourceDesc_st {
    unsigned sms;
    struct CUdevResourceDesc_st *next;
} sg_desc_t;

/* The driver has no call to destroy a descriptor: it keeps them all, and
 * so does simgpu, listed here (under sg_lock). */
static sg_desc_t *descs;

typedef struct CUgreenCtx_st {
    CUdevice dev;
    unsigned sms;
} sg_green_t;

SG_EXPORT CUresult cuDeviceGetDevResource(CUdevice dev, CUdevResource *res, CUdevResourceType type)
{
    SG_ENTER(cuDeviceGetDevResource, API);
    if (!sg_device_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (!res || type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    memset(res, 0, sizeof *res);
    res->type = CU_DEV_RESOURCE_TYPE_SM;
    res->sm.smCount = SG_SMS;
    res->sm.minSmPartitionSize = 2;
    res->sm.smCoscheduledAlignment = 2;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDevResourceGenerateDesc(CUdevResourceDesc *out, CUdevResource *res, unsigned n)
{
    SG_ENTER(cuDevResourceGenerateDesc, API);
    if (!out || !res || n != 1 || res->type != CU_DEV_RESOURCE_TYPE_SM || res->sm.smCount == 0)
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    sg_desc_t *d = malloc(sizeof *d);
    if (!d)
        return CUDA_ERROR_OUT_OF_MEMORY;
    d->sms = res->sm.smCount;
    sg_lock();
    d->next = descs;
    descs = d;
    sg_unlock();
    *out = d;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGreenCtxCreate(CUgreenCtx *out, CUdevResourceDesc desc, CUdevice dev, unsigned flags)
{
    SG_ENTER(cuGreenCtxCreate, API);
    if (!out || !desc || flags != CU_GREEN_CTX_DEFAULT_STREAM)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sg_device_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    sg_green_t *g = malloc(sizeof *g);
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *g = (sg_green_t){.dev = dev, .sms = desc->sms};
    sg_lock();
    sg_handle_add(g, SG_H_GREEN);
    sg_unlock();
    *out = g;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx g)
{
    SG_ENTER(cuGreenCtxDestroy, API);
    sg_lock();
    bool ok = sg_handle_kind(g) == SG_H_GREEN;
    if (ok)
        sg_handle_del(g);
    sg_unlock();
    if (!ok)
        return CUDA_ERROR_INVALID_CONTEXT;
    free(g);
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxFromGreenCtx(CUcontext *ctx, CUgreenCtx g)
{
    SG_ENTER(cuCtxFromGreenCtx, API);
    if (!ctx)
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    bool ok = sg_handle_kind(g) == SG_H_GREEN;
    sg_unlock();
    if (!ok)
        return CUDA_ERROR_INVALID_CONTEXT;
    *ctx = sg_primary_ctx(g->dev);
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGreenCtxStreamCreate(CUstream *ph, CUgreenCtx g, unsigned flags, int priority)
{
    SG_ENTER(cuGreenCtxStreamCreate, API);
    if (!ph || flags != CU_STREAM_NON_BLOCKING)
        return CUDA_ERROR_INVALID_VALUE;
    priority = priority < -5 ? -5 : priority > 0 ? 0 : priority;
    sg_lock();
    CUresult r = sg_handle_kind(g) == SG_H_GREEN ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    sg_stream_t *s = NULL;
    if (r == CUDA_SUCCESS)
        r = sg_stream_create(flags, priority, &s);
    if (r == CUDA_SUCCESS)
        s->device = g->dev;
    sg_unlock();
    if (r == CUDA_SUCCESS)
        *ph = (CUstream)s;
    return r;
}

/*
 * Start-up, the device, contexts, errors, allocations and pointer queries.
 *
 * One simulated device (ordinal 0) with one primary context. Calls that
 * need a context (allocations, launches, copies, stream creation) fail
 * with CUDA_ERROR_INVALID_CONTEXT on a thread without a current one, as
 * the driver does: an interposer's own worker threads must set it.
 * VMM calls are device-level and need none.
 */
#include "sg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int primary_ctx_object; /* its address is the CUcontext */
#define PRIMARY ((CUcontext)&primary_ctx_object)
static __thread CUcontext current_ctx;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CUresult init_result;

CUresult sg_need_ctx(void)
{
    return current_ctx == PRIMARY ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static void at_exit(void)
{
    /* A fork child has no device: the report is the parent's to write. */
    if (sg_forked())
        return;
    sg_lock();
    if (SG->sticky == CUDA_SUCCESS)
        sg_ctx_sync();
    sg_unlock();
    sg_report_write();
}

static void init(void)
{
    init_result = sg_mem_init();
    if (init_result == CUDA_SUCCESS) {
        atexit(at_exit);
        sg_fork_model();
    }
}

SG_EXPORT CUresult cuInit(unsigned int flags)
{
    SG_ENTER(cuInit, API);
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_once(&init_once, init);
    sg_lock();
    SG->initialized = init_result == CUDA_SUCCESS;
    sg_unlock();
    return init_result;
}

SG_EXPORT CUresult cuDriverGetVersion(int *driverVersion)
{
    SG_ENTER(cuDriverGetVersion, API);
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = 13000;
    return CUDA_SUCCESS;
}

/* ---- device ---- */

SG_EXPORT CUresult cuDeviceGetCount(int *count)
{
    SG_ENTER(cuDeviceGetCount, API);
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = 1;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    SG_ENTER(cuDeviceGet, API);
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    SG_ENTER(cuDeviceGetName, API);
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "simgpu (simulated H100)");
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    SG_ENTER(cuDeviceTotalMem, API);
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = SG->cfg.mem;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    SG_ENTER(cuDeviceGetAttribute, API);
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *pi = 1; break;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
        *pi = SG->cfg.host_numa_vmm;
        break;
    case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *pi = SG->cfg.host_vmm; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *pi = 1; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *pi = 1; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = 132; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *pi = 32; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *pi = 2; break;
    default: *pi = 0; break;
    }
    return CUDA_SUCCESS;
}

/* ---- the primary context ---- */

SG_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    SG_ENTER(cuDevicePrimaryCtxRetain, API);
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    sg_lock();
    SG->ctx_refs++;
    sg_unlock();
    *pctx = PRIMARY;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    SG_ENTER(cuDevicePrimaryCtxRelease, API);
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    sg_lock();
    CUresult r = SG->ctx_refs > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    if (SG->ctx_refs > 0)
        SG->ctx_refs--;
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    SG_ENTER(cuDevicePrimaryCtxGetState, API);
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    sg_lock();
    *active = SG->ctx_refs > 0;
    sg_unlock();
    *flags = 0;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    SG_ENTER(cuCtxSetCurrent, API);
    if (ctx && ctx != PRIMARY)
        return CUDA_ERROR_INVALID_CONTEXT;
    current_ctx = ctx;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    SG_ENTER(cuCtxGetCurrent, API);
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = current_ctx;
    return CUDA_SUCCESS;
}

/* A one-deep stack is enough for one context. */
SG_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    SG_ENTER(cuCtxPushCurrent, API);
    if (ctx != PRIMARY)
        return CUDA_ERROR_INVALID_CONTEXT;
    current_ctx = ctx;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    SG_ENTER(cuCtxPopCurrent, API);
    if (!current_ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (pctx)
        *pctx = current_ctx;
    current_ctx = NULL;
    return CUDA_SUCCESS;
}

static CUresult ctx_device(CUdevice *device, CUcontext ctx)
{
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx != PRIMARY)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = 0;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    SG_ENTER(cuCtxGetDevice, API);
    return ctx_device(device, current_ctx);
}

SG_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    SG_ENTER(cuCtxGetDevice, API);
    return ctx_device(device, ctx ? ctx : current_ctx);
}

static CUresult ctx_sync(CUcontext ctx)
{
    if (ctx != PRIMARY)
        return CUDA_ERROR_INVALID_CONTEXT;
    sg_lock();
    CUresult r = sg_capture_guard(NULL);
    if (r == CUDA_SUCCESS)
        r = sg_ctx_sync();
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuCtxSynchronize(void)
{
    SG_ENTER(cuCtxSynchronize, API);
    return ctx_sync(current_ctx);
}

SG_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    SG_ENTER(cuCtxSynchronize, API);
    return ctx_sync(ctx ? ctx : current_ctx);
}

/* ---- errors ---- */

typedef struct {
    CUresult code;
    const char *name, *text;
} err_t;

#define E(c, t) {c, #c, t}
static const err_t errors[] = {
    E(CUDA_SUCCESS, "no error"),
    E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    E(CUDA_ERROR_NOT_READY, "device not ready"),
    E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"),
    E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    E(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"),
    E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
      "operation failed due to a previous error during capture"),
    E(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef E

static const err_t *err_find(CUresult e)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == e)
            return &errors[i];
    return NULL;
}

SG_EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    SG_ENTER(cuGetErrorName, FREE);
    const err_t *e = err_find(error);
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = e ? e->name : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SG_EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    SG_ENTER(cuGetErrorString, FREE);
    const err_t *e = err_find(error);
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = e ? e->text : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

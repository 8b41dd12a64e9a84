/*
 * Start-up, the device, contexts, errors, allocations and pointer queries.
 *
 * SIMGPU_DEVICES simulated devices (1 unless set), each with one primary
 * context. They share one memory, one address space and one set of
 * engines; what tells them apart is the current context's device and the
 * device an allocation was made on (cuPointerGetAttribute's
 * DEVICE_ORDINAL). Calls that
 * need a context (allocations, launches, copies, stream creation) fail
 * with CUDA_ERROR_INVALID_CONTEXT on a thread without a current one, as
 * the driver does: an interposer's own worker threads must set it.
 * VMM calls are device-level and need none.
 */
#include "sg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int primary_ctx_objects[SG_MAX_DEVICES]; /* their addresses are the CUcontexts */
static __thread CUcontext current_ctx;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CUresult init_result;

bool sg_device_ok(CUdevice dev)
{
    return dev >= 0 && (uint64_t)dev < SG->cfg.devices;
}

CUcontext sg_primary_ctx(CUdevice dev)
{
    return (CUcontext)&primary_ctx_objects[dev];
}

int sg_ctx_device(CUcontext ctx)
{
    for (int d = 0; d < SG_MAX_DEVICES && sg_device_ok(d); d++)
        if (ctx == sg_primary_ctx(d))
            return d;
    return -1;
}

int sg_current_device(void)
{
    return sg_ctx_device(current_ctx);
}

bool sg_other_device(int a, int b)
{
    return a >= 0 && b >= 0 && a != b;
}

CUcontext sg_current_ctx(void)
{
    return current_ctx;
}

CUresult sg_need_ctx(void)
{
    return sg_ctx_device(current_ctx) >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
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
    *driverVersion = SG_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

/* ---- device ---- */

SG_EXPORT CUresult cuDeviceGetCount(int *count)
{
    SG_ENTER(cuDeviceGetCount, API);
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = (int)SG->cfg.devices;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    SG_ENTER(cuDeviceGet, API);
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sg_device_ok(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    SG_ENTER(cuDeviceGetName, API);
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sg_device_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "simgpu (simulated H100)");
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    SG_ENTER(cuDeviceTotalMem, API);
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sg_device_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = SG->cfg.mem;
    return CUDA_SUCCESS;
}

/* An H100 SXM5 80GB's values (CUDA 13 deviceQuery and the CUDA C
 * Programming Guide's compute capability 9.0 table), for every attribute
 * the runtime reads while it starts (traced: docs/gpu-facts.md). A zero
 * where a real GPU has a limit misleads libraries: cuBLAS loops forever
 * with MAX_GRID_DIM_Z = 0. Attributes not listed read 0 ("not
 * supported"). */
static int h100_attribute(CUdevice_attribute a)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: return 1;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 132;
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: return 0;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: return 0;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: return CU_COMPUTEMODE_DEFAULT;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH: return 131072;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH: return 131072;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH: return 16384;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT: return 16384;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH: return 16384;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS: return 2048;
    case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 0x18;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: return 0;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 52428800;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 2;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS: return 2048;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE: return 8192;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE: return 8192;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE: return 32768;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: return 32;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS: return 2046;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH: return 131072;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH: return 16384;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT: return 16384;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH: return 16384;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS: return 2048;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS: return 2048;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS: return 2046;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH: return 131072;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT: return 65000;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH: return 2097120;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT: return 32768;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 233472;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: return 0;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: return 2;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: return 0;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: return 1;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 232448;
    case CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES: return 0;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES: return 0;
    case CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST: return 0;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
    case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: return 82944000;
    case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: return 134213632;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS: return 1;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING: return 0;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
        return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR: return 1;
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT: return 4;
    case CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS: return 1;
    case CU_DEVICE_ATTRIBUTE_NUMA_CONFIG: return CU_DEVICE_NUMA_CONFIG_NONE;
    case CU_DEVICE_ATTRIBUTE_NUMA_ID: return -1;
    case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_MPS_ENABLED: return 0;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: return 0;
    /* PCI device 0x2330 (H100 SXM5 80GB), subsystem 0x16C1, vendor 0x10DE. */
    case CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID: return 0x233010DE;
    case CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID: return 0x16C110DE;
    default: return 0;
    }
}

int sg_device_attribute(CUdevice_attribute attrib)
{
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
        return SG->cfg.host_numa_vmm;
    case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return SG->cfg.host_vmm;
    default: return h100_attribute(attrib);
    }
}

SG_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    SG_ENTER(cuDeviceGetAttribute, API);
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sg_device_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *pi = sg_device_attribute(attrib);
    return CUDA_SUCCESS;
}

/* One fixed UUID per device (byte 14 is the ordinal): the runtime reads
 * it at start-up (its integrity answer includes it) and reports it as
 * cudaDeviceProp::uuid. */
static const CUuuid device_uuid = {{'s', 'i', 'm', 'g', 'p', 'u', '-', 'H', '1', '0', '0', 0, 0, 0,
                                    0, 1}};

CUuuid sg_device_uuid(CUdevice dev)
{
    CUuuid u = device_uuid;
    u.bytes[14] = (char)dev;
    return u;
}

static CUresult get_uuid(CUuuid *uuid, CUdevice dev)
{
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sg_device_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *uuid = sg_device_uuid(dev);
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    SG_ENTER(cuDeviceGetUuid, API);
    return get_uuid(uuid, dev);
}

SG_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    SG_ENTER(cuDeviceGetUuid, API);
    return get_uuid(uuid, dev);
}

/* Lazy loading is the CUDA 12.2+ default; simgpu's images hold no code to
 * load, so both modes behave alike here. */
SG_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
    SG_ENTER(cuModuleGetLoadingMode, API);
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    *mode = CU_MODULE_LAZY_LOADING;
    return CUDA_SUCCESS;
}

/* ---- the primary context ---- */

SG_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    SG_ENTER(cuDevicePrimaryCtxRetain, API);
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sg_device_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    sg_lock();
    SG->ctx_refs[dev]++;
    sg_unlock();
    *pctx = sg_primary_ctx(dev);
    return CUDA_SUCCESS;
}

static CUresult primary_release(CUdevice dev)
{
    if (!sg_device_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    sg_lock();
    CUresult r = SG->ctx_refs[dev] > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    if (SG->ctx_refs[dev] > 0)
        SG->ctx_refs[dev]--;
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    SG_ENTER(cuDevicePrimaryCtxRelease, API);
    return primary_release(dev);
}

/* The version-7000 entry point the runtime asks for by that number. */
SG_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    SG_ENTER(cuDevicePrimaryCtxRelease, API);
    return primary_release(dev);
}

SG_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    SG_ENTER(cuDevicePrimaryCtxGetState, API);
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sg_device_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    sg_lock();
    *active = SG->ctx_refs[dev] > 0;
    sg_unlock();
    *flags = 0;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    SG_ENTER(cuCtxSetCurrent, API);
    if (ctx && sg_ctx_device(ctx) < 0)
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
    if (sg_ctx_device(ctx) < 0)
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
    if (sg_ctx_device(ctx) < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = sg_ctx_device(ctx);
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

/* Contexts made with the 3.2+ API report 3020. */
SG_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    SG_ENTER(cuCtxGetApiVersion, API);
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    if (sg_ctx_device(ctx ? ctx : current_ctx) < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    *version = 3020;
    return CUDA_SUCCESS;
}

static CUresult ctx_sync(CUcontext ctx)
{
    if (sg_ctx_device(ctx) < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    sg_lock();
    CUresult r = sg_capture_guard(NULL);
    /* One device alone waits for everything, as it always did; with
     * several, a context waits for its own device's streams only, so a
     * caller that synchronizes the wrong context is caught. */
    if (r == CUDA_SUCCESS)
        r = SG->cfg.devices > 1 ? sg_ctx_sync_device(sg_ctx_device(ctx)) : sg_ctx_sync();
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

/* ---- peer access ----
 * Any two distinct devices can reach each other's memory once the
 * reaching context enables it; a kernel that reaches another device's
 * cuMemAlloc memory without it faults (sg_mem_reachable). */

SG_EXPORT CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    SG_ENTER(cuDeviceCanAccessPeer, API);
    if (!canAccessPeer)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sg_device_ok(dev) || !sg_device_ok(peerDev))
        return CUDA_ERROR_INVALID_DEVICE;
    *canAccessPeer = dev != peerDev;
    return CUDA_SUCCESS;
}

/* Enables (on) or disables peer access from the current context's device
 * to peer's, with the driver's errors. */
static CUresult peer_access(CUcontext peer, bool on)
{
    int me = sg_ctx_device(current_ctx), p = sg_ctx_device(peer);
    if (me < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (p < 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (p == me)
        return CUDA_ERROR_INVALID_DEVICE;
    unsigned bit = 1u << p;
    bool was = sg_peer_mask(me) & bit;
    if (on && was)
        return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    if (!on && !was)
        return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    if (on)
        __atomic_or_fetch(&SG->peer[me], bit, __ATOMIC_RELEASE);
    else
        __atomic_and_fetch(&SG->peer[me], ~bit, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    SG_ENTER(cuCtxEnablePeerAccess, API);
    return Flags ? CUDA_ERROR_INVALID_VALUE : peer_access(peerContext, true);
}

SG_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
    SG_ENTER(cuCtxDisablePeerAccess, API);
    return peer_access(peerContext, false);
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

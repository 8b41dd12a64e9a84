/*
 * drv.h: one table of CUDA driver entry points for the test programs.
 *
 * Applications reach the driver in two ways, and spillway must see both:
 *
 *   linked     the program is linked with -lcuda and calls exported
 *              symbols (cuMemAlloc_v2, cuLaunchKernel, ...), as Triton's
 *              launcher does;
 *   loader     the program dlopen()s libcuda.so.1, does exactly one
 *              dlsym(h, "cuGetProcAddress_v2") and fetches every other entry
 *              point through it with an explicit version and flags, as the
 *              CUDA runtime and cuBLAS do.
 *
 * The table below is written once.  Each row names the field, the PFN type
 * of the exact ABI variant (from cudaTypedefs.h), the base symbol, and the
 * version and flags the runtime asks for (cuda-facts.md, section 1).  The
 * base symbol is used in two ways: stringified, it is what the loader asks
 * cuGetProcAddress_v2 for; expanded, cuda.h's own macros turn it into the
 * symbol an ordinary linked program calls (cuMemAlloc -> cuMemAlloc_v2), so
 * the compiler checks that both routes yield the same ABI.
 *
 * Field names drop the "cu" prefix so that cuda.h's renaming macros never
 * touch them.
 */
#ifndef SG_APPS_DRV_H
#define SG_APPS_DRV_H

#include <stddef.h>
#include <cuda.h>
#include <cudaTypedefs.h>

/* X(field, PFN type, base symbol, cudaVersion, flags): reachable both ways. */
#define SG_DRV_CORE(X)                                                         \
    X(Init, PFN_cuInit_v2000, cuInit, 2000, 0)                                 \
    X(DeviceGet, PFN_cuDeviceGet_v2000, cuDeviceGet, 2000, 0)                  \
    X(DevicePrimaryCtxRetain, PFN_cuDevicePrimaryCtxRetain_v7000,              \
      cuDevicePrimaryCtxRetain, 7000, 0)                                       \
    X(DevicePrimaryCtxRelease, PFN_cuDevicePrimaryCtxRelease_v11000,           \
      cuDevicePrimaryCtxRelease, 11000, 0)                                     \
    X(CtxSetCurrent, PFN_cuCtxSetCurrent_v4000, cuCtxSetCurrent, 4000, 0)      \
    X(GetErrorName, PFN_cuGetErrorName_v6000, cuGetErrorName, 6000, 0)         \
    X(ModuleLoadData, PFN_cuModuleLoadData_v2000, cuModuleLoadData, 2000, 0)   \
    X(ModuleGetFunction, PFN_cuModuleGetFunction_v2000, cuModuleGetFunction,   \
      2000, 0)                                                                 \
    X(ModuleUnload, PFN_cuModuleUnload_v2000, cuModuleUnload, 2000, 0)         \
    X(MemAlloc, PFN_cuMemAlloc_v3020, cuMemAlloc, 3020, 0)                     \
    X(MemFree, PFN_cuMemFree_v3020, cuMemFree, 3020, 0)                        \
    X(MemcpyHtoD, PFN_cuMemcpyHtoD_v3020, cuMemcpyHtoD, 3020, 0)               \
    X(MemcpyDtoH, PFN_cuMemcpyDtoH_v3020, cuMemcpyDtoH, 3020, 0)               \
    X(MemcpyHtoDAsync, PFN_cuMemcpyHtoDAsync_v3020, cuMemcpyHtoDAsync, 3020, 0)\
    X(MemcpyDtoHAsync, PFN_cuMemcpyDtoHAsync_v3020, cuMemcpyDtoHAsync, 3020, 0)\
    X(StreamCreate, PFN_cuStreamCreate_v2000, cuStreamCreate, 2000, 0)         \
    X(StreamDestroy, PFN_cuStreamDestroy_v4000, cuStreamDestroy, 4000, 0)      \
    X(StreamSynchronize, PFN_cuStreamSynchronize_v2000, cuStreamSynchronize,   \
      2000, 0)                                                                 \
    X(StreamWaitEvent, PFN_cuStreamWaitEvent_v3020, cuStreamWaitEvent, 3020, 0)\
    X(LaunchKernel, PFN_cuLaunchKernel_v4000, cuLaunchKernel, 4000, 0)         \
    X(StreamBeginCapture, PFN_cuStreamBeginCapture_v10010,                     \
      cuStreamBeginCapture, 10010, 0)                                          \
    X(StreamEndCapture, PFN_cuStreamEndCapture_v10000, cuStreamEndCapture,     \
      10000, 0)                                                                \
    X(GraphInstantiateWithFlags, PFN_cuGraphInstantiateWithFlags_v11040,       \
      cuGraphInstantiateWithFlags, 11040, 0)                                   \
    X(GraphLaunch, PFN_cuGraphLaunch_v10000, cuGraphLaunch, 10000, 0)          \
    X(GraphExecDestroy, PFN_cuGraphExecDestroy_v10000, cuGraphExecDestroy,     \
      10000, 0)                                                                \
    X(GraphDestroy, PFN_cuGraphDestroy_v10000, cuGraphDestroy, 10000, 0)       \
    X(EventCreate, PFN_cuEventCreate_v2000, cuEventCreate, 2000, 0)            \
    X(EventRecord, PFN_cuEventRecord_v2000, cuEventRecord, 2000, 0)            \
    X(EventSynchronize, PFN_cuEventSynchronize_v2000, cuEventSynchronize,      \
      2000, 0)                                                                 \
    X(EventElapsedTime, PFN_cuEventElapsedTime_v12080, cuEventElapsedTime,     \
      12080, 0)                                                                \
    X(EventDestroy, PFN_cuEventDestroy_v4000, cuEventDestroy, 4000, 0)         \
    X(CtxSynchronize, PFN_cuCtxSynchronize_v2000, cuCtxSynchronize, 2000, 0)   \
    X(MemcpyDtoD, PFN_cuMemcpyDtoD_v3020, cuMemcpyDtoD, 3020, 0)               \
    X(MemcpyDtoDAsync, PFN_cuMemcpyDtoDAsync_v3020, cuMemcpyDtoDAsync, 3020, 0)\
    X(MemsetD8, PFN_cuMemsetD8_v3020, cuMemsetD8, 3020, 0)                     \
    X(MemsetD32, PFN_cuMemsetD32_v3020, cuMemsetD32, 3020, 0)                  \
    X(MemsetD8Async, PFN_cuMemsetD8Async_v3020, cuMemsetD8Async, 3020, 0)      \
    X(MemsetD32Async, PFN_cuMemsetD32Async_v3020, cuMemsetD32Async, 3020, 0)   \
    X(MemAllocHost, PFN_cuMemAllocHost_v3020, cuMemAllocHost, 3020, 0)         \
    X(MemFreeHost, PFN_cuMemFreeHost_v2000, cuMemFreeHost, 2000, 0)            \
    X(MemGetAddressRange, PFN_cuMemGetAddressRange_v3020, cuMemGetAddressRange,\
      3020, 0)                                                                 \
    X(PointerGetAttribute, PFN_cuPointerGetAttribute_v4000,                    \
      cuPointerGetAttribute, 4000, 0)

/*
 * Reachable through the loader only: per-thread-default-stream variants
 * (flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, which the
 * runtime passes when built with --default-stream per-thread) and the
 * CUDA 12 library/kernel API that the runtime uses for its own kernels.
 */
#define SG_DRV_EXTRA(X)                                                        \
    X(LaunchKernel_ptsz, PFN_cuLaunchKernel_v7000_ptsz, cuLaunchKernel, 7000,  \
      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)                           \
    X(LaunchKernelEx, PFN_cuLaunchKernelEx_v11060, cuLaunchKernelEx, 11060, 0) \
    X(LaunchKernelEx_ptsz, PFN_cuLaunchKernelEx_v11060_ptsz, cuLaunchKernelEx, \
      11060, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)                    \
    X(MemcpyHtoD_ptds, PFN_cuMemcpyHtoD_v7000_ptds, cuMemcpyHtoD, 7000,        \
      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)                           \
    X(MemcpyDtoH_ptds, PFN_cuMemcpyDtoH_v7000_ptds, cuMemcpyDtoH, 7000,        \
      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)                           \
    X(LibraryLoadData, PFN_cuLibraryLoadData_v12000, cuLibraryLoadData, 12000, \
      0)                                                                       \
    X(LibraryGetKernel, PFN_cuLibraryGetKernel_v12000, cuLibraryGetKernel,     \
      12000, 0)                                                                \
    X(LibraryUnload, PFN_cuLibraryUnload_v12000, cuLibraryUnload, 12000, 0)    \
    X(KernelGetFunction, PFN_cuKernelGetFunction_v12000, cuKernelGetFunction,  \
      12000, 0)                                                                \
    X(KernelGetParamInfo, PFN_cuKernelGetParamInfo_v12040,                     \
      cuKernelGetParamInfo, 12040, 0)                                          \
    X(FuncGetParamInfo, PFN_cuFuncGetParamInfo_v12040, cuFuncGetParamInfo,     \
      12040, 0)

/*
 * Mapped pinned host memory, for mlp --offload only: resolved on request
 * (sg_drv_link_host(), sg_drv_load_host()), so that the other programs'
 * sequences of driver calls stay as they were.
 */
#define SG_DRV_HOST(X)                                                         \
    X(MemHostAlloc, PFN_cuMemHostAlloc_v2020, cuMemHostAlloc, 2020, 0)         \
    X(MemHostGetDevicePointer, PFN_cuMemHostGetDevicePointer_v3020,            \
      cuMemHostGetDevicePointer, 3020, 0)

#define SG_DRV_FIELD(field, pfn, sym, version, flags) pfn field;

typedef struct sg_drv {
    /* Loader route only: the handle and the two cuGetProcAddress variants
     * that the runtime asks for first (v11030 has 4 arguments, v12000 adds
     * the symbol status).  NULL on the linked route. */
    void *handle;
    PFN_cuGetProcAddress_v11030 GetProcAddress_v11030;
    PFN_cuGetProcAddress_v12000 GetProcAddress_v12000;
    SG_DRV_CORE(SG_DRV_FIELD)
    SG_DRV_EXTRA(SG_DRV_FIELD) /* NULL until sg_drv_load_extra() */
    SG_DRV_HOST(SG_DRV_FIELD)  /* NULL until sg_drv_link_host() or sg_drv_load_host() */
} sg_drv_t;

/* Where resolution failed, for the caller's error line. */
typedef struct sg_drv_err {
    const char *call;  /* the call that failed, e.g. "cuGetProcAddress_v2" */
    char what[128];    /* its arguments, e.g. "cuMemAlloc, 3020, flags 0" */
} sg_drv_err_t;

/* drv_link.c: fill the core entries with the linked symbols.  Can't fail. */
void sg_drv_link(sg_drv_t *d);

/* drv_link.c: the same for the mapped-host entries.  Can't fail. */
void sg_drv_link_host(sg_drv_t *d);

/*
 * drv_load.c: dlopen("libcuda.so.1"), one dlsym of cuGetProcAddress_v2, the
 * runtime's first requests ("" 0, cuInit 2000, cuGetProcAddress 11030 and
 * 12000), then the core entries through the v12000 pointer.  Returns
 * CUDA_SUCCESS, or an error with *err saying which request failed (a
 * dlopen/dlsym failure reads CUDA_ERROR_NOT_FOUND; a lookup that returns
 * success without a function does too).  The library stays loaded on
 * failure: like the runtime, nothing here ever dlclose()s the driver.
 */
CUresult sg_drv_load(sg_drv_t *d, sg_drv_err_t *err);

/* drv_load.c: the extra entries, through the same pointer.  Call after a
 * successful sg_drv_load(); failure reported as there. */
CUresult sg_drv_load_extra(sg_drv_t *d, sg_drv_err_t *err);

/* drv_load.c: the mapped-host entries, likewise. */
CUresult sg_drv_load_host(sg_drv_t *d, sg_drv_err_t *err);

/*
 * drv_load.c: the name of rc ("CUDA_ERROR_OUT_OF_MEMORY") through the
 * table's cuGetErrorName when it is there and knows rc, otherwise
 * "CUresult <n>" written into buf.  Never NULL.
 */
const char *sg_drv_errname(const sg_drv_t *d, CUresult rc, char *buf, size_t len);

#endif

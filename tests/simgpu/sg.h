/*
 * simgpu internal header. One header for all of simgpu; prototypes are
 * grouped under the file that defines them.
 *
 * simgpu is a stand-in for libcuda.so.1 (see README.md beside this file).
 * Its three moving parts:
 *
 *   API calls ──► sg_enter(): init, call count, fault injection, sticky
 *        │                    error, host clock
 *        ▼
 *   enqueue ──► op on a stream queue ──► stream worker thread runs it
 *   (virtual time is fixed here)          (validates ranges, faults, runs)
 *
 *   memory: device addresses live in a PROT_NONE region; each mapping's
 *   bytes are a window of one memfd ("physical memory"), mapped into a
 *   shadow region at the same offset, where only simgpu touches them.
 */
#ifndef SG_H
#define SG_H

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SG_EXPORT __attribute__((visibility("default")))

/* Declares the per-thread default stream twin of an exported entry point;
 * cuda.h only declares the names it maps to. */
#define SG_PT_DECL(ret, name, params) SG_EXPORT ret name params;

/* ---- per-thread default stream twins (cuda.h declares only the names
 * it maps to) ---- */
SG_PT_DECL(CUresult, cuMemAllocAsync_ptsz, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream))
SG_PT_DECL(CUresult, cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream))
SG_PT_DECL(CUresult, cuStreamBeginCapture_v2_ptsz, (CUstream hStream, CUstreamCaptureMode mode))
SG_PT_DECL(CUresult, cuStreamBeginCapture_ptsz, (CUstream hStream))
SG_PT_DECL(CUresult, cuStreamEndCapture_ptsz, (CUstream hStream, CUgraph *phGraph))
SG_PT_DECL(CUresult, cuStreamIsCapturing_ptsz, (CUstream hStream, CUstreamCaptureStatus *captureStatus))
SG_PT_DECL(CUresult, cuStreamGetCaptureInfo_ptsz, (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out))
SG_PT_DECL(CUresult, cuStreamGetCaptureInfo_v2_ptsz, (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out))
SG_PT_DECL(CUresult, cuStreamGetCaptureInfo_v3_ptsz, (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode **dependencies_out, const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out))
SG_PT_DECL(CUresult, cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream))
SG_PT_DECL(CUresult, cuMemcpyHtoD_v2_ptds, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount))
SG_PT_DECL(CUresult, cuMemcpyDtoH_v2_ptds, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount))
SG_PT_DECL(CUresult, cuMemcpyDtoD_v2_ptds, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount))
SG_PT_DECL(CUresult, cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount))
SG_PT_DECL(CUresult, cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream))
SG_PT_DECL(CUresult, cuMemcpyDtoHAsync_v2_ptsz, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream))
SG_PT_DECL(CUresult, cuMemcpyDtoDAsync_v2_ptsz, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream))
SG_PT_DECL(CUresult, cuMemcpyAsync_ptsz, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream))
SG_PT_DECL(CUresult, cuMemsetD8_v2_ptds, (CUdeviceptr dstDevice, unsigned char uc, size_t N))
SG_PT_DECL(CUresult, cuMemsetD32_v2_ptds, (CUdeviceptr dstDevice, unsigned int ui, size_t N))
SG_PT_DECL(CUresult, cuMemsetD16_v2_ptds, (CUdeviceptr dstDevice, unsigned short us, size_t N))
SG_PT_DECL(CUresult, cuMemsetD8Async_ptsz, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream))
SG_PT_DECL(CUresult, cuMemsetD32Async_ptsz, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream))
SG_PT_DECL(CUresult, cuMemsetD16Async_ptsz, (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream))
SG_PT_DECL(CUresult, cuStreamQuery_ptsz, (CUstream hStream))
SG_PT_DECL(CUresult, cuStreamSynchronize_ptsz, (CUstream hStream))
SG_PT_DECL(CUresult, cuStreamWaitEvent_ptsz, (CUstream hStream, CUevent hEvent, unsigned int Flags))
SG_PT_DECL(CUresult, cuStreamGetPriority_ptsz, (CUstream hStream, int *priority))
SG_PT_DECL(CUresult, cuStreamGetFlags_ptsz, (CUstream hStream, unsigned int *flags))
SG_PT_DECL(CUresult, cuLaunchHostFunc_ptsz, (CUstream hStream, CUhostFn fn, void *userData))
SG_PT_DECL(CUresult, cuEventRecord_ptsz, (CUevent hEvent, CUstream hStream))
SG_PT_DECL(CUresult, cuLaunchKernel_ptsz, (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra))
SG_PT_DECL(CUresult, cuLaunchCooperativeKernel_ptsz, (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams))
SG_PT_DECL(CUresult, cuLaunchKernelEx_ptsz, (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra))
CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize);
CUresult sg_need_ctx(void);

/* ---- the function list ---------------------------------------------------
 * One line per driver function simgpu implements, by base name (the name
 * cuGetProcAddress is asked for). It generates the call counters, the
 * fault-injection table and the report's "calls" object.
 * X(name, natural error when SIMGPU_FAIL hits it, host cost class) */
#define SG_FUNCS(X)                                                          \
    X(cuInit, CUDA_ERROR_UNKNOWN, API)                                       \
    X(cuDriverGetVersion, CUDA_ERROR_UNKNOWN, API)                           \
    X(cuDeviceGet, CUDA_ERROR_INVALID_DEVICE, API)                           \
    X(cuDeviceGetCount, CUDA_ERROR_UNKNOWN, API)                             \
    X(cuDeviceGetName, CUDA_ERROR_UNKNOWN, API)                              \
    X(cuDeviceTotalMem, CUDA_ERROR_UNKNOWN, API)                             \
    X(cuDeviceGetAttribute, CUDA_ERROR_UNKNOWN, API)                         \
    X(cuDevicePrimaryCtxRetain, CUDA_ERROR_OUT_OF_MEMORY, API)               \
    X(cuDevicePrimaryCtxRelease, CUDA_ERROR_UNKNOWN, API)                    \
    X(cuDevicePrimaryCtxGetState, CUDA_ERROR_UNKNOWN, API)                   \
    X(cuCtxSetCurrent, CUDA_ERROR_UNKNOWN, API)                              \
    X(cuCtxGetCurrent, CUDA_ERROR_UNKNOWN, API)                              \
    X(cuCtxGetDevice, CUDA_ERROR_UNKNOWN, API)                               \
    X(cuCtxPushCurrent, CUDA_ERROR_UNKNOWN, API)                             \
    X(cuCtxPopCurrent, CUDA_ERROR_UNKNOWN, API)                              \
    X(cuCtxSynchronize, CUDA_ERROR_UNKNOWN, API)                             \
    X(cuCtxGetStreamPriorityRange, CUDA_ERROR_UNKNOWN, API)                  \
    X(cuGetErrorName, CUDA_ERROR_INVALID_VALUE, FREE)                        \
    X(cuGetErrorString, CUDA_ERROR_INVALID_VALUE, FREE)                      \
    X(cuGetProcAddress, CUDA_ERROR_NOT_FOUND, FREE)                          \
    X(cuMemAlloc, CUDA_ERROR_OUT_OF_MEMORY, API)                             \
    X(cuMemFree, CUDA_ERROR_INVALID_VALUE, API)                              \
    X(cuMemGetInfo, CUDA_ERROR_UNKNOWN, API)                                 \
    X(cuMemAllocHost, CUDA_ERROR_OUT_OF_MEMORY, API)                         \
    X(cuMemHostAlloc, CUDA_ERROR_OUT_OF_MEMORY, API)                         \
    X(cuMemFreeHost, CUDA_ERROR_INVALID_VALUE, API)                          \
    X(cuMemHostGetDevicePointer, CUDA_ERROR_INVALID_VALUE, API)              \
    X(cuMemGetAddressRange, CUDA_ERROR_NOT_FOUND, API)                       \
    X(cuPointerGetAttribute, CUDA_ERROR_INVALID_VALUE, API)                  \
    X(cuPointerGetAttributes, CUDA_ERROR_INVALID_VALUE, API)                 \
    X(cuMemcpyHtoD, CUDA_ERROR_INVALID_VALUE, API)                           \
    X(cuMemcpyDtoH, CUDA_ERROR_INVALID_VALUE, API)                           \
    X(cuMemcpyDtoD, CUDA_ERROR_INVALID_VALUE, API)                           \
    X(cuMemcpy, CUDA_ERROR_INVALID_VALUE, API)                               \
    X(cuMemcpyHtoDAsync, CUDA_ERROR_INVALID_VALUE, API)                      \
    X(cuMemcpyDtoHAsync, CUDA_ERROR_INVALID_VALUE, API)                      \
    X(cuMemcpyDtoDAsync, CUDA_ERROR_INVALID_VALUE, API)                      \
    X(cuMemcpyAsync, CUDA_ERROR_INVALID_VALUE, API)                          \
    X(cuMemsetD8, CUDA_ERROR_INVALID_VALUE, API)                             \
    X(cuMemsetD32, CUDA_ERROR_INVALID_VALUE, API)                            \
    X(cuMemsetD16, CUDA_ERROR_INVALID_VALUE, API)                            \
    X(cuMemsetD8Async, CUDA_ERROR_INVALID_VALUE, API)                        \
    X(cuMemsetD32Async, CUDA_ERROR_INVALID_VALUE, API)                       \
    X(cuMemsetD16Async, CUDA_ERROR_INVALID_VALUE, API)                       \
    X(cuMemAddressReserve, CUDA_ERROR_OUT_OF_MEMORY, RESERVE)                \
    X(cuMemAddressFree, CUDA_ERROR_INVALID_VALUE, API)                       \
    X(cuMemCreate, CUDA_ERROR_OUT_OF_MEMORY, MEMCREATE)                      \
    X(cuMemRelease, CUDA_ERROR_INVALID_VALUE, API)                           \
    X(cuMemMap, CUDA_ERROR_OUT_OF_MEMORY, MEMMAP)                            \
    X(cuMemUnmap, CUDA_ERROR_INVALID_VALUE, UNMAP)                           \
    X(cuMemSetAccess, CUDA_ERROR_OUT_OF_MEMORY, SETACCESS)                   \
    X(cuMemGetAccess, CUDA_ERROR_INVALID_VALUE, API)                         \
    X(cuMemGetAllocationGranularity, CUDA_ERROR_INVALID_VALUE, API)          \
    X(cuMemGetAllocationPropertiesFromHandle, CUDA_ERROR_INVALID_VALUE, API) \
    X(cuMemRetainAllocationHandle, CUDA_ERROR_INVALID_VALUE, API)            \
    X(cuStreamCreate, CUDA_ERROR_OUT_OF_MEMORY, API)                         \
    X(cuStreamCreateWithPriority, CUDA_ERROR_OUT_OF_MEMORY, API)             \
    X(cuStreamDestroy, CUDA_ERROR_INVALID_HANDLE, API)                       \
    X(cuStreamQuery, CUDA_ERROR_INVALID_HANDLE, API)                         \
    X(cuStreamSynchronize, CUDA_ERROR_INVALID_HANDLE, API)                   \
    X(cuStreamWaitEvent, CUDA_ERROR_INVALID_HANDLE, API)                     \
    X(cuStreamGetPriority, CUDA_ERROR_INVALID_HANDLE, API)                   \
    X(cuStreamGetFlags, CUDA_ERROR_INVALID_HANDLE, API)                      \
    X(cuLaunchHostFunc, CUDA_ERROR_INVALID_VALUE, API)                       \
    X(cuEventCreate, CUDA_ERROR_OUT_OF_MEMORY, API)                          \
    X(cuEventRecord, CUDA_ERROR_INVALID_HANDLE, API)                         \
    X(cuEventQuery, CUDA_ERROR_INVALID_HANDLE, API)                          \
    X(cuEventSynchronize, CUDA_ERROR_INVALID_HANDLE, API)                    \
    X(cuEventElapsedTime, CUDA_ERROR_INVALID_HANDLE, API)                    \
    X(cuEventDestroy, CUDA_ERROR_INVALID_HANDLE, API)                        \
    X(cuStreamBeginCapture, CUDA_ERROR_INVALID_VALUE, API)                   \
    X(cuStreamEndCapture, CUDA_ERROR_INVALID_VALUE, API)                     \
    X(cuStreamIsCapturing, CUDA_ERROR_INVALID_VALUE, API)                    \
    X(cuStreamGetCaptureInfo, CUDA_ERROR_INVALID_VALUE, API)                 \
    X(cuGraphInstantiate, CUDA_ERROR_OUT_OF_MEMORY, API)                     \
    X(cuGraphInstantiateWithFlags, CUDA_ERROR_OUT_OF_MEMORY, API)            \
    X(cuGraphLaunch, CUDA_ERROR_INVALID_VALUE, LAUNCH)                       \
    X(cuGraphDestroy, CUDA_ERROR_INVALID_VALUE, API)                         \
    X(cuGraphExecDestroy, CUDA_ERROR_INVALID_VALUE, API)                     \
    X(cuModuleLoadData, CUDA_ERROR_OUT_OF_MEMORY, API)                       \
    X(cuModuleUnload, CUDA_ERROR_INVALID_HANDLE, API)                        \
    X(cuModuleGetFunction, CUDA_ERROR_NOT_FOUND, API)                        \
    X(cuLibraryLoadData, CUDA_ERROR_OUT_OF_MEMORY, API)                      \
    X(cuLibraryUnload, CUDA_ERROR_INVALID_HANDLE, API)                       \
    X(cuLibraryGetKernel, CUDA_ERROR_NOT_FOUND, API)                         \
    X(cuKernelGetFunction, CUDA_ERROR_INVALID_HANDLE, API)                   \
    X(cuFuncGetParamInfo, CUDA_ERROR_INVALID_VALUE, API)                     \
    X(cuKernelGetParamInfo, CUDA_ERROR_INVALID_VALUE, API)                   \
    X(cuFuncGetName, CUDA_ERROR_INVALID_VALUE, API)                          \
    X(cuKernelGetName, CUDA_ERROR_INVALID_VALUE, API)                        \
    X(cuLaunchKernel, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, LAUNCH)            \
    X(cuLaunchKernelEx, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, LAUNCH)          \
    X(cuLaunchCooperativeKernel, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, LAUNCH) \
    X(cuMemAllocAsync, CUDA_ERROR_OUT_OF_MEMORY, API)                        \
    X(cuMemFreeAsync, CUDA_ERROR_INVALID_VALUE, API)

typedef enum {
#define SG_FN_ENUM(name, err, cost) SG_FN_##name,
    SG_FUNCS(SG_FN_ENUM)
#undef SG_FN_ENUM
    SG_FN_COUNT
} sg_fn_t;

/* Host-time cost classes; FREE calls neither cost time nor need cuInit. */
typedef enum {
    SG_COST_FREE, SG_COST_API, SG_COST_LAUNCH, SG_COST_MEMCREATE,
    SG_COST_MEMMAP, SG_COST_SETACCESS, SG_COST_UNMAP, SG_COST_RESERVE,
} sg_cost_t;

/* ---- sg_config.c: SIMGPU_* environment, read once -------------------- */
#define SG_MAX_FAILS 8 /* SIMGPU_FAIL entries per function */
typedef struct {
    uint64_t mem, granularity, host_granularity, va_size;
    uint64_t jitter_us, seed;
    bool host_vmm, host_numa_vmm, func_accepts_kernel;
    double hbm_gbps, h2d_gbps, d2h_gbps, d2d_gbps, zerocopy_gbps, tflops;
    uint64_t kernel_ns, launch_ns, api_ns, memcreate_ns, memmap_ns;
    uint64_t setaccess_ns, unmap_ns, reserve_ns;
    char report[4096];
    uint64_t fail_nth[SG_FN_COUNT][SG_MAX_FAILS]; /* calls to fail; 0: unused */
} sg_config_t;

/* Parses the environment into *cfg; on a bad value prints one message
 * naming the variable and exits with status 2 (a test double must not
 * silently run with a setting the test did not ask for). */
void sg_config_load(sg_config_t *cfg);
const char *sg_fn_name(sg_fn_t fn);

/* ---- sg_state.c: process state, entry bookkeeping -------------------- */
typedef struct sg_stats {
    uint64_t kernels, kernel_bytes_device, kernel_bytes_host;
    uint64_t dma_h2d_bytes, dma_d2h_bytes, dma_d2d_bytes;
    uint64_t device_bytes, device_bytes_peak;
    uint64_t host_vmm_bytes, host_vmm_bytes_peak;
    uint64_t pinned_bytes, pinned_bytes_peak;
    uint64_t graph_launches, hazards, faults;
    uint64_t calls[SG_FN_COUNT];
} sg_stats_t;

#define SG_MAX_HAZARD_TEXT 64
#define SG_RECENT 1024 /* ops kept for the race check */

typedef struct sg_state {
    sg_config_t cfg;
    bool initialized;       /* cuInit succeeded */
    /* g.lock guards everything below and all stream/event/op state. */
    pthread_mutex_t lock;
    pthread_cond_t done_cv; /* broadcast whenever an op completes */
    uint64_t host_ns;       /* the host's virtual clock */
    uint64_t engine_ns[3];  /* when each engine is next free */
    uint64_t last_end_ns;   /* the latest completion of any op */
    uint64_t op_seq;
    CUresult sticky;        /* CUDA_SUCCESS until a fault */
    sg_stats_t st;
    char *hazard_text[SG_MAX_HAZARD_TEXT];
    struct sg_stream *streams; /* all live streams, for sync and hazards */
    struct sg_stream *legacy;  /* the legacy default stream */
    struct sg_capture *captures; /* active captures */
    struct sg_op *recent[SG_RECENT]; /* the last ops issued, for races */
    unsigned recent_at;
    int ctx_refs;
} sg_state_t;

enum { SG_ENGINE_COMPUTE, SG_ENGINE_H2D, SG_ENGINE_D2H };

/* The one process state, static in sg_state.c. */
sg_state_t *sg_st(void);
#define SG (sg_st())

/* Every API entry starts here: counts the call, injects a failure if one
 * is due, refuses with the sticky error after a fault, and charges host
 * time. Returns CUDA_SUCCESS when the call may proceed. */
CUresult sg_enter(sg_fn_t fn, sg_cost_t cost);
#define SG_ENTER(fn, cost)                                          \
    do {                                                            \
        CUresult sg_r_ = sg_enter(SG_FN_##fn, SG_COST_##cost);      \
        if (sg_r_ != CUDA_SUCCESS) return sg_r_;                    \
    } while (0)
void sg_lock(void);
void sg_unlock(void);
/* fork, as the real driver answers it: a child of a process that
 * initialized the driver cannot use it (its stream threads and its
 * device stay in the parent), and every call it makes, cuInit included,
 * returns CUDA_ERROR_NOT_INITIALIZED at once, without taking the lock,
 * which a thread that did not survive fork may hold (cuGetErrorName,
 * cuGetErrorString and cuGetProcAddress, which need no device, work). sg_fork_model
 * registers the atfork handler (once, when cuInit succeeds). */
void sg_fork_model(void);
bool sg_forked(void);
void sg_hazard(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sg_fault(const char *what);

/* ---- sg_mem.c: address space, physical memory, translation ----------- */
enum { SG_LOC_DEVICE, SG_LOC_HOST }; /* where a byte physically lives */
enum { SG_ACCESS_NONE, SG_ACCESS_READ, SG_ACCESS_RW };
#define SG_MAX_PHYS 8 /* handles an op's ranges may be backed by, recorded */

typedef struct sg_phys {
    uint64_t id;        /* the CUmemGenericAllocationHandle */
    uint64_t size, file_off;
    int loc;            /* SG_LOC_* */
    CUmemAllocationProp prop;
    int refs;           /* 1 while any handle reference lives, + 1 per mapping */
    int handle_refs;    /* cuMemCreate + cuMemRetainAllocationHandle - cuMemRelease */
} sg_phys_t;

typedef struct {
    CUdeviceptr va;
    uint64_t size;
    sg_phys_t *phys;
    uint64_t phys_off;
    int access;         /* SG_ACCESS_*: what cuMemSetAccess granted the device */
    bool legacy;        /* made by cuMemAlloc, not by cuMemMap */
} sg_map_t;

/* Bytes of one physical handle, as an operation reaches them. */
typedef struct {
    uint64_t id, off, len; /* handle, offset into it, length */
    bool write;
} sg_extent_t;

/* A memory range an operation touches. */
typedef struct {
    uint64_t addr, len;
    bool write;
} sg_range_t;

/* Where a checked range lies: its first byte in simgpu's view, and how
 * many of its bytes are device- vs host-backed. */
typedef struct {
    void *host;
    uint64_t device_bytes, host_bytes;
    int nextents;                /* the handle bytes behind the range (first few) */
    sg_extent_t ext[SG_MAX_PHYS];
} sg_xlate_t;

/* mem_lock: readers are ops that touch memory (held while they run), the
 * writer is anything that changes mappings. Never taken under g.lock by a
 * writer, so g.lock -> mem_lock ordering is only for readers. */
void sg_mem_rdlock(void);
void sg_mem_wrlock(void);
void sg_mem_unlock(void);
CUresult sg_mem_init(void);
bool sg_mem_is_device_va(uint64_t addr);
/* Translates [addr, addr+len) if every byte is mapped with access (write
 * access when write) in device VA, or inside pinned host memory; false
 * otherwise. Caller holds mem_lock for reading. A range outside both
 * spaces is plain host memory only when allow_pageable. */
bool sg_mem_xlate(uint64_t addr, uint64_t len, bool write, bool allow_pageable, sg_xlate_t *out);
/* Reads len bytes at device address addr, for peeking at a table when a
 * launch is issued. Takes mem_lock itself. False when not readable. */
bool sg_mem_peek(uint64_t addr, void *dst, uint64_t len);
/* Virtual address space. */
CUresult sg_va_reserve(uint64_t size, uint64_t align, uint64_t hint, CUdeviceptr *out);
CUresult sg_va_free(CUdeviceptr va, uint64_t size);
bool sg_va_reserved(CUdeviceptr va, uint64_t size);
/* Physical memory. Creating charges SIMGPU_MEM (device) or the host-VMM
 * count; the charge is returned when the last reference goes. */
CUresult sg_phys_create(uint64_t size, int loc, const CUmemAllocationProp *prop, sg_phys_t **out);
sg_phys_t *sg_phys_find(uint64_t id);
void sg_phys_put(sg_phys_t *p); /* drops one ref, frees at zero */
/* Mappings; caller holds mem_lock for writing. */
CUresult sg_map_insert(CUdeviceptr va, uint64_t size, sg_phys_t *p, uint64_t off, bool legacy);
CUresult sg_map_remove(CUdeviceptr va, uint64_t size);
sg_map_t *sg_map_find(uint64_t addr);
int sg_map_set_access(CUdeviceptr va, uint64_t size, int access);
/* Pinned host allocations (cuMemAllocHost): device pointer == host pointer. */
CUresult sg_pinned_alloc(uint64_t size, void **out);
CUresult sg_pinned_free(void *p);
bool sg_pinned_find(const void *p, void **base, uint64_t *size);
/* Legacy device allocations (cuMemAlloc). */
CUresult sg_legacy_alloc(uint64_t size, CUdeviceptr *out);
CUresult sg_legacy_free(CUdeviceptr p);
bool sg_legacy_range(CUdeviceptr p, CUdeviceptr *base, uint64_t *size);
/* Reads the byte counters consistently (they live under a leaf lock). */
void sg_mem_stats(sg_stats_t *into);

/* ---- sg_kernels.c: the built-in kernels ------------------------------ */
#define SG_MAX_PARAMS 8
#define SG_MAX_RANGES 6
#define SG_MAX_ARGS 64
/* Reads device memory for a kernel that loads a pointer (the table). */
typedef bool (*sg_peek_fn)(uint64_t addr, void *dst, uint64_t len);

typedef struct sg_kernel {
    const char *name;
    int nparams;
    size_t param_off[SG_MAX_PARAMS], param_size[SG_MAX_PARAMS];
    size_t args_size;
    /* Lists what the kernel touches, in the order run() expects. */
    int (*ranges)(const void *args, sg_range_t *out, sg_peek_fn peek);
    double (*flops)(const void *args);
    void (*run)(const void *args, void *const *host);
} sg_kernel_t;

const sg_kernel_t *sg_kernel_find(const char *name);
int sg_kernel_count(void);
const sg_kernel_t *sg_kernel_at(int i);

/* ---- sg_stream.c: streams, events, ops, virtual time ----------------- */
typedef enum {
    SG_OP_KERNEL, SG_OP_COPY, SG_OP_MEMSET, SG_OP_MARKER, SG_OP_HOST_FUNC,
    SG_OP_FREE,
} sg_op_kind_t;

typedef struct sg_op {
    struct sg_op *next;           /* stream queue or capture list */
    sg_op_kind_t kind;
    uint64_t seq;
    const char *name;             /* kernel or API name, for hazards */
    int refs;                     /* queue + events + waiters */
    bool done;
    uint64_t end_ns;              /* virtual completion */
    uint64_t stream_id;
    int nranges;
    sg_range_t ranges[SG_MAX_RANGES];
    int nextents;                 /* handle bytes behind the ranges when issued */
    sg_extent_t ext[SG_MAX_RANGES * SG_MAX_PHYS];
    int ndeps;
    struct sg_op **deps;          /* ops that must really finish first */
    /* kernel */
    const sg_kernel_t *kernel;
    unsigned char args[SG_MAX_ARGS];
    /* copy: ranges[0] is dst, ranges[1] is src; memset: ranges[0] */
    uint32_t memset_value;
    unsigned memset_width;
    int engine;
    unsigned pageable;            /* bit i: range i may be plain host memory */
    /* host function */
    CUhostFn fn;
    void *user;
} sg_op_t;

typedef struct sg_stream {
    struct sg_stream *next;
    uint64_t id;
    unsigned flags;
    int priority;
    bool blocking;       /* synchronizes with the legacy stream */
    bool destroyed;
    pthread_t thread;
    bool has_thread;
    pthread_cond_t cv;
    sg_op_t *head, *tail; /* ops not yet completed, oldest first */
    sg_op_t *last;        /* the newest op enqueued (ref held) */
    uint64_t ready_ns;    /* virtual completion of the newest op */
    unsigned rng;
    struct sg_capture *capture;
} sg_stream_t;

typedef struct sg_event {
    unsigned flags;
    sg_op_t *op;         /* the marker recorded last (ref held), or NULL */
    uint64_t time_ns;
    bool recorded;
} sg_event_t;

/* Resolves a CUstream handle; per_thread says which stream 0 means. */
sg_stream_t *sg_stream_get(CUstream h, bool per_thread);
CUresult sg_stream_create(unsigned flags, int priority, sg_stream_t **out);
void sg_stream_destroy(sg_stream_t *s);
sg_op_t *sg_op_new(sg_op_kind_t kind, const char *name);
void sg_op_put(sg_op_t *op);          /* g.lock held */
sg_op_t *sg_op_clone(const sg_op_t *op);
/* Issues op on s: fixes its virtual time and queues it, or records it
 * when s is capturing. Consumes the caller's reference. g.lock held. */
CUresult sg_submit(sg_stream_t *s, sg_op_t *op);
/* Adds a dependency (ref taken). */
void sg_op_add_dep(sg_op_t *op, sg_op_t *dep);
/* Waits (really) until op is done; then moves the host clock to its end.
 * g.lock held. */
void sg_op_wait(sg_op_t *op);
CUresult sg_stream_sync(sg_stream_t *s);   /* g.lock held */
CUresult sg_ctx_sync(void);                /* g.lock held */
bool sg_op_vt_done(sg_op_t *op);           /* g.lock held */
/* Records a hazard for each queued or running op that overlaps
 * [addr, addr+len), naming the call and the op. g.lock held. */
void sg_check_hazard(const char *call, uint64_t addr, uint64_t len);
/* The same for an op whose ranges were backed by handle id when issued. */
void sg_check_hazard_handle(const char *call, uint64_t id);
bool sg_is_stream(void *h);
bool sg_is_event(void *h);
void sg_handle_add(void *h, int kind);
void sg_handle_del(void *h);
int sg_handle_kind(const void *h);
enum { SG_H_NONE, SG_H_STREAM, SG_H_EVENT, SG_H_MODULE, SG_H_FUNC, SG_H_LIBRARY,
       SG_H_KERNEL, SG_H_GRAPH, SG_H_EXEC };

/* ---- sg_capture.c: stream capture and graphs -------------------------- */
typedef struct sg_capture {
    struct sg_capture *next;
    sg_stream_t *stream;
    CUstreamCaptureMode mode;
    pthread_t thread;
    uint64_t id;
    bool invalidated;
    sg_op_t *head, *tail;
} sg_capture_t;

/* A call that would synchronize during a capture: refuses it and
 * invalidates the captures it breaks. stream is the stream being
 * synchronized, or NULL. Returns CUDA_SUCCESS when allowed. g.lock held. */
CUresult sg_capture_guard(sg_stream_t *stream);
/* Appends op to the capture (consuming it); refused once invalidated. */
CUresult sg_capture_record(sg_capture_t *c, sg_op_t *op); /* g.lock held */

/* ---- sg_report.c ----------------------------------------------------- */
void sg_report_write(void);

#endif

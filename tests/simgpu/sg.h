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
SG_PT_DECL(CUresult, cuEventRecordWithFlags_ptsz, (CUevent hEvent, CUstream hStream, unsigned int flags))
SG_PT_DECL(CUresult, cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream))
SG_PT_DECL(CUresult, cuStreamBeginCaptureToGraph_ptsz, (CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData, size_t numDependencies, CUstreamCaptureMode mode))
SG_PT_DECL(CUresult, cuStreamWriteValue32_v2_ptsz, (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags))
SG_PT_DECL(CUresult, cuStreamWriteValue64_v2_ptsz, (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags))
SG_PT_DECL(CUresult, cuStreamWaitValue32_v2_ptsz, (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags))
SG_PT_DECL(CUresult, cuStreamWaitValue64_v2_ptsz, (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags))
SG_PT_DECL(CUresult, cuStreamBatchMemOp_v2_ptsz, (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray, unsigned int flags))
/* The deprecated v1 stream memory operations: the driver still exports
 * them under the plain names, which cuda.h maps to the _v2 forms, and
 * hands them to a runtime older than 11.7. Declared under C names of
 * their own, exported under theirs. */
#define SG_V1_DECL(ret, name, params, sym) SG_EXPORT ret name params __asm__(sym);
SG_V1_DECL(CUresult, sg_v1_write32, (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags), "cuStreamWriteValue32")
SG_V1_DECL(CUresult, sg_v1_write32_ptsz, (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags), "cuStreamWriteValue32_ptsz")
SG_V1_DECL(CUresult, sg_v1_write64, (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags), "cuStreamWriteValue64")
SG_V1_DECL(CUresult, sg_v1_write64_ptsz, (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags), "cuStreamWriteValue64_ptsz")
SG_V1_DECL(CUresult, sg_v1_wait32, (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags), "cuStreamWaitValue32")
SG_V1_DECL(CUresult, sg_v1_wait32_ptsz, (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags), "cuStreamWaitValue32_ptsz")
SG_V1_DECL(CUresult, sg_v1_wait64, (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags), "cuStreamWaitValue64")
SG_V1_DECL(CUresult, sg_v1_wait64_ptsz, (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags), "cuStreamWaitValue64_ptsz")
SG_V1_DECL(CUresult, sg_v1_batch, (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray, unsigned int flags), "cuStreamBatchMemOp")
SG_V1_DECL(CUresult, sg_v1_batch_ptsz, (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray, unsigned int flags), "cuStreamBatchMemOp_ptsz")
SG_PT_DECL(CUresult, cuMemcpyHtoD_v2_ptds, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount))
SG_PT_DECL(CUresult, cuMemcpyDtoH_v2_ptds, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount))
SG_PT_DECL(CUresult, cuMemcpyDtoD_v2_ptds, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount))
SG_PT_DECL(CUresult, cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount))
SG_PT_DECL(CUresult, cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream))
SG_PT_DECL(CUresult, cuMemcpyDtoHAsync_v2_ptsz, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream))
SG_PT_DECL(CUresult, cuMemcpyDtoDAsync_v2_ptsz, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream))
SG_PT_DECL(CUresult, cuMemcpyAsync_ptsz, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream))
SG_PT_DECL(CUresult, cuMemcpyPeer_ptds, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount))
SG_PT_DECL(CUresult, cuMemcpyPeerAsync_ptsz, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount, CUstream hStream))
SG_PT_DECL(CUresult, cuMemsetD8_v2_ptds, (CUdeviceptr dstDevice, unsigned char uc, size_t N))
SG_PT_DECL(CUresult, cuMemsetD32_v2_ptds, (CUdeviceptr dstDevice, unsigned int ui, size_t N))
SG_PT_DECL(CUresult, cuMemsetD16_v2_ptds, (CUdeviceptr dstDevice, unsigned short us, size_t N))
SG_PT_DECL(CUresult, cuMemsetD8Async_ptsz, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream))
SG_PT_DECL(CUresult, cuMemsetD32Async_ptsz, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream))
SG_PT_DECL(CUresult, cuMemsetD16Async_ptsz, (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream))
SG_PT_DECL(CUresult, cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *pCopy))
SG_PT_DECL(CUresult, cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *pCopy))
SG_PT_DECL(CUresult, cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *pCopy, CUstream hStream))
SG_PT_DECL(CUresult, cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *pCopy))
SG_PT_DECL(CUresult, cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D *pCopy, CUstream hStream))
SG_PT_DECL(CUresult, cuMemsetD2D8_v2_ptds, (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height))
SG_PT_DECL(CUresult, cuMemsetD2D16_v2_ptds, (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height))
SG_PT_DECL(CUresult, cuMemsetD2D32_v2_ptds, (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height))
SG_PT_DECL(CUresult, cuMemsetD2D8Async_ptsz, (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height, CUstream hStream))
SG_PT_DECL(CUresult, cuMemsetD2D16Async_ptsz, (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height, CUstream hStream))
SG_PT_DECL(CUresult, cuMemsetD2D32Async_ptsz, (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height, CUstream hStream))
SG_PT_DECL(CUresult, cuStreamAddCallback_ptsz, (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags))
SG_PT_DECL(CUresult, cuStreamUpdateCaptureDependencies_v2_ptsz, (CUstream hStream, CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData, size_t numDependencies, unsigned int flags))
SG_PT_DECL(CUresult, cuStreamQuery_ptsz, (CUstream hStream))
SG_PT_DECL(CUresult, cuStreamSynchronize_ptsz, (CUstream hStream))
SG_PT_DECL(CUresult, cuStreamWaitEvent_ptsz, (CUstream hStream, CUevent hEvent, unsigned int Flags))
SG_PT_DECL(CUresult, cuStreamGetPriority_ptsz, (CUstream hStream, int *priority))
SG_PT_DECL(CUresult, cuStreamGetFlags_ptsz, (CUstream hStream, unsigned int *flags))
SG_PT_DECL(CUresult, cuStreamGetCtx_ptsz, (CUstream hStream, CUcontext *pctx))
SG_PT_DECL(CUresult, cuLaunchHostFunc_ptsz, (CUstream hStream, CUhostFn fn, void *userData))
SG_PT_DECL(CUresult, cuEventRecord_ptsz, (CUevent hEvent, CUstream hStream))
SG_PT_DECL(CUresult, cuLaunchKernel_ptsz, (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra))
SG_PT_DECL(CUresult, cuLaunchCooperativeKernel_ptsz, (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams))
SG_PT_DECL(CUresult, cuLaunchKernelEx_ptsz, (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra))
SG_PT_DECL(CUresult, cuGraphInstantiateWithParams_ptsz, (CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams))
SG_PT_DECL(CUresult, cuGraphUpload_ptsz, (CUgraphExec hGraphExec, CUstream hStream))
CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize);
CUresult sg_need_ctx(void);
/* The device a context belongs to; -1 for anything but a primary one. */
int sg_ctx_device(CUcontext ctx);
/* The ordinal of the device whose context is current; -1 if none. */
int sg_current_device(void);
/* Whether a and b are two different devices. -1 (no context, or a stream
 * every device shares) is never another device. */
bool sg_other_device(int a, int b);
/* dev names a simulated device. */
bool sg_device_ok(CUdevice dev);

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
    X(cuDeviceGetUuid, CUDA_ERROR_UNKNOWN, API)                              \
    X(cuGetExportTable, CUDA_ERROR_INVALID_VALUE, FREE)                      \
    X(cuModuleGetLoadingMode, CUDA_ERROR_INVALID_VALUE, API)                 \
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
    X(cuDeviceCanAccessPeer, CUDA_ERROR_INVALID_DEVICE, API)                 \
    X(cuCtxEnablePeerAccess, CUDA_ERROR_TOO_MANY_PEERS, API)                 \
    X(cuCtxDisablePeerAccess, CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, API)       \
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
    X(cuMemcpyPeer, CUDA_ERROR_INVALID_VALUE, API)                           \
    X(cuMemcpyPeerAsync, CUDA_ERROR_INVALID_VALUE, API)                      \
    X(cuMemsetD8, CUDA_ERROR_INVALID_VALUE, API)                             \
    X(cuMemsetD32, CUDA_ERROR_INVALID_VALUE, API)                            \
    X(cuMemsetD16, CUDA_ERROR_INVALID_VALUE, API)                            \
    X(cuMemsetD8Async, CUDA_ERROR_INVALID_VALUE, API)                        \
    X(cuMemsetD32Async, CUDA_ERROR_INVALID_VALUE, API)                       \
    X(cuMemsetD16Async, CUDA_ERROR_INVALID_VALUE, API)                       \
    X(cuMemcpy2D, CUDA_ERROR_INVALID_VALUE, API)                             \
    X(cuMemcpy2DUnaligned, CUDA_ERROR_INVALID_VALUE, API)                    \
    X(cuMemcpy2DAsync, CUDA_ERROR_INVALID_VALUE, API)                        \
    X(cuMemcpy3D, CUDA_ERROR_INVALID_VALUE, API)                             \
    X(cuMemcpy3DAsync, CUDA_ERROR_INVALID_VALUE, API)                        \
    X(cuMemsetD2D8, CUDA_ERROR_INVALID_VALUE, API)                           \
    X(cuMemsetD2D16, CUDA_ERROR_INVALID_VALUE, API)                          \
    X(cuMemsetD2D32, CUDA_ERROR_INVALID_VALUE, API)                          \
    X(cuMemsetD2D8Async, CUDA_ERROR_INVALID_VALUE, API)                      \
    X(cuMemsetD2D16Async, CUDA_ERROR_INVALID_VALUE, API)                     \
    X(cuMemsetD2D32Async, CUDA_ERROR_INVALID_VALUE, API)                     \
    X(cuMemAddressReserve, CUDA_ERROR_OUT_OF_MEMORY, RESERVE)                \
    X(cuMemAddressFree, CUDA_ERROR_INVALID_VALUE, API)                       \
    X(cuMemCreate, CUDA_ERROR_OUT_OF_MEMORY, MEMCREATE)                      \
    X(cuMemRelease, CUDA_ERROR_INVALID_VALUE, RELEASE)                       \
    X(cuMemMap, CUDA_ERROR_OUT_OF_MEMORY, MEMMAP)                            \
    X(cuMemUnmap, CUDA_ERROR_INVALID_VALUE, UNMAP)                           \
    X(cuMemSetAccess, CUDA_ERROR_OUT_OF_MEMORY, SETACCESS)                   \
    X(cuMemGetAccess, CUDA_ERROR_INVALID_VALUE, API)                         \
    X(cuMemGetAllocationGranularity, CUDA_ERROR_INVALID_VALUE, API)          \
    X(cuMemGetAllocationPropertiesFromHandle, CUDA_ERROR_INVALID_VALUE, API) \
    X(cuMemRetainAllocationHandle, CUDA_ERROR_INVALID_VALUE, API)            \
    X(cuIpcGetMemHandle, CUDA_ERROR_INVALID_VALUE, API)                      \
    X(cuMemExportToShareableHandle, CUDA_ERROR_INVALID_VALUE, API)           \
    X(cuMulticastCreate, CUDA_ERROR_OUT_OF_MEMORY, API)                     \
    X(cuMulticastAddDevice, CUDA_ERROR_INVALID_VALUE, API)                   \
    X(cuMulticastGetGranularity, CUDA_ERROR_INVALID_VALUE, API)              \
    X(cuMulticastBindMem, CUDA_ERROR_INVALID_VALUE, API)                     \
    X(cuMulticastBindAddr, CUDA_ERROR_INVALID_VALUE, API)                    \
    X(cuMulticastUnbind, CUDA_ERROR_INVALID_VALUE, API)                      \
    X(cuMemGetHandleForAddressRange, CUDA_ERROR_INVALID_VALUE, API)          \
    X(cuArray3DCreate, CUDA_ERROR_OUT_OF_MEMORY, API)                        \
    X(cuArrayDestroy, CUDA_ERROR_INVALID_HANDLE, API)                        \
    X(cuMemMapArrayAsync, CUDA_ERROR_INVALID_VALUE, API)                     \
    X(cuStreamCreate, CUDA_ERROR_OUT_OF_MEMORY, API)                         \
    X(cuStreamCreateWithPriority, CUDA_ERROR_OUT_OF_MEMORY, API)             \
    X(cuStreamDestroy, CUDA_ERROR_INVALID_HANDLE, API)                       \
    X(cuStreamQuery, CUDA_ERROR_INVALID_HANDLE, API)                         \
    X(cuStreamSynchronize, CUDA_ERROR_INVALID_HANDLE, API)                   \
    X(cuStreamWaitEvent, CUDA_ERROR_INVALID_HANDLE, API)                     \
    X(cuStreamGetPriority, CUDA_ERROR_INVALID_HANDLE, API)                   \
    X(cuStreamGetFlags, CUDA_ERROR_INVALID_HANDLE, API)                      \
    X(cuStreamGetCtx, CUDA_ERROR_INVALID_HANDLE, API)                        \
    X(cuLaunchHostFunc, CUDA_ERROR_INVALID_VALUE, API)                       \
    X(cuStreamAddCallback, CUDA_ERROR_INVALID_VALUE, API)                    \
    X(cuStreamUpdateCaptureDependencies, CUDA_ERROR_INVALID_VALUE, API)      \
    X(cuDeviceGetDevResource, CUDA_ERROR_INVALID_DEVICE, API)                \
    X(cuDevResourceGenerateDesc, CUDA_ERROR_OUT_OF_MEMORY, API)              \
    X(cuGreenCtxCreate, CUDA_ERROR_OUT_OF_MEMORY, API)                       \
    X(cuGreenCtxDestroy, CUDA_ERROR_INVALID_CONTEXT, API)                    \
    X(cuCtxFromGreenCtx, CUDA_ERROR_INVALID_CONTEXT, API)                    \
    X(cuGreenCtxStreamCreate, CUDA_ERROR_OUT_OF_MEMORY, API)                 \
    X(cuUserObjectCreate, CUDA_ERROR_OUT_OF_MEMORY, API)                     \
    X(cuUserObjectRetain, CUDA_ERROR_INVALID_VALUE, API)                     \
    X(cuUserObjectRelease, CUDA_ERROR_INVALID_VALUE, API)                    \
    X(cuGraphRetainUserObject, CUDA_ERROR_INVALID_VALUE, API)                \
    X(cuGraphReleaseUserObject, CUDA_ERROR_INVALID_VALUE, API)               \
    X(cuEventCreate, CUDA_ERROR_OUT_OF_MEMORY, API)                          \
    X(cuEventRecord, CUDA_ERROR_INVALID_HANDLE, API)                         \
    X(cuEventQuery, CUDA_ERROR_INVALID_HANDLE, API)                          \
    X(cuEventSynchronize, CUDA_ERROR_INVALID_HANDLE, API)                    \
    X(cuEventElapsedTime, CUDA_ERROR_INVALID_HANDLE, API)                    \
    X(cuEventDestroy, CUDA_ERROR_INVALID_HANDLE, API)                        \
    X(cuStreamBeginCapture, CUDA_ERROR_INVALID_VALUE, API)                   \
    X(cuStreamEndCapture, CUDA_ERROR_STREAM_CAPTURE_UNJOINED, API)           \
    X(cuStreamBeginCaptureToGraph, CUDA_ERROR_INVALID_VALUE, API)            \
    X(cuGraphCreate, CUDA_ERROR_OUT_OF_MEMORY, API)                          \
    X(cuStreamWriteValue32, CUDA_ERROR_INVALID_VALUE, API)                   \
    X(cuStreamWriteValue64, CUDA_ERROR_INVALID_VALUE, API)                   \
    X(cuStreamWaitValue32, CUDA_ERROR_INVALID_VALUE, API)                    \
    X(cuStreamWaitValue64, CUDA_ERROR_INVALID_VALUE, API)                    \
    X(cuStreamBatchMemOp, CUDA_ERROR_INVALID_VALUE, API)                     \
    X(cuStreamIsCapturing, CUDA_ERROR_INVALID_VALUE, API)                    \
    X(cuThreadExchangeStreamCaptureMode, CUDA_ERROR_INVALID_VALUE, API)      \
    X(cuStreamGetCaptureInfo, CUDA_ERROR_INVALID_VALUE, API)                 \
    X(cuGraphInstantiate, CUDA_ERROR_OUT_OF_MEMORY, API)                     \
    X(cuGraphInstantiateWithFlags, CUDA_ERROR_OUT_OF_MEMORY, API)            \
    X(cuGraphLaunch, CUDA_ERROR_INVALID_VALUE, LAUNCH)                       \
    X(cuGraphDestroy, CUDA_ERROR_INVALID_VALUE, API)                         \
    X(cuGraphExecDestroy, CUDA_ERROR_INVALID_VALUE, API)                     \
    X(cuGraphGetNodes, CUDA_ERROR_INVALID_VALUE, API)                        \
    X(cuGraphGetEdges, CUDA_ERROR_INVALID_VALUE, API)                        \
    X(cuGraphNodeGetType, CUDA_ERROR_INVALID_VALUE, API)                     \
    X(cuGraphKernelNodeGetParams, CUDA_ERROR_INVALID_VALUE, API)             \
    X(cuGraphKernelNodeSetParams, CUDA_ERROR_INVALID_VALUE, API)             \
    X(cuGraphExecKernelNodeSetParams, CUDA_ERROR_INVALID_VALUE, API)         \
    X(cuGraphExecUpdate, CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, API)          \
    X(cuGraphAddKernelNode, CUDA_ERROR_INVALID_VALUE, API)                   \
    X(cuGraphAddMemcpyNode, CUDA_ERROR_INVALID_VALUE, API)                   \
    X(cuGraphAddMemsetNode, CUDA_ERROR_INVALID_VALUE, API)                   \
    X(cuGraphAddEmptyNode, CUDA_ERROR_INVALID_VALUE, API)                    \
    X(cuGraphAddHostNode, CUDA_ERROR_INVALID_VALUE, API)                     \
    X(cuGraphAddChildGraphNode, CUDA_ERROR_INVALID_VALUE, API)               \
    X(cuGraphAddDependencies, CUDA_ERROR_INVALID_VALUE, API)                 \
    X(cuGraphClone, CUDA_ERROR_OUT_OF_MEMORY, API)                           \
    X(cuGraphInstantiateWithParams, CUDA_ERROR_OUT_OF_MEMORY, API)           \
    X(cuGraphUpload, CUDA_ERROR_INVALID_VALUE, API)                          \
    X(cuGraphMemcpyNodeGetParams, CUDA_ERROR_INVALID_VALUE, API)             \
    X(cuGraphMemcpyNodeSetParams, CUDA_ERROR_INVALID_VALUE, API)             \
    X(cuGraphMemsetNodeGetParams, CUDA_ERROR_INVALID_VALUE, API)             \
    X(cuGraphMemsetNodeSetParams, CUDA_ERROR_INVALID_VALUE, API)             \
    X(cuGraphExecMemcpyNodeSetParams, CUDA_ERROR_INVALID_VALUE, API)         \
    X(cuGraphExecMemsetNodeSetParams, CUDA_ERROR_INVALID_VALUE, API)         \
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
    X(cuFuncGetAttribute, CUDA_ERROR_INVALID_VALUE, API)                     \
    X(cuFuncSetAttribute, CUDA_ERROR_INVALID_VALUE, API)                     \
    X(cuKernelGetAttribute, CUDA_ERROR_INVALID_VALUE, API)                   \
    X(cuKernelSetAttribute, CUDA_ERROR_INVALID_VALUE, API)                   \
    X(cuLaunchKernel, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, LAUNCH)            \
    X(cuLaunchKernelEx, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, LAUNCH)          \
    X(cuLaunchCooperativeKernel, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, LAUNCH) \
    X(cuMemAllocAsync, CUDA_ERROR_OUT_OF_MEMORY, API)                        \
    X(cuMemFreeAsync, CUDA_ERROR_INVALID_VALUE, API)                         \
    X(cuDeviceGetDefaultMemPool, CUDA_ERROR_INVALID_VALUE, API)              \
    X(cuDeviceGetMemPool, CUDA_ERROR_INVALID_VALUE, API)                     \
    X(cuDeviceSetMemPool, CUDA_ERROR_INVALID_VALUE, API)                     \
    X(cuMemPoolCreate, CUDA_ERROR_OUT_OF_MEMORY, API)                        \
    X(cuMemAllocFromPoolAsync, CUDA_ERROR_OUT_OF_MEMORY, API)                \
    X(cuMemPoolDestroy, CUDA_ERROR_INVALID_VALUE, API)                       \
    X(cuMemPoolTrimTo, CUDA_ERROR_INVALID_VALUE, API)                        \
    X(cuMemPoolSetAttribute, CUDA_ERROR_INVALID_VALUE, API)                  \
    X(cuMemPoolGetAttribute, CUDA_ERROR_INVALID_VALUE, API)                  \
    X(cuCtxGetApiVersion, CUDA_ERROR_INVALID_CONTEXT, API)                   \
    X(cuTensorMapEncodeTiled, CUDA_ERROR_INVALID_VALUE, API)                 \
    X(cuTensorMapReplaceAddress, CUDA_ERROR_INVALID_VALUE, API)

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
    SG_COST_RELEASE,
} sg_cost_t;

/* ---- sg_config.c: SIMGPU_* environment, read once -------------------- */
#define SG_MAX_FAILS 8 /* SIMGPU_FAIL entries per function */
#define SG_MAX_DEVICES 8
typedef struct {
    uint64_t mem, granularity, host_granularity, va_size;
    uint64_t devices; /* SIMGPU_DEVICES */
    uint64_t jitter_us, seed;
    bool host_vmm, host_numa_vmm, func_accepts_kernel;
    bool trace; /* SIMGPU_TRACE: one stderr line per API call */
    double hbm_gbps, h2d_gbps, d2h_gbps, d2d_gbps, zerocopy_gbps, link_gbps, tflops;
    uint64_t kernel_ns, launch_ns, api_ns, memcreate_ns, memmap_ns;
    uint64_t setaccess_ns, unmap_ns, reserve_ns, release_ns;
    /* host-backed handles cost more, and more the bigger they are: the
     * cost of a 2 MiB handle, then each MiB more (H100 and H200, driver
     * 580: docs/gpu-facts.md) */
    uint64_t host_memcreate_ns, host_setaccess_ns, host_unmap_ns, host_release_ns;
    uint64_t host_memcreate_mib_ns, host_setaccess_mib_ns, host_unmap_mib_ns, host_release_mib_ns;
    char report[4096];
    char timeline[4096]; /* SIMGPU_TIMELINE: one line per op submitted */
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

/* ---- sg_link.c: the host<->device link, one per direction --------------
 * Usage in virtual time, piecewise constant: rate[i] GB/s is booked on
 * [t[i], t[i+1]); before t[0] and after the last point nothing is. */
typedef struct {
    uint64_t *t;
    double *rate;
    int n, cap;
} sg_link_t;

enum { SG_LINK_H2D, SG_LINK_D2H };

/* Books a transfer of `bytes` on link `dir`, starting at virtual time
 * start, at up to `cap_gbps` and never past what earlier bookings leave of
 * the link's total (SIMGPU_LINK_GBPS). Returns its duration in ns. An
 * allocation failure aborts (a test double may stop where a driver would
 * not). g.lock held. */
uint64_t sg_link_book(int dir, uint64_t start, uint64_t bytes, double cap_gbps);
/* Forgets bookings that end before `now`: nothing can start earlier. */
void sg_link_trim(uint64_t now);

/* ---- sg_stream.c: an engine's bookings in virtual time ----
 * An op's time is fixed when it is issued, but one issued behind a wait
 * may be booked far ahead: a copy device to device queued after a long
 * host-to-device copy on spillway's stream. The GPU runs other streams'
 * kernels in the time before it, so an op whose duration does not depend
 * on when it starts (no link traffic to share) takes the first gap that
 * holds it; one with link traffic, whose time the link's bookings set,
 * goes after everything booked, as before. */
#define SG_ENGINE_BOOKINGS 64
typedef struct {
    uint64_t start[SG_ENGINE_BOOKINGS], end[SG_ENGINE_BOOKINGS]; /* by start */
    int n;
    uint64_t floor;  /* no gap before this: bookings forgotten end by then */
    uint64_t last;   /* the latest end booked */
} sg_engine_t;

typedef struct sg_state {
    sg_config_t cfg;
    bool initialized;       /* cuInit succeeded */
    /* g.lock guards everything below and all stream/event/op state. */
    pthread_mutex_t lock;
    pthread_cond_t done_cv; /* broadcast whenever an op completes */
    uint64_t host_ns;       /* the host's virtual clock */
    sg_engine_t engine[3];  /* SG_ENGINE_*: what each engine has booked */
    uint64_t last_end_ns;   /* the latest completion of any op */
    sg_link_t link[2];      /* SG_LINK_*: bookings of the PCIe link */
    uint64_t op_seq;
    CUresult sticky;        /* CUDA_SUCCESS until a fault */
    sg_stats_t st;
    char *hazard_text[SG_MAX_HAZARD_TEXT];
    struct sg_stream *streams; /* all live streams, for sync and hazards */
    struct sg_stream *legacy;  /* the legacy default stream */
    struct sg_capture *captures; /* active captures */
    struct sg_op *recent[SG_RECENT]; /* the last ops issued, for races */
    unsigned recent_at;
    int ctx_refs[SG_MAX_DEVICES]; /* primary context retains, per device */
    unsigned peer[SG_MAX_DEVICES]; /* sg_peer_mask (atomic) */
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
/* A VMM call on `bytes` of a host-backed handle costs host_ns, and
 * mib_ns for each MiB past the first two, in all where sg_enter charged
 * device_ns: charges the difference. */
void sg_charge_host_backed(uint64_t device_ns, uint64_t host_ns, uint64_t mib_ns, uint64_t bytes);
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
    int device;         /* SG_LOC_DEVICE: the device whose memory it is */
    CUmemAllocationProp prop;
    int refs;           /* 1 while any handle reference lives, + 1 per mapping */
    int handle_refs;    /* cuMemCreate + cuMemRetainAllocationHandle - cuMemRelease */
} sg_phys_t;

typedef struct {
    CUdeviceptr va;
    uint64_t size;
    sg_phys_t *phys;
    uint64_t phys_off;
    int access;         /* SG_ACCESS_*: what cuMemSetAccess granted */
    unsigned devs;      /* bit d: device d was granted it (VMM mappings) */
    bool legacy;        /* made by cuMemAlloc, not by cuMemMap */
} sg_map_t;

/* Bytes of one physical handle, as an operation reaches them. */
typedef struct {
    uint64_t id, off, len; /* handle, offset into it, length */
    bool write;
    bool unordered; /* from an unordered range: not checked for races */
} sg_extent_t;

/* A memory range an operation touches. A kernel may read a host-backed
 * range more than once (a tiled GEMM's weight, once per tile row):
 * host_reads says how often; 0 means once. */
typedef struct {
    uint64_t addr, len;
    bool write;
    uint32_t host_reads;
    /* Touched only if the kernel so decides when it runs (spillway's
     * conditional write-back): checked for hazards like any range, but
     * its bytes are not charged, since the cost is fixed at issue. */
    bool maybe;
    /* Read while other streams may write it, without harm: kept out of
     * the race check (spillway_unwindow's spans, sg_kernels.c says why). */
    bool unordered;
    /* Loaded in words of this many bytes (0: any address): a range that
     * starts elsewhere faults, as a misaligned load does on a GPU (there
     * CUDA_ERROR_MISALIGNED_ADDRESS; here, as every fault, the sticky
     * CUDA_ERROR_ILLEGAL_ADDRESS). */
    uint8_t align;
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
/* Multicast objects (sg_multicast.c), memory lock held: whether h is one's
 * id, a mapping of one at va, its release. */
bool sg_mc_is(uint64_t h);
CUresult sg_mc_map(CUdeviceptr va, size_t size, uint64_t h);
CUresult sg_mc_release(uint64_t h);
CUresult sg_map_remove(CUdeviceptr va, uint64_t size);
sg_map_t *sg_map_find(uint64_t addr);
/* Sets the access of every mapping in the range to `access` and its
 * granted devices to (devs | grant) & ~revoke. */
int sg_map_set_access(CUdeviceptr va, uint64_t size, int access, unsigned grant, unsigned revoke);
/* Pinned host allocations (cuMemAllocHost): device pointer == host pointer. */
CUresult sg_pinned_alloc(uint64_t size, void **out);
CUresult sg_pinned_free(void *p);
bool sg_pinned_find(const void *p, void **base, uint64_t *size);
/* Legacy device allocations (cuMemAlloc). */
CUresult sg_legacy_alloc(uint64_t size, int device, CUdeviceptr *out);
/* The device a legacy allocation at p was made on (0 for other memory). */
int sg_legacy_device(CUdeviceptr p);
CUresult sg_legacy_free(CUdeviceptr p);
bool sg_legacy_range(CUdeviceptr p, CUdeviceptr *base, uint64_t *size);
/* Reads the byte counters consistently (they live under a leaf lock). */
void sg_mem_stats(sg_stats_t *into);
/* Device dev's own bytes and their peak (each device has SIMGPU_MEM). */
void sg_mem_device_stats(int dev, uint64_t *bytes, uint64_t *peak);
/* Whether a kernel running on device dev may reach [addr, +len), already
 * translated: every device-VA mapping under it is either granted to dev
 * (cuMemSetAccess), or a cuMemAlloc of dev's own, or of a device whose
 * memory dev's context enabled peer access to. Caller holds mem_lock for
 * reading. Memory outside device VA (pinned host) is reachable. */
bool sg_mem_reachable(uint64_t addr, uint64_t len, int dev);
/* Peer access: bit p of the mask is set when device dev's context may
 * reach device p's cuMemAlloc memory (cuCtxEnablePeerAccess). Atomic:
 * stream workers read it without g.lock. */
unsigned sg_peer_mask(int dev);

/* ---- sg_kernels.c: the built-in kernels ------------------------------ */
#define SG_MAX_PARAMS 8
#define SG_MAX_RANGES 24 /* sg_foreach_add_u32 names 20 */
#define SG_MAX_ARGS 1024 /* room for spillway_unwindow's 592 bytes, and more */
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
/* sg_module.c: the kernel behind a CUfunction or CUkernel handle, and its
 * device (-1: any); NULL for any other handle. g.lock held. */
const sg_kernel_t *sg_func_kernel(const void *h, int *device);
/* Packs launch parameters into args (SG_MAX_ARGS bytes), from
 * kernelParams or an extra buffer, as cuLaunchKernel does. */
CUresult sg_pack_args(const sg_kernel_t *k, void **params, void **extra, unsigned char *args);
int sg_kernel_count(void);
const sg_kernel_t *sg_kernel_at(int i);

/* ---- sg_tensormap.c: TMA descriptors --------------------------------- */
typedef struct {
    uint64_t addr;              /* the global address */
    unsigned type, rank;        /* CUtensorMapDataType, 1..5 */
    uint64_t dim[5], stride[4]; /* elements; bytes, for dimensions 1.. */
    uint32_t box[5];
} sg_tensormap_t;

/* Reads a descriptor made by cuTensorMapEncodeTiled (128 bytes at desc,
 * any alignment). False when the bytes are not one. */
bool sg_tensormap_decode(const void *desc, sg_tensormap_t *out);

/* ---- sg_stream.c: streams, events, ops, virtual time ----------------- */
typedef enum {
    SG_OP_KERNEL, SG_OP_COPY, SG_OP_MEMSET, SG_OP_MARKER, SG_OP_HOST_FUNC,
    SG_OP_FREE,
    SG_OP_WAIT_VALUE, /* cuStreamWaitValue*: reads its word, never blocks */
    SG_OP_MEM_ALLOC,  /* a graph's allocation node (sg_graphmem.c) */
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
    int device;                   /* the device it runs on: the context's when issued */
    /* Its launch configuration, for cuGraphKernelNodeGetParams: the
     * CUfunction or CUkernel handle it was launched with (kern_field: it
     * came in CUDA_KERNEL_NODE_PARAMS_v2.kern), grid, block, shared bytes. */
    void *func;
    bool kern_field;
    unsigned grid[3], block[3], smem;
    /* Aligned for the argument structs read from it (8-byte words). */
    _Alignas(16) unsigned char args[SG_MAX_ARGS];
    /* copy: ranges[0] is dst, ranges[1] is src; memset: ranges[0] */
    uint64_t memset_value;
    unsigned memset_width;        /* 1, 2, 4 or 8 bytes */
    int engine;
    unsigned pageable;            /* bit i: range i may be plain host memory */
    /* host function */
    CUhostFn fn;
    void *user;
    /* cuStreamAddCallback: called as callback(callback_stream, CUDA_SUCCESS,
     * user) instead of fn(user) */
    CUstreamCallback callback;
    CUstream callback_stream;
    /* A pitched copy or memset (sg_copy2d.c), when shape.width is not 0:
     * depth slices of height rows of width bytes; side i (as ranges[i],
     * whose addr is its first byte) has rows pitch[i] and slices slice[i]
     * bytes apart. ranges[i] is the side's bounding range. */
    struct { uint64_t width, height, depth, pitch[2], slice[2]; } shape;
    /* A graph allocation this alloc or free op stands for (a reference). */
    struct sg_gmem *gmem;
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
    int device;           /* the context's device when made; -1: the legacy
                           * and per-thread streams, which every device shares */
    unsigned rng;
    struct sg_capture *capture;
    int lane;             /* its index in capture->streams */
    int *front, nfront;   /* capture: the nodes its next op depends on */
    CUgraphNode *deps_out; /* cuStreamGetCaptureInfo's copy of front, as handles */
} sg_stream_t;

typedef struct sg_event {
    unsigned flags;
    int device;          /* the current context's when made (-1: none) */
    sg_op_t *op;         /* the marker recorded last (ref held), or NULL */
    uint64_t time_ns;
    bool recorded;
    uint64_t cap_id;     /* recorded in this capture (0: none) ... */
    int *cap_front, ncap_front; /* ... standing for these nodes */
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
CUresult sg_ctx_sync(void);                /* g.lock held; every stream */
/* cuCtxSynchronize of device dev's context: its own streams and the
 * shared legacy and per-thread ones, not another device's. g.lock held. */
CUresult sg_ctx_sync_device(int dev);
bool sg_op_vt_done(sg_op_t *op);           /* g.lock held */
/* Records a hazard for each queued or running op that overlaps
 * [addr, addr+len), naming the call and the op. g.lock held. */
void sg_check_hazard(const char *call, uint64_t addr, uint64_t len);
/* A hazard if [addr, +len), about to be unmapped or freed, is memory of
 * a dma-buf still open (sg_dmabuf.c). sg_lock held. */
void sg_dmabuf_check(const char *call, uint64_t addr, uint64_t len);
/* The same for an op whose ranges were backed by handle id when issued. */
void sg_check_hazard_handle(const char *call, uint64_t id);
bool sg_is_stream(void *h);
bool sg_is_event(void *h);
void sg_handle_add(void *h, int kind);
void sg_handle_del(void *h);
int sg_handle_kind(const void *h);
enum { SG_H_NONE, SG_H_STREAM, SG_H_EVENT, SG_H_MODULE, SG_H_FUNC, SG_H_LIBRARY,
       SG_H_KERNEL, SG_H_GRAPH, SG_H_EXEC, SG_H_POOL,
       SG_H_NODE, SG_H_USER_OBJECT, SG_H_GREEN };

/* ---- sg_capture.c: stream capture across streams ---------------------- */
/* A node of a captured graph: one recorded op and the nodes it waits for.
 * Its address is the CUgraphNode. */
typedef struct sg_node {
    sg_op_t *op;          /* the recorded work, never issued itself */
    int *deps, ndeps;     /* indices of earlier nodes */
    int lane;             /* the captured stream it came from; 0 is the origin */
    struct sg_event *record_event; /* an event record node: the event */
    struct sg_event *wait_event;   /* an event wait node: the event */
    /* sg_graphbuild.c / sg_graphparams.c: an exec's copy points at the
     * graph node it was made from (cuGraphExec*SetParams name the graph's
     * node); child marks the node cuGraphAddChildGraphNode returns;
     * kparams are the pointers cuGraphKernelNodeGetParams hands out, into
     * op->args. */
    struct sg_node *origin;
    bool child;
    void *kparams[SG_MAX_PARAMS];
} sg_node_t;

typedef struct sg_capture {
    struct sg_capture *next;
    sg_stream_t *stream;  /* the origin: where it began and must end */
    CUstreamCaptureMode mode;
    pthread_t thread;
    uint64_t id;
    bool invalidated;
    sg_node_t **nodes;    /* in capture order, which is a topological order */
    int nnodes, nodes_cap;
    sg_stream_t **streams; /* joined streams, [0] the origin; index = lane */
    int nstreams;
    void *into;           /* cuStreamBeginCaptureToGraph: the graph it adds to */
} sg_capture_t;

/* A call that would synchronize during a capture: refuses it and
 * invalidates the captures it breaks. stream is the stream being
 * synchronized, or NULL. Returns CUDA_SUCCESS when allowed. g.lock held. */
CUresult sg_capture_guard(sg_stream_t *stream);
/* Appends op to s's capture as a node after s's frontier (consuming it);
 * refused once invalidated. g.lock held. */
CUresult sg_capture_record(sg_stream_t *s, sg_op_t *op);
/* cuEventRecord on a capturing stream: the event now stands for s's
 * frontier in this capture; external adds an event record node. */
CUresult sg_capture_event_record(sg_stream_t *s, struct sg_event *e, bool external);
/* cuStreamWaitEvent where the event or the stream is in a capture: joins s
 * to the event's capture (fork), merges the frontiers (join), or adds an
 * event wait node (external). Returns CUDA_ERROR_NOT_FOUND when capture is
 * not involved. g.lock held. */
CUresult sg_capture_wait(sg_stream_t *s, struct sg_event *e, bool external);
/* The active capture with this id, or NULL. g.lock held. */
sg_capture_t *sg_capture_find(uint64_t id);
/* Takes the nodes of an ended capture (graph construction). */
void sg_nodes_free(sg_node_t **nodes, int n);

/* ---- sg_graph.c: graphs, instantiation and replay --------------------- */
/* A CUgraph, or a CUgraphExec made from one. */
typedef struct sg_graph {
    sg_node_t **nodes;
    int nnodes, nlanes;
    struct sg_stream **lanes; /* exec only: lanes 1..nlanes-1 */
    int *order;          /* exec only: the graph index each node was made from */
} sg_graph_t;
/* Instantiates hg (its handle is checked); *res says why it failed. */
CUresult sg_graph_instantiate(CUgraphExec *out, CUgraph hg, CUgraphInstantiateResult *res);
/* A copy of a node: its own op and dependency array, not a handle. */
sg_node_t *sg_node_copy(const sg_node_t *n);
CUgraphNodeType sg_node_type(const sg_node_t *n);
/* Makes a CUgraph of nodes (taking them). g.lock held. */
CUresult sg_graph_new(sg_node_t **nodes, int nnodes, int nlanes, CUgraph *out);
/* Appends an ended capture's nodes to graph hg (taking them), for
 * cuStreamBeginCaptureToGraph. g.lock held. */
CUresult sg_graph_append(CUgraph hg, sg_node_t **nodes, int nnodes, int nlanes);

/* ---- sg_graphbuild.c: building graphs -------------------------------- */
/* A topological order of g's nodes (dependencies first, otherwise in
 * their order): order[k] is a node index. CUDA_ERROR_INVALID_VALUE for a
 * cycle. g.lock held. */
CUresult sg_graph_order(const sg_graph_t *g, int *order);
/* A graph, an exec, or a graph's node (an exec's copy is no handle) by
 * handle; NULL for anything else. */
sg_graph_t *sg_graph_of(CUgraph h);
sg_graph_t *sg_exec_of(CUgraphExec h);
sg_node_t *sg_node_of(CUgraphNode h);

/* ---- sg_graphparams.c: node parameters and updates -------------------- */
/* Sets a kernel op from node parameters, packing the arguments as a
 * launch does; want_dev >= 0: the device may not change. Nothing changes
 * on failure. g.lock held. */
CUresult sg_kernel_node_set(sg_op_t *op, const CUDA_KERNEL_NODE_PARAMS *p, int want_dev);
CUDA_KERNEL_NODE_PARAMS sg_kernel_params_from_v1(const CUDA_KERNEL_NODE_PARAMS_v1 *p);
/* A copy or memset node's op from its parameters: one contiguous span
 * (else CUDA_ERROR_NOT_SUPPORTED). Nothing changes on failure. */
CUresult sg_copy_node_set(sg_op_t *op, const CUDA_MEMCPY3D *p);
CUresult sg_memset_node_set(sg_op_t *op, const CUDA_MEMSET_NODE_PARAMS *p);
/* The context a memcpy or memset node runs in: a device's, or NULL for
 * the current one. */
bool sg_node_ctx_ok(CUcontext ctx);

/* ---- sg_alloc.c: allocations ---------------------------------------- */
/* Stream-ordered allocation from pool (NULL: the device's current pool). */
CUresult sg_alloc_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hs,
                        bool pt);

/* ---- sg_pool.c: memory pools ----------------------------------------- */
/* Validates a pool handle; NULL becomes the device's current pool. */
CUresult sg_pool_check(CUmemoryPool *pool);
/* Counts a live allocation against its pool, and its free. */
void sg_pool_note_alloc(CUmemoryPool pool, CUdeviceptr ptr, uint64_t size);
void sg_pool_note_free(CUdeviceptr ptr);
/* Whether ptr is the base of a live pool allocation. */
bool sg_pool_owns(CUdeviceptr ptr);

/* ---- sg_copy.c / sg_copy2d.c: copies and memsets ---------------------- */
/* Where an address is: device VA or pinned (usable by the GPU). */
bool sg_gpu_visible(uint64_t p);
/* Issues a copy or memset op on stream hs (sync: and waits for it,
 * refused during a capture, as a synchronous cuMemcpy is). Consumes op. */
CUresult sg_copy_issue(sg_op_t *op, CUstream hs, bool pt, bool sync);
/* Moves a pitched op's bytes row by row (op->shape). Runs on a stream
 * worker, mem_lock held for reading. False on a fault. */
bool sg_pitched_run(const sg_op_t *op);

/* ---- sg_stream.c: simgpu's own work ------------------------------------ */
/* Queues op (a host function or a free) on simgpu's service stream, which
 * runs outside virtual time: a user object's destructor, the release of a
 * graph's memory. g.lock held; consumes op. */
void sg_service(sg_op_t *op);

/* ---- sg_graphmem.c: graph memory nodes -------------------------------- */
/* cuMemAllocAsync on capturing stream s: an address fixed for the graph,
 * and an alloc node. g.lock not held. */
CUresult sg_gmem_capture_alloc(CUdeviceptr *dptr, size_t bytesize, CUstream hs, bool pt);
/* The graph allocation starting at p (a reference for an op), or NULL. g.lock held. */
struct sg_gmem *sg_gmem_get(CUdeviceptr p);
void sg_gmem_ref(struct sg_gmem *g);  /* g.lock held */
void sg_gmem_put(struct sg_gmem *g);  /* g.lock held */
/* An alloc or free node reached on a stream worker (no lock held). */
void sg_gmem_run(struct sg_gmem *g, bool alloc);
/* cuMemFree of p, after its synchronization: true when p is a graph's
 * allocation that a graph still holds (its use ends; the memory stays the
 * graph's), false when the caller frees it. No lock held. */
bool sg_gmem_free_sync(CUdeviceptr p);

/* ---- sg_userobj.c: user objects --------------------------------------- */
/* Drops every reference graph hg holds (cuGraphDestroy). g.lock held. */
void sg_user_objects_graph_gone(CUgraph hg);

/* ---- sg_api.c ------------------------------------------------------ */
#define SG_DRIVER_VERSION 13000 /* what cuDriverGetVersion reports */
/* Device dev's primary context (sg_device_ok(dev)), and this thread's
 * current context. */
CUcontext sg_primary_ctx(CUdevice dev);
CUcontext sg_current_ctx(void);
/* The devices' attribute values (the same for each) and device dev's
 * UUID, for simgpu's own use: these do not count as API calls. */
int sg_device_attribute(CUdevice_attribute attrib);
CUuuid sg_device_uuid(CUdevice dev);

/* ---- sg_report.c ----------------------------------------------------- */
void sg_report_write(void);

#endif

/*
 * cuGetProcAddress: how the CUDA runtime, cuBLAS and Triton reach every
 * entry point after one dlsym (docs/cuda-facts.md §1).
 *
 * The table lists each exported function under the base name it is asked
 * for, with the first driver API version it belongs to and whether it is
 * the default-stream (LEG), per-thread (PT) or only (ANY) form. A request
 * gets the newest entry not newer than the version it names, in the
 * stream mode its flags ask for; a per-thread request for a function with
 * no per-thread form at that version gets the default-stream form.
 */
#include "sg.h"

#include <string.h>

enum { ANY, LEG, PT };

typedef struct {
    const char *name;
    int version;
    int mode;
    void *fn;
} entry_t;

#define E(name, ver, mode, sym) {name, ver, mode, (void *)sym}

static const entry_t table[] = {
    E("cuInit", 2000, ANY, cuInit),
    E("cuDriverGetVersion", 2020, ANY, cuDriverGetVersion),
    E("cuDeviceGet", 2000, ANY, cuDeviceGet),
    E("cuDeviceGetCount", 2000, ANY, cuDeviceGetCount),
    E("cuDeviceGetName", 2000, ANY, cuDeviceGetName),
    E("cuDeviceTotalMem", 3020, ANY, cuDeviceTotalMem_v2),
    E("cuDeviceGetAttribute", 2000, ANY, cuDeviceGetAttribute),
    E("cuDeviceGetUuid", 9020, ANY, cuDeviceGetUuid),
    E("cuDeviceGetUuid", 11040, ANY, cuDeviceGetUuid_v2),
    E("cuGetExportTable", 3000, ANY, cuGetExportTable),
    E("cuModuleGetLoadingMode", 11070, ANY, cuModuleGetLoadingMode),
    E("cuDevicePrimaryCtxRetain", 7000, ANY, cuDevicePrimaryCtxRetain),
    E("cuDevicePrimaryCtxRelease", 7000, ANY, cuDevicePrimaryCtxRelease),
    E("cuDevicePrimaryCtxRelease", 11000, ANY, cuDevicePrimaryCtxRelease_v2),
    E("cuDevicePrimaryCtxGetState", 7000, ANY, cuDevicePrimaryCtxGetState),
    E("cuCtxSetCurrent", 4000, ANY, cuCtxSetCurrent),
    E("cuCtxGetCurrent", 4000, ANY, cuCtxGetCurrent),
    E("cuCtxGetDevice", 2000, ANY, cuCtxGetDevice),
    E("cuCtxGetDevice", 13000, ANY, cuCtxGetDevice_v2),
    E("cuCtxPushCurrent", 4000, ANY, cuCtxPushCurrent_v2),
    E("cuCtxPopCurrent", 4000, ANY, cuCtxPopCurrent_v2),
    E("cuCtxGetStreamPriorityRange", 5050, ANY, cuCtxGetStreamPriorityRange),
    E("cuCtxSynchronize", 2000, ANY, cuCtxSynchronize),
    E("cuCtxSynchronize", 13000, ANY, cuCtxSynchronize_v2),
    E("cuDeviceCanAccessPeer", 4000, ANY, cuDeviceCanAccessPeer),
    E("cuCtxEnablePeerAccess", 4000, ANY, cuCtxEnablePeerAccess),
    E("cuCtxDisablePeerAccess", 4000, ANY, cuCtxDisablePeerAccess),
    E("cuMemcpyPeer", 4000, LEG, cuMemcpyPeer),
    E("cuMemcpyPeer", 7000, PT, cuMemcpyPeer_ptds),
    E("cuMemcpyPeerAsync", 4000, LEG, cuMemcpyPeerAsync),
    E("cuMemcpyPeerAsync", 7000, PT, cuMemcpyPeerAsync_ptsz),
    E("cuGetErrorName", 6000, ANY, cuGetErrorName),
    E("cuGetErrorString", 6000, ANY, cuGetErrorString),
    E("cuGetProcAddress", 11030, ANY, cuGetProcAddress),
    E("cuGetProcAddress", 12000, ANY, cuGetProcAddress_v2),
    E("cuMemAlloc", 3020, ANY, cuMemAlloc_v2),
    E("cuMemFree", 3020, ANY, cuMemFree_v2),
    E("cuMemGetInfo", 3020, ANY, cuMemGetInfo_v2),
    E("cuMemAllocHost", 3020, ANY, cuMemAllocHost_v2),
    E("cuMemHostAlloc", 2020, ANY, cuMemHostAlloc),
    E("cuMemFreeHost", 2000, ANY, cuMemFreeHost),
    E("cuMemHostGetDevicePointer", 3020, ANY, cuMemHostGetDevicePointer_v2),
    E("cuMemGetAddressRange", 3020, ANY, cuMemGetAddressRange_v2),
    E("cuPointerGetAttribute", 4000, ANY, cuPointerGetAttribute),
    E("cuPointerGetAttributes", 7000, ANY, cuPointerGetAttributes),
    E("cuMemcpyHtoD", 3020, LEG, cuMemcpyHtoD_v2),
    E("cuMemcpyHtoD", 7000, PT, cuMemcpyHtoD_v2_ptds),
    E("cuMemcpyDtoH", 3020, LEG, cuMemcpyDtoH_v2),
    E("cuMemcpyDtoH", 7000, PT, cuMemcpyDtoH_v2_ptds),
    E("cuMemcpyDtoD", 3020, LEG, cuMemcpyDtoD_v2),
    E("cuMemcpyDtoD", 7000, PT, cuMemcpyDtoD_v2_ptds),
    E("cuMemcpy", 4000, LEG, cuMemcpy),
    E("cuMemcpy", 7000, PT, cuMemcpy_ptds),
    E("cuMemcpyHtoDAsync", 3020, LEG, cuMemcpyHtoDAsync_v2),
    E("cuMemcpyHtoDAsync", 7000, PT, cuMemcpyHtoDAsync_v2_ptsz),
    E("cuMemcpyDtoHAsync", 3020, LEG, cuMemcpyDtoHAsync_v2),
    E("cuMemcpyDtoHAsync", 7000, PT, cuMemcpyDtoHAsync_v2_ptsz),
    E("cuMemcpyDtoDAsync", 3020, LEG, cuMemcpyDtoDAsync_v2),
    E("cuMemcpyDtoDAsync", 7000, PT, cuMemcpyDtoDAsync_v2_ptsz),
    E("cuMemcpyAsync", 4000, LEG, cuMemcpyAsync),
    E("cuMemcpyAsync", 7000, PT, cuMemcpyAsync_ptsz),
    E("cuMemsetD8", 3020, LEG, cuMemsetD8_v2),
    E("cuMemsetD8", 7000, PT, cuMemsetD8_v2_ptds),
    E("cuMemsetD32", 3020, LEG, cuMemsetD32_v2),
    E("cuMemsetD32", 7000, PT, cuMemsetD32_v2_ptds),
    E("cuMemsetD16", 3020, LEG, cuMemsetD16_v2),
    E("cuMemsetD16", 7000, PT, cuMemsetD16_v2_ptds),
    E("cuMemsetD8Async", 3020, LEG, cuMemsetD8Async),
    E("cuMemsetD8Async", 7000, PT, cuMemsetD8Async_ptsz),
    E("cuMemsetD32Async", 3020, LEG, cuMemsetD32Async),
    E("cuMemsetD32Async", 7000, PT, cuMemsetD32Async_ptsz),
    E("cuMemsetD16Async", 3020, LEG, cuMemsetD16Async),
    E("cuMemsetD16Async", 7000, PT, cuMemsetD16Async_ptsz),
    E("cuMemcpy2D", 3020, LEG, cuMemcpy2D_v2),
    E("cuMemcpy2D", 7000, PT, cuMemcpy2D_v2_ptds),
    E("cuMemcpy2DUnaligned", 3020, LEG, cuMemcpy2DUnaligned_v2),
    E("cuMemcpy2DUnaligned", 7000, PT, cuMemcpy2DUnaligned_v2_ptds),
    E("cuMemcpy2DAsync", 3020, LEG, cuMemcpy2DAsync_v2),
    E("cuMemcpy2DAsync", 7000, PT, cuMemcpy2DAsync_v2_ptsz),
    E("cuMemcpy3D", 3020, LEG, cuMemcpy3D_v2),
    E("cuMemcpy3D", 7000, PT, cuMemcpy3D_v2_ptds),
    E("cuMemcpy3DAsync", 3020, LEG, cuMemcpy3DAsync_v2),
    E("cuMemcpy3DAsync", 7000, PT, cuMemcpy3DAsync_v2_ptsz),
    E("cuMemsetD2D8", 3020, LEG, cuMemsetD2D8_v2),
    E("cuMemsetD2D8", 7000, PT, cuMemsetD2D8_v2_ptds),
    E("cuMemsetD2D16", 3020, LEG, cuMemsetD2D16_v2),
    E("cuMemsetD2D16", 7000, PT, cuMemsetD2D16_v2_ptds),
    E("cuMemsetD2D32", 3020, LEG, cuMemsetD2D32_v2),
    E("cuMemsetD2D32", 7000, PT, cuMemsetD2D32_v2_ptds),
    E("cuMemsetD2D8Async", 3020, LEG, cuMemsetD2D8Async),
    E("cuMemsetD2D8Async", 7000, PT, cuMemsetD2D8Async_ptsz),
    E("cuMemsetD2D16Async", 3020, LEG, cuMemsetD2D16Async),
    E("cuMemsetD2D16Async", 7000, PT, cuMemsetD2D16Async_ptsz),
    E("cuMemsetD2D32Async", 3020, LEG, cuMemsetD2D32Async),
    E("cuMemsetD2D32Async", 7000, PT, cuMemsetD2D32Async_ptsz),
    E("cuStreamAddCallback", 5000, LEG, cuStreamAddCallback),
    E("cuStreamAddCallback", 7000, PT, cuStreamAddCallback_ptsz),
    E("cuStreamUpdateCaptureDependencies", 11030, LEG, cuStreamUpdateCaptureDependencies),
    E("cuStreamUpdateCaptureDependencies", 11030, PT, cuStreamUpdateCaptureDependencies_ptsz),
    E("cuStreamUpdateCaptureDependencies", 12030, LEG, cuStreamUpdateCaptureDependencies_v2),
    E("cuStreamUpdateCaptureDependencies", 12030, PT, cuStreamUpdateCaptureDependencies_v2_ptsz),
    E("cuUserObjectCreate", 11030, ANY, cuUserObjectCreate),
    E("cuUserObjectRetain", 11030, ANY, cuUserObjectRetain),
    E("cuUserObjectRelease", 11030, ANY, cuUserObjectRelease),
    E("cuGraphRetainUserObject", 11030, ANY, cuGraphRetainUserObject),
    E("cuGraphReleaseUserObject", 11030, ANY, cuGraphReleaseUserObject),
    E("cuDeviceGetDefaultMemPool", 11020, ANY, cuDeviceGetDefaultMemPool),
    E("cuDeviceGetMemPool", 11020, ANY, cuDeviceGetMemPool),
    E("cuDeviceSetMemPool", 11020, ANY, cuDeviceSetMemPool),
    E("cuMemPoolCreate", 11020, ANY, cuMemPoolCreate),
    E("cuMemPoolDestroy", 11020, ANY, cuMemPoolDestroy),
    E("cuMemPoolTrimTo", 11020, ANY, cuMemPoolTrimTo),
    E("cuMemPoolSetAttribute", 11020, ANY, cuMemPoolSetAttribute),
    E("cuMemPoolGetAttribute", 11020, ANY, cuMemPoolGetAttribute),
    E("cuMemAllocFromPoolAsync", 11020, LEG, cuMemAllocFromPoolAsync),
    E("cuMemAllocFromPoolAsync", 11020, PT, cuMemAllocFromPoolAsync_ptsz),
    E("cuCtxGetApiVersion", 3020, ANY, cuCtxGetApiVersion),
    E("cuMemAllocAsync", 11020, LEG, cuMemAllocAsync),
    E("cuMemAllocAsync", 11020, PT, cuMemAllocAsync_ptsz),
    E("cuMemFreeAsync", 11020, LEG, cuMemFreeAsync),
    E("cuMemFreeAsync", 11020, PT, cuMemFreeAsync_ptsz),
    E("cuMemAddressReserve", 10020, ANY, cuMemAddressReserve),
    E("cuMemAddressFree", 10020, ANY, cuMemAddressFree),
    E("cuMemCreate", 10020, ANY, cuMemCreate),
    E("cuMemRelease", 10020, ANY, cuMemRelease),
    E("cuMemMap", 10020, ANY, cuMemMap),
    E("cuMemUnmap", 10020, ANY, cuMemUnmap),
    E("cuMemSetAccess", 10020, ANY, cuMemSetAccess),
    E("cuMemGetAccess", 10020, ANY, cuMemGetAccess),
    E("cuMemGetAllocationGranularity", 10020, ANY, cuMemGetAllocationGranularity),
    E("cuMemGetAllocationPropertiesFromHandle", 10020, ANY, cuMemGetAllocationPropertiesFromHandle),
    E("cuMemRetainAllocationHandle", 11000, ANY, cuMemRetainAllocationHandle),
    E("cuIpcGetMemHandle", 4010, ANY, cuIpcGetMemHandle),
    E("cuMemExportToShareableHandle", 10020, ANY, cuMemExportToShareableHandle),
    E("cuMemGetHandleForAddressRange", 11070, ANY, cuMemGetHandleForAddressRange),
    E("cuArray3DCreate", 3020, ANY, cuArray3DCreate_v2),
    E("cuArrayDestroy", 2000, ANY, cuArrayDestroy),
    E("cuMemMapArrayAsync", 11010, ANY, cuMemMapArrayAsync),
    E("cuMulticastCreate", 12010, ANY, cuMulticastCreate),
    E("cuMulticastAddDevice", 12010, ANY, cuMulticastAddDevice),
    E("cuMulticastGetGranularity", 12010, ANY, cuMulticastGetGranularity),
    E("cuMulticastBindMem", 12010, ANY, cuMulticastBindMem),
    E("cuMulticastBindAddr", 12010, ANY, cuMulticastBindAddr),
    E("cuMulticastUnbind", 12010, ANY, cuMulticastUnbind),
    E("cuStreamCreate", 2000, ANY, cuStreamCreate),
    E("cuStreamCreateWithPriority", 5050, ANY, cuStreamCreateWithPriority),
    E("cuDeviceGetDevResource", 12040, ANY, cuDeviceGetDevResource),
    E("cuDevResourceGenerateDesc", 12040, ANY, cuDevResourceGenerateDesc),
    E("cuGreenCtxCreate", 12040, ANY, cuGreenCtxCreate),
    E("cuGreenCtxDestroy", 12040, ANY, cuGreenCtxDestroy),
    E("cuCtxFromGreenCtx", 12040, ANY, cuCtxFromGreenCtx),
    E("cuGreenCtxStreamCreate", 12050, ANY, cuGreenCtxStreamCreate),
    E("cuStreamDestroy", 4000, ANY, cuStreamDestroy_v2),
    E("cuStreamQuery", 2000, LEG, cuStreamQuery),
    E("cuStreamQuery", 7000, PT, cuStreamQuery_ptsz),
    E("cuStreamSynchronize", 2000, LEG, cuStreamSynchronize),
    E("cuStreamSynchronize", 7000, PT, cuStreamSynchronize_ptsz),
    E("cuStreamWaitEvent", 3020, LEG, cuStreamWaitEvent),
    E("cuStreamWaitEvent", 7000, PT, cuStreamWaitEvent_ptsz),
    E("cuStreamGetPriority", 5050, LEG, cuStreamGetPriority),
    E("cuStreamGetPriority", 7000, PT, cuStreamGetPriority_ptsz),
    E("cuStreamGetFlags", 5050, LEG, cuStreamGetFlags),
    E("cuStreamGetFlags", 7000, PT, cuStreamGetFlags_ptsz),
    E("cuStreamGetCtx", 9020, LEG, cuStreamGetCtx),
    E("cuStreamGetCtx", 9020, PT, cuStreamGetCtx_ptsz),
    E("cuLaunchHostFunc", 10000, LEG, cuLaunchHostFunc),
    E("cuLaunchHostFunc", 10000, PT, cuLaunchHostFunc_ptsz),
    E("cuEventCreate", 2000, ANY, cuEventCreate),
    E("cuEventRecord", 2000, LEG, cuEventRecord),
    E("cuEventRecord", 7000, PT, cuEventRecord_ptsz),
    E("cuEventRecordWithFlags", 11010, LEG, cuEventRecordWithFlags),
    E("cuEventRecordWithFlags", 11010, PT, cuEventRecordWithFlags_ptsz),
    E("cuEventQuery", 2000, ANY, cuEventQuery),
    E("cuEventSynchronize", 2000, ANY, cuEventSynchronize),
    E("cuEventElapsedTime", 2000, ANY, cuEventElapsedTime),
    E("cuEventElapsedTime", 12080, ANY, cuEventElapsedTime_v2),
    E("cuEventDestroy", 4000, ANY, cuEventDestroy_v2),
    E("cuStreamBeginCapture", 10000, LEG, cuStreamBeginCapture),
    E("cuStreamBeginCapture", 10000, PT, cuStreamBeginCapture_ptsz),
    E("cuStreamBeginCapture", 10010, LEG, cuStreamBeginCapture_v2),
    E("cuStreamBeginCapture", 10010, PT, cuStreamBeginCapture_v2_ptsz),
    E("cuStreamBeginCaptureToGraph", 12030, LEG, cuStreamBeginCaptureToGraph),
    E("cuStreamBeginCaptureToGraph", 12030, PT, cuStreamBeginCaptureToGraph_ptsz),
    E("cuGraphCreate", 10000, ANY, cuGraphCreate),
    E("cuStreamWriteValue32", 8000, LEG, sg_v1_write32),
    E("cuStreamWriteValue32", 8000, PT, sg_v1_write32_ptsz),
    E("cuStreamWriteValue64", 9000, LEG, sg_v1_write64),
    E("cuStreamWriteValue64", 9000, PT, sg_v1_write64_ptsz),
    E("cuStreamWaitValue32", 8000, LEG, sg_v1_wait32),
    E("cuStreamWaitValue32", 8000, PT, sg_v1_wait32_ptsz),
    E("cuStreamWaitValue64", 9000, LEG, sg_v1_wait64),
    E("cuStreamWaitValue64", 9000, PT, sg_v1_wait64_ptsz),
    E("cuStreamBatchMemOp", 8000, LEG, sg_v1_batch),
    E("cuStreamBatchMemOp", 8000, PT, sg_v1_batch_ptsz),
    E("cuStreamWriteValue32", 11070, LEG, cuStreamWriteValue32_v2),
    E("cuStreamWriteValue32", 11070, PT, cuStreamWriteValue32_v2_ptsz),
    E("cuStreamWriteValue64", 11070, LEG, cuStreamWriteValue64_v2),
    E("cuStreamWriteValue64", 11070, PT, cuStreamWriteValue64_v2_ptsz),
    E("cuStreamWaitValue32", 11070, LEG, cuStreamWaitValue32_v2),
    E("cuStreamWaitValue32", 11070, PT, cuStreamWaitValue32_v2_ptsz),
    E("cuStreamWaitValue64", 11070, LEG, cuStreamWaitValue64_v2),
    E("cuStreamWaitValue64", 11070, PT, cuStreamWaitValue64_v2_ptsz),
    E("cuStreamBatchMemOp", 11070, LEG, cuStreamBatchMemOp_v2),
    E("cuStreamBatchMemOp", 11070, PT, cuStreamBatchMemOp_v2_ptsz),
    E("cuStreamEndCapture", 10000, LEG, cuStreamEndCapture),
    E("cuStreamEndCapture", 10000, PT, cuStreamEndCapture_ptsz),
    E("cuStreamIsCapturing", 10000, LEG, cuStreamIsCapturing),
    E("cuStreamIsCapturing", 10000, PT, cuStreamIsCapturing_ptsz),
    E("cuStreamGetCaptureInfo", 10010, LEG, cuStreamGetCaptureInfo),
    E("cuStreamGetCaptureInfo", 10010, PT, cuStreamGetCaptureInfo_ptsz),
    E("cuStreamGetCaptureInfo", 11030, LEG, cuStreamGetCaptureInfo_v2),
    E("cuStreamGetCaptureInfo", 11030, PT, cuStreamGetCaptureInfo_v2_ptsz),
    E("cuStreamGetCaptureInfo", 12030, LEG, cuStreamGetCaptureInfo_v3),
    E("cuStreamGetCaptureInfo", 12030, PT, cuStreamGetCaptureInfo_v3_ptsz),
    E("cuGraphInstantiate", 11000, ANY, cuGraphInstantiate_v2),
    E("cuGraphInstantiateWithFlags", 11040, ANY, cuGraphInstantiateWithFlags),
    E("cuGraphLaunch", 10000, LEG, cuGraphLaunch),
    E("cuGraphLaunch", 10000, PT, cuGraphLaunch_ptsz),
    E("cuGraphGetNodes", 10000, ANY, cuGraphGetNodes),
    E("cuGraphGetEdges", 10000, ANY, cuGraphGetEdges),
    E("cuGraphGetEdges", 12030, ANY, cuGraphGetEdges_v2),
    E("cuGraphNodeGetType", 10000, ANY, cuGraphNodeGetType),
    E("cuGraphKernelNodeGetParams", 10000, ANY, cuGraphKernelNodeGetParams),
    E("cuGraphKernelNodeGetParams", 12000, ANY, cuGraphKernelNodeGetParams_v2),
    E("cuGraphKernelNodeSetParams", 10000, ANY, cuGraphKernelNodeSetParams),
    E("cuGraphKernelNodeSetParams", 12000, ANY, cuGraphKernelNodeSetParams_v2),
    E("cuGraphExecKernelNodeSetParams", 10010, ANY, cuGraphExecKernelNodeSetParams),
    E("cuGraphExecKernelNodeSetParams", 12000, ANY, cuGraphExecKernelNodeSetParams_v2),
    E("cuGraphExecUpdate", 10020, ANY, cuGraphExecUpdate),
    E("cuGraphExecUpdate", 12000, ANY, cuGraphExecUpdate_v2),
    E("cuGraphAddKernelNode", 10000, ANY, cuGraphAddKernelNode),
    E("cuGraphAddKernelNode", 12000, ANY, cuGraphAddKernelNode_v2),
    E("cuGraphAddMemcpyNode", 10000, ANY, cuGraphAddMemcpyNode),
    E("cuGraphAddMemsetNode", 10000, ANY, cuGraphAddMemsetNode),
    E("cuGraphAddEmptyNode", 10000, ANY, cuGraphAddEmptyNode),
    E("cuGraphAddHostNode", 10000, ANY, cuGraphAddHostNode),
    E("cuGraphAddChildGraphNode", 10000, ANY, cuGraphAddChildGraphNode),
    E("cuGraphAddDependencies", 10000, ANY, cuGraphAddDependencies),
    E("cuGraphAddDependencies", 12030, ANY, cuGraphAddDependencies_v2),
    E("cuGraphClone", 10000, ANY, cuGraphClone),
    E("cuGraphInstantiateWithParams", 12000, LEG, cuGraphInstantiateWithParams),
    E("cuGraphInstantiateWithParams", 12000, PT, cuGraphInstantiateWithParams_ptsz),
    E("cuGraphUpload", 11010, LEG, cuGraphUpload),
    E("cuGraphUpload", 11010, PT, cuGraphUpload_ptsz),
    E("cuGraphMemcpyNodeGetParams", 10000, ANY, cuGraphMemcpyNodeGetParams),
    E("cuGraphMemcpyNodeSetParams", 10000, ANY, cuGraphMemcpyNodeSetParams),
    E("cuGraphMemsetNodeGetParams", 10000, ANY, cuGraphMemsetNodeGetParams),
    E("cuGraphMemsetNodeSetParams", 10000, ANY, cuGraphMemsetNodeSetParams),
    E("cuGraphExecMemcpyNodeSetParams", 10020, ANY, cuGraphExecMemcpyNodeSetParams),
    E("cuGraphExecMemsetNodeSetParams", 10020, ANY, cuGraphExecMemsetNodeSetParams),
    E("cuGraphDestroy", 10000, ANY, cuGraphDestroy),
    E("cuGraphExecDestroy", 10000, ANY, cuGraphExecDestroy),
    E("cuModuleLoadData", 2000, ANY, cuModuleLoadData),
    E("cuModuleUnload", 2000, ANY, cuModuleUnload),
    E("cuModuleGetFunction", 2000, ANY, cuModuleGetFunction),
    E("cuLibraryLoadData", 12000, ANY, cuLibraryLoadData),
    E("cuLibraryUnload", 12000, ANY, cuLibraryUnload),
    E("cuLibraryGetKernel", 12000, ANY, cuLibraryGetKernel),
    E("cuKernelGetFunction", 12000, ANY, cuKernelGetFunction),
    E("cuFuncGetParamInfo", 12040, ANY, cuFuncGetParamInfo),
    E("cuKernelGetParamInfo", 12040, ANY, cuKernelGetParamInfo),
    E("cuFuncGetAttribute", 2020, ANY, cuFuncGetAttribute),
    E("cuFuncSetAttribute", 9000, ANY, cuFuncSetAttribute),
    E("cuKernelGetAttribute", 12000, ANY, cuKernelGetAttribute),
    E("cuKernelSetAttribute", 12000, ANY, cuKernelSetAttribute),
    E("cuFuncGetName", 12030, ANY, cuFuncGetName),
    E("cuKernelGetName", 12030, ANY, cuKernelGetName),
    E("cuTensorMapEncodeTiled", 12000, ANY, cuTensorMapEncodeTiled),
    E("cuTensorMapReplaceAddress", 12000, ANY, cuTensorMapReplaceAddress),
    E("cuLaunchKernel", 4000, LEG, cuLaunchKernel),
    E("cuLaunchKernel", 7000, PT, cuLaunchKernel_ptsz),
    E("cuLaunchKernelEx", 11060, LEG, cuLaunchKernelEx),
    E("cuLaunchKernelEx", 11060, PT, cuLaunchKernelEx_ptsz),
    E("cuLaunchCooperativeKernel", 9000, LEG, cuLaunchCooperativeKernel),
    E("cuLaunchCooperativeKernel", 9000, PT, cuLaunchCooperativeKernel_ptsz),
};
#undef E

static const entry_t *find(const char *sym, int version, int mode, bool *name_seen)
{
    const entry_t *best = NULL;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const entry_t *e = &table[i];
        if (strcmp(e->name, sym) != 0)
            continue;
        *name_seen = true;
        if ((e->mode == ANY || e->mode == mode) && e->version <= version &&
            (!best || e->version > best->version))
            best = e;
    }
    return best;
}

static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    bool seen = false;
    bool per_thread = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    const entry_t *e = find(symbol, version, per_thread ? PT : LEG, &seen);
    if (!e && per_thread)
        e = find(symbol, version, LEG, &seen);
    if (status)
        *status = e ? CU_GET_PROC_ADDRESS_SUCCESS
                    : seen ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                           : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!e)
        return CUDA_ERROR_NOT_FOUND;
    *pfn = e->fn;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags)
{
    SG_ENTER(cuGetProcAddress, FREE);
    return lookup(symbol, pfn, cudaVersion, flags, NULL);
}

SG_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                       cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    SG_ENTER(cuGetProcAddress, FREE);
    return lookup(symbol, pfn, cudaVersion, flags, status);
}

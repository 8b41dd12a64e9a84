/*
 * routes: the entry points through which work may touch tracked memory
 * (copies, memsets, launches, stream memory operations), and those whose
 * bookkeeping spillway keeps (capture, unload), reach spillway's wrappers when a program
 * gets them from cuGetProcAddress, as the CUDA runtime does, in both the
 * legacy and the per-thread default-stream forms. A pointer that lands
 * anywhere but libspillway is printed. Without spillway preloaded every
 * one is printed: the control that shows the check can fail.
 * Exit: 0 all routed, 1 some not, 2 CUDA error.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static const char *const names[] = {
    "cuMemcpy",          "cuMemcpyAsync",     "cuMemcpyHtoD",     "cuMemcpyHtoDAsync",
    "cuMemcpyDtoH",      "cuMemcpyDtoHAsync", "cuMemcpyDtoD",     "cuMemcpyDtoDAsync",
    "cuMemsetD8",        "cuMemsetD8Async",   "cuMemsetD16",      "cuMemsetD16Async",
    "cuMemsetD32",       "cuMemsetD32Async",  "cuLaunchKernel",   "cuLaunchKernelEx",
    "cuLaunchCooperativeKernel", "cuGraphLaunch",
    /* stream memory operations touch device memory too */
    "cuStreamWriteValue32", "cuStreamWriteValue64", "cuStreamWaitValue32", "cuStreamWaitValue64",
    "cuStreamBatchMemOp",
    /* what capture and layout bookkeeping must see */
    "cuStreamBeginCaptureToGraph", "cuModuleUnload", "cuLibraryUnload",
};

int main(void)
{
    if (cuInit(0) != CUDA_SUCCESS) {
        fprintf(stderr, "routes: cuInit failed\n");
        return 2;
    }
    static const cuuint64_t forms[] = {CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                                       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM};
    int bad = 0, checked = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        for (size_t f = 0; f < 2; f++) {
            void *fn = NULL;
            CUdriverProcAddressQueryResult found;
            if (cuGetProcAddress(names[i], &fn, CUDA_VERSION, forms[f], &found) != CUDA_SUCCESS ||
                found != CU_GET_PROC_ADDRESS_SUCCESS || !fn) {
                fprintf(stderr, "routes: the driver has no %s (%s)\n", names[i],
                        f ? "per-thread" : "legacy");
                return 2;
            }
            Dl_info info;
            const char *lib = dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "?";
            checked++;
            if (!strstr(lib, "libspillway")) {
                printf("routes: %s (%s) comes from %s\n", names[i], f ? "per-thread" : "legacy",
                       lib);
                bad++;
            }
        }
    printf("routes: %d of %d entry points routed to spillway\n", checked - bad, checked);
    return bad ? 1 : 0;
}

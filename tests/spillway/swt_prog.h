/*
 * What the driver-level test programs here (swt-stream, swt-tma, ...)
 * share: the line that names a failed call, and the set-up each starts
 * with. Header only, so that each program stays one file.
 *
 * The programs exit 2 on a CUDA error, and the failure-injection tests
 * (test_failpaths.c) read the error's name from their stderr.
 */
#ifndef SWT_PROG_H
#define SWT_PROG_H

#include <stdio.h>

#include <cuda.h>

/* "PROG: WHAT: CUDA_ERROR_..." on stderr; returns 2, the exit status. */
static inline int swt_cuda_fail(const char *prog, const char *what, CUresult r)
{
    const char *name = NULL;
    cuGetErrorName(r, &name);
    fprintf(stderr, "%s: %s: %s\n", prog, what, name ? name : "?");
    return 2;
}

/* cuInit, device 0's primary context made current (*ctx), and simgpu's
 * built-in kernels loaded (*mod). A failed call is named on stderr, as
 * swt_cuda_fail does, and its error returned. */
static inline CUresult swt_open(const char *prog, CUcontext *ctx, CUmodule *mod)
{
    CUdevice dev;
    CUresult r;
    const char *what;
    if ((r = cuInit(0)) != CUDA_SUCCESS)
        what = "cuInit";
    else if ((r = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS)
        what = "cuDeviceGet";
    else if ((r = cuDevicePrimaryCtxRetain(ctx, dev)) != CUDA_SUCCESS)
        what = "cuDevicePrimaryCtxRetain";
    else if ((r = cuCtxSetCurrent(*ctx)) != CUDA_SUCCESS)
        what = "cuCtxSetCurrent";
    else if ((r = cuModuleLoadData(mod, "simgpu-builtin")) != CUDA_SUCCESS)
        what = "cuModuleLoadData";
    else
        return CUDA_SUCCESS;
    swt_cuda_fail(prog, what, r);
    return r;
}

#endif

/*
 * Fingerprints of device memory, taken by spillway's own kernel
 * (fingerprint.cu, its PTX embedded; it says exactly what a fingerprint
 * promises): 128 bits, changed for certain by any change within one word,
 * and missed by any other change with probability about 2^-128. A chunk
 * whose fingerprint is the same when it leaves the device as when it
 * arrived goes home by a remap, without copying a byte, because its host
 * copy is still exact.
 *
 * A module belongs to the context it was loaded in, and its kernels run
 * only on streams of that context's device: each device gets its own,
 * loaded on first use while that device is current (a window is made,
 * or a chunk of it moves); asked for while another device is current it
 * is not ready (a kept copy is then not made, or not trusted: the chunk
 * is copied). If it cannot be loaded, nothing of that device is
 * known unchanged: every copy goes home.
 */
#include "device.h"

#include "fingerprint_ptx.h"

#include <string.h>

typedef struct {
    bool tried;
    CUfunction fn;   /* spillway_fingerprint, or NULL */
    CUfunction cic;  /* spillway_copy_if_changed, loaded with it */
    CUfunction unwindow; /* spillway_unwindow, loaded with it */
    CUfunction way_home; /* spillway_way_home, loaded with it */
    CUfunction unwindow_home; /* spillway_unwindow_home, loaded with it */
    CUdeviceptr out; /* one fingerprint, for sw_fp_take */
    uint64_t *host;  /* its pinned copy */
} fp_module_t;

static fp_module_t fps[SW_MAX_DEVICES];

/* Queues fn on st over a grid walking `bytes` with 256 threads a block, a
 * word each (1024 blocks at most: the rest stride). */
static CUresult walk(CUfunction fn, uint64_t bytes, void **args, CUstream st)
{
    uint64_t words = bytes / 8 + 1;
    unsigned blocks = (unsigned)(words / 256 + 1 < 1024 ? words / 256 + 1 : 1024);
    return SW_REAL(cuLaunchKernel)(fn, blocks, 1, 1, 256, 1, 1, 0, st, args, NULL);
}

/* dev's module, loaded if it can be now; NULL when it is not ready. */
static const fp_module_t *module(int dev)
{
    if (dev < 0 || dev >= SW_MAX_DEVICES)
        return NULL;
    fp_module_t *fp = &fps[dev];
    if (fp->tried)
        return fp->fn ? fp : NULL;
    if (sw_dev_current() != dev)
        return NULL; /* it would load into another device's context */
    fp->tried = true;
    const sw_real_t *r = sw_real();
    CUmodule mod;
    if (r->cuModuleLoadData(&mod, fingerprint_ptx) != CUDA_SUCCESS ||
        r->cuModuleGetFunction(&fp->fn, mod, "spillway_fingerprint") != CUDA_SUCCESS ||
        r->cuModuleGetFunction(&fp->cic, mod, "spillway_copy_if_changed") != CUDA_SUCCESS ||
        r->cuModuleGetFunction(&fp->unwindow, mod, "spillway_unwindow") != CUDA_SUCCESS ||
        r->cuModuleGetFunction(&fp->way_home, mod, "spillway_way_home") != CUDA_SUCCESS ||
        r->cuModuleGetFunction(&fp->unwindow_home, mod, "spillway_unwindow_home") !=
            CUDA_SUCCESS ||
        r->cuMemAlloc_v2(&fp->out, SW_FP_BYTES) != CUDA_SUCCESS ||
        r->cuMemAllocHost_v2((void **)&fp->host, SW_FP_BYTES) != CUDA_SUCCESS) {
        sw_warn("device %d: cannot load the fingerprint kernel: every copy leaving its memory "
                "goes home",
                dev);
        fp->fn = NULL;
    }
    return fp->fn ? fp : NULL;
}

bool sw_fp_ready(int dev)
{
    return module(dev) != NULL;
}

CUresult sw_fp_queue(int dev, CUdeviceptr src, uint64_t bytes, CUdeviceptr out, CUstream st)
{
    const sw_real_t *r = sw_real();
    const fp_module_t *fp = module(dev);
    if (!fp)
        return CUDA_ERROR_NOT_FOUND;
    CUresult e = r->cuMemsetD8Async(out, 0, SW_FP_BYTES, st);
    void *args[] = {&src, &bytes, &out};
    if (e == CUDA_SUCCESS)
        e = walk(fp->fn, bytes, args, st);
    return e;
}

CUresult sw_fp_copy_if_changed(int dev, CUdeviceptr src, CUdeviceptr dst, uint64_t bytes,
                               CUdeviceptr fp_home, CUdeviceptr fp_now, CUdeviceptr changed,
                               CUstream st)
{
    const fp_module_t *fp = module(dev);
    if (!fp)
        return CUDA_ERROR_NOT_FOUND;
    void *args[] = {&src, &dst, &bytes, &fp_home, &fp_now, &changed};
    return walk(fp->cic, bytes, args, st);
}

CUresult sw_fp_way_home(int dev, CUdeviceptr src, CUdeviceptr dst, uint64_t bytes,
                        CUdeviceptr fp_home, CUdeviceptr acc, CUdeviceptr changed, CUstream st)
{
    const fp_module_t *fp = module(dev);
    if (!fp)
        return CUDA_ERROR_NOT_FOUND;
    void *args[] = {&src, &dst, &bytes, &fp_home, &acc, &changed};
    return walk(fp->way_home, bytes, args, st);
}

/* The longest of a's spans: the bytes its grid walks. */
static uint64_t longest_span(const sw_unwindow_t *a)
{
    uint64_t most = 0;
    for (uint32_t s = 0; s < a->nspans; s++)
        most = a->len[s] > most ? a->len[s] : most;
    return most;
}

CUresult sw_fp_unwindow(int dev, const sw_unwindow_t *a, CUstream st)
{
    const fp_module_t *fp = module(dev);
    if (!fp)
        return CUDA_ERROR_NOT_FOUND;
    void *args[] = {(void *)a};
    return walk(fp->unwindow, longest_span(a), args, st);
}

CUresult sw_fp_unwindow_home(int dev, const sw_unwindow_home_t *a, CUstream st)
{
    const fp_module_t *fp = module(dev);
    if (!fp)
        return CUDA_ERROR_NOT_FOUND;
    uint64_t most = longest_span(&a->uw);
    void *args[] = {(void *)a};
    return walk(fp->unwindow_home, a->bytes > most ? a->bytes : most, args, st);
}

CUresult sw_fp_take(int dev, CUdeviceptr src, uint64_t bytes, uint64_t out[2], bool *pending)
{
    CUstream st;
    *pending = false;
    /* Its kernels launch only with dev current, and a move may be made
     * while another device is. (A window's kernels run in its own
     * context by construction: it serves only launches made there.) */
    const fp_module_t *fp = sw_dev_current() == dev ? module(dev) : NULL;
    if (!fp)
        return CUDA_ERROR_NOT_FOUND;
    CUresult e = sw_dev_copy_stream(dev, &st);
    if (e == CUDA_SUCCESS)
        e = sw_fp_queue(dev, src, bytes, fp->out, st);
    if (e == CUDA_SUCCESS)
        e = SW_REAL(cuMemcpyDtoHAsync_v2)(fp->host, fp->out, SW_FP_BYTES, st);
    if (e == CUDA_SUCCESS)
        e = sw_dev_wait(st, pending);
    if (e == CUDA_SUCCESS)
        memcpy(out, fp->host, SW_FP_BYTES);
    return e;
}

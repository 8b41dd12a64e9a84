/*
 * Copies and memsets, synchronous and asynchronous, with their per-thread
 * default stream twins (_ptds for synchronous calls, _ptsz for async).
 *
 * A synchronous call is an async call on the default stream followed by a
 * wait, so it orders with other streams exactly as the driver's does, and
 * is refused during a capture. An async copy that touches pageable host
 * memory also completes before returning, as the driver's staging does.
 */
#include "sg.h"

typedef enum { SIDE_DEVICE, SIDE_HOST, SIDE_ANY } side_t;

/* Where an address is: device VA or pinned (usable by the GPU), or plain
 * host memory. */
bool sg_gpu_visible(uint64_t p)
{
    void *base;
    uint64_t size;
    if (sg_mem_is_device_va(p))
        return true;
    sg_mem_rdlock();
    bool pinned = sg_pinned_find((void *)p, &base, &size);
    sg_mem_unlock();
    return pinned;
}

/* A side declared as device memory must be GPU-visible; a host side may be
 * pageable. Returns the pageable bit for the side, or -1 when invalid. */
static int side_check(uint64_t p, side_t side)
{
    bool vis = sg_gpu_visible(p);
    if (side == SIDE_DEVICE)
        return vis ? 0 : -1;
    return vis ? 0 : 1;
}

CUresult sg_copy_issue(sg_op_t *op, CUstream hs, bool pt, bool sync)
{
    CUresult r = CUDA_SUCCESS;
    sg_lock();
    sg_stream_t *s = sg_stream_get(hs, pt);
    if (!s)
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (sync || op->pageable)
        r = sg_capture_guard(sync ? NULL : s);
    if (r != CUDA_SUCCESS) {
        sg_op_put(op);
        sg_unlock();
        return r;
    }
    op->refs++; /* keep it to wait on */
    r = sg_submit(s, op);
    if (r == CUDA_SUCCESS && (sync || op->pageable)) {
        sg_op_wait(op);
        r = SG->sticky;
    }
    sg_op_put(op);
    sg_unlock();
    return r;
}

static CUresult copy(const char *name, uint64_t dst, side_t dside, uint64_t src, side_t sside,
                     size_t n, CUstream hs, bool pt, bool sync)
{
    CUresult r = sg_need_ctx();
    if (r != CUDA_SUCCESS)
        return r;
    if (n == 0)
        return CUDA_SUCCESS;
    int dp = side_check(dst, dside), sp = side_check(src, sside);
    if (dp < 0 || sp < 0 || !dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    sg_op_t *op = sg_op_new(SG_OP_COPY, name);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->ranges[0] = (sg_range_t){.addr = dst, .len = n, .write = true};
    op->ranges[1] = (sg_range_t){.addr = src, .len = n, .write = false};
    op->nranges = 2;
    op->pageable = (unsigned)dp | (unsigned)sp << 1;
    return sg_copy_issue(op, hs, pt, sync);
}

static CUresult memset_(const char *name, uint64_t dst, uint64_t v, unsigned width, size_t n,
                        CUstream hs, bool pt, bool sync)
{
    CUresult r = sg_need_ctx();
    if (r != CUDA_SUCCESS)
        return r;
    if (n == 0)
        return CUDA_SUCCESS;
    if (!sg_gpu_visible(dst) || dst % width)
        return CUDA_ERROR_INVALID_VALUE;
    sg_op_t *op = sg_op_new(SG_OP_MEMSET, name);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->ranges[0] = (sg_range_t){.addr = dst, .len = (uint64_t)n * width, .write = true};
    op->nranges = 1;
    op->memset_value = v;
    op->memset_width = width;
    return sg_copy_issue(op, hs, pt, sync);
}

/* Each pair below: the default-stream entry point and its per-thread twin. */
#define D SIDE_DEVICE
#define H SIDE_HOST
#define A SIDE_ANY


#define COPY_SYNC(sym, fn, T1, a, T2, b, ds, ss, pt)                             \
    SG_EXPORT CUresult sym(T1 a, T2 b, size_t ByteCount)                         \
    {                                                                            \
        SG_ENTER(fn, API);                                                       \
        return copy(#fn, (uint64_t)a, ds, (uint64_t)b, ss, ByteCount, NULL, pt, true); \
    }
#define COPY_ASYNC(sym, fn, T1, a, T2, b, ds, ss, pt)                            \
    SG_EXPORT CUresult sym(T1 a, T2 b, size_t ByteCount, CUstream hStream)       \
    {                                                                            \
        SG_ENTER(fn, API);                                                       \
        return copy(#fn, (uint64_t)a, ds, (uint64_t)b, ss, ByteCount, hStream, pt, false); \
    }

COPY_SYNC(cuMemcpyHtoD_v2, cuMemcpyHtoD, CUdeviceptr, dstDevice, const void *, srcHost, D, H, false)
COPY_SYNC(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD, CUdeviceptr, dstDevice, const void *, srcHost, D, H, true)
COPY_SYNC(cuMemcpyDtoH_v2, cuMemcpyDtoH, void *, dstHost, CUdeviceptr, srcDevice, H, D, false)
COPY_SYNC(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH, void *, dstHost, CUdeviceptr, srcDevice, H, D, true)
COPY_SYNC(cuMemcpyDtoD_v2, cuMemcpyDtoD, CUdeviceptr, dstDevice, CUdeviceptr, srcDevice, D, D, false)
COPY_SYNC(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD, CUdeviceptr, dstDevice, CUdeviceptr, srcDevice, D, D, true)
COPY_SYNC(cuMemcpy, cuMemcpy, CUdeviceptr, dst, CUdeviceptr, src, A, A, false)
COPY_SYNC(cuMemcpy_ptds, cuMemcpy, CUdeviceptr, dst, CUdeviceptr, src, A, A, true)
COPY_ASYNC(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync, CUdeviceptr, dstDevice, const void *, srcHost, D, H, false)
COPY_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync, CUdeviceptr, dstDevice, const void *, srcHost, D, H, true)
COPY_ASYNC(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync, void *, dstHost, CUdeviceptr, srcDevice, H, D, false)
COPY_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync, void *, dstHost, CUdeviceptr, srcDevice, H, D, true)
COPY_ASYNC(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, CUdeviceptr, dstDevice, CUdeviceptr, srcDevice, D, D, false)
COPY_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync, CUdeviceptr, dstDevice, CUdeviceptr, srcDevice, D, D, true)
COPY_ASYNC(cuMemcpyAsync, cuMemcpyAsync, CUdeviceptr, dst, CUdeviceptr, src, A, A, false)
COPY_ASYNC(cuMemcpyAsync_ptsz, cuMemcpyAsync, CUdeviceptr, dst, CUdeviceptr, src, A, A, true)

/* Peer copies: between any two devices' memory, whatever peer access
 * says (the driver stages them when it must). The contexts must be
 * simgpu's; the addresses say where the bytes are (UVA). */
static CUresult peer_copy(const char *name, CUdeviceptr dst, CUcontext dc, CUdeviceptr src,
                          CUcontext sc, size_t n, CUstream hs, bool pt, bool sync)
{
    if (sg_ctx_device(dc) < 0 || sg_ctx_device(sc) < 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    return copy(name, dst, D, src, D, n, hs, pt, sync);
}

SG_EXPORT CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                CUcontext srcContext, size_t ByteCount)
{
    SG_ENTER(cuMemcpyPeer, API);
    return peer_copy("cuMemcpyPeer", dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL,
                     false, true);
}

SG_EXPORT CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext,
                                     CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount)
{
    SG_ENTER(cuMemcpyPeer, API);
    return peer_copy("cuMemcpyPeer", dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL,
                     true, true);
}

SG_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                                     CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount,
                                     CUstream hStream)
{
    SG_ENTER(cuMemcpyPeerAsync, API);
    return peer_copy("cuMemcpyPeerAsync", dstDevice, dstContext, srcDevice, srcContext, ByteCount,
                     hStream, false, false);
}

SG_EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext,
                                          CUdeviceptr srcDevice, CUcontext srcContext,
                                          size_t ByteCount, CUstream hStream)
{
    SG_ENTER(cuMemcpyPeerAsync, API);
    return peer_copy("cuMemcpyPeerAsync", dstDevice, dstContext, srcDevice, srcContext, ByteCount,
                     hStream, true, false);
}

#define SET_SYNC(sym, fn, T, w, pt)                                              \
    SG_EXPORT CUresult sym(CUdeviceptr dstDevice, T v, size_t N)                 \
    {                                                                            \
        SG_ENTER(fn, API);                                                       \
        return memset_(#fn, dstDevice, v, w, N, NULL, pt, true);                 \
    }
#define SET_ASYNC(sym, fn, T, w, pt)                                             \
    SG_EXPORT CUresult sym(CUdeviceptr dstDevice, T v, size_t N, CUstream hStream) \
    {                                                                            \
        SG_ENTER(fn, API);                                                       \
        return memset_(#fn, dstDevice, v, w, N, hStream, pt, false);             \
    }

SET_SYNC(cuMemsetD8_v2, cuMemsetD8, unsigned char, 1, false)
SET_SYNC(cuMemsetD8_v2_ptds, cuMemsetD8, unsigned char, 1, true)
SET_SYNC(cuMemsetD32_v2, cuMemsetD32, unsigned int, 4, false)
SET_SYNC(cuMemsetD32_v2_ptds, cuMemsetD32, unsigned int, 4, true)
SET_SYNC(cuMemsetD16_v2, cuMemsetD16, unsigned short, 2, false)
SET_SYNC(cuMemsetD16_v2_ptds, cuMemsetD16, unsigned short, 2, true)
SET_ASYNC(cuMemsetD8Async, cuMemsetD8Async, unsigned char, 1, false)
SET_ASYNC(cuMemsetD8Async_ptsz, cuMemsetD8Async, unsigned char, 1, true)
SET_ASYNC(cuMemsetD32Async, cuMemsetD32Async, unsigned int, 4, false)
SET_ASYNC(cuMemsetD32Async_ptsz, cuMemsetD32Async, unsigned int, 4, true)
SET_ASYNC(cuMemsetD16Async, cuMemsetD16Async, unsigned short, 2, false)
SET_ASYNC(cuMemsetD16Async_ptsz, cuMemsetD16Async, unsigned short, 2, true)

/* ---- stream memory operations ----
 * A write is a memset of one 4- or 8-byte word. A wait reads its word and
 * completes: simgpu does not block on the condition (it runs one stream's
 * work in order, and a test's waits are already met when they run). */

static CUresult wait_value(const char *name, uint64_t addr, unsigned width, CUstream hs, bool pt)
{
    CUresult r = sg_need_ctx();
    if (r != CUDA_SUCCESS)
        return r;
    if (!sg_gpu_visible(addr) || addr % width)
        return CUDA_ERROR_INVALID_VALUE;
    sg_op_t *op = sg_op_new(SG_OP_WAIT_VALUE, name);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->ranges[0] = (sg_range_t){.addr = addr, .len = width};
    op->nranges = 1;
    return sg_copy_issue(op, hs, pt, false);
}

#define MEMOP(sym, fn, T, w, pt, call)                                                 \
    SG_EXPORT CUresult sym(CUstream stream, CUdeviceptr addr, T value, unsigned int flags) \
    {                                                                                  \
        SG_ENTER(fn, API);                                                             \
        (void)flags;                                                                   \
        return call;                                                                   \
    }
#define WRITE(fn, w, pt) memset_(#fn, addr, value, w, 1, stream, pt, false)
#define WAIT(fn, w, pt) wait_value(#fn, addr, w, stream, pt)
MEMOP(cuStreamWriteValue32_v2, cuStreamWriteValue32, cuuint32_t, 4, false, WRITE(cuStreamWriteValue32, 4, false))
MEMOP(cuStreamWriteValue32_v2_ptsz, cuStreamWriteValue32, cuuint32_t, 4, true, WRITE(cuStreamWriteValue32, 4, true))
MEMOP(cuStreamWriteValue64_v2, cuStreamWriteValue64, cuuint64_t, 8, false, WRITE(cuStreamWriteValue64, 8, false))
MEMOP(cuStreamWriteValue64_v2_ptsz, cuStreamWriteValue64, cuuint64_t, 8, true, WRITE(cuStreamWriteValue64, 8, true))
MEMOP(cuStreamWaitValue32_v2, cuStreamWaitValue32, cuuint32_t, 4, false, WAIT(cuStreamWaitValue32, 4, false))
MEMOP(cuStreamWaitValue32_v2_ptsz, cuStreamWaitValue32, cuuint32_t, 4, true, WAIT(cuStreamWaitValue32, 4, true))
MEMOP(cuStreamWaitValue64_v2, cuStreamWaitValue64, cuuint64_t, 8, false, WAIT(cuStreamWaitValue64, 8, false))
MEMOP(cuStreamWaitValue64_v2_ptsz, cuStreamWaitValue64, cuuint64_t, 8, true, WAIT(cuStreamWaitValue64, 8, true))
/* The v1 forms (sg.h): the same operations on a stream. */
MEMOP(sg_v1_write32, cuStreamWriteValue32, cuuint32_t, 4, false, WRITE(cuStreamWriteValue32, 4, false))
MEMOP(sg_v1_write32_ptsz, cuStreamWriteValue32, cuuint32_t, 4, true, WRITE(cuStreamWriteValue32, 4, true))
MEMOP(sg_v1_write64, cuStreamWriteValue64, cuuint64_t, 8, false, WRITE(cuStreamWriteValue64, 8, false))
MEMOP(sg_v1_write64_ptsz, cuStreamWriteValue64, cuuint64_t, 8, true, WRITE(cuStreamWriteValue64, 8, true))
MEMOP(sg_v1_wait32, cuStreamWaitValue32, cuuint32_t, 4, false, WAIT(cuStreamWaitValue32, 4, false))
MEMOP(sg_v1_wait32_ptsz, cuStreamWaitValue32, cuuint32_t, 4, true, WAIT(cuStreamWaitValue32, 4, true))
MEMOP(sg_v1_wait64, cuStreamWaitValue64, cuuint64_t, 8, false, WAIT(cuStreamWaitValue64, 8, false))
MEMOP(sg_v1_wait64_ptsz, cuStreamWaitValue64, cuuint64_t, 8, true, WAIT(cuStreamWaitValue64, 8, true))

static CUresult batch(CUstream hs, unsigned n, CUstreamBatchMemOpParams *ops, bool pt)
{
    if (n && !ops)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    for (unsigned i = 0; i < n && r == CUDA_SUCCESS; i++) {
        CUstreamBatchMemOpParams *o = &ops[i];
        switch (o->operation) {
        case CU_STREAM_MEM_OP_WRITE_VALUE_32:
            r = memset_("cuStreamBatchMemOp", o->writeValue.address, o->writeValue.value, 4, 1, hs,
                        pt, false);
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_64:
            r = memset_("cuStreamBatchMemOp", o->writeValue.address, o->writeValue.value64, 8, 1,
                        hs, pt, false);
            break;
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
            r = wait_value("cuStreamBatchMemOp", o->waitValue.address, 4, hs, pt);
            break;
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
            r = wait_value("cuStreamBatchMemOp", o->waitValue.address, 8, hs, pt);
            break;
        case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        case CU_STREAM_MEM_OP_BARRIER:
            break; /* one stream runs in order: nothing to do */
        default:
            r = CUDA_ERROR_INVALID_VALUE;
        }
    }
    return r;
}

/* cuStreamBatchMemOp in its four forms: _v2 and v1 (sg.h), each with a
 * per-thread twin. */
#define BATCH(sym, pt)                                                                   \
    SG_EXPORT CUresult sym(CUstream stream, unsigned int count,                          \
                           CUstreamBatchMemOpParams *paramArray, unsigned int flags)     \
    {                                                                                    \
        SG_ENTER(cuStreamBatchMemOp, API);                                               \
        (void)flags;                                                                     \
        return batch(stream, count, paramArray, pt);                                     \
    }
BATCH(cuStreamBatchMemOp_v2, false)
BATCH(cuStreamBatchMemOp_v2_ptsz, true)
BATCH(sg_v1_batch, false)
BATCH(sg_v1_batch_ptsz, true)

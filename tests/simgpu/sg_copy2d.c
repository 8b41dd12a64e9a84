/*
 * Pitched copies and memsets: cuMemcpy2D, cuMemcpy2DUnaligned,
 * cuMemcpy2DAsync, cuMemcpy3D, cuMemcpy3DAsync and cuMemsetD2D{8,16,32}
 * (and Async), with their per-thread twins.
 *
 * An op touches many rows, but its ranges array is small (SG_MAX_RANGES),
 * so each side is recorded as its bounding range: the first byte of its
 * first row to the last byte of its last. The hazard and race checks then
 * see the padding between rows as touched too, which can only report more
 * conflicts than the rows alone would, never fewer: conservative for race
 * detection. What moves, and what virtual time charges, is the rows only
 * (op->shape; sg_stream.c scales the bounding range's backing to them).
 * When the op runs, every row is translated on its own, so a row that
 * reaches unmapped memory faults and padding that does not is never read.
 *
 * Memory types HOST, DEVICE and UNIFIED are modelled; simgpu has no CUDA
 * arrays, so a side of type ARRAY gets CUDA_ERROR_NOT_SUPPORTED.
 */
#include "sg.h"

#include <string.h>

/* One side of a copy, as its CUDA_MEMCPY2D/3D fields give it. */
typedef struct {
    CUmemorytype type;
    const void *host;
    CUdeviceptr device;
    size_t x, y, z, pitch, height; /* height: rows per slice (3D) */
} side_t;

/* A resolved side: its first byte, its bounding length, row and slice
 * distances, and whether it may be pageable host memory. */
typedef struct {
    uint64_t first, len, pitch, slice;
    bool pageable;
} span_t;

static bool mul_add(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
    uint64_t m;
    return !__builtin_mul_overflow(a, b, &m) && !__builtin_add_overflow(m, c, out);
}

/* Checks one side as the driver documents it and finds its bounding range
 * for width bytes by height rows by depth slices. */
static CUresult resolve(const side_t *sd, uint64_t width, uint64_t height, uint64_t depth,
                        span_t *out)
{
    uint64_t p;
    switch (sd->type) {
    case CU_MEMORYTYPE_HOST:
        p = (uint64_t)sd->host;
        out->pageable = p && !sg_gpu_visible(p);
        break;
    case CU_MEMORYTYPE_DEVICE:
        p = sd->device;
        if (p && !sg_gpu_visible(p))
            return CUDA_ERROR_INVALID_VALUE;
        out->pageable = false;
        break;
    case CU_MEMORYTYPE_UNIFIED: /* any address: simgpu has one address space */
        p = sd->device;
        out->pageable = p && !sg_gpu_visible(p);
        break;
    case CU_MEMORYTYPE_ARRAY:
        return CUDA_ERROR_NOT_SUPPORTED; /* simgpu has no CUDA arrays */
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!p || sd->pitch < width ||
        sd->pitch > (uint64_t)sg_device_attribute(CU_DEVICE_ATTRIBUTE_MAX_PITCH))
        return CUDA_ERROR_INVALID_VALUE;
    /* A 3D side's slices hold at least the rows copied from each. */
    if (depth > 1 && sd->height < height)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t slice, off, last, end;
    if (__builtin_mul_overflow(sd->pitch, sd->height, &slice) ||
        !mul_add(sd->y, sd->pitch, sd->x, &off) || !mul_add(sd->z, slice, off, &off) ||
        !mul_add(height - 1, sd->pitch, width, &last) || !mul_add(depth - 1, slice, last, &last) ||
        __builtin_add_overflow(p, off, &out->first) ||
        __builtin_add_overflow(out->first, last, &end))
        return CUDA_ERROR_INVALID_VALUE;
    out->len = last;
    out->pitch = sd->pitch;
    out->slice = slice;
    return CUDA_SUCCESS;
}

static CUresult copy_pitched(const char *name, const side_t *dst, const side_t *src,
                             uint64_t width, uint64_t height, uint64_t depth, CUstream hs,
                             bool pt, bool sync)
{
    CUresult r = sg_need_ctx();
    if (r != CUDA_SUCCESS)
        return r;
    span_t d, s;
    /* An empty copy is not checked further: as the 1D copies of 0 bytes. */
    bool empty = !width || !height || !depth;
    if ((r = resolve(dst, empty ? 0 : width, empty ? 1 : height, empty ? 1 : depth, &d)) !=
            CUDA_SUCCESS ||
        (r = resolve(src, empty ? 0 : width, empty ? 1 : height, empty ? 1 : depth, &s)) !=
            CUDA_SUCCESS)
        return r;
    if (empty)
        return CUDA_SUCCESS;
    sg_op_t *op = sg_op_new(SG_OP_COPY, name);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->ranges[0] = (sg_range_t){.addr = d.first, .len = d.len, .write = true};
    op->ranges[1] = (sg_range_t){.addr = s.first, .len = s.len, .write = false};
    op->nranges = 2;
    op->pageable = (unsigned)d.pageable | (unsigned)s.pageable << 1;
    op->shape.width = width;
    op->shape.height = height;
    op->shape.depth = depth;
    op->shape.pitch[0] = d.pitch;
    op->shape.pitch[1] = s.pitch;
    op->shape.slice[0] = d.slice;
    op->shape.slice[1] = s.slice;
    return sg_copy_issue(op, hs, pt, sync);
}

static CUresult copy2d(const char *name, const CUDA_MEMCPY2D *c, CUstream hs, bool pt, bool sync)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    side_t dst = {c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, 0,
                  c->dstPitch, c->Height};
    side_t src = {c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, 0,
                  c->srcPitch, c->Height};
    return copy_pitched(name, &dst, &src, c->WidthInBytes, c->Height, 1, hs, pt, sync);
}

static CUresult copy3d(const char *name, const CUDA_MEMCPY3D *c, CUstream hs, bool pt, bool sync)
{
    if (!c || c->reserved0 || c->reserved1)
        return CUDA_ERROR_INVALID_VALUE;
    side_t dst = {c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY,
                  c->dstZ, c->dstPitch, c->dstHeight};
    side_t src = {c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY,
                  c->srcZ, c->srcPitch, c->srcHeight};
    return copy_pitched(name, &dst, &src, c->WidthInBytes, c->Height, c->Depth, hs, pt, sync);
}

/* The driver documents dstPitch as unused when Height is 1; otherwise a
 * row of Width elements must fit in it, and it keeps rows aligned. */
static CUresult memset2d(const char *name, CUdeviceptr dst, size_t pitch, uint64_t v,
                         unsigned elem, size_t width, size_t height, CUstream hs, bool pt,
                         bool sync)
{
    CUresult r = sg_need_ctx();
    if (r != CUDA_SUCCESS)
        return r;
    uint64_t row;
    if (__builtin_mul_overflow((uint64_t)width, elem, &row))
        return CUDA_ERROR_INVALID_VALUE;
    if (height <= 1)
        pitch = row;
    if (!dst || !sg_gpu_visible(dst) || dst % elem || pitch % elem || pitch < row ||
        pitch > (uint64_t)sg_device_attribute(CU_DEVICE_ATTRIBUTE_MAX_PITCH))
        return CUDA_ERROR_INVALID_VALUE;
    if (!width || !height)
        return CUDA_SUCCESS;
    uint64_t len;
    if (!mul_add(height - 1, pitch, row, &len) || dst + len < dst)
        return CUDA_ERROR_INVALID_VALUE;
    sg_op_t *op = sg_op_new(SG_OP_MEMSET, name);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->ranges[0] = (sg_range_t){.addr = dst, .len = len, .write = true};
    op->nranges = 1;
    op->memset_value = v;
    op->memset_width = elem;
    op->shape.width = row;
    op->shape.height = height;
    op->shape.depth = 1;
    op->shape.pitch[0] = pitch;
    op->shape.slice[0] = pitch * height;
    return sg_copy_issue(op, hs, pt, sync);
}

/* ---- running (stream worker, mem_lock held for reading) ---- */

static void fill(void *p, uint64_t bytes, uint64_t v, unsigned elem)
{
    if (elem == 1) {
        memset(p, (int)v, bytes);
        return;
    }
    for (uint64_t i = 0; i < bytes; i += elem)
        memcpy((char *)p + i, &v, elem); /* little-endian: the low elem bytes */
}

/* The address of row y of slice z on side i. */
static uint64_t row_at(const sg_op_t *op, int i, uint64_t z, uint64_t y)
{
    return op->ranges[i].addr + z * op->shape.slice[i] + y * op->shape.pitch[i];
}

bool sg_pitched_run(const sg_op_t *op)
{
    uint64_t w = op->shape.width;
    for (uint64_t z = 0; z < op->shape.depth; z++)
        for (uint64_t y = 0; y < op->shape.height; y++) {
            sg_xlate_t d, s;
            if (!sg_mem_xlate(row_at(op, 0, z, y), w, true, op->pageable & 1, &d))
                return false;
            if (op->kind == SG_OP_MEMSET) {
                fill(d.host, w, op->memset_value, op->memset_width);
                continue;
            }
            if (!sg_mem_xlate(row_at(op, 1, z, y), w, false, op->pageable >> 1 & 1, &s))
                return false;
            memmove(d.host, s.host, w);
        }
    return true;
}

/* ---- entry points: each with its per-thread twin ---- */

#define COPY_ENTRY(sym, fn, T, impl, pt, sync)                                   \
    SG_EXPORT CUresult sym(const T *pCopy)                                       \
    {                                                                            \
        SG_ENTER(fn, API);                                                       \
        return impl(#fn, pCopy, NULL, pt, sync);                                 \
    }
#define COPY_ENTRY_ASYNC(sym, fn, T, impl, pt)                                   \
    SG_EXPORT CUresult sym(const T *pCopy, CUstream hStream)                     \
    {                                                                            \
        SG_ENTER(fn, API);                                                       \
        return impl(#fn, pCopy, hStream, pt, false);                             \
    }

COPY_ENTRY(cuMemcpy2D_v2, cuMemcpy2D, CUDA_MEMCPY2D, copy2d, false, true)
COPY_ENTRY(cuMemcpy2D_v2_ptds, cuMemcpy2D, CUDA_MEMCPY2D, copy2d, true, true)
/* simgpu has no alignment rule for cuMemcpy2D to relax. */
COPY_ENTRY(cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned, CUDA_MEMCPY2D, copy2d, false, true)
COPY_ENTRY(cuMemcpy2DUnaligned_v2_ptds, cuMemcpy2DUnaligned, CUDA_MEMCPY2D, copy2d, true, true)
COPY_ENTRY(cuMemcpy3D_v2, cuMemcpy3D, CUDA_MEMCPY3D, copy3d, false, true)
COPY_ENTRY(cuMemcpy3D_v2_ptds, cuMemcpy3D, CUDA_MEMCPY3D, copy3d, true, true)
COPY_ENTRY_ASYNC(cuMemcpy2DAsync_v2, cuMemcpy2DAsync, CUDA_MEMCPY2D, copy2d, false)
COPY_ENTRY_ASYNC(cuMemcpy2DAsync_v2_ptsz, cuMemcpy2DAsync, CUDA_MEMCPY2D, copy2d, true)
COPY_ENTRY_ASYNC(cuMemcpy3DAsync_v2, cuMemcpy3DAsync, CUDA_MEMCPY3D, copy3d, false)
COPY_ENTRY_ASYNC(cuMemcpy3DAsync_v2_ptsz, cuMemcpy3DAsync, CUDA_MEMCPY3D, copy3d, true)

#define SET2D(sym, fn, T, elem, pt)                                              \
    SG_EXPORT CUresult sym(CUdeviceptr dstDevice, size_t dstPitch, T v, size_t Width, \
                           size_t Height)                                        \
    {                                                                            \
        SG_ENTER(fn, API);                                                       \
        return memset2d(#fn, dstDevice, dstPitch, v, elem, Width, Height, NULL, pt, true); \
    }
#define SET2D_ASYNC(sym, fn, T, elem, pt)                                        \
    SG_EXPORT CUresult sym(CUdeviceptr dstDevice, size_t dstPitch, T v, size_t Width, \
                           size_t Height, CUstream hStream)                      \
    {                                                                            \
        SG_ENTER(fn, API);                                                       \
        return memset2d(#fn, dstDevice, dstPitch, v, elem, Width, Height, hStream, pt, false); \
    }

SET2D(cuMemsetD2D8_v2, cuMemsetD2D8, unsigned char, 1, false)
SET2D(cuMemsetD2D8_v2_ptds, cuMemsetD2D8, unsigned char, 1, true)
SET2D(cuMemsetD2D16_v2, cuMemsetD2D16, unsigned short, 2, false)
SET2D(cuMemsetD2D16_v2_ptds, cuMemsetD2D16, unsigned short, 2, true)
SET2D(cuMemsetD2D32_v2, cuMemsetD2D32, unsigned int, 4, false)
SET2D(cuMemsetD2D32_v2_ptds, cuMemsetD2D32, unsigned int, 4, true)
SET2D_ASYNC(cuMemsetD2D8Async, cuMemsetD2D8Async, unsigned char, 1, false)
SET2D_ASYNC(cuMemsetD2D8Async_ptsz, cuMemsetD2D8Async, unsigned char, 1, true)
SET2D_ASYNC(cuMemsetD2D16Async, cuMemsetD2D16Async, unsigned short, 2, false)
SET2D_ASYNC(cuMemsetD2D16Async_ptsz, cuMemsetD2D16Async, unsigned short, 2, true)
SET2D_ASYNC(cuMemsetD2D32Async, cuMemsetD2D32Async, unsigned int, 4, false)
SET2D_ASYNC(cuMemsetD2D32Async_ptsz, cuMemsetD2D32Async, unsigned int, 4, true)

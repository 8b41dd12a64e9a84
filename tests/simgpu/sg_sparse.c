/*
 * Sparse CUDA arrays and their tile pools: cuArray3DCreate with
 * CUDA_ARRAY3D_SPARSE, cuArrayDestroy, and cuMemMapArrayAsync mapping a
 * tile pool's physical memory (a cuMemCreate handle made with
 * CU_MEM_CREATE_USAGE_TILE_POOL) under an array's tiles, as sparse
 * textures and volumes use them.
 *
 * What simgpu models is what an interposer can break: the driver is
 * given a handle, which must be one of its own, live, device memory of
 * the stream's device and made for tile pools; each tile mapped holds a
 * reference on the memory, as a VA mapping does, until it is unmapped or
 * the array destroyed. An array is one tail of 64 KiB tiles (the miptail
 * subresource; sparse levels and layers are not modeled), holds no bytes
 * and no kernel reads it (no textures here), and a map takes effect when
 * it is called, as if its stream were idle. Only sparse arrays are made:
 * any other is CUDA_ERROR_NOT_SUPPORTED.
 */
#include "sg.h"

#define MAX_ARRAYS 8
#define MAX_TILES 64
#define TILE (64u << 10) /* a sparse tile, the size the driver documents */

typedef struct {
    bool live;
    uint64_t bytes;              /* of its image: its tail is this, rounded up to tiles */
    sg_phys_t *tile[MAX_TILES]; /* the memory under tile i, one reference each */
} sparse_t;

static sparse_t arrays[MAX_ARRAYS];

static uint64_t format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

/* The array behind a, or NULL (memory lock held). */
static sparse_t *array_find(CUarray a)
{
    for (int i = 0; i < MAX_ARRAYS; i++)
        if (arrays[i].live && (CUarray)&arrays[i] == a)
            return &arrays[i];
    return NULL;
}

SG_EXPORT CUresult cuArray3DCreate_v2(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    SG_ENTER(cuArray3DCreate, API);
    if (!out || !d || d->Width == 0 || d->Height == 0 || d->NumChannels == 0 ||
        d->NumChannels > 4 || format_bytes(d->Format) == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!(d->Flags & CUDA_ARRAY3D_SPARSE))
        return CUDA_ERROR_NOT_SUPPORTED;
    uint64_t bytes = (uint64_t)d->Width * d->Height * (d->Depth ? d->Depth : 1) *
                     d->NumChannels * format_bytes(d->Format);
    if (bytes > (uint64_t)MAX_TILES * TILE)
        return CUDA_ERROR_NOT_SUPPORTED;
    sg_mem_wrlock();
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < MAX_ARRAYS && r != CUDA_SUCCESS; i++)
        if (!arrays[i].live) {
            arrays[i] = (sparse_t){.live = true, .bytes = bytes};
            *out = (CUarray)&arrays[i];
            r = CUDA_SUCCESS;
        }
    sg_mem_unlock();
    return r;
}

/* Unmaps tile i (memory lock held). */
static void unmap_tile(sparse_t *a, uint64_t i)
{
    if (a->tile[i])
        sg_phys_put(a->tile[i]);
    a->tile[i] = NULL;
}

SG_EXPORT CUresult cuArrayDestroy(CUarray array)
{
    SG_ENTER(cuArrayDestroy, API);
    sg_mem_wrlock();
    sparse_t *a = array_find(array);
    for (uint64_t i = 0; a && i < MAX_TILES; i++)
        unmap_tile(a, i);
    if (a)
        a->live = false;
    sg_mem_unlock();
    return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* Checks one entry, whose memory is p for a map (memory lock held):
 * its tiles, first and count, else an error. */
static CUresult check_entry(const CUarrayMapInfo *m, sparse_t *a, sg_phys_t *p, uint64_t *first,
                            uint64_t *count)
{
    const bool map = m->memOperationType == CU_MEM_OPERATION_TYPE_MAP;
    if (m->resourceType != CU_RESOURCE_TYPE_ARRAY || !a ||
        m->subresourceType != CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_MIPTAIL || m->flags ||
        m->deviceBitMask != 1 || (!map && m->memOperationType != CU_MEM_OPERATION_TYPE_UNMAP))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t off = m->subresource.miptail.offset, len = m->subresource.miptail.size;
    if (off % TILE || len % TILE || len == 0 || off + len > (a->bytes + TILE - 1) / TILE * TILE)
        return CUDA_ERROR_INVALID_VALUE;
    *first = off / TILE;
    *count = len / TILE;
    if (!map)
        return m->memHandle.memHandle ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    if (m->memHandleType != CU_MEM_HANDLE_TYPE_GENERIC)
        return CUDA_ERROR_INVALID_VALUE;
    if (!p || p->handle_refs <= 0)
        return CUDA_ERROR_INVALID_HANDLE; /* not one of the driver's handles */
    if (p->loc != SG_LOC_DEVICE || p->device != 0 ||
        !(p->prop.allocFlags.usage & CU_MEM_CREATE_USAGE_TILE_POOL) || m->offset % TILE ||
        m->offset + len > p->size)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* Every entry is checked before any takes effect (so each is checked
 * twice: once to refuse the list, once to apply it), on device 0. */
SG_EXPORT CUresult cuMemMapArrayAsync(CUarrayMapInfo *list, unsigned int n, CUstream st)
{
    SG_ENTER(cuMemMapArrayAsync, API);
    (void)st;
    if (!list || n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    sg_mem_wrlock();
    CUresult r = CUDA_SUCCESS;
    uint64_t first, count;
    for (unsigned int k = 0; k < n && r == CUDA_SUCCESS; k++)
        r = check_entry(&list[k], array_find(list[k].resource.array),
                        sg_phys_find(list[k].memHandle.memHandle), &first, &count);
    for (unsigned int k = 0; k < n && r == CUDA_SUCCESS; k++) {
        sparse_t *a = array_find(list[k].resource.array);
        sg_phys_t *p = sg_phys_find(list[k].memHandle.memHandle);
        check_entry(&list[k], a, p, &first, &count);
        for (uint64_t i = first; i < first + count; i++) {
            unmap_tile(a, i);
            if (list[k].memOperationType == CU_MEM_OPERATION_TYPE_MAP) {
                a->tile[i] = p;
                p->refs++;
            }
        }
    }
    sg_mem_unlock();
    return r;
}

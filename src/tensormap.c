/*
 * TMA descriptors: what the cuTensorMapEncode* and
 * cuTensorMapReplaceAddress hooks record, and the copy a rewriter needs.
 *
 * A kernel that reads a tensor through a descriptor (a Hopper GEMM) gets
 * no pointer to it in its arguments, only the descriptor's 128 opaque
 * bytes. Every descriptor the driver makes for the application is
 * recorded here with the address it was given (core/tmap.c), so the
 * launch path recognises one by its exact bytes and learns from the
 * address as from a pointer word (launch.c, marks.c).
 *
 * Not recognised: descriptors encoded before spillway was loaded, built
 * by hand or on the device, or changed in place (tensormap.replace in
 * PTX). They still work: the kernel reads the tensor where it lies.
 */
#include "residency.h"

#include <string.h>

_Static_assert(sizeof(CUtensorMap) == SW_TMAP_BYTES, "a CUtensorMap is 128 bytes");

/* About a model's worth of GEMM operands, and a few steps' activations. */
#define TMAP_ENTRIES 4096

static pthread_once_t once = PTHREAD_ONCE_INIT;
static sw_tmap_t *table;

static void make_table(void)
{
    sw_tmap_t *t = sw_tmap_new(TMAP_ENTRIES);
    if (!t)
        sw_warn("out of memory for the TMA descriptor table: descriptors are not recognised");
    __atomic_store_n(&table, t, __ATOMIC_RELEASE);
}

sw_tmap_t *sw_tmaps(void)
{
    return __atomic_load_n(&table, __ATOMIC_ACQUIRE);
}

/* Bytes per element of a descriptor's data type; 0 for the packed
 * sub-byte types, whose footprint per element of globalDim[0] the
 * documentation leaves unclear (their tensors' sizes are then unknown). */
static uint32_t elem_bytes(CUtensorMapDataType type)
{
    switch (type) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8:
        return 1;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
        return 2;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
        return 4;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
        return 8;
    default:
        return 0;
    }
}

/* Records desc -> v, making the table on first use. A table that could
 * not be made records nothing (logged once, by make_table). */
static void record(const CUtensorMap *desc, sw_tmap_val_t v)
{
    pthread_once(&once, make_table);
    if (sw_tmaps())
        sw_tmap_insert(sw_tmaps(), desc, v);
}

CUresult sw_tmap_encoded(CUresult r, const CUtensorMap *desc, CUtensorMapDataType type,
                         cuuint32_t rank, const void *addr, const cuuint64_t *dim,
                         const cuuint64_t *strides)
{
    if (r != CUDA_SUCCESS || !desc)
        return r;
    /* The driver accepted them: dim has rank entries, strides rank - 1. */
    record(desc, (sw_tmap_val_t){.addr = (uint64_t)(uintptr_t)addr,
                                 .bytes = sw_tmap_extent(rank, dim, strides, elem_bytes(type))});
    return r;
}

CUresult sw_tmap_replace(CUresult (*real)(CUtensorMap *, void *), CUtensorMap *desc, void *addr)
{
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    CUtensorMap before;
    if (desc)
        memcpy(&before, desc, sizeof before);
    CUresult r = real(desc, addr);
    if (r != CUDA_SUCCESS || !desc)
        return r;
    /* Only the address changed: the tensor's size carries over, when the
     * bytes before were recorded. Looked up only now, after the driver
     * succeeded, so the table's lock is never taken in a forked child
     * (fork.c). */
    sw_tmap_val_t v = {0};
    sw_tmap_lookup(sw_tmaps(), &before, &v);
    record(desc, (sw_tmap_val_t){.addr = (uint64_t)(uintptr_t)addr, .bytes = v.bytes});
    return r;
}

CUresult sw_tmap_retarget(const void *desc, uint64_t new_addr, void *out)
{
    if (!desc || !out || (uintptr_t)out % 64)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult (*replace)(CUtensorMap *, void *) = sw_real()->cuTensorMapReplaceAddress;
    if (!replace)
        return CUDA_ERROR_NOT_FOUND;
    /* Made in a copy of spillway's own, so that out is written only with
     * a finished descriptor. Called directly, not through the hook: the
     * copy points at spillway's memory and is not recorded. */
    CUtensorMap copy;
    memcpy(&copy, desc, sizeof copy);
    CUresult r = replace(&copy, (void *)(uintptr_t)new_addr);
    if (r == CUDA_SUCCESS)
        memcpy(out, &copy, sizeof copy);
    return r;
}

/*
 * TMA descriptors: cuTensorMapEncodeTiled and cuTensorMapReplaceAddress.
 *
 * On Hopper a CUTLASS-style GEMM receives its operands only inside
 * CUtensorMap descriptors, 128 opaque bytes passed by value (cuda-facts.md
 * §2). The real layout is undocumented, so simgpu uses its own, and hides
 * the address the way an unknown layout would: no 8-byte word of the
 * descriptor, aligned or not, holds it. A program (or spillway) that
 * scans launch arguments for pointers does not find it; only a decode
 * through this file does (the built-in sg_gemv_tma_f32 does).
 *
 *   qword  0: "SGTM" magic          | address part A (scrambled, 32 bits)
 *   qword  1: type, rank, interleave, swizzle, L2 promotion, OOB fill
 *   qwords 2-6: globalDim[0..4]      qwords 7-10: globalStrides[0..3]
 *   qword 11: boxDim[0..4], a byte each   qword 12: elementStrides, a byte each
 *   qword 13: address part B (scrambled) | check over qwords 1-12 and A, B
 *   qwords 14-15: zero
 *
 * The address (16-byte aligned, so its low 4 bits are dropped) is split in
 * two 32-bit halves, each XORed with its own key. Validation follows the
 * driver's documentation of cuTensorMapEncodeTiled: every violation gives
 * CUDA_ERROR_INVALID_VALUE and leaves *tensorMap unchanged.
 */
#include "sg.h"

#include <string.h>

#define MAGIC 0x4d544753u /* "SGTM" */
#define KEY_A 0xa5c3e1f7u
#define KEY_B 0x3b1d5f79u

/* Element size in bits, or 0 for an unknown type. */
static unsigned elem_bits(unsigned type)
{
    static const unsigned char bits[] = {8, 16, 32, 32, 64, 64, 16, 32, 64, 16, 32, 32, 32, 4, 4, 6};
    return type < sizeof bits ? bits[type] : 0;
}

static bool is_float(unsigned type)
{
    return type >= CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && type <= CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ;
}

static bool packed16(unsigned type)
{
    return type == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B ||
           type == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B;
}

/* The alignment the global address and strides need. */
static uint64_t addr_align(unsigned type, unsigned interleave)
{
    return interleave == CU_TENSOR_MAP_INTERLEAVE_32B || packed16(type) ? 32 : 16;
}

static uint32_t check_of(const uint64_t *q)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 1; i <= 12; i++) {
        h ^= q[i];
        h *= 0x100000001b3ull;
    }
    h ^= q[0] >> 32;
    h *= 0x100000001b3ull;
    h ^= (uint32_t)q[13];
    h *= 0x100000001b3ull;
    return (uint32_t)(h ^ h >> 32);
}

static void put_addr(uint64_t *q, uint64_t addr)
{
    uint64_t a = addr >> 4;
    q[0] = MAGIC | (uint64_t)((uint32_t)a ^ KEY_A) << 32;
    q[13] = (uint32_t)(a >> 32) ^ KEY_B;
    q[13] |= (uint64_t)check_of(q) << 32;
}

bool sg_tensormap_decode(const void *desc, sg_tensormap_t *out)
{
    uint64_t q[16];
    memcpy(q, desc, sizeof q);
    if ((uint32_t)q[0] != MAGIC || check_of(q) != (uint32_t)(q[13] >> 32))
        return false;
    uint64_t a = (uint64_t)((uint32_t)(q[0] >> 32) ^ KEY_A) |
                 (uint64_t)((uint32_t)q[13] ^ KEY_B) << 32;
    memset(out, 0, sizeof *out);
    out->addr = a << 4;
    out->type = (unsigned)(q[1] & 0xff);
    out->rank = (unsigned)(q[1] >> 8 & 0xff);
    for (unsigned i = 0; i < out->rank && i < 5; i++) {
        out->dim[i] = q[2 + i];
        out->box[i] = (uint32_t)(q[11] >> 8 * i & 0xff) + 1;
        if (i + 1 < out->rank)
            out->stride[i] = q[7 + i];
    }
    return out->rank >= 1 && out->rank <= 5;
}

SG_EXPORT CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                          cuuint32_t tensorRank, void *globalAddress,
                                          const cuuint64_t *globalDim,
                                          const cuuint64_t *globalStrides,
                                          const cuuint32_t *boxDim,
                                          const cuuint32_t *elementStrides,
                                          CUtensorMapInterleave interleave,
                                          CUtensorMapSwizzle swizzle,
                                          CUtensorMapL2promotion l2Promotion,
                                          CUtensorMapFloatOOBfill oobFill)
{
    SG_ENTER(cuTensorMapEncodeTiled, API);
    unsigned type = (unsigned)tensorDataType, bits = elem_bits(type);
    uint64_t align = addr_align(type, (unsigned)interleave);
    if (!tensorMap || (uintptr_t)tensorMap % 64 || bits == 0 || tensorRank == 0 ||
        tensorRank > 5 || !globalDim || !boxDim || !elementStrides ||
        (tensorRank > 1 && !globalStrides) || (uint64_t)(uintptr_t)globalAddress % align)
        return CUDA_ERROR_INVALID_VALUE;
    if ((unsigned)interleave > CU_TENSOR_MAP_INTERLEAVE_32B ||
        (unsigned)swizzle > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B ||
        (unsigned)l2Promotion > CU_TENSOR_MAP_L2_PROMOTION_L2_256B ||
        (unsigned)oobFill > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
        return CUDA_ERROR_INVALID_VALUE;
    if (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE && tensorRank < 3)
        return CUDA_ERROR_INVALID_VALUE;
    if (interleave == CU_TENSOR_MAP_INTERLEAVE_32B && swizzle != CU_TENSOR_MAP_SWIZZLE_32B)
        return CUDA_ERROR_INVALID_VALUE;
    if (oobFill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && !is_float(type))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < tensorRank; i++) {
        if (globalDim[i] == 0 || globalDim[i] > (1ull << 32) || boxDim[i] == 0 ||
            boxDim[i] > 256 || elementStrides[i] == 0 || elementStrides[i] > 8)
            return CUDA_ERROR_INVALID_VALUE;
        if (i + 1 < tensorRank &&
            (globalStrides[i] % align || globalStrides[i] >= (1ull << 40)))
            return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t inner = (uint64_t)boxDim[0] * bits / 8; /* bytes of the box's inner row */
    if (interleave == CU_TENSOR_MAP_INTERLEAVE_NONE) {
        static const uint64_t span[] = {0, 32, 64, 128, 128, 128, 128};
        if (inner % 16 || (swizzle != CU_TENSOR_MAP_SWIZZLE_NONE && inner > span[swizzle]))
            return CUDA_ERROR_INVALID_VALUE;
    }

    uint64_t q[16] = {0};
    q[1] = type | tensorRank << 8 | (uint64_t)interleave << 16 | (uint64_t)swizzle << 24 |
           (uint64_t)l2Promotion << 32 | (uint64_t)oobFill << 40;
    for (unsigned i = 0; i < tensorRank; i++) {
        q[2 + i] = globalDim[i];
        q[11] |= (uint64_t)(boxDim[i] - 1) << 8 * i;
        q[12] |= (uint64_t)elementStrides[i] << 8 * i;
        if (i + 1 < tensorRank)
            q[7 + i] = globalStrides[i];
    }
    put_addr(q, (uint64_t)(uintptr_t)globalAddress);
    memcpy(tensorMap, q, sizeof q);
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress)
{
    SG_ENTER(cuTensorMapReplaceAddress, API);
    sg_tensormap_t t;
    uint64_t q[16];
    if (!tensorMap || (uintptr_t)tensorMap % 64 || !sg_tensormap_decode(tensorMap, &t))
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(q, tensorMap, sizeof q);
    if ((uint64_t)(uintptr_t)globalAddress % addr_align(t.type, (unsigned)(q[1] >> 16 & 0xff)))
        return CUDA_ERROR_INVALID_VALUE;
    put_addr(q, (uint64_t)(uintptr_t)globalAddress);
    memcpy(tensorMap, q, sizeof q);
    return CUDA_SUCCESS;
}

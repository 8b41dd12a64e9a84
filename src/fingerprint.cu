// spillway's own kernel: a fingerprint of a chunk, computed on the GPU.
//
// out += sum over 8-byte words i (the tail zero-padded) of mix(w_i, i),
// mod 2^64; the caller zeroes *out first. mix(., i) is a bijection, so a
// changed word always changes its term and a single changed byte always
// changes the sum: spillway uses it to know exactly that a chunk the GPU
// held is unchanged, and skip copying it back. The sum is order-free, so
// threads add their terms in any order (warp reduction, then atomicAdd).
// simgpu implements the same function as a built-in kernel of this name.
//
// tools/gen-fingerprint-ptx.sh turns this into src/fingerprint_ptx.h.

typedef unsigned long long u64;

__device__ static u64 mix(u64 w, u64 i)
{
    w ^= i * 0x9E3779B97F4A7C15ull;
    w *= 0xBF58476D1CE4E5B9ull;
    return w ^ (w >> 31);
}

extern "C" __global__ void spillway_fingerprint(const void *src, u64 bytes, u64 *out)
{
    const u64 *w = (const u64 *)src;
    u64 n = bytes / 8, sum = 0;
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        sum += mix(w[i], i);
    if (blockIdx.x == 0 && threadIdx.x == 0 && (bytes & 7)) {
        u64 tail = 0;
        const unsigned char *t = (const unsigned char *)src + 8 * n;
        for (u64 k = 0; k < (bytes & 7); k++)
            tail |= (u64)t[k] << (8 * k);
        sum += mix(tail, n);
    }
    for (int off = 16; off > 0; off >>= 1)
        sum += __shfl_down_sync(0xffffffffu, sum, off);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(out, sum);
}

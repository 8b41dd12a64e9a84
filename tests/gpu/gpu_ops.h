/*
 * gpu_ops.h: the integer arithmetic of the correctness programs' kernels,
 * shared by the device code and the host reference, so both sides compute
 * the same function by construction. Everything is uint32_t with wrap-around:
 * exact and deterministic on any GPU, in any order of threads.
 *
 * Included by CUDA sources only (nvcc defines __host__ and __device__).
 */
#ifndef SPILLWAY_GPU_OPS_H
#define SPILLWAY_GPU_OPS_H

#include <stdint.h>

__host__ __device__ static inline uint32_t op_rotl(uint32_t x, int r)
{
  return (x << r) | (x >> (32 - r));
}

/* A 32-bit mix of an index and a seed (splitmix64's finalizer, folded). */
__host__ __device__ static inline uint32_t op_fill(uint64_t i, uint32_t seed)
{
  uint64_t z = i + 0x9e3779b97f4a7c15ull * (seed + 1ull);

  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (uint32_t)(z ^ (z >> 31));
}

/* s = f(s, w): the "layer" kernel, reading a weight. */
__host__ __device__ static inline uint32_t op_step(uint32_t s, uint32_t w, uint32_t salt)
{
  return s * 2654435761u + (w ^ salt);
}

/* s = f(s, a, b): the kernel given its pointers inside a by-value struct. */
__host__ __device__ static inline uint32_t op_pair(uint32_t s, uint32_t a, uint32_t b, uint32_t salt)
{
  return op_rotl(s ^ salt, 5) ^ (a + b);
}

/* s = f(s, w): the kernel that finds w through a pointer table in device memory. */
__host__ __device__ static inline uint32_t op_table(uint32_t s, uint32_t w, uint32_t salt)
{
  return s + w * (salt | 1u);
}

/* w = f(w, s): a kernel that writes into a weight, so write-back is exercised. */
__host__ __device__ static inline uint32_t op_update(uint32_t w, uint32_t s)
{
  return w ^ op_rotl(s, 13);
}

/* The salt of layer l in pass p: differs for every (p, l). */
__host__ __device__ static inline uint32_t op_salt(uint32_t pass, uint32_t layer)
{
  return (pass * 131u + layer + 1u) * 0x9e3779b9u;
}

#endif

/*
 * The kernels of gpu-library. They are not compiled into the program: the
 * build turns this file into PTX (nvcc -ptx, embed-ptx.sh) and gpu-library
 * loads that text with cuLibraryLoadData and launches the kernels as
 * CUkernel handles. extern "C" keeps their names unmangled for
 * cuLibraryGetKernel.
 */
#include "gpu_ops.h"

/* Mirrored by struct lib_pair_args in library.cu: keep them in step. */
struct lib_pair_args {
  const uint32_t *a;
  const uint32_t *b;
  uint32_t *out;
  unsigned long long n;
};

#define GRID_STRIDE(i, n)                                                        \
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; \
       i < (n); i += (unsigned long long)gridDim.x * blockDim.x)

extern "C" __global__ void lib_fill(uint32_t *x, unsigned long long n, uint32_t seed)
{
  GRID_STRIDE(i, n) x[i] = op_fill(i, seed);
}

extern "C" __global__ void lib_step(const uint32_t *w, uint32_t *s, unsigned long long n,
                                    uint32_t salt)
{
  GRID_STRIDE(i, n) s[i] = op_step(s[i], w[i], salt);
}

extern "C" __global__ void lib_pair(lib_pair_args p, uint32_t salt)
{
  GRID_STRIDE(i, p.n) p.out[i] = op_pair(p.out[i], p.a[i], p.b[i], salt);
}

extern "C" __global__ void lib_update(uint32_t *w, const uint32_t *s, unsigned long long n)
{
  GRID_STRIDE(i, n) w[i] = op_update(w[i], s[i]);
}

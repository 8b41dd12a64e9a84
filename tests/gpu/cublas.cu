/*
 * gpu-cublas: cuBLAS SGEMV, SGEMM and batched SGEMM over many weight
 * matrices, checked bit for bit against a host reference.
 *
 * cuBLAS carries its own static runtime and, on Hopper, launches its GEMMs
 * through cuLaunchKernelEx: spillway sees them only at the driver.
 *
 * Exactness: weights and activations are small integers (-2..2) stored in
 * float. Every product and every partial sum is an integer of magnitude at
 * most 4 * m < 2^24, so it is exact in fp32 (and the inputs in TF32), and the
 * result does not depend on the order of summation, the algorithm or split-K.
 * Between layers k_act folds each value back into -2..2.
 *
 * Each pass, for every layer l (weight W_l, m x m, column-major):
 *   v = act(op(W_l) v)            SGEMV, op = N for even l, T for odd l;
 *   X = act(op'(W_l) X)           SGEMM with batch columns, op' the other one;
 * then one cublasSgemmBatched over all layers, O_l = act(W_l^T X), whose
 * A, B and C pointer arrays live in device memory (the grouped-GEMM case:
 * spillway cannot see those pointers). O is compared and hashed each pass;
 * v and X at the end.
 */
#include "gpu_common.h"

#include <cublas_v2.h>

static void die_blas(cublasStatus_t r, const char *what, int line)
{
  fprintf(stderr, "%s: error: cublas.cu:%d: %s -> %s\n", g_prog, line, what,
          cublasGetStatusName(r));
  printf("%s: result=error %s\n", g_prog, cublasGetStatusName(r));
  exit(1);
}

#define CKB(call)                                                                \
  do {                                                                           \
    cublasStatus_t ckb_r_ = (call);                                              \
    if (ckb_r_ != CUBLAS_STATUS_SUCCESS)                                         \
      die_blas(ckb_r_, #call, __LINE__);                                         \
  } while (0)

/* Fold an integer into -2..2; the same on host and device. */
__host__ __device__ static inline int act_i(int x)
{
  return ((x % 5) + 5) % 5 - 2;
}

__global__ void k_act(const float *in, float *out, size_t n)
{
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    out[i] = (float)act_i((int)in[i]);
}

/* y = op(W) x on the host, W column-major m x m, in exact integers. */
static void ref_mv(const int8_t *w, int m, bool trans, const int32_t *x, int32_t *y)
{
  if (trans) {
    for (int r = 0; r < m; r++) {
      const int8_t *col = w + (size_t)r * m;  /* (W^T)[r][c] = W[c + r m] */
      int32_t acc = 0;
      for (int c = 0; c < m; c++)
        acc += col[c] * x[c];
      y[r] = acc;
    }
  } else {
    memset(y, 0, m * sizeof *y);
    for (int c = 0; c < m; c++) {
      const int8_t *col = w + (size_t)c * m;  /* W[r][c] = W[r + c m] */
      int32_t xc = x[c];
      for (int r = 0; r < m; r++)
        y[r] += col[r] * xc;
    }
  }
}

/* in -> act -> out, for n values (in and out may be the same). */
static void ref_act(const int32_t *in, int32_t *out, size_t n)
{
  for (size_t i = 0; i < n; i++)
    out[i] = act_i(in[i]);
}

/* Compare device floats with host integers; index of the first difference or -1. */
static long long diff_f32_i32(const float *got, const int32_t *want, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (got[i] != (float)want[i])
      return (long long)i;
  return -1;
}

static int report_mismatch(const char *what, int pass, long long i, uint64_t h,
                           unsigned long long footprint)
{
  printf("%s: result=MISMATCH buffer=%s pass=%d index=%lld checksum=0x%016llx footprint=%llu\n",
         g_prog, what, pass, i, (unsigned long long)h, footprint);
  return 1;
}

int main(int argc, char **argv)
{
  unsigned long long m_ = 2048, layers_ = 64, batch_ = 4, passes = 2, seed = 1;
  const flag_t flags[] = {
    { "--m", &m_, NULL, "matrix side (each weight m*m floats)" },
    { "--layers", &layers_, NULL, "weight matrices (one cudaMalloc each)" },
    { "--batch", &batch_, NULL, "columns of the SGEMM operand" },
    { "--passes", &passes, NULL, "passes over all layers" },
    { "--seed", &seed, NULL, "seed of the data" },
  };
  gpu_init(argv[0]);
  if (parse_flags(argc, argv, "cuBLAS SGEMV/SGEMM/SgemmBatched over many weights", flags, 5))
    return gpu_check();
  if (m_ < 16 || m_ > 65536 || layers_ < 2 || batch_ < 1 || batch_ >= m_ || passes < 1)
    die("need 16 <= --m <= 65536, --layers >= 2, 1 <= --batch < m, --passes >= 1 (%s)", "flags");

  const int m = (int)m_, L = (int)layers_, B = (int)batch_;
  const size_t mm = (size_t)m * m, wbytes = mm * sizeof(float);
  const size_t xn = (size_t)m * B;
  /* weights + batched outputs; v and X (and the cuBLAS workspace) are small. */
  const unsigned long long footprint = (unsigned long long)L * wbytes + L * xn * sizeof(float);
  double t0 = now_s();

  cublasHandle_t hb;
  CKB(cublasCreate(&hb));

  /* Weights: int8 on the host for the reference, float on the device. */
  int8_t **hw = (int8_t **)xmalloc(L * sizeof *hw);
  float *fbuf = (float *)xmalloc(wbytes);
  float **dw = (float **)xmalloc(L * sizeof *dw);
  for (int l = 0; l < L; l++) {
    uint64_t s = seed * 1000003ull + l;
    hw[l] = (int8_t *)xmalloc(mm);
    for (size_t i = 0; i < mm; i++) {
      hw[l][i] = (int8_t)(splitmix64(&s) % 5) - 2;
      fbuf[i] = hw[l][i];
    }
    CK(cudaMalloc(&dw[l], wbytes));
    CK(cudaMemcpy(dw[l], fbuf, wbytes, cudaMemcpyHostToDevice));
  }

  /* v, X and the batched outputs O_l, with their host references. */
  int32_t *hv = (int32_t *)xmalloc(m * sizeof(int32_t)), *hx = (int32_t *)xmalloc(xn * sizeof(int32_t));
  int32_t *tmp = (int32_t *)xmalloc(xn * sizeof(int32_t)), *ho = (int32_t *)xmalloc(L * xn * sizeof(int32_t));
  float *back = (float *)xmalloc(L * xn * sizeof(float));
  {
    uint64_t s = seed * 1000003ull + 999983ull;
    for (int i = 0; i < m; i++)
      hv[i] = (int32_t)(splitmix64(&s) % 5) - 2;
    for (size_t i = 0; i < xn; i++)
      hx[i] = (int32_t)(splitmix64(&s) % 5) - 2;
    for (int i = 0; i < m; i++)
      fbuf[i] = (float)hv[i];
    for (size_t i = 0; i < xn; i++)
      fbuf[m + i] = (float)hx[i];
  }
  float *dv, *dv2, *dx, *dx2, *dout;
  CK(cudaMalloc(&dv, m * sizeof(float)));
  CK(cudaMalloc(&dv2, m * sizeof(float)));
  CK(cudaMalloc(&dx, xn * sizeof(float)));
  CK(cudaMalloc(&dx2, xn * sizeof(float)));
  CK(cudaMalloc(&dout, L * xn * sizeof(float)));
  CK(cudaMemcpy(dv, fbuf, m * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dx, fbuf + m, xn * sizeof(float), cudaMemcpyHostToDevice));

  /* The batched call's pointer arrays, in device memory. */
  const float **ha = (const float **)xmalloc(L * sizeof *ha);
  const float **hbp = (const float **)xmalloc(L * sizeof *hbp);
  float **hc = (float **)xmalloc(L * sizeof *hc);
  for (int l = 0; l < L; l++) {
    ha[l] = dw[l];
    hbp[l] = dx;
    hc[l] = dout + (size_t)l * xn;
  }
  const float **da, **db;
  float **dc;
  CK(cudaMalloc(&da, L * sizeof *da));
  CK(cudaMalloc(&db, L * sizeof *db));
  CK(cudaMalloc(&dc, L * sizeof *dc));
  CK(cudaMemcpy(da, ha, L * sizeof *da, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, hbp, L * sizeof *db, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dc, hc, L * sizeof *dc, cudaMemcpyHostToDevice));

  const float one = 1.0f, zero = 0.0f;
  uint64_t h = HASH_INIT;
  for (int p = 0; p < (int)passes; p++) {
    for (int l = 0; l < L; l++) {
      bool t = l & 1;

      CKB(cublasSgemv(hb, t ? CUBLAS_OP_T : CUBLAS_OP_N, m, m, &one, dw[l], m, dv, 1, &zero,
                      dv2, 1));
      k_act<<<grid_for(m), 256>>>(dv2, dv, m);
      CK_LAUNCH();
      CKB(cublasSgemm(hb, t ? CUBLAS_OP_N : CUBLAS_OP_T, CUBLAS_OP_N, m, B, m, &one, dw[l], m,
                      dx, m, &zero, dx2, m));
      k_act<<<grid_for(xn), 256>>>(dx2, dx, xn);
      CK_LAUNCH();

      ref_mv(hw[l], m, t, hv, tmp);
      ref_act(tmp, hv, m);
      for (int j = 0; j < B; j++)
        ref_mv(hw[l], m, !t, hx + (size_t)j * m, tmp + (size_t)j * m);
      ref_act(tmp, hx, xn);
    }
    CKB(cublasSgemmBatched(hb, CUBLAS_OP_T, CUBLAS_OP_N, m, B, m, &one, da, m, db, m, &zero, dc,
                           m, L));
    k_act<<<grid_for(L * xn), 256>>>(dout, dout, L * xn);
    CK_LAUNCH();
    for (int l = 0; l < L; l++) {
      for (int j = 0; j < B; j++)
        ref_mv(hw[l], m, true, hx + (size_t)j * m, tmp + (size_t)j * m);
      ref_act(tmp, ho + (size_t)l * xn, xn);
    }

    CK(cudaMemcpy(back, dout, L * xn * sizeof(float), cudaMemcpyDeviceToHost));
    h = hash_bytes(h, back, L * xn * sizeof(float));
    long long bad = diff_f32_i32(back, ho, L * xn);
    if (bad >= 0)
      return report_mismatch("batched", p, bad, h, footprint);
  }

  CK(cudaMemcpy(back, dv, m * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(back + m, dx, xn * sizeof(float), cudaMemcpyDeviceToHost));
  h = hash_bytes(h, back, (m + xn) * sizeof(float));
  long long bad = diff_f32_i32(back, hv, m);
  if (bad >= 0)
    return report_mismatch("gemv", (int)passes - 1, bad, h, footprint);
  if ((bad = diff_f32_i32(back + m, hx, xn)) >= 0)
    return report_mismatch("gemm", (int)passes - 1, bad, h, footprint);

  CKB(cublasDestroy(hb));
  for (int l = 0; l < L; l++)
    CK(cudaFree(dw[l]));
  CK(cudaFree(dv));
  CK(cudaFree(dv2));
  CK(cudaFree(dx));
  CK(cudaFree(dx2));
  CK(cudaFree(dout));
  CK(cudaFree(da));
  CK(cudaFree(db));
  CK(cudaFree(dc));
  CK_SYNC();
  printf("%s: result=match checksum=0x%016llx footprint=%llu layers=%d m=%d batch=%d passes=%llu "
         "time_s=%.2f\n",
         g_prog, (unsigned long long)h, footprint, L, m, B, passes, now_s() - t0);
  return 0;
}

/*
 * gpu-custom (shared runtime) and gpu-custom-static (static runtime, the same
 * source): custom kernels over several hundred MiB of cudaMalloc'ed memory,
 * checked bit for bit against a host reference.
 *
 * The model: L "layers" of n uint32_t each, one state vector s of n, and a
 * table of the layers' device pointers stored in device memory. Each pass
 * allocates a scratch buffer, then for every layer l runs one of three
 * kernels, chosen by l % 3:
 *   0  k_step   gets the layer's pointer as an argument;
 *   1  k_pair   gets the layer's and the scratch's pointers inside a
 *               by-value struct;
 *   2  k_table  gets only the table: it reads the layer through a pointer
 *               stored in device memory, which spillway cannot see;
 * and, for l % 4 == 3, k_update writes into the layer, so that chunks the
 * GPU changed must come home exactly. Then the scratch is freed.
 *
 * At the end s and every layer are copied back and compared with the host
 * reference, which runs the same ops (gpu_ops.h) in the same order.
 */
#include "gpu_common.h"
#include "gpu_ops.h"

struct pair_args {
  const uint32_t *a;
  const uint32_t *b;
  uint32_t *out;
  size_t n;
};

#define GRID_STRIDE(i, n)                                                        \
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n);         \
       i += (size_t)gridDim.x * blockDim.x)

__global__ void k_fill(uint32_t *x, size_t n, uint32_t seed)
{
  GRID_STRIDE(i, n) x[i] = op_fill(i, seed);
}

__global__ void k_step(const uint32_t *__restrict__ w, uint32_t *__restrict__ s, size_t n,
                       uint32_t salt)
{
  GRID_STRIDE(i, n) s[i] = op_step(s[i], w[i], salt);
}

__global__ void k_pair(pair_args p, uint32_t salt)
{
  GRID_STRIDE(i, p.n) p.out[i] = op_pair(p.out[i], p.a[i], p.b[i], salt);
}

__global__ void k_table(const uint32_t *const *table, int layer, uint32_t *s, size_t n,
                        uint32_t salt)
{
  const uint32_t *w = table[layer];

  GRID_STRIDE(i, n) s[i] = op_table(s[i], w[i], salt);
}

__global__ void k_update(uint32_t *w, const uint32_t *s, size_t n)
{
  GRID_STRIDE(i, n) w[i] = op_update(w[i], s[i]);
}

/* The host reference of one pass; `scratch` is the pass's k_fill output. */
static void ref_pass(uint32_t **w, uint32_t *s, const uint32_t *scratch, size_t n, int layers,
                     uint32_t pass)
{
  for (int l = 0; l < layers; l++) {
    uint32_t salt = op_salt(pass, l);
    const uint32_t *wl = w[l];

    switch (l % 3) {
    case 0:
      for (size_t i = 0; i < n; i++)
        s[i] = op_step(s[i], wl[i], salt);
      break;
    case 1:
      for (size_t i = 0; i < n; i++)
        s[i] = op_pair(s[i], wl[i], scratch[i], salt);
      break;
    default:
      for (size_t i = 0; i < n; i++)
        s[i] = op_table(s[i], wl[i], salt);
      break;
    }
    if (l % 4 == 3)
      for (size_t i = 0; i < n; i++)
        w[l][i] = op_update(w[l][i], s[i]);
  }
}

int main(int argc, char **argv)
{
  unsigned long long total_mib = 1000, layer_mib = 40, passes = 3, seed = 1;
  const flag_t flags[] = {
    { "--mib", &total_mib, NULL, "MiB of layer weights in all (rounded down to whole layers)" },
    { "--layer-mib", &layer_mib, NULL, "MiB per layer (one cudaMalloc each)" },
    { "--passes", &passes, NULL, "passes over all layers" },
    { "--seed", &seed, NULL, "seed of the data" },
  };
  gpu_init(argv[0]);
  if (parse_flags(argc, argv, "custom kernels over many cudaMalloc'ed layers", flags, 4))
    return gpu_check();
  if (layer_mib < 1 || total_mib < 3 * layer_mib || passes < 1)
    die("need --layer-mib >= 1, --mib >= 3 layers, --passes >= 1 (%s)", "flags");

  const int layers = (int)(total_mib / layer_mib);
  const size_t n = layer_mib * MiB / sizeof(uint32_t);
  const size_t bytes = n * sizeof(uint32_t);
  /* layers + state + scratch; the pointer table is too small to count. */
  const unsigned long long footprint = (unsigned long long)(layers + 2) * bytes;
  double t0 = now_s();

  /* Host copies: the reference's state, and the data to upload. */
  uint32_t **hw = (uint32_t **)xmalloc(layers * sizeof *hw);
  uint32_t *hs = (uint32_t *)xmalloc(bytes), *hscratch = (uint32_t *)xmalloc(bytes);
  uint32_t *back = (uint32_t *)xmalloc(bytes);
  for (int l = 0; l < layers; l++) {
    hw[l] = (uint32_t *)xmalloc(bytes);
    fill_u32(hw[l], n, seed * 1000003ull + l);
  }
  fill_u32(hs, n, seed * 1000003ull + 999983ull);

  /* Device: every layer is its own allocation, as a framework's weights are. */
  uint32_t **dw = (uint32_t **)xmalloc(layers * sizeof *dw);
  uint32_t *ds, **dtable;
  for (int l = 0; l < layers; l++) {
    CK(cudaMalloc(&dw[l], bytes));
    CK(cudaMemcpy(dw[l], hw[l], bytes, cudaMemcpyHostToDevice));
  }
  CK(cudaMalloc(&ds, bytes));
  CK(cudaMemcpy(ds, hs, bytes, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&dtable, layers * sizeof *dtable));
  CK(cudaMemcpy(dtable, dw, layers * sizeof *dtable, cudaMemcpyHostToDevice));

  const unsigned grid = grid_for(n);
  for (uint32_t p = 0; p < passes; p++) {
    uint32_t *dscratch;

    /* A fresh allocation every pass, made while the budget is full. */
    CK(cudaMalloc(&dscratch, bytes));
    k_fill<<<grid, 256>>>(dscratch, n, 7000 + p);
    CK_LAUNCH();
    for (int l = 0; l < layers; l++) {
      uint32_t salt = op_salt(p, l);

      switch (l % 3) {
      case 0:
        k_step<<<grid, 256>>>(dw[l], ds, n, salt);
        break;
      case 1: {
        pair_args a = { dw[l], dscratch, ds, n };
        k_pair<<<grid, 256>>>(a, salt);
        break;
      }
      default:
        k_table<<<grid, 256>>>(dtable, l, ds, n, salt);
        break;
      }
      CK_LAUNCH();
      if (l % 4 == 3) {
        k_update<<<grid, 256>>>(dw[l], ds, n);
        CK_LAUNCH();
      }
    }
    CK(cudaFree(dscratch));

    for (size_t i = 0; i < n; i++)
      hscratch[i] = op_fill(i, 7000 + p);
    ref_pass(hw, hs, hscratch, n, layers, p);
  }
  CK_SYNC();

  /* Compare everything the GPU wrote: the state, then every layer. */
  uint64_t h = HASH_INIT;
  long long bad = -1;
  int bad_buf = -2;
  for (int l = -1; l < layers; l++) {
    const uint32_t *want = l < 0 ? hs : hw[l];

    CK(cudaMemcpy(back, l < 0 ? ds : dw[l], bytes, cudaMemcpyDeviceToHost));
    h = hash_bytes(h, back, bytes);
    if (bad < 0 && (bad = first_diff_u32(back, want, n)) >= 0)
      bad_buf = l;
  }
  for (int l = 0; l < layers; l++)
    CK(cudaFree(dw[l]));
  CK(cudaFree(ds));
  CK(cudaFree(dtable));
  CK_SYNC();

  if (bad >= 0) {
    printf("%s: result=MISMATCH buffer=%s%d index=%lld checksum=0x%016llx footprint=%llu\n",
           g_prog, bad_buf < 0 ? "state" : "layer", bad_buf < 0 ? 0 : bad_buf, bad,
           (unsigned long long)h, footprint);
    return 1;
  }
  printf("%s: result=match checksum=0x%016llx footprint=%llu layers=%d layer_mib=%llu "
         "passes=%llu time_s=%.2f\n",
         g_prog, (unsigned long long)h, footprint, layers, layer_mib, passes, now_s() - t0);
  return 0;
}

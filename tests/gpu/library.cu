/*
 * gpu-library: kernels loaded with cuLibraryLoadData from PTX embedded at
 * build time (library_kernels.cu -> embed-ptx.sh -> library_ptx.h) and
 * launched as CUkernel handles, through the driver API only: cuMemAlloc,
 * cuMemcpy*, a non-blocking stream from cuStreamCreate. Checked bit for bit
 * against a host reference.
 *
 * The layers are filled on the device (lib_fill) and the state uploaded
 * from the host. Each pass allocates and frees a scratch buffer with
 * cuMemAlloc/cuMemFree and, for every layer l, launches by one of three
 * routes (l % 3):
 *   0  lib_step, the CUkernel cast to CUfunction, cuLaunchKernel with
 *      kernelParams;
 *   1  lib_pair (pointers inside a by-value struct), the CUkernel cast to
 *      CUfunction, cuLaunchKernel with a packed `extra` buffer;
 *   2  lib_step, the CUfunction from cuKernelGetFunction, cuLaunchKernelEx;
 * and for l % 4 == 3 lib_update writes into the layer.
 */
#include <cuda.h>

#include "gpu_common.h"
#include "gpu_ops.h"
#include "library_ptx.h"

#include <stddef.h>

static void die_cu(CUresult r, const char *what, int line)
{
  const char *name = NULL;

  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
    name = "CUDA_ERROR_UNKNOWN_CODE";
  fprintf(stderr, "%s: error: library.cu:%d: %s -> %s\n", g_prog, line, what, name);
  printf("%s: result=error %s\n", g_prog, name);
  exit(1);
}

#define CU(call)                                                                 \
  do {                                                                           \
    CUresult cu_r_ = (call);                                                     \
    if (cu_r_ != CUDA_SUCCESS)                                                   \
      die_cu(cu_r_, #call, __LINE__);                                            \
  } while (0)

/* The layout of lib_pair's parameters: the struct, then the salt. */
struct lib_pair_args {
  CUdeviceptr a;
  CUdeviceptr b;
  CUdeviceptr out;
  unsigned long long n;
};
struct lib_pair_params {
  lib_pair_args p;
  uint32_t salt;
};

static void ref_pass(uint32_t **w, uint32_t *s, const uint32_t *scratch, size_t n, int layers,
                     uint32_t pass)
{
  for (int l = 0; l < layers; l++) {
    uint32_t salt = op_salt(pass, l);

    if (l % 3 == 1) {
      for (size_t i = 0; i < n; i++)
        s[i] = op_pair(s[i], w[l][i], scratch[i], salt);
    } else {
      for (size_t i = 0; i < n; i++)
        s[i] = op_step(s[i], w[l][i], salt);
    }
    if (l % 4 == 3)
      for (size_t i = 0; i < n; i++)
        w[l][i] = op_update(w[l][i], s[i]);
  }
}

int main(int argc, char **argv)
{
  unsigned long long total_mib = 1024, layer_mib = 32, passes = 3, seed = 1;
  const flag_t flags[] = {
    { "--mib", &total_mib, NULL, "MiB of layer weights in all (rounded down to whole layers)" },
    { "--layer-mib", &layer_mib, NULL, "MiB per layer (one cuMemAlloc each)" },
    { "--passes", &passes, NULL, "passes over all layers" },
    { "--seed", &seed, NULL, "seed of the data" },
  };
  gpu_init(argv[0]);
  if (parse_flags(argc, argv, "CUkernels from cuLibraryLoadData(PTX), driver API only", flags, 4))
    return gpu_check();
  if (layer_mib < 1 || total_mib < 3 * layer_mib || passes < 1)
    die("need --layer-mib >= 1, --mib >= 3 layers, --passes >= 1 (%s)", "flags");

  const int layers = (int)(total_mib / layer_mib);
  const unsigned long long n = layer_mib * MiB / sizeof(uint32_t);
  const size_t bytes = n * sizeof(uint32_t);
  const unsigned long long footprint = (unsigned long long)(layers + 2) * bytes;
  double t0 = now_s();

  CUdevice dev;
  CUcontext ctx;
  CU(cuInit(0));
  CU(cuDeviceGet(&dev, 0));
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));

  CUlibrary lib;
  CUkernel k_fill, k_step, k_pair, k_update;
  CUfunction f_step;
  CU(cuLibraryLoadData(&lib, library_ptx, NULL, NULL, 0, NULL, NULL, 0));
  CU(cuLibraryGetKernel(&k_fill, lib, "lib_fill"));
  CU(cuLibraryGetKernel(&k_step, lib, "lib_step"));
  CU(cuLibraryGetKernel(&k_pair, lib, "lib_pair"));
  CU(cuLibraryGetKernel(&k_update, lib, "lib_update"));
  CU(cuKernelGetFunction(&f_step, k_step));

  CUstream st;
  CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  const unsigned grid = grid_for(n);

  /* Layers, filled on the device; the host reference fills its copy alike. */
  uint32_t **hw = (uint32_t **)xmalloc(layers * sizeof *hw);
  CUdeviceptr *dw = (CUdeviceptr *)xmalloc(layers * sizeof *dw);
  for (int l = 0; l < layers; l++) {
    uint32_t fseed = (uint32_t)(seed * 1000 + l);
    void *args[] = { &dw[l], (void *)&n, &fseed };

    CU(cuMemAlloc(&dw[l], bytes));
    CU(cuLaunchKernel((CUfunction)k_fill, grid, 1, 1, 256, 1, 1, 0, st, args, NULL));
    hw[l] = (uint32_t *)xmalloc(bytes);
    for (size_t i = 0; i < n; i++)
      hw[l][i] = op_fill(i, fseed);
  }
  /* The state, uploaded from the host. */
  uint32_t *hs = (uint32_t *)xmalloc(bytes), *hscratch = (uint32_t *)xmalloc(bytes);
  uint32_t *back = (uint32_t *)xmalloc(bytes);
  CUdeviceptr ds;
  fill_u32(hs, n, seed * 1000003ull + 999983ull);
  CU(cuMemAlloc(&ds, bytes));
  CU(cuMemcpyHtoDAsync(ds, hs, bytes, st));
  CU(cuStreamSynchronize(st));

  for (uint32_t p = 0; p < passes; p++) {
    CUdeviceptr dscratch;
    uint32_t sseed = 7000 + p;
    void *fargs[] = { &dscratch, (void *)&n, &sseed };

    CU(cuMemAlloc(&dscratch, bytes));
    CU(cuLaunchKernel((CUfunction)k_fill, grid, 1, 1, 256, 1, 1, 0, st, fargs, NULL));
    for (int l = 0; l < layers; l++) {
      uint32_t salt = op_salt(p, l);
      void *args[] = { &dw[l], &ds, (void *)&n, &salt };

      if (l % 3 == 0) {
        CU(cuLaunchKernel((CUfunction)k_step, grid, 1, 1, 256, 1, 1, 0, st, args, NULL));
      } else if (l % 3 == 1) {
        lib_pair_params pp;
        /* The parameters end after the salt; sizeof pp adds tail padding. */
        size_t size = offsetof(lib_pair_params, salt) + sizeof pp.salt;
        memset(&pp, 0, sizeof pp);
        pp.p.a = dw[l];
        pp.p.b = dscratch;
        pp.p.out = ds;
        pp.p.n = n;
        pp.salt = salt;
        void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &pp, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                          CU_LAUNCH_PARAM_END };
        CU(cuLaunchKernel((CUfunction)k_pair, grid, 1, 1, 256, 1, 1, 0, st, NULL, extra));
      } else {
        CUlaunchConfig cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.gridDimX = grid;
        cfg.gridDimY = cfg.gridDimZ = 1;
        cfg.blockDimX = 256;
        cfg.blockDimY = cfg.blockDimZ = 1;
        cfg.hStream = st;
        CU(cuLaunchKernelEx(&cfg, f_step, args, NULL));
      }
      if (l % 4 == 3) {
        void *uargs[] = { &dw[l], &ds, (void *)&n };
        CU(cuLaunchKernel((CUfunction)k_update, grid, 1, 1, 256, 1, 1, 0, st, uargs, NULL));
      }
    }
    /* cuMemFree must not free memory queued work still reads: wait first. */
    CU(cuStreamSynchronize(st));
    CU(cuMemFree(dscratch));

    for (size_t i = 0; i < n; i++)
      hscratch[i] = op_fill(i, sseed);
    ref_pass(hw, hs, hscratch, n, layers, p);
  }

  uint64_t h = HASH_INIT;
  long long bad = -1;
  int bad_buf = -2;
  for (int l = -1; l < layers; l++) {
    CU(cuMemcpyDtoHAsync(back, l < 0 ? ds : dw[l], bytes, st));
    CU(cuStreamSynchronize(st));
    h = hash_bytes(h, back, bytes);
    if (bad < 0 && (bad = first_diff_u32(back, l < 0 ? hs : hw[l], n)) >= 0)
      bad_buf = l;
  }
  for (int l = 0; l < layers; l++)
    CU(cuMemFree(dw[l]));
  CU(cuMemFree(ds));
  CU(cuStreamDestroy(st));
  CU(cuLibraryUnload(lib));
  CU(cuCtxSynchronize());
  CU(cuDevicePrimaryCtxRelease(dev));

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

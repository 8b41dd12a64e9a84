/*
 * gpu-offload-bench: spillway against its peers' ways of offloading weights,
 * on one model and with the same bytes offloaded in every mode.
 *
 * The model: L layers, each a W x W weight (fp16 or fp32), applied as
 * y = W^T x by cublasGemmEx on one compute stream, x being W x B. Two
 * regimes, one per run (--regime); three with graph:
 *   decode   B = 8 by default: GEMV-like, memory-bound;
 *   prefill  B = 4096 by default: large GEMMs, compute-bound.
 * Every step starts from the same input, so every mode computes the same
 *   graph    decode's sizes, each step one replay of a CUDA graph captured
 *            from one step (as vLLM and SGLang decode); not accelerate,
 *            whose synchronous copies cannot be captured.
 * output; its checksum is printed (cuBLAS is deterministic on one stream
 * with a fixed workspace), and run-bench.sh compares it across modes.
 *
 * K of the L layers (--offload-layers, default L/2, spread evenly) are
 * "offloaded". One mode per run (--mode):
 *   resident             everything in device memory (the ceiling);
 *   spillway             everything cudaMalloc'ed, exactly as resident: the
 *                        script runs it under LD_PRELOAD=libspillway.so with
 *                        a GPU budget of (tracked bytes - offloaded bytes);
 *   spillway-noprefetch  the same, run with SPILLWAY_PREFETCH_BYTES=0;
 *   uva                  like vLLM --cpu-offload-gb: offloaded weights in
 *                        mapped pinned memory (cudaHostAllocMapped), read by
 *                        the GEMMs in place through cudaHostGetDevicePointer;
 *   prefetch             like vLLM/SGLang's prefetch offloader: offloaded
 *                        weights in pinned memory, --lookahead N device
 *                        slots; a copy stream fills slot k % N with the k-th
 *                        offloaded layer up to N offloaded layers ahead,
 *                        events join it to the compute stream both ways;
 *   accelerate           like HF accelerate's cpu_offload: offloaded weights
 *                        in pageable memory, copied with a synchronous
 *                        cudaMemcpy into one device buffer before each
 *                        offloaded layer's GEMM.
 *
 * Reported per run: the median step time over --steps timed steps (after
 * --warmup), from events on the compute stream; tokens/s = B / step; the
 * H2D bandwidth of a 256 MiB pinned cudaMemcpyAsync measured in the same
 * run (median of 5); peak device memory (cudaMemGetInfo, sampled after
 * setup and after every step) above what the process held before the model.
 *
 * --pack N lays N consecutive layers out in one allocation in the modes
 * that keep every weight in device memory (resident, spillway*): PyTorch's
 * caching allocator packs small tensors into shared segments, llama.cpp
 * keeps every weight in one buffer (--pack = --layers). spillway then sees
 * allocations that several layers share, which is where learning per
 * chunk went wrong on simgpu. The peers keep one allocation per layer.
 *
 * --plan prints the sizes (and spillway's budget) without touching the GPU.
 */
#include "gpu_common.h"

#include <cublas_v2.h>
#include <cuda_fp16.h>

static void die_blas(cublasStatus_t r, const char *what, int line)
{
  fprintf(stderr, "%s: error: offload_bench.cu:%d: %s -> %s\n", g_prog, line, what,
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

enum mode_e { M_RESIDENT, M_SPILLWAY, M_SPILLWAY_NOPF, M_UVA, M_PREFETCH, M_ACCELERATE, M_COUNT };
static const char *const mode_names[M_COUNT] = { "resident", "spillway", "spillway-noprefetch",
                                                 "uva",      "prefetch", "accelerate" };

#define WORKSPACE_BYTES (32 * MiB)
#define H2D_BYTES (256 * MiB)

/* spillway tracks allocations of 2 MiB or more, rounded to 2 MiB pages. */
static size_t tracked_size(size_t bytes)
{
  return bytes < 2 * MiB ? 0 : (bytes + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
}

/* Layer l is offloaded iff it is one of K spread evenly over L. */
static bool is_offloaded(int l, int K, int L)
{
  return (long long)(l + 1) * K / L != (long long)l * K / L;
}

/* ---- kernels and GEMM ---------------------------------------------------------- */

__device__ static inline void store(half *p, float v) { *p = __float2half(v); }
__device__ static inline void store(float *p, float v) { *p = v; }

/* p[i] = scale * uniform(-1, 1), a function of (seed, i) only. */
template <class T> __global__ void k_init(T *p, size_t n, unsigned long long seed, float scale)
{
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    unsigned long long z = i + 0x9e3779b97f4a7c15ull * (seed + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    store(p + i, scale * ((float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f));
  }
}

struct model {
  int L, W, B, K, pack; /* layers, width, batch, offloaded layers, layers per allocation */
  bool fp16;
  size_t elt, layer_bytes, act_bytes;
};

static void init_buf(const model &m, void *p, size_t n, unsigned long long seed, float scale,
                     cudaStream_t s)
{
  if (m.fp16)
    k_init<<<grid_for(n), 256, 0, s>>>((half *)p, n, seed, scale);
  else
    k_init<<<grid_for(n), 256, 0, s>>>((float *)p, n, seed, scale);
  CK_LAUNCH();
}

/* y (W x B) = w^T (W x W) x (W x B), fp32 accumulation. */
static void gemm(cublasHandle_t h, const model &m, const void *w, const void *x, void *y)
{
  const float one = 1.0f, zero = 0.0f;
  const cudaDataType dt = m.fp16 ? CUDA_R_16F : CUDA_R_32F;

  CKB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m.W, m.B, m.W, &one, w, dt, m.W, x, dt, m.W,
                   &zero, y, dt, m.W, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* ---- measurements --------------------------------------------------------------- */

static size_t used_bytes(void)
{
  size_t free_b, total_b;

  CK(cudaMemGetInfo(&free_b, &total_b));
  return total_b - free_b;
}

static int cmp_float(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;

  return (x > y) - (x < y);
}

static float median_f(float *v, int n)
{
  qsort(v, n, sizeof *v, cmp_float);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* GB/s (1e9 B/s) of a 256 MiB pinned H2D cudaMemcpyAsync, median of 5. */
static double measure_h2d(cudaStream_t s)
{
  void *h, *d;
  cudaEvent_t a, b;
  float t[5];

  CK(cudaHostAlloc(&h, H2D_BYTES, cudaHostAllocDefault));
  memset(h, 1, H2D_BYTES);
  CK(cudaMalloc(&d, H2D_BYTES));
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaMemcpyAsync(d, h, H2D_BYTES, cudaMemcpyHostToDevice, s)); /* warm-up */
  for (int i = 0; i < 5; i++) {
    CK(cudaEventRecord(a, s));
    CK(cudaMemcpyAsync(d, h, H2D_BYTES, cudaMemcpyHostToDevice, s));
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    CK(cudaEventElapsedTime(&t[i], a, b));
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  CK(cudaFree(d));
  CK(cudaFreeHost(h));
  return H2D_BYTES / (median_f(t, 5) * 1e6);
}

/* ---- the step ------------------------------------------------------------------------ */

struct runner {
  model m;
  int mode, N;               /* N: prefetch slots (lookahead) */
  cublasHandle_t hb;
  cudaStream_t cs, cp;       /* compute; copies (prefetch) */
  void **wdev;               /* per layer: what the GEMM reads (NULL: offloaded, copied) */
  int *kidx;                 /* per layer: offload index k, or -1 */
  void **whost;              /* per offloaded layer k: its host copy */
  void **slot;               /* prefetch: N slots; accelerate: 1 */
  cudaEvent_t *copied, *freed;
  cudaEvent_t fork;          /* graph + prefetch: joins the copy stream to the capture */
  bool graph;
  void *x0, *xa, *xb;
};

/*
 * Prefetch: copy offloaded layer k into slot k % N once that slot is free.
 * A step's first copies in a graph wait for the step's start instead (the
 * fork): the previous replay, which freed their slots, ended before it.
 */
static void issue_copy(runner &r, int k, bool first)
{
  int s = k % r.N;

  CK(cudaStreamWaitEvent(r.cp, first && r.graph ? r.fork : r.freed[s], 0));
  CK(cudaMemcpyAsync(r.slot[s], r.whost[k], r.m.layer_bytes, cudaMemcpyHostToDevice, r.cp));
  CK(cudaEventRecord(r.copied[s], r.cp));
}

/* One forward pass; returns the buffer holding the output. */
static void *run_step(runner &r)
{
  const model &m = r.m;
  void *in = r.xa, *out = r.xb;

  CK(cudaMemcpyAsync(r.xa, r.x0, m.act_bytes, cudaMemcpyDeviceToDevice, r.cs));
  if (r.mode == M_PREFETCH) {
    if (r.graph)
      CK(cudaEventRecord(r.fork, r.cs));
    for (int k = 0; k < r.N && k < m.K; k++)
      issue_copy(r, k, true);
  }
  for (int l = 0; l < m.L; l++) {
    int k = r.kidx[l];

    if (k < 0 || r.mode == M_UVA) {
      gemm(r.hb, m, r.wdev[l], in, out);
    } else if (r.mode == M_PREFETCH) {
      int s = k % r.N;
      CK(cudaStreamWaitEvent(r.cs, r.copied[s], 0));
      gemm(r.hb, m, r.slot[s], in, out);
      CK(cudaEventRecord(r.freed[s], r.cs));
      if (k + r.N < m.K)
        issue_copy(r, k + r.N, false);
    } else { /* M_ACCELERATE: the legacy stream orders it with cs, both ways */
      CK(cudaMemcpy(r.slot[0], r.whost[k], m.layer_bytes, cudaMemcpyHostToDevice));
      gemm(r.hb, m, r.slot[0], in, out);
    }
    void *t = in;
    in = out;
    out = t;
  }
  return in;
}

int main(int argc, char **argv)
{
  const char *mode_s = "resident", *regime = "decode", *dtype = "fp16";
  unsigned long long L_ = 32, W_ = 8192, B_ = 0, K_ = ~0ull, N_ = 2, warmup = 3, steps = 10,
                     seed = 1, pack = 1;
  const flag_t flags[] = {
    { "--mode", NULL, &mode_s,
      "resident|spillway|spillway-noprefetch|uva|prefetch|accelerate" },
    { "--regime", NULL, &regime, "decode|prefill|graph" },
    { "--dtype", NULL, &dtype, "fp16|fp32" },
    { "--layers", &L_, NULL, "layers" },
    { "--width", &W_, NULL, "W: each layer's weight is W x W" },
    { "--batch", &B_, NULL, "tokens per step (0: 8 for decode, 4096 for prefill)" },
    { "--offload-layers", &K_, NULL, "layers offloaded, spread evenly (default: layers / 2)" },
    { "--lookahead", &N_, NULL, "prefetch: device slots, copies issued this many offloaded layers ahead" },
    { "--warmup", &warmup, NULL, "untimed steps first" },
    { "--steps", &steps, NULL, "timed steps (the median is reported)" },
    { "--seed", &seed, NULL, "seed of the data" },
    { "--pack", &pack, NULL, "layers per allocation in resident and spillway modes (default 1)" },
  };
  const int nflags = sizeof flags / sizeof flags[0];
  bool plan = false;

  gpu_init(argv[0]);
  /* --plan takes no value: take it out before the common parser. */
  int na = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--plan"))
      plan = true;
    else
      argv[na++] = argv[i];
  }
  argc = na;
  if (parse_flags(argc, argv, "offload benchmark (--plan: print sizes only)", flags, nflags))
    return gpu_check();

  int mode = -1;
  for (int i = 0; i < M_COUNT; i++)
    if (!strcmp(mode_s, mode_names[i]))
      mode = i;
  if (mode < 0)
    die("unknown --mode %s", mode_s);
  const bool graph = !strcmp(regime, "graph");
  const bool decode = graph || !strcmp(regime, "decode");
  if (!decode && strcmp(regime, "prefill"))
    die("unknown --regime %s (decode|prefill|graph)", regime);
  if (graph && !strcmp(mode_s, "accelerate"))
    die("mode accelerate cannot run in a graph: its copies are synchronous (%s)", regime);
  if (strcmp(dtype, "fp16") && strcmp(dtype, "fp32"))
    die("unknown --dtype %s (fp16|fp32)", dtype);
  if (K_ == ~0ull)
    K_ = L_ / 2;
  if (B_ == 0)
    B_ = decode ? 8 : 4096;
  if (L_ < 1 || L_ > 4096 || W_ < 64 || W_ > 65536 || W_ % 8 || B_ > 1u << 20 || K_ > L_ ||
      N_ < 1 || steps < 1 || steps > 1000 || warmup > 1000 || pack < 1 || pack > L_)
    die("bad sizes: need 1 <= layers <= 4096, 64 <= width <= 65536 (a multiple of 8), "
        "offload-layers <= layers, lookahead >= 1, 1 <= steps <= 1000, 1 <= pack <= layers "
        "(%s)", "flags");

  model m;
  m.L = (int)L_;
  m.W = (int)W_;
  m.B = (int)B_;
  m.K = (int)K_;
  m.pack = (int)pack;
  m.fp16 = !strcmp(dtype, "fp16");
  m.elt = m.fp16 ? 2 : 4;
  m.layer_bytes = (size_t)m.W * m.W * m.elt;
  m.act_bytes = (size_t)m.W * m.B * m.elt;
  const size_t model_bytes = m.layer_bytes * m.L, offload_bytes = m.layer_bytes * m.K;
  const int full = m.L / m.pack, rest = m.L % m.pack;
  const size_t tracked = tracked_size(m.layer_bytes * m.pack) * full +
                         tracked_size(m.layer_bytes * rest) + 3 * tracked_size(m.act_bytes) +
                         tracked_size(WORKSPACE_BYTES);

  if (plan) {
    printf("plan: layers=%d width=%d batch=%d dtype=%s pack=%d model_bytes=%zu "
           "offload_bytes=%zu tracked_bytes=%zu spillway_budget=%zu\n",
           m.L, m.W, m.B, dtype, m.pack, model_bytes, offload_bytes, tracked,
           tracked - offload_bytes);
    return 0;
  }
  const char *pre = getenv("LD_PRELOAD");
  bool preloaded = pre && strstr(pre, "spillway");
  if ((mode == M_SPILLWAY || mode == M_SPILLWAY_NOPF) && !preloaded)
    fprintf(stderr, "%s: warning: mode %s without libspillway in LD_PRELOAD\n", g_prog, mode_s);

  runner r;
  memset(&r, 0, sizeof r);
  r.m = m;
  r.mode = mode;
  r.graph = graph;
  const int kmax = m.K > 0 ? m.K : 1; /* more slots than offloaded layers are useless */
  r.N = mode == M_PREFETCH ? (int)(N_ < (unsigned long long)kmax ? N_ : kmax) : 1;

  int drv = 0, rtv = 0;
  cudaDeviceProp prop;
  CK(cudaSetDevice(0));
  CK(cudaFree(0));
  CK(cudaDriverGetVersion(&drv));
  CK(cudaRuntimeGetVersion(&rtv));
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("# device: %s; driver API %d; runtime %d; preload %s\n", prop.name, drv, rtv,
         preloaded ? "spillway" : "none");

  CKB(cublasCreate(&r.hb));
  CK(cudaStreamCreate(&r.cs)); /* blocking: ordered with the legacy stream (accelerate) */
  CK(cudaStreamCreateWithFlags(&r.cp, cudaStreamNonBlocking));
  CKB(cublasSetStream(r.hb, r.cs));
  const size_t base = used_bytes();

  const double h2d = measure_h2d(r.cs);

  void *ws;
  CK(cudaMalloc(&ws, WORKSPACE_BYTES));
  CKB(cublasSetWorkspace(r.hb, ws, WORKSPACE_BYTES));

  /* The weights: the same values in every mode (k_init of (seed, layer)). */
  const bool host_held = mode == M_UVA || mode == M_PREFETCH || mode == M_ACCELERATE;
  const size_t wn = (size_t)m.W * m.W;
  const float wscale = sqrtf(3.0f / m.W); /* keeps activations near unit variance */
  r.wdev = (void **)calloc(m.L, sizeof *r.wdev);
  r.kidx = (int *)xmalloc(m.L * sizeof *r.kidx);
  r.whost = (void **)calloc(m.K ? m.K : 1, sizeof *r.whost);
  r.slot = (void **)calloc(r.N, sizeof *r.slot);
  if (!r.wdev || !r.whost || !r.slot)
    die("out of host memory (%s)", "calloc");
  void *stage = NULL;
  if (host_held && m.K > 0) {
    for (int s = 0; s < (mode == M_UVA ? 0 : r.N); s++)
      CK(cudaMalloc(&r.slot[s], m.layer_bytes));
    if (mode == M_UVA)
      CK(cudaMalloc(&stage, m.layer_bytes)); /* for initialisation only */
    else
      stage = r.slot[0];
  }
  for (int l = 0, k = 0; l < m.L; l++) {
    unsigned long long lseed = seed * 1000003ull + l;

    r.kidx[l] = host_held && is_offloaded(l, m.K, m.L) ? k++ : -1;
    if (r.kidx[l] < 0) {
      if (host_held || l % m.pack == 0) {
        int n = host_held ? 1 : (m.L - l < m.pack ? m.L - l : m.pack);
        CK(cudaMalloc(&r.wdev[l], m.layer_bytes * n));
      } else {
        r.wdev[l] = (char *)r.wdev[l - 1] + m.layer_bytes;
      }
      init_buf(m, r.wdev[l], wn, lseed, wscale, r.cs);
      continue;
    }
    void **h = &r.whost[r.kidx[l]];
    if (mode == M_ACCELERATE) {
      *h = xmalloc(m.layer_bytes); /* pageable, as accelerate's CPU weights are */
    } else {
      CK(cudaHostAlloc(h, m.layer_bytes, mode == M_UVA ? cudaHostAllocMapped : cudaHostAllocDefault));
    }
    if (mode == M_UVA)
      CK(cudaHostGetDevicePointer(&r.wdev[l], *h, 0));
    init_buf(m, stage, wn, lseed, wscale, r.cs);
    CK(cudaStreamSynchronize(r.cs));
    CK(cudaMemcpy(*h, stage, m.layer_bytes, cudaMemcpyDeviceToHost));
  }
  if (mode == M_UVA && stage)
    CK(cudaFree(stage));

  CK(cudaMalloc(&r.x0, m.act_bytes));
  CK(cudaMalloc(&r.xa, m.act_bytes));
  CK(cudaMalloc(&r.xb, m.act_bytes));
  init_buf(m, r.x0, (size_t)m.W * m.B, seed * 1000003ull + 999983ull, 1.0f, r.cs);

  if (mode == M_PREFETCH) {
    r.copied = (cudaEvent_t *)xmalloc(r.N * sizeof *r.copied);
    r.freed = (cudaEvent_t *)xmalloc(r.N * sizeof *r.freed);
    for (int s = 0; s < r.N; s++) {
      CK(cudaEventCreateWithFlags(&r.copied[s], cudaEventDisableTiming));
      CK(cudaEventCreateWithFlags(&r.freed[s], cudaEventDisableTiming));
      CK(cudaEventRecord(r.freed[s], r.cs)); /* every slot starts free */
    }
    CK(cudaEventCreateWithFlags(&r.fork, cudaEventDisableTiming));
  }
  CK_SYNC();

  /* graph: one eager step first (cuBLAS picks its kernels), then a capture. */
  cudaGraphExec_t exec = NULL;
  void *captured_out = NULL;
  if (graph) {
    cudaGraph_t g;
    run_step(r);
    CK(cudaStreamSynchronize(r.cs));
    CK(cudaStreamBeginCapture(r.cs, cudaStreamCaptureModeThreadLocal));
    captured_out = run_step(r);
    CK(cudaStreamEndCapture(r.cs, &g));
    CK(cudaGraphInstantiate(&exec, g, 0));
    CK(cudaGraphDestroy(g));
  }

  /* The timed loop: one step at a time, as a decoder runs them. */
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float *t = (float *)xmalloc(steps * sizeof *t);
  size_t peak = used_bytes();
  void *result = NULL;
  for (unsigned long long s = 0; s < warmup + steps; s++) {
    float ms;

    CK(cudaEventRecord(e0, r.cs));
    if (graph) {
      CK(cudaGraphLaunch(exec, r.cs));
      result = captured_out;
    } else {
      result = run_step(r);
    }
    CK(cudaEventRecord(e1, r.cs));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (s >= warmup)
      t[s - warmup] = ms;
    size_t u = used_bytes();
    peak = u > peak ? u : peak;
  }
  CK_SYNC();

  void *out = xmalloc(m.act_bytes);
  CK(cudaMemcpy(out, result, m.act_bytes, cudaMemcpyDeviceToHost));
  const unsigned long long h = hash_bytes(HASH_INIT, out, m.act_bytes);
  float tmin = t[0];
  for (unsigned long long i = 1; i < steps; i++)
    tmin = t[i] < tmin ? t[i] : tmin;
  const double step_us = median_f(t, (int)steps) * 1e3;

  printf("bench: mode=%s regime=%s dtype=%s layers=%d width=%d batch=%d offload_layers=%d "
         "offload_bytes=%zu model_bytes=%zu lookahead=%d steps=%llu step_us=%.1f "
         "step_us_min=%.1f tokens_s=%.1f h2d_gb_s=%.2f peak_mib=%.1f checksum=0x%016llx\n",
         mode_s, regime, dtype, m.L, m.W, m.B, m.K, offload_bytes, model_bytes,
         mode == M_PREFETCH ? r.N : 0, steps, step_us, tmin * 1e3, m.B / (step_us / 1e6), h2d,
         (double)(peak > base ? peak - base : 0) / MiB, h);

  /* Tidy up, so that a failing free shows too. */
  if (exec)
    CK(cudaGraphExecDestroy(exec));
  CKB(cublasDestroy(r.hb));
  for (int l = 0; l < m.L; l++)
    if (r.kidx[l] < 0 && (host_held || l % m.pack == 0))
      CK(cudaFree(r.wdev[l]));
  for (int k = 0; k < m.K && host_held; k++) {
    if (mode == M_ACCELERATE)
      free(r.whost[k]);
    else
      CK(cudaFreeHost(r.whost[k]));
  }
  for (int s = 0; s < r.N; s++)
    if (r.slot[s])
      CK(cudaFree(r.slot[s]));
  CK(cudaFree(r.x0));
  CK(cudaFree(r.xa));
  CK(cudaFree(r.xb));
  CK(cudaFree(ws));
  CK_SYNC();
  return 0;
}

/*
 * probe: measures, on a real GPU, the CUDA facts that docs/gpu-facts.md
 * lists as open. Output is one key=value per line; lines starting with '#'
 * are comments. Sections are selected by flags (see usage()); run-probe.sh
 * runs each in its own process so that a crash or a dead context in one
 * section (--unmap-in-flight kills it on purpose) spares the others.
 *
 * Driver-API calls go straight to libcuda (-lcuda); the runtime is the
 * shared one (-cudart shared) so that trace_preload can see what it asks
 * the driver for. cuBLAS is dlopen'ed, so a machine without it still runs
 * every other section.
 *
 * Units: GB/s is 1e9 bytes per second; times are medians unless named.
 */
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MiB (1024ull * 1024ull)

static int g_dev;       /* device ordinal; the probe uses device 0 */
static int g_sms;       /* multiprocessor count, for grid sizes */
static int g_failures;  /* CUDA calls that failed unexpectedly */

/* ---- output and error checking ------------------------------------------ */

static void kv(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void kv(const char *key, const char *fmt, ...)
{
  va_list ap;

  printf("%s=", key);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
}

static const char *cu_name(CUresult r)
{
  const char *s = NULL;

  if (cuGetErrorName(r, &s) != CUDA_SUCCESS || !s)
    return "CUDA_ERROR_UNKNOWN_CODE";
  return s;
}

/* Check a call whose failure means the measurement cannot go on. */
static bool cu_ok(CUresult r, const char *what, int line)
{
  if (r == CUDA_SUCCESS)
    return true;
  printf("# error: probe.cu:%d: %s -> %s\n", line, what, cu_name(r));
  g_failures++;
  return false;
}

static bool rt_ok(cudaError_t r, const char *what, int line)
{
  if (r == cudaSuccess)
    return true;
  printf("# error: probe.cu:%d: %s -> %s\n", line, what, cudaGetErrorName(r));
  g_failures++;
  return false;
}

#define CU(call) cu_ok((call), #call, __LINE__)
#define RT(call) rt_ok((call), #call, __LINE__)

/* ---- timing --------------------------------------------------------------- */

static double now_us(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;

  return (x > y) - (x < y);
}

static double median(double *v, int n)
{
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double gb_s(size_t bytes, double ms)
{
  return ms > 0 ? bytes / (ms * 1e6) : 0;
}

/*
 * Median GPU time, in ms, of `launch` on stream s, after `warmup` untimed
 * runs; -1 if a launch or an event call fails.
 */
template <class F>
static double median_ms(cudaStream_t s, int warmup, int reps, F launch)
{
  cudaEvent_t a = NULL, b = NULL;
  double t[64], res = -1;
  float ms;
  int i;

  if (reps > 64)
    reps = 64;
  if (!RT(cudaEventCreate(&a)) || !RT(cudaEventCreate(&b)))
    goto out;
  for (i = 0; i < warmup; i++)
    if (!launch())
      goto out;
  for (i = 0; i < reps; i++) {
    if (!RT(cudaEventRecord(a, s)) || !launch() || !RT(cudaEventRecord(b, s)) ||
        !RT(cudaEventSynchronize(b)) || !RT(cudaEventElapsedTime(&ms, a, b)))
      goto out;
    t[i] = ms;
  }
  res = median(t, reps);
out:
  if (a)
    RT(cudaEventDestroy(a));
  if (b)
    RT(cudaEventDestroy(b));
  return res;
}

/* ---- kernels ---------------------------------------------------------------- */

__global__ void k_noop(int *p)
{
  if (p && threadIdx.x == 0 && blockIdx.x == 0)
    *p = 1;
}

/* Streaming read: every byte once, 16 bytes per load. */
__global__ void k_read(const uint4 *__restrict__ p, size_t n, unsigned *out)
{
  unsigned acc = 0;

  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u)  /* almost never true; keeps the loads alive */
    *out = acc;
}

__global__ void k_write(uint4 *__restrict__ p, size_t n)
{
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = make_uint4((unsigned)i, 0, 0, 0);
}

static __device__ unsigned long long globaltimer_ns(void)
{
  unsigned long long t;

  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/*
 * Reads p[0..n) over and over, bypassing the caches (__ldcv), for budget_ns
 * of wall time, so that it is surely running when the host unmaps p.
 */
__global__ void k_spin_read(const unsigned *p, size_t n, unsigned long long budget_ns,
                            volatile int *started, unsigned *out)
{
  unsigned long long t0 = globaltimer_ns();
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) % n;
  unsigned acc = 0;

  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *started = 1;
    __threadfence_system();
  }
  while (globaltimer_ns() - t0 < budget_ns) {
    for (int k = 0; k < 64; k++) {
      acc += __ldcv(p + i);
      i += stride;
      if (i >= n)
        i -= n;
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

/*
 * The same as the PTX below, compiled by nvcc into this program: its
 * runtime handles (cudaGetKernel, cudaGetFuncBySymbol) are probed too.
 */
extern "C" __global__ void probe_axpy(float a, const float *x, float *y, unsigned long long n)
{
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;

  if (i < n)
    y[i] = a * x[i] + y[i];
}

/* probe_axpy as PTX (nvcc -ptx, ISA lowered to 7.0 so older drivers JIT it). */
static const char axpy_ptx[] =
    ".version 7.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .entry probe_axpy(\n"
    "  .param .f32 probe_axpy_param_0,\n"
    "  .param .u64 probe_axpy_param_1,\n"
    "  .param .u64 probe_axpy_param_2,\n"
    "  .param .u64 probe_axpy_param_3\n"
    ")\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .f32 %f<5>;\n"
    "  .reg .b32 %r<4>;\n"
    "  .reg .b64 %rd<12>;\n"
    "  ld.param.f32 %f1, [probe_axpy_param_0];\n"
    "  ld.param.u64 %rd2, [probe_axpy_param_1];\n"
    "  ld.param.u64 %rd3, [probe_axpy_param_2];\n"
    "  ld.param.u64 %rd4, [probe_axpy_param_3];\n"
    "  mov.u32 %r1, %ctaid.x;\n"
    "  mov.u32 %r2, %ntid.x;\n"
    "  mul.wide.u32 %rd5, %r1, %r2;\n"
    "  mov.u32 %r3, %tid.x;\n"
    "  cvt.u64.u32 %rd6, %r3;\n"
    "  add.s64 %rd1, %rd5, %rd6;\n"
    "  setp.ge.u64 %p1, %rd1, %rd4;\n"
    "  @%p1 bra $L__BB0_2;\n"
    "  cvta.to.global.u64 %rd7, %rd3;\n"
    "  cvta.to.global.u64 %rd8, %rd2;\n"
    "  shl.b64 %rd9, %rd1, 2;\n"
    "  add.s64 %rd10, %rd8, %rd9;\n"
    "  ld.global.f32 %f2, [%rd10];\n"
    "  add.s64 %rd11, %rd7, %rd9;\n"
    "  ld.global.f32 %f3, [%rd11];\n"
    "  fma.rn.f32 %f4, %f2, %f1, %f3;\n"
    "  st.global.f32 [%rd11], %f4;\n"
    "$L__BB0_2:\n"
    "  ret;\n"
    "}\n";

/* ---- setup ------------------------------------------------------------------ */

/* Create and make current the primary context; the driver API then uses it. */
static bool init_cuda(void)
{
  CUdevice d;

  if (!RT(cudaSetDevice(g_dev)) || !RT(cudaFree(0)) || !CU(cuCtxGetDevice(&d)) ||
      !CU(cuDeviceGetAttribute(&g_sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d)))
    return false;
  return true;
}

/*
 * Path of the libcuda.so.1 this process loaded: it must be the real driver.
 * (dladdr on &cuInit could name the executable's PLT entry instead.)
 */
static const char *libcuda_path(void)
{
  void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  struct link_map *lm = NULL;

  if (h && dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name)
    return lm->l_name;
  return "?";
}

/* ---- VMM helpers ------------------------------------------------------------ */

struct vmm {
  CUdeviceptr va;
  size_t size;
  CUmemGenericAllocationHandle h;
  bool reserved, created, mapped;
};

static CUmemAllocationProp vmm_prop(CUmemLocationType type, int id)
{
  CUmemAllocationProp p;

  memset(&p, 0, sizeof p);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = type;
  p.location.id = id;
  return p;
}

static CUmemAccessDesc device_rw(void)
{
  CUmemAccessDesc a;

  memset(&a, 0, sizeof a);
  a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.location.id = g_dev;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return a;
}

static void vmm_free(struct vmm *m)
{
  if (m->mapped)
    CU(cuMemUnmap(m->va, m->size));
  if (m->created)
    CU(cuMemRelease(m->h));
  if (m->reserved)
    CU(cuMemAddressFree(m->va, m->size));
  memset(m, 0, sizeof *m);
}

/*
 * Reserve, create, map and grant the device access: one handle, one range.
 * Returns the first failing call's result.
 */
static CUresult vmm_alloc(struct vmm *m, CUmemLocationType type, int id, size_t want)
{
  CUmemAllocationProp prop = vmm_prop(type, id);
  CUmemAccessDesc acc = device_rw();
  size_t g = 0;
  CUresult r;

#define CU_R(call) (r = (call), cu_ok(r, #call, __LINE__))
  memset(m, 0, sizeof *m);
  if (!CU_R(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)))
    return r;
  m->size = (want + g - 1) / g * g;
  if (!CU_R(cuMemAddressReserve(&m->va, m->size, 0, 0, 0)))
    goto fail;
  m->reserved = true;
  if (!CU_R(cuMemCreate(&m->h, m->size, &prop, 0)))
    goto fail;
  m->created = true;
  if (!CU_R(cuMemMap(m->va, m->size, 0, m->h, 0)))
    goto fail;
  m->mapped = true;
  if (!CU_R(cuMemSetAccess(m->va, m->size, &acc, 1)))
    goto fail;
  return CUDA_SUCCESS;
#undef CU_R
fail:
  vmm_free(m);
  return r;
}

/* A buffer the device can read, placed in one of three kinds of memory. */
enum placement { PL_DEVICE, PL_HOST_VMM, PL_HOST_ALLOC, N_PLACEMENTS };
static const char *const placement_name[N_PLACEMENTS] = { "device", "host_vmm", "host_alloc" };

struct buf {
  enum placement pl;
  void *ptr;   /* device-usable address */
  void *host;  /* PL_HOST_ALLOC: the host pointer */
  struct vmm vm;
};

static bool buf_alloc(struct buf *b, enum placement pl, size_t size)
{
  CUdeviceptr d;

  memset(b, 0, sizeof *b);
  b->pl = pl;
  switch (pl) {
  case PL_DEVICE:
    if (!CU(cuMemAlloc(&d, size)))
      return false;
    b->ptr = (void *)d;
    return true;
  case PL_HOST_VMM:
    if (vmm_alloc(&b->vm, CU_MEM_LOCATION_TYPE_HOST, 0, size) != CUDA_SUCCESS)
      return false;
    b->ptr = (void *)b->vm.va;
    return true;
  case PL_HOST_ALLOC:
    if (!RT(cudaHostAlloc(&b->host, size, cudaHostAllocMapped | cudaHostAllocPortable)))
      return false;
    if (!RT(cudaHostGetDevicePointer(&b->ptr, b->host, 0))) {
      RT(cudaFreeHost(b->host));
      return false;
    }
    return true;
  default:
    return false;
  }
}

static void buf_free(struct buf *b)
{
  switch (b->pl) {
  case PL_DEVICE:
    if (b->ptr)
      CU(cuMemFree((CUdeviceptr)b->ptr));
    break;
  case PL_HOST_VMM:
    vmm_free(&b->vm);
    break;
  case PL_HOST_ALLOC:
    if (b->host)
      RT(cudaFreeHost(b->host));
    break;
  default:
    break;
  }
  memset(b, 0, sizeof *b);
}

/* ---- --check and --info ----------------------------------------------------- */

/* Quick: is there a real driver with a device? Exit 0 if so. */
static int sec_check(void)
{
  CUresult r = cuInit(0);
  int n = 0;

  printf("# libcuda: %s\n", libcuda_path());
  if (strstr(libcuda_path(), "simgpu")) {
    printf("# check: this libcuda is simgpu, not a real driver\n");
    return 1;
  }
  if (r != CUDA_SUCCESS) {
    printf("# check: cuInit -> %s\n", cu_name(r));
    return 1;
  }
  r = cuDeviceGetCount(&n);
  if (r != CUDA_SUCCESS || n < 1) {
    printf("# check: cuDeviceGetCount -> %s, %d devices\n", cu_name(r), n);
    return 1;
  }
  return 0;
}

static int sec_info(void)
{
  char name[256] = "?", date[64];
  time_t t = time(NULL);
  int drv = 0, rt = 0, major = 0, minor = 0, v;
  size_t mem = 0;
  CUdevice d;

  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
  kv("probe.date", "%s", date);
  kv("libcuda.path", "%s", libcuda_path());
  if (!CU(cuDriverGetVersion(&drv)) || !RT(cudaRuntimeGetVersion(&rt)))
    return 1;
  kv("driver.cuda_version", "%d", drv);
  kv("runtime.cuda_version", "%d", rt);
  if (!init_cuda() || !CU(cuCtxGetDevice(&d)) || !CU(cuDeviceGetName(name, sizeof name, d)) ||
      !CU(cuDeviceTotalMem(&mem, d)) ||
      !CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d)) ||
      !CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d)))
    return 1;
  kv("device.name", "%s", name);
  kv("device.compute_capability", "%d.%d", major, minor);
  kv("device.sms", "%d", g_sms);
  kv("device.total_mem_bytes", "%zu", mem);
  if (CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, d)))
    kv("device.unified_addressing", "%d", v);
  if (CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, d)))
    kv("device.pageable_memory_access", "%d", v);
  if (CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, d)))
    kv("device.async_engines", "%d", v);
  return 0;
}

/* ---- --params: does cuFuncGetParamInfo take a CUkernel? --------------------- */

/*
 * Reports what get(h, 0, ...) returns under `key`, and when it succeeds the
 * parameter count (the first index that fails) and the layout.
 */
template <class H>
static void report_params(const char *key, CUresult (*get)(H, size_t, size_t *, size_t *), H h)
{
  char k[160], layout[512] = "";
  size_t off, size, i, len = 0;
  CUresult r = get(h, 0, &off, &size);

  snprintf(k, sizeof k, "%s.result", key);
  kv(k, "%s", cu_name(r));
  if (r != CUDA_SUCCESS)
    return;
  for (i = 0; i < 64; i++) {
    r = get(h, i, &off, &size);
    if (r != CUDA_SUCCESS)
      break;
    len += snprintf(layout + len, sizeof layout - len, "%s%zu:%zu", i ? "," : "", off, size);
    if (len >= sizeof layout)
      break;
  }
  snprintf(k, sizeof k, "%s.count", key);
  kv(k, "%zu", i);
  snprintf(k, sizeof k, "%s.end_result", key);
  kv(k, "%s", cu_name(r));
  snprintf(k, sizeof k, "%s.layout", key);
  kv(k, "%s", layout);
}

/* Launch probe_axpy through handle f (y = 2*x + y on 256 floats) and check it. */
static const char *launch_axpy(CUfunction f, CUdeviceptr x, CUdeviceptr y)
{
  static char res[128];
  float a = 2, hx[256], hy[256];
  unsigned long long n = 256;
  void *args[] = { &a, &x, &y, &n };
  CUresult r;
  int i;

  for (i = 0; i < 256; i++) {
    hx[i] = (float)i;
    hy[i] = 1;
  }
  if (!CU(cuMemcpyHtoD(x, hx, sizeof hx)) || !CU(cuMemcpyHtoD(y, hy, sizeof hy)))
    return "setup_failed";
  r = cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
  if (r != CUDA_SUCCESS)
    return cu_name(r);
  r = cuCtxSynchronize();
  if (r != CUDA_SUCCESS)
    return cu_name(r);
  if (!CU(cuMemcpyDtoH(hy, y, sizeof hy)))
    return "readback_failed";
  for (i = 0; i < 256; i++)
    if (hy[i] != 2.0f * i + 1) {
      snprintf(res, sizeof res, "CUDA_SUCCESS,wrong_result_at_%d", i);
      return res;
    }
  return "CUDA_SUCCESS,verified";
}

static int sec_params(void)
{
  CUmodule mod = NULL;
  CUlibrary lib = NULL;
  CUfunction fn = NULL, kfn = NULL;
  CUkernel kern = NULL;
  cudaKernel_t rt_kern = NULL;
  cudaFunction_t rt_fn = NULL;
  CUdeviceptr x = 0, y = 0;
  CUresult r;
  int v;

  if (!init_cuda())
    return 1;
  if (!CU(cuModuleLoadData(&mod, axpy_ptx)) || !CU(cuModuleGetFunction(&fn, mod, "probe_axpy")) ||
      !CU(cuLibraryLoadData(&lib, axpy_ptx, NULL, NULL, 0, NULL, NULL, 0)) ||
      !CU(cuLibraryGetKernel(&kern, lib, "probe_axpy")) || !CU(cuKernelGetFunction(&kfn, kern)) ||
      !CU(cuMemAlloc(&x, 1024)) || !CU(cuMemAlloc(&y, 1024)))
    goto out;

  /* Known-good handles first, so their answers are in even if a later call crashes. */
  report_params("params.func_info.module_function", cuFuncGetParamInfo, fn);
  report_params("params.func_info.kernel_get_function", cuFuncGetParamInfo, kfn);
  report_params("params.kernel_info.library_kernel", cuKernelGetParamInfo, kern);
  kv("params.launch.module_function", "%s", launch_axpy(fn, x, y));
  kv("params.launch.library_kernel_as_function", "%s", launch_axpy((CUfunction)kern, x, y));

  /* The open question: a CUkernel handed to the CUfunction API. */
  report_params("params.func_info.library_kernel", cuFuncGetParamInfo, (CUfunction)kern);
  r = cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUfunction)kern);
  kv("params.func_get_attribute.library_kernel", "%s", cu_name(r));

  /* The handles the runtime itself holds for a kernel nvcc compiled. */
  if (RT(cudaGetKernel(&rt_kern, (const void *)probe_axpy)))
    report_params("params.func_info.runtime_kernel", cuFuncGetParamInfo, (CUfunction)rt_kern);
  if (RT(cudaGetFuncBySymbol(&rt_fn, (const void *)probe_axpy)))
    report_params("params.func_info.runtime_function", cuFuncGetParamInfo, (CUfunction)rt_fn);
out:
  if (x)
    CU(cuMemFree(x));
  if (y)
    CU(cuMemFree(y));
  if (lib)
    CU(cuLibraryUnload(lib));
  if (mod)
    CU(cuModuleUnload(mod));
  return 0;
}

/* ---- --granularity ---------------------------------------------------------- */

static void report_granularity(const char *loc, CUmemLocationType type, int id)
{
  CUmemAllocationProp prop = vmm_prop(type, id);
  char k[128];
  size_t g;
  CUresult r;

  r = cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  snprintf(k, sizeof k, "vmm.granularity.%s.minimum", loc);
  if (r == CUDA_SUCCESS)
    kv(k, "%zu", g);
  else
    kv(k, "%s", cu_name(r));
  r = cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  snprintf(k, sizeof k, "vmm.granularity.%s.recommended", loc);
  if (r == CUDA_SUCCESS)
    kv(k, "%zu", g);
  else
    kv(k, "%s", cu_name(r));
}

static void report_attr(const char *key, CUdevice_attribute attr, CUdevice d)
{
  int v = 0;
  CUresult r = cuDeviceGetAttribute(&v, attr, d);

  if (r == CUDA_SUCCESS)
    kv(key, "%d", v);
  else
    kv(key, "%s", cu_name(r));
}

/*
 * Maps host-VMM memory for the device, fills it with a device memset and
 * reads it back with a copy: does the device really reach it?
 */
static void report_host_vmm_use(const char *loc, CUmemLocationType type)
{
  struct vmm m;
  unsigned word = 0;
  CUdeviceptr base = 0;
  size_t size = 0;
  CUresult r = vmm_alloc(&m, type, 0, 1);
  char k[128];

  snprintf(k, sizeof k, "vmm.%s.create_map_access", loc);
  kv(k, "%s", cu_name(r));
  if (r != CUDA_SUCCESS)
    return;
  snprintf(k, sizeof k, "vmm.%s.device_memset_readback", loc);
  if (CU(cuMemsetD32(m.va, 0xC0FFEE, m.size / 4)) && CU(cuCtxSynchronize()) &&
      CU(cuMemcpyDtoH(&word, m.va + m.size - 4, 4)))
    kv(k, "%s", word == 0xC0FFEE ? "ok" : "wrong_value");
  else
    kv(k, "failed");
  /* Peers saw base 0 here for host-backed VMM on some drivers. */
  r = cuMemGetAddressRange(&base, &size, m.va + 4096);
  snprintf(k, sizeof k, "vmm.%s.get_address_range", loc);
  if (r != CUDA_SUCCESS)
    kv(k, "%s", cu_name(r));
  else
    kv(k, "%s", base == m.va && size == m.size ? "exact" : base == 0 ? "base_zero" : "other");
  vmm_free(&m);
}

static int sec_granularity(void)
{
  CUdevice d;

  if (!init_cuda() || !CU(cuCtxGetDevice(&d)))
    return 1;
  report_attr("attr.102.virtual_memory_management_supported",
              CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, d);
  report_attr("attr.141.host_numa_virtual_memory_management_supported",
              CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, d);
  report_attr("attr.145.host_virtual_memory_management_supported",
              CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, d);
  report_granularity("device", CU_MEM_LOCATION_TYPE_DEVICE, g_dev);
  report_granularity("host", CU_MEM_LOCATION_TYPE_HOST, 0);
  report_granularity("host_numa0", CU_MEM_LOCATION_TYPE_HOST_NUMA, 0);
  report_host_vmm_use("host", CU_MEM_LOCATION_TYPE_HOST);
  return 0;
}

/* Separate section: HOST_NUMA cuMemCreate crashed some drivers (r560-r575). */
static int sec_numa_create(void)
{
  if (!init_cuda())
    return 1;
  report_host_vmm_use("host_numa0", CU_MEM_LOCATION_TYPE_HOST_NUMA);
  return 0;
}

/* ---- --vmm-cost ------------------------------------------------------------- */

enum { OP_RESERVE, OP_CREATE, OP_MAP, OP_SET_ACCESS, OP_UNMAP, OP_RELEASE, OP_FREE, N_OPS };
static const char *const op_name[N_OPS] = {
  "address_reserve", "create", "map", "set_access", "unmap", "release", "address_free",
};

/*
 * Host time of each VMM call on one handle of `want` bytes (rounded up to
 * the granularity), median of `iters` cycles.
 */
static void vmm_cost(const char *loc, CUmemLocationType type, int id, size_t want, int iters)
{
  CUmemAllocationProp prop = vmm_prop(type, id);
  CUmemAccessDesc acc = device_rw();
  double *t[N_OPS], t0;
  size_t g = 0, size;
  char k[128];
  int i, op, n = 0;

  if (!CU(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)))
    return;
  size = (want + g - 1) / g * g;
  snprintf(k, sizeof k, "vmm.cost_us.%s.size_bytes", loc);
  kv(k, "%zu", size);
  for (op = 0; op < N_OPS; op++)
    t[op] = (double *)calloc(iters, sizeof(double));
  for (i = -2; i < iters; i++) {  /* two untimed cycles first */
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    double dt[N_OPS];

#define TIMED(o, call)                 \
  t0 = now_us();                       \
  if (!CU(call))                       \
    goto out;                          \
  dt[o] = now_us() - t0;
    TIMED(OP_RESERVE, cuMemAddressReserve(&va, size, 0, 0, 0));
    TIMED(OP_CREATE, cuMemCreate(&h, size, &prop, 0));
    TIMED(OP_MAP, cuMemMap(va, size, 0, h, 0));
    TIMED(OP_SET_ACCESS, cuMemSetAccess(va, size, &acc, 1));
    TIMED(OP_UNMAP, cuMemUnmap(va, size));
    TIMED(OP_RELEASE, cuMemRelease(h));
    TIMED(OP_FREE, cuMemAddressFree(va, size));
#undef TIMED
    if (i >= 0) {
      for (op = 0; op < N_OPS; op++)
        t[op][n] = dt[op];
      n++;
    }
  }
out:
  snprintf(k, sizeof k, "vmm.cost_us.%s.samples", loc);
  kv(k, "%d", n);
  for (op = 0; op < N_OPS && n > 0; op++) {
    snprintf(k, sizeof k, "vmm.cost_us.%s.%s", loc, op_name[op]);
    kv(k, "%.1f", median(t[op], n));
  }
  for (op = 0; op < N_OPS; op++)
    free(t[op]);
}

static int sec_vmm_cost(int iters)
{
  if (!init_cuda())
    return 1;
  printf("# host time per call, 2 MiB handle, median of %d cycles\n", iters);
  vmm_cost("device", CU_MEM_LOCATION_TYPE_DEVICE, g_dev, 2 * MiB, iters);
  vmm_cost("host", CU_MEM_LOCATION_TYPE_HOST, 0, 2 * MiB, iters);
  return 0;
}

/*
 * Whether a VMM call's cost grows with the mapping's size: the same cycle
 * on one handle of 8, 32 and 128 MiB (2 MiB is --vmm-cost). simgpu charges
 * each call a fixed cost, whatever the size, and spillway's chunks are up
 * to 32 MiB.
 */
static int sec_vmm_sizes(int iters)
{
  static const size_t mib[] = { 8, 32, 128 };
  char loc[32];

  if (!init_cuda())
    return 1;
  printf("# host time per call by handle size, median of %d cycles\n", iters);
  for (size_t i = 0; i < sizeof mib / sizeof mib[0]; i++) {
    snprintf(loc, sizeof loc, "device_%zum", mib[i]);
    vmm_cost(loc, CU_MEM_LOCATION_TYPE_DEVICE, g_dev, mib[i] * MiB, iters);
    snprintf(loc, sizeof loc, "host_%zum", mib[i]);
    vmm_cost(loc, CU_MEM_LOCATION_TYPE_HOST, 0, mib[i] * MiB, iters);
  }
  return 0;
}

/* ---- a kernel surely running ------------------------------------------------ */

/* k_spin_read over a range, on a stream of its own. */
struct spin {
  volatile int *started;  /* mapped host flag the kernel sets */
  unsigned *out;
  cudaStream_t s;
  double t_started;       /* when the host saw it start, now_us() */
};

/*
 * Fills [va, va + bytes) with ones, then starts k_spin_read over it for
 * budget_ns and returns once the kernel runs. False (said) when a call
 * failed or it did not start within 10 s. spin_free releases what it made,
 * whatever the result.
 */
static bool spin_start(struct spin *k, CUdeviceptr va, size_t bytes, unsigned long long budget_ns)
{
  double t_launch;

  memset(k, 0, sizeof *k);
  if (!CU(cuMemsetD32(va, 1, bytes / 4)) || !CU(cuCtxSynchronize()) ||
      !RT(cudaHostAlloc((void **)&k->started, sizeof(int), cudaHostAllocMapped)) ||
      !RT(cudaMalloc(&k->out, (size_t)g_sms * 2 * 256 * sizeof(unsigned))) ||
      !RT(cudaStreamCreateWithFlags(&k->s, cudaStreamNonBlocking)))
    return false;
  *k->started = 0;
  t_launch = now_us();
  k_spin_read<<<g_sms * 2, 256, 0, k->s>>>((const unsigned *)va, bytes / 4, budget_ns,
                                            k->started, k->out);
  if (!RT(cudaGetLastError()))
    return false;
  while (!*k->started && now_us() - t_launch < 10e6)
    ;
  k->t_started = now_us();
  if (!*k->started) {
    printf("# the kernel did not start within 10 s\n");
    return false;
  }
  return true;
}

static void spin_free(struct spin *k)
{
  if (k->s)
    RT(cudaStreamDestroy(k->s));
  if (k->out)
    RT(cudaFree(k->out));
  if (k->started)
    RT(cudaFreeHost((void *)k->started));
  memset(k, 0, sizeof *k);
}

/* ---- --vmm-batch: one call over several mappings; calls beside a kernel ----- */

#define BATCH_HANDLES 8

/* A reservation of BATCH_HANDLES adjacent handles of one granule each, as
 * spillway cuts an allocation into chunks. */
struct batch {
  CUdeviceptr va;
  size_t g;  /* granule: each handle's size */
  CUmemGenericAllocationHandle h[BATCH_HANDLES];
  int nh;
};

static void batch_free(struct batch *b)
{
  for (int i = 0; i < b->nh; i++)
    CU(cuMemRelease(b->h[i]));
  if (b->va)
    CU(cuMemAddressFree(b->va, b->g * BATCH_HANDLES));
  memset(b, 0, sizeof *b);
}

static bool batch_make(struct batch *b, CUmemLocationType type, int id)
{
  CUmemAllocationProp prop = vmm_prop(type, id);

  memset(b, 0, sizeof *b);
  if (!CU(cuMemGetAllocationGranularity(&b->g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)) ||
      !CU(cuMemAddressReserve(&b->va, b->g * BATCH_HANDLES, 0, 0, 0)))
    return false;
  for (; b->nh < BATCH_HANDLES; b->nh++)
    if (!CU(cuMemCreate(&b->h[b->nh], b->g, &prop, 0))) {
      batch_free(b);
      return false;
    }
  return true;
}

/* Maps every handle at its place; on failure none stays mapped. */
static bool batch_map(const struct batch *b)
{
  for (int i = 0; i < BATCH_HANDLES; i++)
    if (!CU(cuMemMap(b->va + i * b->g, b->g, 0, b->h[i], 0))) {
      while (i-- > 0)
        CU(cuMemUnmap(b->va + i * b->g, b->g));
      return false;
    }
  return true;
}

/* Grants the device access to each mapping by itself. */
static bool batch_grant_each(const struct batch *b, const CUmemAccessDesc *acc)
{
  for (int i = 0; i < BATCH_HANDLES; i++)
    if (!CU(cuMemSetAccess(b->va + i * b->g, b->g, acc, 1)))
      return false;
  return true;
}

/* Unmaps each mapping by itself; the time taken, in µs. */
static double batch_unmap_each(const struct batch *b)
{
  double t0 = now_us();

  for (int i = 0; i < BATCH_HANDLES; i++)
    CU(cuMemUnmap(b->va + i * b->g, b->g));
  return now_us() - t0;
}

/*
 * Whether cuMemSetAccess and cuMemUnmap take a range of several mappings,
 * and what one call costs against one per mapping (spillway calls
 * cuMemSetAccess once per chunk it moves; PyTorch's expandable segments
 * call it once over several handles). Medians of `reps` cycles, µs.
 */
static void vmm_batch(const char *loc, CUmemLocationType type, int id, int reps)
{
  CUmemAccessDesc acc = device_rw();
  struct batch b;
  double *each = (double *)calloc(reps, sizeof(double));
  double *range = (double *)calloc(reps, sizeof(double));
  double *un_each = (double *)calloc(reps, sizeof(double));
  double *un_range = (double *)calloc(reps, sizeof(double));
  CUresult set_r = CUDA_SUCCESS, unmap_r = CUDA_SUCCESS;
  char k[128];
  int n = 0;

  if (!each || !range || !un_each || !un_range || !batch_make(&b, type, id))
    goto out;
  snprintf(k, sizeof k, "vmm_batch.%s.handles", loc);
  kv(k, "%d", BATCH_HANDLES);
  snprintf(k, sizeof k, "vmm_batch.%s.handle_bytes", loc);
  kv(k, "%zu", b.g);
  for (int i = -2; i < reps; i++) {  /* two untimed cycles first */
    double t0, dt_each, dt_range, dt_un_each, dt_un_range = 0;

    if (!batch_map(&b))
      break;
    t0 = now_us();
    if (!batch_grant_each(&b, &acc)) {
      batch_unmap_each(&b);
      break;
    }
    dt_each = now_us() - t0;
    dt_un_each = batch_unmap_each(&b);
    if (!batch_map(&b))
      break;
    t0 = now_us();
    set_r = cuMemSetAccess(b.va, b.g * BATCH_HANDLES, &acc, 1);
    dt_range = now_us() - t0;
    t0 = now_us();
    unmap_r = cuMemUnmap(b.va, b.g * BATCH_HANDLES);
    dt_un_range = now_us() - t0;
    if (unmap_r != CUDA_SUCCESS)
      batch_unmap_each(&b);
    if (set_r != CUDA_SUCCESS)
      break;
    if (i >= 0) {
      each[n] = dt_each;
      range[n] = dt_range;
      un_each[n] = dt_un_each;
      un_range[n] = dt_un_range;
      n++;
    }
  }
  snprintf(k, sizeof k, "vmm_batch.%s.set_access_range_result", loc);
  kv(k, "%s", cu_name(set_r));
  snprintf(k, sizeof k, "vmm_batch.%s.unmap_range_result", loc);
  kv(k, "%s", cu_name(unmap_r));
  snprintf(k, sizeof k, "vmm_batch.%s.samples", loc);
  kv(k, "%d", n);
  if (n > 0) {
    snprintf(k, sizeof k, "vmm_batch.%s.set_access_each_us", loc);
    kv(k, "%.1f", median(each, n));
    snprintf(k, sizeof k, "vmm_batch.%s.set_access_range_us", loc);
    kv(k, "%.1f", median(range, n));
    snprintf(k, sizeof k, "vmm_batch.%s.unmap_each_us", loc);
    kv(k, "%.1f", median(un_each, n));
    snprintf(k, sizeof k, "vmm_batch.%s.unmap_range_us", loc);
    kv(k, "%.1f", median(un_range, n));
  }
  batch_free(&b);
out:
  free(each);
  free(range);
  free(un_each);
  free(un_range);
}

/*
 * Whether cuMemMap, cuMemSetAccess and cuMemUnmap of a range no kernel
 * uses wait for a kernel running on another stream (simgpu takes
 * cuMemSetAccess to wait for all queued device work, and each of
 * spillway's moves makes two): each call's time while a kernel reads other
 * memory for `budget_ms`.
 */
static void vmm_beside_kernel(unsigned budget_ms)
{
  CUmemAccessDesc acc = device_rw();
  struct batch b;
  struct vmm busy;
  struct spin k;
  double t0, t_map, t_set, t_unmap;
  CUresult r_map, r_set, r_unmap;

  if (!batch_make(&b, CU_MEM_LOCATION_TYPE_DEVICE, g_dev))
    return;
  if (vmm_alloc(&busy, CU_MEM_LOCATION_TYPE_DEVICE, g_dev, 64 * MiB) != CUDA_SUCCESS) {
    batch_free(&b);
    return;
  }
  kv("vmm_batch.beside_kernel.kernel_ms", "%u", budget_ms);
  if (!spin_start(&k, busy.va, busy.size, budget_ms * 1000000ull))
    goto out;
  t0 = now_us();
  r_map = cuMemMap(b.va, b.g, 0, b.h[0], 0);
  t_map = now_us() - t0;
  t0 = now_us();
  r_set = r_map == CUDA_SUCCESS ? cuMemSetAccess(b.va, b.g, &acc, 1) : r_map;
  t_set = now_us() - t0;
  t0 = now_us();
  r_unmap = r_map == CUDA_SUCCESS ? cuMemUnmap(b.va, b.g) : r_map;
  t_unmap = now_us() - t0;
  kv("vmm_batch.beside_kernel.stream_query_after", "%s", cu_name(cuStreamQuery(k.s)));
  kv("vmm_batch.beside_kernel.map_result", "%s", cu_name(r_map));
  kv("vmm_batch.beside_kernel.map_us", "%.1f", t_map);
  kv("vmm_batch.beside_kernel.set_access_result", "%s", cu_name(r_set));
  kv("vmm_batch.beside_kernel.set_access_us", "%.1f", t_set);
  kv("vmm_batch.beside_kernel.unmap_result", "%s", cu_name(r_unmap));
  kv("vmm_batch.beside_kernel.unmap_us", "%.1f", t_unmap);
  /* A call waited for the kernel if the three together outlasted most of it. */
  kv("vmm_batch.beside_kernel.waited_for_kernel", "%s",
     (now_us() - k.t_started) / 1e3 >= budget_ms * 0.8 ? "yes" : "no");
  RT(cudaStreamSynchronize(k.s));
out:
  spin_free(&k);
  vmm_free(&busy);
  batch_free(&b);
}

static int sec_vmm_batch(int reps)
{
  if (!init_cuda())
    return 1;
  printf("# %d adjacent handles of one granule: one call over them all against one each,"
         " medians of %d cycles\n", BATCH_HANDLES, reps);
  vmm_batch("device", CU_MEM_LOCATION_TYPE_DEVICE, g_dev, reps);
  vmm_batch("host", CU_MEM_LOCATION_TYPE_HOST, 0, reps);
  vmm_beside_kernel(500);
  return 0;
}

/* ---- --bandwidth ------------------------------------------------------------ */

static void report_copy(const char *key, size_t bytes, double ms)
{
  if (ms < 0)
    kv(key, "failed");
  else
    kv(key, "%.1f", gb_s(bytes, ms));
}

/* DMA from and to pinned memory, one direction at a time and both at once. */
static void copy_bandwidth(size_t size, int reps)
{
  CUdeviceptr d1 = 0, d2 = 0;
  void *h1 = NULL, *h2 = NULL, *pageable = NULL;
  cudaStream_t s1 = NULL, s2 = NULL;
  cudaEvent_t ev[4] = { NULL, NULL, NULL, NULL };
  double up[64], down[64], t0;
  float ms;
  int i, n = 0;

  if (!CU(cuMemAlloc(&d1, size)) || !CU(cuMemAlloc(&d2, size)) ||
      !CU(cuMemAllocHost(&h1, size)) || !CU(cuMemAllocHost(&h2, size)) ||
      !RT(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking)) ||
      !RT(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking)))
    goto out;
  memset(h1, 1, size);
  memset(h2, 2, size);
  report_copy("bw.dma.h2d_pinned_gb_s", size, median_ms(s1, 1, reps, [&] {
                return CU(cuMemcpyHtoDAsync(d1, h1, size, s1));
              }));
  report_copy("bw.dma.d2h_pinned_gb_s", size, median_ms(s1, 1, reps, [&] {
                return CU(cuMemcpyDtoHAsync(h1, d1, size, s1));
              }));

  /* Both directions at once, on two streams, each timed by its own events. */
  for (i = 0; i < 4; i++)
    if (!RT(cudaEventCreate(&ev[i])))
      goto out;
  for (i = -1; i < reps && i < 64; i++) {
    if (!RT(cudaEventRecord(ev[0], s1)) || !RT(cudaEventRecord(ev[2], s2)) ||
        !CU(cuMemcpyHtoDAsync(d1, h1, size, s1)) || !CU(cuMemcpyDtoHAsync(h2, d2, size, s2)) ||
        !RT(cudaEventRecord(ev[1], s1)) || !RT(cudaEventRecord(ev[3], s2)) ||
        !RT(cudaEventSynchronize(ev[1])) || !RT(cudaEventSynchronize(ev[3])))
      goto out;
    if (i < 0)
      continue;
    if (!RT(cudaEventElapsedTime(&ms, ev[0], ev[1])))
      goto out;
    up[n] = ms;
    if (!RT(cudaEventElapsedTime(&ms, ev[2], ev[3])))
      goto out;
    down[n++] = ms;
  }
  report_copy("bw.dma.bidir_h2d_gb_s", size, median(up, n));
  report_copy("bw.dma.bidir_d2h_gb_s", size, median(down, n));

  /* One pageable copy, for scale: expected an order of magnitude slower. */
  pageable = malloc(size);
  if (pageable) {
    memset(pageable, 3, size);
    t0 = now_us();
    if (CU(cuMemcpyHtoD(d1, pageable, size)))
      report_copy("bw.dma.h2d_pageable_gb_s", size, (now_us() - t0) / 1e3);
  }
out:
  free(pageable);
  for (i = 0; i < 4; i++)
    if (ev[i])
      RT(cudaEventDestroy(ev[i]));
  if (s1)
    RT(cudaStreamDestroy(s1));
  if (s2)
    RT(cudaStreamDestroy(s2));
  if (h1)
    CU(cuMemFreeHost(h1));
  if (h2)
    CU(cuMemFreeHost(h2));
  if (d1)
    CU(cuMemFree(d1));
  if (d2)
    CU(cuMemFree(d2));
}

/* A streaming kernel reading and writing each placement (zero-copy for host). */
static void kernel_bandwidth(size_t size, int reps)
{
  unsigned *sink = NULL;
  char k[128];
  int blocks = g_sms * 8, threads = 256;
  size_t n = size / sizeof(uint4);

  if (!RT(cudaMalloc(&sink, sizeof *sink)))
    return;
  for (int pl = 0; pl < N_PLACEMENTS; pl++) {
    struct buf b;
    double ms;

    if (!buf_alloc(&b, (enum placement)pl, size)) {
      snprintf(k, sizeof k, "bw.kernel.%s_alloc", placement_name[pl]);
      kv(k, "failed");
      continue;
    }
    ms = median_ms(NULL, 1, reps, [&] {
      k_write<<<blocks, threads>>>((uint4 *)b.ptr, n);
      return RT(cudaGetLastError());
    });
    snprintf(k, sizeof k, "bw.kernel_write.%s_gb_s", placement_name[pl]);
    report_copy(k, size, ms);
    ms = median_ms(NULL, 1, reps, [&] {
      k_read<<<blocks, threads>>>((const uint4 *)b.ptr, n, sink);
      return RT(cudaGetLastError());
    });
    snprintf(k, sizeof k, "bw.kernel_read.%s_gb_s", placement_name[pl]);
    report_copy(k, size, ms);
    buf_free(&b);
  }
  RT(cudaFree(sink));
}

/*
 * Does copy-engine DMA share the link with a kernel's zero-copy reads? A
 * 256 MiB pinned H2D copy on one stream and a streaming read of mapped host
 * memory on another, started together, each timed by its own events: if
 * both keep their solo rate, the link has room for both; if their sum stays
 * near one of them, they share it.
 */
static void shared_link(size_t size, int reps)
{
  CUdeviceptr d = 0;
  void *h = NULL;
  unsigned *sink = NULL;
  struct buf zc;
  cudaStream_t s1 = NULL, s2 = NULL;
  cudaEvent_t ev[4] = { NULL, NULL, NULL, NULL };
  double dma[64], zero[64];
  float ms;
  int i, n = 0, blocks = g_sms * 8;

  memset(&zc, 0, sizeof zc);
  if (!CU(cuMemAlloc(&d, size)) || !CU(cuMemAllocHost(&h, size)) ||
      !RT(cudaMalloc(&sink, sizeof *sink)) || !buf_alloc(&zc, PL_HOST_ALLOC, size) ||
      !RT(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking)) ||
      !RT(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking)))
    goto out;
  memset(h, 1, size);
  for (i = 0; i < 4; i++)
    if (!RT(cudaEventCreate(&ev[i])))
      goto out;
  for (i = -1; i < reps && i < 64; i++) {
    if (!RT(cudaEventRecord(ev[0], s1)) || !RT(cudaEventRecord(ev[2], s2)) ||
        !CU(cuMemcpyHtoDAsync(d, h, size, s1)))
      goto out;
    k_read<<<blocks, 256, 0, s2>>>((const uint4 *)zc.ptr, size / sizeof(uint4), sink);
    if (!RT(cudaGetLastError()) || !RT(cudaEventRecord(ev[1], s1)) ||
        !RT(cudaEventRecord(ev[3], s2)) || !RT(cudaEventSynchronize(ev[1])) ||
        !RT(cudaEventSynchronize(ev[3])))
      goto out;
    if (i < 0)
      continue;
    if (!RT(cudaEventElapsedTime(&ms, ev[0], ev[1])))
      goto out;
    dma[n] = ms;
    if (!RT(cudaEventElapsedTime(&ms, ev[2], ev[3])))
      goto out;
    zero[n++] = ms;
  }
  report_copy("bw.shared.dma_h2d_gb_s", size, median(dma, n));
  report_copy("bw.shared.kernel_read_host_alloc_gb_s", size, median(zero, n));
out:
  for (i = 0; i < 4; i++)
    if (ev[i])
      RT(cudaEventDestroy(ev[i]));
  if (s1)
    RT(cudaStreamDestroy(s1));
  if (s2)
    RT(cudaStreamDestroy(s2));
  buf_free(&zc);
  if (sink)
    RT(cudaFree(sink));
  if (h)
    CU(cuMemFreeHost(h));
  if (d)
    CU(cuMemFree(d));
}

static int sec_bandwidth(void)
{
  if (!init_cuda())
    return 1;
  printf("# 256 MiB per transfer, median of 10; GB = 1e9 bytes\n");
  copy_bandwidth(256 * MiB, 10);
  kernel_bandwidth(256 * MiB, 10);
  shared_link(256 * MiB, 10);
  return 0;
}

/*
 * What the driver says of a cuMemAlloc whose size no page divides: the
 * range's size (asked for, or rounded up), and whether a pointer into the
 * rounding belongs to the allocation. spillway and simgpu answer "asked
 * for" and CUDA_ERROR_NOT_FOUND.
 */
static int sec_alloc_range(void)
{
  const size_t want = 3 * MiB + 100;
  CUdeviceptr d = 0, base = 0;
  size_t size = 0;
  unsigned long long range_size = 0;
  CUresult r;

  if (!init_cuda() || !CU(cuMemAlloc(&d, want)))
    return 1;
  kv("alloc_range.asked", "%zu", want);
  r = cuMemGetAddressRange(&base, &size, d);
  kv("alloc_range.at_base.result", "%s", cu_name(r));
  kv("alloc_range.at_base.size", "%zu", size);
  r = cuPointerGetAttribute(&range_size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d);
  kv("alloc_range.at_base.attr_range_size", "%s %llu", cu_name(r), range_size);
  base = 0;
  size = 0;
  r = cuMemGetAddressRange(&base, &size, d + want);
  kv("alloc_range.at_end.result", "%s", cu_name(r));
  kv("alloc_range.at_end.base_is_alloc", "%d", base == d);
  kv("alloc_range.at_end.size", "%zu", size);
  CU(cuMemFree(d));
  return 0;
}

/* ---- --gemm: the rate cuBLAS gets from a host-backed weight ----------------- */

struct blas {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasGetStatusName) status_name;
  decltype(&cublasSgemv_v2) sgemv;
  decltype(&cublasSgemm_v2) sgemm;
  /* cublasGemmEx is overloaded in C++: name the C one's type. */
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void *, const void *, cudaDataType, int, const void *,
                            cudaDataType, int, const void *, void *, cudaDataType, int,
                            cublasComputeType_t, cublasGemmAlgo_t);
};

static bool blas_load(struct blas *b)
{
  void *lib = dlopen("libcublas.so.13", RTLD_NOW);

  if (!lib)
    lib = dlopen("libcublas.so", RTLD_NOW);
  if (!lib) {
    printf("# cuBLAS: %s\n", dlerror());
    return false;
  }
#define LOAD(field, sym)                                        \
  if (!(*(void **)&b->field = dlsym(lib, #sym))) {              \
    printf("# cuBLAS: no %s\n", #sym);                          \
    return false;                                               \
  }
  LOAD(create, cublasCreate_v2);
  LOAD(destroy, cublasDestroy_v2);
  LOAD(status_name, cublasGetStatusName);
  LOAD(sgemv, cublasSgemv_v2);
  LOAD(sgemm, cublasSgemm_v2);
  LOAD(gemm_ex, cublasGemmEx);
#undef LOAD
  return true;
}

static const struct blas *g_blas;

static bool blas_ok(cublasStatus_t s, const char *what, int line)
{
  if (s == CUBLAS_STATUS_SUCCESS)
    return true;
  printf("# error: probe.cu:%d: %s -> %s\n", line, what, g_blas->status_name(s));
  g_failures++;
  return false;
}
#define BLAS(call) blas_ok((call), #call, __LINE__)

/* What a GEMM section made: its handle and its two activation buffers. */
static void blas_release(const struct blas *b, cublasHandle_t h, void *x, void *y)
{
  if (h)
    BLAS(b->destroy(h));
  if (x)
    RT(cudaFree(x));
  if (y)
    RT(cudaFree(y));
}

/*
 * W is m x k, stored as PyTorch stores a Linear weight (row-major [out, in],
 * i.e. column-major k x m): y = W x is op T. Sizes: m = k = 8192, batch 16.
 */
static int sec_gemm(void)
{
  enum { M = 8192, K = 8192, BATCH = 16, REPS = 5 };
  struct blas b;
  cublasHandle_t h = NULL;
  float one = 1, zero = 0, *x = NULL, *y = NULL;
  char k[128];

  if (!init_cuda())
    return 1;
  if (!blas_load(&b)) {
    kv("gemm.cublas", "unavailable");
    return 0;
  }
  g_blas = &b;
  if (!BLAS(b.create(&h)) || !RT(cudaMalloc(&x, (size_t)K * BATCH * sizeof(float))) ||
      !RT(cudaMalloc(&y, (size_t)M * BATCH * sizeof(float))) ||
      !RT(cudaMemset(x, 0, (size_t)K * BATCH * sizeof(float))))
    goto out;
  printf("# W %dx%d, batch %d; rate = weight bytes / kernel time, median of %d\n", M, K,
         BATCH, REPS);
  for (int pl = 0; pl < N_PLACEMENTS; pl++) {
    const size_t wf32 = (size_t)M * K * sizeof(float), wbf16 = (size_t)M * K * 2;
    const char *pn = placement_name[pl];
    struct buf w;
    double ms;

    if (!buf_alloc(&w, (enum placement)pl, wf32)) {
      snprintf(k, sizeof k, "gemm.%s_alloc", pn);
      kv(k, "failed");
      continue;
    }
    /* 0x3a83126f is 0.001f; as two bf16 it is 0x3a83, 0x126f: small and finite. */
    if (!CU(cuMemsetD32((CUdeviceptr)w.ptr, 0x3a83126f, wf32 / 4)) || !CU(cuCtxSynchronize())) {
      buf_free(&w);
      continue;
    }
    ms = median_ms(NULL, 1, REPS, [&] {
      return BLAS(b.sgemv(h, CUBLAS_OP_T, K, M, &one, (const float *)w.ptr, K, x, 1, &zero, y, 1));
    });
    snprintf(k, sizeof k, "gemm.sgemv_t.%s_gb_s", pn);
    report_copy(k, wf32, ms);
    ms = median_ms(NULL, 1, REPS, [&] {
      return BLAS(b.sgemv(h, CUBLAS_OP_N, M, K, &one, (const float *)w.ptr, M, x, 1, &zero, y, 1));
    });
    snprintf(k, sizeof k, "gemm.sgemv_n.%s_gb_s", pn);
    report_copy(k, wf32, ms);
    ms = median_ms(NULL, 1, REPS, [&] {
      return BLAS(b.sgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, M, BATCH, K, &one, (const float *)w.ptr,
                          K, x, K, &zero, y, M));
    });
    snprintf(k, sizeof k, "gemm.sgemm_b%d.%s_gb_s", BATCH, pn);
    report_copy(k, wf32, ms);
    /* bf16 weight (the first half of the buffer), as LLM weights are. */
    ms = median_ms(NULL, 1, REPS, [&] {
      return BLAS(b.gemm_ex(h, CUBLAS_OP_T, CUBLAS_OP_N, M, BATCH, K, &one, w.ptr, CUDA_R_16BF,
                            K, x, CUDA_R_16BF, K, &zero, y, CUDA_R_16BF, M,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    snprintf(k, sizeof k, "gemm.bf16_gemm_b%d.%s_gb_s", BATCH, pn);
    report_copy(k, wbf16, ms);
    buf_free(&w);
  }
out:
  blas_release(&b, h, x, y);
  return 0;
}

/*
 * --gemm-batch: how many times a GEMM reads a host-backed weight, as a
 * function of its batch. One read at the link's rate is what a copy into
 * device memory costs; a kernel that reads the weight in place R times
 * costs R reads. Whether reading in place can ever beat copying depends
 * on R, so the rule that chooses between them needs it measured
 * (issue "One residency engine"): fp16 8192 x 8192 weight (128 MiB), op T
 * as a Linear layer, batch 1 to 4096. The report gives both rates; R is
 * about the link rate (gemm.bf16_gemm_b16.host_vmm_gb_s) over the host one.
 */
static int sec_gemm_batch(void)
{
  enum { M = 8192, K = 8192, MAX_BATCH = 4096, REPS = 3 };
  static const int batches[] = { 1, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096 };
  const size_t wbytes = (size_t)M * K * 2;
  struct blas b;
  cublasHandle_t h = NULL;
  float one = 1, zero = 0;
  void *x = NULL, *y = NULL;
  char k[128];

  if (!init_cuda())
    return 1;
  if (!blas_load(&b)) {
    kv("gemm_batch.cublas", "unavailable");
    return 0;
  }
  g_blas = &b;
  if (!BLAS(b.create(&h)) || !RT(cudaMalloc(&x, (size_t)K * MAX_BATCH * 2)) ||
      !RT(cudaMalloc(&y, (size_t)M * MAX_BATCH * 2)) ||
      !RT(cudaMemset(x, 0x1f, (size_t)K * MAX_BATCH * 2)))
    goto out;
  printf("# fp16 W %dx%d (op T), fp32 compute; rate = weight bytes / kernel time, median of %d\n",
         M, K, REPS);
  for (int pl = PL_DEVICE; pl <= PL_HOST_VMM; pl++) {
    struct buf w;

    if (!buf_alloc(&w, (enum placement)pl, wbytes)) {
      snprintf(k, sizeof k, "gemm_batch.%s_alloc", placement_name[pl]);
      kv(k, "failed");
      continue;
    }
    /* 0x1f001f00: two small finite fp16 values. */
    if (!CU(cuMemsetD32((CUdeviceptr)w.ptr, 0x1f001f00, wbytes / 4)) || !CU(cuCtxSynchronize())) {
      buf_free(&w);
      continue;
    }
    for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
      const int n = batches[i];
      double ms = median_ms(NULL, 1, REPS, [&] {
        return BLAS(b.gemm_ex(h, CUBLAS_OP_T, CUBLAS_OP_N, M, n, K, &one, w.ptr, CUDA_R_16F, K,
                              x, CUDA_R_16F, K, &zero, y, CUDA_R_16F, M, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
      });
      snprintf(k, sizeof k, "gemm_batch.b%d.%s_gb_s", n, placement_name[pl]);
      report_copy(k, wbytes, ms);
      snprintf(k, sizeof k, "gemm_batch.b%d.%s_ms", n, placement_name[pl]);
      kv(k, "%.3f", ms);
    }
    buf_free(&w);
  }
out:
  blas_release(&b, h, x, y);
  return 0;
}

/* ---- --runtime-calls: which driver functions the runtime calls -------------- */

static void (*g_trace_phase)(const char *);

/* Tell trace_preload (if loaded) that a new phase starts. */
static void phase(const char *name)
{
  printf("# phase %s\n", name);
  if (g_trace_phase)
    g_trace_phase(name);
}

#define PHASE_RT(name, call)             \
  do {                                   \
    phase(name);                         \
    kv("runtime_calls." name, "%s", cudaGetErrorName(call)); \
  } while (0)

static int sec_runtime_calls(void)
{
  typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                             CUdriverProcAddressQueryResult *);
  static char pageable[1 << 20];
  void *dev = NULL, *dev2 = NULL, *pinned = NULL, *async = NULL, *libcuda;
  int *flag = NULL;
  void *args[1];
  cudaStream_t s = NULL;
  gpa_fn gpa = NULL;

  *(void **)&g_trace_phase = dlsym(RTLD_DEFAULT, "spillway_trace_phase");
  kv("runtime_calls.traced", "%d", g_trace_phase != NULL);
  if (!g_trace_phase)
    printf("# not under trace_preload: run with LD_PRELOAD=libgpu-trace-preload.so\n");

  PHASE_RT("init", cudaFree(0));
  PHASE_RT("cudaMalloc", cudaMalloc(&dev, 1 << 20));
  PHASE_RT("cudaMalloc_again", cudaMalloc(&dev2, 1 << 20));
  PHASE_RT("cudaMallocHost", cudaMallocHost(&pinned, 1 << 20));
  flag = (int *)dev;
  args[0] = &flag;
  phase("launch_first");
  k_noop<<<1, 1>>>(flag);
  kv("runtime_calls.launch_first", "%s", cudaGetErrorName(cudaGetLastError()));
  phase("launch_second");
  k_noop<<<1, 1>>>(flag);
  kv("runtime_calls.launch_second", "%s", cudaGetErrorName(cudaGetLastError()));
  PHASE_RT("cudaLaunchKernel", cudaLaunchKernel((const void *)k_noop, dim3(1), dim3(1), args, 0, 0));
  PHASE_RT("cudaStreamCreate", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  phase("launch_stream");
  k_noop<<<1, 1, 0, s>>>(flag);
  kv("runtime_calls.launch_stream", "%s", cudaGetErrorName(cudaGetLastError()));
  PHASE_RT("cudaDeviceSynchronize", cudaDeviceSynchronize());
  PHASE_RT("cudaMemcpy_h2d_pageable", cudaMemcpy(dev, pageable, sizeof pageable, cudaMemcpyHostToDevice));
  PHASE_RT("cudaMemcpy_h2d_pinned", cudaMemcpy(dev, pinned, 1 << 20, cudaMemcpyHostToDevice));
  PHASE_RT("cudaMemcpy_d2h_pinned", cudaMemcpy(pinned, dev, 1 << 20, cudaMemcpyDeviceToHost));
  PHASE_RT("cudaMemcpy_d2d", cudaMemcpy(dev2, dev, 1 << 20, cudaMemcpyDeviceToDevice));
  PHASE_RT("cudaMemcpy_default_h2d", cudaMemcpy(dev, pinned, 1 << 20, cudaMemcpyDefault));
  PHASE_RT("cudaMemcpyAsync_h2d_pinned", cudaMemcpyAsync(dev, pinned, 1 << 20, cudaMemcpyHostToDevice, s));
  PHASE_RT("cudaMemcpyAsync_d2h_pinned", cudaMemcpyAsync(pinned, dev, 1 << 20, cudaMemcpyDeviceToHost, s));
  PHASE_RT("cudaStreamSynchronize", cudaStreamSynchronize(s));
  PHASE_RT("cudaMallocAsync", cudaMallocAsync(&async, 1 << 20, s));
  PHASE_RT("cudaFreeAsync", cudaFreeAsync(async, s));
  PHASE_RT("cudaStreamSynchronize_again", cudaStreamSynchronize(s));
  PHASE_RT("cudaFree", cudaFree(dev));
  PHASE_RT("cudaFreeHost", cudaFreeHost(pinned));
  PHASE_RT("cudaStreamDestroy", cudaStreamDestroy(s));
  RT(cudaFree(dev2));

  /*
   * Control: fetch cuMemAlloc/cuMemFree the way the runtime does, through
   * dlsym and cuGetProcAddress_v2. If the wrapping works, this phase counts
   * exactly cuMemAlloc_v2:1,cuMemFree_v2:1.
   */
  phase("control");
  kv("runtime_calls.control_expected", "cuMemAlloc_v2:1,cuMemFree_v2:1");
  libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (libcuda)
    *(void **)&gpa = dlsym(libcuda, "cuGetProcAddress_v2");
  if (gpa) {
    CUresult (*alloc)(CUdeviceptr *, size_t) = NULL;
    CUresult (*mfree)(CUdeviceptr) = NULL;
    CUdriverProcAddressQueryResult st;
    CUdeviceptr p;

    if (CU(gpa("cuMemAlloc", (void **)&alloc, 12000, 0, &st)) &&
        CU(gpa("cuMemFree", (void **)&mfree, 12000, 0, &st)) && alloc && mfree &&
        CU(alloc(&p, 4096)))
      CU(mfree(p));
  } else {
    printf("# control: no cuGetProcAddress_v2 in libcuda.so.1\n");
  }
  phase("end");
  return 0;
}

/* ---- --unmap-in-flight: unmap a range a running kernel reads ---------------- */

static int sec_unmap_in_flight(const char *backing)
{
  const unsigned long long budget_ns = 2000000000ull;  /* the kernel runs 2 s */
  bool host = strcmp(backing, "host") == 0;
  struct vmm m;
  struct spin k;
  double t0, t1, t2;
  CUresult r, q, rs, rc;
  CUdeviceptr probe_alloc;

  if (!init_cuda())
    return 1;
  kv("unmap.backing", "%s", host ? "host" : "device");
  kv("unmap.kernel_budget_ms", "%llu", budget_ns / 1000000);
  /* 64 MiB is more than L2 holds, and the loads bypass the caches anyway. */
  if (vmm_alloc(&m, host ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE,
                host ? 0 : g_dev, 64 * MiB) != CUDA_SUCCESS)
    return 1;
  /* Nothing is freed here: the unmap may leave the context dead. */
  if (!spin_start(&k, m.va, m.size, budget_ns))
    return 1;
  usleep(100 * 1000);  /* let it run a while */

  t0 = now_us();
  r = cuMemUnmap(m.va, m.size);
  t1 = now_us();
  q = cuStreamQuery(k.s);
  if (r == CUDA_SUCCESS)
    m.mapped = false;
  kv("unmap.result", "%s", cu_name(r));
  kv("unmap.call_ms", "%.3f", (t1 - t0) / 1e3);
  kv("unmap.kernel_running_ms_at_unmap", "%.1f", (t0 - k.t_started) / 1e3);
  kv("unmap.stream_query_after_unmap", "%s", cu_name(q));
  /* It blocked if it returned after the kernel's budget ran out. */
  kv("unmap.blocked_until_kernel_end", "%s",
     (t1 - k.t_started) / 1e3 >= budget_ns / 1e6 * 0.95 ? "yes" : "no");

  rs = cuStreamSynchronize(k.s);
  t2 = now_us();
  kv("unmap.sync_result", "%s", cu_name(rs));
  kv("unmap.sync_ms_after_unmap", "%.1f", (t2 - t1) / 1e3);
  kv("unmap.kernel_total_ms", "%.1f", (t2 - k.t_started) / 1e3);
  rc = cuCtxSynchronize();
  kv("unmap.ctx_synchronize_after", "%s", cu_name(rc));
  r = cuMemAlloc(&probe_alloc, 4096);
  kv("unmap.mem_alloc_after", "%s", cu_name(r));
  if (r == CUDA_SUCCESS)
    CU(cuMemFree(probe_alloc));
  if (r == CUDA_SUCCESS && rc == CUDA_SUCCESS)
    vmm_free(&m);
  return 0;
}

/* ---- main --------------------------------------------------------------------- */

static void usage(void)
{
  fprintf(stderr,
          "usage: probe SECTION...\n"
          "  --check            exit 0 if a real driver sees a device\n"
          "  --info             device, driver and date\n"
          "  --params           cuFuncGetParamInfo on CUfunction and CUkernel handles\n"
          "  --granularity      VMM attributes, granularities, host VMM use\n"
          "  --numa-create      cuMemCreate with HOST_NUMA id 0 (may crash old drivers)\n"
          "  --vmm-cost[=N]     host time of each VMM call, median of N (100)\n"
          "  --vmm-sizes[=N]    --vmm-cost on 8, 32 and 128 MiB handles (median of N, 20)\n"
          "  --vmm-batch[=N]    one cuMemSetAccess/cuMemUnmap over 8 mappings against\n"
          "                     one each (median of N, 30); VMM calls beside a kernel\n"
          "  --bandwidth        DMA and zero-copy kernel bandwidth, alone and together\n"
          "  --alloc-range      what cuMemGetAddressRange says of an odd-sized cuMemAlloc\n"
          "  --gemm             cuBLAS rate with a device vs host-backed weight\n"
          "  --gemm-batch       fp16 GEMM rate from device and host VMM, batch 1-4096\n"
          "  --runtime-calls    phases for trace_preload (run under LD_PRELOAD)\n"
          "  --unmap-in-flight[=device|host]  unmap a range a kernel reads (kills\n"
          "                     the context: run alone, last)\n"
          "  --all              info params granularity vmm-cost vmm-batch bandwidth gemm\n"
          "                     alloc-range\n");
}

static int run_section(const char *arg)
{
  printf("# == %s ==\n", arg);
  if (!strcmp(arg, "--check"))
    return sec_check();
  if (!strcmp(arg, "--info"))
    return sec_info();
  if (!strcmp(arg, "--params"))
    return sec_params();
  if (!strcmp(arg, "--granularity"))
    return sec_granularity();
  if (!strcmp(arg, "--numa-create"))
    return sec_numa_create();
  if (!strcmp(arg, "--vmm-cost"))
    return sec_vmm_cost(100);
  if (!strncmp(arg, "--vmm-cost=", 11) && atoi(arg + 11) > 0)
    return sec_vmm_cost(atoi(arg + 11));
  if (!strcmp(arg, "--vmm-sizes"))
    return sec_vmm_sizes(20);
  if (!strncmp(arg, "--vmm-sizes=", 12) && atoi(arg + 12) > 0)
    return sec_vmm_sizes(atoi(arg + 12));
  if (!strcmp(arg, "--vmm-batch"))
    return sec_vmm_batch(30);
  if (!strncmp(arg, "--vmm-batch=", 12) && atoi(arg + 12) > 0)
    return sec_vmm_batch(atoi(arg + 12));
  if (!strcmp(arg, "--bandwidth"))
    return sec_bandwidth();
  if (!strcmp(arg, "--gemm"))
    return sec_gemm();
  if (!strcmp(arg, "--gemm-batch"))
    return sec_gemm_batch();
  if (!strcmp(arg, "--alloc-range"))
    return sec_alloc_range();
  if (!strcmp(arg, "--runtime-calls"))
    return sec_runtime_calls();
  if (!strcmp(arg, "--unmap-in-flight") || !strcmp(arg, "--unmap-in-flight=device"))
    return sec_unmap_in_flight("device");
  if (!strcmp(arg, "--unmap-in-flight=host"))
    return sec_unmap_in_flight("host");
  usage();
  return 2;
}

int main(int argc, char **argv)
{
  static const char *const all[] = { "--info", "--params", "--granularity",
                                     "--vmm-cost", "--vmm-batch", "--bandwidth", "--gemm",
                                     "--alloc-range" };
  int rc = 0;

  /* Line-buffered even into a pipe, so a crash loses nothing already measured. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 2) {
    usage();
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--all")) {
      for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        rc |= run_section(all[j]);
    } else {
      rc |= run_section(argv[i]);
    }
  }
  if (g_failures)
    printf("# %d CUDA calls failed\n", g_failures);
  return rc ? rc : g_failures ? 1 : 0;
}

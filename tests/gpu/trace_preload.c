/*
 * trace_preload: an LD_PRELOAD library that shows which driver entry points
 * the CUDA runtime calls. Used by `probe --runtime-calls` (run-probe.sh).
 *
 * The runtime (and cuBLAS) dlopen libcuda.so.1, dlsym exactly one symbol,
 * cuGetProcAddress_v2, and fetch every other entry point through it. So this
 * library overrides dlsym, hands back a wrapper of cuGetProcAddress, logs
 * every symbol requested through it, and swaps a few returned pointers for
 * counting wrappers. The probe marks phases by calling spillway_trace_phase()
 * (found with dlsym(RTLD_DEFAULT)), so counts are kept per phase.
 *
 * A returned pointer is wrapped only when it is exactly the address that
 * libcuda exports under one of the names below: the wrapper then has the
 * ABI of that very variant (_v2, _ptsz, ...). Pointers that match nothing
 * are passed through, and the log shows the exported name of each (dladdr).
 *
 * Output (key=value lines) is appended to the file named by TRACE_OUT, else
 * written to stderr: trace.dlsym.N and trace.getproc.N as they happen,
 * trace.phases and trace.calls.PHASE at exit.
 *
 * Only lookups in a real handle (not RTLD_DEFAULT/RTLD_NEXT) are inspected,
 * and only for driver names.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PHASES 64

typedef void *(*dlsym_fn)(void *, const char *);
typedef CUresult (*gpa_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa_v2_fn)(const char *, void **, int, cuuint64_t,
                              CUdriverProcAddressQueryResult *);

/* Driver functions replaced by counting wrappers: name, parameters, call. */
#define WRAPPED(X)                                                            \
  X(cuMemAlloc_v2, (CUdeviceptr *p, size_t n), (p, n))                        \
  X(cuMemFree_v2, (CUdeviceptr p), (p))                                       \
  X(cuMemAllocHost_v2, (void **p, size_t n), (p, n))                          \
  X(cuMemHostAlloc, (void **p, size_t n, unsigned f), (p, n, f))              \
  X(cuMemFreeHost, (void *p), (p))                                            \
  X(cuMemAllocAsync, (CUdeviceptr *p, size_t n, CUstream s), (p, n, s))       \
  X(cuMemAllocAsync_ptsz, (CUdeviceptr *p, size_t n, CUstream s), (p, n, s))  \
  X(cuMemAllocFromPoolAsync,                                                  \
    (CUdeviceptr *p, size_t n, CUmemoryPool m, CUstream s), (p, n, m, s))     \
  X(cuMemAllocFromPoolAsync_ptsz,                                             \
    (CUdeviceptr *p, size_t n, CUmemoryPool m, CUstream s), (p, n, m, s))     \
  X(cuMemFreeAsync, (CUdeviceptr p, CUstream s), (p, s))                      \
  X(cuMemFreeAsync_ptsz, (CUdeviceptr p, CUstream s), (p, s))                 \
  X(cuMemCreate, (CUmemGenericAllocationHandle *h, size_t n,                  \
                  const CUmemAllocationProp *pr, unsigned long long f),       \
    (h, n, pr, f))                                                            \
  X(cuMemMap, (CUdeviceptr p, size_t n, size_t o,                             \
               CUmemGenericAllocationHandle h, unsigned long long f),         \
    (p, n, o, h, f))                                                          \
  X(cuMemUnmap, (CUdeviceptr p, size_t n), (p, n))                            \
  X(cuMemSetAccess,                                                           \
    (CUdeviceptr p, size_t n, const CUmemAccessDesc *d, size_t c),            \
    (p, n, d, c))                                                             \
  X(cuMemAddressReserve, (CUdeviceptr *p, size_t n, size_t al,                \
                          CUdeviceptr a, unsigned long long f),               \
    (p, n, al, a, f))                                                         \
  X(cuLaunchKernel, LAUNCH_PARAMS, LAUNCH_ARGS)                               \
  X(cuLaunchKernel_ptsz, LAUNCH_PARAMS, LAUNCH_ARGS)                          \
  X(cuLaunchKernelEx,                                                         \
    (const CUlaunchConfig *c, CUfunction f, void **kp, void **ex),            \
    (c, f, kp, ex))                                                           \
  X(cuLaunchKernelEx_ptsz,                                                    \
    (const CUlaunchConfig *c, CUfunction f, void **kp, void **ex),            \
    (c, f, kp, ex))                                                           \
  X(cuLaunchCooperativeKernel, COOP_PARAMS, COOP_ARGS)                        \
  X(cuLaunchCooperativeKernel_ptsz, COOP_PARAMS, COOP_ARGS)                   \
  X(cuMemcpy, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))            \
  X(cuMemcpy_ptds, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))       \
  X(cuMemcpyAsync, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st),     \
    (d, s, n, st))                                                            \
  X(cuMemcpyAsync_ptsz,                                                       \
    (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st))     \
  X(cuMemcpyHtoD_v2, (CUdeviceptr d, const void *s, size_t n), (d, s, n))     \
  X(cuMemcpyHtoD_v2_ptds, (CUdeviceptr d, const void *s, size_t n),           \
    (d, s, n))                                                                \
  X(cuMemcpyDtoH_v2, (void *d, CUdeviceptr s, size_t n), (d, s, n))           \
  X(cuMemcpyDtoH_v2_ptds, (void *d, CUdeviceptr s, size_t n), (d, s, n))      \
  X(cuMemcpyDtoD_v2, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))     \
  X(cuMemcpyDtoD_v2_ptds, (CUdeviceptr d, CUdeviceptr s, size_t n),           \
    (d, s, n))                                                                \
  X(cuMemcpyHtoDAsync_v2,                                                     \
    (CUdeviceptr d, const void *s, size_t n, CUstream st), (d, s, n, st))     \
  X(cuMemcpyHtoDAsync_v2_ptsz,                                                \
    (CUdeviceptr d, const void *s, size_t n, CUstream st), (d, s, n, st))     \
  X(cuMemcpyDtoHAsync_v2, (void *d, CUdeviceptr s, size_t n, CUstream st),    \
    (d, s, n, st))                                                            \
  X(cuMemcpyDtoHAsync_v2_ptsz,                                                \
    (void *d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st))           \
  X(cuMemcpyDtoDAsync_v2,                                                     \
    (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st))     \
  X(cuMemcpyDtoDAsync_v2_ptsz,                                                \
    (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st))     \
  X(cuMemcpyBatchAsync_v2, BATCH_PARAMS, BATCH_ARGS)                          \
  X(cuMemcpyBatchAsync_v2_ptsz, BATCH_PARAMS, BATCH_ARGS)                     \
  X(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *c), (c))                             \
  X(cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *c), (c))                        \
  X(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *c), (c))                    \
  X(cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *c), (c))               \
  X(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *c, CUstream st), (c, st))       \
  X(cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *c, CUstream st), (c, st))  \
  X(cuMemcpy3D_v2, (const CUDA_MEMCPY3D *c), (c))                             \
  X(cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *c), (c))                        \
  X(cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *c, CUstream st), (c, st))       \
  X(cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D *c, CUstream st), (c, st))  \
  X(cuMemcpyPeer, PEER_PARAMS, PEER_ARGS)                                     \
  X(cuMemcpyPeer_ptds, PEER_PARAMS, PEER_ARGS)                                \
  X(cuStreamSynchronize, (CUstream s), (s))                                   \
  X(cuStreamSynchronize_ptsz, (CUstream s), (s))                              \
  X(cuCtxSynchronize, (void), ())                                             \
  X(cuLibraryLoadData, (CUlibrary *l, const void *c, CUjit_option *jo,        \
                        void **jv, unsigned nj, CUlibraryOption *lo,          \
                        void **lv, unsigned nl),                              \
    (l, c, jo, jv, nj, lo, lv, nl))                                           \
  X(cuLibraryGetKernel, (CUkernel *k, CUlibrary l, const char *n), (k, l, n)) \
  X(cuKernelGetFunction, (CUfunction *f, CUkernel k), (f, k))                 \
  X(cuModuleLoadData, (CUmodule *m, const void *i), (m, i))                   \
  X(cuModuleGetFunction, (CUfunction *f, CUmodule m, const char *n),          \
    (f, m, n))                                                                \
  X(cuGetExportTable, (const void **t, const CUuuid *id), (t, id))

#define LAUNCH_PARAMS                                                         \
  (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,          \
   unsigned by, unsigned bz, unsigned sh, CUstream s, void **kp, void **ex)
#define LAUNCH_ARGS (f, gx, gy, gz, bx, by, bz, sh, s, kp, ex)
#define COOP_PARAMS                                                           \
  (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,          \
   unsigned by, unsigned bz, unsigned sh, CUstream s, void **kp)
#define COOP_ARGS (f, gx, gy, gz, bx, by, bz, sh, s, kp)
#define BATCH_PARAMS                                                          \
  (CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t c, CUmemcpyAttributes *a, \
   size_t *ai, size_t na, CUstream st)
#define BATCH_ARGS (d, s, n, c, a, ai, na, st)
#define PEER_PARAMS                                                           \
  (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n)
#define PEER_ARGS (d, dc, s, sc, n)

enum {
#define X_ENUM(name, params, args) W_##name,
  WRAPPED(X_ENUM)
  N_WRAPPED
};

static dlsym_fn real_dlsym;
static pthread_once_t dlsym_once = PTHREAD_ONCE_INIT;
static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *cuda_handle;  /* the handle the runtime looked cuGetProcAddress up in */
static gpa_v1_fn real_gpa_v1;
static gpa_v2_fn real_gpa_v2;
static void *real_fn[N_WRAPPED];  /* libcuda's exported address of each name */

static const char *phase_names[MAX_PHASES] = { "startup" };
static int n_phases = 1;
static int cur_phase;
static unsigned long calls[MAX_PHASES][N_WRAPPED];
static unsigned long n_getproc, n_dlsym;
static FILE *out;

static void count(int w)
{
  int ph = __atomic_load_n(&cur_phase, __ATOMIC_RELAXED);
  __atomic_fetch_add(&calls[ph][w], 1, __ATOMIC_RELAXED);
}

#define X_FN(name, params, args)                                               \
  static CUresult w_##name params                                              \
  {                                                                            \
    count(W_##name);                                                           \
    return ((CUresult(*) params)real_fn[W_##name]) args;                       \
  }
WRAPPED(X_FN)

static const struct {
  const char *name;
  void *wrapper;
} wrapped[N_WRAPPED] = {
#define X_TAB(name, params, args) [W_##name] = { #name, (void *)w_##name },
  WRAPPED(X_TAB)
};

static FILE *log_file(void)
{
  return out ? out : stderr;
}

/* One log line, written at once so that it survives a crash. */
static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...)
{
  va_list ap;

  pthread_mutex_lock(&lock);
  va_start(ap, fmt);
  vfprintf(log_file(), fmt, ap);
  va_end(ap);
  fflush(log_file());
  pthread_mutex_unlock(&lock);
}

static void find_real_dlsym(void)
{
  /* dlsym itself is overridden, so the real one is found by version. */
  real_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!real_dlsym)
    real_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym",
#if defined(__aarch64__)
                                  "GLIBC_2.17" /* aarch64's base version (GH200) */
#else
                                  "GLIBC_2.2.5"
#endif
    );
  if (!real_dlsym) {
    fprintf(stderr, "trace_preload: cannot find the real dlsym\n");
    abort();
  }
}

static void resolve_real_fns(void)
{
  int n = 0;

  /* Either version of cuGetProcAddress can be asked for through the other. */
  if (!real_gpa_v1)
    real_gpa_v1 = (gpa_v1_fn)real_dlsym(cuda_handle, "cuGetProcAddress");
  if (!real_gpa_v2)
    real_gpa_v2 = (gpa_v2_fn)real_dlsym(cuda_handle, "cuGetProcAddress_v2");
  for (int i = 0; i < N_WRAPPED; i++) {
    real_fn[i] = real_dlsym(cuda_handle, wrapped[i].name);
    n += real_fn[i] != NULL;
  }
  log_line("trace.wrappable=%d/%d\n", n, N_WRAPPED);
}

static CUresult w_gpa_v1(const char *, void **, int, cuuint64_t);
static CUresult w_gpa_v2(const char *, void **, int, cuuint64_t,
                         CUdriverProcAddressQueryResult *);

/* Swap a pointer returned by cuGetProcAddress for its wrapper, and log. */
static void route(const char *sym, int ver, cuuint64_t flags, CUresult r,
                  void **pfn)
{
  void *p = (r == CUDA_SUCCESS && pfn) ? *pfn : NULL;
  const char *exported = "-", *wrapper = "-";
  Dl_info di;
  int ph = __atomic_load_n(&cur_phase, __ATOMIC_ACQUIRE);

  pthread_once(&resolve_once, resolve_real_fns);
  if (p && dladdr(p, &di) && di.dli_saddr == p && di.dli_sname)
    exported = di.dli_sname;
  if (p && p == (void *)real_gpa_v1) {
    *pfn = (void *)w_gpa_v1;
    wrapper = "cuGetProcAddress";
  } else if (p && p == (void *)real_gpa_v2) {
    *pfn = (void *)w_gpa_v2;
    wrapper = "cuGetProcAddress_v2";
  } else if (p) {
    for (int i = 0; i < N_WRAPPED; i++) {
      if (real_fn[i] == p) {
        *pfn = wrapped[i].wrapper;
        wrapper = wrapped[i].name;
        break;
      }
    }
  }
  log_line("trace.getproc.%04lu=%s,%d,%llu,result=%d,exported=%s,wrapped=%s,phase=%s\n",
           __atomic_fetch_add(&n_getproc, 1, __ATOMIC_RELAXED), sym, ver,
           (unsigned long long)flags, (int)r, exported, wrapper,
           phase_names[ph]);
}

static CUresult w_gpa_v1(const char *sym, void **pfn, int ver, cuuint64_t flags)
{
  CUresult r = real_gpa_v1(sym, pfn, ver, flags);

  route(sym, ver, flags, r, pfn);
  return r;
}

static CUresult w_gpa_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                         CUdriverProcAddressQueryResult *status)
{
  CUresult r = real_gpa_v2(sym, pfn, ver, flags, status);

  route(sym, ver, flags, r, pfn);
  return r;
}

/* dlsym on a real handle for a driver name: log it, wrap cuGetProcAddress. */
static void *driver_dlsym(void *handle, const char *name)
{
  void *p = real_dlsym(handle, name);

  log_line("trace.dlsym.%04lu=%s,%s\n",
           __atomic_fetch_add(&n_dlsym, 1, __ATOMIC_RELAXED), name,
           p ? "found" : "missing");
  if (p && strcmp(name, "cuGetProcAddress_v2") == 0) {
    real_gpa_v2 = (gpa_v2_fn)p;
    if (!cuda_handle)
      cuda_handle = handle;
    return (void *)w_gpa_v2;
  }
  if (p && strcmp(name, "cuGetProcAddress") == 0) {
    real_gpa_v1 = (gpa_v1_fn)p;
    if (!cuda_handle)
      cuda_handle = handle;
    return (void *)w_gpa_v1;
  }
  return p;
}

/*
 * glibc resolves RTLD_DEFAULT and RTLD_NEXT relative to the library that
 * called dlsym, found from the return address. Those lookups must therefore
 * reach the real dlsym by a tail jump, with the caller's return address in
 * place: meson.build builds this file with -O2 -foptimize-sibling-calls.
 * Lookups in a real handle do not depend on the caller, so they can be
 * inspected. Driver names are "cu..." but not "cuda..." or "cublas...".
 */
void *dlsym(void *restrict handle, const char *restrict name)
{
  pthread_once(&dlsym_once, find_real_dlsym);
  if (handle != RTLD_DEFAULT && handle != RTLD_NEXT && strncmp(name, "cu", 2) == 0 &&
      strncmp(name, "cuda", 4) != 0 && strncmp(name, "cublas", 6) != 0)
    return driver_dlsym(handle, name);
  return real_dlsym(handle, name);
}

/* Called by the probe (found with dlsym) before each phase. */
void spillway_trace_phase(const char *name);
void spillway_trace_phase(const char *name)
{
  pthread_mutex_lock(&lock);
  if (n_phases < MAX_PHASES) {
    phase_names[n_phases] = strdup(name);
    __atomic_store_n(&cur_phase, n_phases, __ATOMIC_RELEASE);
    n_phases++;
  }
  pthread_mutex_unlock(&lock);
}

__attribute__((constructor)) static void trace_init(void)
{
  const char *path = getenv("TRACE_OUT");

  /* Append: a child process inheriting LD_PRELOAD must not truncate the file. */
  if (path && *path) {
    out = fopen(path, "a");
    if (!out)
      fprintf(stderr, "trace_preload: cannot open TRACE_OUT=%s\n", path);
  }
}

/* Per phase, the wrapped functions that were called and how often. */
__attribute__((destructor)) static void trace_fini(void)
{
  FILE *f = log_file();

  /* Processes that never looked up the driver (a shell, timeout) stay silent. */
  if (!__atomic_load_n(&n_dlsym, __ATOMIC_RELAXED))
    return;
  pthread_mutex_lock(&lock);
  fprintf(f, "trace.phases=");
  for (int ph = 0; ph < n_phases; ph++)
    fprintf(f, "%s%s", ph ? "," : "", phase_names[ph]);
  fprintf(f, "\n");
  for (int ph = 0; ph < n_phases; ph++) {
    int any = 0;

    fprintf(f, "trace.calls.%s=", phase_names[ph]);
    for (int i = 0; i < N_WRAPPED; i++) {
      unsigned long n = __atomic_load_n(&calls[ph][i], __ATOMIC_RELAXED);

      if (n)
        fprintf(f, "%s%s:%lu", any++ ? "," : "", wrapped[i].name, n);
    }
    fprintf(f, "%s\n", any ? "" : "none");
  }
  fflush(f);
  pthread_mutex_unlock(&lock);
}

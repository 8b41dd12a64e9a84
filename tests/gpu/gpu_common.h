/*
 * gpu_common.h: what the GPU test programs share (tests/gpu/run-all.sh runs
 * them): error checks that print the CUDA error's name and exit 1, a seeded
 * generator, a checksum, flag parsing and a device check.
 *
 * Every program prints exactly one result line,
 *
 *   NAME: result=match checksum=0x... footprint=BYTES ...
 *
 * and exits 0 only when its device results equal its host reference bit for
 * bit. run-all.sh compares the checksums of a run without spillway and runs
 * under it, and sets the GPU budget from the footprint (the bytes of device
 * memory the program allocates at its peak).
 */
#ifndef SPILLWAY_GPU_COMMON_H
#define SPILLWAY_GPU_COMMON_H

#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MiB (1024ull * 1024ull)

/* The program's name in messages: argv[0]'s basename, set by gpu_init(). */
static const char *g_prog = "gpu";

/* ---- errors --------------------------------------------------------------- */

static inline void die_rt(cudaError_t r, const char *what, const char *file, int line)
{
  fprintf(stderr, "%s: error: %s:%d: %s -> %s (%s)\n", g_prog, file, line, what,
          cudaGetErrorName(r), cudaGetErrorString(r));
  printf("%s: result=error %s\n", g_prog, cudaGetErrorName(r));
  fflush(stdout);
  exit(1);
}

/* Check a runtime call: on failure print its name and error, exit 1. */
#define CK(call)                                                                 \
  do {                                                                           \
    cudaError_t ck_r_ = (call);                                                  \
    if (ck_r_ != cudaSuccess)                                                    \
      die_rt(ck_r_, #call, __FILE__, __LINE__);                                  \
  } while (0)

/* After kernel launches: the launch error, then everything queued has run. */
#define CK_LAUNCH() CK(cudaGetLastError())
#define CK_SYNC()                                                                \
  do {                                                                           \
    CK(cudaGetLastError());                                                      \
    CK(cudaDeviceSynchronize());                                                 \
  } while (0)

static inline void die(const char *fmt, const char *arg)
{
  fprintf(stderr, "%s: error: ", g_prog);
  fprintf(stderr, fmt, arg);
  fputc('\n', stderr);
  printf("%s: result=error\n", g_prog);
  exit(1);
}

static inline void *xmalloc(size_t n)
{
  void *p = malloc(n ? n : 1);

  if (!p)
    die("out of host memory (%s)", "malloc");
  return p;
}

/* ---- deterministic data ------------------------------------------------------ */

static inline uint64_t splitmix64(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Fill p[0..n) with 32-bit words from the stream seeded by seed. */
static inline void fill_u32(uint32_t *p, size_t n, uint64_t seed)
{
  uint64_t s = seed;
  size_t i;

  for (i = 0; i + 1 < n; i += 2) {
    uint64_t z = splitmix64(&s);
    p[i] = (uint32_t)z;
    p[i + 1] = (uint32_t)(z >> 32);
  }
  if (i < n)
    p[i] = (uint32_t)splitmix64(&s);
}

/* ---- checksum: FNV-1a over 64-bit words (the tail byte-wise) ------------------ */

#define HASH_INIT 0xcbf29ce484222325ull

static inline uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
  const unsigned char *b = (const unsigned char *)p;
  size_t i = 0;

  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, b + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
  }
  for (; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* Index of the first differing uint32_t, or -1 if equal. */
static inline long long first_diff_u32(const uint32_t *a, const uint32_t *b, size_t n)
{
  if (memcmp(a, b, n * sizeof *a) == 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i])
      return (long long)i;
  return -1;
}

/* ---- flags ------------------------------------------------------------------ */

typedef struct {
  const char *name;        /* "--mib" */
  unsigned long long *val; /* numeric flags */
  const char **str;        /* string flags (val NULL) */
  const char *help;
} flag_t;

static inline void usage_exit(const char *what, const flag_t *flags, int n, int code)
{
  FILE *f = code ? stderr : stdout;

  fprintf(f, "usage: %s [flags]\n  %s\n", g_prog, what);
  fprintf(f, "  --check  exit 0 if a CUDA device is usable, else 1\n");
  for (int i = 0; i < n; i++) {
    if (flags[i].val)
      fprintf(f, "  %s N  %s (default %llu)\n", flags[i].name, flags[i].help, *flags[i].val);
    else
      fprintf(f, "  %s S  %s (default %s)\n", flags[i].name, flags[i].help,
              *flags[i].str ? *flags[i].str : "-");
  }
  exit(code);
}

/*
 * Parse "--name N" and "--name=N"; "--help" prints the flags. Returns true
 * if --check was given. A bad flag or number exits 2 with a message.
 */
static inline bool parse_flags(int argc, char **argv, const char *what, const flag_t *flags, int n)
{
  bool check = false;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    const flag_t *f = NULL;

    if (!strcmp(a, "--check")) {
      check = true;
      continue;
    }
    if (!strcmp(a, "--help") || !strcmp(a, "-h"))
      usage_exit(what, flags, n, 0);
    for (int k = 0; k < n && !f; k++) {
      size_t len = strlen(flags[k].name);
      if (!strncmp(a, flags[k].name, len) && (a[len] == '\0' || a[len] == '=')) {
        f = &flags[k];
        v = a[len] == '=' ? a + len + 1 : (i + 1 < argc ? argv[++i] : NULL);
      }
    }
    if (!f || !v) {
      fprintf(stderr, "%s: %s: %s\n", g_prog, f ? "missing value for" : "unknown flag", a);
      usage_exit(what, flags, n, 2);
    }
    if (f->val) {
      char *end;
      *f->val = strtoull(v, &end, 0);
      if (!*v || *end || *v == '-') {
        fprintf(stderr, "%s: %s: not a number: %s\n", g_prog, f->name, v);
        exit(2);
      }
    } else {
      *f->str = v;
    }
  }
  return check;
}

/* ---- setup -------------------------------------------------------------------- */

static inline double now_s(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline void gpu_init(const char *argv0)
{
  const char *slash = strrchr(argv0, '/');

  g_prog = slash ? slash + 1 : argv0;
  setvbuf(stdout, NULL, _IOLBF, 0);
}

/* --check: is a device usable through the runtime? Prints why not. */
static inline int gpu_check(void)
{
  int n = 0;
  cudaError_t r = cudaGetDeviceCount(&n);

  if (r != cudaSuccess || n < 1) {
    printf("%s: check: cudaGetDeviceCount -> %s, %d devices\n", g_prog, cudaGetErrorName(r), n);
    return 1;
  }
  r = cudaFree(0);
  if (r != cudaSuccess) {
    printf("%s: check: cudaFree(0) -> %s\n", g_prog, cudaGetErrorName(r));
    return 1;
  }
  return 0;
}

/* Grid for a grid-stride loop over n elements. */
static inline unsigned grid_for(size_t n)
{
  size_t b = (n + 255) / 256;

  return (unsigned)(b < 4096 ? (b ? b : 1) : 4096);
}

#endif

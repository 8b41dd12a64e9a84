/*
 * gpu-kernels: spillway's own kernels (src/fingerprint.cu, its PTX as
 * src/fingerprint_ptx.h embeds it) on the real driver, with the grids
 * spillway gives them (fingerprint.c, walk()). spillway_unwindow_home must
 * leave exactly what spillway_unwindow then spillway_way_home leave:
 *
 *   a copy C of ROUNDS sizes, with window addresses stored in the span
 *   spillway looks at inside it (its first 64 KiB, from a few bytes in),
 *   one outside every span, and some in another output O;
 *   round 1: home's fingerprint differs, so C goes home H as put back;
 *   round 2: home's fingerprint is C's as put back, so nothing goes.
 *
 * Every byte of C, O and H, the fingerprint words and both flags are
 * compared between the fused kernel and the two in turn, and the words put
 * back are checked by value. Many blocks write and hash at once here, as
 * simgpu's one-thread built-ins never do: a race between the look and the
 * fingerprint shows as a difference. Prints "gpu-kernels: result=match"
 * and exits 0; "result=mismatch ..." and 1; 77 where no GPU is usable. It
 * runs on simgpu too (the PTX names simgpu's built-ins), which checks the
 * program, not the kernels.
 */
#include <cuda.h>

#include <initializer_list>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fingerprint_ptx.h"

#define CU(call)                                                                   \
  do {                                                                             \
    CUresult cu_r_ = (call);                                                       \
    if (cu_r_ != CUDA_SUCCESS) {                                                   \
      const char *name_ = NULL;                                                    \
      cuGetErrorName(cu_r_, &name_);                                               \
      printf("gpu-kernels: result=error %s in %s\n", name_ ? name_ : "?", #call);  \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

// sw_unwindow_t and sw_unwindow_home_t (src/device.h), field for field.
struct look_t {
  uint64_t lo[8], len[8];
  uint64_t copy[16], copy_len[16], home[16];
  uint32_t unit[16];
  uint32_t nspans, ncopies;
  uint32_t *found;
};
struct look_home_t {
  look_t look;
  uint64_t src, dst, bytes, fp_home, acc, changed;
};
static_assert(sizeof(look_t) == 592, "spillway_unwindow's parameter");
static_assert(sizeof(look_home_t) == 640, "spillway_unwindow_home's parameter");

enum { OUT_BYTES = 4096, SPAN = 64 << 10, UNIT = 5 };

struct buffers {
  CUdeviceptr c, o, h, words, changed;
  uint32_t *found; // pinned, as spillway's
  size_t bytes;
};

struct result {
  uint64_t *c, *o, *h, words[5];
  uint32_t changed, found;
};

static CUfunction fn(CUmodule m, const char *name)
{
  CUfunction f;
  CU(cuModuleGetFunction(&f, m, name));
  return f;
}

// fingerprint.c's walk(): 256 threads a block, a word each, 1024 blocks at most.
static void walk(CUfunction f, uint64_t bytes, void **args)
{
  uint64_t words = bytes / 8 + 1;
  unsigned blocks = (unsigned)(words / 256 + 1 < 1024 ? words / 256 + 1 : 1024);
  CU(cuLaunchKernel(f, blocks, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
}

// The words a served launch could have stored: addresses in C, at every
// 4 KiB of the span inside C and at one word past it, and in O.
static void plant(const buffers &b, uint64_t *c, uint64_t *o)
{
  for (size_t i = 0; i < b.bytes / 8; i++)
    c[i] = 0x9E3779B97F4A7C15ull * (i + 1) ^ (i << 7);
  for (size_t i = 0; i < OUT_BYTES / 8; i++)
    o[i] = 0xC2B2AE3D27D4EB4Full * (i + 3);
  for (size_t i = 1; i < SPAN / 8; i += 512)
    c[i] = b.c + 8 * (i * 37 % (b.bytes / 8)); // inside the span: put back
  c[SPAN / 8 + 1] = b.c + 8;                  // outside every span: left
  for (size_t i = 2; i < OUT_BYTES / 8; i += 64)
    o[i] = b.c + 8 * i;                       // in the other span: put back
}

static look_home_t args_of(const buffers &b)
{
  look_home_t a;
  memset(&a, 0, sizeof a);
  a.look.lo[0] = b.c + 4; // from a few bytes in, as a pointer argument may be
  a.look.len[0] = SPAN;
  a.look.lo[1] = b.o;
  a.look.len[1] = OUT_BYTES;
  a.look.copy[0] = b.c;
  a.look.copy_len[0] = b.bytes;
  a.look.home[0] = b.h;
  a.look.unit[0] = UNIT;
  a.look.nspans = 2;
  a.look.ncopies = 1;
  a.look.found = b.found;
  a.src = b.c;
  a.dst = b.h;
  a.bytes = b.bytes;
  a.fp_home = b.words;
  a.acc = b.words + 16;
  a.changed = b.changed;
  return a;
}

static void run(CUmodule m, const buffers &b, const uint64_t fp_home[2], bool fused, result *r)
{
  uint64_t *c = (uint64_t *)malloc(b.bytes), o[OUT_BYTES / 8];
  plant(b, c, o);
  CU(cuMemcpyHtoD(b.c, c, b.bytes));
  CU(cuMemcpyHtoD(b.o, o, OUT_BYTES));
  CU(cuMemsetD8(b.h, 0, b.bytes));
  CU(cuMemsetD8(b.words, 0, 40));
  CU(cuMemcpyHtoD(b.words, fp_home, 16));
  CU(cuMemsetD8(b.changed, 0, 4));
  memset(b.found, 0, 16 * sizeof *b.found);
  free(c);
  look_home_t a = args_of(b);
  if (fused) {
    void *p[] = {&a};
    walk(fn(m, "spillway_unwindow_home"), a.bytes > (uint64_t)SPAN ? a.bytes : (uint64_t)SPAN, p);
  } else {
    void *look[] = {&a.look};
    walk(fn(m, "spillway_unwindow"), SPAN, look);
    void *p[] = {&a.src, &a.dst, &a.bytes, &a.fp_home, &a.acc, &a.changed};
    walk(fn(m, "spillway_way_home"), a.bytes, p);
  }
  CU(cuCtxSynchronize());
  CU(cuMemcpyDtoH(r->c, b.c, b.bytes));
  CU(cuMemcpyDtoH(r->o, b.o, OUT_BYTES));
  CU(cuMemcpyDtoH(r->h, b.h, b.bytes));
  CU(cuMemcpyDtoH(r->words, b.words, sizeof r->words));
  CU(cuMemcpyDtoH(&r->changed, b.changed, 4));
  r->found = b.found[UNIT];
}

static int mismatch(const char *what, size_t bytes)
{
  printf("gpu-kernels: result=mismatch %s (copy of %zu bytes)\n", what, bytes);
  return 1;
}

// Fused against in turn, for one size of copy; 0 when alike and right.
static int check(CUmodule m, size_t bytes)
{
  buffers b;
  b.bytes = bytes;
  CU(cuMemAlloc(&b.c, bytes));
  CU(cuMemAlloc(&b.o, OUT_BYTES));
  CU(cuMemAlloc(&b.h, bytes));
  CU(cuMemAlloc(&b.words, 40));
  CU(cuMemAlloc(&b.changed, 4));
  CU(cuMemAllocHost((void **)&b.found, 16 * sizeof *b.found));
  result f, t;
  for (result *r : {&f, &t}) {
    r->c = (uint64_t *)malloc(bytes);
    r->h = (uint64_t *)malloc(bytes);
    r->o = (uint64_t *)malloc(OUT_BYTES);
  }
  int bad = 0;
  uint64_t differs[2] = {0, 0};
  for (int round = 0; round < 2 && !bad; round++) {
    uint64_t home[2] = {differs[0], differs[1]};
    if (round == 1)
      memcpy(home, f.words, 16); // C's fingerprint as put back
    run(m, b, home, true, &f);
    run(m, b, home, false, &t);
    if (memcmp(f.c, t.c, bytes) || memcmp(f.o, t.o, OUT_BYTES) || memcmp(f.h, t.h, bytes))
      bad = mismatch("bytes of the copy, the output or home", bytes);
    else if (memcmp(f.words, t.words, sizeof f.words) || f.changed != t.changed ||
             f.found != t.found)
      bad = mismatch("fingerprint words or flags", bytes);
    else if (f.c[1] - b.h >= bytes || f.c[SPAN / 8 + 1] != b.c + 8 || f.o[2] != b.h + 16 ||
             f.found != 1)
      bad = mismatch("a stored address not put back, or one outside the spans moved", bytes);
    else if (round == 0 && (f.changed != 1 || memcmp(f.h, f.c, bytes)))
      bad = mismatch("a changed copy not gone home", bytes);
    else if (round == 1 && (f.changed != 0 || f.h[0] != 0))
      bad = mismatch("an unchanged copy gone home", bytes);
    else if (f.words[2] || f.words[3] || f.words[4])
      bad = mismatch("the sums not left zero", bytes);
  }
  for (result *r : {&f, &t}) {
    free(r->c);
    free(r->h);
    free(r->o);
  }
  cuMemFreeHost(b.found);
  cuMemFree(b.c);
  cuMemFree(b.o);
  cuMemFree(b.h);
  cuMemFree(b.words);
  cuMemFree(b.changed);
  return bad;
}

int main(void)
{
  int n = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1) {
    printf("gpu-kernels: skipped: no GPU\n");
    return 77;
  }
  CUdevice dev;
  CUcontext ctx;
  CUmodule m;
  CU(cuDeviceGet(&dev, 0));
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  CU(cuModuleLoadData(&m, fingerprint_ptx));
  // A copy the span fills; one a few blocks walk; one of 1024 blocks
  // striding (20 MiB, a segment).
  const size_t sizes[] = {SPAN + 4096, 1u << 20, 20u << 20};
  for (size_t s : sizes)
    if (check(m, s))
      return 1;
  printf("gpu-kernels: result=match (3 sizes, 2 rounds each)\n");
  return 0;
}

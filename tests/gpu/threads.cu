/*
 * gpu-threads: several host threads, each with its own non-blocking stream,
 * allocating, launching and freeing at the same time, checked bit for bit
 * against a host reference.
 *
 * The main thread uploads one shared buffer that every thread reads. Each
 * thread t keeps a persistent buffer P_t for its whole life and, every
 * round r:
 *   allocates A and B (cudaMalloc, while the other threads do the same);
 *   fills A on the device (k_fill) and B from the host (cudaMemcpyAsync);
 *   P = step(P, A); P = pair(P, B, shared) (pointers in a by-value struct);
 *   waits for its stream and frees A and B.
 * At the end each thread copies P back and compares it with its reference.
 * The checksum hashes every thread's P in thread order.
 */
#include "gpu_common.h"
#include "gpu_ops.h"

#include <pthread.h>

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

struct worker {
  pthread_t tid;
  int t;
  unsigned long long rounds, seed;
  size_t n;
  const uint32_t *dshared; /* device */
  const uint32_t *hshared; /* host copy */
  pthread_barrier_t *start;
  uint64_t hash;           /* out: hash of P */
  long long bad;           /* out: first wrong index of P, or -1 */
};

static void *work(void *arg)
{
  worker *w = (worker *)arg;
  const size_t n = w->n, bytes = n * sizeof(uint32_t);
  const unsigned grid = grid_for(n);
  uint32_t *hp = (uint32_t *)xmalloc(bytes), *hb = (uint32_t *)xmalloc(bytes);
  uint32_t *back = (uint32_t *)xmalloc(bytes);
  cudaStream_t st;
  uint32_t *dp;

  CK(cudaSetDevice(0));
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  fill_u32(hp, n, w->seed * 1000003ull + 500 + w->t);
  CK(cudaMalloc(&dp, bytes));
  CK(cudaMemcpyAsync(dp, hp, bytes, cudaMemcpyHostToDevice, st));
  CK(cudaStreamSynchronize(st));
  pthread_barrier_wait(w->start);

  for (uint32_t r = 0; r < w->rounds; r++) {
    uint32_t *da, *db;
    uint32_t aseed = 100000u * (w->t + 1) + r, salt = op_salt(r, w->t);

    CK(cudaMalloc(&da, bytes));
    CK(cudaMalloc(&db, bytes));
    k_fill<<<grid, 256, 0, st>>>(da, n, aseed);
    CK_LAUNCH();
    fill_u32(hb, n, w->seed * 1000003ull + 7919ull * (w->t + 1) + r);
    CK(cudaMemcpyAsync(db, hb, bytes, cudaMemcpyHostToDevice, st));
    k_step<<<grid, 256, 0, st>>>(da, dp, n, salt);
    CK_LAUNCH();
    pair_args pa = { db, w->dshared, dp, n };
    k_pair<<<grid, 256, 0, st>>>(pa, salt + 1);
    CK_LAUNCH();

    /* The reference, while the GPU works; hb must outlive the copy. */
    for (size_t i = 0; i < n; i++) {
      hp[i] = op_step(hp[i], op_fill(i, aseed), salt);
      hp[i] = op_pair(hp[i], hb[i], w->hshared[i], salt + 1);
    }
    CK(cudaStreamSynchronize(st));
    CK(cudaFree(da));
    CK(cudaFree(db));
  }

  CK(cudaMemcpyAsync(back, dp, bytes, cudaMemcpyDeviceToHost, st));
  CK(cudaStreamSynchronize(st));
  w->hash = hash_bytes(HASH_INIT, back, bytes);
  w->bad = first_diff_u32(back, hp, n);
  CK(cudaFree(dp));
  CK(cudaStreamDestroy(st));
  free(hp);
  free(hb);
  free(back);
  return NULL;
}

int main(int argc, char **argv)
{
  unsigned long long threads = 4, rounds = 6, buf_mib = 64, seed = 1;
  const flag_t flags[] = {
    { "--threads", &threads, NULL, "host threads, one stream each" },
    { "--rounds", &rounds, NULL, "allocate/launch/free rounds per thread" },
    { "--buf-mib", &buf_mib, NULL, "MiB per buffer (each thread holds up to 3)" },
    { "--seed", &seed, NULL, "seed of the data" },
  };
  gpu_init(argv[0]);
  if (parse_flags(argc, argv, "threads allocating, launching and freeing concurrently", flags, 4))
    return gpu_check();
  if (threads < 1 || threads > 64 || rounds < 1 || buf_mib < 1)
    die("need 1 <= --threads <= 64, --rounds >= 1, --buf-mib >= 1 (%s)", "flags");

  const size_t n = buf_mib * MiB / sizeof(uint32_t), bytes = n * sizeof(uint32_t);
  /* The shared buffer, and P, A and B in every thread at once at most. */
  const unsigned long long footprint = (1 + 3 * threads) * (unsigned long long)bytes;
  double t0 = now_s();

  uint32_t *hshared = (uint32_t *)xmalloc(bytes), *dshared;
  fill_u32(hshared, n, seed * 1000003ull + 31337);
  CK(cudaMalloc(&dshared, bytes));
  CK(cudaMemcpy(dshared, hshared, bytes, cudaMemcpyHostToDevice));

  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, (unsigned)threads);
  worker *ws = (worker *)calloc(threads, sizeof *ws);
  if (!ws)
    die("out of host memory (%s)", "calloc");
  for (int t = 0; t < (int)threads; t++) {
    ws[t].t = t;
    ws[t].rounds = rounds;
    ws[t].seed = seed;
    ws[t].n = n;
    ws[t].dshared = dshared;
    ws[t].hshared = hshared;
    ws[t].start = &start;
    if (pthread_create(&ws[t].tid, NULL, work, &ws[t]) != 0)
      die("pthread_create failed (%s)", "threads");
  }
  uint64_t h = HASH_INIT;
  int bad_t = -1;
  for (int t = 0; t < (int)threads; t++) {
    pthread_join(ws[t].tid, NULL);
    h = hash_bytes(h, &ws[t].hash, sizeof ws[t].hash);
    if (bad_t < 0 && ws[t].bad >= 0)
      bad_t = t;
  }
  pthread_barrier_destroy(&start);
  CK(cudaFree(dshared));
  CK_SYNC();

  if (bad_t >= 0) {
    printf("%s: result=MISMATCH thread=%d index=%lld checksum=0x%016llx footprint=%llu\n", g_prog,
           bad_t, ws[bad_t].bad, (unsigned long long)h, footprint);
    return 1;
  }
  printf("%s: result=match checksum=0x%016llx footprint=%llu threads=%llu rounds=%llu "
         "buf_mib=%llu time_s=%.2f\n",
         g_prog, (unsigned long long)h, footprint, threads, rounds, buf_mib, now_s() - t0);
  return 0;
}

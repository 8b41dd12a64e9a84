/*
 * bench-overhead: the real time spillway adds to a kernel launch when
 * nothing is demoted, measured against the same program without the
 * preload, in one run.
 *
 *   bench-overhead LIBSPILLWAY [LAUNCHES] [ROUNDS]
 *
 * It runs itself as a child in four modes, alternating them for ROUNDS
 * rounds so that machine noise hits all alike, and reports the median
 * nanoseconds per launch call of each:
 *   bare      no preload, an ordinary cuMemAlloc buffer
 *   idle      preloaded, nothing tracked (the pass-through path)
 *   bare-vmm  no preload, the program maps a VMM buffer itself, as
 *             spillway would: the driver's side of a tracked launch
 *   tracked   preloaded, the kernel's argument points into a tracked
 *             allocation that stays resident (gate, layout, scan, stamp)
 * spillway's cost is idle - bare and tracked - bare-vmm.
 * The time measured is that of the cuLaunchKernel call on the host; the
 * (simulated) GPU's work is drained between batches and not counted.
 * The driver's environment (LD_LIBRARY_PATH) must reach libcuda.so.1.
 */

#include <cuda.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCH 256

static void die(const char *what, CUresult r)
{
    const char *n = "?";
    cuGetErrorName(r, &n);
    fprintf(stderr, "bench-overhead: %s: %s\n", what, n);
    exit(2);
}
#define CK(call)                          \
    do {                                  \
        CUresult r_ = (call);             \
        if (r_ != CUDA_SUCCESS)           \
            die(#call, r_);               \
    } while (0)

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A 4 MiB VMM buffer mapped by hand, the way spillway tracks one. */
static CUdeviceptr vmm_buffer(CUdevice dev)
{
    CUmemAllocationProp p = {.type = CU_MEM_ALLOCATION_TYPE_PINNED};
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    CUmemAccessDesc a = {.location = p.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    size_t size = 4u << 20;
    CK(cuMemAddressReserve(&va, size, 0, 0, 0));
    CK(cuMemCreate(&h, size, &p, 0));
    CK(cuMemMap(va, size, 0, h, 0));
    CK(cuMemSetAccess(va, size, &a, 1));
    return va;
}

/* The child: launches `launches` tiny kernels and prints ns per launch.
 * mode: "plain" (64 KiB cuMemAlloc), "tracked" (4 MiB cuMemAlloc), "vmm";
 * for instruction counts only (docs/benchmarks.md, "Launch overhead"), run as
 * --child MODE N under the environment given there: "inplace" (the
 * argument points into a host chunk among 100 allocations; "inplace-N"
 * among N, for how the cost grows with the table), "arena"
 * (into the start of an 8 GiB allocation) and "allocs" (600 allocations
 * first, for the cost of choosing victims). */
static int child(long launches, const char *mode)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fill;
    CUstream s;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, "simgpu-builtin"));
    CK(cuModuleGetFunction(&fill, mod, "sg_fill_u32"));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    /* 4 MiB: above SPILLWAY_MIN_ALLOC, tracked; 64 KiB: passes through. */
    CUdeviceptr buf;
    if (strcmp(mode, "vmm") == 0) {
        buf = vmm_buffer(dev);
    } else if (strcmp(mode, "inplace") == 0 || strncmp(mode, "inplace-", 8) == 0) {
        /* A 4 MiB chunk, allocated first, then 99 of 2 MiB (inplace-N:
         * N - 1) that push it out to host memory: the kernel reads it in
         * place. */
        int others = mode[7] == '-' ? atoi(mode + 8) - 1 : 99;
        CK(cuMemAlloc(&buf, 4u << 20));
        for (int i = 0; i < others; i++) {
            CUdeviceptr other;
            CK(cuMemAlloc(&other, 2u << 20));
        }
    } else if (strcmp(mode, "allocs") == 0) {
        /* 600 allocations of 2 MiB: over a GPU budget, each one demotes. */
        for (int i = 0; i < 600; i++)
            CK(cuMemAlloc(&buf, 2u << 20));
    } else if (strcmp(mode, "arena") == 0) {
        /* An 8 GiB arena of 2 MiB chunks, a vLLM KV cache's shape. */
        CK(cuMemAlloc(&buf, (size_t)8 << 30));
    } else {
        CK(cuMemAlloc(&buf, strcmp(mode, "tracked") == 0 ? 4u << 20 : 64u << 10));
    }
    uint32_t v = 7;
    uint64_t n = 1;
    void *args[] = {&buf, &v, &n};
    uint64_t spent = 0;
    for (long done = 0; done < launches; done += BATCH) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < BATCH; i++)
            CK(cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
        spent += now_ns() - t0;
        CK(cuStreamSynchronize(s)); /* drain, outside the timed part */
    }
    long total = (launches + BATCH - 1) / BATCH * BATCH;
    printf("%.1f\n", (double)spent / (double)total);
    return 0;
}

/* Runs one child and returns its ns per launch (negative on failure). */
static double run(const char *self, const char *preload, const char *mode, long launches)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        if (preload)
            setenv("LD_PRELOAD", preload, 1);
        else
            unsetenv("LD_PRELOAD");
        char n[32];
        snprintf(n, sizeof n, "%ld", launches);
        execl(self, self, "--child", mode, n, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char buf[64] = "";
    ssize_t got = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    if (got <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    return atof(buf);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--child") == 0)
        return child(atol(argv[3]), argv[2]);
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: bench-overhead LIBSPILLWAY [LAUNCHES] [ROUNDS]\n");
        return 2;
    }
    const char *lib = argv[1];
    long launches = argc > 2 ? atol(argv[2]) : 200000;
    int rounds = argc > 3 ? atoi(argv[3]) : 7;
    if (access(lib, R_OK) != 0 || launches < BATCH || rounds < 1 || rounds > 101) {
        fprintf(stderr, "bench-overhead: need a readable LIBSPILLWAY, LAUNCHES >= %d, "
                        "1 <= ROUNDS <= 101\n", BATCH);
        return 2;
    }
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return 2;
    self[len] = '\0';
    enum { BARE, IDLE, BARE_VMM, TRACKED, NMODES };
    const char *names[NMODES] = {"bare", "idle", "bare-vmm", "tracked"};
    const char *modes[NMODES] = {"plain", "plain", "vmm", "tracked"};
    const bool preloaded[NMODES] = {false, true, false, true};
    double t[NMODES][101];
    for (int r = 0; r < rounds; r++)
        for (int m = 0; m < NMODES; m++) {
            t[m][r] = run(self, preloaded[m] ? lib : NULL, modes[m], launches);
            if (t[m][r] < 0) {
                fprintf(stderr, "bench-overhead: the %s run failed\n", names[m]);
                return 2;
            }
        }
    double med[NMODES];
    for (int m = 0; m < NMODES; m++) {
        qsort(t[m], (size_t)rounds, sizeof t[m][0], cmp);
        med[m] = t[m][rounds / 2];
    }
    /* Each preloaded mode is compared with the bare mode whose driver
     * work is the same. */
    const int base[NMODES] = {BARE, BARE, BARE_VMM, BARE_VMM};
    printf("launch overhead, median of %d rounds x %ld launches (ns per cuLaunchKernel call)\n",
           rounds, launches);
    printf("%-10s %10s %10s %12s %8s\n", "mode", "ns/launch", "against", "added (ns)", "ratio");
    for (int m = 0; m < NMODES; m++)
        printf("%-10s %10.1f %10s %12.1f %8.3f\n", names[m], med[m], names[base[m]],
               med[m] - med[base[m]], med[m] / med[base[m]]);
    return 0;
}

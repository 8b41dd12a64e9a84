/*
 * swt-proc: spillway and the rest of the process. One mode per run:
 *
 *   scribble   allocates 8 MiB, then overwrites every counter of its own
 *              live stats file ($SPILLWAY_STATS_DIR/<pid>.stats) with
 *              zeros, as any process of the user could, then allocates
 *              16 MiB more. The test runs it under a GPU budget, which
 *              must still hold (simgpu's device_bytes_peak). Prints
 *              "scribbled=1".
 *   fork       allocates two 4 MiB buffers, then forks a child that exits
 *              normally (its exit handlers run) after calling CUDA:
 *              cuMemAlloc, cuMemGetAddressRange and cuMemFree on the
 *              parent's buffer, cuCtxSynchronize. The child prints
 *              "child: alloc=N range=N sync=N free=N" (the CUresults) and
 *              dies by SIGALRM if a call hangs for 10 s. The parent then
 *              prints "parent_stats=0|1" (its own stats file is still
 *              there), "parent_pid=N", "report_before_exit=0|1" (whether
 *              $SPILLWAY_REPORT exists: only the parent's exit may write
 *              it), and uses and frees its buffers.
 *   forkrace   the same child, forked 20 times while a second thread
 *              allocates two 4 MiB buffers, writes and frees them in a
 *              loop, so that fork often finds spillway's locks held.
 *   forkexec   allocates three 4 MiB buffers, each filled with its own
 *              byte, then forks a child that execs this program in mode
 *              fresh, still preloaded (the environment is inherited), with
 *              SPILLWAY_REPORT and SIMGPU_REPORT moved to <path>.child so
 *              the two processes' reports can be told apart. After the
 *              child exited 0 the parent prints "child_pid=N",
 *              "parent_pid=N", "parent_stats=0|1", then checks every byte
 *              of its buffers ("parent_data=ok" or exit 1) and frees them.
 *   fresh      what the exec'd child runs: a process of its own that
 *              allocates two 4 MiB buffers, fills and checks them, and
 *              prints "fresh: ok stats=0|1" (its own stats file exists).
 * Exits 0, 1 when a child did not exit 0 (it says how) or a byte was
 * wrong, 2 on a CUDA error in the parent.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

#define MIB (1024u * 1024u)
#define HEADER_BYTES 72 /* spillway/stats.h: magic .. seq; the counters follow */

static int fail(const char *call, CUresult r)
{
    fprintf(stderr, "proc: CUDA error %d in %s\n", (int)r, call);
    return 2;
}

#define CHECK(call)                               \
    do {                                          \
        CUresult r_ = (call);                     \
        if (r_ != CUDA_SUCCESS)                   \
            return fail(#call, r_);               \
    } while (0)

static int stats_path(char *path, size_t len)
{
    const char *dir = getenv("SPILLWAY_STATS_DIR");
    return dir && snprintf(path, len, "%s/%d.stats", dir, (int)getpid()) < (int)len ? 0 : -1;
}

static int scribble(void)
{
    CUdeviceptr a, b, c;
    CHECK(cuMemAlloc(&a, 8 * MIB));
    CHECK(cuMemsetD8(a, 1, 8 * MIB));
    char path[4096];
    int fd = stats_path(path, sizeof path) == 0 ? open(path, O_RDWR) : -1;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= HEADER_BYTES) {
        fprintf(stderr, "proc: no stats file to scribble on\n");
        return 2;
    }
    char *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return 2;
    memset(m + HEADER_BYTES, 0, (size_t)st.st_size - HEADER_BYTES);
    munmap(m, (size_t)st.st_size);
    close(fd);
    printf("scribbled=1\n");
    CHECK(cuMemAlloc(&b, 8 * MIB));
    CHECK(cuMemsetD8(b, 2, 8 * MIB));
    CHECK(cuMemAlloc(&c, 8 * MIB));
    CHECK(cuMemsetD8(c, 3, 8 * MIB));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemFree(a));
    CHECK(cuMemFree(b));
    CHECK(cuMemFree(c));
    return 0;
}

/* A child forked while another thread ran: LeakSanitizer's check at exit
 * there locks the sanitizer's allocator, whose lock that thread may have
 * held at the fork, and waits forever (the sanitizer allocator is not
 * fork-safe with threads: google/sanitizers#836; seen here with gcc 12's
 * libasan, stuck in __lsan::LockAllocator under __cxa_finalize). Such a
 * child skips the leak check; LeakSanitizer asks this hook, and nothing
 * else does. */
static bool threads_at_fork;

int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return threads_at_fork;
}

/* The child's part: every call must come back (alarm) with the driver's
 * answer. exit, not _exit: the exit handlers must run. */
static void child(CUdeviceptr parents, bool race)
{
    threads_at_fork = race;
    alarm(10);
    CUdeviceptr p = 0, base = 0;
    size_t size = 0;
    CUresult ra = cuMemAlloc(&p, 4 * MIB);
    CUresult rr = cuMemGetAddressRange(&base, &size, parents);
    CUresult rs = cuCtxSynchronize();
    CUresult rf = cuMemFree(parents);
    printf("child: alloc=%d range=%d sync=%d free=%d\n", (int)ra, (int)rr, (int)rs, (int)rf);
    exit(0);
}

static int run_child(CUdeviceptr parents, bool race)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0)
        child(parents, race);
    int status;
    if (waitpid(pid, &status, 0) != pid)
        return 1;
    if (WIFSIGNALED(status)) {
        printf("proc: child killed by signal %d%s\n", WTERMSIG(status),
               WTERMSIG(status) == SIGALRM ? " (a CUDA call hung)" : "");
        return 1;
    }
    return WEXITSTATUS(status) == 0 ? 0 : 1;
}

static atomic_bool stop;

static void *churn(void *ctx)
{
    if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return NULL;
    /* Two at a time: under a budget of less than 8 MiB the second one
     * demotes, each time round. */
    while (!atomic_load(&stop)) {
        CUdeviceptr p, q;
        if (cuMemAlloc(&p, 4 * MIB) != CUDA_SUCCESS)
            break;
        if (cuMemAlloc(&q, 4 * MIB) != CUDA_SUCCESS) {
            cuMemFree(p);
            break;
        }
        cuMemsetD8(p, 7, 4 * MIB);
        cuMemsetD8(q, 8, 4 * MIB);
        cuMemFree(q);
        cuMemFree(p);
    }
    return NULL;
}

static int forks(bool race)
{
    CUdeviceptr a, b;
    CHECK(cuMemAlloc(&a, 4 * MIB));
    CHECK(cuMemAlloc(&b, 4 * MIB));
    CHECK(cuMemsetD8(a, 1, 4 * MIB));
    CHECK(cuMemsetD8(b, 2, 4 * MIB));
    CHECK(cuCtxSynchronize());
    int bad = 0;
    if (race) {
        pthread_t t;
        CUcontext ctx;
        CHECK(cuCtxGetCurrent(&ctx));
        if (pthread_create(&t, NULL, churn, ctx) != 0)
            return 2;
        for (int i = 0; i < 20 && !bad; i++) {
            bad |= run_child(a, true);
            usleep(1000);
        }
        atomic_store(&stop, true);
        pthread_join(t, NULL);
    } else {
        bad = run_child(a, false);
    }
    char path[4096];
    struct stat st;
    printf("parent_stats=%d\n", stats_path(path, sizeof path) == 0 && stat(path, &st) == 0);
    printf("parent_pid=%d\n", (int)getpid());
    const char *report = getenv("SPILLWAY_REPORT");
    printf("report_before_exit=%d\n", report && stat(report, &st) == 0);
    CHECK(cuMemsetD8(a, 3, 4 * MIB));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemFree(a));
    CHECK(cuMemFree(b));
    return bad;
}

/* Every byte of n bytes at p equals v. */
static int check_bytes(CUdeviceptr p, size_t n, unsigned char v, const char *what)
{
    unsigned char *h = malloc(n);
    if (!h)
        return 2;
    CUresult r = cuMemcpyDtoH(h, p, n);
    size_t i = 0;
    while (r == CUDA_SUCCESS && i < n && h[i] == v)
        i++;
    free(h);
    if (r != CUDA_SUCCESS)
        return fail("cuMemcpyDtoH", r);
    if (i < n) {
        printf("proc: %s byte %zu is wrong\n", what, i);
        return 1;
    }
    return 0;
}

static int fresh(void)
{
    CUdeviceptr p[2];
    for (int i = 0; i < 2; i++) {
        CHECK(cuMemAlloc(&p[i], 4 * MIB));
        CHECK(cuMemsetD8(p[i], (unsigned char)(0x50 + i), 4 * MIB));
    }
    int bad = 0;
    for (int i = 0; i < 2 && !bad; i++)
        bad = check_bytes(p[i], 4 * MIB, (unsigned char)(0x50 + i), "fresh buffer");
    for (int i = 0; i < 2; i++)
        CHECK(cuMemFree(p[i]));
    char path[4096];
    struct stat st;
    if (!bad)
        printf("fresh: ok stats=%d\n", stats_path(path, sizeof path) == 0 && stat(path, &st) == 0);
    return bad;
}

/* In the child: the reports move to <path>.child, then this program again. */
static void exec_fresh(void)
{
    static const char *const vars[] = {"SPILLWAY_REPORT", "SIMGPU_REPORT"};
    char moved[2][4096];
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(vars[i]);
        if (v && snprintf(moved[i], sizeof moved[i], "%s.child", v) < (int)sizeof moved[i])
            setenv(vars[i], moved[i], 1);
    }
    execl("/proc/self/exe", "swt-proc", "fresh", (char *)NULL);
    _exit(127);
}

static int forkexec(void)
{
    CUdeviceptr p[3];
    for (int i = 0; i < 3; i++) {
        CHECK(cuMemAlloc(&p[i], 4 * MIB));
        CHECK(cuMemsetD8(p[i], (unsigned char)(0x10 + i), 4 * MIB));
    }
    CHECK(cuCtxSynchronize());
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0)
        exec_fresh();
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("proc: the exec'd child failed (status 0x%x)\n", status);
        return 1;
    }
    char path[4096];
    struct stat st;
    printf("child_pid=%d\nparent_pid=%d\n", (int)pid, (int)getpid());
    printf("parent_stats=%d\n", stats_path(path, sizeof path) == 0 && stat(path, &st) == 0);
    int bad = 0;
    for (int i = 0; i < 3 && !bad; i++)
        bad = check_bytes(p[i], 4 * MIB, (unsigned char)(0x10 + i), "parent buffer");
    if (!bad)
        printf("parent_data=ok\n");
    for (int i = 0; i < 3; i++)
        CHECK(cuMemFree(p[i]));
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: swt-proc scribble|fork|forkrace|forkexec|fresh\n");
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    if (strcmp(argv[1], "scribble") == 0)
        return scribble();
    if (strcmp(argv[1], "fork") == 0)
        return forks(false);
    if (strcmp(argv[1], "forkrace") == 0)
        return forks(true);
    if (strcmp(argv[1], "forkexec") == 0)
        return forkexec();
    if (strcmp(argv[1], "fresh") == 0)
        return fresh();
    fprintf(stderr, "swt-proc: unknown mode %s\n", argv[1]);
    return 2;
}

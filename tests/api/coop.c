/*
 * api-coop: a program that cooperates with spillway through
 * include/spillway.h only (the inline loader; never linked with
 * libspillway). Run with and without spillway preloaded, on simgpu; it
 * prints what it saw, one "key=value" per line, for test-api.sh to judge.
 *
 *   api-coop budget   four 8 MiB allocations, filled; the GPU budget is
 *                     then cut to 8 MiB at run time. Prints the answer
 *                     (budget_rc), demotions and device_bytes before and
 *                     after, and checks that every byte survived.
 *   api-coop keep     the first of four allocations is hinted
 *                     KEEP_RESIDENT; the budget is cut to 0 and a fifth
 *                     allocation made under that pressure. Prints the
 *                     answers and device_bytes (what stayed), and the
 *                     answers to wrong hints, which must change nothing.
 *   api-coop wait     one allocation, then "ready" and the stats file's
 *                     pid; waits for a line on stdin (the live file is
 *                     read meanwhile by api-statsread), then exits.
 *
 * Without spillway every call answers SPILLWAY_ENOTLOADED and the program
 * runs on: "loaded=0". Exit 0, 1 when a byte was lost, 2 on a CUDA error
 * or a bad argument.
 */
#include <spillway.h>

#include <cuda.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1024u * 1024u)
#define ALLOC (8 * MIB)
#define N 4

static int cuda_fail(const char *call, CUresult r)
{
    fprintf(stderr, "api-coop: CUDA error %d in %s\n", (int)r, call);
    exit(2);
}
#define CU(call)                          \
    do {                                  \
        CUresult r_ = (call);             \
        if (r_ != CUDA_SUCCESS)           \
            cuda_fail(#call, r_);         \
    } while (0)

/* A statistic by name; 0 when spillway is not loaded. */
static uint64_t stat(const char *name)
{
    uint64_t v = 0;
    spillway_stat(name, &v, NULL);
    return v;
}

/* Fills allocation i with bytes that say which allocation they are in. */
static void fill(CUdeviceptr p, int i)
{
    unsigned char *buf = malloc(ALLOC);
    for (size_t k = 0; k < ALLOC; k++)
        buf[k] = (unsigned char)(i * 31 + k % 251);
    CU(cuMemcpyHtoD(p, buf, ALLOC));
    free(buf);
}

static int intact(CUdeviceptr p, int i)
{
    unsigned char *buf = malloc(ALLOC);
    CU(cuMemcpyDtoH(buf, p, ALLOC));
    int ok = 1;
    for (size_t k = 0; k < ALLOC && ok; k++)
        ok = buf[k] == (unsigned char)(i * 31 + k % 251);
    free(buf);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: api-coop budget|keep|wait\n");
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    CU(cuInit(0));
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));

    spillway_info_t info = {.size = sizeof info};
    int q = spillway_query(&info);
    printf("loaded=%d\n", q != SPILLWAY_ENOTLOADED);
    if (q == SPILLWAY_OK)
        printf("api_version=%" PRIu32 "\nchunk=%" PRIu64 "\ngpu_budget_none=%d\n",
               info.api_version, info.chunk, info.gpu_budget == SPILLWAY_BUDGET_NONE);

    CUdeviceptr p[N + 1];
    int lost = 0;
    if (strcmp(argv[1], "wait") == 0) {
        CU(cuMemAlloc(&p[0], ALLOC));
        printf("ready\npid=%d\n", (int)getpid());
        fflush(stdout);
        char line[16];
        if (!fgets(line, sizeof line, stdin))
            line[0] = '\0';
        CU(cuMemFree(p[0]));
        return 0;
    }
    for (int i = 0; i < N; i++) {
        CU(cuMemAlloc(&p[i], ALLOC));
        fill(p[i], i);
    }
    if (strcmp(argv[1], "budget") == 0) {
        printf("demotions_before=%" PRIu64 "\ndevice_before=%" PRIu64 "\n", stat("demotions"),
               stat("device_bytes"));
        printf("budget_rc=%d\n", spillway_set_budgets(ALLOC, SPILLWAY_BUDGET_KEEP));
        printf("demotions_after=%" PRIu64 "\ndevice_after=%" PRIu64 "\n", stat("demotions"),
               stat("device_bytes"));
        q = spillway_query(&info);
        if (q == SPILLWAY_OK)
            printf("gpu_budget=%" PRIu64 "\n", info.gpu_budget);
    } else if (strcmp(argv[1], "keep") == 0) {
        /* Wrong hints first: each must be refused and change nothing. */
        printf("hint_untracked=%d\n", spillway_hint(1, MIB, SPILLWAY_HINT_KEEP_RESIDENT));
        printf("hint_overlap=%d\n", spillway_hint(p[0] + MIB, ALLOC, SPILLWAY_HINT_KEEP_RESIDENT));
        printf("hint_bad_value=%d\n", spillway_hint(p[0], ALLOC, 99));
        printf("hint_empty=%d\n", spillway_hint(p[0], 0, SPILLWAY_HINT_KEEP_RESIDENT));
        printf("hint_stream=%d\n", spillway_hint(p[1], ALLOC, SPILLWAY_HINT_STREAM));
        printf("hint_keep=%d\n", spillway_hint(p[0], ALLOC, SPILLWAY_HINT_KEEP_RESIDENT));
        printf("phase_rc=%d\n", spillway_phase());
        printf("budget_rc=%d\n", spillway_set_budgets(0, SPILLWAY_BUDGET_KEEP));
        /* More pressure: a new allocation finds no room and no victim. */
        CU(cuMemAlloc(&p[N], ALLOC));
        fill(p[N], N);
        printf("device_after=%" PRIu64 "\nhost_after=%" PRIu64 "\n", stat("device_bytes"),
               stat("host_bytes"));
        printf("unhint_rc=%d\n", spillway_hint(p[0], ALLOC, SPILLWAY_HINT_NONE));
        printf("budget_again_rc=%d\n", spillway_set_budgets(0, SPILLWAY_BUDGET_KEEP));
        printf("device_unhinted=%" PRIu64 "\n", stat("device_bytes"));
        lost += !intact(p[N], N);
        CU(cuMemFree(p[N]));
    } else {
        fprintf(stderr, "api-coop: unknown mode %s\n", argv[1]);
        return 2;
    }
    for (int i = 0; i < N; i++) {
        lost += !intact(p[i], i);
        CU(cuMemFree(p[i]));
    }
    printf("lost=%d\n", lost);
    CU(cuDevicePrimaryCtxRelease(dev));
    return lost ? 1 : 0;
}

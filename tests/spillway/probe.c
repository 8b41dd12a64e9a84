/*
 * swt-probe: what a CUDA process sees of spillway from inside. After
 * cuInit and a current context it prints, one per line:
 *   meminfo_free=N, meminfo_total=N   cuMemGetInfo's answer
 *   own_stats=0|1       whether $SPILLWAY_STATS_DIR/<pid>.stats exists
 *   default_stats=0|1   whether <pid>.stats exists in the default stats
 *                       directory ($XDG_RUNTIME_DIR/spillway or
 *                       /tmp/spillway-<uid>), where it must not be when
 *                       SPILLWAY_STATS_DIR names another
 * and "probe: done". Exits 0, or 2 on a CUDA error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cuda.h>

static int exists(const char *dir)
{
    char path[4096];
    struct stat st;
    if (!dir || !dir[0])
        return 0;
    snprintf(path, sizeof path, "%s/%d.stats", dir, (int)getpid());
    return stat(path, &st) == 0;
}

static int fail(const char *call, CUresult r)
{
    const char *name = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
        name = "unknown CUresult";
    fprintf(stderr, "probe: CUDA error %s in %s\n", name, call);
    return 2;
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    size_t free_b = 0, total = 0;
    CUresult r;

    if ((r = cuInit(0)) != CUDA_SUCCESS)
        return fail("cuInit", r);
    if ((r = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS)
        return fail("cuDeviceGet", r);
    if ((r = cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS)
        return fail("cuDevicePrimaryCtxRetain", r);
    if ((r = cuCtxSetCurrent(ctx)) != CUDA_SUCCESS)
        return fail("cuCtxSetCurrent", r);
    if ((r = cuMemGetInfo(&free_b, &total)) != CUDA_SUCCESS)
        return fail("cuMemGetInfo", r);
    printf("meminfo_free=%zu\nmeminfo_total=%zu\n", free_b, total);

    char def[4096];
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int in_default = 0;
    if (xdg && xdg[0]) {
        snprintf(def, sizeof def, "%s/spillway", xdg);
        in_default |= exists(def);
    }
    snprintf(def, sizeof def, "/tmp/spillway-%u", (unsigned)getuid());
    in_default |= exists(def);
    printf("own_stats=%d\ndefault_stats=%d\n", exists(getenv("SPILLWAY_STATS_DIR")), in_default);
    printf("probe: done\n");
    cuDevicePrimaryCtxRelease(dev);
    return 0;
}

/*
 * copystream: the prefetch window must wait for every application stream,
 * including a non-blocking stream that only ever copies.
 *
 * Ten 16 MiB buffers (big enough that the cost model streams them) are read in order, again and again, by a checksum
 * kernel on stream A, so spillway learns the loop and streams them through
 * its window. Meanwhile stream B (non-blocking, never used for a launch)
 * copies into the buffer A reads next. If a commit point did not wait for
 * B, it would remap a buffer under a queued copy: simgpu records that as a
 * hazard, and the copied bytes could be lost. The program checks every
 * checksum against the host's own and exits 0 only if all match.
 * Exit: 0 ok, 1 wrong data, 2 CUDA error.
 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBUF 10
#define BYTES (16u << 20)
#define ROUNDS 6

#define CK(call)                                                           \
    do {                                                                   \
        CUresult r_ = (call);                                              \
        if (r_ != CUDA_SUCCESS) {                                          \
            const char *n_ = "?";                                          \
            cuGetErrorName(r_, &n_);                                       \
            fprintf(stderr, "copystream: %s: %s\n", #call, n_);            \
            exit(2);                                                       \
        }                                                                  \
    } while (0)

static uint64_t fnv(const unsigned char *p, size_t n)
{
    uint64_t v = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        v = (v ^ p[i]) * 0x100000001b3ull;
    return v;
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction sum;
    CUstream a, b;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, "simgpu-builtin"));
    CK(cuModuleGetFunction(&sum, mod, "sg_checksum_u64"));
    CK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));

    CUdeviceptr buf[NBUF], out;
    unsigned char *host[NBUF], *pin;
    CK(cuMemAlloc(&out, 8 * NBUF));
    CK(cuMemAllocHost((void **)&pin, BYTES));
    for (int i = 0; i < NBUF; i++) {
        host[i] = malloc(BYTES);
        if (!host[i])
            return 2;
        memset(host[i], i + 1, BYTES);
        CK(cuMemAlloc(&buf[i], BYTES));
        CK(cuMemcpyHtoD(buf[i], host[i], BYTES));
    }
    int bad = 0;
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < NBUF; i++) {
            /* B rewrites the next buffer while A reads this one. */
            int next = (i + 1) % NBUF;
            memset(pin, (r * NBUF + i) & 0xff, BYTES);
            memcpy(host[next], pin, BYTES);
            CK(cuMemcpyHtoDAsync(buf[next], pin, BYTES, b));
            CUdeviceptr o = out + 8 * (uint64_t)i;
            uint64_t n = BYTES;
            void *args[] = {&buf[i], &n, &o};
            CK(cuLaunchKernel(sum, 1, 1, 1, 1, 1, 1, 0, a, args, NULL));
            uint64_t got;
            CK(cuMemcpyDtoHAsync(&got, o, 8, a));
            CK(cuStreamSynchronize(a));
            /* The buffer A read was written by B one step earlier, and
             * that copy was waited for below. */
            if (got != fnv(host[i], BYTES))
                bad++;
            CK(cuStreamSynchronize(b));
        }
    printf("copystream: %s (%d wrong checksums)\n", bad ? "mismatch" : "ok", bad);
    return bad ? 1 : 0;
}

/*
 * appstreams: the prefetch window must order every application stream
 * after its copies, whatever the stream does and whenever it was made.
 *
 * Ten 16 MiB buffers (big enough that the cost model streams them) are
 * read in order, again and again, by a checksum kernel on stream A, so
 * spillway learns the loop and streams them through its window. Then, by
 * mode:
 *   copy  stream B (non-blocking, never used for a launch) copies into the
 *         buffer A reads next. If a commit point did not wait for B, it
 *         would remap a buffer under a queued copy: simgpu records that as
 *         a hazard, and the copied bytes could be lost.
 *   late  A reads only every other buffer; right after each of A's
 *         launches, a stream made just then (non-blocking) reads the next
 *         one: the buffer the window has just begun to copy in ahead. If
 *         that stream did not wait for the window's copies, it would read
 *         the slot before the bytes arrive: simgpu records that as a race,
 *         and the checksum could be wrong.
 *   coop  A launches through cuLaunchCooperativeKernel, and nothing else
 *         happens: the window is used only if those launches are scanned.
 *   idle  late, after 70 idle non-blocking streams were made first: the
 *         window must order streams past any fixed number (it kept 64,
 *         and ordered none after those).
 *   destroy  late, but the new stream's read waits 60 ms behind a host
 *         function, and the stream is destroyed at once, the read still
 *         queued (cuStreamDestroy does not wait): the next commit must
 *         wait for it before it remaps what it reads.
 *   flip  right after each of A's launches, the sign bits of two fp64
 *         words of the buffer it read (now in a window slot) are flipped,
 *         at different words each time. The buffer leaves the slot later:
 *         if its fingerprint missed the change (the old sum did, half the
 *         time), it went home unwritten and the next round's checksum is
 *         wrong.
 * The program checks every checksum against the host's own and exits 0
 * only if all match.
 * Usage: appstreams copy|green|late|coop|idle|destroy|flip. It prints how many
 * times it waited itself (syncs), for appstreams.sh to count spillway's
 * waits. Exit: 0 ok, 1 wrong data, 2 CUDA error or
 * usage.
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBUF 10
#define BYTES (16u << 20)
#define ROUNDS 6

#define CK(call)                                                           \
    do {                                                                   \
        CUresult r_ = (call);                                              \
        if (r_ != CUDA_SUCCESS) {                                          \
            const char *n_ = "?";                                          \
            cuGetErrorName(r_, &n_);                                       \
            fprintf(stderr, "appstreams: %s: %s\n", #call, n_);            \
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

static int syncs; /* the program's own waits */

/* The late mode's second read: a stream made now reads buf. */
static int read_on_new_stream(CUfunction sum, CUdeviceptr buf, CUdeviceptr o, uint64_t want)
{
    CUstream c;
    CK(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
    uint64_t n = BYTES, got;
    void *args[] = {&buf, &n, &o};
    CK(cuLaunchKernel(sum, 1, 1, 1, 1, 1, 1, 0, c, args, NULL));
    CK(cuMemcpyDtoHAsync(&got, o, 8, c));
    CK(cuStreamSynchronize(c));
    syncs++;
    CK(cuStreamDestroy(c));
    return got != want;
}

/* A stream of a green context over all of dev's SMs. */
static void green_stream(CUdevice dev, CUstream *s)
{
    CUdevResource sms;
    CUdevResourceDesc desc;
    CUgreenCtx green;
    CK(cuDeviceGetDevResource(dev, &sms, CU_DEV_RESOURCE_TYPE_SM));
    CK(cuDevResourceGenerateDesc(&desc, &sms, 1));
    CK(cuGreenCtxCreate(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    CK(cuGreenCtxStreamCreate(s, green, CU_STREAM_NON_BLOCKING, 0));
}

/* Keeps a stream busy for a while, so its later work is still queued
 * when the host moves on. */
static void CUDA_CB hold(void *arg)
{
    (void)arg;
    nanosleep(&(struct timespec){.tv_nsec = 60 * 1000 * 1000}, NULL);
}

/* The destroy mode's: a stream made now reads buf into o behind a 60 ms
 * wait, and is destroyed with that read still queued; o is checked at the
 * end. */
static void read_and_destroy(CUfunction sum, CUdeviceptr buf, CUdeviceptr o)
{
    CUstream c;
    CK(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
    uint64_t n = BYTES;
    void *args[] = {&buf, &n, &o};
    CK(cuLaunchHostFunc(c, hold, NULL));
    CK(cuLaunchKernel(sum, 1, 1, 1, 1, 1, 1, 0, c, args, NULL));
    CK(cuStreamDestroy(c));
}

/* Negates two fp64 values of buf (byte 7 of a word holds its sign), and
 * the same in host, its expected content. */
static void flip_signs(CUdeviceptr buf, unsigned char *host, int r, int i)
{
    uint64_t words = BYTES / 8, a = ((uint64_t)r * 7919 + (uint64_t)i * 104729) % words;
    uint64_t pair[2] = {a, (a + 1 + (uint64_t)r * 131 + (uint64_t)i * 17) % words};
    for (int k = 0; k < 2; k++) {
        unsigned char *sign = host + 8 * pair[k] + 7;
        *sign ^= 0x80;
        CK(cuMemsetD8(buf + 8 * pair[k] + 7, *sign, 1));
    }
}

int main(int argc, char **argv)
{
    bool idle = argc == 2 && strcmp(argv[1], "idle") == 0;
    bool destroy = argc == 2 && strcmp(argv[1], "destroy") == 0;
    bool late = (argc == 2 && strcmp(argv[1], "late") == 0) || idle || destroy;
    bool coop = argc == 2 && strcmp(argv[1], "coop") == 0;
    bool green = argc == 2 && strcmp(argv[1], "green") == 0;
    bool copy = (argc == 2 && strcmp(argv[1], "copy") == 0) || green;
    bool flip = argc == 2 && strcmp(argv[1], "flip") == 0;
    if (!late && !coop && !copy && !flip) {
        fprintf(stderr, "usage: appstreams copy|green|late|coop|idle|destroy|flip\n");
        return 2;
    }
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
    CUstream idlers[70];
    for (int i = 0; idle && i < 70; i++)
        CK(cuStreamCreate(&idlers[i], CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    if (green)
        green_stream(dev, &b);
    else
        CK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));

    CUdeviceptr buf[NBUF], out, late_out;
    unsigned char *host[NBUF], *pin;
    CK(cuMemAlloc(&out, 8 * NBUF));
    CK(cuMemAlloc(&late_out, 8 * ROUNDS * NBUF));
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
        for (int i = 0; i < NBUF; i += late ? 2 : 1) {
            int next = (i + 1) % NBUF;
            if (copy) {
                /* B rewrites the next buffer while A reads this one. */
                memset(pin, (r * NBUF + i) & 0xff, BYTES);
                memcpy(host[next], pin, BYTES);
                /* A green B's copy waits 60 ms behind a host function,
                 * so that a fill not ordered after B reads home first. */
                if (green)
                    CK(cuLaunchHostFunc(b, hold, NULL));
                CK(cuMemcpyHtoDAsync(buf[next], pin, BYTES, b));
            }
            CUdeviceptr o = out + 8 * (uint64_t)i;
            uint64_t n = BYTES;
            void *args[] = {&buf[i], &n, &o};
            if (coop)
                CK(cuLaunchCooperativeKernel(sum, 1, 1, 1, 1, 1, 1, 0, a, args));
            else
                CK(cuLaunchKernel(sum, 1, 1, 1, 1, 1, 1, 0, a, args, NULL));
            if (destroy)
                read_and_destroy(sum, buf[next], late_out + 8 * (uint64_t)(r * NBUF + next));
            else if (late)
                bad += read_on_new_stream(sum, buf[next], out + 8 * (uint64_t)next,
                                          fnv(host[next], BYTES));
            uint64_t got;
            CK(cuMemcpyDtoHAsync(&got, o, 8, a));
            CK(cuStreamSynchronize(a));
            syncs++;
            /* In copy mode, the buffer A read was written by B one step
             * earlier, and that copy was waited for below. */
            if (got != fnv(host[i], BYTES))
                bad++;
            if (flip)
                flip_signs(buf[i], host[i], r, i);
            CK(cuStreamSynchronize(b));
            syncs++;
        }
    if (destroy) {
        uint64_t got[ROUNDS * NBUF];
        CK(cuCtxSynchronize());
        syncs++;
        CK(cuMemcpyDtoH(got, late_out, sizeof got));
        for (int r = 0; r < ROUNDS; r++)
            for (int i = 1; i < NBUF; i += 2)
                bad += got[r * NBUF + i] != fnv(host[i], BYTES);
    }
    for (int i = 0; idle && i < 70; i++)
        CK(cuStreamDestroy(idlers[i]));
    printf("appstreams %s: %s (%d wrong checksums)\n", argv[1], bad ? "mismatch" : "ok", bad);
    printf("syncs %d\n", syncs);
    return bad ? 1 : 0;
}

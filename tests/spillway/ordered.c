/*
 * swt-ordered: the stream-ordered allocator's frees (ordered.c), at the
 * driver level. One case per argument:
 *
 *   order    a kernel still queued on a stream reads a tracked
 *            cuMemAllocAsync buffer when the buffer is freed with
 *            cuMemFreeAsync on that stream, and more memory is asked for
 *            at once: the buffer must stay mapped until the kernel is done
 *            (simgpu reports a fault or hazard otherwise). The checksum
 *            the kernel took is checked.
 *   errors   a second cuMemFreeAsync, a cuMemFree after it, and a free of
 *            a pointer inside the buffer are the driver's
 *            CUDA_ERROR_INVALID_VALUE; a cuMemFreeAsync of tracked memory
 *            during a capture is CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and
 *            leaves the buffer, and its bytes, as they were.
 *   reuse    a live 8 MiB buffer and, ten times, an 8 MiB scratch buffer
 *            allocated, filled, summed and freed in stream order with no
 *            host wait in between (the sums are checked at the end), under a
 *            GPU budget (the test's) that holds the two but not three: the
 *            freed scratch must make room, not the live buffer.
 *   pools    a 4 MiB buffer from each of three pools made with
 *            cuMemPoolCreate: a plain device pool's, one whose
 *            allocations may be exported, and one for the decompression
 *            engine (CU_MEM_POOL_CREATE_USAGE_HW_DECOMPRESS). Each is
 *            filled and summed; the test (test_hooks.c) checks that only
 *            the first was tracked.
 *
 * Prints "ordered: ok" and exits 0; 1 on a wrong value or answer, 2 on a
 * CUDA error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "swt_prog.h"

#define MIB (1024u * 1024u)
#define ROUNDS 10 /* reuse's scratch buffers */

static CUfunction fill, checksum;

#define CK(call)                                                                    \
    do {                                                                            \
        CUresult e_ = (call);                                                       \
        if (e_ != CUDA_SUCCESS) {                                                   \
            const char *n_ = NULL;                                                  \
            cuGetErrorName(e_, &n_);                                                \
            fprintf(stderr, "ordered: %s: %s\n", #call, n_ ? n_ : "?");             \
            exit(2);                                                                \
        }                                                                           \
    } while (0)

static void fill_words(CUdeviceptr p, uint32_t value, uint64_t bytes, CUstream s)
{
    uint64_t n = bytes / 4;
    void *params[] = {&p, &value, &n};
    CK(cuLaunchKernel(fill, 64, 1, 1, 128, 1, 1, 0, s, params, NULL));
}

static void sum_into(CUdeviceptr p, uint64_t bytes, CUdeviceptr out, CUstream s)
{
    void *params[] = {&p, &bytes, &out};
    CK(cuLaunchKernel(checksum, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
}

/* FNV-1a 64 of `bytes` bytes of 32-bit words all equal to value. */
static uint64_t want_sum(uint32_t value, uint64_t bytes)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t i = 0; i < bytes; i++) {
        h ^= (value >> (8 * (i % 4))) & 0xff;
        h *= 0x100000001b3ull;
    }
    return h;
}

static int check(const char *what, CUdeviceptr out, uint32_t value, uint64_t bytes)
{
    uint64_t got;
    CK(cuMemcpyDtoH(&got, out, sizeof got));
    if (got == want_sum(value, bytes))
        return 0;
    fprintf(stderr, "ordered: %s: checksum %016llx, want %016llx\n", what, (unsigned long long)got,
            (unsigned long long)want_sum(value, bytes));
    return 1;
}

static int expect(const char *what, CUresult got, CUresult want)
{
    if (got == want)
        return 0;
    const char *g = NULL, *w = NULL;
    cuGetErrorName(got, &g);
    cuGetErrorName(want, &w);
    fprintf(stderr, "ordered: %s answered %s, want %s\n", what, g ? g : "?", w ? w : "?");
    return 1;
}

static int order(CUstream s, CUdeviceptr out)
{
    CUdeviceptr a, b;
    CK(cuMemAllocAsync(&a, 8 * MIB, s));
    fill_words(a, 5, 8 * MIB, s);
    sum_into(a, 8 * MIB, out, s);
    CK(cuMemFreeAsync(a, s));
    CK(cuMemAllocAsync(&b, 8 * MIB, s));
    fill_words(b, 6, 8 * MIB, s);
    CK(cuStreamSynchronize(s));
    int bad = check("the freed buffer's last reader", out, 5, 8 * MIB);
    sum_into(b, 8 * MIB, out, s);
    CK(cuMemFreeAsync(b, s));
    CK(cuStreamSynchronize(s));
    return bad | check("the next buffer", out, 6, 8 * MIB);
}

static int errors(CUstream s, CUdeviceptr out)
{
    CUdeviceptr a, c;
    CK(cuMemAllocAsync(&a, 4 * MIB, s));
    int bad = expect("a free inside the buffer", cuMemFreeAsync(a + MIB, s),
                     CUDA_ERROR_INVALID_VALUE);
    CK(cuMemFreeAsync(a, s));
    bad |= expect("a second cuMemFreeAsync", cuMemFreeAsync(a, s), CUDA_ERROR_INVALID_VALUE);
    bad |= expect("cuMemFree after cuMemFreeAsync", cuMemFree(a), CUDA_ERROR_INVALID_VALUE);
    CK(cuStreamSynchronize(s));

    CK(cuMemAllocAsync(&c, 4 * MIB, s));
    fill_words(c, 9, 4 * MIB, s);
    CK(cuStreamSynchronize(s));
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    bad |= expect("cuMemFreeAsync of tracked memory in a capture", cuMemFreeAsync(c, s),
                  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph g = NULL;
    CUresult end = cuStreamEndCapture(s, &g);
    if (g)
        cuGraphDestroy(g);
    (void)end; /* the refused free may have invalidated the capture */
    sum_into(c, 4 * MIB, out, s);
    CK(cuStreamSynchronize(s));
    bad |= check("the buffer a capture could not free", out, 9, 4 * MIB);
    CK(cuMemFreeAsync(c, s));
    CK(cuStreamSynchronize(s));
    return bad;
}

static int reuse(CUstream s, CUdeviceptr out)
{
    CUdeviceptr live;
    CK(cuMemAllocAsync(&live, 8 * MIB, s));
    fill_words(live, 77, 8 * MIB, s);
    /* No host wait in the loop: each allocation comes while the stream
     * may not yet have reached the last free. */
    for (uint32_t i = 0; i < ROUNDS; i++) {
        CUdeviceptr scratch;
        CK(cuMemAllocAsync(&scratch, 8 * MIB, s));
        fill_words(scratch, 100 + i, 8 * MIB, s);
        sum_into(scratch, 8 * MIB, out + 8 * i, s);
        CK(cuMemFreeAsync(scratch, s));
    }
    sum_into(live, 8 * MIB, out + 8 * ROUNDS, s);
    CK(cuStreamSynchronize(s));
    int bad = 0;
    for (uint32_t i = 0; i < ROUNDS; i++)
        bad |= check("scratch", out + 8 * i, 100 + i, 8 * MIB);
    bad |= check("the live buffer", out + 8 * ROUNDS, 77, 8 * MIB);
    CK(cuMemFreeAsync(live, s));
    CK(cuStreamSynchronize(s));
    return bad;
}

static int pools(CUstream s, CUdeviceptr out)
{
    CUmemPoolProps props[3];
    memset(props, 0, sizeof props);
    for (int i = 0; i < 3; i++) {
        props[i].allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    }
    props[1].handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    props[2].usage = CU_MEM_POOL_CREATE_USAGE_HW_DECOMPRESS;
    CUmemoryPool pool[3];
    CUdeviceptr buf[3];
    for (int i = 0; i < 3; i++) {
        CK(cuMemPoolCreate(&pool[i], &props[i]));
        CK(cuMemAllocFromPoolAsync(&buf[i], 4 * MIB, pool[i], s));
        fill_words(buf[i], 40 + i, 4 * MIB, s);
        sum_into(buf[i], 4 * MIB, out + 8 * i, s);
    }
    CK(cuStreamSynchronize(s));
    int bad = 0;
    for (int i = 0; i < 3; i++) {
        bad |= check("a pool's buffer", out + 8 * i, 40 + i, 4 * MIB);
        CK(cuMemFreeAsync(buf[i], s));
    }
    CK(cuStreamSynchronize(s));
    for (int i = 0; i < 3; i++)
        CK(cuMemPoolDestroy(pool[i]));
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: swt-ordered order|errors|reuse|pools\n");
        return 2;
    }
    CUcontext ctx;
    CUmodule mod;
    CUstream s;
    CUdeviceptr out;
    if (swt_open("ordered", &ctx, &mod) != CUDA_SUCCESS)
        return 2;
    CK(cuModuleGetFunction(&fill, mod, "sg_fill_u32"));
    CK(cuModuleGetFunction(&checksum, mod, "sg_checksum_u64"));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&out, (ROUNDS + 1) * sizeof(uint64_t)));
    int bad = !strcmp(argv[1], "order")    ? order(s, out)
              : !strcmp(argv[1], "errors") ? errors(s, out)
              : !strcmp(argv[1], "reuse")  ? reuse(s, out)
              : !strcmp(argv[1], "pools")  ? pools(s, out)
                                           : 2;
    CK(cuMemFree(out));
    CK(cuStreamDestroy(s));
    if (!bad)
        printf("ordered: ok\n");
    return bad;
}

/*
 * swt-memops: stream memory operations (cuStreamWriteValue*,
 * cuStreamWaitValue*, cuStreamBatchMemOp) on tracked memory while another
 * thread's allocations move it.
 *
 * One thread writes words into a 4 MiB buffer with the three forms, in
 * turn, on its own stream, reads them back asynchronously, and checksums
 * the buffer with a kernel (which brings it back to the device); the
 * other allocates, fills and frees 4 MiB buffers under a GPU budget (the
 * test sets it) that holds one, so the writer's buffer keeps moving
 * between host and device. A memory operation issued while spillway moves
 * the buffer would run on an unmapped address: simgpu reports that as a
 * hazard or a fault.
 *
 * Prints "memops: ok" and exits 0; 1 on a wrong value, 2 on a CUDA error.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include <cuda.h>

#include "swt_prog.h"

#define MIB (1024u * 1024u)
#define ROUNDS 60
#define BURST 32 /* memory operations in flight between two waits */

static CUcontext ctx;
static CUfunction fill, checksum;
static volatile int stop;

static int fail(const char *what, CUresult r) { return swt_cuda_fail("memops", what, r); }

/* The other thread: allocations that push chunks out. */
static void *mover(void *arg)
{
    int *bad = arg;
    CUstream s;
    if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING)) {
        *bad = 2;
        return NULL;
    }
    for (uint32_t i = 0; !stop && !*bad; i++) {
        CUdeviceptr b;
        CUresult r = cuMemAlloc(&b, 4 * MIB);
        uint64_t n = MIB;
        void *params[] = {&b, &i, &n};
        if (r == CUDA_SUCCESS)
            r = cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
        if (r == CUDA_SUCCESS)
            r = cuStreamSynchronize(s);
        if (r == CUDA_SUCCESS)
            r = cuMemFree(b);
        if (r != CUDA_SUCCESS)
            *bad = fail("mover", r);
    }
    return NULL;
}

/* Writes v at word w of p in the form round r picks, then waits for it. */
static CUresult write_word(CUstream s, CUdeviceptr p, uint32_t w, uint32_t v, int r)
{
    CUdeviceptr at = p + 8ull * w;
    CUresult e;
    switch (r % 3) {
    case 0:
        e = cuStreamWriteValue32(s, at, v, 0);
        if (e == CUDA_SUCCESS)
            e = cuStreamWaitValue32(s, at, v, CU_STREAM_WAIT_VALUE_EQ);
        return e;
    case 1:
        e = cuStreamWriteValue64(s, at, v, 0);
        if (e == CUDA_SUCCESS)
            e = cuStreamWaitValue64(s, at, v, CU_STREAM_WAIT_VALUE_EQ);
        return e;
    default: {
        CUstreamBatchMemOpParams ops[2] = {0};
        ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
        ops[0].writeValue.address = at;
        ops[0].writeValue.value64 = v;
        ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
        ops[1].waitValue.address = at;
        ops[1].waitValue.value64 = v;
        ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
        return cuStreamBatchMemOp(s, 2, ops, 0);
    }
    }
}

int main(void)
{
    CUmodule mod;
    CUstream s;
    CUresult r;
#define CK(call)                          \
    if ((r = (call)) != CUDA_SUCCESS)     \
        return fail(#call, r);
    if ((r = swt_open("memops", &ctx, &mod)) != CUDA_SUCCESS)
        return 2;
    CK(cuModuleGetFunction(&fill, mod, "sg_fill_u32"));
    CK(cuModuleGetFunction(&checksum, mod, "sg_checksum_u64"));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CK(cuMemAlloc(&p, 4 * MIB));
    CK(cuMemsetD32(p, 0, MIB));
    CUdeviceptr sum; /* 64 KiB: not tracked */
    CK(cuMemAlloc(&sum, 64 * 1024));
    uint64_t bytes = 4 * MIB;
    void *sum_params[] = {&p, &bytes, &sum};

    int mbad = 0, bad = 0;
    pthread_t t;
    if (pthread_create(&t, NULL, mover, &mbad) != 0)
        return 2;
    for (int i = 0; i < ROUNDS && !bad && !__atomic_load_n(&mbad, __ATOMIC_RELAXED); i++) {
        uint32_t w[BURST];
        uint64_t got[BURST] = {0};
        r = cuLaunchKernel(checksum, 1, 1, 1, 1, 1, 1, 0, s, sum_params, NULL);
        for (int k = 0; k < BURST && r == CUDA_SUCCESS; k++) {
            w[k] = (uint32_t)((i * BURST + k) * 7919) % (uint32_t)(4 * MIB / 8);
            r = write_word(s, p, w[k], (uint32_t)(i * BURST + k) + 1, i + k);
        }
        for (int k = 0; k < BURST && r == CUDA_SUCCESS; k++)
            r = cuMemcpyDtoHAsync(&got[k], p + 8ull * w[k], 8, s);
        if (r == CUDA_SUCCESS)
            r = cuStreamSynchronize(s);
        if (r != CUDA_SUCCESS)
            bad = fail("writer", r);
        for (int k = 0; k < BURST && !bad; k++)
            if (got[k] != (uint64_t)(i * BURST + k) + 1)
                bad = 1, fprintf(stderr, "memops: round %d: word %u is %llu\n", i, w[k],
                                 (unsigned long long)got[k]);
    }
    stop = 1;
    pthread_join(t, NULL);
    if (bad || mbad)
        return bad ? bad : mbad;
    printf("memops: ok\n");
    return 0;
}

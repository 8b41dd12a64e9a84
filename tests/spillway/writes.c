/*
 * swt-writes: writes of home that do not go through a rewritten launch,
 * and graphs as PyTorch, vLLM and SGLang use them; each must leave window
 * copies and home's fingerprints true. LAYERS weights of 4 MiB each, one
 * allocation each, a checksum kernel reading them in a loop so that the
 * window streams them. Modes (argv[1]):
 *   replay-write  the weights hold 7s; a graph of memsets writing 0xdead
 *                 to every weight is replayed; a kernel then sets them
 *                 back to 7 and the loop reads them: a home fingerprint
 *                 kept from before the replay would make the copy of 7s
 *                 look unchanged, and home would stay 0xdead;
 *   fork-write    a captured step reads X on s0, forks s1, which fills X
 *                 in place, joins it and reads X again: the second read
 *                 must see the fill, not the copy made before it;
 *   graph-fp      G0 reads the weights (never replayed), G1 fills them
 *                 with 7; before each replay of G1 an eager memset writes
 *                 the replay's number: after G1 every weight must read 7;
 *   replay-in-capture  while s0 captures a step, s1 replays a graph
 *                 captured before: both must succeed;
 *   replay-thread the same with the replay made by another thread, while
 *                 this one's capture is open (THREAD_LOCAL mode);
 *   node-patch    a captured step reads X (weight 3), fills a scratch
 *                 buffer, reads X again; after instantiation the fill's node is
 *                 given X and a new value each step
 *                 (cuGraphExecKernelNodeSetParams): the second read must
 *                 see that fill, made in place, not the copy of X the
 *                 first read used;
 *   foreach       one launch adds 1 to 16 small tensors and to weights
 *                 4-7, named in one struct (a fused optimizer step): more
 *                 allocations than a launch's copies can serve, so the
 *                 weights are written in place, and no copy of them the
 *                 reads before left in the window may be read after (at
 *                 a 20 MiB budget one is: without the flush, a wrong sum);
 *   window-word   the arguments of a captured read of weight 3, read back
 *                 (cuGraphKernelNodeGetParams), are given to a new node of
 *                 another graph. Where the capture's read was served from
 *                 a window copy they hold its address, and spillway
 *                 refuses the node (CUDA_ERROR_INVALID_VALUE): stderr says
 *                 "window-word: refused" and the read is launched eagerly
 *                 instead, so every run's result is the same;
 *   exec-update   each step captures a fill of another weight and a read
 *                 of all, and updates the one instantiated graph from it
 *                 (cuGraphExecUpdate; on refusal it instantiates anew,
 *                 as llama.cpp does);
 *   replay-elsewhere  the weights live on device 1 (SIMGPU_DEVICES=2);
 *                 two graphs, each reading every weight into its own
 *                 slots, are captured there, and each step replays them
 *                 on two streams at once with device 0's context current.
 *                 Both hold copies in device 1's window, in the same
 *                 space: the replays must still run one after the other
 *                 (they did not while the current context chose the
 *                 window that orders replays, until 2026-12-02).
 * Every checksum goes into one small buffer, hashed after each step;
 * prints "result: HASH" and exits 0, 2 on a CUDA error.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "swt_prog.h"

#define LAYERS 8
#define WORDS (1u << 20) /* 4 MiB of uint32 */
#define STEPS 8

static int fail(const char *what, CUresult r) { return swt_cuda_fail("writes", what, r); }

typedef struct {
    CUfunction fill, checksum, foreach;
    CUdeviceptr w[LAYERS], sums;
    CUstream s0, s1;
    CUevent fork, join;
    CUdeviceptr target; /* what patch_step and update_step fill ... */
    uint32_t value;     /* ... with this (update_step) */
} model_t;

static CUresult fill(const model_t *m, CUstream s, CUdeviceptr p, uint32_t v)
{
    uint64_t n = WORDS;
    void *a[] = {&p, &v, &n};
    return cuLaunchKernel(m->fill, 1, 1, 1, 1, 1, 1, 0, s, a, NULL);
}

static CUresult checksum(const model_t *m, CUstream s, CUdeviceptr p, int slot)
{
    uint64_t bytes = WORDS * 4ull;
    CUdeviceptr out = m->sums + 8ull * (uint64_t)slot;
    void *a[] = {&p, &bytes, &out};
    return cuLaunchKernel(m->checksum, 1, 1, 1, 1, 1, 1, 0, s, a, NULL);
}

/* Reads every weight on s0, a checksum slot each, from slot `first`. */
static CUresult read_all_from(const model_t *m, int first)
{
    CUresult r = CUDA_SUCCESS;
    for (int l = 0; l < LAYERS && r == CUDA_SUCCESS; l++)
        r = checksum(m, m->s0, m->w[l], first + l);
    return r;
}

static CUresult read_all(const model_t *m) { return read_all_from(m, 0); }

/* The same into the second half of the slots (replay-elsewhere). */
static CUresult read_all_high(const model_t *m) { return read_all_from(m, LAYERS); }

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

#define CK(call)                      \
    if ((r = (call)) != CUDA_SUCCESS) \
        return fail(#call, r);

/* Hashes the checksum slots into *h once s0 is done. */
static int settle(const model_t *m, uint64_t *h)
{
    CUresult r;
    uint64_t sums[2 * LAYERS];
    CK(cuStreamSynchronize(m->s0));
    CK(cuMemcpyDtoH(sums, m->sums, sizeof sums));
    *h = fnv(*h, sums, sizeof sums);
    return 0;
}

static int capture(const model_t *m, CUgraphExec *exec, CUresult (*body)(const model_t *))
{
    CUresult r;
    CUgraph g;
    CK(cuStreamBeginCapture(m->s0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CK(body(m));
    CK(cuStreamEndCapture(m->s0, &g));
    CK(cuGraphInstantiateWithFlags(exec, g, 0));
    CK(cuGraphDestroy(g));
    return 0;
}

static CUresult memset_all(const model_t *m)
{
    CUresult r = CUDA_SUCCESS;
    for (int l = 0; l < LAYERS && r == CUDA_SUCCESS; l++)
        r = cuMemsetD32Async(m->w[l], 0xdead, WORDS, m->s0);
    return r;
}

static CUresult fill_all(const model_t *m)
{
    CUresult r = CUDA_SUCCESS;
    for (int l = 0; l < LAYERS && r == CUDA_SUCCESS; l++)
        r = fill(m, m->s0, m->w[l], 7);
    return r;
}

/* s0 reads X (weight 0) right after the others, s1 fills it in place,
 * s0 reads it again: X's copy is the newest in the window then. */
static CUresult fork_step(const model_t *m)
{
    CUresult r;
    if ((r = read_all(m)) != CUDA_SUCCESS || (r = checksum(m, m->s0, m->w[0], LAYERS + 1)) ||
        (r = cuEventRecord(m->fork, m->s0)) ||
        (r = cuStreamWaitEvent(m->s1, m->fork, 0)) || (r = fill(m, m->s1, m->w[0], 11)) ||
        (r = cuEventRecord(m->join, m->s1)) || (r = cuStreamWaitEvent(m->s0, m->join, 0)))
        return r;
    return checksum(m, m->s0, m->w[0], LAYERS);
}

#define SCRATCH_WORDS 4096 /* below SPILLWAY_MIN_ALLOC: never in the window */

/* Reads X, fills a scratch buffer, reads X again (node-patch): X's copy is
 * the only one the two reads need, so the second reuses the first's. */
static CUresult patch_step(const model_t *m)
{
    CUresult r;
    uint64_t n = SCRATCH_WORDS;
    uint32_t v = 5;
    CUdeviceptr dst = m->target;
    void *a[] = {&dst, &v, &n};
    if ((r = checksum(m, m->s0, m->w[3], LAYERS)) ||
        (r = cuLaunchKernel(m->fill, 1, 1, 1, 1, 1, 1, 0, m->s0, a, NULL)))
        return r;
    return checksum(m, m->s0, m->w[3], LAYERS + 1);
}

/* Fills m->target, then reads every weight (exec-update). */
static CUresult update_step(const model_t *m)
{
    CUresult r = fill(m, m->s0, m->target, m->value);
    return r ? r : read_all(m);
}

/* The kernel node of g that launches f. */
static int find_node(CUgraph g, CUfunction f, CUgraphNode *out)
{
    CUresult r;
    CUgraphNode nodes[256];
    size_t n = 256;
    CK(cuGraphGetNodes(g, nodes, &n));
    for (size_t i = 0; i < n; i++) {
        CUgraphNodeType t;
        CUDA_KERNEL_NODE_PARAMS p;
        CK(cuGraphNodeGetType(nodes[i], &t));
        if (t != CU_GRAPH_NODE_TYPE_KERNEL)
            continue;
        CK(cuGraphKernelNodeGetParams(nodes[i], &p));
        if (p.func == f) {
            *out = nodes[i];
            return 0;
        }
    }
    fprintf(stderr, "writes: no kernel node of the fill in the graph\n");
    return 2;
}

/* node-patch: the fill's node is given weight 3 and the step's value. */
static int node_patch(model_t *m, uint64_t *h)
{
    CUresult r;
    CUgraph g;
    CUgraphExec e;
    CUgraphNode node;
    CK(cuMemAlloc(&m->target, SCRATCH_WORDS * 4));
    CK(cuStreamBeginCapture(m->s0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CK(patch_step(m));
    CK(cuStreamEndCapture(m->s0, &g));
    CK(cuGraphInstantiateWithFlags(&e, g, 0));
    if (find_node(g, m->fill, &node))
        return 2;
    for (int s = 0; s < STEPS; s++) {
        CUdeviceptr dst = m->w[3];
        uint32_t v = 300u + (unsigned)s;
        uint64_t n = WORDS;
        void *a[] = {&dst, &v, &n};
        CUDA_KERNEL_NODE_PARAMS p;
        CK(cuGraphKernelNodeGetParams(node, &p));
        p.kernelParams = a;
        p.extra = NULL;
        CK(cuGraphExecKernelNodeSetParams(e, node, &p));
        CK(fill(m, m->s0, m->w[3], 50u + (unsigned)s));
        CK(cuGraphLaunch(e, m->s0));
        CK(read_all(m));
        if (settle(m, h))
            return 2;
    }
    CK(cuGraphExecDestroy(e));
    CK(cuGraphDestroy(g));
    CK(cuMemFree(m->target));
    return 0;
}

#define SMALL 16            /* small tensors, resident: a launch's copies ... */
#define SMALL_WORDS (1u << 14) /* ... are all taken by them (tracked with SPILLWAY_MIN_ALLOC=64KiB), weights 4-7 follow */

/* foreach: reads every weight, adds 1 to 16 small tensors and to weights
 * 4-7 in one launch (sg_foreach_add_u32, 20 at most), then reads weights
 * 4-7 again, of which the first reads left copies in the window. */
static int foreach_steps(const model_t *m, uint64_t *h)
{
    CUresult r;
    struct {
        uint32_t n, add;
        uint64_t words[SMALL + 4];
        CUdeviceptr t[SMALL + 4];
    } args = {.n = SMALL + 4, .add = 1};
    for (int i = 0; i < SMALL + 4; i++) {
        args.words[i] = i < SMALL ? SMALL_WORDS : WORDS;
        if (i >= SMALL)
            args.t[i] = m->w[4 + i - SMALL];
        else if ((r = cuMemAlloc(&args.t[i], SMALL_WORDS * 4)) ||
                 (r = cuMemsetD32(args.t[i], (unsigned)i, SMALL_WORDS)))
            return fail("a small tensor", r);
    }
    for (int s = 0; s < STEPS; s++) {
        void *a[] = {&args};
        CK(read_all(m));
        CK(cuLaunchKernel(m->foreach, 1, 1, 1, 1, 1, 1, 0, m->s0, a, NULL));
        for (int l = 4; l < LAYERS; l++)
            CK(checksum(m, m->s0, m->w[l], LAYERS + l - 4));
        if (settle(m, h))
            return 2;
    }
    for (int i = 0; i < SMALL; i++) {
        uint32_t first;
        CK(cuMemcpyDtoH(&first, args.t[i], sizeof first));
        *h = fnv(*h, &first, sizeof first);
        CK(cuMemFree(args.t[i]));
    }
    return 0;
}

/* Reads weight 3 into slot LAYERS (window-word's capture). */
static CUresult read_x(const model_t *m)
{
    return checksum(m, m->s0, m->w[3], LAYERS);
}

/* window-word: a new node given a captured node's arguments. */
static int window_word(model_t *m, uint64_t *h)
{
    CUresult r;
    CUgraph g, other;
    CUgraphExec e;
    CUgraphNode node, added;
    CUDA_KERNEL_NODE_PARAMS p;
    CK(cuStreamBeginCapture(m->s0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CK(read_x(m));
    CK(cuStreamEndCapture(m->s0, &g));
    if (find_node(g, m->checksum, &node))
        return 2;
    CK(cuGraphKernelNodeGetParams(node, &p));
    CK(cuGraphCreate(&other, 0));
    r = cuGraphAddKernelNode(&added, other, NULL, 0, &p);
    if (r == CUDA_ERROR_INVALID_VALUE) {
        fprintf(stderr, "window-word: refused\n");
        CK(read_x(m));
    } else if (r == CUDA_SUCCESS) {
        CK(cuGraphInstantiateWithFlags(&e, other, 0));
        CK(cuGraphLaunch(e, m->s0));
        CK(cuStreamSynchronize(m->s0));
        CK(cuGraphExecDestroy(e));
    } else {
        return fail("cuGraphAddKernelNode", r);
    }
    CK(cuGraphDestroy(other));
    CK(cuGraphDestroy(g));
    return settle(m, h);
}

/* replay-thread: the other thread's part, between two barriers. */
typedef struct {
    const model_t *m;
    CUcontext ctx;
    CUgraphExec g;
    pthread_barrier_t open, replayed;
    CUresult r;
} replayer_t;

static void *replayer(void *arg)
{
    replayer_t *t = arg;
    pthread_barrier_wait(&t->open); /* the capture is open */
    t->r = cuCtxSetCurrent(t->ctx);
    if (t->r == CUDA_SUCCESS)
        t->r = cuGraphLaunch(t->g, t->m->s1);
    pthread_barrier_wait(&t->replayed);
    return NULL;
}

/* replay-thread: each step captures a read of every weight on s0 while
 * another thread replays g0 (a fill of every weight) on s1. */
static int replay_thread(const model_t *m, CUcontext ctx, CUgraphExec g0, uint64_t *h)
{
    CUresult r;
    for (int s = 0; s < STEPS; s++) {
        replayer_t t = {.m = m, .ctx = ctx, .g = g0};
        pthread_t th;
        CUgraph g;
        CUgraphExec g1;
        pthread_barrier_init(&t.open, NULL, 2);
        pthread_barrier_init(&t.replayed, NULL, 2);
        if (pthread_create(&th, NULL, replayer, &t) != 0) {
            fprintf(stderr, "writes: cannot start the replaying thread\n");
            return 2;
        }
        r = cuStreamBeginCapture(m->s0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        if (r == CUDA_SUCCESS)
            r = read_all(m);
        pthread_barrier_wait(&t.open);
        pthread_barrier_wait(&t.replayed);
        pthread_join(th, NULL);
        pthread_barrier_destroy(&t.open);
        pthread_barrier_destroy(&t.replayed);
        if (r != CUDA_SUCCESS)
            return fail("the capture", r);
        if (t.r != CUDA_SUCCESS)
            return fail("cuGraphLaunch on the other thread", t.r);
        CK(cuStreamEndCapture(m->s0, &g));
        CK(cuGraphInstantiateWithFlags(&g1, g, 0));
        CK(cuGraphDestroy(g));
        CK(cuStreamSynchronize(m->s1));
        CK(cuGraphLaunch(g1, m->s0));
        CK(cuGraphExecDestroy(g1));
        if (settle(m, h))
            return 2;
    }
    return 0;
}

/* Device 1's primary context made current (*ctx1) and the built-in
 * kernels loaded there (replay-elsewhere). */
static int open_device_1(model_t *m, CUcontext *ctx1)
{
    CUresult r;
    CUdevice dev;
    CUmodule mod;
    CK(cuDeviceGet(&dev, 1));
    CK(cuDevicePrimaryCtxRetain(ctx1, dev));
    CK(cuCtxSetCurrent(*ctx1));
    CK(cuModuleLoadData(&mod, "simgpu-builtin"));
    CK(cuModuleGetFunction(&m->fill, mod, "sg_fill_u32"));
    CK(cuModuleGetFunction(&m->checksum, mod, "sg_checksum_u64"));
    CK(cuModuleGetFunction(&m->foreach, mod, "sg_foreach_add_u32"));
    return 0;
}

/* replay-elsewhere: g0 and g1, captured on device 1, replayed at once
 * on its two streams from device 0's context. */
static int replay_elsewhere(const model_t *m, CUcontext ctx0, CUcontext ctx1, uint64_t *h)
{
    CUresult r;
    CUgraphExec g0, g1;
    if (capture(m, &g0, read_all) || capture(m, &g1, read_all_high))
        return 2;
    for (int s = 0; s < STEPS; s++) {
        CK(fill(m, m->s0, m->w[s % LAYERS], 500u + (unsigned)s));
        CK(cuStreamSynchronize(m->s0));
        CK(cuCtxSetCurrent(ctx0));
        CK(cuGraphLaunch(g0, m->s0));
        CK(cuGraphLaunch(g1, m->s1));
        CK(cuCtxSetCurrent(ctx1));
        CK(cuStreamSynchronize(m->s1));
        if (settle(m, h))
            return 2;
    }
    CK(cuGraphExecDestroy(g0));
    CK(cuGraphExecDestroy(g1));
    return 0;
}

/* exec-update: one instantiated graph, updated from each step's capture. */
static int exec_update(model_t *m, uint64_t *h)
{
    CUresult r;
    CUgraphExec e = NULL;
    for (int s = 0; s < STEPS; s++) {
        CUgraph g;
        m->target = m->w[s % LAYERS];
        m->value = 400u + (unsigned)s;
        CK(cuStreamBeginCapture(m->s0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
        CK(update_step(m));
        CK(cuStreamEndCapture(m->s0, &g));
        CUgraphExecUpdateResultInfo info;
        r = e ? cuGraphExecUpdate(e, g, &info) : CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
        if (r == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) {
            if (e)
                CK(cuGraphExecDestroy(e));
            CK(cuGraphInstantiateWithFlags(&e, g, 0));
        } else if (r != CUDA_SUCCESS) {
            return fail("cuGraphExecUpdate", r);
        }
        CK(cuGraphDestroy(g));
        CK(cuGraphLaunch(e, m->s0));
        if (settle(m, h))
            return 2;
    }
    CK(cuGraphExecDestroy(e));
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "replay-write") && strcmp(mode, "fork-write") && strcmp(mode, "graph-fp") &&
        strcmp(mode, "replay-in-capture") && strcmp(mode, "node-patch") &&
        strcmp(mode, "exec-update") && strcmp(mode, "foreach") && strcmp(mode, "window-word") &&
        strcmp(mode, "replay-thread") && strcmp(mode, "replay-elsewhere")) {
        fprintf(stderr, "usage: swt-writes replay-write|fork-write|graph-fp|replay-in-capture|"
                        "replay-thread|replay-elsewhere|node-patch|exec-update|foreach|"
                        "window-word\n");
        return 3;
    }
    CUcontext ctx, ctx1 = NULL;
    CUmodule mod;
    CUresult r;
    model_t m;
    memset(&m, 0, sizeof m);
    if ((r = swt_open("writes", &ctx, &mod)) != CUDA_SUCCESS)
        return 2;
    CK(cuModuleGetFunction(&m.fill, mod, "sg_fill_u32"));
    CK(cuModuleGetFunction(&m.checksum, mod, "sg_checksum_u64"));
    CK(cuModuleGetFunction(&m.foreach, mod, "sg_foreach_add_u32"));
    bool elsewhere = !strcmp(mode, "replay-elsewhere");
    if (elsewhere && open_device_1(&m, &ctx1))
        return 2;
    CK(cuStreamCreate(&m.s0, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&m.s1, CU_STREAM_NON_BLOCKING));
    CK(cuEventCreate(&m.fork, CU_EVENT_DISABLE_TIMING));
    CK(cuEventCreate(&m.join, CU_EVENT_DISABLE_TIMING));
    CK(cuMemAlloc(&m.sums, 16 * LAYERS));
    CK(cuMemsetD8(m.sums, 0, 16 * LAYERS));
    for (int l = 0; l < LAYERS; l++) {
        CK(cuMemAlloc(&m.w[l], WORDS * 4ull));
        CK(cuMemsetD32(m.w[l], 7, WORDS));
    }

    uint64_t h = 0xcbf29ce484222325ull;
    CUgraphExec g0 = NULL, g1 = NULL;
    bool replay_write = !strcmp(mode, "replay-write");
    if (replay_write && capture(&m, &g0, memset_all))
        return 2;
    /* The loop is learned first, so that the window streams eagerly: in
     * replay-write, the loop that follows, so that its fills are served. */
    for (int s = 0; s < 4 && !replay_write; s++) {
        CK(read_all(&m));
        if (settle(&m, &h))
            return 2;
    }
    if (replay_write) {
        for (int s = 0; s < 4 + STEPS; s++) {
            CK(cuGraphLaunch(g0, m.s0));
            CK(fill_all(&m));
            CK(read_all(&m));
            if (settle(&m, &h))
                return 2;
        }
    } else if (!strcmp(mode, "fork-write")) {
        if (capture(&m, &g0, fork_step))
            return 2;
        for (int s = 0; s < STEPS; s++) {
            CK(fill(&m, m.s0, m.w[0], 100u + (unsigned)s));
            CK(cuGraphLaunch(g0, m.s0));
            if (settle(&m, &h))
                return 2;
        }
    } else if (!strcmp(mode, "node-patch")) {
        if (node_patch(&m, &h))
            return 2;
    } else if (!strcmp(mode, "foreach")) {
        if (foreach_steps(&m, &h))
            return 2;
    } else if (!strcmp(mode, "replay-thread")) {
        if (capture(&m, &g0, fill_all) || replay_thread(&m, ctx, g0, &h))
            return 2;
    } else if (elsewhere) {
        if (replay_elsewhere(&m, ctx, ctx1, &h))
            return 2;
    } else if (!strcmp(mode, "window-word")) {
        if (window_word(&m, &h))
            return 2;
    } else if (!strcmp(mode, "exec-update")) {
        if (exec_update(&m, &h))
            return 2;
    } else if (!strcmp(mode, "graph-fp")) {
        if (capture(&m, &g0, read_all) || capture(&m, &g1, fill_all))
            return 2;
        for (int s = 0; s < STEPS; s++) {
            for (int l = 0; l < LAYERS; l++)
                CK(cuMemsetD32Async(m.w[l], 200u + (unsigned)s, WORDS, m.s0));
            CK(cuGraphLaunch(g1, m.s0));
            CK(read_all(&m));
            if (settle(&m, &h))
                return 2;
        }
    } else {
        if (capture(&m, &g0, fill_all))
            return 2;
        for (int s = 0; s < STEPS; s++) {
            CUgraph g;
            CK(cuStreamBeginCapture(m.s0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
            CK(read_all(&m));
            CK(cuGraphLaunch(g0, m.s1));
            CK(cuStreamEndCapture(m.s0, &g));
            CK(cuGraphInstantiateWithFlags(&g1, g, 0));
            CK(cuGraphDestroy(g));
            CK(cuStreamSynchronize(m.s1));
            CK(cuGraphLaunch(g1, m.s0));
            CK(cuGraphExecDestroy(g1));
            g1 = NULL;
            if (settle(&m, &h))
                return 2;
        }
    }
    for (int l = 0; l < LAYERS; l++) {
        static uint32_t host[WORDS];
        CK(cuMemcpyDtoH(host, m.w[l], sizeof host));
        h = fnv(h, host, sizeof host);
    }
    if (g0)
        CK(cuGraphExecDestroy(g0));
    if (g1)
        CK(cuGraphExecDestroy(g1));
    printf("writes: %s\n", mode);
    printf("result: %016llx\n", (unsigned long long)h);
    return 0;
}

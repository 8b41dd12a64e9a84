/*
 * graph: a CUDA graph captured across two streams, forked and joined by
 * events as frameworks capture (PyTorch's side streams), then replayed.
 *
 * Main stream A begins a global-mode capture and records `fork`; side
 * stream B waits for it, which makes B join the capture. A copies the
 * input from pinned memory and runs the first half of the layers; B
 * meanwhile clears and fills a second buffer (memset, fill kernel) and
 * copies the bias of the last layer into place. B records `join`, A waits
 * for it, runs the rest and copies the output back. The graph is replayed
 * for several inputs (the pinned input changes between launches), and
 * every replay must match the host reference.
 */
#include "common.cuh"

int main(void)
{
    const uint32_t n = 1024, layers = 6, steps = 4;
    print_runtime("graph");
    model_t m = model_make(n, layers);

    float *dW[layers], *db[layers], *dx, *dy, *dlast_b, *side;
    for (uint32_t l = 0; l < layers; l++) {
        CK(cudaMalloc((void **)&dW[l], (size_t)n * n * sizeof(float)));
        CK(cudaMalloc((void **)&db[l], n * sizeof(float)));
        CK(cudaMemcpy(dW[l], m.W[l], (size_t)n * n * sizeof(float), cudaMemcpyHostToDevice));
        CK(cudaMemcpy(db[l], m.b[l], n * sizeof(float), cudaMemcpyHostToDevice));
    }
    CK(cudaMalloc((void **)&dx, n * sizeof(float)));
    CK(cudaMalloc((void **)&dy, n * sizeof(float)));
    CK(cudaMalloc((void **)&dlast_b, n * sizeof(float)));
    CK(cudaMalloc((void **)&side, n * sizeof(float)));
    CK(cudaMemset(dlast_b, 0xff, n * sizeof(float)));

    float *hin, *hout, *hside;
    CK(cudaMallocHost((void **)&hin, n * sizeof(float)));
    CK(cudaMallocHost((void **)&hout, n * sizeof(float)));
    CK(cudaMallocHost((void **)&hside, n * sizeof(float)));

    cudaStream_t a, b;
    CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    cudaEvent_t fork, join;
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));

    CK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
    CK(cudaEventRecord(fork, a));
    CK(cudaStreamWaitEvent(b, fork, 0));
    cudaStreamCaptureStatus st;
    CK(cudaStreamIsCapturing(b, &st));
    if (st != cudaStreamCaptureStatusActive) {
        fprintf(stderr, "the side stream did not join the capture (status %d)\n", (int)st);
        return 1;
    }
    /* Side branch: independent of the first layers. */
    CK(cudaMemsetAsync(side, 0, n * sizeof(float), b));
    sg_fill_u32<<<blocks_for(n), THREADS, 0, b>>>((uint32_t *)side, 0x3f800000u, n / 2);
    CKL();
    CK(cudaMemcpyAsync(dlast_b, db[layers - 1], n * sizeof(float), cudaMemcpyDeviceToDevice, b));
    CK(cudaMemcpyAsync(hside, side, n * sizeof(float), cudaMemcpyDeviceToHost, b));
    CK(cudaEventRecord(join, b));
    /* Main branch. */
    CK(cudaMemcpyAsync(dx, hin, n * sizeof(float), cudaMemcpyHostToDevice, a));
    float *x = dx, *y = dy;
    for (uint32_t l = 0; l < layers; l++) {
        if (l == layers - 1)
            CK(cudaStreamWaitEvent(a, join, 0));
        dev_layer(dW[l], l == layers - 1 ? dlast_b : db[l], x, y, n, a);
        float *t = x;
        x = y;
        y = t;
    }
    CK(cudaMemcpyAsync(hout, x, n * sizeof(float), cudaMemcpyDeviceToHost, a));
    cudaGraph_t graph;
    CK(cudaStreamEndCapture(a, &graph));
    size_t nodes = 0;
    CK(cudaGraphGetNodes(graph, NULL, &nodes));
    /* 3 on B + copy, 3 per layer, copy on A (events become edges). */
    size_t want_nodes = 4 + 1 + 3 * layers + 1;
    if (nodes != want_nodes) {
        fprintf(stderr, "the graph has %zu nodes, want %zu\n", nodes, want_nodes);
        return 1;
    }
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, graph, 0));

    float *want = (float *)malloc(n * sizeof(float));
    uint64_t result = 0xcbf29ce484222325ull;
    for (uint32_t step = 0; step < steps; step++) {
        det_fill(hin, n, 4000 + step, 1.0f);
        memcpy(want, hin, n * sizeof(float));
        model_ref(&m, want);
        CK(cudaGraphLaunch(exec, a));
        CK(cudaStreamSynchronize(a));
        if (check_equal("graph output", hout, want, n))
            return 1;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t v;
            memcpy(&v, &hside[i], 4);
            if (v != (i < n / 2 ? 0x3f800000u : 0u)) {
                fprintf(stderr, "side buffer element %u is %08x\n", i, v);
                return 1;
            }
        }
        result = (result ^ fnv1a(hout, n * sizeof(float))) * 0x100000001b3ull;
    }
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    for (uint32_t l = 0; l < layers; l++) {
        CK(cudaFree(dW[l]));
        CK(cudaFree(db[l]));
    }
    CK(cudaFree(dx));
    CK(cudaFree(dy));
    CK(cudaFree(dlast_b));
    CK(cudaFree(side));
    CK(cudaFreeHost(hin));
    CK(cudaFreeHost(hout));
    CK(cudaFreeHost(hside));
    CK(cudaEventDestroy(fork));
    CK(cudaEventDestroy(join));
    CK(cudaStreamDestroy(a));
    CK(cudaStreamDestroy(b));
    printf("result: %016llx\n", (unsigned long long)result);
    return 0;
}

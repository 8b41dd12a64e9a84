/*
 * multidev: one model split across two devices by the real runtime, the
 * way accelerate's device_map or pipeline parallelism in one process does
 * it: cudaSetDevice before each device's allocations and launches, a
 * stream per device, and the activations handed over by every route the
 * runtime offers between devices.
 *
 *   device 0 holds layers 0..HALF-1 and also the last layer's weights;
 *   device 1 holds layers HALF..LAYERS-2.
 *   Each step:
 *     host -> x0 (device 0), layers 0..HALF-1 on device 0;
 *     x0 -> x1 by cudaMemcpyPeerAsync on device 0's stream, device 1's
 *       stream waiting for it through an event recorded on device 0;
 *     layers HALF..LAYERS-2 on device 1;
 *     the last layer on device 1, its weights read from device 0's
 *       memory through peer access (cudaDeviceEnablePeerAccess);
 *     device 1's layers run eagerly in step 0, and from step 1 as a CUDA
 *       graph captured on device 1's stream in step 1 (how vLLM decodes);
 *     x1 -> x0 by cudaMemcpy with cudaMemcpyDefault (UVA, across devices),
 *       then x0 -> host.
 * The answer is compared with the host reference bit for bit each step.
 * Under spillway, each device's budget and memory are below its share, so
 * weights on both devices live on the host part of the time, including the
 * ones device 1 reads from device 0.
 */
#include "common.cuh"

enum { N = 1024, LAYERS = 10, HALF = LAYERS / 2, STEPS = 5 };

/* The device a layer's weights live on. */
static int home_of(uint32_t l) { return l < HALF || l == LAYERS - 1 ? 0 : 1; }

/* Layers [from, to) on s, from a through b and back: the buffer that
 * holds the result. */
static float *run_layers(float *const *dW, float *const *db, uint32_t from, uint32_t to, float *a,
                         float *b, cudaStream_t s)
{
    for (uint32_t l = from; l < to; l++) {
        dev_layer(dW[l], db[l], a, b, N, s);
        float *t = a;
        a = b;
        b = t;
    }
    return a;
}

int main(void)
{
    print_runtime("multidev");
    int count = 0, can = 0;
    CK(cudaGetDeviceCount(&count));
    if (count < 2) {
        fprintf(stderr, "multidev: needs two devices, the runtime sees %d\n", count);
        return 1;
    }
    CK(cudaDeviceCanAccessPeer(&can, 1, 0));
    if (!can) {
        fprintf(stderr, "multidev: device 1 cannot access device 0's memory\n");
        return 1;
    }
    model_t m = model_make(N, LAYERS);
    cudaStream_t s[2];
    float *x[2], *y[2];
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        CK(cudaDeviceEnablePeerAccess(1 - d, 0));
        CK(cudaStreamCreateWithFlags(&s[d], cudaStreamNonBlocking));
        CK(cudaMalloc((void **)&x[d], N * sizeof(float)));
        CK(cudaMalloc((void **)&y[d], N * sizeof(float)));
    }
    float *dW[LAYERS], *db[LAYERS];
    for (uint32_t l = 0; l < LAYERS; l++) {
        int d = home_of(l);
        CK(cudaSetDevice(d));
        CK(cudaMalloc((void **)&dW[l], (size_t)N * N * sizeof(float)));
        CK(cudaMalloc((void **)&db[l], N * sizeof(float)));
        CK(cudaMemcpyAsync(dW[l], m.W[l], (size_t)N * N * sizeof(float), cudaMemcpyHostToDevice,
                           s[d]));
        CK(cudaMemcpyAsync(db[l], m.b[l], N * sizeof(float), cudaMemcpyHostToDevice, s[d]));
    }
    CK(cudaSetDevice(0));
    cudaEvent_t handed;
    CK(cudaEventCreateWithFlags(&handed, cudaEventDisableTiming));

    float hin[N], hout[N], want[N];
    uint64_t result = 0xcbf29ce484222325ull;
    cudaGraphExec_t half1 = NULL; /* device 1's layers, from step 1 */
    float *half1_out = NULL;      /* where its result lands */
    for (uint32_t step = 0; step < STEPS; step++) {
        det_fill(hin, N, 4000 + step, 1.0f);
        memcpy(want, hin, sizeof want);
        model_ref(&m, want);

        CK(cudaSetDevice(0));
        CK(cudaMemcpyAsync(x[0], hin, sizeof hin, cudaMemcpyHostToDevice, s[0]));
        float *out0 = run_layers(dW, db, 0, HALF, x[0], y[0], s[0]);
        CK(cudaMemcpyPeerAsync(x[1], 1, out0, 0, N * sizeof(float), s[0]));
        CK(cudaEventRecord(handed, s[0]));

        CK(cudaSetDevice(1));
        /* Waited for outside the capture: its event is not the graph's. */
        CK(cudaStreamWaitEvent(s[1], handed, 0));
        float *out1;
        if (step == 0) {
            out1 = run_layers(dW, db, HALF, LAYERS, x[1], y[1], s[1]);
        } else {
            if (!half1) {
                cudaGraph_t g;
                CK(cudaStreamBeginCapture(s[1], cudaStreamCaptureModeGlobal));
                half1_out = run_layers(dW, db, HALF, LAYERS, x[1], y[1], s[1]);
                CK(cudaStreamEndCapture(s[1], &g));
                CK(cudaGraphInstantiate(&half1, g, 0));
                CK(cudaGraphDestroy(g));
            }
            CK(cudaGraphLaunch(half1, s[1]));
            out1 = half1_out;
        }
        CK(cudaStreamSynchronize(s[1]));
        CK(cudaMemcpy(x[0], out1, N * sizeof(float), cudaMemcpyDefault));
        CK(cudaSetDevice(0));
        CK(cudaMemcpy(hout, x[0], sizeof hout, cudaMemcpyDeviceToHost));
        if (check_equal("multidev output", hout, want, N))
            return 1;
        result = (result ^ fnv1a(hout, sizeof hout)) * 0x100000001b3ull;
    }
    CK(cudaSetDevice(1));
    CK(cudaGraphExecDestroy(half1));
    CK(cudaSetDevice(0));
    CK(cudaEventDestroy(handed));
    for (uint32_t l = 0; l < LAYERS; l++) {
        CK(cudaSetDevice(home_of(l)));
        CK(cudaFree(dW[l]));
        CK(cudaFree(db[l]));
    }
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        CK(cudaFree(x[d]));
        CK(cudaFree(y[d]));
        CK(cudaStreamDestroy(s[d]));
    }
    printf("result: %016llx\n", (unsigned long long)result);
    return 0;
}

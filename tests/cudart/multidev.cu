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
 *     x1 -> x0 by cudaMemcpy with cudaMemcpyDefault (UVA, across devices),
 *       then x0 -> host.
 * The answer is compared with the host reference bit for bit each step.
 * Under spillway, each device's budget and memory are below its share, so
 * weights on both devices live on the host part of the time, including the
 * ones device 1 reads from device 0.
 */
#include "common.cuh"

enum { N = 1024, LAYERS = 10, HALF = LAYERS / 2, STEPS = 3 };

/* The device a layer's weights live on. */
static int home_of(uint32_t l) { return l < HALF || l == LAYERS - 1 ? 0 : 1; }

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
    for (uint32_t step = 0; step < STEPS; step++) {
        det_fill(hin, N, 4000 + step, 1.0f);
        memcpy(want, hin, sizeof want);
        model_ref(&m, want);

        CK(cudaSetDevice(0));
        CK(cudaMemcpyAsync(x[0], hin, sizeof hin, cudaMemcpyHostToDevice, s[0]));
        for (uint32_t l = 0; l < HALF; l++) {
            dev_layer(dW[l], db[l], x[0], y[0], N, s[0]);
            float *t = x[0];
            x[0] = y[0];
            y[0] = t;
        }
        CK(cudaMemcpyPeerAsync(x[1], 1, x[0], 0, N * sizeof(float), s[0]));
        CK(cudaEventRecord(handed, s[0]));

        CK(cudaSetDevice(1));
        CK(cudaStreamWaitEvent(s[1], handed, 0));
        for (uint32_t l = HALF; l < LAYERS; l++) { /* the last: weights on device 0 */
            dev_layer(dW[l], db[l], x[1], y[1], N, s[1]);
            float *t = x[1];
            x[1] = y[1];
            y[1] = t;
        }
        CK(cudaStreamSynchronize(s[1]));
        CK(cudaMemcpy(x[0], x[1], N * sizeof(float), cudaMemcpyDefault));
        CK(cudaSetDevice(0));
        CK(cudaMemcpy(hout, x[0], sizeof hout, cudaMemcpyDeviceToHost));
        if (check_equal("multidev output", hout, want, N))
            return 1;
        result = (result ^ fnv1a(hout, sizeof hout)) * 0x100000001b3ull;
    }
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

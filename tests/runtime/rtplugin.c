/*
 * A plugin the way a Python extension is one: a shared object linked with
 * its own runtime (the stand-in, tagged PLUGIN_TAG), loaded by the program
 * with dlopen(RTLD_LOCAL), so its runtime is not in the global scope.
 * plugin_run_<tag>() allocates, launches sg_fill_u32, checks the result
 * and frees, all through the runtime. Returns 0 when all is well, else
 * the failing call's error (or -1 for a wrong result).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define RUN CAT(plugin_run_, PLUGIN_TAG)
#define STR_(x) #x
#define STR(x) STR_(x)

int RUN(uint32_t value);

#define BIG (4u << 20)

#define CK(call)                                                                    \
    do {                                                                            \
        int e_ = (int)(call);                                                       \
        if (e_) {                                                                   \
            fprintf(stderr, "plugin %s: %s failed: %d\n", STR(PLUGIN_TAG), #call, e_); \
            return e_;                                                              \
        }                                                                           \
    } while (0)

__attribute__((visibility("default"))) int RUN(uint32_t value)
{
    void *buf;
    CUmodule mod;
    CUfunction fill;
    CK(cudaMalloc(&buf, BIG));
    CK(cuModuleLoadData(&mod, "simgpu-builtin"));
    CK(cuModuleGetFunction(&fill, mod, "sg_fill_u32"));
    uint64_t n = BIG / 4;
    void *args[] = {&buf, &value, &n};
    CK(cudaLaunchKernel((const void *)fill, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, 0));
    uint32_t got[2];
    CK(cuMemcpyDtoH(got, (CUdeviceptr)buf + BIG - 8, 8));
    if (got[0] != value || got[1] != value) {
        fprintf(stderr, "plugin %s: buffer holds %u, want %u\n", STR(PLUGIN_TAG), got[1], value);
        return -1;
    }
    CK(cudaFree(buf));
    return 0;
}

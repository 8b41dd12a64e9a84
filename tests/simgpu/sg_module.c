/*
 * Modules, libraries, function and kernel handles, parameter info, and
 * kernel launches.
 *
 * A CUfunction (from cuModuleGetFunction or cuKernelGetFunction) and a
 * CUkernel (from cuLibraryGetKernel) are distinct handle kinds, as in the
 * driver: launches accept both, cuFuncGetParamInfo refuses a CUkernel
 * unless SIMGPU_FUNC_ACCEPTS_KERNEL=1 (what peers report of the real one).
 */
#include "sg.h"

#include <stdlib.h>
#include <string.h>

#define IMAGE_MAGIC "simgpu-builtin"
#define FATBINC_MAGIC 0x466243B1u /* __fatBinC_Wrapper_t, what nvcc registers */
#define FATBIN_MAGIC 0xBA55ED50u  /* the fat binary itself */

typedef struct func {
    const sg_kernel_t *kernel;
    struct func *twin; /* a CUkernel's own CUfunction */
    struct func *next_free;
    int max_dynamic_smem, carveout; /* the settable attributes */
    int device; /* its module's device; -1: a library's, usable on any */
} func_t; /* both CUfunction and CUkernel point at one of these */

typedef struct {
    int kind;        /* SG_H_MODULE or SG_H_LIBRARY */
    func_t **funcs;  /* one per built-in kernel, made when first asked for */
    func_t **kfuncs; /* library only: the CUfunction of each CUkernel */
    int device;      /* the current context's when loaded (-1: none) */
} image_t;

/* Handles freed by unloads, reused last-freed first: the driver recycles
 * handle addresses too, and this makes it certain, so that a kernel got
 * after an unload can sit where another kernel, of another parameter
 * layout, sat before. g.lock held for both. */
static func_t *free_funcs;

static func_t *func_take(const sg_kernel_t *k, int kind, int device)
{
    func_t *f = free_funcs;
    if (f)
        free_funcs = f->next_free;
    else if (!(f = malloc(sizeof *f)))
        return NULL;
    *f = (func_t){.kernel = k, .max_dynamic_smem = 48 << 10, .carveout = -1, .device = device};
    sg_handle_add(f, kind);
    return f;
}

static void func_give(func_t *f)
{
    if (!f)
        return;
    sg_handle_del(f);
    f->next_free = free_funcs;
    free_funcs = f;
}

/* A fat binary that nvcc built (the runtime passes its
 * __fatBinC_Wrapper_t) is accepted as the built-in image: its sm_90 code
 * cannot run here, so its kernels are resolved by name to the built-ins
 * (see resolve()). An image is also simgpu's when its text starts with
 * the magic, or when its first line carries it (a PTX comment such as
 * "// simgpu-builtin", so that one image serves both a real driver and
 * simgpu). */
static bool image_ok(const void *image)
{
    if (!image)
        return false;
    uint32_t magic;
    memcpy(&magic, image, sizeof magic);
    if (magic == FATBINC_MAGIC || magic == FATBIN_MAGIC)
        return true;
    const char *s = image, *nl = strchr(s, '\n'), *m = strstr(s, IMAGE_MAGIC);
    return m == s || (m && nl && m < nl && strncmp(s, "//", 2) == 0);
}

static CUresult image_load(int kind, const void *data, image_t **out)
{
    if (!image_ok(data))
        return CUDA_ERROR_INVALID_IMAGE;
    image_t *m = calloc(1, sizeof *m);
    size_t n = (size_t)sg_kernel_count();
    if (m) {
        m->funcs = calloc(n, sizeof *m->funcs);
        m->kfuncs = calloc(n, sizeof *m->kfuncs);
    }
    if (!m || !m->funcs || !m->kfuncs) {
        if (m) {
            free(m->funcs);
            free(m->kfuncs);
        }
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->kind = kind;
    m->device = sg_current_device();
    sg_lock();
    sg_handle_add(m, kind);
    sg_unlock();
    *out = m;
    return CUDA_SUCCESS;
}

static CUresult image_unload(int kind, void *h)
{
    sg_lock();
    if (sg_handle_kind(h) != kind) {
        sg_unlock();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    image_t *m = h;
    sg_handle_del(m);
    for (int i = 0; i < sg_kernel_count(); i++) {
        func_give(m->kfuncs[i]);
        func_give(m->funcs[i]);
    }
    sg_unlock();
    free(m->funcs);
    free(m->kfuncs);
    free(m);
    return CUDA_SUCCESS;
}

/*
 * The name rule. An extern "C" kernel arrives under its plain name. A C++
 * kernel arrives mangled; it resolves only when the mangled name is
 * exactly the Itanium mangling of the built-in's C parameter list, so a
 * kernel that shares a built-in's name but not its parameters is not
 * run with the wrong layout (cuLibraryGetKernel answers NOT_FOUND).
 * sg_gemv_struct_f32 takes a struct by value, whose mangling depends on
 * the program's own type name: it resolves only by its plain name.
 */
static const struct {
    const char *mangled, *name;
} cxx_names[] = {
    {"_Z11sg_fill_u32Pjjm", "sg_fill_u32"},
    {"_Z11sg_axpy_f32fPKfPfm", "sg_axpy_f32"},
    {"_Z11sg_relu_f32Pfm", "sg_relu_f32"},
    {"_Z11sg_gemv_f32PKfS0_Pfjj", "sg_gemv_f32"},
    {"_Z17sg_gemv_table_f32PKPKfjS0_Pfjj", "sg_gemv_table_f32"},
    {"_Z15sg_checksum_u64PKvmPm", "sg_checksum_u64"},
    {"_Z11sg_gemm_f32PKfS0_Pfjjj", "sg_gemm_f32"},
    {"_Z20spillway_fingerprintPKvmPm", "spillway_fingerprint"},
};

static const char *resolve(const char *name)
{
    if (strncmp(name, "_Z", 2) != 0)
        return name;
    for (size_t i = 0; i < sizeof cxx_names / sizeof cxx_names[0]; i++)
        if (strcmp(cxx_names[i].mangled, name) == 0)
            return cxx_names[i].name;
    return NULL;
}

static CUresult image_get(int kind, void *h, const char *name, func_t **out)
{
    if (!out || !name)
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    if (sg_handle_kind(h) != kind) {
        sg_unlock();
        return CUDA_ERROR_INVALID_HANDLE;
    }
    image_t *m = h;
    name = resolve(name);
    CUresult r = CUDA_ERROR_NOT_FOUND;
    for (int i = 0; name && i < sg_kernel_count(); i++) {
        const sg_kernel_t *k = sg_kernel_at(i);
        if (strcmp(k->name, name) != 0)
            continue;
        /* A module's functions exist in the context it was loaded in
         * only; a library's kernels are loaded into each context on
         * demand by the driver, so they (and their one CUfunction here)
         * serve every device. */
        if (!m->funcs[i] && kind == SG_H_MODULE) {
            m->funcs[i] = func_take(k, SG_H_FUNC, m->device);
        } else if (!m->funcs[i]) {
            m->funcs[i] = func_take(k, SG_H_KERNEL, -1);
            m->kfuncs[i] = m->funcs[i] ? func_take(k, SG_H_FUNC, -1) : NULL;
            if (m->funcs[i])
                m->funcs[i]->twin = m->kfuncs[i];
        }
        r = m->funcs[i] && (kind == SG_H_MODULE || m->kfuncs[i]) ? CUDA_SUCCESS
                                                                   : CUDA_ERROR_OUT_OF_MEMORY;
        if (r == CUDA_SUCCESS)
            *out = m->funcs[i];
        break;
    }
    sg_unlock();
    return r;
}

SG_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    SG_ENTER(cuModuleLoadData, API);
    if (!module)
        return CUDA_ERROR_INVALID_VALUE;
    return image_load(SG_H_MODULE, image, (image_t **)module);
}

SG_EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
    SG_ENTER(cuModuleUnload, API);
    return image_unload(SG_H_MODULE, hmod);
}

SG_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    SG_ENTER(cuModuleGetFunction, API);
    return image_get(SG_H_MODULE, hmod, name, (func_t **)hfunc);
}

SG_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
                                     CUjit_option *jitOptions, void **jitOptionsValues,
                                     unsigned int numJitOptions,
                                     CUlibraryOption *libraryOptions,
                                     void **libraryOptionValues, unsigned int numLibraryOptions)
{
    SG_ENTER(cuLibraryLoadData, API);
    if (!library)
        return CUDA_ERROR_INVALID_VALUE;
    return image_load(SG_H_LIBRARY, code, (image_t **)library);
}

SG_EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
    SG_ENTER(cuLibraryUnload, API);
    return image_unload(SG_H_LIBRARY, library);
}

SG_EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    SG_ENTER(cuLibraryGetKernel, API);
    return image_get(SG_H_LIBRARY, library, name, (func_t **)pKernel);
}

SG_EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    SG_ENTER(cuKernelGetFunction, API);
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    sg_lock();
    int k = sg_handle_kind(kernel);
    sg_unlock();
    if (k != SG_H_KERNEL)
        return CUDA_ERROR_INVALID_HANDLE;
    *pFunc = (CUfunction)((func_t *)kernel)->twin;
    return CUDA_SUCCESS;
}

/* ---- parameter info ---- */

static CUresult param_info(const void *h, size_t i, size_t *off, size_t *size)
{
    const sg_kernel_t *k = ((const func_t *)h)->kernel;
    if (i >= (size_t)k->nparams)
        return CUDA_ERROR_INVALID_VALUE;
    if (off)
        *off = k->param_off[i];
    if (size)
        *size = k->param_size[i];
    return CUDA_SUCCESS;
}

static int kind_of(const void *h)
{
    sg_lock();
    int k = sg_handle_kind(h);
    sg_unlock();
    return k;
}

SG_EXPORT CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                                      size_t *paramSize)
{
    SG_ENTER(cuFuncGetParamInfo, API);
    int k = kind_of(func);
    if (k != SG_H_FUNC && !(k == SG_H_KERNEL && SG->cfg.func_accepts_kernel))
        return CUDA_ERROR_INVALID_HANDLE;
    return param_info(func, paramIndex, paramOffset, paramSize);
}

SG_EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
                                        size_t *paramSize)
{
    SG_ENTER(cuKernelGetParamInfo, API);
    if (kind_of(kernel) != SG_H_KERNEL)
        return CUDA_ERROR_INVALID_HANDLE;
    return param_info(kernel, paramIndex, paramOffset, paramSize);
}

SG_EXPORT CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
    SG_ENTER(cuFuncGetName, API);
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (kind_of(hfunc) != SG_H_FUNC)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = ((func_t *)hfunc)->kernel->name;
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
    SG_ENTER(cuKernelGetName, API);
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (kind_of(hfunc) != SG_H_KERNEL)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = ((func_t *)hfunc)->kernel->name;
    return CUDA_SUCCESS;
}

/* ---- function attributes ----
 * What an H100 reports for a small sm_90 kernel (the built-ins have no
 * real code, so register and local-memory counts are nominal). The
 * dynamic shared memory limit and the carveout can be set, as frameworks
 * do before launching kernels with large shared memory. */

static CUresult func_attr(func_t *f, CUfunction_attribute a, int *pi)
{
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 16; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = f->max_dynamic_smem; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = f->carveout; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *pi = 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static CUresult func_set_attr(func_t *f, CUfunction_attribute a, int v)
{
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        if (v < 0 || v > 232448)
            return CUDA_ERROR_INVALID_VALUE;
        f->max_dynamic_smem = v;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if (v < -1 || v > 100)
            return CUDA_ERROR_INVALID_VALUE;
        f->carveout = v;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

SG_EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    SG_ENTER(cuFuncGetAttribute, API);
    int k = kind_of(hfunc);
    if (k != SG_H_FUNC && !(k == SG_H_KERNEL && SG->cfg.func_accepts_kernel))
        return CUDA_ERROR_INVALID_HANDLE;
    return func_attr((func_t *)hfunc, attrib, pi);
}

SG_EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    SG_ENTER(cuFuncSetAttribute, API);
    if (kind_of(hfunc) != SG_H_FUNC)
        return CUDA_ERROR_INVALID_HANDLE;
    return func_set_attr((func_t *)hfunc, attrib, value);
}

SG_EXPORT CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
                                        CUdevice dev)
{
    SG_ENTER(cuKernelGetAttribute, API);
    if (kind_of(kernel) != SG_H_KERNEL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    return func_attr((func_t *)kernel, attrib, pi);
}

/* A kernel's setting holds for its function too: one device here. */
SG_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                        CUdevice dev)
{
    SG_ENTER(cuKernelSetAttribute, API);
    if (kind_of(kernel) != SG_H_KERNEL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    func_t *f = (func_t *)kernel;
    CUresult r = func_set_attr(f, attrib, val);
    if (r == CUDA_SUCCESS && f->twin)
        func_set_attr(f->twin, attrib, val);
    return r;
}

/* ---- launches ---- */

const sg_kernel_t *sg_func_kernel(const void *h, int *device)
{
    int kind = sg_handle_kind(h);
    if (kind != SG_H_FUNC && kind != SG_H_KERNEL)
        return NULL;
    if (device)
        *device = ((const func_t *)h)->device;
    return ((const func_t *)h)->kernel;
}

/* Packs the parameters into args, from kernelParams or from an extra
 * buffer; exactly one form must be given when the kernel has parameters.
 * Graph kernel nodes (sg_graphparams.c) pack theirs the same way. */
CUresult sg_pack_args(const sg_kernel_t *k, void **params, void **extra, unsigned char *args)
{
    if (params && extra)
        return CUDA_ERROR_INVALID_VALUE;
    memset(args, 0, SG_MAX_ARGS);
    if (params) {
        for (int i = 0; i < k->nparams; i++) {
            if (!params[i])
                return CUDA_ERROR_INVALID_VALUE;
            memcpy(args + k->param_off[i], params[i], k->param_size[i]);
        }
        return CUDA_SUCCESS;
    }
    if (extra) {
        void *buf = NULL;
        size_t *size = NULL;
        for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buf = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                size = extra[i + 1];
            else
                return CUDA_ERROR_INVALID_VALUE;
        }
        if (!buf || !size || *size < k->args_size)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(args, buf, k->args_size);
        return CUDA_SUCCESS;
    }
    return k->nparams == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult launch(CUfunction f, const unsigned dims[7], CUstream hs, void **params,
                       void **extra, bool per_thread)
{
    unsigned gx = dims[0], gy = dims[1], gz = dims[2];
    int kind = kind_of(f);
    if (kind != SG_H_FUNC && kind != SG_H_KERNEL)
        return CUDA_ERROR_INVALID_HANDLE;
    /* A function of another context's module is an invalid handle here,
     * as in the driver. */
    int dev = sg_current_device();
    if (sg_other_device(((func_t *)f)->device, dev))
        return CUDA_ERROR_INVALID_HANDLE;
    if (gx == 0 || gy == 0 || gz == 0)
        return CUDA_ERROR_INVALID_VALUE;
    const sg_kernel_t *k = ((func_t *)f)->kernel;
    sg_op_t *op = sg_op_new(SG_OP_KERNEL, k->name);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = sg_pack_args(k, params, extra, op->args);
    if (r != CUDA_SUCCESS) {
        free(op);
        return r;
    }
    op->kernel = k;
    op->device = dev > 0 ? dev : 0;
    /* Kept for cuGraphKernelNodeGetParams when this launch is captured. */
    op->func = f;
    memcpy(op->grid, dims, sizeof op->grid);
    memcpy(op->block, dims + 3, sizeof op->block);
    op->smem = dims[6];
    /* The table is read now, before taking g.lock (peek takes mem_lock). */
    op->nranges = k->ranges(op->args, op->ranges, sg_mem_peek);
    sg_lock();
    /* The kernel runs on the current context's device, so the stream must
     * be one of that device's (or the legacy or per-thread one, which
     * every device shares here), as the driver requires. */
    sg_stream_t *s = sg_stream_get(hs, per_thread);
    if (s && !sg_other_device(s->device, dev)) {
        r = sg_submit(s, op);
    } else {
        r = CUDA_ERROR_INVALID_HANDLE;
        sg_op_put(op);
    }
    sg_unlock();
    return r;
}

#define LAUNCH_PARAMS                                                                     \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,   \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,              \
     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)

SG_EXPORT CUresult cuLaunchKernel LAUNCH_PARAMS
{
    SG_ENTER(cuLaunchKernel, LAUNCH);
    const unsigned dims[7] = {gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                              sharedMemBytes};
    return launch(f, dims, hStream, kernelParams, extra, false);
}

SG_EXPORT CUresult cuLaunchKernel_ptsz LAUNCH_PARAMS
{
    SG_ENTER(cuLaunchKernel, LAUNCH);
    const unsigned dims[7] = {gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                              sharedMemBytes};
    return launch(f, dims, hStream, kernelParams, extra, true);
}

/* A cooperative launch runs like any other here: simgpu runs one kernel
 * at a time, so every block is resident together anyway. */
#define COOP_PARAMS                                                                       \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,   \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,              \
     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams)

SG_EXPORT CUresult cuLaunchCooperativeKernel COOP_PARAMS
{
    SG_ENTER(cuLaunchCooperativeKernel, LAUNCH);
    const unsigned dims[7] = {gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                              sharedMemBytes};
    return launch(f, dims, hStream, kernelParams, NULL, false);
}

SG_EXPORT CUresult cuLaunchCooperativeKernel_ptsz COOP_PARAMS
{
    SG_ENTER(cuLaunchCooperativeKernel, LAUNCH);
    const unsigned dims[7] = {gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                              sharedMemBytes};
    return launch(f, dims, hStream, kernelParams, NULL, true);
}

static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra,
                          bool per_thread)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    const unsigned dims[7] = {c->gridDimX,  c->gridDimY,  c->gridDimZ,     c->blockDimX,
                              c->blockDimY, c->blockDimZ, c->sharedMemBytes};
    return launch(f, dims, c->hStream, params, extra, per_thread);
}


SG_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                    void **kernelParams, void **extra)
{
    SG_ENTER(cuLaunchKernelEx, LAUNCH);
    return launch_ex(config, f, kernelParams, extra, false);
}

SG_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                         void **kernelParams, void **extra)
{
    SG_ENTER(cuLaunchKernelEx, LAUNCH);
    return launch_ex(config, f, kernelParams, extra, true);
}

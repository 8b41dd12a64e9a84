/*
 * drv_load.c: the loader route, done the way libcudart and libcublas do it
 * (cuda-facts.md, section 1): dlopen("libcuda.so.1"), exactly one dlsym, of
 * cuGetProcAddress_v2, and every other entry point through
 * cuGetProcAddress with an explicit cudaVersion and flags.  The first
 * requests are the runtime's own, in its order, because an interposer has to
 * answer them (in particular, it must hand back its own cuGetProcAddress).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "drv.h"

/* One request through gpa; on failure fill *err and return the error.  A
 * "success" without a function or with a non-success status is reported as
 * CUDA_ERROR_NOT_FOUND, since the caller could not use it. */
static CUresult resolve(PFN_cuGetProcAddress_v12000 gpa, const char *symbol,
                        int version, cuuint64_t flags, void **pfn,
                        sg_drv_err_t *err)
{
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult rc;

    *pfn = NULL;
    rc = gpa(symbol, pfn, version, flags, &status);
    if (rc == CUDA_SUCCESS && (*pfn == NULL || status != CU_GET_PROC_ADDRESS_SUCCESS))
        rc = CUDA_ERROR_NOT_FOUND;
    if (rc != CUDA_SUCCESS) {
        err->call = "cuGetProcAddress_v2";
        snprintf(err->what, sizeof(err->what), "%s, %d, flags %llu: status %d",
                 symbol, version, (unsigned long long)flags, (int)status);
    }
    return rc;
}

/* Resolve one table row; stops the enclosing function on failure. */
#define SG_DRV_RESOLVE(field, pfn, sym, version, flags)                         \
    do {                                                                        \
        void *p_;                                                               \
        CUresult rc_ = resolve(d->GetProcAddress_v12000, #sym, version, flags,  \
                               &p_, err);                                       \
        if (rc_ != CUDA_SUCCESS)                                                \
            return rc_;                                                         \
        d->field = (pfn)p_;                                                     \
    } while (0);

CUresult sg_drv_load(sg_drv_t *d, sg_drv_err_t *err)
{
    PFN_cuGetProcAddress_v12000 gpa;
    CUdriverProcAddressQueryResult status;
    void *p;
    CUresult rc;

    memset(d, 0, sizeof(*d));
    d->handle = dlopen("libcuda.so.1", RTLD_NOW);
    if (d->handle == NULL) {
        err->call = "dlopen";
        snprintf(err->what, sizeof(err->what), "libcuda.so.1: %s", dlerror());
        return CUDA_ERROR_NOT_FOUND;
    }
    /* The one and only dlsym: everything else comes through this pointer. */
    gpa = (PFN_cuGetProcAddress_v12000)dlsym(d->handle, "cuGetProcAddress_v2");
    if (gpa == NULL) {
        err->call = "dlsym";
        snprintf(err->what, sizeof(err->what), "cuGetProcAddress_v2: %s", dlerror());
        return CUDA_ERROR_NOT_FOUND;
    }

    /* The runtime's probe with an empty name.  Its answer is not specified
     * (a real driver says "not found"); it is made only so that whatever
     * sits in between must cope with it, so the result is ignored. */
    (void)gpa("", &p, 0, 0, &status);

    rc = resolve(gpa, "cuInit", 2000, 0, &p, err);
    if (rc != CUDA_SUCCESS)
        return rc;
    d->Init = (PFN_cuInit_v2000)p;
    rc = resolve(gpa, "cuGetProcAddress", 11030, 0, &p, err);
    if (rc != CUDA_SUCCESS)
        return rc;
    d->GetProcAddress_v11030 = (PFN_cuGetProcAddress_v11030)p;
    rc = resolve(gpa, "cuGetProcAddress", 12000, 0, &p, err);
    if (rc != CUDA_SUCCESS)
        return rc;
    d->GetProcAddress_v12000 = (PFN_cuGetProcAddress_v12000)p;

    /* From here on, as the runtime does, through the pointer the driver (or
     * an interposer) handed back, not the one dlsym found. */
    SG_DRV_CORE(SG_DRV_RESOLVE)
    return CUDA_SUCCESS;
}

CUresult sg_drv_load_extra(sg_drv_t *d, sg_drv_err_t *err)
{
    SG_DRV_EXTRA(SG_DRV_RESOLVE)
    return CUDA_SUCCESS;
}

CUresult sg_drv_load_host(sg_drv_t *d, sg_drv_err_t *err)
{
    SG_DRV_HOST(SG_DRV_RESOLVE)
    return CUDA_SUCCESS;
}

const char *sg_drv_errname(const sg_drv_t *d, CUresult rc, char *buf, size_t len)
{
    const char *name = NULL;

    if (d->GetErrorName != NULL && d->GetErrorName(rc, &name) == CUDA_SUCCESS &&
        name != NULL)
        return name;
    snprintf(buf, len, "CUresult %d", (int)rc);
    return buf;
}

/*
 * drv_link.c: the linked route.  Each core entry is the symbol that an
 * ordinary program linked with -lcuda calls: cuda.h's macros rename the base
 * name to the current ABI variant (cuMemAlloc -> cuMemAlloc_v2), exactly as
 * they do in application code.  Taking the address goes through the
 * dynamic linker, so an LD_PRELOAD interposer that exports these symbols
 * sees the calls just as it would see direct calls.
 */
#include <string.h>

#include "drv.h"

#define SG_DRV_ASSIGN(field, pfn, sym, version, flags) d->field = sym;

void sg_drv_link(sg_drv_t *d)
{
    memset(d, 0, sizeof(*d));
    SG_DRV_CORE(SG_DRV_ASSIGN)
}

void sg_drv_link_host(sg_drv_t *d)
{
    SG_DRV_HOST(SG_DRV_ASSIGN)
}

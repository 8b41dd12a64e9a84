/*
 * cuMemGetHandleForAddressRange: a dma-buf file descriptor for a range of
 * device memory, as a network card's driver imports it (GPUDirect RDMA
 * through dma-buf, NCCL's NCCL_DMABUF_ENABLE). The importer reaches the
 * physical memory behind the range when the call was made, whatever maps
 * the range later.
 *
 * simgpu has no importer: the descriptor is a memfd standing for the
 * buffer, kept open by whoever holds it. Unmapping or freeing memory of a
 * range whose descriptor is still open is a hazard: the importer would
 * keep reaching bytes the address no longer maps (an interposer that
 * moved exported memory would do just that).
 */
#include "sg.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DMABUF 64

typedef struct {
    bool used;
    int fd;
    ino_t ino; /* the memfd's, so that a reused number is not taken for it */
    uint64_t va, len;
} dmabuf_t;

static dmabuf_t bufs[MAX_DMABUF]; /* guarded by sg_lock */

/* Whether every byte of [va, +len) is mapped device memory. */
static CUresult device_mapped(uint64_t va, uint64_t len)
{
    for (uint64_t p = va; p < va + len;) {
        sg_map_t *m = sg_map_find(p);
        if (!m)
            return CUDA_ERROR_INVALID_VALUE;
        if (m->phys->loc != SG_LOC_DEVICE)
            return CUDA_ERROR_NOT_SUPPORTED;
        p = m->va + m->size;
    }
    return CUDA_SUCCESS;
}

SG_EXPORT CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size,
                                                 CUmemRangeHandleType handleType,
                                                 unsigned long long flags)
{
    SG_ENTER(cuMemGetHandleForAddressRange, API);
    if (!handle || handleType != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || flags || size == 0 ||
        dptr % 4096 || size % 4096)
        return CUDA_ERROR_INVALID_VALUE;
    sg_mem_rdlock();
    CUresult r = device_mapped(dptr, size);
    sg_mem_unlock();
    if (r != CUDA_SUCCESS)
        return r;
    int fd = memfd_create("simgpu-dmabuf", MFD_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    sg_lock();
    r = CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < MAX_DMABUF && r != CUDA_SUCCESS; i++)
        if (!bufs[i].used) {
            bufs[i] = (dmabuf_t){.used = true, .fd = fd, .ino = st.st_ino, .va = dptr, .len = size};
            r = CUDA_SUCCESS;
        }
    sg_unlock();
    if (r != CUDA_SUCCESS)
        close(fd);
    else
        *(int *)handle = fd;
    return r;
}

/* Whether buffer b's descriptor is still the one handed out. */
static bool still_open(const dmabuf_t *b)
{
    struct stat st;
    return fstat(b->fd, &st) == 0 && st.st_ino == b->ino;
}

void sg_dmabuf_check(const char *call, uint64_t addr, uint64_t len)
{
    for (int i = 0; i < MAX_DMABUF; i++) {
        dmabuf_t *b = &bufs[i];
        if (!b->used || addr >= b->va + b->len || b->va >= addr + len)
            continue;
        if (!still_open(b))
            b->used = false;
        else
            sg_hazard("%s(0x%llx, %llu) unmaps memory of dma-buf fd %d [0x%llx, +%llu), still "
                      "open: its importer would reach bytes the address no longer maps",
                      call, (unsigned long long)addr, (unsigned long long)len, b->fd,
                      (unsigned long long)b->va, (unsigned long long)b->len);
    }
}

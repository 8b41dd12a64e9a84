/*
 * Memory: the simulated device address space and the bytes behind it.
 *
 *   device VA region  [dev_base, dev_base+va_size)   PROT_NONE, always:
 *                     a CPU dereference of a device pointer crashes, as on
 *                     a real GPU.
 *   shadow region     [shadow_base, ...)              same offsets; each
 *                     mapping's bytes appear here, mmapped from
 *   physical memory   one memfd; a handle is a window [file_off, +size).
 *                     Two mappings of one handle share its bytes, and the
 *                     bytes outlive any mapping: unmap and remap elsewhere,
 *                     the data is intact, as with cuMemMap.
 *
 * Pinned host memory (cuMemAllocHost) is ordinary anonymous memory whose
 * device pointer is its host pointer (UVA).
 *
 * Reservations, mappings and pinned blocks are sorted arrays: they hold
 * hundreds of entries, and binary search keeps translation O(log n).
 */
#include "sg.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <uthash.h>

#define PAGE 4096ull
#define PHYS_FILE_SIZE (1ull << 42) /* sparse: costs nothing until touched */

typedef struct {
    uint64_t base, size;
    bool legacy;
    uint64_t asked; /* legacy: the size the caller asked for */
    int device;     /* legacy: the device it was made on */
} span_t;

typedef struct {
    span_t *v;
    size_t n, cap;
} spans_t;

typedef struct {
    sg_map_t *v;
    size_t n, cap;
} maps_t;

typedef struct phys_entry {
    uint64_t id;
    sg_phys_t phys;
    UT_hash_handle hh;
} phys_entry_t;

static struct {
    pthread_rwlock_t lock;
    uint64_t dev_base, shadow_base, size;
    int fd;
    uint64_t next_off;
    uint64_t next_id;
    spans_t resv, pinned;
    maps_t maps;
    phys_entry_t *phys;
    /* A leaf lock for the byte counters: memory is freed under the mem
     * write lock, where g.lock must not be taken. */
    pthread_mutex_t acct;
    uint64_t device, device_peak, host_vmm, host_vmm_peak, pinned_bytes, pinned_peak;
    /* Each device has memory of its own, SIMGPU_MEM each; device and
     * device_peak above are their sum, as reports always showed them. */
    uint64_t dev_bytes[SG_MAX_DEVICES], dev_peak[SG_MAX_DEVICES];
} mem = {.acct = PTHREAD_MUTEX_INITIALIZER};

static bool charge(uint64_t *cur, uint64_t *peak, uint64_t bytes, uint64_t limit)
{
    pthread_mutex_lock(&mem.acct);
    bool ok = *cur + bytes <= limit;
    if (ok) {
        *cur += bytes;
        if (*cur > *peak)
            *peak = *cur;
    }
    pthread_mutex_unlock(&mem.acct);
    return ok;
}

static void uncharge(uint64_t *cur, uint64_t bytes)
{
    pthread_mutex_lock(&mem.acct);
    *cur -= bytes;
    pthread_mutex_unlock(&mem.acct);
}

static uint64_t *counter_of(int loc)
{
    return loc == SG_LOC_DEVICE ? &mem.device : &mem.host_vmm;
}

/* Device memory is charged to its device, against that device's
 * SIMGPU_MEM, and to the sum. */
static bool charge_device(int dev, uint64_t bytes)
{
    pthread_mutex_lock(&mem.acct);
    bool ok = mem.dev_bytes[dev] + bytes <= SG->cfg.mem;
    if (ok) {
        mem.dev_bytes[dev] += bytes;
        if (mem.dev_bytes[dev] > mem.dev_peak[dev])
            mem.dev_peak[dev] = mem.dev_bytes[dev];
        mem.device += bytes;
        if (mem.device > mem.device_peak)
            mem.device_peak = mem.device;
    }
    pthread_mutex_unlock(&mem.acct);
    return ok;
}

static void uncharge_loc(int loc, int device, uint64_t size)
{
    if (loc != SG_LOC_DEVICE) {
        uncharge(counter_of(loc), size);
        return;
    }
    pthread_mutex_lock(&mem.acct);
    mem.dev_bytes[device] -= size;
    mem.device -= size;
    pthread_mutex_unlock(&mem.acct);
}

void sg_mem_device_stats(int dev, uint64_t *bytes, uint64_t *peak)
{
    pthread_mutex_lock(&mem.acct);
    *bytes = mem.dev_bytes[dev];
    *peak = mem.dev_peak[dev];
    pthread_mutex_unlock(&mem.acct);
}

void sg_mem_stats(sg_stats_t *st)
{
    pthread_mutex_lock(&mem.acct);
    st->device_bytes = mem.device;
    st->device_bytes_peak = mem.device_peak;
    st->host_vmm_bytes = mem.host_vmm;
    st->host_vmm_bytes_peak = mem.host_vmm_peak;
    st->pinned_bytes = mem.pinned_bytes;
    st->pinned_bytes_peak = mem.pinned_peak;
    pthread_mutex_unlock(&mem.acct);
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) & ~(a - 1);
}

void sg_mem_rdlock(void) { pthread_rwlock_rdlock(&mem.lock); }
void sg_mem_wrlock(void) { pthread_rwlock_wrlock(&mem.lock); }
void sg_mem_unlock(void) { pthread_rwlock_unlock(&mem.lock); }

/* Two equal PROT_NONE regions, aligned to the largest granularity so that
 * reservations can honour any alignment the driver would. */
static uint64_t reserve_region(uint64_t size, uint64_t align)
{
    void *p = mmap(NULL, size + align, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    return align_up((uint64_t)p, align);
}

CUresult sg_mem_init(void)
{
    const sg_config_t *cfg = &SG->cfg;
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    /* Workers hold the read side while kernels run; a waiting unmap must
     * not starve behind a stream of new kernels. */
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&mem.lock, &a);
    uint64_t align = 1ull << 30;
    mem.size = align_up(cfg->va_size, align);
    mem.dev_base = reserve_region(mem.size, align);
    mem.shadow_base = reserve_region(mem.size, align);
    mem.fd = memfd_create("simgpu-phys", MFD_CLOEXEC);
    if (!mem.dev_base || !mem.shadow_base || mem.fd < 0 ||
        ftruncate(mem.fd, PHYS_FILE_SIZE) != 0) {
        fprintf(stderr, "simgpu: cannot set up simulated memory (SIMGPU_VA=%llu)\n",
                (unsigned long long)cfg->va_size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    mem.next_id = 1;
    return CUDA_SUCCESS;
}

bool sg_mem_is_device_va(uint64_t addr)
{
    return addr >= mem.dev_base && addr < mem.dev_base + mem.size;
}

/* ---- sorted arrays ---------------------------------------------------- */

/* Index of the last span whose base <= addr, or -1. */
static long span_floor(const spans_t *s, uint64_t addr)
{
    long lo = 0, hi = (long)s->n - 1, ans = -1;
    while (lo <= hi) {
        long mid = (lo + hi) / 2;
        if (s->v[mid].base <= addr) { ans = mid; lo = mid + 1; }
        else hi = mid - 1;
    }
    return ans;
}

static bool span_insert(spans_t *s, span_t e)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        span_t *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return false;
        s->v = v;
        s->cap = cap;
    }
    size_t i = (size_t)(span_floor(s, e.base) + 1);
    memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof *s->v);
    s->v[i] = e;
    s->n++;
    return true;
}

static void span_remove_at(spans_t *s, size_t i)
{
    memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof *s->v);
    s->n--;
}

static long map_floor(uint64_t addr)
{
    long lo = 0, hi = (long)mem.maps.n - 1, ans = -1;
    while (lo <= hi) {
        long mid = (lo + hi) / 2;
        if (mem.maps.v[mid].va <= addr) { ans = mid; lo = mid + 1; }
        else hi = mid - 1;
    }
    return ans;
}

sg_map_t *sg_map_find(uint64_t addr)
{
    long i = map_floor(addr);
    if (i < 0 || addr >= mem.maps.v[i].va + mem.maps.v[i].size)
        return NULL;
    return &mem.maps.v[i];
}

/* ---- virtual address space ------------------------------------------- */

CUresult sg_va_reserve(uint64_t size, uint64_t align, uint64_t hint, CUdeviceptr *out)
{
    if (align < PAGE)
        align = PAGE;
    uint64_t end = mem.dev_base + mem.size;
    /* First fit at or after the hint (when it lies in the region), else
     * from the bottom: the driver treats the hint as a preference. */
    uint64_t starts[2] = {sg_mem_is_device_va(hint) ? hint : mem.dev_base, mem.dev_base};
    for (int pass = 0; pass < 2; pass++) {
        uint64_t cand = align_up(starts[pass], align);
        for (size_t i = 0; i <= mem.resv.n; i++) {
            uint64_t next = i < mem.resv.n ? mem.resv.v[i].base : end;
            if (i < mem.resv.n && mem.resv.v[i].base + mem.resv.v[i].size <= cand)
                continue;
            if (cand + size <= next && cand + size <= end) {
                if (!span_insert(&mem.resv, (span_t){.base = cand, .size = size}))
                    return CUDA_ERROR_OUT_OF_MEMORY;
                *out = cand;
                return CUDA_SUCCESS;
            }
            if (i < mem.resv.n)
                cand = align_up(mem.resv.v[i].base + mem.resv.v[i].size, align);
        }
    }
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static long resv_index(CUdeviceptr va)
{
    long i = span_floor(&mem.resv, va);
    return (i >= 0 && mem.resv.v[i].base == va) ? i : -1;
}

bool sg_va_reserved(CUdeviceptr va, uint64_t size)
{
    long i = span_floor(&mem.resv, va);
    return i >= 0 && va + size <= mem.resv.v[i].base + mem.resv.v[i].size &&
           !mem.resv.v[i].legacy;
}

/* Frees a whole reservation. Mappings inside it must be gone already. */
CUresult sg_va_free(CUdeviceptr va, uint64_t size)
{
    long i = resv_index(va);
    if (i < 0 || mem.resv.v[i].size != size || mem.resv.v[i].legacy)
        return CUDA_ERROR_INVALID_VALUE;
    long m = map_floor(va + size - 1);
    if (m >= 0 && mem.maps.v[m].va + mem.maps.v[m].size > va)
        return CUDA_ERROR_INVALID_VALUE; /* still mapped */
    span_remove_at(&mem.resv, (size_t)i);
    return CUDA_SUCCESS;
}

/* ---- physical memory -------------------------------------------------- */

CUresult sg_phys_create(uint64_t size, int loc, const CUmemAllocationProp *prop, sg_phys_t **out)
{
    size = align_up(size, PAGE);
    bool dev = loc == SG_LOC_DEVICE;
    int device = dev && prop ? prop->location.id : 0;
    if (mem.next_off + size > PHYS_FILE_SIZE ||
        !(dev ? charge_device(device, size)
              : charge(counter_of(loc), &mem.host_vmm_peak, size, UINT64_MAX)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    phys_entry_t *e = calloc(1, sizeof *e);
    if (!e) {
        uncharge_loc(loc, device, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    e->id = mem.next_id++;
    e->phys.id = e->id;
    e->phys.size = size;
    e->phys.file_off = mem.next_off;
    e->phys.loc = loc;
    e->phys.device = device;
    if (prop)
        e->phys.prop = *prop;
    e->phys.refs = 1;
    e->phys.handle_refs = 1;
    /* Offsets are never reused, so a stale mapping can never alias a new
     * handle's bytes; released windows are punched out of the file. */
    mem.next_off += align_up(size, 1ull << 21);
    HASH_ADD(hh, mem.phys, id, sizeof e->id, e);
    *out = &e->phys;
    return CUDA_SUCCESS;
}

sg_phys_t *sg_phys_find(uint64_t id)
{
    phys_entry_t *e;
    HASH_FIND(hh, mem.phys, &id, sizeof id, e);
    return e ? &e->phys : NULL;
}

void sg_phys_put(sg_phys_t *p)
{
    if (--p->refs > 0)
        return;
    phys_entry_t *e;
    HASH_FIND(hh, mem.phys, &p->id, sizeof p->id, e);
    fallocate(mem.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)p->file_off,
              (off_t)p->size);
    uncharge_loc(p->loc, p->device, p->size);
    HASH_DEL(mem.phys, e);
    free(e);
}

/* ---- mappings ---------------------------------------------------------- */

CUresult sg_map_insert(CUdeviceptr va, uint64_t size, sg_phys_t *p, uint64_t off, bool legacy)
{
    long i = map_floor(va + size - 1);
    if (i >= 0 && mem.maps.v[i].va + mem.maps.v[i].size > va)
        return CUDA_ERROR_INVALID_VALUE; /* overlaps an existing mapping */
    if (mem.maps.n == mem.maps.cap) {
        size_t cap = mem.maps.cap ? mem.maps.cap * 2 : 64;
        sg_map_t *v = realloc(mem.maps.v, cap * sizeof *v);
        if (!v)
            return CUDA_ERROR_OUT_OF_MEMORY;
        mem.maps.v = v;
        mem.maps.cap = cap;
    }
    void *shadow = (void *)(mem.shadow_base + (va - mem.dev_base));
    if (mmap(shadow, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, mem.fd,
             (off_t)(p->file_off + off)) == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t at = (size_t)(map_floor(va) + 1);
    memmove(&mem.maps.v[at + 1], &mem.maps.v[at], (mem.maps.n - at) * sizeof *mem.maps.v);
    mem.maps.v[at] = (sg_map_t){.va = va, .size = size, .phys = p, .phys_off = off,
                                .access = SG_ACCESS_NONE, .legacy = legacy};
    mem.maps.n++;
    p->refs++;
    return CUDA_SUCCESS;
}

/* Removes the mappings that exactly tile [va, va+size). A range that cuts
 * a mapping, or holds a hole, is refused whole: the driver cannot unmap
 * part of a mapping. */
CUresult sg_map_remove(CUdeviceptr va, uint64_t size)
{
    long first = map_floor(va);
    if (first < 0 || mem.maps.v[first].va != va)
        return CUDA_ERROR_INVALID_VALUE;
    size_t last = (size_t)first;
    uint64_t at = va;
    while (last < mem.maps.n && mem.maps.v[last].va == at && at < va + size)
        at += mem.maps.v[last++].size;
    if (at != va + size)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = (size_t)first; i < last; i++) {
        sg_map_t *m = &mem.maps.v[i];
        void *shadow = (void *)(mem.shadow_base + (m->va - mem.dev_base));
        mmap(shadow, m->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
             -1, 0);
        sg_phys_put(m->phys);
    }
    memmove(&mem.maps.v[first], &mem.maps.v[last], (mem.maps.n - last) * sizeof *mem.maps.v);
    mem.maps.n -= last - (size_t)first;
    return CUDA_SUCCESS;
}

/* Grants or revokes access on every mapping in the range, which must be
 * fully mapped. Returns 0 on success, -1 when a byte is unmapped. */
int sg_map_set_access(CUdeviceptr va, uint64_t size, int access, unsigned grant, unsigned revoke)
{
    uint64_t at = va;
    while (at < va + size) {
        sg_map_t *m = sg_map_find(at);
        if (!m)
            return -1;
        at = m->va + m->size;
    }
    for (at = va; at < va + size;) {
        sg_map_t *m = sg_map_find(at);
        m->access = access;
        m->devs = (m->devs | grant) & ~revoke;
        at = m->va + m->size;
    }
    return 0;
}

unsigned sg_peer_mask(int dev)
{
    return __atomic_load_n(&SG->peer[dev], __ATOMIC_ACQUIRE);
}

bool sg_mem_reachable(uint64_t addr, uint64_t len, int dev)
{
    if (!sg_mem_is_device_va(addr))
        return true;
    for (uint64_t at = addr; at < addr + len;) {
        sg_map_t *m = sg_map_find(at);
        if (!m)
            return false;
        bool ok = m->legacy ? m->phys->device == dev || (sg_peer_mask(dev) >> m->phys->device & 1)
                            : (m->devs >> dev & 1) != 0;
        if (!ok)
            return false;
        at = m->va + m->size;
    }
    return true;
}

/* ---- translation -------------------------------------------------------- */

static void note_extent(sg_xlate_t *out, uint64_t id, uint64_t off, uint64_t len)
{
    sg_extent_t *last = out->nextents ? &out->ext[out->nextents - 1] : NULL;
    if (last && last->id == id && last->off + last->len == off)
        last->len += len;
    else if (out->nextents < SG_MAX_PHYS)
        out->ext[out->nextents++] = (sg_extent_t){.id = id, .off = off, .len = len};
}

bool sg_mem_xlate(uint64_t addr, uint64_t len, bool write, bool allow_pageable, sg_xlate_t *out)
{
    memset(out, 0, sizeof *out);
    if (sg_mem_is_device_va(addr)) {
        if (len == 0 || addr + len > mem.dev_base + mem.size)
            return len == 0;
        for (uint64_t at = addr; at < addr + len;) {
            sg_map_t *m = sg_map_find(at);
            if (!m || m->access < (write ? SG_ACCESS_RW : SG_ACCESS_READ))
                return false;
            uint64_t end = m->va + m->size < addr + len ? m->va + m->size : addr + len;
            note_extent(out, m->phys->id, m->phys_off + (at - m->va), end - at);
            if (m->phys->loc == SG_LOC_DEVICE)
                out->device_bytes += end - at;
            else
                out->host_bytes += end - at;
            at = end;
        }
        out->host = (void *)(mem.shadow_base + (addr - mem.dev_base));
        return true;
    }
    void *base;
    uint64_t size;
    if (sg_pinned_find((void *)addr, &base, &size)) {
        if (addr + len > (uint64_t)base + size)
            return false;
        out->host = (void *)addr;
        out->host_bytes = len;
        return true;
    }
    if (!allow_pageable || addr == 0)
        return false;
    out->host = (void *)addr;
    out->host_bytes = len;
    return true;
}

bool sg_mem_peek(uint64_t addr, void *dst, uint64_t len)
{
    sg_xlate_t x;
    sg_mem_rdlock();
    bool ok = sg_mem_xlate(addr, len, false, false, &x);
    if (ok)
        memcpy(dst, x.host, len);
    sg_mem_unlock();
    return ok;
}

/* ---- pinned host memory -------------------------------------------------- */

CUresult sg_pinned_alloc(uint64_t size, void **out)
{
    uint64_t len = align_up(size ? size : 1, PAGE);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!span_insert(&mem.pinned, (span_t){.base = (uint64_t)p, .size = len})) {
        munmap(p, len);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    charge(&mem.pinned_bytes, &mem.pinned_peak, len, UINT64_MAX);
    *out = p;
    return CUDA_SUCCESS;
}

CUresult sg_pinned_free(void *p)
{
    long i = span_floor(&mem.pinned, (uint64_t)p);
    if (i < 0 || mem.pinned.v[i].base != (uint64_t)p)
        return CUDA_ERROR_INVALID_VALUE;
    munmap(p, mem.pinned.v[i].size);
    uncharge(&mem.pinned_bytes, mem.pinned.v[i].size);
    span_remove_at(&mem.pinned, (size_t)i);
    return CUDA_SUCCESS;
}

bool sg_pinned_find(const void *p, void **base, uint64_t *size)
{
    long i = span_floor(&mem.pinned, (uint64_t)p);
    if (i < 0 || (uint64_t)p >= mem.pinned.v[i].base + mem.pinned.v[i].size)
        return false;
    *base = (void *)mem.pinned.v[i].base;
    *size = mem.pinned.v[i].size;
    return true;
}

/* ---- legacy device allocations -------------------------------------------- */

CUresult sg_legacy_alloc(uint64_t size, int device, CUdeviceptr *out)
{
    uint64_t len = align_up(size, PAGE);
    CUdeviceptr va;
    CUresult r = sg_va_reserve(len, PAGE, 0, &va);
    if (r != CUDA_SUCCESS)
        return r;
    mem.resv.v[resv_index(va)].legacy = true;
    mem.resv.v[resv_index(va)].asked = size;
    mem.resv.v[resv_index(va)].device = device;
    sg_phys_t *p;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED};
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    r = sg_phys_create(len, SG_LOC_DEVICE, &prop, &p);
    if (r == CUDA_SUCCESS) {
        r = sg_map_insert(va, len, p, 0, true);
        sg_phys_put(p); /* the mapping holds it now */
    }
    if (r != CUDA_SUCCESS) {
        span_remove_at(&mem.resv, (size_t)resv_index(va));
        return r;
    }
    sg_map_find(va)->access = SG_ACCESS_RW;
    *out = va;
    return CUDA_SUCCESS;
}

CUresult sg_legacy_free(CUdeviceptr p)
{
    long i = resv_index(p);
    if (i < 0 || !mem.resv.v[i].legacy)
        return CUDA_ERROR_INVALID_VALUE;
    sg_map_remove(p, mem.resv.v[i].size);
    span_remove_at(&mem.resv, (size_t)i);
    return CUDA_SUCCESS;
}

/* The allocation is what the caller asked for: the page rounding behind
 * it belongs to no allocation (spillway answers the same way for the
 * allocations it tracks). */
int sg_legacy_device(CUdeviceptr p)
{
    long i = span_floor(&mem.resv, p);
    return i >= 0 && mem.resv.v[i].legacy ? mem.resv.v[i].device : 0;
}

bool sg_legacy_range(CUdeviceptr p, CUdeviceptr *base, uint64_t *size)
{
    long i = span_floor(&mem.resv, p);
    if (i < 0 || !mem.resv.v[i].legacy || p >= mem.resv.v[i].base + mem.resv.v[i].asked)
        return false;
    *base = mem.resv.v[i].base;
    *size = mem.resv.v[i].asked;
    return true;
}

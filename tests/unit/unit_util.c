/* Helpers the core suites share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sw.h"
#include "unit.h"

sw_alloc_t *unit_mk_alloc(uint64_t va, const uint64_t *sizes, uint32_t n)
{
    sw_alloc_t *a = calloc(1, sizeof(*a));
    ck_assert_ptr_nonnull(a);
    a->chunks = calloc(n ? n : 1, sizeof(sw_chunk_t));
    ck_assert_ptr_nonnull(a->chunks);
    a->va = va;
    a->nchunks = n;
    uint64_t off = 0;
    for (uint32_t i = 0; i < n; i++) {
        sw_chunk_t *c = &a->chunks[i];
        c->va = va + off;
        c->size = sizes[i];
        c->where = SW_ON_DEVICE;
        c->handle = 0x1000 + i;
        c->alloc = a;
        c->index = i;
        c->slot = -1;
        off += sizes[i];
    }
    a->reserved = off;
    a->size = off; /* what the app asked for: at most reserved */
    return a;
}

void unit_free_alloc(sw_alloc_t *a)
{
    if (!a)
        return;
    sw_segment_free(a);
    free(a->chunks);
    free(a);
}

bool unit_keep_listed(const sw_chunk_t *c, void *arg)
{
    keep_set_t *k = arg;
    ck_assert_uint_eq(k->magic, KEEP_MAGIC);
    k->calls++;
    for (int i = 0; i < k->n; i++)
        if (k->chunks[i] == c)
            return true;
    return false;
}

keep_set_t *unit_keep_none(void)
{
    keep_set_t *k = calloc(1, sizeof(*k));
    ck_assert_ptr_nonnull(k);
    k->magic = KEEP_MAGIC;
    return k;
}

bool unit_contains(sw_chunk_t *const *out, size_t n, const sw_chunk_t *c)
{
    for (size_t i = 0; i < n; i++)
        if (out[i] == c)
            return true;
    return false;
}

/* A sanitizer keeps terabytes of shadow address space and allocates for
 * itself behind malloc: under a cap on the address space it is the
 * sanitizer that runs out and aborts, not the code under test. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNIT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNIT_SANITIZED 1
#endif
#endif
#ifndef UNIT_SANITIZED
#define UNIT_SANITIZED 0
#endif

bool unit_oom_begin(oom_t *o)
{
    /* UNIT_NO_OOM: under qemu-user (tools/cross-aarch64.sh), where
     * RLIMIT_AS caps the emulator's address space, not the program's. */
    const char *fork_mode = getenv("CK_FORK");
    if (UNIT_SANITIZED || getenv("UNIT_NO_OOM") || (fork_mode && strcmp(fork_mode, "no") == 0))
        return false;
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fscanf(f, "%lu", &pages), 1);
    fclose(f);
    ck_assert_int_eq(getrlimit(RLIMIT_AS, &o->old), 0);
    struct rlimit cap = o->old;
    cap.rlim_cur = (rlim_t)pages * 4096 + (1 << 20);
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &cap), 0);
    o->held = NULL;
    for (size_t size = 1 << 20; size >= sizeof(unit_ballast_t); size /= 2) {
        unit_ballast_t *b;
        while ((b = malloc(size)) != NULL) {
            b->next = o->held;
            o->held = b;
        }
    }
    return true;
}

void unit_oom_end(oom_t *o)
{
    while (o->held) {
        unit_ballast_t *b = o->held;
        o->held = b->next;
        free(b);
    }
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &o->old), 0);
}

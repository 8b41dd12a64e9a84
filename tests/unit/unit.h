#ifndef UNIT_H
#define UNIT_H
#include <check.h>
#include <stdint.h>
#include <sys/resource.h>

#include "sw.h"

/* unit_util.c: an allocation at va of n chunks of the given sizes (each a
 * multiple of the granule), ascending, on the device, never used, in no
 * slot. The caller owns it and frees it with unit_free_alloc. */
sw_alloc_t *unit_mk_alloc(uint64_t va, const uint64_t *sizes, uint32_t n);
void unit_free_alloc(sw_alloc_t *a);

/* A keep() for the policy: holds back the chunks listed, counts its calls,
 * and checks that its arg arrives unchanged (magic). */
typedef struct {
    const sw_chunk_t *chunks[256];
    int n;
    int calls;
    unsigned magic;
} keep_set_t;
#define KEEP_MAGIC 0x5eedu
bool unit_keep_listed(const sw_chunk_t *c, void *arg);
/* An empty keep set (calloc'ed; the caller frees it). */
keep_set_t *unit_keep_none(void);
/* Out of memory, for real: caps the address space just above what the
 * process holds and takes what is left, so the next allocation by the code
 * under test fails. Only in a forked test (the cap would outlive it
 * otherwise): returns false, taking nothing, when CK_FORK=no, and in a
 * build with AddressSanitizer or ThreadSanitizer, whose own allocations
 * the cap would starve. */
typedef struct unit_ballast {
    struct unit_ballast *next;
} unit_ballast_t;
typedef struct {
    unit_ballast_t *held;
    struct rlimit old;
} oom_t;
bool unit_oom_begin(oom_t *o);
void unit_oom_end(oom_t *o);
/* Whether c is among out[0..n). */
bool unit_contains(sw_chunk_t *const *out, size_t n, const sw_chunk_t *c);
Suite *options_suite(void);
Suite *table_suite(void);
Suite *policy_suite(void);
Suite *scan_suite(void);
Suite *rewrite_suite(void);
Suite *stats_file_suite(void);
Suite *learn_suite(void);
Suite *policy_learned_suite(void);
Suite *popularity_suite(void);
Suite *gate_suite(void);
Suite *tmap_suite(void);
Suite *cost_suite(void);
Suite *pack_suite(void);
Suite *worth_suite(void);
Suite *replay_suite(void);
Suite *spread_suite(void);
#endif

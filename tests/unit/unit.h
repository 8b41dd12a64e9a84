#ifndef UNIT_H
#define UNIT_H
#include <check.h>
#include <stdint.h>

#include "sw.h"

/* unit_util.c: an allocation at va of n chunks of the given sizes (each a
 * multiple of the granule), ascending, on the device, never used, in no
 * slot. The caller owns it and frees it with unit_free_alloc. */
sw_alloc_t *unit_mk_alloc(uint64_t va, const uint64_t *sizes, uint32_t n);
void unit_free_alloc(sw_alloc_t *a);
Suite *options_suite(void);
Suite *table_suite(void);
Suite *policy_suite(void);
Suite *scan_suite(void);
Suite *stats_file_suite(void);
Suite *learn_suite(void);
Suite *policy_learned_suite(void);
#endif

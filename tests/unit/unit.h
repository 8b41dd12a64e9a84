#ifndef UNIT_H
#define UNIT_H
#include <check.h>
Suite *options_suite(void);
Suite *table_suite(void);
Suite *policy_suite(void);
Suite *scan_suite(void);
Suite *stats_file_suite(void);
Suite *learn_suite(void);
Suite *policy_learned_suite(void);
#endif

/* The unit-test runner: one suite per file, fork mode on. */
#include <check.h>
#include <stdlib.h>

#include "unit.h"

int main(void)
{
    SRunner *sr = srunner_create(options_suite());
    srunner_add_suite(sr, table_suite());
    srunner_add_suite(sr, policy_suite());
    srunner_add_suite(sr, scan_suite());
    srunner_add_suite(sr, rewrite_suite());
    srunner_add_suite(sr, stats_file_suite());
    srunner_add_suite(sr, learn_suite());
    srunner_add_suite(sr, policy_learned_suite());
    srunner_add_suite(sr, popularity_suite());
    srunner_add_suite(sr, gate_suite());
    srunner_add_suite(sr, tmap_suite());
    srunner_add_suite(sr, cost_suite());
    srunner_add_suite(sr, pack_suite());
    srunner_add_suite(sr, worth_suite());
    srunner_add_suite(sr, replay_suite());
    srunner_add_suite(sr, spread_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

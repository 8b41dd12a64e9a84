/*
 * main.c: the one check runner of the simgpu tests.  It never calls CUDA:
 * simgpu reads its environment at the first call, and every test case sets
 * its own before that, in its own forked process.
 */
#include "sgt.h"

#include <stdlib.h>

int main(void)
{
    SRunner *sr = srunner_create(vmm_suite());
    srunner_add_suite(sr, memory_suite());
    srunner_add_suite(sr, fault_suite());
    srunner_add_suite(sr, hazard_suite());
    srunner_add_suite(sr, stream_suite());
    srunner_add_suite(sr, capture_suite());
    srunner_add_suite(sr, launch_suite());
    srunner_add_suite(sr, kernels_suite());
    srunner_add_suite(sr, procaddr_suite());
    srunner_add_suite(sr, vtime_suite());
    srunner_add_suite(sr, report_suite());
    srunner_add_suite(sr, inject_suite());
    srunner_add_suite(sr, export_suite());
    srunner_add_suite(sr, tensormap_suite());
    srunner_add_suite(sr, devices_suite());
    srunner_add_suite(sr, copy2d_suite());
    srunner_add_suite(sr, graphedit_suite());
    /* Fork mode is required whatever CK_FORK says: each case needs a fresh
     * process, because simgpu reads its environment once per process. */
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

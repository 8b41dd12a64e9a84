/*
 * The spillway integration runner: one suite per file, fork mode on (set
 * CK_FORK=yes; meson does). Every program a test runs writes under one
 * temporary root, removed at the end when every test passed and kept, with
 * its path printed, when one failed (or when SWT_KEEP is set).
 */
#define _XOPEN_SOURCE 700
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "swt.h"

static char root[512];

const char *swt_root(void)
{
    return root;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/spillway-tests-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(root)) {
        perror("spillway tests: mkdtemp");
        return EXIT_FAILURE;
    }

    SRunner *sr = srunner_create(oversize_suite());
    srunner_add_suite(sr, policies_suite());
    srunner_add_suite(sr, threads_suite());
    srunner_add_suite(sr, options_suite());
    srunner_add_suite(sr, errors_suite());
    srunner_add_suite(sr, pointers_suite());
    srunner_add_suite(sr, inject_suite());
    srunner_add_suite(sr, failpaths_suite());
    srunner_add_suite(sr, process_suite());
    srunner_add_suite(sr, early_suite());
    srunner_add_suite(sr, hooks_suite());
    srunner_add_suite(sr, devices_suite());
    srunner_run_all(sr, CK_ENV); /* CK_VERBOSITY=verbose lists every test */
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);

    if (failed || getenv("SWT_KEEP"))
        printf("spillway tests: runs kept in %s\n", root);
    else
        nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

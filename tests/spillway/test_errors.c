/*
 * test_errors.c: wrong calls through spillway get the driver's own error
 * codes. swt-errs (errs.c) makes each misuse and prints the CUresult name
 * it got; it runs once on simgpu alone, which records the driver's
 * answers, and once under spillway, where the same allocations are
 * tracked. Each case is compared with the driver's answer and with the
 * code the CUDA documentation gives for it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swt.h"

/* swt-errs's stdout (mode: its argument, or NULL); the caller frees.
 * Checks the run completed and, under spillway, that spillway tracked its
 * allocations. */
static char *errs_output(bool preload, const char *const *env, const char *mode)
{
    const char *argv[] = {swt_path("SWT_ERRS"), mode, NULL};
    swt_run_t r;
    swt_run(&r, preload, env, argv);
    swt_assert_status(&r, 0);
    swt_assert_clean(&r);
    ck_assert_msg(swt_file_has(r.out, "errs: done"), "%s", swt_describe(&r));
    if (preload && !mode) /* "sizes" allocates nothing */
        ck_assert_msg(swt_sw(&r, "tracked_allocs_peak") >= 1, "nothing tracked: %s",
                      swt_describe(&r));
    char *out = swt_slurp(r.out);
    ck_assert_ptr_nonnull(out);
    return out;
}

/* The code printed for a case, into buf. */
static const char *code_of(const char *out, const char *what, char *buf, size_t len)
{
    char key[128];
    snprintf(key, sizeof key, "\n%s: ", what);
    const char *p;
    if (strncmp(out, key + 1, strlen(key + 1)) == 0) {
        p = out + strlen(key + 1); /* the first line */
    } else {
        p = strstr(out, key);
        ck_assert_msg(p != NULL, "no line for %s in:\n%s", what, out);
        p += strlen(key);
    }
    size_t n = strcspn(p, "\n");
    ck_assert_uint_lt(n, len);
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

/* Each case: spillway's code == the driver's == want. */
static void same_codes(const char *const *cases, const char *want, const char *mode)
{
    char *drv = errs_output(false, NULL, mode);
    char *sw = errs_output(true, NULL, mode);
    for (int i = 0; cases[i]; i++) {
        char a[128], b[128];
        code_of(drv, cases[i], a, sizeof a);
        code_of(sw, cases[i], b, sizeof b);
        ck_assert_msg(strcmp(a, b) == 0, "%s: driver says %s, through spillway %s", cases[i], a,
                      b);
        ck_assert_msg(strcmp(b, want) == 0, "%s: %s, want %s", cases[i], b, want);
    }
    free(drv);
    free(sw);
}

START_TEST(free_of_unknown_pointer_returns_driver_code)
{
    const char *const cases[] = {"free-unknown", "free-unknown-device-address",
                                 "free-unknown-nothing-tracked", NULL};
    same_codes(cases, "CUDA_ERROR_INVALID_VALUE", NULL);
}
END_TEST

START_TEST(double_free_of_tracked_pointer_returns_driver_code)
{
    const char *const cases[] = {"free-twice", "free-keep-twice", NULL};
    same_codes(cases, "CUDA_ERROR_INVALID_VALUE", NULL);
}
END_TEST

START_TEST(zero_size_alloc_returns_driver_code)
{
    const char *const cases[] = {"alloc-zero-bytes", NULL};
    same_codes(cases, "CUDA_ERROR_INVALID_VALUE", NULL);
}
END_TEST

START_TEST(free_of_interior_pointer_returns_driver_code)
{
    const char *const cases[] = {"free-interior", "free-interior-chunk-boundary",
                                 "free-interior-last-byte", "free-interior-odd-size", NULL};
    same_codes(cases, "CUDA_ERROR_INVALID_VALUE", NULL);
}
END_TEST

START_TEST(allocation_survives_a_refused_interior_free)
{
    const char *const cases[] = {"free-b", "free-c", NULL};
    same_codes(cases, "CUDA_SUCCESS", NULL);
}
END_TEST

START_TEST(null_result_pointer_returns_driver_code)
{
    const char *const cases[] = {"alloc-null-pointer", NULL};
    same_codes(cases, "CUDA_ERROR_INVALID_VALUE", NULL);
}
END_TEST

START_TEST(impossible_size_returns_out_of_memory)
{
    const char *const cases[] = {"alloc-1tib", "alloc-size-max", "alloc-size-max-minus-page",
                                 NULL};
    same_codes(cases, "CUDA_ERROR_OUT_OF_MEMORY", "sizes");
}
END_TEST

START_TEST(retain_of_allocated_memory_returns_driver_code)
{
    const char *const cases[] = {"retain-alloc", "retain-alloc-interior", "retain-alloc-null-out",
                                 "retain-after-free", NULL};
    same_codes(cases, "CUDA_ERROR_INVALID_VALUE", NULL);
}
END_TEST

/* Legacy IPC cannot share a tracked allocation: spillway passes on the
 * driver's refusal and says why, and SPILLWAY_MIN_ALLOC, the remedy it
 * names, gives the handle back. */
START_TEST(ipc_of_tracked_memory_is_refused_with_the_reason)
{
    const char *argv[] = {swt_path("SWT_ERRS"), "ipc", NULL};
    const char *remedy[] = {"SPILLWAY_MIN_ALLOC=8MiB", NULL};
    char *drv = errs_output(false, NULL, "ipc");
    char *sw = errs_output(true, NULL, "ipc");
    char *left = errs_output(true, remedy, "ipc");
    char a[128];
    ck_assert_str_eq(code_of(drv, "ipc-alloc", a, sizeof a), "CUDA_SUCCESS");
    ck_assert_str_eq(code_of(drv, "ipc-alloc-interior", a, sizeof a), "CUDA_SUCCESS");
    ck_assert_str_eq(code_of(sw, "ipc-alloc", a, sizeof a), "CUDA_ERROR_INVALID_VALUE");
    ck_assert_str_eq(code_of(sw, "ipc-alloc-interior", a, sizeof a), "CUDA_ERROR_INVALID_VALUE");
    ck_assert_str_eq(code_of(sw, "ipc-small", a, sizeof a), "CUDA_SUCCESS");
    ck_assert_msg(strcmp(drv, left) == 0, "driver:\n%s\nleft to it:\n%s", drv, left);
    swt_run_t r;
    swt_run(&r, true, NULL, argv);
    ck_assert_msg(swt_file_has(r.err, "legacy CUDA IPC cannot share"), "%s", swt_describe(&r));
    free(drv);
    free(sw);
    free(left);
}
END_TEST

/* Whole outputs, under option sets that change how allocations are cut. */
static void same_output(const char *const *env)
{
    char *drv = errs_output(false, NULL, NULL);
    char *sw = errs_output(true, env, NULL);
    ck_assert_msg(strcmp(drv, sw) == 0, "driver:\n%s\nthrough spillway:\n%s", drv, sw);
    free(drv);
    free(sw);
}

START_TEST(every_misuse_answers_as_the_driver_does)
{
    same_output(NULL);
}
END_TEST

START_TEST(every_misuse_answers_as_the_driver_does_with_small_chunks)
{
    const char *env[] = {"SPILLWAY_CHUNK=2MiB", NULL};
    same_output(env);
}
END_TEST

START_TEST(every_misuse_answers_as_the_driver_does_when_all_is_tracked)
{
    const char *env[] = {"SPILLWAY_MIN_ALLOC=0", "SPILLWAY_CHUNK=2MiB", NULL};
    same_output(env);
}
END_TEST

Suite *errors_suite(void)
{
    Suite *s = suite_create("errors");
    TCase *tc = tcase_create("driver-codes");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, free_of_unknown_pointer_returns_driver_code);
    tcase_add_test(tc, double_free_of_tracked_pointer_returns_driver_code);
    tcase_add_test(tc, zero_size_alloc_returns_driver_code);
    tcase_add_test(tc, free_of_interior_pointer_returns_driver_code);
    tcase_add_test(tc, allocation_survives_a_refused_interior_free);
    tcase_add_test(tc, null_result_pointer_returns_driver_code);
    tcase_add_test(tc, impossible_size_returns_out_of_memory);
    tcase_add_test(tc, retain_of_allocated_memory_returns_driver_code);
    tcase_add_test(tc, ipc_of_tracked_memory_is_refused_with_the_reason);
    tcase_add_test(tc, every_misuse_answers_as_the_driver_does);
    tcase_add_test(tc, every_misuse_answers_as_the_driver_does_with_small_chunks);
    tcase_add_test(tc, every_misuse_answers_as_the_driver_does_when_all_is_tracked);
    suite_add_tcase(s, tc);
    return s;
}

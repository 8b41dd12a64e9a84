/*
 * test_inject.c: fault injection (SIMGPU_FAIL=func:n,...) makes the n-th
 * call of a function fail with its natural error and nothing else; a bad
 * setting stops the program at the first CUDA call with a message.
 */
#include "sgt.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define G (2 * SGT_MIB)

START_TEST(inject_fails_only_the_nth_alloc)
{
    sgt_env("SIMGPU_FAIL", "cuMemAlloc:2");
    sgt_init();
    CUdeviceptr a = 0, b = 0, c = 0;
    SGT_OK(cuMemAlloc(&a, 4096));
    SGT_EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&b, 4096));
    SGT_OK(cuMemAlloc(&c, 4096));
    SGT_OK(cuMemAlloc(&b, 4096));
}
END_TEST

START_TEST(inject_fails_mem_create)
{
    sgt_env("SIMGPU_FAIL", "cuMemCreate:1");
    sgt_init();
    CUmemAllocationProp p = sgt_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    CUmemGenericAllocationHandle h = 0;
    SGT_EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&h, G, &p, 0));
    SGT_OK(cuMemCreate(&h, G, &p, 0));
}
END_TEST

START_TEST(inject_failed_map_leaves_range_unmapped)
{
    sgt_env("SIMGPU_FAIL", "cuMemMap:1");
    sgt_init();
    CUdeviceptr p = 0;
    SGT_OK(cuMemAddressReserve(&p, G, 0, 0, 0));
    CUmemAllocationProp prop = sgt_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    CUmemGenericAllocationHandle h = 0;
    SGT_OK(cuMemCreate(&h, G, &prop, 0));
    CUresult r = cuMemMap(p, G, 0, h, 0);
    ck_assert_msg(r != CUDA_SUCCESS, "injected cuMemMap failure did not fail");
    /* Nothing is mapped: unmapping fails and mapping again succeeds. */
    r = cuMemUnmap(p, G);
    ck_assert_msg(r != CUDA_SUCCESS, "unmapped a mapping that failed");
    SGT_OK(cuMemMap(p, G, 0, h, 0));
    SGT_OK(sgt_set_access(p, G));
    uint32_t in[64], out[64];
    sgt_pattern(in, sizeof in, 5);
    SGT_OK(cuMemcpyHtoD(p, in, sizeof in));
    SGT_OK(cuMemcpyDtoH(out, p, sizeof out));
    ck_assert_int_eq(memcmp(in, out, sizeof in), 0);
}
END_TEST

START_TEST(inject_counts_every_variant)
{
    /* The count covers cuMemcpyHtoDAsync_v2 and its _ptsz form together. */
    sgt_env("SIMGPU_FAIL", "cuMemcpyHtoDAsync:2");
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    void *h = NULL;
    SGT_OK(cuMemAllocHost(&h, 4096));
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    typedef CUresult (*copy_t)(CUdeviceptr, const void *, size_t, CUstream);
    copy_t ptsz = (copy_t)dlsym(RTLD_DEFAULT, "cuMemcpyHtoDAsync_v2_ptsz");
    ck_assert_ptr_nonnull((void *)ptsz);
    SGT_OK(cuMemcpyHtoDAsync(d, h, 4096, s));
    CUresult r = ptsz(d, h, 4096, s);
    ck_assert_msg(r != CUDA_SUCCESS, "2nd call (the _ptsz form) did not fail");
    SGT_OK(cuMemcpyHtoDAsync(d, h, 4096, s));
    SGT_OK(cuStreamSynchronize(s));
}
END_TEST

START_TEST(inject_several_entries)
{
    sgt_env("SIMGPU_FAIL", "cuMemAlloc:1,cuMemCreate:2");
    sgt_init();
    CUdeviceptr a;
    SGT_EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&a, 4096));
    SGT_OK(cuMemAlloc(&a, 4096));
    CUmemAllocationProp p = sgt_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    CUmemGenericAllocationHandle h;
    SGT_OK(cuMemCreate(&h, G, &p, 0));
    SGT_EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&h, G, &p, 0));
    SGT_OK(cuMemCreate(&h, G, &p, 0));
}
END_TEST

/* A child whose stdout and stderr go to a file, making the first call. */
static const char *out_path;

static void first_call_child(void *arg)
{
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        _exit(90);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    CUresult r = cuInit(0);
    /* Returning an error is acceptable too; succeeding is not. */
    exit(r == CUDA_SUCCESS ? 0 : 3);
}

static void expect_stopped(const char *var, const char *value)
{
    char path[256];
    snprintf(path, sizeof path, "/tmp/sgt-stderr-%ld.txt", (long)getpid());
    out_path = path;
    sgt_env(var, value);
    int st = sgt_child(first_call_child, NULL);
    ck_assert_msg(!(WIFEXITED(st) && WEXITSTATUS(st) == 0),
                  "%s=%s: the first CUDA call succeeded", var, value);
    ck_assert_msg(!(WIFEXITED(st) && WEXITSTATUS(st) == 90), "cannot open %s",
                  path);
    char *text = sgt_slurp(path);
    ck_assert_msg(strstr(text, var) != NULL,
                  "%s=%s: message does not name the variable: \"%s\"", var,
                  value, text);
    free(text);
    unlink(path);
}

static const char *const bad_fail[] = {"cuMemAlloc", "cuMemAlloc:abc",
                                       ":3"};

START_TEST(inject_bad_syntax_stops_first_call)
{
    expect_stopped("SIMGPU_FAIL", bad_fail[_i]);
}
END_TEST

START_TEST(bad_size_variable_stops_first_call)
{
    expect_stopped("SIMGPU_MEM", "12XB");
}
END_TEST

START_TEST(inject_same_function_twice)
{
    sgt_env("SIMGPU_FAIL", "cuMemAlloc:1,cuMemAlloc:3");
    sgt_init();
    CUdeviceptr a;
    SGT_EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&a, 4096));
    SGT_OK(cuMemAlloc(&a, 4096));
    SGT_EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&a, 4096));
    SGT_OK(cuMemAlloc(&a, 4096));
}
END_TEST

Suite *inject_suite(void)
{
    Suite *s = suite_create("inject");
    sgt_case(s, inject_fails_only_the_nth_alloc);
    sgt_case(s, inject_fails_mem_create);
    sgt_case(s, inject_failed_map_leaves_range_unmapped);
    sgt_case(s, inject_counts_every_variant);
    sgt_case(s, inject_several_entries);
    sgt_loop_case(s, inject_bad_syntax_stops_first_call, 0,
                  (int)(sizeof bad_fail / sizeof *bad_fail));
    sgt_case(s, bad_size_variable_stops_first_call);
    sgt_case(s, inject_same_function_twice);
    return s;
}

/*
 * sgt.h: shared helpers and suite list of the simgpu check tests.
 *
 * Process rule: simgpu reads its environment once, at the first CUDA call.
 * check forks every test case and main() never calls CUDA, so a test case
 * sets its variables with setenv() and only then calls sgt_init().  The JSON
 * report is written when the process exits, so tests that read it run their
 * CUDA work in a child (sgt_child_ok) and parse the file afterwards.
 */
#ifndef SGT_H
#define SGT_H

#include <check.h>
#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SGT_MIB ((size_t)1 << 20)
#define SGT_IMAGE "simgpu-builtin"

/* Assert that a CUDA call returns `want`, naming the call on failure. */
#define SGT_EXPECT(want, call)                                                \
    do {                                                                      \
        CUresult sgt_r_ = (call);                                             \
        ck_assert_msg(sgt_r_ == (want), "%s: got %d (%s), want %d (%s)",       \
                      #call, (int)sgt_r_, sgt_errname(sgt_r_), (int)(want),   \
                      sgt_errname(want));                                     \
    } while (0)
#define SGT_OK(call) SGT_EXPECT(CUDA_SUCCESS, call)

/* A faulting operation whose call may return before the device finishes
 * (a copy from pageable memory, a memset): the call returns success or the
 * fault, and the next synchronize must return the fault. */
#define SGT_FAULTS(call)                                                      \
    do {                                                                      \
        CUresult sgt_f_ = (call);                                             \
        ck_assert_msg(sgt_f_ == CUDA_SUCCESS ||                               \
                          sgt_f_ == CUDA_ERROR_ILLEGAL_ADDRESS,                \
                      "%s: got %d (%s), want success or "                     \
                      "CUDA_ERROR_ILLEGAL_ADDRESS", #call, (int)sgt_f_,       \
                      sgt_errname(sgt_f_));                                   \
        SGT_EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());           \
    } while (0)

/* --- sgt.c ------------------------------------------------------------- */
/* Name of a CUresult for messages; never NULL, never calls into simgpu. */
const char *sgt_errname(CUresult r);
/* Set an environment variable for simgpu (before the first CUDA call). */
void sgt_env(const char *name, const char *value);
/* cuInit, device 0, retain and make current its primary context. */
void sgt_init(void);
CUcontext sgt_ctx(void);
/* Load the built-in module once per process; look up a function in it. */
CUmodule sgt_module(void);
CUfunction sgt_func(const char *name);
/* Launch on a 1x1x1 grid of 256 threads (simgpu's kernels are host code). */
CUresult sgt_launch(CUfunction f, CUstream s, void **params);
/* sg_fill_u32 / sg_checksum_u64 launches, asserting success at issue. */
void sgt_fill_u32(CUstream s, CUdeviceptr dst, uint32_t value, uint64_t count);
CUresult sgt_try_fill_u32(CUstream s, CUdeviceptr dst, uint32_t value,
                          uint64_t count);
void sgt_checksum(CUstream s, CUdeviceptr src, uint64_t bytes, CUdeviceptr out);
/* Host reference of sg_checksum_u64: FNV-1a 64. */
uint64_t sgt_fnv1a(const void *p, size_t n);
/* Deterministic pseudo-random data. */
void sgt_pattern(void *p, size_t n, uint64_t seed);
float sgt_randf(uint64_t *state);

/* Allocation properties for cuMemCreate / granularity queries. */
CUmemAllocationProp sgt_prop(CUmemLocationType type);
/* Grant the device read/write access to [ptr, ptr+size). */
CUresult sgt_set_access(CUdeviceptr ptr, size_t size);

/* Child processes.  body runs in a fork of the test process and should
 * exit(0) (sgt_child returns after calling it and exits 0).  The status is
 * that of waitpid. */
int sgt_child(void (*body)(void *), void *arg);
void sgt_child_ok(void (*body)(void *), void *arg);

/* Reports: a fresh path (set as SIMGPU_REPORT), whole-file reads, and a
 * tiny `"key": <number>` finder that needs no JSON library. */
void sgt_report_env(char *path, size_t n, const char *tag);
char *sgt_slurp(const char *path);
/* Reads a report written by a child (failing if there is none) and
 * removes the file. */
char *sgt_report_read(const char *path);
bool sgt_json_has(const char *json, const char *key);
bool sgt_json_num(const char *json, const char *key, double *out);
uint64_t sgt_json_u64(const char *json, const char *key);
/* The text of the hazard_list array (malloc'd), or NULL if absent. */
char *sgt_json_array(const char *json, const char *key);

/* Sleep in real time. */
void sgt_sleep_ms(unsigned ms);

/* Each behaviour is its own check test case, named after the test, so that
 * CK_RUN_CASE=<name> runs exactly one.  loop: _i runs over [start, end). */
void sgt_case(Suite *s, const TTest *t);
void sgt_loop_case(Suite *s, const TTest *t, int start, int end);

/* --- suites ------------------------------------------------------------ */
Suite *vmm_suite(void);
Suite *memory_suite(void);
Suite *fault_suite(void);
Suite *hazard_suite(void);
Suite *stream_suite(void);
Suite *capture_suite(void);
Suite *launch_suite(void);
Suite *kernels_suite(void);
Suite *procaddr_suite(void);
Suite *vtime_suite(void);
Suite *report_suite(void);
Suite *inject_suite(void);
Suite *export_suite(void);
Suite *tensormap_suite(void);
Suite *devices_suite(void);
Suite *copy2d_suite(void);
Suite *graphedit_suite(void);

#endif

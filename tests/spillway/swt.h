/*
 * swt: what the spillway integration tests share. Each test runs real
 * programs (tests/apps, and the small ones in this directory) on simgpu,
 * with or without libspillway preloaded, and judges them by their exit
 * status, their output and the two JSON reports they leave: simgpu's
 * (SIMGPU_REPORT: hazards, faults, call counts) and spillway's
 * (SPILLWAY_REPORT: the spillway/stats_fields.h counters).
 *
 * Every run gets a fresh directory under the suite's temporary root:
 *
 *     <root>/run-XXXXXX/stdout, stderr     what the program printed
 *                       simgpu.json        SIMGPU_REPORT
 *                       spillway.json      SPILLWAY_REPORT
 *                       stats/             SPILLWAY_STATS_DIR (made 0700,
 *                                          empty), so no run ever touches
 *                                          the user's own stats directory
 *
 * The environment of a run is the test's own minus every LD_PRELOAD,
 * LD_LIBRARY_PATH, SPILLWAY_* and SIMGPU_* entry, plus the entries above,
 * LD_LIBRARY_PATH=<simgpu>, LD_PRELOAD=<libspillway> when asked, and the
 * run's own extra entries last ("NAME=value" sets, a bare "NAME" removes).
 * In a sanitized build LD_PRELOAD starts with the sanitizer's runtime
 * (SANITIZER_PRELOAD, which meson sets), in every run.
 *
 * Paths come from the environment meson gives the test (see meson.build):
 * SWT_LIBSPILLWAY, SWT_SIMGPU_DIR, SWT_MLP, SWT_MOE, SWT_MULTI, SWT_MT, SWT_LOADER,
 * SWT_ERRS, SWT_PTRS, SWT_NOCUDA, SWT_PROBE, SWT_PROC, SWT_ROUTES, SWT_NM,
 * SWT_EARLY, SWT_EARLY_CTOR, SWT_DLSYMLIB, SWT_JIT, SWT_CAPTURE, SWT_MEMOPS, SWT_TMA,
 * SWT_RETARGET, SWT_HOSTWRITE, SWT_ORDERED, SWT_EXPANDABLE. A test that
 * runs outside meson fails with a message naming the missing variable.
 *
 * The programs of this directory: errs.c (misuses and their codes),
 * ptrs.c (pointer queries on moved memory), probe.c (meminfo and the
 * stats file from inside), routes.c (where cuGetProcAddress's copy,
 * memset and launch pointers lead), nocuda.c (a process that never uses
 * CUDA), proc.c (fork, and scribbling on the stats file), early.c and
 * ctorlib.c (start-up oddities), dlsymlib.c (a preload that calls dlsym
 * before spillway starts), jit.c, capture.c, memops.c, tma.c, retarget.c
 * and ordered.c (test_hooks.c), hostwrite.c and expandable.c
 * (test_failpaths.c).
 *
 * Failures: the helpers that return a value abort the current test (check's
 * ck_abort_msg) when they cannot do their job, with a message that says
 * which run and which file; they never return garbage.
 */
#ifndef SWT_H
#define SWT_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>

#define SWT_MIB (1024ULL * 1024ULL)

/* The suites, one per file. */
Suite *oversize_suite(void);  /* test_oversize.c */
Suite *threads_suite(void);   /* test_threads.c */
Suite *options_suite(void);   /* test_options.c */
Suite *errors_suite(void);    /* test_errors.c */
Suite *pointers_suite(void);  /* test_pointers.c */
Suite *inject_suite(void);    /* test_inject.c */
Suite *failpaths_suite(void); /* test_failpaths.c */
Suite *process_suite(void);   /* test_process.c */
Suite *policies_suite(void);  /* test_policies.c */
Suite *early_suite(void);     /* test_early.c */
Suite *hooks_suite(void);     /* test_hooks.c */
Suite *devices_suite(void);   /* test_devices.c */

/* main.c: the suite's temporary root (made before any test runs). */
const char *swt_root(void);

typedef struct {
    char dir[512];
    char out[600], err[600];             /* stdout, stderr */
    char sg_report[600], sw_report[600]; /* SIMGPU_REPORT, SPILLWAY_REPORT */
    char stats_dir[600];                 /* SPILLWAY_STATS_DIR */
    bool exited;                         /* exited normally (else signal) */
    int status;                          /* exit status when exited */
    int signal;                          /* terminating signal otherwise */
    bool timed_out;                      /* killed by swt_run's time limit */
} swt_run_t;

/* The path in environment variable name; aborts the test when unset. */
const char *swt_path(const char *name);
/* How many times slower this build runs its programs: SWT_TIME_SCALE,
 * which meson sets in a sanitized build (5), else 1. */
long swt_time_scale(void);

/* Runs argv (argv[0] a path; NULL-terminated) with the environment
 * described above; env: extra entries, NULL-terminated, or NULL. Waits at
 * most 120 s (times SWT_TIME_SCALE, set in a sanitized build), then kills
 * it (timed_out). Fills *r. Aborts the test when
 * the program cannot be started at all. */
void swt_run(swt_run_t *r, bool preload, const char *const *env, const char *const *argv);
/* The same with libspillway preloaded and then the library `after`, whose
 * constructor therefore runs before spillway's. */
void swt_run_preloading(swt_run_t *r, const char *after, const char *const *env,
                        const char *const *argv);

/* The whole of a file as a NUL-terminated string (caller frees), or NULL
 * when it cannot be read. */
char *swt_slurp(const char *path);
bool swt_exists(const char *path);
/* True when the file contains text. */
bool swt_file_has(const char *path, const char *text);

/* The number after "key": in a JSON file (first occurrence of the quoted
 * key, so "device_bytes" never matches "device_bytes_peak"). Returns false
 * when the file or the key is missing or the value is not a number. */
bool swt_json_u64(const char *path, const char *key, uint64_t *out);
/* The same, aborting the test when the value is missing. */
uint64_t swt_sg(const swt_run_t *r, const char *key); /* simgpu's report */
uint64_t swt_sw(const swt_run_t *r, const char *key); /* spillway's report */
/* simgpu's call count for a base function name; 0 when never called. */
uint64_t swt_calls(const swt_run_t *r, const char *fn);

/* One line about a run for failure messages: status, the start of stderr
 * and stdout, simgpu's first hazard. Static buffer: use it at once. */
const char *swt_describe(const swt_run_t *r);

/* Assertions with swt_describe in their messages. */
void swt_assert_status(const swt_run_t *r, int status);
/* simgpu's report exists and has hazards == 0 and faults == 0. */
void swt_assert_clean(const swt_run_t *r);
/* Exited 0, printed "result=match", and simgpu saw no hazard or fault. */
void swt_assert_match(const swt_run_t *r);

/* The number of entries in a directory (not . and ..); -1 when it cannot
 * be opened. */
int swt_dir_entries(const char *path);

#endif

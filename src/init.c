/*
 * Start-up, in two steps, so that a process that never uses CUDA pays
 * nothing:
 *   options     read SPILLWAY_* once from one table, at first use: by
 *               spillway's constructor, or earlier by a hook, when another
 *               library's constructor (which may run before spillway's)
 *               makes the first CUDA call. A bad value stops the program
 *               there, with exit 2. No thread, no file, no driver load.
 *   first CUDA  (the driver's cuInit succeeded) logging, the stats file,
 *               the exit report.
 */
#include "mech.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static sw_options_t opts;
static pthread_once_t opts_once = PTHREAD_ONCE_INIT;
static pthread_once_t start_once = PTHREAD_ONCE_INIT;

static void load_options(void)
{
    char err[512] = "", warn[2048] = "";
    if (sw_options_parse(&opts, environ, err, sizeof err, warn, sizeof warn) != 0) {
        fprintf(stderr, "%s\n", err);
        _exit(2);
    }
    if (warn[0])
        fputs(warn, stderr);
}

const sw_options_t *sw_opts(void)
{
    pthread_once(&opts_once, load_options);
    return &opts;
}

/* A bad value stops the program before it runs, even one that never
 * calls CUDA. */
__attribute__((constructor)) static void check_options(void)
{
    sw_opts();
}

static void at_exit(void)
{
    if (opts.report[0])
        sw_stats_report(opts.report);
    sw_stats_unpublish();
}

/* Every effective option, once, wherever the log goes. */
static void log_options(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    sw_options_print(&opts, f);
    fclose(f);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        sw_info("%s", line);
    free(text);
}

static void start(void)
{
    sw_opts(); /* loaded already, unless cuInit is the first call of all */
    sw_log_init(&opts);
    if (opts.log_level >= SW_LOG_INFO)
        log_options();
    if (opts.disable) {
        sw_info("SPILLWAY_DISABLE is set: every call passes straight through");
        return;
    }
    sw_stats_init(&opts);
    sw_stats_publish();
    atexit(at_exit);
}

void sw_start(void)
{
    pthread_once(&start_once, start);
}

CUresult sw_on_init(unsigned int flags)
{
    CUresult r = SW_REAL(cuInit) ? SW_REAL(cuInit)(flags) : CUDA_ERROR_NOT_FOUND;
    if (r == CUDA_SUCCESS)
        sw_start();
    return r;
}

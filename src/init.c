/*
 * Start-up, in two steps, so that a process that never uses CUDA pays
 * nothing:
 *   options     read SPILLWAY_* once, at first use (opts.c). No thread, no
 *               file, no driver load.
 *   first CUDA  (the driver's cuInit succeeded) logging, the stats file,
 *               the exit report.
 */
#include "api.h"

#include <stdlib.h>
#include <string.h>

static pthread_once_t start_once = PTHREAD_ONCE_INIT;

static void at_exit(void)
{
    if (sw_opts()->report[0])
        sw_stats_report(sw_opts()->report);
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
    sw_options_print(sw_opts(), f);
    fclose(f);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        sw_info("%s", line);
    free(text);
}

static void start(void)
{
    const sw_options_t *opts = sw_opts(); /* loaded already, unless cuInit is the first call */
    sw_log_init(opts);
    if (opts->log_level >= SW_LOG_INFO)
        log_options();
    if (opts->disable) {
        sw_info("SPILLWAY_DISABLE is set: every call passes straight through");
        return;
    }
    sw_stats_init(opts);
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

/*
 * The options: SPILLWAY_* read once from one table (core/options.c), at
 * first use: by spillway's constructor, or earlier by a hook, when another
 * library's constructor (which may run before spillway's) makes the first
 * CUDA call. A bad value stops the program there, with exit 2. No thread,
 * no file, no driver load. Every layer reads them; this file calls nothing
 * of spillway's but the core.
 */
#include "driver.h"

#include <stdio.h>
#include <unistd.h>

extern char **environ;

static sw_options_t opts;
static pthread_once_t opts_once = PTHREAD_ONCE_INIT;

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

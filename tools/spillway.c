/*
 * spillway: the launcher, so nobody has to find libspillway.so or spell
 * LD_PRELOAD and the SPILLWAY_* variables by hand.
 *
 *   spillway run [OPTIONS] [--] COMMAND [ARGS...]
 *   spillway stat [ARGS...]      runs spillway-stat (one command to remember)
 *
 * The options of `run` are not written here: each is made from an entry of
 * the library's one options table (sw_option_info), SPILLWAY_GPU_BUDGET
 * becoming --gpu-budget, so an option added to the library is an option of
 * the launcher the same day. Only the aliases below are hand-written.
 *
 * Every value is checked before anything starts, by the library's own
 * parser run over the environment the command will get (inherited SPILLWAY_*
 * variables included): a bad one gives exit 2 and the very message the
 * library would give. Then libspillway is appended to LD_PRELOAD and the
 * command exec'd in place of this process, so its signals and exit status
 * are the caller's to see, untouched.
 *
 * Exit status of the launcher itself: 2 bad usage or value, 1 no library
 * found, 126/127 the command cannot be run / was not found (as env(1)).
 */
#include "sw.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* Friendly names for the options people type most; each must name a table
 * entry (the test suite runs every alias). */
static const struct {
    const char *alias, *name;
} aliases[] = {
    {"budget", "GPU_BUDGET"},
};

#define LIBNAME "libspillway.so"

static void __attribute__((noreturn, format(printf, 1, 2))) bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("spillway: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

/* "GPU_BUDGET" -> "gpu-budget". */
static void flag_of(const char *name, char *out, size_t len)
{
    size_t i = 0;
    for (; name[i] && i + 1 < len; i++)
        out[i] = name[i] == '_' ? '-' : (name[i] >= 'A' && name[i] <= 'Z') ? name[i] - 'A' + 'a'
                                                                          : name[i];
    out[i] = '\0';
}

/* The table index of option flag (without "--", length len), or -1. */
static int option_index(const char *flag, size_t len)
{
    const char *alias_of = NULL;
    for (size_t a = 0; a < sizeof aliases / sizeof aliases[0]; a++)
        if (strlen(aliases[a].alias) == len && memcmp(aliases[a].alias, flag, len) == 0)
            alias_of = aliases[a].name;
    sw_option_info_t o;
    for (size_t i = 0; sw_option_info(i, &o); i++) {
        char f[64];
        flag_of(o.name, f, sizeof f);
        if (alias_of ? strcmp(o.name, alias_of) == 0
                     : strlen(f) == len && memcmp(f, flag, len) == 0)
            return (int)i;
    }
    return -1;
}

static void usage_run(FILE *f)
{
    fprintf(f, "usage: spillway run [OPTIONS] [--] COMMAND [ARGS...]\n"
               "Runs COMMAND with libspillway preloaded (appended to LD_PRELOAD) and the\n"
               "options below set as SPILLWAY_* variables. Every value is checked first.\n\n"
               "  --dry-run            print the environment it would set; run nothing\n");
    sw_option_info_t o;
    for (size_t i = 0; sw_option_info(i, &o); i++) {
        char flag[64];
        flag_of(o.name, flag, sizeof flag);
        fprintf(f, "  --%-18s SPILLWAY_%s: %s\n  %-20s %s (default: %s)\n", flag, o.name, o.help,
                "", o.forms, o.dflt[0] ? o.dflt : "none");
    }
    for (size_t a = 0; a < sizeof aliases / sizeof aliases[0]; a++) {
        char flag[64];
        flag_of(aliases[a].name, flag, sizeof flag);
        fprintf(f, "  --%-18s the same as --%s\n", aliases[a].alias, flag);
    }
}

static void usage(FILE *f)
{
    fprintf(f, "usage: spillway run [OPTIONS] [--] COMMAND [ARGS...]\n"
               "       spillway stat [ARGS...]\n"
               "       spillway --version\n"
               "run: run a command under spillway (spillway run --help lists the options)\n"
               "stat: show the statistics of processes under spillway (spillway-stat --help)\n");
}

/* The directory of this executable, so the library and spillway-stat are
 * found beside it wherever the tree was installed or built. */
static void self_dir(char *out, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", out, len - 1);
    if (n <= 0 || (size_t)n >= len - 1)
        bad("cannot read /proc/self/exe: %s", n < 0 ? strerror(errno) : "path too long");
    out[n] = '\0';
    *strrchr(out, '/') = '\0'; /* an absolute path: it has a '/' */
}

/* Where libspillway is: where `meson install` put it, SW_LIBDIR_FROM_BINDIR
 * from the bindir, else in the build tree (build/tools/spillway beside
 * build/src/). Installed first: /usr/local/bin/../src is a real directory
 * that has nothing to do with spillway. Returns the real path in out, or
 * exits 1 naming the places looked at. */
static void find_library(char *out)
{
    char dir[PATH_MAX - 64];
    self_dir(dir, sizeof dir);
    const char *const rel[] = {SW_LIBDIR_FROM_BINDIR, "../src"};
    char tried[2][PATH_MAX];
    for (size_t i = 0; i < 2; i++) {
        snprintf(tried[i], sizeof tried[i], "%s/%s/" LIBNAME, rel[i][0] == '/' ? "" : dir,
                 rel[i]);
        if (realpath(tried[i], out) && access(out, R_OK) == 0)
            return;
    }
    fprintf(stderr, "spillway: " LIBNAME " not found: looked for %s and %s\n", tried[0], tried[1]);
    exit(1);
}

/* LD_PRELOAD gets lib after what it holds already (the user's own preloads
 * keep their place), once. */
static void append_preload(const char *lib)
{
    /* ld.so splits LD_PRELOAD at spaces and colons: such a path would be
     * read as two, neither of them the library. */
    if (strpbrk(lib, ": \t"))
        bad("cannot preload %s: LD_PRELOAD cannot hold a path with a space or ':'", lib);
    const char *old = getenv("LD_PRELOAD");
    char *v;
    if (old && *old) {
        if (asprintf(&v, "%s:%s", old, lib) < 0)
            bad("out of memory");
    } else if (!(v = strdup(lib))) {
        bad("out of memory");
    }
    if (setenv("LD_PRELOAD", v, 1) != 0)
        bad("cannot set LD_PRELOAD: %s", strerror(errno));
    free(v);
}

static int run(int argc, char **argv)
{
    sw_option_info_t o;
    size_t nopts = 0;
    while (sw_option_info(nopts, &o))
        nopts++;
    bool *given = calloc(nopts, sizeof *given);
    if (!given)
        bad("out of memory");
    bool dry_run = false;
    int i = 1;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (arg[0] != '-')
            break; /* the command */
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            usage_run(stdout);
            exit(0);
        }
        if (strcmp(arg, "--dry-run") == 0) {
            dry_run = true;
            continue;
        }
        const char *eq = strchr(arg, '=');
        int k = strncmp(arg, "--", 2) != 0 ? -1
                : option_index(arg + 2, eq ? (size_t)(eq - arg - 2) : strlen(arg + 2));
        if (k < 0)
            bad("unknown option '%s' (see spillway run --help)", arg);
        const char *value = eq ? eq + 1 : NULL;
        if (!value) {
            if (i + 1 >= argc)
                bad("%s needs a value", arg);
            value = argv[++i];
        }
        sw_option_info(k, &o);
        char var[80];
        snprintf(var, sizeof var, "SPILLWAY_%s", o.name);
        if (setenv(var, value, 1) != 0)
            bad("cannot set %s: %s", var, strerror(errno));
        given[k] = true;
    }
    if (i >= argc && !dry_run)
        bad("no command to run (usage: spillway run [OPTIONS] [--] COMMAND [ARGS...])");

    /* The library's own check, on exactly what the command will see.
     * Unknown SPILLWAY_* names only warn, and the library itself says so
     * when it starts: not said twice here. */
    char err[512];
    sw_options_t parsed;
    if (sw_options_parse(&parsed, environ, err, sizeof err, NULL, 0) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(2);
    }

    char lib[PATH_MAX];
    find_library(lib);
    append_preload(lib);

    if (dry_run) {
        for (size_t k = 0; k < nopts; k++) {
            if (!given[k])
                continue;
            sw_option_info(k, &o);
            char var[80];
            snprintf(var, sizeof var, "SPILLWAY_%s", o.name);
            printf("%s=%s\n", var, getenv(var));
        }
        printf("LD_PRELOAD=%s\n", getenv("LD_PRELOAD"));
        free(given);
        return 0;
    }
    free(given);
    execvp(argv[i], argv + i);
    int e = errno;
    fprintf(stderr, "spillway: cannot run %s: %s\n", argv[i], strerror(e));
    return e == ENOENT ? 127 : 126;
}

/* spillway stat ARGS: spillway-stat from beside this executable. */
static int stat_cmd(int argc, char **argv)
{
    char path[PATH_MAX];
    self_dir(path, sizeof path - sizeof "/spillway-stat");
    strcat(path, "/spillway-stat");
    argv[0] = "spillway-stat";
    execv(path, argv);
    int e = errno;
    fprintf(stderr, "spillway: cannot run %s: %s\n", path, strerror(e));
    return e == ENOENT ? 127 : 126;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "run") == 0)
        return run(argc - 1, argv + 1);
    if (strcmp(cmd, "stat") == 0)
        return stat_cmd(argc - 1, argv + 1);
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("spillway %s\n", SW_VERSION);
        return 0;
    }
    bad("unknown command '%s' (expected run or stat; see spillway --help)", cmd);
}

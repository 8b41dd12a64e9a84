/*
 * swt.c: running a program the way the tests need (swt.h), and reading
 * what it left behind.
 */
#include "swt.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* A run's time limit: 120 s, times SWT_TIME_SCALE where meson sets it
 * (a sanitized build, whose programs run several times slower). */
#define RUN_LIMIT_S 120
#define MAX_ENV 512

const char *swt_path(const char *name)
{
    const char *p = getenv(name);
    if (!p || !p[0])
        ck_abort_msg("%s is not set: run this through meson test", name);
    return p;
}

/* ---- the environment of a run ---- */

typedef struct {
    char *v[MAX_ENV + 1];
    int n;
} env_t;

static bool name_is(const char *entry, const char *name, size_t len)
{
    return strncmp(entry, name, len) == 0 && (entry[len] == '=' || entry[len] == '\0');
}

static size_t name_len(const char *entry)
{
    const char *eq = strchr(entry, '=');
    return eq ? (size_t)(eq - entry) : strlen(entry);
}

static void env_unset(env_t *e, const char *name, size_t len)
{
    for (int i = 0; i < e->n; i++) {
        if (name_is(e->v[i], name, len)) {
            free(e->v[i]);
            e->v[i--] = e->v[--e->n];
        }
    }
    e->v[e->n] = NULL;
}

/* "NAME=value" sets (replacing), "NAME" removes. */
static void env_put(env_t *e, const char *entry)
{
    env_unset(e, entry, name_len(entry));
    if (!strchr(entry, '='))
        return;
    ck_assert_msg(e->n < MAX_ENV, "too many environment entries");
    e->v[e->n] = strdup(entry);
    ck_assert_ptr_nonnull(e->v[e->n]);
    e->n++;
    e->v[e->n] = NULL;
}

static void env_putf(env_t *e, const char *name, const char *value)
{
    char buf[4096];
    ck_assert_int_lt(snprintf(buf, sizeof buf, "%s=%s", name, value), (int)sizeof buf);
    env_put(e, buf);
}

static bool inherited_ok(const char *entry)
{
    return strncmp(entry, "SPILLWAY_", 9) != 0 && strncmp(entry, "SIMGPU_", 7) != 0 &&
           !name_is(entry, "LD_PRELOAD", 10) && !name_is(entry, "LD_LIBRARY_PATH", 15);
}

static void env_free(env_t *e)
{
    for (int i = 0; i < e->n; i++)
        free(e->v[i]);
    e->n = 0;
}

/* ---- running ---- */

static void make_run_dir(swt_run_t *r)
{
    memset(r, 0, sizeof *r);
    ck_assert_int_lt(snprintf(r->dir, sizeof r->dir, "%s/run-XXXXXX", swt_root()),
                     (int)sizeof r->dir);
    ck_assert_msg(mkdtemp(r->dir) != NULL, "mkdtemp %s: %s", r->dir, strerror(errno));
    snprintf(r->out, sizeof r->out, "%s/stdout", r->dir);
    snprintf(r->err, sizeof r->err, "%s/stderr", r->dir);
    snprintf(r->sg_report, sizeof r->sg_report, "%s/simgpu.json", r->dir);
    snprintf(r->sw_report, sizeof r->sw_report, "%s/spillway.json", r->dir);
    snprintf(r->stats_dir, sizeof r->stats_dir, "%s/stats", r->dir);
    /* 0700: the mode spillway insists on for a stats directory. */
    ck_assert_msg(mkdir(r->stats_dir, 0700) == 0, "mkdir %s: %s", r->stats_dir,
                  strerror(errno));
}

long swt_time_scale(void)
{
    const char *scale = getenv("SWT_TIME_SCALE");
    long n = scale ? strtol(scale, NULL, 10) : 1;
    return n > 0 ? n : 1;
}

static long run_limit_s(void)
{
    return RUN_LIMIT_S * swt_time_scale();
}

static void wait_for(swt_run_t *r, pid_t pid)
{
    const long limit = run_limit_s();
    struct timespec start, now, nap = {0, 2 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    int ws;
    for (;;) {
        pid_t w = waitpid(pid, &ws, WNOHANG);
        if (w == pid)
            break;
        ck_assert_msg(w == 0 || errno == EINTR, "waitpid: %s", strerror(errno));
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (!r->timed_out && now.tv_sec - start.tv_sec > limit) {
            kill(pid, SIGKILL); /* only the child this run started */
            r->timed_out = true;
        }
        nanosleep(&nap, NULL);
    }
    r->exited = WIFEXITED(ws);
    r->status = r->exited ? WEXITSTATUS(ws) : -1;
    r->signal = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
}

/* LD_PRELOAD's value: the sanitizer runtime (SANITIZER_PRELOAD, set by
 * meson in a sanitized build) first, as it must be, then libspillway when
 * asked, then `after` (NULL: none). Empty when there is nothing to
 * preload. The runtime is preloaded even without spillway: a program
 * built without the sanitizer that loads the sanitized simgpu needs it
 * too, and a sanitized program has it first already. */
static void preload_value(char *buf, size_t size, bool preload, const char *after)
{
    const char *runtime = getenv("SANITIZER_PRELOAD");
    const char *parts[] = {runtime, preload ? swt_path("SWT_LIBSPILLWAY") : NULL, after};
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (!parts[i] || !parts[i][0])
            continue;
        int n = snprintf(buf + len, size - len, "%s%s", len ? " " : "", parts[i]);
        ck_assert_msg(n >= 0 && (size_t)n < size - len, "LD_PRELOAD too long");
        len += (size_t)n;
    }
}

static void run(swt_run_t *r, bool preload, const char *after, const char *const *env,
                const char *const *argv)
{
    make_run_dir(r);

    env_t e = {.n = 0};
    for (char **p = environ; *p; p++)
        if (inherited_ok(*p))
            env_put(&e, *p);
    env_putf(&e, "LD_LIBRARY_PATH", swt_path("SWT_SIMGPU_DIR"));
    char preloads[4096];
    preload_value(preloads, sizeof preloads, preload, after);
    if (preloads[0])
        env_putf(&e, "LD_PRELOAD", preloads);
    env_putf(&e, "SIMGPU_REPORT", r->sg_report);
    env_putf(&e, "SPILLWAY_REPORT", r->sw_report);
    env_putf(&e, "SPILLWAY_STATS_DIR", r->stats_dir);
    /* A whole suite run again with one setting changed (meson.build: the
     * rewrite-off runs): the run's own settings still win. */
    const char *extra = getenv("SWT_EXTRA_ENV");
    if (extra && *extra)
        env_put(&e, extra);
    for (const char *const *p = env; p && *p; p++)
        env_put(&e, *p);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, r->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, r->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, e.v);
    posix_spawn_file_actions_destroy(&fa);
    env_free(&e);
    ck_assert_msg(rc == 0, "cannot start %s: %s", argv[0], strerror(rc));
    wait_for(r, pid);
}

void swt_run(swt_run_t *r, bool preload, const char *const *env, const char *const *argv)
{
    run(r, preload, NULL, env, argv);
}

void swt_run_preloading(swt_run_t *r, const char *after, const char *const *env,
                        const char *const *argv)
{
    run(r, true, after, env, argv);
}

/* ---- files ---- */

char *swt_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (len < cap - 1)
            break;
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

bool swt_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

bool swt_file_has(const char *path, const char *text)
{
    char *s = swt_slurp(path);
    bool has = s && strstr(s, text);
    free(s);
    return has;
}

bool swt_json_u64(const char *path, const char *key, uint64_t *out)
{
    char *s = swt_slurp(path);
    if (!s)
        return false;
    char quoted[256];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    bool ok = false;
    const char *p = strstr(s, quoted);
    if (p) {
        p += strlen(quoted);
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (*p == ':') {
            p++;
            while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
                p++;
            if (*p >= '0' && *p <= '9') {
                char *end;
                errno = 0;
                unsigned long long v = strtoull(p, &end, 10);
                ok = errno == 0;
                *out = v;
            }
        }
    }
    free(s);
    return ok;
}

uint64_t swt_sg(const swt_run_t *r, const char *key)
{
    uint64_t v = 0;
    if (!swt_json_u64(r->sg_report, key, &v))
        ck_abort_msg("no \"%s\" in simgpu's report %s: %s", key, r->sg_report, swt_describe(r));
    return v;
}

uint64_t swt_sw(const swt_run_t *r, const char *key)
{
    uint64_t v = 0;
    if (!swt_json_u64(r->sw_report, key, &v))
        ck_abort_msg("no \"%s\" in spillway's report %s: %s", key, r->sw_report,
                     swt_describe(r));
    return v;
}

uint64_t swt_calls(const swt_run_t *r, const char *fn)
{
    uint64_t v = 0;
    ck_assert_msg(swt_file_has(r->sg_report, "\"calls\""), "no call counts in %s: %s",
                  r->sg_report, swt_describe(r));
    return swt_json_u64(r->sg_report, fn, &v) ? v : 0;
}

/* Up to max bytes of a file, with newlines shown as " | ". */
static void excerpt(const char *path, char *buf, size_t len, size_t max)
{
    char *s = swt_slurp(path);
    buf[0] = '\0';
    if (!s)
        return;
    size_t j = 0;
    for (size_t i = 0; s[i] && i < max && j + 4 < len; i++) {
        if (s[i] == '\n') {
            if (s[i + 1])
                j += (size_t)snprintf(buf + j, len - j, " | ");
        } else {
            buf[j++] = s[i];
        }
    }
    buf[j] = '\0';
    free(s);
}

const char *swt_describe(const swt_run_t *r)
{
    static char msg[4096];
    char out[700], err[1400], hz[600] = "";
    excerpt(r->out, out, sizeof out, 600);
    excerpt(r->err, err, sizeof err, 1200);
    char *sg = swt_slurp(r->sg_report);
    const char *h = sg ? strstr(sg, "\"hazard_list\"") : NULL;
    if (h) {
        /* The array only: up to its closing bracket, on one line. */
        int n = (int)strcspn(h, "]");
        snprintf(hz, sizeof hz, "%.*s]", n < 500 ? n : 500, h);
        for (char *c = hz; *c; c++)
            if (*c == '\n')
                *c = ' ';
    }
    free(sg);
    if (r->exited)
        snprintf(msg, sizeof msg, "[exit %d; stdout: %s; stderr: %s; %s; dir %s]", r->status, out,
                 err, hz, r->dir);
    else
        snprintf(msg, sizeof msg, "[signal %d%s; stdout: %s; stderr: %s; %s; dir %s]", r->signal,
                 r->timed_out ? " (timed out)" : "", out, err, hz, r->dir);
    return msg;
}

void swt_assert_status(const swt_run_t *r, int status)
{
    ck_assert_msg(r->exited && r->status == status, "want exit status %d, got %s", status,
                  swt_describe(r));
}

void swt_assert_clean(const swt_run_t *r)
{
    ck_assert_msg(swt_exists(r->sg_report), "simgpu wrote no report: %s", swt_describe(r));
    ck_assert_msg(swt_sg(r, "hazards") == 0, "simgpu saw hazards: %s", swt_describe(r));
    ck_assert_msg(swt_sg(r, "faults") == 0, "simgpu saw faults: %s", swt_describe(r));
}

void swt_assert_match(const swt_run_t *r)
{
    swt_assert_status(r, 0);
    ck_assert_msg(swt_file_has(r->out, "result=match"), "no result=match: %s", swt_describe(r));
    swt_assert_clean(r);
}

int swt_dir_entries(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

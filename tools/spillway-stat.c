/*
 * spillway-stat: shows the live statistics of processes running under
 * spillway, read from their stats files (the format: include/spillway/stats.h).
 *
 *   spillway-stat              one line per process; removes the files of
 *                              processes that are gone, and says so
 *   spillway-stat PID          every field of one process
 *   --json                     the same, as JSON
 *   --prometheus               every field of every process (or of PID) in
 *                              Prometheus's text format
 *   --prometheus-file PATH     the same, written to PATH atomically (a new
 *                              file renamed over it), for node_exporter's
 *                              textfile collector
 *   PID --record FILE          every field of PID, sampled every --watch
 *                              interval (default 1 s) into a CSV file
 *                              until the process exits (a timeline, for
 *                              tools/spillway-plot.sh)
 *   --watch [SECONDS]          refresh until interrupted (--count N: N times)
 *   --dir DIR                  the stats directory (default: the library's)
 *
 * Exit status: 0 done, 1 the directory could not be read or the metrics
 * file written, 2 bad input (a
 * bad option or PID, no stats for the PID, a file that fails validation).
 * Only reads: the things it changes are the removal of stale files and
 * the metrics file it is asked to write.
 *
 * A file is mapped while it is read. If its owner (or any process of the
 * user) truncates it meanwhile, reading the mapping raises SIGBUS; the
 * read is then abandoned (siglongjmp out of the snapshot, which holds no
 * lock and allocates nothing) and the file reported as truncated, instead
 * of the command dying. Command names are shown with non-printable bytes
 * escaped (stats_file.c), so a process cannot send escapes to the terminal.
 */
#include "stats_file.h"
#include "sw.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAX_WATCH_SECONDS 3600

typedef struct {
    char dir[1024];
    int pid;        /* 0: list every process */
    bool json;
    bool prometheus;
    char prom_file[1024]; /* "": stdout */
    char record[1024];    /* --record: the CSV file; "": none */
    bool watch;
    double interval;
    long count;     /* refreshes; 0: until interrupted */
} args_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: spillway-stat [--dir DIR] [--json | --prometheus | --prometheus-file PATH]\n"
            "                     [--watch [SECONDS]] [--count N] [PID]\n"
            "       spillway-stat PID --record FILE [--watch [SECONDS]] [--count N]\n"
            "  without PID     list the processes running under spillway, removing the\n"
            "                  stats files of processes that are gone\n"
            "  PID             show every statistic of that process\n"
            "  --json          print JSON instead of a table\n"
            "  --prometheus    print every field in Prometheus's text format, for every\n"
            "                  process (or PID's only)\n"
            "  --prometheus-file PATH\n"
            "                  the same, written to PATH atomically (for node_exporter's\n"
            "                  textfile collector); with --watch, rewritten every refresh\n"
            "  --record FILE   sample every field of PID into FILE as CSV, every --watch\n"
            "                  interval (default 1 second), until the process exits\n"
            "  --watch [SECS]  refresh every SECS seconds (default 1) until interrupted\n"
            "  --count N       stop after N refreshes (implies --watch)\n"
            "  --dir DIR       stats directory (default: $SPILLWAY_STATS_DIR, else\n"
            "                  $XDG_RUNTIME_DIR/spillway, else /tmp/spillway-<uid>)\n");
}

static void __attribute__((noreturn, format(printf, 1, 2))) bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("spillway-stat: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

/* A process id: digits only, 1 .. INT_MAX. */
static bool parse_pid(const char *s, int *out)
{
    long v = 0;
    if (!*s)
        return false;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (*p - '0');
        if (v > INT_MAX)
            return false;
    }
    *out = (int)v;
    return v > 0;
}

/* Seconds: a plain decimal number (no sign, no exponent). */
static bool parse_seconds(const char *s, double *out)
{
    if (!*s || strspn(s, "0123456789.") != strlen(s) || strchr(s, '.') != strrchr(s, '.'))
        return false;
    char *end;
    double v = strtod(s, &end);
    if (*end || !(v > 0))
        return false;
    *out = v;
    return true;
}

/* Takes the value of --name VALUE or --name=VALUE; NULL when arg is not
 * --name. */
static const char *option_value(int argc, char **argv, int *i, const char *name, bool optional)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n])
        return NULL;
    if (optional) {
        double ignored;
        if (*i + 1 < argc && parse_seconds(argv[*i + 1], &ignored))
            return argv[++*i];
        return "";
    }
    if (*i + 1 >= argc)
        bad("%s needs a value", name);
    return argv[++*i];
}

static void parse_args(int argc, char **argv, args_t *a)
{
    memset(a, 0, sizeof *a);
    a->interval = 1;
    bool have_dir = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *v;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(arg, "--json") == 0) {
            a->json = true;
        } else if (strcmp(arg, "--prometheus") == 0) {
            a->prometheus = true;
        } else if ((v = option_value(argc, argv, &i, "--prometheus-file", false))) {
            if (!*v || strlen(v) >= sizeof a->prom_file)
                bad("--prometheus-file: expected a file path shorter than %zu bytes",
                    sizeof a->prom_file);
            strcpy(a->prom_file, v);
            a->prometheus = true;
        } else if ((v = option_value(argc, argv, &i, "--record", false))) {
            if (!*v || strlen(v) >= sizeof a->record)
                bad("--record: expected a file path shorter than %zu bytes", sizeof a->record);
            strcpy(a->record, v);
            a->watch = true;
        } else if ((v = option_value(argc, argv, &i, "--watch", true))) {
            a->watch = true;
            if (*v && !parse_seconds(v, &a->interval))
                bad("--watch %s: expected a number of seconds such as 1 or 0.5", v);
            /* "--watch 4321" is more likely a PID than an hour-long interval. */
            if (a->interval > MAX_WATCH_SECONDS)
                bad("--watch %s: at most %d seconds (to watch PID %s, write: spillway-stat %s "
                    "--watch)", v, MAX_WATCH_SECONDS, v, v);
        } else if ((v = option_value(argc, argv, &i, "--count", false))) {
            char *end;
            errno = 0;
            a->count = strtol(v, &end, 10);
            if (!*v || *end || errno || a->count < 1 || v[0] == '+' || v[0] == ' ')
                bad("--count %s: expected a whole number of at least 1", v);
            a->watch = true;
        } else if ((v = option_value(argc, argv, &i, "--dir", false))) {
            if (!*v || strlen(v) >= sizeof a->dir)
                bad("--dir: expected a directory path shorter than %zu bytes", sizeof a->dir);
            strcpy(a->dir, v);
            have_dir = true;
        } else if (arg[0] == '-') {
            bad("unknown option '%s' (see spillway-stat --help)", arg);
        } else if (a->pid) {
            bad("one PID at most: '%s'", arg);
        } else if (!parse_pid(arg, &a->pid)) {
            bad("not a process id: '%s'", arg);
        }
    }
    if (a->json + a->prometheus + !!a->record[0] > 1)
        bad("--json, --prometheus and --record: choose one");
    if (a->record[0] && !a->pid)
        bad("--record needs the PID of the process to record");
    if (!have_dir) {
        /* The library's rule: the options table's STATS_DIR, else the
         * per-user default. A bad value of some other SPILLWAY_ variable
         * is the library's business, not a reason to show nothing. */
        sw_options_t o;
        sw_options_parse(&o, environ, NULL, 0, NULL, 0);
        if (sw_statsfile_dir(o.stats_dir, getenv("XDG_RUNTIME_DIR"), a->dir, sizeof a->dir) != 0)
            bad("stats directory path too long");
    }
}

/* ---- list mode ---- */

typedef struct {
    const args_t *a;
    int shown;
    /* --prometheus: every process's snapshot, printed together at the end
     * (the format wants each metric's samples in one group) */
    sw_stats_snapshot_t *snaps;
} list_t;

/* ---- reading a mapping that may shrink ---- */

static sigjmp_buf bus_jump;
static volatile sig_atomic_t bus_armed;

static void on_bus(int sig)
{
    if (bus_armed)
        siglongjmp(bus_jump, 1);
    /* A SIGBUS anywhere else is a real fault: die of it. */
    signal(sig, SIG_DFL);
    raise(sig);
}

typedef enum { READ_OK, READ_TORN, READ_TRUNCATED } read_t;

/* sw_statsfile_snapshot, surviving the file's truncation under it. */
static read_t snapshot(const sw_statsfile_t *m, sw_stats_snapshot_t *s)
{
    static bool installed;
    if (!installed) {
        struct sigaction sa = {.sa_handler = on_bus};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, &sa, NULL);
        installed = true;
    }
    if (sigsetjmp(bus_jump, 1)) {
        bus_armed = 0;
        return READ_TRUNCATED;
    }
    bus_armed = 1;
    bool ok = sw_statsfile_snapshot(m, s);
    bus_armed = 0;
    return ok ? READ_OK : READ_TORN;
}

static int list_one(int pid, const char *path, void *arg)
{
    list_t *l = arg;
    char err[512];
    int r = sw_statsfile_remove_stale(path, pid, err, sizeof err);
    if (r == 1) {
        fprintf(stderr, "spillway-stat: removed %s: process %d is gone\n", path, pid);
        return 0;
    }
    if (r < 0)
        fprintf(stderr, "spillway-stat: %s\n", err);
    const sw_statsfile_t *m = sw_statsfile_open(path, geteuid(), err, sizeof err);
    if (!m) {
        if (r == 0)
            fprintf(stderr, "spillway-stat: skipping %s\n", err);
        return 0;
    }
    sw_stats_snapshot_t s;
    read_t rd = snapshot(m, &s);
    sw_statsfile_close(m);
    if (rd == READ_TRUNCATED) {
        fprintf(stderr, "spillway-stat: skipping %s: truncated while being read\n", path);
        return 0;
    }
    if (rd == READ_TORN)
        fprintf(stderr, "spillway-stat: pid %d is stopped mid-update; figures may not add up\n",
                pid);
    if (l->a->prometheus) {
        sw_stats_snapshot_t *more = realloc(l->snaps, (size_t)(l->shown + 1) * sizeof *more);
        if (!more) {
            fprintf(stderr, "spillway-stat: out of memory; skipping pid %d\n", pid);
            return 0;
        }
        l->snaps = more;
        l->snaps[l->shown] = s;
    } else if (l->a->json) {
        fputs(l->shown ? ",\n  " : "[\n  ", stdout);
        sw_statsfile_json(stdout, &s, 2);
    } else {
        if (!l->shown)
            sw_statsfile_list_header(stdout);
        sw_statsfile_list_row(stdout, &s);
    }
    l->shown++;
    return 0;
}

/* Prometheus output of n snapshots: to stdout, or to --prometheus-file as
 * a new file renamed over it, so that a reader (node_exporter) sees the
 * old file or the new one, never half of one. Not fsync'd: the file is
 * rewritten every refresh and worthless after a crash. Returns 0, or 1
 * having said why the file could not be written; the old file is then
 * left as it was, and no temporary file behind. */
static int emit_prometheus(const args_t *a, const sw_stats_snapshot_t *s, size_t n)
{
    if (!a->prom_file[0]) {
        sw_statsfile_prometheus(stdout, s, n);
        return 0;
    }
    /* beside the target (rename works within one file system only), under
     * a name the collector ignores: it reads *.prom files only */
    char tmp[sizeof a->prom_file + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", a->prom_file);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        fprintf(stderr, "spillway-stat: cannot create %s: %s\n", tmp, strerror(errno));
        return 1;
    }
    /* mkstemp makes it 0600, but the collector runs as another user */
    mode_t mask = umask(0);
    umask(mask);
    FILE *f = fdopen(fd, "w");
    bool ok = f && fchmod(fd, 0644 & ~mask) == 0;
    if (ok) {
        sw_statsfile_prometheus(f, s, n);
        ok = fflush(f) == 0 && !ferror(f);
    }
    int e = errno;
    if ((f ? fclose(f) : close(fd)) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (ok && rename(tmp, a->prom_file) != 0) {
        ok = false;
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        fprintf(stderr, "spillway-stat: cannot write %s: %s\n", a->prom_file, strerror(e));
        return 1;
    }
    return 0;
}

static int show_list(const args_t *a)
{
    char err[512];
    if (access(a->dir, F_OK) != 0 && errno == ENOENT) {
        if (a->prometheus)
            return emit_prometheus(a, NULL, 0);
        if (a->json)
            puts("[]");
        else
            printf("no processes under spillway (%s does not exist)\n", a->dir);
        return 0;
    }
    if (sw_statsfile_prepare_dir(a->dir, false, err, sizeof err) != 0)
        bad("%s", err);
    list_t l = {a, 0, NULL};
    if (sw_statsfile_each(a->dir, list_one, &l) < 0) {
        fprintf(stderr, "spillway-stat: cannot read %s: %s\n", a->dir, strerror(errno));
        free(l.snaps);
        return 1;
    }
    if (a->prometheus) {
        int rc = emit_prometheus(a, l.snaps, (size_t)l.shown);
        free(l.snaps);
        return rc;
    }
    if (a->json)
        puts(l.shown ? "\n]" : "[]");
    else if (!l.shown)
        printf("no processes under spillway in %s\n", a->dir);
    return 0;
}

/* ---- one process ---- */

/* --record: the CSV file and when recording started. */
typedef struct {
    FILE *f;
    struct timespec t0;
} recorder_t;

/* Opens the CSV file and writes its header: time_s, then every field by
 * name. Exits 1 saying why when it cannot. */
static void record_start(const args_t *a, recorder_t *r)
{
    r->f = fopen(a->record, "w");
    if (!r->f) {
        fprintf(stderr, "spillway-stat: cannot write %s: %s\n", a->record, strerror(errno));
        exit(1);
    }
    clock_gettime(CLOCK_MONOTONIC, &r->t0);
    fputs("time_s", r->f);
    for (int i = 0; i < SW_STAT_COUNT; i++)
        fprintf(r->f, ",%s", sw_stat_fields[i].name);
    fputc('\n', r->f);
}

/* One CSV row: seconds since the start, then every field's value. Flushed
 * at once, so a plot can be drawn while recording goes on. Returns 0, or 1
 * having said why the row could not be written. */
static int record_row(const args_t *a, recorder_t *r, const sw_stats_snapshot_t *s)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    fprintf(r->f, "%.3f",
            (double)(t.tv_sec - r->t0.tv_sec) + (double)(t.tv_nsec - r->t0.tv_nsec) / 1e9);
    for (int i = 0; i < SW_STAT_COUNT; i++)
        fprintf(r->f, ",%" PRIu64, s->value[i]);
    fputc('\n', r->f);
    if (fflush(r->f) != 0 || ferror(r->f)) {
        fprintf(stderr, "spillway-stat: cannot write %s: %s\n", a->record, strerror(errno));
        return 1;
    }
    return 0;
}

/* Shows PID's fields, or records them with rec. Returns 0 shown, 1 the
 * metrics or CSV file could not be written, 3 the file is gone after an
 * earlier refresh showed it. */
static int show_pid(const args_t *a, bool shown_before, recorder_t *rec)
{
    char path[2048], err[2600];
    snprintf(path, sizeof path, "%s/%d.stats", a->dir, a->pid);
    struct stat st;
    if (lstat(path, &st) != 0 && errno == ENOENT) {
        if (shown_before) {
            printf("process %d has exited\n", a->pid);
            return 3;
        }
        bad("no spillway stats for process %d in %s (is it running under spillway? "
            "another --dir?)", a->pid, a->dir);
    }
    if (sw_statsfile_prepare_dir(a->dir, false, err, sizeof err) != 0)
        bad("%s", err);
    const sw_statsfile_t *m = sw_statsfile_open(path, geteuid(), err, sizeof err);
    if (!m)
        bad("%s", err);
    sw_stats_snapshot_t s;
    read_t rd = snapshot(m, &s);
    sw_statsfile_close(m);
    if (rd == READ_TRUNCATED)
        bad("%s: truncated while being read", path);
    if (rd == READ_TORN)
        fprintf(stderr, "spillway-stat: pid %d is stopped mid-update; figures may not add up\n",
                a->pid);
    if (sw_statsfile_pid_gone(a->pid, s.start_time))
        fprintf(stderr, "spillway-stat: process %d is gone; these are its last figures\n", a->pid);
    if (rec)
        return record_row(a, rec, &s);
    if (a->prometheus)
        return emit_prometheus(a, &s, 1);
    if (a->json) {
        sw_statsfile_json(stdout, &s, 0);
        putchar('\n');
    } else {
        sw_statsfile_table(stdout, &s);
    }
    return 0;
}

int main(int argc, char **argv)
{
    args_t a;
    parse_args(argc, argv, &a);
    bool tty = isatty(STDOUT_FILENO);
    recorder_t rec;
    if (a.record[0])
        record_start(&a, &rec);
    for (long n = 1;; n++) {
        /* else stdout has nothing to clear or separate */
        bool to_stdout = !a.prom_file[0] && !a.record[0];
        if (to_stdout && a.watch && tty)
            fputs("\033[H\033[2J", stdout);
        else if (to_stdout && n > 1)
            putchar('\n');
        int rc = a.pid ? show_pid(&a, n > 1, a.record[0] ? &rec : NULL) : show_list(&a);
        fflush(stdout);
        if (rc == 3)
            return 0;
        if (rc || !a.watch || (a.count && n >= a.count))
            return rc;
        struct timespec ts = {(time_t)a.interval,
                              (long)((a.interval - (double)(time_t)a.interval) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
}

/*
 * The live stats file: see stats_file.h for the layout and the seqlock.
 *
 * Trust: the directory is the user's own (0700, checked), and a reader
 * still checks every file it opens (no symlink, regular, ours, the right
 * magic, version and size) before mapping it, because a stats file is
 * input: a wrong one must give a clear message, never a read past the end
 * of a mapping.
 */
#include "stats_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The layout is an interface with other builds: pin it. */
_Static_assert(sizeof(sw_statsfile_header_t) == 72, "stats header layout");
_Static_assert(offsetof(sw_statsfile_header_t, start_time) == 24, "stats header layout");
_Static_assert(offsetof(sw_statsfile_header_t, comm) == 32, "stats header layout");
_Static_assert(offsetof(sw_statsfile_header_t, seq) == 64, "stats header layout");
_Static_assert(sizeof(_Atomic uint64_t) == 8 && ATOMIC_LLONG_LOCK_FREE == 2,
               "counters shared between processes must be lock-free words");

#define SW_SF_NWORDS_COUNTER 1
#define SW_SF_NWORDS_GAUGE 2
#define SW_SF_NWORDS(kind, name, unit, help) +SW_SF_NWORDS_##kind
_Static_assert(sizeof(sw_statsfile_t) ==
                   sizeof(sw_statsfile_header_t) + 8 * (0 SW_STATS_FIELDS(SW_SF_NWORDS)),
               "stats words are packed after the header");

#define SW_SF_IS_GAUGE true
#define SW_SF_IS_COUNTER false
#define SW_SF_PEAK_GAUGE(name) offsetof(sw_statsfile_t, name##_peak)
#define SW_SF_PEAK_COUNTER(name) 0
#define SW_SF_FIELD(kind, name, unit, help) \
    {#name, unit, help, SW_SF_IS_##kind, offsetof(sw_statsfile_t, name), SW_SF_PEAK_##kind(name)},
const sw_stat_field_t sw_stat_fields[SW_STAT_COUNT] = {SW_STATS_FIELDS(SW_SF_FIELD)};

/* Bound on a reader's wait for a writer to leave a group. Groups last
 * nanoseconds; only a stopped or dead writer makes a reader wait this. */
#define SNAPSHOT_PATIENCE_NS (100 * 1000 * 1000)

static void __attribute__((format(printf, 3, 4)))
say(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static const _Atomic uint64_t *cword(const sw_statsfile_t *m, size_t off)
{
    return (const _Atomic uint64_t *)((const char *)m + off);
}

/* ---- writer side ---------------------------------------------------------- */

/* Raises *p to at least v (signed comparison, see the header). */
static void raise_peak(_Atomic uint64_t *p, uint64_t v)
{
    uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
    while ((int64_t)v > (int64_t)old &&
           !atomic_compare_exchange_weak_explicit(p, &old, v, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

void sw_statsfile_add(sw_statsfile_t *m, sw_stat_id_t id, int64_t delta)
{
    if ((unsigned)id >= SW_STAT_COUNT)
        return;
    const sw_stat_field_t *f = &sw_stat_fields[id];
    /* Unsigned wrap-around makes a negative delta a subtraction. */
    uint64_t now = atomic_fetch_add_explicit(sw_statsfile_word(m, f->value_off),
                                             (uint64_t)delta, memory_order_relaxed) +
                   (uint64_t)delta;
    if (f->gauge)
        raise_peak(sw_statsfile_word(m, f->peak_off), now);
}

void sw_statsfile_write_begin(sw_statsfile_t *m)
{
    uint64_t s = atomic_load_explicit(&m->h.seq, memory_order_relaxed);
    atomic_store_explicit(&m->h.seq, s + 1, memory_order_relaxed);
    /* The odd seq must be visible before any word of the group is. */
    atomic_thread_fence(memory_order_release);
}

void sw_statsfile_write_end(sw_statsfile_t *m)
{
    uint64_t s = atomic_load_explicit(&m->h.seq, memory_order_relaxed);
    atomic_store_explicit(&m->h.seq, s + 1, memory_order_release);
}

void sw_statsfile_fold(sw_statsfile_t *dst, sw_statsfile_t *src, bool take)
{
    for (int i = 0; i < SW_STAT_COUNT; i++) {
        const sw_stat_field_t *f = &sw_stat_fields[i];
        _Atomic uint64_t *sv = sw_statsfile_word(src, f->value_off);
        uint64_t v = take ? atomic_exchange(sv, 0) : atomic_load(sv);
        uint64_t now = atomic_fetch_add(sw_statsfile_word(dst, f->value_off), v) + v;
        if (f->gauge) {
            _Atomic uint64_t *sp = sw_statsfile_word(src, f->peak_off);
            uint64_t p = take ? atomic_exchange(sp, 0) : atomic_load(sp);
            raise_peak(sw_statsfile_word(dst, f->peak_off), p);
            raise_peak(sw_statsfile_word(dst, f->peak_off), now);
        }
    }
}

void sw_statsfile_fill_header(sw_statsfile_t *m, int pid)
{
    sw_statsfile_header_t *h = &m->h;
    memset(h->magic, 0, sizeof h->magic);
    h->version = SW_STATS_VERSION;
    h->size = sizeof *m;
    h->nfields = SW_STAT_COUNT;
    h->pid = pid;
    h->start_time = sw_statsfile_proc_start(pid);
    memset(h->comm, 0, sizeof h->comm);
    char comm[17] = "";
    if (pid == getpid() && prctl(PR_GET_NAME, comm) == 0)
        memcpy(h->comm, comm, strnlen(comm, sizeof comm - 1));
    /* Readers take a right magic to mean a complete header. */
    atomic_thread_fence(memory_order_release);
    memcpy(h->magic, SW_STATS_MAGIC, sizeof h->magic);
}

/* ---- directory and files ----------------------------------------------------- */

static bool is_our_dir(const char *path)
{
    struct stat st;
    return path && path[0] && lstat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
           st.st_uid == geteuid();
}

int sw_statsfile_dir(const char *configured, const char *xdg_runtime_dir, char *out,
                     size_t outlen)
{
    int n;
    if (configured && configured[0])
        n = snprintf(out, outlen, "%s", configured);
    else if (is_our_dir(xdg_runtime_dir))
        n = snprintf(out, outlen, "%s/spillway", xdg_runtime_dir);
    else
        n = snprintf(out, outlen, "/tmp/spillway-%u", (unsigned)geteuid());
    if (n < 0 || (size_t)n >= outlen) {
        if (outlen)
            out[0] = '\0';
        return -1;
    }
    return 0;
}

int sw_statsfile_prepare_dir(const char *dir, bool create, char *err, size_t errlen)
{
    if (create && mkdir(dir, 0700) == 0 && chmod(dir, 0700) != 0) {
        say(err, errlen, "stats directory %s: cannot set mode 0700: %s", dir, strerror(errno));
        return -1;
    }
    struct stat st;
    if (lstat(dir, &st) != 0) {
        say(err, errlen, "stats directory %s: %s", dir, strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode)) {
        say(err, errlen, "stats directory %s is a symbolic link; refusing to use it", dir);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        say(err, errlen, "stats directory %s is not a directory", dir);
        return -1;
    }
    if (st.st_uid != geteuid()) {
        say(err, errlen, "stats directory %s is owned by uid %u, not by uid %u; refusing to use it",
            dir, (unsigned)st.st_uid, (unsigned)geteuid());
        return -1;
    }
    if ((st.st_mode & 07777) != 0700) {
        say(err, errlen, "stats directory %s has mode %04o, expected 0700; refusing to use it", dir,
            (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

sw_statsfile_t *sw_statsfile_create(const char *dir, char *path, size_t pathlen, char *err,
                                    size_t errlen)
{
    int pid = getpid();
    int n = snprintf(path, pathlen, "%s/%d.stats", dir, pid);
    if (n < 0 || (size_t)n >= pathlen) {
        say(err, errlen, "stats directory %s: path too long", dir);
        return NULL;
    }
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (st.st_uid != geteuid()) {
            say(err, errlen, "%s exists and is owned by uid %u; not replacing it", path,
                (unsigned)st.st_uid);
            return NULL;
        }
        if (unlink(path) != 0 && errno != ENOENT) {
            say(err, errlen, "%s: cannot remove the stale file: %s", path, strerror(errno));
            return NULL;
        }
    }
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        say(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        return NULL;
    }
    sw_statsfile_t *m = MAP_FAILED;
    /* The umask may have taken bits off 0600; readers need exactly ours. */
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, sizeof *m) != 0 ||
        (m = mmap(NULL, sizeof *m, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        say(err, errlen, "%s: cannot size or map: %s", path, strerror(errno));
        unlink(path);
        close(fd);
        return NULL;
    }
    close(fd);
    sw_statsfile_fill_header(m, pid);
    return m;
}

const sw_statsfile_t *sw_statsfile_open(const char *path, uid_t owner, char *err, size_t errlen)
{
    const size_t want = sizeof(sw_statsfile_t);
    /* O_NONBLOCK: opening a FIFO planted under a stats name must not hang. */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ELOOP)
            say(err, errlen, "%s: is a symbolic link; refusing to follow it", path);
        else
            say(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    sw_statsfile_header_t h;
    const sw_statsfile_t *m = NULL;
    if (fstat(fd, &st) != 0) {
        say(err, errlen, "%s: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        say(err, errlen, "%s: not a regular file", path);
    } else if (st.st_uid != owner) {
        say(err, errlen, "%s: owned by uid %u, expected uid %u; refusing to read it", path,
            (unsigned)st.st_uid, (unsigned)owner);
    } else if ((size_t)st.st_size < sizeof h || pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
        say(err, errlen, "%s: %lld bytes, too small for a spillway stats file (expected %zu)",
            path, (long long)st.st_size, want);
    } else if (memcmp(h.magic, SW_STATS_MAGIC, sizeof h.magic) != 0) {
        say(err, errlen, "%s: not a spillway stats file (bad magic)", path);
    } else if (h.version != SW_STATS_VERSION) {
        say(err, errlen,
            "%s: stats format version %" PRIu32 ", expected version %d "
            "(spillway-stat and libspillway come from different builds)",
            path, h.version, SW_STATS_VERSION);
    } else if (h.size != want || h.nfields != SW_STAT_COUNT) {
        say(err, errlen,
            "%s: header says %" PRIu32 " bytes and %" PRIu32 " fields, expected %zu and %d", path,
            h.size, h.nfields, want, SW_STAT_COUNT);
    } else if ((size_t)st.st_size != want) {
        say(err, errlen, "%s: file is %lld bytes, expected %zu", path, (long long)st.st_size,
            want);
    } else {
        void *p = mmap(NULL, want, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            say(err, errlen, "%s: cannot map: %s", path, strerror(errno));
        else
            m = p;
    }
    close(fd);
    return m;
}

void sw_statsfile_close(const sw_statsfile_t *m)
{
    if (m)
        munmap((void *)m, sizeof *m);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void copy_words(const sw_statsfile_t *m, sw_stats_snapshot_t *s)
{
    for (int i = 0; i < SW_STAT_COUNT; i++) {
        const sw_stat_field_t *f = &sw_stat_fields[i];
        s->value[i] = atomic_load_explicit(cword(m, f->value_off), memory_order_relaxed);
        s->peak[i] = f->gauge ? atomic_load_explicit(cword(m, f->peak_off), memory_order_relaxed)
                              : 0;
    }
}

bool sw_statsfile_snapshot(const sw_statsfile_t *m, sw_stats_snapshot_t *s)
{
    memset(s, 0, sizeof *s);
    s->version = m->h.version;
    s->pid = m->h.pid;
    s->start_time = m->h.start_time;
    memcpy(s->comm, m->h.comm, sizeof m->h.comm);

    bool ok = false;
    uint64_t deadline = 0;
    for (unsigned tries = 0;; tries++) {
        uint64_t s1 = atomic_load_explicit(&m->h.seq, memory_order_acquire);
        if (!(s1 & 1)) {
            copy_words(m, s);
            atomic_thread_fence(memory_order_acquire);
            if (atomic_load_explicit(&m->h.seq, memory_order_relaxed) == s1) {
                ok = true;
                break;
            }
        }
        /* Spin briefly (a group is a few atomic adds), then sleep. */
        if (tries < 64)
            continue;
        if (!deadline)
            deadline = now_ns() + SNAPSHOT_PATIENCE_NS;
        else if (now_ns() > deadline)
            break;
        nanosleep(&(struct timespec){0, 50 * 1000}, NULL);
    }
    if (!ok)
        copy_words(m, s);
    /* A lone gauge update raises the peak just after the value: never show
     * a value above its peak. */
    for (int i = 0; i < SW_STAT_COUNT; i++)
        if (sw_stat_fields[i].gauge && (int64_t)s->value[i] > (int64_t)s->peak[i])
            s->peak[i] = s->value[i];
    return ok;
}

/* "123.stats" -> 123; 0 for any other name. */
static int name_pid(const char *name)
{
    long v = 0;
    const char *p = name;
    for (; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (*p - '0');
        if (v > INT32_MAX)
            return 0;
    }
    return p != name && name[0] != '0' && strcmp(p, ".stats") == 0 ? (int)v : 0;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int sw_statsfile_each(const char *dir, int (*fn)(int pid, const char *path, void *arg), void *arg)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int *pids = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid = name_pid(e->d_name);
        if (!pid)
            continue;
        if (n == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            int *np = realloc(pids, ncap * sizeof *np);
            if (!np)
                break; /* list what fits */
            pids = np;
            cap = ncap;
        }
        pids[n++] = pid;
    }
    closedir(d);
    if (n) /* pids is NULL when the directory holds none: qsort takes no NULL */
        qsort(pids, n, sizeof *pids, cmp_int);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%d.stats", dir, pids[i]);
        if (fn(pids[i], path, arg))
            break;
    }
    free(pids);
    return (int)n;
}

uint64_t sw_statsfile_proc_start(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and ')': count fields from
     * the last ')'. starttime is field 22, the 20th after it. */
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    for (int field = 2; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

bool sw_statsfile_pid_gone(int pid, uint64_t start_time)
{
    if (pid <= 0)
        return true; /* kill(0 or -n) would ask about process groups */
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return true;
    if (start_time) {
        uint64_t now = sw_statsfile_proc_start(pid);
        if (now && now != start_time)
            return true; /* the pid was reused */
    }
    return false;
}

int sw_statsfile_remove_stale(const char *path, int pid, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
        return 0;
    /* A file that does not validate (an older version, say) can still be
     * judged by its pid alone. */
    uint64_t start = 0;
    const sw_statsfile_t *m = sw_statsfile_open(path, geteuid(), NULL, 0);
    if (m) {
        start = m->h.start_time;
        sw_statsfile_close(m);
    }
    if (!sw_statsfile_pid_gone(pid, start))
        return 0;
    if (unlink(path) != 0) {
        if (errno == ENOENT)
            return 0;
        say(err, errlen, "%s: cannot remove: %s", path, strerror(errno));
        return -1;
    }
    return 1;
}

/* ---- rendering ------------------------------------------------------------------ */

void sw_format_bytes(uint64_t v, char *buf, size_t len)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (v < 1024) {
        snprintf(buf, len, "%" PRIu64 " B", v);
        return;
    }
    int u = 0;
    while (u < 5 && v >> (10 * (u + 2)))
        u++;
    snprintf(buf, len, "%.1f %s", (double)v / (double)(1ull << (10 * (u + 1))), units[u]);
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(f, "\\u%04x", *p); /* comm is bytes, not UTF-8: keep the JSON valid */
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

void sw_statsfile_json(FILE *f, const sw_stats_snapshot_t *s, int indent)
{
    int in = indent + 2;
    fprintf(f, "{\n%*s\"pid\": %d,\n%*s\"command\": ", in, "", s->pid, in, "");
    json_string(f, s->comm);
    fprintf(f, ",\n%*s\"version\": %" PRIu32, in, "", s->version);
    for (int i = 0; i < SW_STAT_COUNT; i++) {
        const sw_stat_field_t *fl = &sw_stat_fields[i];
        fprintf(f, ",\n%*s\"%s\": %" PRIu64, in, "", fl->name, s->value[i]);
        if (fl->gauge)
            fprintf(f, ",\n%*s\"%s_peak\": %" PRIu64, in, "", fl->name, s->peak[i]);
    }
    fprintf(f, "\n%*s}", indent, "");
}

/* comm for a terminal: any process can name itself anything, escape
 * sequences included, so every byte outside printable ASCII, and the
 * backslash, is written as \xNN. "?" when empty. */
static const char *printable_comm(const char *comm, char *out, size_t len)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)comm; *p && n + 5 <= len; p++) {
        if (*p < 0x20 || *p >= 0x7f || *p == '\\')
            n += (size_t)snprintf(out + n, len - n, "\\x%02x", *p);
        else
            out[n++] = (char)*p;
    }
    out[n] = '\0';
    return n ? out : "?";
}

static void format_value(const sw_stat_field_t *fl, uint64_t v, char *buf, size_t len)
{
    if (strcmp(fl->unit, "bytes") == 0)
        sw_format_bytes(v, buf, len);
    else
        snprintf(buf, len, "%" PRIu64, v);
}

/* The per-device fields close the list, three per device (stats_fields.h). */
_Static_assert(SW_STAT_dev1_device_bytes - SW_STAT_dev0_device_bytes == 3 &&
                   SW_STAT_dev7_bytes_streamed == SW_STAT_COUNT - 1,
               "per-device fields: three per device, last in the list");

bool sw_statsfile_shown(int i, const sw_stats_snapshot_t *s, size_t n)
{
    if (i < SW_STAT_dev0_device_bytes)
        return true;
    int first = SW_STAT_dev0_device_bytes + (i - SW_STAT_dev0_device_bytes) / 3 * 3;
    for (size_t k = 0; k < n; k++)
        for (int j = first; j < first + 3; j++)
            if (s[k].value[j] || s[k].peak[j])
                return true;
    return false;
}

void sw_statsfile_table(FILE *f, const sw_stats_snapshot_t *s)
{
    char comm[SW_STATS_COMM_LEN * 4 + 1];
    fprintf(f, "pid %d (%s)\n", s->pid, printable_comm(s->comm, comm, sizeof comm));
    fprintf(f, "%-24s %12s %12s  %s\n", "FIELD", "VALUE", "PEAK", "DESCRIPTION");
    for (int i = 0; i < SW_STAT_COUNT; i++) {
        const sw_stat_field_t *fl = &sw_stat_fields[i];
        char v[32], p[32] = "-";
        if (!sw_statsfile_shown(i, s, 1))
            continue;
        format_value(fl, s->value[i], v, sizeof v);
        if (fl->gauge)
            format_value(fl, s->peak[i], p, sizeof p);
        fprintf(f, "%-24s %12s %12s  %s\n", fl->name, v, p, fl->help);
    }
}

void sw_statsfile_list_header(FILE *f)
{
    fprintf(f, "%8s  %-16s %12s %12s %12s %10s\n", "PID", "COMMAND", "TRACKED", "DEVICE", "HOST",
            "DEMOTIONS");
}

void sw_statsfile_list_row(FILE *f, const sw_stats_snapshot_t *s)
{
    char t[32], d[32], h[32], comm[SW_STATS_COMM_LEN * 4 + 1];
    sw_format_bytes(s->value[SW_STAT_tracked_bytes], t, sizeof t);
    sw_format_bytes(s->value[SW_STAT_device_bytes], d, sizeof d);
    sw_format_bytes(s->value[SW_STAT_host_bytes], h, sizeof h);
    fprintf(f, "%8d  %-16s %12s %12s %12s %10" PRIu64 "\n", s->pid,
            printable_comm(s->comm, comm, sizeof comm),
            t, d, h, s->value[SW_STAT_demotions]);
}

/* Text after "# HELP": backslash and newline escaped, as the format wants. */
static void prom_help(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\\\", f);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

/* A label value: backslash, quote and newline escaped as the format wants.
 * Other bytes outside printable ASCII become the text \xNN, as the
 * terminal view shows them (its backslash escaped in turn), so the output
 * stays ASCII whatever name a process gives itself. */
static void prom_label(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\\' || *p == '"')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(f, "\\\\x%02x", *p);
        else
            fputc(*p, f);
    }
}

/* One metric of field i (its peak with peak): HELP and TYPE, then one
 * sample per process, labelled with its pid and command. */
static void prom_metric(FILE *f, int i, bool peak, const sw_stats_snapshot_t *s, size_t n)
{
    const sw_stat_field_t *fl = &sw_stat_fields[i];
    char name[96];
    snprintf(name, sizeof name, "spillway_%s%s", fl->name,
             !fl->gauge ? "_total" : peak ? "_peak" : "");
    fprintf(f, "# HELP %s ", name);
    if (peak)
        fprintf(f, "highest %s since the process started: ", fl->name);
    prom_help(f, fl->help);
    fprintf(f, "\n# TYPE %s %s\n", name, fl->gauge ? "gauge" : "counter");
    for (size_t k = 0; k < n; k++) {
        fprintf(f, "%s{pid=\"%d\",command=\"", name, s[k].pid);
        prom_label(f, s[k].comm);
        fprintf(f, "\"} %" PRIu64 "\n", peak ? s[k].peak[i] : s[k].value[i]);
    }
}

void sw_statsfile_prometheus(FILE *f, const sw_stats_snapshot_t *s, size_t n)
{
    for (int i = 0; i < SW_STAT_COUNT; i++) {
        if (!sw_statsfile_shown(i, s, n))
            continue;
        prom_metric(f, i, false, s, n);
        if (sw_stat_fields[i].gauge)
            prom_metric(f, i, true, s, n);
    }
}

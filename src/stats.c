/*
 * spillway's counters, and their publication in the live stats file.
 *
 * Where: <dir>/<pid>.stats, dir being SPILLWAY_STATS_DIR, else
 * $XDG_RUNTIME_DIR/spillway when that is a directory of ours, else
 * /tmp/spillway-<euid> (sw_statsfile_dir); the directory must be ours with
 * mode 0700 (created so when missing), the file is 0600.
 *
 * The counters are the words of an sw_statsfile_t (stats_file.h). The
 * truth is a private one in process memory: sw_stat_get and the report
 * read it, and budget decisions (device_bytes, host_bytes) rest on it.
 * Once sw_stats_publish has run, every update is applied a second time to
 * the MAP_SHARED mapping of <dir>/<pid>.stats, the mirror spillway-stat
 * reads live, with no copying thread and no timer:
 *
 *      sw_stat_add --+--> truth (private)  <-- sw_stat_get, the report
 *                    +--> mirror: mapping of <pid>.stats  <-- spillway-stat
 *
 * The file is writable by any process of the user, so nothing is ever
 * read back from it: a process that scribbles on it changes what
 * spillway-stat shows, never what spillway decides.
 *
 * Publish copies the truth into the new file inside a seqlock group, then
 * points mirror at it. A lone update racing with publish may be counted
 * twice or not at all in the mirror (never in the truth); publish runs at
 * start-up, before the hooks track anything, so in practice none is. The
 * mapping is never unmapped while threads may still hold its address
 * (only in a fork child, which has one thread).
 *
 * Groups (sw_stats_batch_begin/end) are serialised by batch_lock and
 * bracket both blocks; lone updates take no lock. Publish and unpublish
 * take batch_lock too, so mirror cannot change inside a group.
 */
#include "sw.h"

#include "stats_file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static sw_statsfile_t truth;
static _Atomic(sw_statsfile_t *) mirror; /* the published file, or NULL */

/* Serialises seqlock groups (and the changes of mirror). */
static pthread_mutex_t batch_lock = PTHREAD_MUTEX_INITIALIZER;

/* Serialises init/publish/unpublish and guards what follows. */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static char stats_dir[1024];          /* sw_stats_init's; "" = the default rule */
static sw_statsfile_t *published;     /* the mapping, NULL when not published */
static char published_path[4096];
/* The process that ran sw_stats_init: the only one that writes the report
 * (a fork child inherits the exit handler, not the report). */
static pid_t owner;


void sw_stat_add(sw_stat_id_t id, int64_t delta)
{
    sw_statsfile_add(&truth, id, delta);
    sw_statsfile_t *m = atomic_load_explicit(&mirror, memory_order_acquire);
    if (m)
        sw_statsfile_add(m, id, delta);
}

uint64_t sw_stat_get(sw_stat_id_t id)
{
    if ((unsigned)id >= SW_STAT_COUNT)
        return 0;
    return atomic_load_explicit(sw_statsfile_word(&truth, sw_stat_fields[id].value_off),
                                memory_order_relaxed);
}

uint64_t sw_stat_peak(sw_stat_id_t id)
{
    if ((unsigned)id >= SW_STAT_COUNT || !sw_stat_fields[id].gauge)
        return 0;
    return atomic_load_explicit(sw_statsfile_word(&truth, sw_stat_fields[id].peak_off),
                                memory_order_relaxed);
}

void sw_stats_batch_begin(void)
{
    pthread_mutex_lock(&batch_lock);
    sw_statsfile_write_begin(&truth);
    sw_statsfile_t *m = atomic_load_explicit(&mirror, memory_order_relaxed);
    if (m)
        sw_statsfile_write_begin(m);
}

void sw_stats_batch_end(void)
{
    sw_statsfile_t *m = atomic_load_explicit(&mirror, memory_order_relaxed);
    if (m)
        sw_statsfile_write_end(m);
    sw_statsfile_write_end(&truth);
    pthread_mutex_unlock(&batch_lock);
}

/* Points mirror at m (NULL: no mirror); a new mirror first gets the
 * truth's counts, as one group. Caller holds state_lock. */
static void set_mirror(sw_statsfile_t *m)
{
    pthread_mutex_lock(&batch_lock);
    if (m) {
        sw_statsfile_write_begin(m);
        sw_statsfile_fold(m, &truth, false);
        atomic_store_explicit(&mirror, m, memory_order_release);
        sw_statsfile_write_end(m);
    } else {
        atomic_store_explicit(&mirror, NULL, memory_order_release);
    }
    pthread_mutex_unlock(&batch_lock);
}

/* fork (called by fork.c's handlers, after the gate is taken: a thread
 * holding the gate may be waiting for batch_lock): prepare takes both
 * locks so that the child starts with no group half-written and no publish
 * in progress. The child must stop writing into its parent's file (it
 * would count the child's work as the parent's) and must never remove it:
 * it keeps its copy of the truth, unpublished. It may publish a file of
 * its own later. */
void sw_stats_fork_prepare(void)
{
    pthread_mutex_lock(&state_lock);
    pthread_mutex_lock(&batch_lock);
}

void sw_stats_fork_parent(void)
{
    pthread_mutex_unlock(&batch_lock);
    pthread_mutex_unlock(&state_lock);
}

void sw_stats_fork_child(void)
{
    pthread_mutex_unlock(&batch_lock);
    pthread_mutex_unlock(&state_lock);
    if (!published)
        return;
    /* One thread here: munmap is safe. */
    atomic_store(&mirror, NULL);
    munmap(published, sizeof *published);
    published = NULL;
    published_path[0] = '\0';
}

void sw_stats_init(const sw_options_t *o)
{
    pthread_mutex_lock(&state_lock);
    /* Setuid: the user's directory is not the program's; the default rule
     * (secure_getenv, the euid's own directory) is used instead. */
    if (o->stats_dir[0] && sw_secure())
        sw_warn("SPILLWAY_STATS_DIR ignored in a setuid or setgid program");
    snprintf(stats_dir, sizeof stats_dir, "%s", sw_secure() ? "" : o->stats_dir);
    owner = getpid();
    pthread_mutex_unlock(&state_lock);
}

/* On failure logs one warning and leaves the counters private: the
 * application runs on, only spillway-stat cannot see it. Idempotent. */
void sw_stats_publish(void)
{
    pthread_mutex_lock(&state_lock);
    if (published)
        goto out;
    char dir[1024], err[512];
    /* XDG_RUNTIME_DIR is the system's, not an option; read once, here, at
     * start-up. secure_getenv: a setuid program must not take it from the
     * user. */
    if (sw_statsfile_dir(stats_dir, secure_getenv("XDG_RUNTIME_DIR"), dir, sizeof dir) != 0) {
        sw_warn("no live stats: stats directory path too long");
        goto out;
    }
    if (sw_statsfile_prepare_dir(dir, true, err, sizeof err) != 0) {
        sw_warn("no live stats: %s", err);
        goto out;
    }
    sw_statsfile_t *m = sw_statsfile_create(dir, published_path, sizeof published_path, err,
                                            sizeof err);
    if (!m) {
        sw_warn("no live stats: %s", err);
        published_path[0] = '\0';
        goto out;
    }
    set_mirror(m);
    published = m;
    sw_info("live stats in %s", published_path);
out:
    pthread_mutex_unlock(&state_lock);
}

/* The mirror stops (the truth, which sw_stats_report reads, is untouched),
 * then the file is removed. The mapping stays: a thread racing
 * with exit may still add to it. Failure to remove only logs. */
void sw_stats_unpublish(void)
{
    pthread_mutex_lock(&state_lock);
    if (published) {
        set_mirror(NULL);
        if (unlink(published_path) != 0 && errno != ENOENT)
            sw_warn("cannot remove %s: %s", published_path, strerror(errno));
        published = NULL;
        published_path[0] = '\0';
    }
    pthread_mutex_unlock(&state_lock);
}

/* Writes a new file in path's directory, then renames it over path, so a
 * reader of path sees the previous report or this one, never a partial
 * file. The new file is made by mkstemp (O_EXCL, a name no one can guess
 * and plant a link at, mode 0600): the report is the user's alone. On
 * failure logs a warning and leaves path as it was. In a fork child (not
 * the process that ran sw_stats_init) does nothing: the report is the
 * parent's. In a setuid or setgid program does nothing either. */
void sw_stats_report(const char *path)
{
    if (!path || !path[0] || getpid() != owner)
        return;
    if (sw_secure()) {
        sw_warn("SPILLWAY_REPORT ignored in a setuid or setgid program");
        return;
    }
    sw_stats_snapshot_t s;
    sw_statsfile_snapshot(&truth, &s);
    /* The truth has no header: take ours. */
    sw_statsfile_t self;
    memset(&self, 0, sizeof self);
    sw_statsfile_fill_header(&self, getpid());
    s.version = SW_STATS_VERSION;
    s.pid = self.h.pid;
    s.start_time = self.h.start_time;
    memcpy(s.comm, self.h.comm, sizeof self.h.comm);

    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) {
        sw_warn("SPILLWAY_REPORT %s: path too long", path);
        return;
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        sw_warn("cannot write report %s: %s", tmp, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return;
    }
    sw_statsfile_json(f, &s, 0);
    fputc('\n', f);
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        sw_warn("cannot write report %s: %s", path, strerror(errno));
        unlink(tmp);
    }
}

/*
 * spillway's counters, and their publication in the live stats file.
 *
 * Where: <dir>/<pid>.stats, dir being SPILLWAY_STATS_DIR, else
 * $XDG_RUNTIME_DIR/spillway when that is a directory of ours, else
 * /tmp/spillway-<euid> (sw_statsfile_dir); the directory must be ours with
 * mode 0700 (created so when missing), the file is 0600.
 *
 * The counters are the words of an sw_statsfile_t (stats_file.h): first a
 * private one in this file, then, once sw_stats_publish has run, the
 * MAP_SHARED mapping of <dir>/<pid>.stats itself. An update is therefore
 * one atomic add wherever the counters are, and spillway-stat reads them
 * live, with no copying thread and no timer:
 *
 *      sw_stat_add --> cur --+--> private_block       (before publish, after
 *                            |                         unpublish, fork child)
 *                            +--> mapping of <pid>.stats  <-- spillway-stat
 *
 * Moving between the two: cur is swapped first, then the old block's counts
 * are folded into the new one inside a seqlock group, so a reader never
 * sees the half-moved state. A thread that loaded the old pointer just
 * before the swap may add to the old block after the fold; that update is
 * lost. Publish runs at start-up, before the hooks track anything, so in
 * practice nothing is. The mapping is never unmapped while threads may
 * still hold its address (only in a fork child, which has one thread).
 *
 * Groups (sw_stats_batch_begin/end) are serialised by batch_lock; lone
 * updates take no lock. Publish and unpublish take batch_lock too, so cur
 * cannot change inside a group.
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

static sw_statsfile_t private_block;
static _Atomic(sw_statsfile_t *) cur = &private_block;

/* Serialises seqlock groups (and the swaps of cur). */
static pthread_mutex_t batch_lock = PTHREAD_MUTEX_INITIALIZER;

/* Serialises init/publish/unpublish and guards what follows. */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static char stats_dir[1024];          /* sw_stats_init's; "" = the default rule */
static sw_statsfile_t *published;     /* the mapping, NULL when not published */
static char published_path[4096];

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

void sw_stat_add(sw_stat_id_t id, int64_t delta)
{
    sw_statsfile_add(atomic_load_explicit(&cur, memory_order_acquire), id, delta);
}

uint64_t sw_stat_get(sw_stat_id_t id)
{
    if ((unsigned)id >= SW_STAT_COUNT)
        return 0;
    sw_statsfile_t *m = atomic_load_explicit(&cur, memory_order_acquire);
    return atomic_load_explicit(sw_statsfile_word(m, sw_stat_fields[id].value_off),
                                memory_order_relaxed);
}

void sw_stats_batch_begin(void)
{
    pthread_mutex_lock(&batch_lock);
    sw_statsfile_write_begin(atomic_load_explicit(&cur, memory_order_relaxed));
}

void sw_stats_batch_end(void)
{
    sw_statsfile_write_end(atomic_load_explicit(&cur, memory_order_relaxed));
    pthread_mutex_unlock(&batch_lock);
}

/* Points cur at to and moves from's counts into it, as one group on to.
 * Caller holds state_lock. */
static void switch_to(sw_statsfile_t *to, sw_statsfile_t *from, bool take)
{
    pthread_mutex_lock(&batch_lock);
    sw_statsfile_write_begin(to);
    atomic_store_explicit(&cur, to, memory_order_release);
    sw_statsfile_fold(to, from, take);
    sw_statsfile_write_end(to);
    pthread_mutex_unlock(&batch_lock);
}

/* fork: the prepare handler takes both locks so that the child starts with
 * no group half-written and no publish in progress. The child must stop
 * writing into its parent's file (it would count the child's work as the
 * parent's) and must never remove it: it goes back to a private copy of
 * the counts, unpublished. It may publish a file of its own later. */
static void atfork_prepare(void)
{
    pthread_mutex_lock(&state_lock);
    pthread_mutex_lock(&batch_lock);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&batch_lock);
    pthread_mutex_unlock(&state_lock);
}

static void atfork_child(void)
{
    pthread_mutex_unlock(&batch_lock);
    pthread_mutex_unlock(&state_lock);
    if (!published)
        return;
    /* One thread here: plain copies and munmap are safe. */
    memset(&private_block, 0, sizeof private_block);
    sw_statsfile_fold(&private_block, published, false);
    atomic_store(&cur, &private_block);
    munmap(published, sizeof *published);
    published = NULL;
    published_path[0] = '\0';
}

static void register_atfork(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

void sw_stats_init(const sw_options_t *o)
{
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&state_lock);
    snprintf(stats_dir, sizeof stats_dir, "%s", o->stats_dir);
    pthread_mutex_unlock(&state_lock);
}

/* On failure logs one warning and leaves the counters private: the
 * application runs on, only spillway-stat cannot see it. Idempotent. */
void sw_stats_publish(void)
{
    pthread_once(&atfork_once, register_atfork);
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
    switch_to(m, &private_block, true);
    published = m;
    sw_info("live stats in %s", published_path);
out:
    pthread_mutex_unlock(&state_lock);
}

/* The counts go back to the private block (sw_stats_report after this still
 * sees them), then the file is removed. The mapping stays: a thread racing
 * with exit may still add to it. Failure to remove only logs. */
void sw_stats_unpublish(void)
{
    pthread_mutex_lock(&state_lock);
    if (published) {
        switch_to(&private_block, published, false);
        if (unlink(published_path) != 0 && errno != ENOENT)
            sw_warn("cannot remove %s: %s", published_path, strerror(errno));
        published = NULL;
        published_path[0] = '\0';
    }
    pthread_mutex_unlock(&state_lock);
}

/* Writes path.tmp.<pid> then renames it over path, so a reader of path
 * sees the previous report or this one, never a partial file. On failure
 * logs a warning and leaves path as it was. */
void sw_stats_report(const char *path)
{
    if (!path || !path[0])
        return;
    sw_stats_snapshot_t s;
    sw_statsfile_snapshot(atomic_load_explicit(&cur, memory_order_acquire), &s);
    /* The private block has no header: take ours. */
    sw_statsfile_t self;
    memset(&self, 0, sizeof self);
    sw_statsfile_fill_header(&self, getpid());
    s.version = SW_STATS_VERSION;
    s.pid = self.h.pid;
    s.start_time = self.h.start_time;
    memcpy(s.comm, self.h.comm, sizeof self.h.comm);

    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp) {
        sw_warn("SPILLWAY_REPORT %s: path too long", path);
        return;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
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

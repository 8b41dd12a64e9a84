/* stats_file.c: the live stats file, from creation to rendering. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stats_file.h"
#include "sw.h"
#include "unit.h"

#define GiB (1ll << 30)
#define MiB (1ll << 20)

/* ---- helpers ---- */

static void make_dir(char *buf, size_t len)
{
    snprintf(buf, len, "/tmp/sw-unit-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(buf));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void rm_rf(const char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Publishes like stats.c does: the directory comes from the options. */
static sw_statsfile_t *publish_in(const char *dir, char *path, size_t len)
{
    char entry[1200], resolved[1024], err[512];
    snprintf(entry, sizeof entry, "SPILLWAY_STATS_DIR=%s", dir);
    char *env[] = {entry, NULL};
    sw_options_t o;
    ck_assert_int_eq(sw_options_parse(&o, env, NULL, 0, NULL, 0), 0);
    ck_assert_int_eq(sw_statsfile_dir(o.stats_dir, NULL, resolved, sizeof resolved), 0);
    ck_assert_int_eq(sw_statsfile_prepare_dir(resolved, true, err, sizeof err), 0);
    sw_statsfile_t *m = sw_statsfile_create(resolved, path, len, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    return m;
}

/* Expects open(path) to fail with "<path>: <what>". */
static void expect_rejected(const char *path, uid_t owner, const char *what)
{
    char err[1024], want[1024];
    errno = 0;
    ck_assert_ptr_null(sw_statsfile_open(path, owner, err, sizeof err));
    snprintf(want, sizeof want, "%s: %s", path, what);
    ck_assert_str_eq(err, want);
}

/* A child that exits at once, reaped: its pid names no process (until
 * reused, which cannot happen within a test's few milliseconds in practice). */
static pid_t dead_pid(void)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    return pid;
}

/* ---- layout ---- */

START_TEST(test_layout_puts_the_fields_after_a_72_byte_header)
{
    ck_assert_uint_eq(sizeof(sw_statsfile_header_t), 72);
    ck_assert_uint_eq(offsetof(sw_statsfile_t, tracked_bytes), 72);
    ck_assert_uint_eq(offsetof(sw_statsfile_t, tracked_bytes_peak), 80);
    ck_assert_uint_eq(offsetof(sw_statsfile_t, device_bytes), 88);
    /* 9 gauges of 2 words, 30 counters of 1 (8 of them passthrough_bytes_*),
     * then 8 devices' 2 gauges and 1 counter */
    ck_assert_uint_eq(sizeof(sw_statsfile_t), 72 + 8 * (9 * 2 + 30 + 8 * (2 * 2 + 1)));
    ck_assert_int_eq(SW_STAT_COUNT, 63);
    ck_assert_uint_eq(offsetof(sw_statsfile_t, dev0_device_bytes), 72 + 8 * (9 * 2 + 30));
    ck_assert_uint_eq(offsetof(sw_statsfile_t, dev7_bytes_streamed), sizeof(sw_statsfile_t) - 8);
}
END_TEST

START_TEST(test_field_table_follows_the_field_list)
{
    ck_assert_str_eq(sw_stat_fields[SW_STAT_tracked_bytes].name, "tracked_bytes");
    ck_assert(sw_stat_fields[SW_STAT_tracked_bytes].gauge);
    ck_assert_str_eq(sw_stat_fields[SW_STAT_tracked_bytes].unit, "bytes");
    ck_assert_uint_eq(sw_stat_fields[SW_STAT_host_bytes].peak_off,
                      offsetof(sw_statsfile_t, host_bytes_peak));
    ck_assert_str_eq(sw_stat_fields[SW_STAT_demotions].name, "demotions");
    ck_assert(!sw_stat_fields[SW_STAT_demotions].gauge);
    ck_assert_uint_eq(sw_stat_fields[SW_STAT_demotions].peak_off, 0);
    ck_assert_str_eq(sw_stat_fields[SW_STAT_failed_moves].name, "failed_moves");
    for (int i = 1; i < SW_STAT_COUNT; i++)
        ck_assert_uint_gt(sw_stat_fields[i].value_off, sw_stat_fields[i - 1].value_off);
}
END_TEST

/* ---- counting ---- */

START_TEST(test_gauge_keeps_its_peak)
{
    static sw_statsfile_t m;
    sw_statsfile_add(&m, SW_STAT_device_bytes, 4 * GiB);
    sw_statsfile_add(&m, SW_STAT_device_bytes, -3 * GiB);
    sw_statsfile_add(&m, SW_STAT_device_bytes, 1 * GiB);
    ck_assert_uint_eq(m.device_bytes, 2 * GiB);
    ck_assert_uint_eq(m.device_bytes_peak, 4 * GiB);
}
END_TEST

START_TEST(test_counter_only_adds)
{
    static sw_statsfile_t m;
    sw_statsfile_add(&m, SW_STAT_demotions, 3);
    sw_statsfile_add(&m, SW_STAT_demotions, 4);
    ck_assert_uint_eq(m.demotions, 7);
    ck_assert_uint_eq(m.tracked_allocs_peak, 0);
}
END_TEST

START_TEST(test_gauge_below_zero_does_not_raise_the_peak)
{
    static sw_statsfile_t m;
    sw_statsfile_add(&m, SW_STAT_host_bytes, -5);
    ck_assert_uint_eq(m.host_bytes, (uint64_t)-5);
    ck_assert_uint_eq(m.host_bytes_peak, 0);
}
END_TEST

START_TEST(test_out_of_range_field_is_ignored)
{
    static sw_statsfile_t m, zero;
    sw_statsfile_add(&m, SW_STAT_COUNT, 1);
    sw_statsfile_add(&m, (sw_stat_id_t)-1, 1);
    ck_assert_mem_eq(&m, &zero, sizeof m);
}
END_TEST

enum { ADDER_THREADS = 4, ADDS = 100000 };

static void *adder(void *arg)
{
    for (int i = 0; i < ADDS; i++) {
        sw_statsfile_add(arg, SW_STAT_launches, 1);
        sw_statsfile_add(arg, SW_STAT_tracked_allocs, 1);
        sw_statsfile_add(arg, SW_STAT_tracked_allocs, -1);
    }
    return NULL;
}

START_TEST(test_concurrent_adds_are_not_lost)
{
    static sw_statsfile_t m;
    enum { THREADS = ADDER_THREADS };
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, adder, &m);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    ck_assert_uint_eq(m.launches, THREADS * ADDS);
    ck_assert_uint_eq(m.tracked_allocs, 0);
    ck_assert_uint_ge(m.tracked_allocs_peak, 1);
    ck_assert_uint_le(m.tracked_allocs_peak, THREADS);
}
END_TEST

START_TEST(test_fold_with_take_moves_values_and_peaks)
{
    static sw_statsfile_t a, b;
    sw_statsfile_add(&a, SW_STAT_tracked_bytes, 8);
    sw_statsfile_add(&a, SW_STAT_tracked_bytes, -3);
    sw_statsfile_add(&a, SW_STAT_launches, 10);
    sw_statsfile_add(&b, SW_STAT_tracked_bytes, 2);
    sw_statsfile_add(&b, SW_STAT_launches, 1);
    sw_statsfile_fold(&b, &a, true);
    ck_assert_uint_eq(b.tracked_bytes, 7);
    ck_assert_uint_eq(b.tracked_bytes_peak, 8);
    ck_assert_uint_eq(b.launches, 11);
    ck_assert_uint_eq(a.tracked_bytes, 0);
    ck_assert_uint_eq(a.tracked_bytes_peak, 0);
    ck_assert_uint_eq(a.launches, 0);
}
END_TEST

START_TEST(test_fold_without_take_leaves_the_source)
{
    static sw_statsfile_t a, b;
    sw_statsfile_add(&a, SW_STAT_host_bytes, 5);
    sw_statsfile_add(&a, SW_STAT_promotions, 2);
    sw_statsfile_fold(&b, &a, false);
    ck_assert_uint_eq(b.host_bytes, 5);
    ck_assert_uint_eq(b.host_bytes_peak, 5);
    ck_assert_uint_eq(b.promotions, 2);
    ck_assert_uint_eq(a.host_bytes, 5);
    ck_assert_uint_eq(a.promotions, 2);
}
END_TEST

/* ---- directory ---- */

START_TEST(test_dir_rule_prefers_the_configured_dir)
{
    char out[1024];
    ck_assert_int_eq(sw_statsfile_dir("/some/where", "/tmp", out, sizeof out), 0);
    ck_assert_str_eq(out, "/some/where");
}
END_TEST

START_TEST(test_dir_rule_uses_xdg_runtime_dir_when_it_is_ours)
{
    char xdg[64], out[1024], want[128];
    make_dir(xdg, sizeof xdg);
    ck_assert_int_eq(sw_statsfile_dir("", xdg, out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/spillway", xdg);
    ck_assert_str_eq(out, want);
    rm_rf(xdg);
}
END_TEST

START_TEST(test_dir_rule_falls_back_to_tmp_without_a_usable_xdg_runtime_dir)
{
    char out[1024], want[64], xdg[64], link[128], file[128];
    snprintf(want, sizeof want, "/tmp/spillway-%u", (unsigned)geteuid());
    ck_assert_int_eq(sw_statsfile_dir(NULL, NULL, out, sizeof out), 0);
    ck_assert_str_eq(out, want);
    ck_assert_int_eq(sw_statsfile_dir("", "", out, sizeof out), 0);
    ck_assert_str_eq(out, want);
    ck_assert_int_eq(sw_statsfile_dir("", "/nonexistent/run", out, sizeof out), 0);
    ck_assert_str_eq(out, want);
    /* a symlink to a directory of ours, and a plain file, do not count */
    make_dir(xdg, sizeof xdg);
    snprintf(link, sizeof link, "%s/link", xdg);
    ck_assert_int_eq(symlink(xdg, link), 0);
    ck_assert_int_eq(sw_statsfile_dir("", link, out, sizeof out), 0);
    ck_assert_str_eq(out, want);
    snprintf(file, sizeof file, "%s/file", xdg);
    close(open(file, O_CREAT | O_WRONLY, 0600));
    ck_assert_int_eq(sw_statsfile_dir("", file, out, sizeof out), 0);
    ck_assert_str_eq(out, want);
    rm_rf(xdg);
}
END_TEST

START_TEST(test_dir_rule_reports_a_path_too_long)
{
    char out[16];
    ck_assert_int_eq(sw_statsfile_dir("/a/very/long/directory/name", NULL, out, sizeof out), -1);
    ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_prepare_dir_creates_it_with_mode_0700)
{
    char base[64], dir[128], err[512];
    make_dir(base, sizeof base);
    snprintf(dir, sizeof dir, "%s/spillway", base);
    mode_t old = umask(0);
    ck_assert_int_eq(sw_statsfile_prepare_dir(dir, true, err, sizeof err), 0);
    umask(old);
    struct stat st;
    ck_assert_int_eq(lstat(dir, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
    ck_assert_uint_eq(st.st_mode & 07777, 0700);
    /* and accepts it the second time */
    ck_assert_int_eq(sw_statsfile_prepare_dir(dir, true, err, sizeof err), 0);
    rm_rf(base);
}
END_TEST

START_TEST(test_prepare_dir_without_create_reports_a_missing_dir)
{
    char err[512];
    ck_assert_int_eq(sw_statsfile_prepare_dir("/nonexistent/sw", false, err, sizeof err), -1);
    ck_assert_str_eq(err, "stats directory /nonexistent/sw: No such file or directory");
}
END_TEST

START_TEST(test_prepare_dir_refuses_a_dir_others_can_enter)
{
    char dir[64], err[512], want[256];
    make_dir(dir, sizeof dir);
    ck_assert_int_eq(chmod(dir, 0755), 0);
    ck_assert_int_eq(sw_statsfile_prepare_dir(dir, true, err, sizeof err), -1);
    snprintf(want, sizeof want,
             "stats directory %s has mode 0755, expected 0700; refusing to use it", dir);
    ck_assert_str_eq(err, want);
    rm_rf(dir);
}
END_TEST

START_TEST(test_prepare_dir_refuses_a_symlink)
{
    char dir[64], link[128], err[512], want[256];
    make_dir(dir, sizeof dir);
    snprintf(link, sizeof link, "%s/link", dir);
    ck_assert_int_eq(symlink(dir, link), 0);
    ck_assert_int_eq(sw_statsfile_prepare_dir(link, true, err, sizeof err), -1);
    snprintf(want, sizeof want, "stats directory %s is a symbolic link; refusing to use it", link);
    ck_assert_str_eq(err, want);
    rm_rf(dir);
}
END_TEST

START_TEST(test_prepare_dir_refuses_a_file)
{
    char dir[64], file[128], err[512], want[256];
    make_dir(dir, sizeof dir);
    snprintf(file, sizeof file, "%s/file", dir);
    close(open(file, O_CREAT | O_WRONLY, 0600));
    ck_assert_int_eq(sw_statsfile_prepare_dir(file, true, err, sizeof err), -1);
    snprintf(want, sizeof want, "stats directory %s is not a directory", file);
    ck_assert_str_eq(err, want);
    rm_rf(dir);
}
END_TEST

START_TEST(test_prepare_dir_refuses_a_dir_of_another_user)
{
    if (geteuid() != 0)
        return; /* only root can give a directory away; the check is the same code */
    char dir[64], err[512], want[256];
    make_dir(dir, sizeof dir);
    ck_assert_int_eq(chown(dir, 65534, 65534), 0);
    ck_assert_int_eq(sw_statsfile_prepare_dir(dir, true, err, sizeof err), -1);
    snprintf(want, sizeof want,
             "stats directory %s is owned by uid 65534, not by uid 0; refusing to use it", dir);
    ck_assert_str_eq(err, want);
    rm_rf(dir);
}
END_TEST

/* ---- publishing and reading back ---- */

START_TEST(test_published_file_reads_back_with_its_values)
{
    char dir[64], path[1024], err[512], want[128];
    make_dir(dir, sizeof dir);
    sw_statsfile_t *w = publish_in(dir, path, sizeof path);
    snprintf(want, sizeof want, "%s/%d.stats", dir, (int)getpid());
    ck_assert_str_eq(path, want);
    sw_statsfile_add(w, SW_STAT_tracked_bytes, 3 * GiB);
    sw_statsfile_add(w, SW_STAT_launches, 42);

    const sw_statsfile_t *r = sw_statsfile_open(path, geteuid(), err, sizeof err);
    ck_assert_msg(r != NULL, "%s", err);
    sw_stats_snapshot_t s;
    ck_assert(sw_statsfile_snapshot(r, &s));
    ck_assert_int_eq(s.pid, getpid());
    ck_assert_uint_eq(s.version, SW_STATS_VERSION);
    ck_assert_uint_eq(s.value[SW_STAT_tracked_bytes], 3 * GiB);
    ck_assert_uint_eq(s.peak[SW_STAT_tracked_bytes], 3 * GiB);
    ck_assert_uint_eq(s.value[SW_STAT_launches], 42);
    ck_assert_uint_eq(s.start_time, sw_statsfile_proc_start(getpid()));
    ck_assert_uint_gt(s.start_time, 0);
    ck_assert_str_ne(s.comm, "");
    /* live: a later add shows through the reader's mapping */
    sw_statsfile_add(w, SW_STAT_launches, 1);
    sw_statsfile_snapshot(r, &s);
    ck_assert_uint_eq(s.value[SW_STAT_launches], 43);
    sw_statsfile_close(r);
    rm_rf(dir);
}
END_TEST

START_TEST(test_published_file_is_private_to_its_user)
{
    char dir[64], path[1024];
    make_dir(dir, sizeof dir);
    mode_t old = umask(0);
    publish_in(dir, path, sizeof path);
    umask(old);
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_uint_eq(st.st_mode & 07777, 0600);
    ck_assert_uint_eq(st.st_uid, geteuid());
    ck_assert_int_eq(st.st_size, sizeof(sw_statsfile_t));
    rm_rf(dir);
}
END_TEST

START_TEST(test_create_replaces_a_stale_file_of_our_pid)
{
    char dir[64], path[1024], err[512];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%d.stats", dir, (int)getpid());
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    ck_assert_int_eq(write(fd, "old", 3), 3);
    close(fd);
    sw_statsfile_t *m = sw_statsfile_create(dir, path, sizeof path, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    ck_assert(sw_statsfile_open(path, geteuid(), err, sizeof err) != NULL);
    rm_rf(dir);
}
END_TEST

START_TEST(test_create_does_not_replace_a_file_of_another_user)
{
    if (geteuid() != 0)
        return; /* only root can give a file away */
    char dir[64], path[1024], err[512], want[1100];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%d.stats", dir, (int)getpid());
    close(open(path, O_CREAT | O_WRONLY, 0600));
    ck_assert_int_eq(chown(path, 65534, 65534), 0);
    ck_assert_ptr_null(sw_statsfile_create(dir, path, sizeof path, err, sizeof err));
    snprintf(want, sizeof want, "%s exists and is owned by uid 65534; not replacing it", path);
    ck_assert_str_eq(err, want);
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert_uint_eq(st.st_uid, 65534);
    rm_rf(dir);
}
END_TEST

START_TEST(test_create_does_not_follow_a_symlink_planted_at_its_name)
{
    char dir[64], path[1024], target[128], err[512];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%d.stats", dir, (int)getpid());
    snprintf(target, sizeof target, "%s/target", dir);
    ck_assert_int_eq(symlink(target, path), 0);
    /* the planted link is ours, so it is removed like a stale file; the
     * target must never be created */
    ck_assert_ptr_nonnull(sw_statsfile_create(dir, path, sizeof path, err, sizeof err));
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(access(target, F_OK), -1);
    rm_rf(dir);
}
END_TEST

/* ---- validation ---- */

START_TEST(test_open_rejects_a_missing_file)
{
    expect_rejected("/nonexistent/1.stats", geteuid(), "No such file or directory");
}
END_TEST

START_TEST(test_open_rejects_a_wrong_magic)
{
    char dir[64], path[1024];
    make_dir(dir, sizeof dir);
    sw_statsfile_t *m = publish_in(dir, path, sizeof path);
    memcpy(m->h.magic, "SPILLWAX", 8);
    expect_rejected(path, geteuid(), "not a spillway stats file (bad magic)");
    rm_rf(dir);
}
END_TEST

START_TEST(test_open_rejects_a_wrong_version)
{
    char dir[64], path[1024];
    make_dir(dir, sizeof dir);
    sw_statsfile_t *m = publish_in(dir, path, sizeof path);
    m->h.version = 99;
    char what[256];
    snprintf(what, sizeof what,
             "stats format version 99, expected version %d (spillway-stat and libspillway "
             "come from different builds)",
             SW_STATS_VERSION);
    expect_rejected(path, geteuid(), what);
    rm_rf(dir);
}
END_TEST

START_TEST(test_open_rejects_a_wrong_field_count)
{
    char dir[64], path[1024], what[128];
    make_dir(dir, sizeof dir);
    sw_statsfile_t *m = publish_in(dir, path, sizeof path);
    m->h.nfields = 3;
    snprintf(what, sizeof what, "header says %zu bytes and 3 fields, expected %zu and %d",
             sizeof(sw_statsfile_t), sizeof(sw_statsfile_t), SW_STAT_COUNT);
    expect_rejected(path, geteuid(), what);
    rm_rf(dir);
}
END_TEST

START_TEST(test_open_rejects_a_wrong_size)
{
    char dir[64], path[1024], what[128];
    make_dir(dir, sizeof dir);
    publish_in(dir, path, sizeof path);
    ck_assert_int_eq(truncate(path, sizeof(sw_statsfile_t) + 8), 0);
    snprintf(what, sizeof what, "file is %zu bytes, expected %zu", sizeof(sw_statsfile_t) + 8,
             sizeof(sw_statsfile_t));
    expect_rejected(path, geteuid(), what);
    ck_assert_int_eq(truncate(path, sizeof(sw_statsfile_t) - 8), 0);
    snprintf(what, sizeof what, "file is %zu bytes, expected %zu", sizeof(sw_statsfile_t) - 8,
             sizeof(sw_statsfile_t));
    expect_rejected(path, geteuid(), what);
    rm_rf(dir);
}
END_TEST

START_TEST(test_open_rejects_a_file_too_small_for_a_header)
{
    char dir[64], path[1024], what[128];
    make_dir(dir, sizeof dir);
    publish_in(dir, path, sizeof path);
    ck_assert_int_eq(truncate(path, 10), 0);
    snprintf(what, sizeof what, "10 bytes, too small for a spillway stats file (expected %zu)",
             sizeof(sw_statsfile_t));
    expect_rejected(path, geteuid(), what);
    rm_rf(dir);
}
END_TEST

START_TEST(test_open_rejects_a_file_of_another_owner)
{
    char dir[64], path[1024], what[128];
    make_dir(dir, sizeof dir);
    publish_in(dir, path, sizeof path);
    snprintf(what, sizeof what, "owned by uid %u, expected uid %u; refusing to read it",
             (unsigned)geteuid(), (unsigned)geteuid() + 1);
    expect_rejected(path, geteuid() + 1, what);
    if (geteuid() == 0) {
        ck_assert_int_eq(chown(path, 65534, 65534), 0);
        expect_rejected(path, 0, "owned by uid 65534, expected uid 0; refusing to read it");
    }
    rm_rf(dir);
}
END_TEST

START_TEST(test_open_rejects_a_symlink)
{
    char dir[64], path[1024], link[128];
    make_dir(dir, sizeof dir);
    publish_in(dir, path, sizeof path);
    snprintf(link, sizeof link, "%s/1.stats", dir);
    ck_assert_int_eq(symlink(path, link), 0);
    expect_rejected(link, geteuid(), "is a symbolic link; refusing to follow it");
    rm_rf(dir);
}
END_TEST

START_TEST(test_open_rejects_what_is_not_a_regular_file)
{
    char dir[64], fifo[128];
    make_dir(dir, sizeof dir);
    snprintf(fifo, sizeof fifo, "%s/2.stats", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    expect_rejected(fifo, geteuid(), "not a regular file"); /* and does not hang */
    expect_rejected(dir, geteuid(), "not a regular file");
    rm_rf(dir);
}
END_TEST

/* ---- the seqlock ---- */

typedef struct {
    sw_statsfile_t *m;
    atomic_bool stop;
    atomic_ulong groups;
} writer_t;

static void *group_writer(void *arg)
{
    writer_t *w = arg;
    while (!atomic_load(&w->stop)) {
        sw_statsfile_write_begin(w->m);
        sw_statsfile_add(w->m, SW_STAT_device_bytes, -(int64_t)MiB);
        sw_statsfile_add(w->m, SW_STAT_host_bytes, MiB);
        sw_statsfile_add(w->m, SW_STAT_demotions, 1);
        sw_statsfile_add(w->m, SW_STAT_bytes_demoted, MiB);
        sw_statsfile_write_end(w->m);
        sw_statsfile_add(w->m, SW_STAT_launches, 1); /* a lone update between groups */
        atomic_fetch_add(&w->groups, 1);
    }
    return NULL;
}

START_TEST(test_snapshot_never_sees_half_a_group)
{
    char dir[64], path[1024], err[512];
    make_dir(dir, sizeof dir);
    writer_t w = {.m = publish_in(dir, path, sizeof path)};
    sw_statsfile_add(w.m, SW_STAT_device_bytes, 1ll << 50);
    const sw_statsfile_t *r = sw_statsfile_open(path, geteuid(), err, sizeof err);
    ck_assert_msg(r != NULL, "%s", err);
    pthread_t t;
    pthread_create(&t, NULL, group_writer, &w);
    unsigned long changes = 0;
    uint64_t last = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 1000; i++) {
            sw_stats_snapshot_t s;
            /* false: the writer was descheduled inside a group for the
             * reader's whole patience (a loaded machine); the copy is then
             * only best effort, and not what this test is about */
            if (!sw_statsfile_snapshot(r, &s))
                continue;
            uint64_t n = s.value[SW_STAT_demotions];
            ck_assert_uint_eq(s.value[SW_STAT_host_bytes], n * MiB);
            ck_assert_uint_eq(s.value[SW_STAT_bytes_demoted], n * MiB);
            ck_assert_uint_eq(s.value[SW_STAT_device_bytes], (1ull << 50) - n * MiB);
            ck_assert_uint_ge(n, last);
            changes += n != last;
            last = n;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
    } while ((t1.tv_sec - t0.tv_sec < 1 || changes < 100) && t1.tv_sec - t0.tv_sec < 10);
    atomic_store(&w.stop, true);
    pthread_join(t, NULL);
    /* the reader really raced the writer */
    ck_assert_uint_ge(changes, 100);
    ck_assert_uint_gt(atomic_load(&w.groups), 1000);
    sw_statsfile_close(r);
    rm_rf(dir);
}
END_TEST

START_TEST(test_snapshot_gives_up_on_a_writer_stuck_in_a_group)
{
    static sw_statsfile_t m;
    sw_statsfile_add(&m, SW_STAT_launches, 5);
    sw_statsfile_write_begin(&m); /* never ended: a writer killed mid-group */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sw_stats_snapshot_t s;
    ck_assert(!sw_statsfile_snapshot(&m, &s));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ck_assert_double_lt(took, 2.0);
    ck_assert_uint_eq(s.value[SW_STAT_launches], 5); /* best effort copy */
    sw_statsfile_write_end(&m);
    ck_assert(sw_statsfile_snapshot(&m, &s));
}
END_TEST

START_TEST(test_snapshot_never_shows_a_value_above_its_peak)
{
    static sw_statsfile_t m;
    /* a writer between its add and its peak update */
    atomic_store(&m.tracked_bytes, 10);
    atomic_store(&m.tracked_bytes_peak, 4);
    sw_stats_snapshot_t s;
    ck_assert(sw_statsfile_snapshot(&m, &s));
    ck_assert_uint_eq(s.value[SW_STAT_tracked_bytes], 10);
    ck_assert_uint_eq(s.peak[SW_STAT_tracked_bytes], 10);
}
END_TEST

/* ---- listing and stale files ---- */

typedef struct {
    int pids[8];
    int n, stop_after;
} seen_t;

static int collect(int pid, const char *path, void *arg)
{
    seen_t *s = arg;
    ck_assert(strstr(path, ".stats") != NULL);
    s->pids[s->n++] = pid;
    return s->n == s->stop_after;
}

START_TEST(test_each_lists_stats_files_in_pid_order)
{
    char dir[64], p[128];
    make_dir(dir, sizeof dir);
    static const char *const names[] = {"10.stats", "2.stats", "abc.stats", "3.stats.tmp",
                                        "007.stats", ".stats", "5.statsx", "300.stats"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        close(open(p, O_CREAT | O_WRONLY, 0600));
    }
    seen_t s = {.stop_after = -1};
    ck_assert_int_eq(sw_statsfile_each(dir, collect, &s), 3);
    ck_assert_int_eq(s.n, 3);
    ck_assert_int_eq(s.pids[0], 2);
    ck_assert_int_eq(s.pids[1], 10);
    ck_assert_int_eq(s.pids[2], 300);
    seen_t one = {.stop_after = 1};
    sw_statsfile_each(dir, collect, &one);
    ck_assert_int_eq(one.n, 1);
    rm_rf(dir);
}
END_TEST

START_TEST(test_each_reports_an_unreadable_dir)
{
    seen_t s = {.stop_after = -1};
    errno = 0;
    ck_assert_int_eq(sw_statsfile_each("/nonexistent/sw", collect, &s), -1);
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_int_eq(s.n, 0);
}
END_TEST

START_TEST(test_pid_gone_for_a_reaped_child)
{
    ck_assert(sw_statsfile_pid_gone(dead_pid(), 0));
}
END_TEST

START_TEST(test_pid_not_gone_for_a_live_process)
{
    ck_assert(!sw_statsfile_pid_gone(getpid(), 0));
    ck_assert(!sw_statsfile_pid_gone(getpid(), sw_statsfile_proc_start(getpid())));
    ck_assert(!sw_statsfile_pid_gone(1, 0));
}
END_TEST

START_TEST(test_pid_gone_when_reused_by_a_later_process)
{
    uint64_t start = sw_statsfile_proc_start(getpid());
    ck_assert_uint_gt(start, 0);
    ck_assert(sw_statsfile_pid_gone(getpid(), start + 1));
}
END_TEST

START_TEST(test_pid_gone_for_ids_that_name_no_single_process)
{
    ck_assert(sw_statsfile_pid_gone(0, 0));
    ck_assert(sw_statsfile_pid_gone(-1, 0));
}
END_TEST

START_TEST(test_remove_stale_removes_the_file_of_a_dead_process)
{
    char dir[64], path[1024], err[512];
    make_dir(dir, sizeof dir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(sw_statsfile_create(dir, path, sizeof path, err, sizeof err) ? 0 : 1);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_int_eq(status, 0);
    snprintf(path, sizeof path, "%s/%d.stats", dir, (int)pid);
    ck_assert_int_eq(access(path, F_OK), 0);
    ck_assert_int_eq(sw_statsfile_remove_stale(path, pid, err, sizeof err), 1);
    ck_assert_int_eq(access(path, F_OK), -1);
    rm_rf(dir);
}
END_TEST

START_TEST(test_remove_stale_removes_an_invalid_file_of_a_dead_process)
{
    char dir[64], path[128], err[512];
    make_dir(dir, sizeof dir);
    pid_t pid = dead_pid();
    snprintf(path, sizeof path, "%s/%d.stats", dir, (int)pid);
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    ck_assert_int_eq(write(fd, "an old format", 13), 13);
    close(fd);
    ck_assert_int_eq(sw_statsfile_remove_stale(path, pid, err, sizeof err), 1);
    ck_assert_int_eq(access(path, F_OK), -1);
    rm_rf(dir);
}
END_TEST

START_TEST(test_remove_stale_keeps_the_file_of_a_live_process)
{
    char dir[64], path[1024], err[512];
    make_dir(dir, sizeof dir);
    publish_in(dir, path, sizeof path);
    ck_assert_int_eq(sw_statsfile_remove_stale(path, getpid(), err, sizeof err), 0);
    ck_assert_int_eq(access(path, F_OK), 0);
    rm_rf(dir);
}
END_TEST

START_TEST(test_remove_stale_keeps_the_file_of_another_user)
{
    if (geteuid() != 0)
        return; /* only root can give a file away */
    char dir[64], path[128], err[512];
    make_dir(dir, sizeof dir);
    pid_t pid = dead_pid();
    snprintf(path, sizeof path, "%s/%d.stats", dir, (int)pid);
    close(open(path, O_CREAT | O_WRONLY, 0600));
    ck_assert_int_eq(chown(path, 65534, 65534), 0);
    ck_assert_int_eq(sw_statsfile_remove_stale(path, pid, err, sizeof err), 0);
    ck_assert_int_eq(access(path, F_OK), 0);
    rm_rf(dir);
}
END_TEST

/* ---- rendering ---- */

START_TEST(test_format_bytes_picks_a_binary_unit)
{
    static const struct {
        uint64_t v;
        const char *s;
    } cases[] = {
        {0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"},
        {512 * MiB, "512.0 MiB"}, {3 * GiB, "3.0 GiB"}, {GiB + GiB / 2, "1.5 GiB"},
        {5ull << 40, "5.0 TiB"}, {UINT64_MAX, "16.0 EiB"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[32];
        sw_format_bytes(cases[i].v, buf, sizeof buf);
        ck_assert_str_eq(buf, cases[i].s);
    }
}
END_TEST

static char *render(void (*fn)(FILE *, const sw_stats_snapshot_t *), const sw_stats_snapshot_t *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fn(f, s);
    fclose(f);
    return buf;
}

static void json0(FILE *f, const sw_stats_snapshot_t *s)
{
    sw_statsfile_json(f, s, 0);
}

START_TEST(test_json_names_every_field_and_gauge_peak)
{
    sw_stats_snapshot_t s = {.version = 1, .pid = 77, .comm = "python3"};
    for (int i = 0; i < SW_STAT_COUNT; i++) {
        s.value[i] = 1000 + (uint64_t)i;
        s.peak[i] = 2000 + (uint64_t)i;
    }
    char *j = render(json0, &s);
    const char *head = "{\n  \"pid\": 77,\n  \"command\": \"python3\",\n  \"version\": 1,\n";
    ck_assert(strncmp(j, head, strlen(head)) == 0);
    for (int i = 0; i < SW_STAT_COUNT; i++) {
        char want[96];
        snprintf(want, sizeof want, "\n  \"%s\": %d", sw_stat_fields[i].name, 1000 + i);
        ck_assert_msg(strstr(j, want), "%s missing", want);
        snprintf(want, sizeof want, "\n  \"%s_peak\": %d", sw_stat_fields[i].name, 2000 + i);
        ck_assert_msg(!strstr(j, want) == !sw_stat_fields[i].gauge, "%s", want);
    }
    /* The last field (a counter: no peak) closes the object. */
    ck_assert(strstr(j, "\n  \"dev7_bytes_streamed\": 1062\n}") != NULL);
    free(j);
}
END_TEST

START_TEST(test_json_escapes_the_command_name)
{
    sw_stats_snapshot_t s = {.comm = "a\"b\\c\nd\x7f"};
    char *j = render(json0, &s);
    ck_assert(strstr(j, "\"command\": \"a\\\"b\\\\c\\u000ad\\u007f\",") != NULL);
    free(j);
}
END_TEST

START_TEST(test_table_shows_units_and_no_peak_for_counters)
{
    sw_stats_snapshot_t s = {.pid = 9, .comm = "mlp"};
    s.value[SW_STAT_tracked_bytes] = 3 * GiB;
    s.peak[SW_STAT_tracked_bytes] = 4 * GiB;
    s.value[SW_STAT_demotions] = 7;
    char *t = render(sw_statsfile_table, &s);
    ck_assert(strncmp(t, "pid 9 (mlp)\n", 12) == 0);
    ck_assert(strstr(t, "tracked_bytes                 3.0 GiB      4.0 GiB  bytes in "
                        "allocations spillway tracks\n"));
    ck_assert(strstr(t, "demotions                           7            -  chunks moved"));
    int lines = 0;
    for (char *p = t; *p; p++)
        lines += *p == '\n';
    /* every field but those of the eight devices, all 0 here */
    ck_assert_int_eq(lines, 2 + SW_STAT_COUNT - 8 * 3);
    ck_assert(!strstr(t, "dev0_"));
    free(t);

    /* a device with a budget shows its three rows, the others still not */
    s.value[SW_STAT_dev3_gpu_budget] = GiB;
    t = render(sw_statsfile_table, &s);
    lines = 0;
    for (char *p = t; *p; p++)
        lines += *p == '\n';
    ck_assert_int_eq(lines, 2 + SW_STAT_COUNT - 7 * 3);
    ck_assert(strstr(t, "\ndev3_device_bytes ") && strstr(t, "\ndev3_bytes_streamed "));
    ck_assert(!strstr(t, "dev2_") && !strstr(t, "dev4_"));
    free(t);
}
END_TEST

static void list_header(FILE *f, const sw_stats_snapshot_t *s)
{
    (void)s;
    sw_statsfile_list_header(f);
}

START_TEST(test_list_row_shows_the_main_figures)
{
    sw_stats_snapshot_t s = {.pid = 4242, .comm = "python3"};
    s.value[SW_STAT_tracked_bytes] = 3 * GiB;
    s.value[SW_STAT_device_bytes] = 2 * GiB;
    s.value[SW_STAT_host_bytes] = GiB;
    s.value[SW_STAT_demotions] = 12;
    char *h = render(list_header, &s);
    char *r = render(sw_statsfile_list_row, &s);
    ck_assert_str_eq(h, "     PID  COMMAND               TRACKED       DEVICE         HOST  "
                        "DEMOTIONS\n");
    ck_assert_str_eq(r, "    4242  python3               3.0 GiB      2.0 GiB      1.0 GiB "
                        "        12\n");
    free(h);
    free(r);
}
END_TEST

Suite *stats_file_suite(void)
{
    Suite *s = suite_create("stats_file");
    TCase *tc = tcase_create("layout");
    tcase_add_test(tc, test_layout_puts_the_fields_after_a_72_byte_header);
    tcase_add_test(tc, test_field_table_follows_the_field_list);
    suite_add_tcase(s, tc);

    tc = tcase_create("counting");
    tcase_add_test(tc, test_gauge_keeps_its_peak);
    tcase_add_test(tc, test_counter_only_adds);
    tcase_add_test(tc, test_gauge_below_zero_does_not_raise_the_peak);
    tcase_add_test(tc, test_out_of_range_field_is_ignored);
    tcase_add_test(tc, test_concurrent_adds_are_not_lost);
    tcase_add_test(tc, test_fold_with_take_moves_values_and_peaks);
    tcase_add_test(tc, test_fold_without_take_leaves_the_source);
    suite_add_tcase(s, tc);

    tc = tcase_create("directory");
    tcase_add_test(tc, test_dir_rule_prefers_the_configured_dir);
    tcase_add_test(tc, test_dir_rule_uses_xdg_runtime_dir_when_it_is_ours);
    tcase_add_test(tc, test_dir_rule_falls_back_to_tmp_without_a_usable_xdg_runtime_dir);
    tcase_add_test(tc, test_dir_rule_reports_a_path_too_long);
    tcase_add_test(tc, test_prepare_dir_creates_it_with_mode_0700);
    tcase_add_test(tc, test_prepare_dir_without_create_reports_a_missing_dir);
    tcase_add_test(tc, test_prepare_dir_refuses_a_dir_others_can_enter);
    tcase_add_test(tc, test_prepare_dir_refuses_a_symlink);
    tcase_add_test(tc, test_prepare_dir_refuses_a_file);
    tcase_add_test(tc, test_prepare_dir_refuses_a_dir_of_another_user);
    suite_add_tcase(s, tc);

    tc = tcase_create("publish");
    tcase_add_test(tc, test_published_file_reads_back_with_its_values);
    tcase_add_test(tc, test_published_file_is_private_to_its_user);
    tcase_add_test(tc, test_create_replaces_a_stale_file_of_our_pid);
    tcase_add_test(tc, test_create_does_not_replace_a_file_of_another_user);
    tcase_add_test(tc, test_create_does_not_follow_a_symlink_planted_at_its_name);
    suite_add_tcase(s, tc);

    tc = tcase_create("validation");
    tcase_add_test(tc, test_open_rejects_a_missing_file);
    tcase_add_test(tc, test_open_rejects_a_wrong_magic);
    tcase_add_test(tc, test_open_rejects_a_wrong_version);
    tcase_add_test(tc, test_open_rejects_a_wrong_field_count);
    tcase_add_test(tc, test_open_rejects_a_wrong_size);
    tcase_add_test(tc, test_open_rejects_a_file_too_small_for_a_header);
    tcase_add_test(tc, test_open_rejects_a_file_of_another_owner);
    tcase_add_test(tc, test_open_rejects_a_symlink);
    tcase_add_test(tc, test_open_rejects_what_is_not_a_regular_file);
    suite_add_tcase(s, tc);

    tc = tcase_create("seqlock");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_snapshot_never_sees_half_a_group);
    tcase_add_test(tc, test_snapshot_gives_up_on_a_writer_stuck_in_a_group);
    tcase_add_test(tc, test_snapshot_never_shows_a_value_above_its_peak);
    suite_add_tcase(s, tc);

    tc = tcase_create("stale");
    tcase_add_test(tc, test_each_lists_stats_files_in_pid_order);
    tcase_add_test(tc, test_each_reports_an_unreadable_dir);
    tcase_add_test(tc, test_pid_gone_for_a_reaped_child);
    tcase_add_test(tc, test_pid_not_gone_for_a_live_process);
    tcase_add_test(tc, test_pid_gone_when_reused_by_a_later_process);
    tcase_add_test(tc, test_pid_gone_for_ids_that_name_no_single_process);
    tcase_add_test(tc, test_remove_stale_removes_the_file_of_a_dead_process);
    tcase_add_test(tc, test_remove_stale_removes_an_invalid_file_of_a_dead_process);
    tcase_add_test(tc, test_remove_stale_keeps_the_file_of_a_live_process);
    tcase_add_test(tc, test_remove_stale_keeps_the_file_of_another_user);
    suite_add_tcase(s, tc);

    tc = tcase_create("render");
    tcase_add_test(tc, test_format_bytes_picks_a_binary_unit);
    tcase_add_test(tc, test_json_names_every_field_and_gauge_peak);
    tcase_add_test(tc, test_json_escapes_the_command_name);
    tcase_add_test(tc, test_table_shows_units_and_no_peak_for_counters);
    tcase_add_test(tc, test_list_row_shows_the_main_figures);
    suite_add_tcase(s, tc);
    return s;
}

/*
 * stat-fixture: a stand-in for a process running under spillway, for the
 * spillway-stat tests (test-spillway-stat.sh). It runs the library's own
 * start-up path for stats (options from the environment, sw_stats_init,
 * sw_stats_publish) and sets known values, some before publishing (they
 * must be carried into the file) and some after (written into it live):
 *
 *   tracked_bytes   3 GiB, peak 4 GiB      demotions        7
 *   device_bytes    2 GiB                  bytes_demoted    224 MiB
 *   host_bytes      1 GiB                  launches         1000
 *   tracked_allocs  3, peak 5
 *
 * It also checks that a fork child keeps its counts apart from the
 * parent's file (fork_keeps_apart).
 * Then it prints "secure=0|1" (AT_SECURE: run setuid or setgid) and
 * "ready", and waits for SIGTERM or SIGINT, on which it
 * writes SPILLWAY_REPORT (if set), unpublishes and exits 0.
 *   --leave   exit at once without unpublishing: leaves a stale file.
 * Exit status 2 on a bad option or SPILLWAY_ value, 1 when nothing was
 * published.
 */
#include "stats_file.h"
#include "sw.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define GiB (1ll << 30)
#define MiB (1ll << 20)

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

/* A fork child must neither count into its parent's file nor remove it;
 * it may publish a file of its own. Returns false (after saying why) when
 * the parent's file was touched. */
static bool fork_keeps_apart(const sw_options_t *o)
{
    char dir[1024], path[1200];
    /* setuid: the library ignores SPILLWAY_STATS_DIR (stats.c) */
    sw_statsfile_dir(sw_secure() ? "" : o->stats_dir, secure_getenv("XDG_RUNTIME_DIR"), dir,
                     sizeof dir);
    snprintf(path, sizeof path, "%s/%d.stats", dir, (int)getpid());
    fflush(NULL);
    pid_t child = fork();
    if (child < 0)
        return false;
    if (child == 0) {
        sw_stat_add(SW_STAT_launches, 5);
        sw_stats_unpublish();   /* must leave the parent's file alone */
        sw_stats_publish();     /* a file of its own, with the counts so far */
        bool ok = sw_stat_get(SW_STAT_launches) == 1005;
        sw_stats_unpublish();
        _exit(ok ? 0 : 1);
    }
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
        fprintf(stderr, "stat-fixture: the fork child lost its counts\n");
        return false;
    }
    if (sw_stat_get(SW_STAT_launches) != 1000 || access(path, F_OK) != 0) {
        fprintf(stderr, "stat-fixture: the fork child wrote into or removed %s\n", path);
        return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    bool leave = argc == 2 && strcmp(argv[1], "--leave") == 0;
    if (argc > 1 && !leave) {
        fprintf(stderr, "usage: stat-fixture [--leave]\n");
        return 2;
    }
    sw_options_t o;
    char err[512], warn[512];
    if (sw_options_parse(&o, environ, err, sizeof err, warn, sizeof warn) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    sw_log_init(&o);
    /* As libspillway's fork.c does (it has the gate to take first). */
    pthread_atfork(sw_stats_fork_prepare, sw_stats_fork_parent, sw_stats_fork_child);
    sw_stats_init(&o);

    /* Block the signals before announcing readiness, so none is lost
     * between "ready" and sigsuspend. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &old);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    sw_stat_add(SW_STAT_tracked_bytes, 4 * GiB);
    sw_stat_add(SW_STAT_tracked_allocs, 5);
    sw_stat_add(SW_STAT_device_bytes, 4 * GiB);
    sw_stat_add(SW_STAT_dev0_device_bytes, 4 * GiB);
    sw_stats_publish();
    if (!sw_stat_get(SW_STAT_tracked_bytes)) {
        fprintf(stderr, "stat-fixture: counts lost in publishing\n");
        return 1;
    }
    sw_stat_add(SW_STAT_tracked_bytes, -1 * GiB);
    sw_stat_add(SW_STAT_tracked_allocs, -2);
    sw_stat_add(SW_STAT_device_bytes, -1 * GiB);
    for (int i = 0; i < 7; i++) {
        /* 7 demotions of 32 MiB, then the bytes of the last 800 MiB of the
         * host GiB: as one group each, as the mechanism would. */
        sw_stats_batch_begin();
        sw_stat_add(SW_STAT_device_bytes, -32 * MiB);
        sw_stat_add(SW_STAT_host_bytes, 32 * MiB);
        sw_stat_add(SW_STAT_demotions, 1);
        sw_stat_add(SW_STAT_bytes_demoted, 32 * MiB);
        sw_stats_batch_end();
    }
    sw_stats_batch_begin();
    sw_stat_add(SW_STAT_device_bytes, -(GiB - 7 * 32 * MiB));
    sw_stat_add(SW_STAT_host_bytes, GiB - 7 * 32 * MiB);
    sw_stats_batch_end();
    sw_stat_add(SW_STAT_launches, 1000);
    if (!fork_keeps_apart(&o))
        return 1;

    if (leave)
        return 0; /* no unpublish: the file stays behind, stale */
    printf("secure=%d\nready\n", (int)sw_secure());
    fflush(stdout);
    while (!stop)
        sigsuspend(&old);
    sw_stats_report(o.report);
    sw_stats_unpublish();
    return 0;
}

/*
 * The live stats file: its layout, and the code that creates, validates,
 * reads and renders it. Shared by libspillway (stats.c, the writer) and
 * spillway-stat (the reader); compiled once, as the swstatsfile library.
 *
 * The format (path, layout, version, magic, and the seqlock from the
 * reader's side) is public: include/spillway/stats.h defines it, and the
 * types below are its types.
 *
 * The seqlock, from the writer's side (stats.c):
 *   - A lone update (sw_statsfile_add) is one relaxed atomic add on one
 *     word, plus a CAS loop on the peak for gauges. It does not touch seq:
 *     any snapshot sees it whole or not at all, which is all a single field
 *     can promise.
 *   - A group of updates that must be seen together (a demotion changes
 *     device_bytes, host_bytes, demotions and bytes_demoted) is bracketed by
 *     sw_statsfile_write_begin/end, which make seq odd then even again.
 *     Groups must not overlap: stats.c serialises them with one mutex, taken
 *     only by groups, so lone updates stay lock-free.
 * From the reader's side (sw_statsfile_snapshot): read seq; retry while it
 * is odd; copy every word; read seq again; retry if it changed. A copy
 * accepted this way contains no half-done group. The writer never waits
 * for readers, and a reader can never corrupt anything: it maps the file
 * read-only.
 */
#ifndef SW_STATS_FILE_H
#define SW_STATS_FILE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "spillway/stats.h"

#define SW_STATS_MAGIC SPILLWAY_STATS_MAGIC
#define SW_STATS_COMM_LEN SPILLWAY_STATS_COMM_LEN

typedef spillway_stats_header_t sw_statsfile_header_t;
typedef spillway_stats_file_t sw_statsfile_t;

/* One entry per field, in field list order. */
typedef struct {
    const char *name, *unit, *help;
    bool gauge;
    size_t value_off; /* offsets in sw_statsfile_t */
    size_t peak_off;  /* gauges only; 0 for counters */
} sw_stat_field_t;

extern const sw_stat_field_t sw_stat_fields[SW_STAT_COUNT];

/* What a reader copies out of a file (or stats.c out of its counters). */
typedef struct {
    uint32_t version;
    int pid;
    uint64_t start_time;
    char comm[SW_STATS_COMM_LEN + 1];
    uint64_t value[SW_STAT_COUNT];
    uint64_t peak[SW_STAT_COUNT]; /* counters: 0 */
} sw_stats_snapshot_t;

static inline _Atomic uint64_t *sw_statsfile_word(sw_statsfile_t *m, size_t off)
{
    return (_Atomic uint64_t *)((char *)m + off);
}

/* ---- writer side (stats.c, tests) ---- */

/* Adds delta to a field; for gauges also raises the peak to the new value
 * (compared as signed, so a gauge driven below zero by a bug does not show
 * a peak of 2^64). Lock-free; can't fail. */
void sw_statsfile_add(sw_statsfile_t *m, sw_stat_id_t id, int64_t delta);
/* Brackets a group of sw_statsfile_add calls (see the seqlock above). The
 * caller keeps groups from overlapping. Can't fail. */
void sw_statsfile_write_begin(sw_statsfile_t *m);
void sw_statsfile_write_end(sw_statsfile_t *m);
/* Moves the counts of src into dst: values are added, peaks raised. With
 * take, src's words are atomically swapped for 0, so an update that reaches
 * src while this runs is either moved or left in src, never counted twice.
 * Without take, src is only read (a fork child copying its parent's file).
 * Can't fail. */
void sw_statsfile_fold(sw_statsfile_t *dst, sw_statsfile_t *src, bool take);
/* Fills the header of m for process pid (this process: comm and start time
 * are read from it), magic last. Can't fail; unknown parts stay zero. */
void sw_statsfile_fill_header(sw_statsfile_t *m, int pid);

/* The directory rule: configured when not empty, else
 * "$XDG_RUNTIME_DIR/spillway" when xdg_runtime_dir is a directory of ours
 * (checked with lstat: not a symlink), else "/tmp/spillway-<euid>".
 * Returns -1 (out untouched but for a NUL) when the result does not fit. */
int sw_statsfile_dir(const char *configured, const char *xdg_runtime_dir, char *out,
                     size_t outlen);
/* Checks that dir is a real directory (not a symlink) owned by us with mode
 * 0700; with create, makes it first when missing (one level only). On
 * failure returns -1 and says why in err; nothing is changed on disk except
 * a directory made by create. */
int sw_statsfile_prepare_dir(const char *dir, bool create, char *err, size_t errlen);
/* Creates dir/<pid>.stats for this process (dir as prepare_dir checks it),
 * mode 0600, O_EXCL|O_NOFOLLOW, and maps it read-write with a complete
 * header and zero counts. A file already there for our pid is a stale one
 * of an earlier process (ours is not published yet) and is removed first
 * when it is ours. Returns the mapping and its path in path, or NULL with
 * the reason in err, having left no file behind. */
sw_statsfile_t *sw_statsfile_create(const char *dir, char *path, size_t pathlen, char *err,
                                    size_t errlen);

/* ---- reader side (spillway-stat, tests) ---- */

/* Opens and maps path read-only after checking, in order: not a symlink, a
 * regular file, owned by owner (the caller passes geteuid(); tests pass
 * another uid), big enough for a header, the magic, the version, the
 * header's size and field count, and the file's size. On any failure
 * returns NULL with "<path>: <what is wrong>" in err and keeps nothing
 * open. */
const sw_statsfile_t *sw_statsfile_open(const char *path, uid_t owner, char *err, size_t errlen);
void sw_statsfile_close(const sw_statsfile_t *m);
/* Copies a consistent snapshot (see the seqlock above). Returns false when
 * no consistent copy could be had within about 100 ms (a writer stopped or
 * killed inside a group): s then holds a best-effort copy. */
bool sw_statsfile_snapshot(const sw_statsfile_t *m, sw_stats_snapshot_t *s);

/* Calls fn for every "<pid>.stats" name in dir, in ascending pid order;
 * stops early when fn returns non-zero. Returns the number of names seen,
 * or -1 with errno set when dir cannot be read. */
int sw_statsfile_each(const char *dir, int (*fn)(int pid, const char *path, void *arg), void *arg);
/* The start time of process pid (see start_time above), 0 when unknown. */
uint64_t sw_statsfile_proc_start(int pid);
/* Whether the process a file names is gone: kill(pid, 0) says ESRCH, or
 * pid is now a process that started at another time than start_time (0:
 * not checked). */
bool sw_statsfile_pid_gone(int pid, uint64_t start_time);
/* Removes path when it is a regular file owned by us and the process named
 * by pid (and, when the file is valid, its start time) is gone. Returns 1
 * when removed, 0 when left alone (alive, or not ours), -1 when unlink
 * failed (reason in err). */
int sw_statsfile_remove_stale(const char *path, int pid, char *err, size_t errlen);

/* ---- rendering (spillway-stat, sw_stats_report) ---- */

/* "0 B", "1023 B", "1.5 KiB", "512.0 MiB", "2.0 GiB", ... */
void sw_format_bytes(uint64_t v, char *buf, size_t len);
/* One JSON object: pid, command, version, then every field by name, and
 * name_peak after each gauge. Every line but the first is indented by
 * indent spaces; no newline after the closing brace. */
void sw_statsfile_json(FILE *f, const sw_stats_snapshot_t *s, int indent);
/* The table of every field: name, value, peak, help (byte units for
 * bytes). */
void sw_statsfile_table(FILE *f, const sw_stats_snapshot_t *s);
/* Whether the table and the Prometheus output of the n snapshots show
 * field i: every field but the per-device ones of a device that is all 0
 * (fields and peaks) in each; such rows are noise. The JSON shows all. */
bool sw_statsfile_shown(int i, const sw_stats_snapshot_t *s, size_t n);
/* Every field of n processes in Prometheus's text exposition format: per
 * field, HELP and TYPE lines, then one sample per process labelled pid and
 * command. Counters are spillway_<name>_total; a gauge is spillway_<name>,
 * its peak the gauge spillway_<name>_peak. Values are raw: bytes in
 * bytes. */
void sw_statsfile_prometheus(FILE *f, const sw_stats_snapshot_t *s, size_t n);
/* The process list: a header line, then one line per process. */
void sw_statsfile_list_header(FILE *f);
void sw_statsfile_list_row(FILE *f, const sw_stats_snapshot_t *s);

#endif

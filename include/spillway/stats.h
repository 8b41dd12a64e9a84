/*
 * spillway/stats.h: the live stats file, a public and versioned format.
 *
 * Every process running under spillway publishes its statistics in one
 * file, <dir>/<pid>.stats, which any program of the same user may map
 * read-only and read while the process runs (spillway-stat does). This
 * header is the format's whole definition: libspillway writes the file
 * through these types, and a reader needs nothing else (C11 with GCC or
 * Clang builtins; C++ and other languages read the same offsets, see
 * "Reading" below).
 *
 * Where: dir is $SPILLWAY_STATS_DIR when set, else $XDG_RUNTIME_DIR/spillway
 * when XDG_RUNTIME_DIR is a directory of the user's, else
 * /tmp/spillway-<euid>. The directory is the user's, mode 0700; the file
 * is mode 0600. The file exists while the process runs; a file whose pid
 * is gone (or whose pid now names a process with another start_time) is
 * stale, and spillway-stat removes it.
 *
 * Layout (spillway_stats_file_t), all integers in the host's byte order
 * (the file never leaves the machine):
 *
 *   offset  size  field
 *        0     8  magic "SPILLWAY" (no NUL); written last, so a file whose
 *                 magic is right has a complete header
 *        8     4  version     SPILLWAY_STATS_VERSION: any change of the
 *                             field list changes it
 *       12     4  size        sizeof(spillway_stats_file_t), the whole file
 *       16     4  nfields     SPILLWAY_STATS_NFIELDS
 *       20     4  pid
 *       24     8  start_time  the process's start, in clock ticks after
 *                             boot (/proc/<pid>/stat field 22); 0 when
 *                             unknown. With pid it names the process even
 *                             after the pid is reused.
 *       32    32  comm        command name, NUL-padded (any bytes: escape
 *                             them before showing them on a terminal)
 *       64     8  seq         seqlock sequence, odd while a group is written
 *       72     .  the fields, in spillway/stats_fields.h order: one u64 per
 *                 COUNTER, two (value, then peak) per GAUGE
 *
 * Compatibility: a reader accepts a file only when magic, version, size and
 * nfields are all what its header says, and the file is exactly size bytes
 * long. A file of another version is another format (fields may have been
 * added, removed or reordered); the reader says so rather than guess.
 *
 * Reading (the seqlock): a lone counter update is one atomic add on one
 * aligned word, which a reader sees whole or not at all. Updates that must
 * be seen together (a demotion changes device_bytes, host_bytes, demotions
 * and bytes_demoted) are written as a group: seq is made odd, the words
 * change, seq is made even again. A consistent copy is therefore:
 *
 *     1. s1 = seq (acquire load); if s1 is odd, retry
 *     2. copy every word (relaxed 8-byte atomic loads)
 *     3. acquire fence; s2 = seq; if s2 != s1, retry
 *
 * spillway_stats_snapshot below does exactly this. The writer never waits
 * for readers: a reader must map the file read-only and bound its retries
 * (a writer stopped inside a group keeps seq odd). A gauge's value may be
 * seen a moment above its peak (the peak is raised just after the value);
 * show the larger.
 */
#ifndef SPILLWAY_STATS_H
#define SPILLWAY_STATS_H

#include <stdint.h>

#include "stats_fields.h" /* beside this header, installed or not */

#define SPILLWAY_STATS_MAGIC "SPILLWAY" /* 8 bytes in the file, without the NUL */
#define SPILLWAY_STATS_VERSION SW_STATS_VERSION
#define SPILLWAY_STATS_NFIELDS SW_STAT_COUNT
#define SPILLWAY_STATS_COMM_LEN 32

typedef struct {
    char magic[8];
    uint32_t version;
    uint32_t size;
    uint32_t nfields;
    int32_t pid;
    uint64_t start_time;
    char comm[SPILLWAY_STATS_COMM_LEN];
    _Atomic uint64_t seq;
} spillway_stats_header_t;

#define SPILLWAY_STATS_WORDS_COUNTER(name) _Atomic uint64_t name;
#define SPILLWAY_STATS_WORDS_GAUGE(name) _Atomic uint64_t name, name##_peak;
#define SPILLWAY_STATS_WORDS(kind, name, unit, help) SPILLWAY_STATS_WORDS_##kind(name)

/* The whole file: the header, then one member per word, named after the
 * field (a gauge's peak is <name>_peak). */
typedef struct {
    spillway_stats_header_t h;
    SW_STATS_FIELDS(SPILLWAY_STATS_WORDS)
} spillway_stats_file_t;

/* Checks the header of a mapped file of `bytes` bytes against this
 * header's format. Returns 0 when it matches; -1 when bytes is too small
 * or the magic is wrong (not a stats file), -2 when the version, size or
 * field count differ (a stats file of another spillway). Reads only. */
static inline int spillway_stats_check(const void *map, uint64_t bytes)
{
    const spillway_stats_header_t *h = (const spillway_stats_header_t *)map;
    static const char magic[8] = {'S', 'P', 'I', 'L', 'L', 'W', 'A', 'Y'};
    if (bytes < sizeof *h)
        return -1;
    for (int i = 0; i < 8; i++)
        if (h->magic[i] != magic[i])
            return -1;
    if (h->version != SPILLWAY_STATS_VERSION || h->size != sizeof(spillway_stats_file_t) ||
        h->nfields != SPILLWAY_STATS_NFIELDS || bytes != sizeof(spillway_stats_file_t))
        return -2;
    return 0;
}

/* Copies f, a mapping that spillway_stats_check accepted, into *out by the
 * protocol above, trying at most `tries` times. Returns 0 when the copy is
 * consistent; -1 when every try met a group being written (a writer
 * stopped inside one): *out then holds the last, possibly torn, copy. */
static inline int spillway_stats_snapshot(const spillway_stats_file_t *f,
                                          spillway_stats_file_t *out, unsigned tries)
{
    const unsigned n = sizeof *f / sizeof(uint64_t);
    const _Atomic uint64_t *src = (const _Atomic uint64_t *)(const void *)f;
    uint64_t *dst = (uint64_t *)(void *)out;
    for (unsigned t = 0; t < tries; t++) {
        uint64_t s1 = __atomic_load_n((const uint64_t *)&f->h.seq, __ATOMIC_ACQUIRE);
        for (unsigned i = 0; i < n; i++)
            dst[i] = __atomic_load_n((const uint64_t *)&src[i], __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (!(s1 & 1) && __atomic_load_n((const uint64_t *)&f->h.seq, __ATOMIC_RELAXED) == s1)
            return 0;
    }
    return -1;
}

#endif

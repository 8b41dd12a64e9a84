/*
 * Fuzzes what spillway-stat does with a stats file (stats_file.c): open
 * and validate it, take a snapshot, and render it as JSON, the table, the
 * process list and Prometheus text. A stats file is input: any program of
 * the user can write one under a stats name.
 *
 * The input is the file. When its first byte is a control character
 * (below 0x20, so never the magic's 'S') the harness first makes the
 * header valid (magic, version, size, field count, and the exact
 * length), so that those runs reach the snapshot and the renderers with
 * a hostile pid, command name and values; otherwise the file is written
 * as it is. Either way seq is made even: a file with an odd seq
 * (a writer stopped inside a group) makes every snapshot wait 100 ms,
 * which would only slow the search.
 *
 * Checks:
 *   - sw_statsfile_open accepts exactly the files the public header's
 *     spillway_stats_check accepts, says why it refuses one, and never
 *     accepts one owned by someone else;
 *   - a snapshot holds the file's words (a gauge's peak at least its
 *     value) and agrees with the public spillway_stats_snapshot;
 *   - the JSON is one valid JSON object with every field, and every
 *     rendering is printable ASCII lines whatever bytes the command name
 *     holds; each Prometheus sample parses, its label value escaped.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>

#include "fuzz.h"
#include "stats_file.h"

/* The file the harness writes: one per process, removed at exit. */
static char dir[64], path[96];

static void remove_file(void)
{
    unlink(path);
    rmdir(dir);
}

static void make_file(void)
{
    if (dir[0])
        return;
    snprintf(dir, sizeof dir, "/tmp/spillway-fuzz-XXXXXX");
    FUZZ_CHECK(mkdtemp(dir), "mkdtemp");
    snprintf(path, sizeof path, "%s/1.stats", dir);
    atexit(remove_file);
}

static void write_file(const uint8_t *data, size_t size)
{
    /* Written over, then cut to size: not O_TRUNC, which makes ext4 flush
     * the file to disk at close (its replace-by-truncate heuristic), a
     * few milliseconds a run. */
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    FUZZ_CHECK(fd >= 0, "open %s", path);
    FUZZ_CHECK(size == 0 || pwrite(fd, data, size, 0) == (ssize_t)size, "write");
    FUZZ_CHECK(ftruncate(fd, (off_t)size) == 0, "ftruncate");
    close(fd);
}

/* ---- a minimal JSON checker: objects, strings, integers ---- */

static const char *ws(const char *p)
{
    while (*p == ' ' || *p == '\n')
        p++;
    return p;
}

static const char *json_str(const char *p)
{
    if (*p++ != '"')
        return NULL;
    for (; *p != '"'; p++) {
        if ((unsigned char)*p < 0x20)
            return NULL; /* a raw control character, or the end */
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
                        return NULL;
                p += 4;
            } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
                return NULL;
            }
        }
    }
    return p + 1;
}

static const char *json_int(const char *p)
{
    if (*p == '-')
        p++;
    if (*p < '0' || *p > '9' || (*p == '0' && p[1] >= '0' && p[1] <= '9'))
        return NULL;
    while (*p >= '0' && *p <= '9')
        p++;
    return p;
}

/* One object of string keys and string or integer values; *keys counts
 * them. NULL when the text is anything else. */
static const char *json_object(const char *p, size_t *keys)
{
    p = ws(p);
    if (*p++ != '{')
        return NULL;
    p = ws(p);
    for (*keys = 0; *p != '}'; (*keys)++) {
        if (*keys) {
            if (*p++ != ',')
                return NULL;
            p = ws(p);
        }
        if (!(p = json_str(p)) || *(p = ws(p)) != ':')
            return NULL;
        p = ws(p + 1);
        if (!(p = *p == '"' ? json_str(p) : json_int(p)))
            return NULL;
        p = ws(p);
    }
    return p + 1;
}

/* ---- renderings ---- */

static char *render(int what, const sw_stats_snapshot_t *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    FUZZ_CHECK(f, "open_memstream");
    switch (what) {
    case 0: sw_statsfile_json(f, s, 2); break;
    case 1: sw_statsfile_table(f, s); break;
    case 2: sw_statsfile_list_header(f); sw_statsfile_list_row(f, s); break;
    default: sw_statsfile_prometheus(f, s, 1); break;
    }
    fclose(f);
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        FUZZ_CHECK((*p >= 0x20 && *p < 0x7f) || *p == '\n',
                   "rendering %d holds byte 0x%02x:\n%s", what, *p, text);
    FUZZ_CHECK(strlen(text) == len, "rendering %d holds a NUL", what);
    return text;
}

/* A sample line: name{pid="N",command="..."} value, the label value with
 * only \\, \" and \n escapes and no raw quote. */
static bool prom_sample(const char *l)
{
    /* A metric name: lower case, digits (dev0_...) and underscores, not
     * starting with a digit. */
    if (!*l || !strchr("abcdefghijklmnopqrstuvwxyz_", *l))
        return false;
    l += strspn(l, "abcdefghijklmnopqrstuvwxyz0123456789_");
    if (strncmp(l, "{pid=\"", 6) != 0)
        return false;
    l = json_int(l + 6);
    if (!l || strncmp(l, "\",command=\"", 11) != 0)
        return false;
    for (l += 11; *l != '"'; l++) {
        if (!*l || *l == '\n')
            return false;
        if (*l == '\\' && !strchr("\\\"n", *++l))
            return false;
    }
    if (strncmp(l, "\"} ", 3) != 0)
        return false;
    l = json_int(l + 3);
    return l && *l == '\0';
}

static void check_renderings(const sw_stats_snapshot_t *s)
{
    size_t gauges = 0;
    for (int i = 0; i < SW_STAT_COUNT; i++)
        gauges += sw_stat_fields[i].gauge;

    char *json = render(0, s);
    size_t keys;
    const char *end = json_object(json, &keys);
    FUZZ_CHECK(end && *end == '\0', "not one JSON object:\n%s", json);
    FUZZ_CHECK(keys == 3 + SW_STAT_COUNT + gauges, "%zu keys in the JSON", keys);
    free(json);

    size_t shown = 0, shown_gauges = 0;
    for (int i = 0; i < SW_STAT_COUNT; i++) {
        shown += sw_statsfile_shown(i, s, 1);
        shown_gauges += sw_statsfile_shown(i, s, 1) && sw_stat_fields[i].gauge;
    }
    char *table = render(1, s);
    size_t lines = 0;
    for (const char *p = table; *p; p++)
        lines += *p == '\n';
    FUZZ_CHECK(lines == 2 + shown, "%zu lines in the table, %zu fields shown:\n%s", lines, shown,
               table);
    free(table);

    char *list = render(2, s);
    lines = 0;
    for (const char *p = list; *p; p++)
        lines += *p == '\n';
    FUZZ_CHECK(lines == 2 && list[strlen(list) - 1] == '\n', "the list is not two lines:\n%s",
               list);
    free(list);

    char *prom = render(3, s), *save = NULL;
    size_t samples = 0;
    for (char *l = strtok_r(prom, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (l[0] == '#')
            continue;
        FUZZ_CHECK(prom_sample(l), "bad Prometheus sample: %s", l);
        samples++;
    }
    FUZZ_CHECK(samples == shown + shown_gauges, "%zu Prometheus samples, %zu fields shown",
               samples, shown);
    free(prom);
}

static void check_snapshot(const sw_statsfile_t *m, const uint8_t *bytes)
{
    sw_stats_snapshot_t s;
    FUZZ_CHECK(sw_statsfile_snapshot(m, &s), "no consistent snapshot of a file at rest");
    const sw_statsfile_header_t *h = (const sw_statsfile_header_t *)(const void *)bytes;
    FUZZ_CHECK(s.version == h->version && s.pid == h->pid && s.start_time == h->start_time,
               "header fields");
    FUZZ_CHECK(memcmp(s.comm, h->comm, SW_STATS_COMM_LEN) == 0 && s.comm[SW_STATS_COMM_LEN] == 0,
               "comm");
    sw_statsfile_t pub;
    FUZZ_CHECK(spillway_stats_snapshot((const spillway_stats_file_t *)m, &pub, 1) == 0,
               "the public snapshot disagrees");
    for (int i = 0; i < SW_STAT_COUNT; i++) {
        const sw_stat_field_t *f = &sw_stat_fields[i];
        uint64_t v, p = 0;
        memcpy(&v, bytes + f->value_off, 8);
        FUZZ_CHECK(s.value[i] == v && memcmp((char *)&pub + f->value_off, &v, 8) == 0,
                   "field %s", f->name);
        if (f->gauge) {
            memcpy(&p, bytes + f->peak_off, 8);
            uint64_t shown = (int64_t)v > (int64_t)p ? v : p;
            FUZZ_CHECK(s.peak[i] == shown, "peak of %s", f->name);
        } else {
            FUZZ_CHECK(s.peak[i] == 0, "a counter with a peak");
        }
        char b[32];
        sw_format_bytes(v, b, sizeof b);
        FUZZ_CHECK(strlen(b) < sizeof b - 1 && strchr("0123456789", b[0]), "\"%s\"", b);
    }
    check_renderings(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    make_file();
    const size_t want = sizeof(sw_statsfile_t);
    bool fix = size && data[0] < 0x20; /* never the magic's 'S' */
    size_t n = fix ? want : size;
    uint8_t *bytes = calloc(1, n > want ? n : want);
    FUZZ_CHECK(bytes, "calloc");
    memcpy(bytes, data, size < n ? size : n);
    sw_statsfile_header_t *h = (sw_statsfile_header_t *)(void *)bytes;
    if (fix) {
        memcpy(h->magic, SW_STATS_MAGIC, sizeof h->magic);
        h->version = SW_STATS_VERSION;
        h->size = (uint32_t)want;
        h->nfields = SW_STAT_COUNT;
    }
    if (n >= sizeof *h) {
        uint64_t seq;
        memcpy(&seq, &h->seq, 8);
        seq &= ~1ull;
        memcpy(&h->seq, &seq, 8);
    }
    write_file(bytes, n);

    char err[512] = "";
    const sw_statsfile_t *m = sw_statsfile_open(path, geteuid(), err, sizeof err);
    int verdict = spillway_stats_check(bytes, n);
    FUZZ_CHECK((m != NULL) == (verdict == 0), "the reader says %s, spillway_stats_check %d",
               m ? "valid" : err, verdict);
    if (m) {
        check_snapshot(m, bytes);
        sw_statsfile_close(m);
    } else {
        FUZZ_CHECK(strncmp(err, path, strlen(path)) == 0 && err[strlen(path)] == ':',
                   "a refusal does not name the file: %s", err);
    }
    FUZZ_CHECK(!sw_statsfile_open(path, geteuid() + 1, err, sizeof err),
               "a file of another owner was opened");
    free(bytes);
    return 0;
}

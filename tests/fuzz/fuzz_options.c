/*
 * Fuzzes the SPILLWAY_* parser (core/options.c): sw_options_parse on a
 * hostile environment, and the value parsers it shares with the tools.
 *
 * The input is the environment: entries separated by NUL bytes. An entry
 * whose first byte is below 64 names an option by it (index modulo the
 * table's size plus one; the extra index is the bare "SPILLWAY_" prefix,
 * for unknown names and typos), the rest of the entry being the value;
 * any other entry is taken as it is. The first two bytes size the err
 * and warn buffers, allocated to the byte so that an overflow is a
 * sanitizer's report.
 *
 * Beyond not crashing, each run checks:
 *   - the result does not depend on the message buffers, and parsing the
 *     same environment twice gives the same bytes (sw.h promises padding
 *     too);
 *   - rc is -1 exactly when err has a message, which names the variable
 *     and is one line of printable ASCII; a truncated err is a prefix of
 *     the whole one;
 *   - warn has one line of printable ASCII per unknown SPILLWAY_ name;
 *   - sw_options_print's output parses back to the same options (what
 *     sw_options_print promises, paths holding a newline excepted);
 *   - sw_parse_size agrees with a second, independent parser written from
 *     the forms options.c documents, and its value prints and parses back;
 *     sw_parse_bool takes only its eight words;
 *   - sw_amount_resolve of a percentage is floor(total * p / 10^8), p the
 *     percentage in millionths, so never above total.
 */
#include <stdbool.h>
#include <strings.h>

#include "fuzz.h"
#include "sw.h"

#define MAX_ENTRIES 64
#define ERR_FULL 4096
#define WARN_FULL (MAX_ENTRIES * 256)

static size_t option_count(void)
{
    sw_option_info_t info;
    size_t n = 0;
    while (sw_option_info(n, &info))
        n++;
    return n;
}

static bool known_name(const char *name, size_t len)
{
    sw_option_info_t info;
    for (size_t i = 0; sw_option_info(i, &info); i++)
        if (strlen(info.name) == len && memcmp(info.name, name, len) == 0)
            return true;
    return false;
}

/* The size forms of options.c's opening comment, parsed a second way:
 * digits, then optionally one of KMGT, then optionally "iB" or "B" (a
 * lone "B" also after the digits), case-insensitive; the value must fit
 * in 64 bits. */
static bool reference_size(const char *s, uint64_t *out)
{
    unsigned __int128 v = 0;
    size_t i = 0;
    while (s[i] >= '0' && s[i] <= '9') {
        v = v * 10 + (unsigned)(s[i] - '0');
        if (v > UINT64_MAX)
            return false;
        i++;
    }
    if (i == 0)
        return false;
    /* The multiplier letters, each in both cases: index / 2 is the power. */
    const char *units = "kKmMgGtT";
    const char *u = s[i] ? strchr(units, s[i]) : NULL;
    unsigned shift = 0;
    if (u) {
        shift = 10 * (unsigned)((u - units) / 2 + 1);
        i++;
    }
    const char *rest = s + i;
    bool ok = *rest == '\0' || strcasecmp(rest, "b") == 0 || (shift && strcasecmp(rest, "ib") == 0);
    if (!ok)
        return false;
    v <<= shift;
    if (v > UINT64_MAX)
        return false;
    *out = (uint64_t)v;
    return true;
}

static void check_size(const char *v)
{
    uint64_t got = 0, want = 0;
    bool ok = sw_parse_size(v, &got), rok = reference_size(v, &want);
    FUZZ_CHECK(ok == rok, "sw_parse_size(\"%s\") says %d, the reference %d", v, ok, rok);
    if (!ok)
        return;
    FUZZ_CHECK(got == want, "sw_parse_size(\"%s\") = %llu, expected %llu", v,
               (unsigned long long)got, (unsigned long long)want);
    char again[32];
    uint64_t back = 0;
    snprintf(again, sizeof again, "%llu", (unsigned long long)got);
    FUZZ_CHECK(sw_parse_size(again, &back) && back == got, "\"%s\" does not parse back", again);
}

static void check_bool(const char *v)
{
    static const char *const words[] = {"1", "on", "yes", "true", "0", "off", "no", "false"};
    bool b, ok = sw_parse_bool(v, &b), known = false;
    for (size_t i = 0; i < 8; i++)
        if (strcasecmp(v, words[i]) == 0) {
            known = true;
            FUZZ_CHECK(!ok || b == (i < 4), "sw_parse_bool(\"%s\") = %d", v, b);
        }
    FUZZ_CHECK(ok == known, "sw_parse_bool(\"%s\") says %d", v, ok);
}

static void check_resolve(const sw_amount_t *a, uint64_t total)
{
    uint64_t r = sw_amount_resolve(a, total);
    if (!a->is_percent) {
        FUZZ_CHECK(r == a->bytes, "a size resolves to itself");
        return;
    }
    uint64_t p = (uint64_t)(a->percent * 1000000 + 0.5);
    unsigned __int128 want = p >= 100000000u ? total : (unsigned __int128)total * p / 100000000u;
    FUZZ_CHECK(r == (uint64_t)want && r <= total, "%.17g%% of %llu resolves to %llu, not %llu",
               a->percent, (unsigned long long)total, (unsigned long long)r,
               (unsigned long long)(uint64_t)want);
}

/* Messages are for a terminal or a log: printable ASCII only, and no
 * line break but those that end warn's lines. */
static bool printable(const char *s, bool newlines)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p < 0x20 || *p >= 0x7f) && !(newlines && *p == '\n'))
            return false;
    return true;
}

/* The printed options, cut into lines and parsed again; not for a path
 * holding a newline, which one line per option cannot carry (the one
 * exception sw_options_print states). */
static void check_round_trip(const sw_options_t *o)
{
    if (strchr(o->log_file, '\n') || strchr(o->report, '\n') || strchr(o->stats_dir, '\n'))
        return;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    FUZZ_CHECK(f, "open_memstream");
    sw_options_print(o, f);
    fclose(f);
    char *lines[64];
    size_t n = 0;
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l && n < 63; l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    lines[n] = NULL;
    sw_options_t back;
    char err[ERR_FULL];
    int rc = sw_options_parse(&back, lines, err, sizeof err, NULL, 0);
    FUZZ_CHECK(rc == 0, "printed options do not parse back: %s", err);
    /* A default amount (set false) prints as its value, which parses back
     * as given by the user: that bit alone may differ, and only there. */
    sw_amount_t *amounts[] = {&back.gpu_budget, &back.host_budget, &back.prefetch_bytes};
    const sw_amount_t *orig[] = {&o->gpu_budget, &o->host_budget, &o->prefetch_bytes};
    for (size_t i = 0; i < 3; i++)
        if (!orig[i]->set)
            amounts[i]->set = false;
    FUZZ_CHECK(memcmp(&back, o, sizeof back) == 0, "printed options parse back to other values");
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    size_t errlen = fuzz_u8(&in), warnlen = (size_t)fuzz_u8(&in) * 4;
    uint64_t total = fuzz_u64(&in);
    size_t nopts = option_count();

    /* The environment, and each entry's value for the value parsers. */
    char *env[MAX_ENTRIES + 1];
    const char *values[MAX_ENTRIES];
    size_t n = 0, unknown = 0;
    while (in.n && n < MAX_ENTRIES) {
        const uint8_t *end = memchr(in.p, 0, in.n);
        size_t len = end ? (size_t)(end - in.p) : in.n;
        uint8_t k = len ? in.p[0] : 0;
        char *e;
        if (len && k < 64) {
            sw_option_info_t info = {.name = ""};
            sw_option_info(k % (nopts + 1), &info); /* past the end: info.name stays "" */
            size_t nl = strlen(info.name);
            e = malloc(9 + nl + 1 + len);
            FUZZ_CHECK(e, "malloc");
            memcpy(e, "SPILLWAY_", 9);
            memcpy(e + 9, info.name, nl);
            size_t at = 9 + nl;
            if (nl)
                e[at++] = '=';
            memcpy(e + at, in.p + 1, len - 1);
            e[at + len - 1] = '\0';
        } else {
            e = malloc(len + 1);
            FUZZ_CHECK(e, "malloc");
            memcpy(e, in.p, len);
            e[len] = '\0';
        }
        env[n] = e;
        const char *eq = strchr(e, '=');
        values[n] = eq ? eq + 1 : e;
        if (eq && strncmp(e, "SPILLWAY_", 9) == 0 && !known_name(e + 9, (size_t)(eq - e - 9)))
            unknown++;
        n++;
        in.p += len + (end != NULL);
        in.n -= len + (end != NULL);
    }
    env[n] = NULL;

    /* Exact-size buffers, so that writing one byte past them is caught. */
    char *err = errlen ? malloc(errlen) : NULL, *warn = warnlen ? malloc(warnlen) : NULL;
    char *err_full = malloc(ERR_FULL), *warn_full = malloc(WARN_FULL);
    FUZZ_CHECK(err_full && warn_full && (!errlen || err) && (!warnlen || warn), "malloc");
    sw_options_t a, b, c;
    int rc = sw_options_parse(&a, env, err, errlen, warn, warnlen);
    int rc_full = sw_options_parse(&b, env, err_full, ERR_FULL, warn_full, WARN_FULL);
    int rc_none = sw_options_parse(&c, env, NULL, 0, NULL, 0);
    FUZZ_CHECK(rc == rc_full && rc == rc_none && (rc == 0 || rc == -1), "rc %d, %d, %d", rc,
               rc_full, rc_none);
    FUZZ_CHECK(memcmp(&a, &b, sizeof a) == 0 && memcmp(&a, &c, sizeof a) == 0,
               "the options depend on the message buffers, or differ between two parses");

    /* err: one line naming the variable, exactly when rc says so. */
    FUZZ_CHECK((rc == -1) == (err_full[0] != '\0'), "rc %d with err \"%s\"", rc, err_full);
    if (rc == -1) {
        FUZZ_CHECK(strncmp(err_full, "spillway: bad value SPILLWAY_", 29) == 0, "err \"%s\"",
                   err_full);
        FUZZ_CHECK(printable(err_full, false), "err is not one printable line: \"%s\"",
                   err_full);
    }
    if (errlen) {
        size_t el = strnlen(err, errlen);
        FUZZ_CHECK(el < errlen, "err not terminated");
        FUZZ_CHECK(strncmp(err, err_full, el) == 0, "a short err is not a prefix of the whole");
    }
    /* warn: one line per unknown name (the full buffer holds them all). */
    size_t lines = 0;
    for (const char *p = warn_full; *p; p++)
        lines += *p == '\n';
    FUZZ_CHECK(printable(warn_full, true), "warn holds more than text lines:\n%s", warn_full);
    FUZZ_CHECK(lines == unknown, "%zu warning lines for %zu unknown names:\n%s", lines, unknown,
               warn_full);
    if (warnlen)
        FUZZ_CHECK(strnlen(warn, warnlen) < warnlen &&
                       strncmp(warn, warn_full, strlen(warn)) == 0,
                   "a short warn is not a prefix of the whole");

    check_round_trip(&a);
    for (size_t i = 0; i < n; i++) {
        check_size(values[i]);
        check_bool(values[i]);
    }
    check_resolve(&a.gpu_budget, total);
    check_resolve(&a.host_budget, total);
    check_resolve(&a.prefetch_bytes, total);

    for (size_t i = 0; i < n; i++)
        free(env[i]);
    free(err);
    free(warn);
    free(err_full);
    free(warn_full);
    return 0;
}

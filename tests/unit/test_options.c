/* core/options.c: the SPILLWAY_* table, its parsers, messages and printing. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "sw.h"
#include "unit.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define TiB (1ull << 40)

/* Parses one "NAME=value" entry; err and warn land in the caller's buffers. */
static int parse1(sw_options_t *o, const char *entry, char *err, size_t errlen, char *warn,
                  size_t warnlen)
{
    char *env[] = {(char *)entry, NULL};
    return sw_options_parse(o, env, err, errlen, warn, warnlen);
}

/* Expects entry to be refused with exactly message. */
static void expect_bad(const char *entry, const char *message)
{
    sw_options_t o;
    char err[512] = "", warn[512] = "";
    ck_assert_int_eq(parse1(&o, entry, err, sizeof err, warn, sizeof warn), -1);
    ck_assert_str_eq(err, message);
    ck_assert_str_eq(warn, "");
}

static void parse_ok(sw_options_t *o, const char *entry)
{
    char err[512] = "", warn[512] = "";
    ck_assert_msg(parse1(o, entry, err, sizeof err, warn, sizeof warn) == 0, "%s: %s", entry, err);
    ck_assert_str_eq(err, "");
    ck_assert_str_eq(warn, "");
}

static char *print_to_string(const sw_options_t *o);

/* ---- defaults ---- */

static void defaults(sw_options_t *o)
{
    char *env[] = {NULL};
    char err[64] = "x", warn[64] = "x";
    ck_assert_int_eq(sw_options_parse(o, env, err, sizeof err, warn, sizeof warn), 0);
    ck_assert_str_eq(err, "");
    ck_assert_str_eq(warn, "");
}

START_TEST(test_default_gpu_budget_is_unset)
{
    sw_options_t o;
    defaults(&o);
    ck_assert(!o.gpu_budget.set);
    ck_assert(!o.gpu_budget.is_percent);
    ck_assert_uint_eq(o.gpu_budget.bytes, 0);
}
END_TEST

/* The host budget is per process and processes do not coordinate: eight
 * of them (one per GPU of an 8-GPU machine) with the default budget pin at
 * most half of RAM together. */
START_TEST(test_default_host_budget_lets_eight_processes_pin_half_of_ram)
{
    sw_options_t o;
    defaults(&o);
    ck_assert(!o.host_budget.set);
    ck_assert(o.host_budget.is_percent);
    ck_assert_double_eq(o.host_budget.percent, 6.25);
    ck_assert_uint_eq(sw_amount_resolve(&o.host_budget, 64 * GiB), 4 * GiB);
    ck_assert_uint_le(8 * sw_amount_resolve(&o.host_budget, 64 * GiB), 32 * GiB);
}
END_TEST

START_TEST(test_default_min_alloc_is_2mib)
{
    sw_options_t o;
    defaults(&o);
    ck_assert_uint_eq(o.min_alloc, 2 * MiB);
}
END_TEST

START_TEST(test_default_chunk_is_32mib)
{
    sw_options_t o;
    defaults(&o);
    ck_assert_uint_eq(o.chunk, 32 * MiB);
    ck_assert(!o.chunk_given); /* auto: alloc.c may cut it to a small budget */
}
END_TEST

START_TEST(test_default_disable_is_off)
{
    sw_options_t o;
    defaults(&o);
    ck_assert(!o.disable);
}
END_TEST

START_TEST(test_default_log_is_warn)
{
    sw_options_t o;
    defaults(&o);
    ck_assert_int_eq(o.log_level, SW_LOG_WARN);
}
END_TEST

START_TEST(test_default_paths_are_empty)
{
    sw_options_t o;
    defaults(&o);
    ck_assert_str_eq(o.log_file, "");
    ck_assert_str_eq(o.report, "");
    ck_assert_str_eq(o.stats_dir, "");
}
END_TEST

START_TEST(test_default_meminfo_is_physical)
{
    sw_options_t o;
    defaults(&o);
    ck_assert_int_eq(o.meminfo, SW_MEMINFO_PHYSICAL);
}
END_TEST

START_TEST(test_null_environment_gives_defaults)
{
    sw_options_t o, d;
    defaults(&d);
    memset(&o, 0xa5, sizeof o);
    ck_assert_int_eq(sw_options_parse(&o, NULL, NULL, 0, NULL, 0), 0);
    ck_assert_mem_eq(&o, &d, sizeof o);
}
END_TEST

START_TEST(test_other_variables_are_ignored)
{
    sw_options_t o, d;
    defaults(&d);
    char *env[] = {"PATH=/bin", "SPILLWAYCHUNK=1", "SPILLWAY_CHUNK", "XSPILLWAY_CHUNK=1", NULL};
    char err[64], warn[64];
    ck_assert_int_eq(sw_options_parse(&o, env, err, sizeof err, warn, sizeof warn), 0);
    ck_assert_mem_eq(&o, &d, sizeof o);
    ck_assert_str_eq(warn, "");
}
END_TEST

/* ---- sizes ---- */

START_TEST(test_size_plain_integer_is_bytes)
{
    uint64_t v;
    ck_assert(sw_parse_size("4096", &v));
    ck_assert_uint_eq(v, 4096);
    ck_assert(sw_parse_size("0", &v));
    ck_assert_uint_eq(v, 0);
    ck_assert(sw_parse_size("007", &v));
    ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(test_size_accepts_every_multiplier_spelling)
{
    static const struct {
        const char *s;
        uint64_t v;
    } forms[] = {
        {"512k", 512 * KiB}, {"512K", 512 * KiB}, {"512KiB", 512 * KiB}, {"512KB", 512 * KiB},
        {"512kib", 512 * KiB}, {"512kb", 512 * KiB}, {"2M", 2 * MiB}, {"2MiB", 2 * MiB},
        {"2MB", 2 * MiB}, {"2m", 2 * MiB}, {"1G", GiB}, {"1GiB", GiB}, {"1GB", GiB},
        {"1g", GiB}, {"3T", 3 * TiB}, {"3TiB", 3 * TiB}, {"3tb", 3 * TiB}, {"64B", 64},
        {"64b", 64},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        uint64_t v = 0;
        ck_assert_msg(sw_parse_size(forms[i].s, &v), "%s refused", forms[i].s);
        ck_assert_msg(v == forms[i].v, "%s gave %llu", forms[i].s, (unsigned long long)v);
    }
}
END_TEST

START_TEST(test_size_largest_values_fit)
{
    uint64_t v;
    ck_assert(sw_parse_size("18446744073709551615", &v));
    ck_assert_uint_eq(v, UINT64_MAX);
    ck_assert(sw_parse_size("16777215TiB", &v));
    ck_assert_uint_eq(v, 16777215ull * TiB);
}
END_TEST

START_TEST(test_size_rejects_overflow)
{
    uint64_t v = 42;
    ck_assert(!sw_parse_size("18446744073709551616", &v));
    ck_assert(!sw_parse_size("99999999999999999999999", &v));
    ck_assert(!sw_parse_size("16777216T", &v)); /* 2^64 */
    ck_assert(!sw_parse_size("17179869184G", &v));
    ck_assert_uint_eq(v, 42); /* untouched */
}
END_TEST

START_TEST(test_size_rejects_malformed_values)
{
    static const char *const junk[] = {
        "", "-1", "+1", " 1", "1 ", "1.5G", "12XB", "G", "GiB", "1iB", "1KK", "0x10",
        "1Gi", "1GiBs", "1 GiB", "1e3", "1P", "1,000", "２",
    };
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        uint64_t v = 42;
        ck_assert_msg(!sw_parse_size(junk[i], &v), "\"%s\" accepted", junk[i]);
        ck_assert_uint_eq(v, 42);
    }
    uint64_t v;
    ck_assert(!sw_parse_size(NULL, &v));
}
END_TEST

/* ---- booleans ---- */

START_TEST(test_bool_accepts_every_word_in_any_case)
{
    static const char *const yes[] = {"1", "on", "yes", "true", "ON", "Yes", "TRUE"};
    static const char *const no[] = {"0", "off", "no", "false", "OFF", "No", "False"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        bool b = false;
        ck_assert_msg(sw_parse_bool(yes[i], &b) && b, "%s", yes[i]);
        b = true;
        ck_assert_msg(sw_parse_bool(no[i], &b) && !b, "%s", no[i]);
    }
}
END_TEST

START_TEST(test_bool_rejects_other_words)
{
    static const char *const junk[] = {"", "2", "y", "n", "enable", "truee", " 1", "01"};
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        bool b = true;
        ck_assert_msg(!sw_parse_bool(junk[i], &b), "\"%s\" accepted", junk[i]);
        ck_assert(b);
    }
    bool b;
    ck_assert(!sw_parse_bool(NULL, &b));
}
END_TEST

/* ---- each option ---- */

START_TEST(test_gpu_budget_takes_a_size)
{
    sw_options_t o;
    parse_ok(&o, "SPILLWAY_GPU_BUDGET=20GiB");
    ck_assert(o.gpu_budget.set);
    ck_assert(!o.gpu_budget.is_percent);
    ck_assert_uint_eq(o.gpu_budget.bytes, 20 * GiB);
}
END_TEST

START_TEST(test_gpu_budget_takes_a_percentage)
{
    sw_options_t o;
    parse_ok(&o, "SPILLWAY_GPU_BUDGET=40%");
    ck_assert(o.gpu_budget.set);
    ck_assert(o.gpu_budget.is_percent);
    ck_assert_double_eq(o.gpu_budget.percent, 40.0);
}
END_TEST

START_TEST(test_gpu_budget_empty_means_picked)
{
    /* Unset or empty: no amount given, and not off: each device's budget
     * is picked from its free memory (devices.c). */
    sw_options_t o;
    parse_ok(&o, "SPILLWAY_GPU_BUDGET=");
    ck_assert(!o.gpu_budget.set);
    ck_assert(!o.gpu_budget_off);
    ck_assert_uint_eq(sw_amount_resolve(&o.gpu_budget, 80 * GiB), 0);
}
END_TEST

/* Parses entry into *a, prints it, finds `printed` (a whole line) among
 * the lines, and parses that line back to the same options. */
static void expect_prints_back(const char *entry, const char *printed, sw_options_t *a)
{
    char *env[] = {(char *)entry, NULL};
    sw_options_t b;
    ck_assert_int_eq(sw_options_parse(a, env, NULL, 0, NULL, 0), 0);
    char *s = print_to_string(a);
    ck_assert_msg(strstr(s, printed) != NULL, "%s", s);
    char *line = strtok(strstr(s, printed), "\n");
    char *again[] = {line, NULL};
    ck_assert_int_eq(sw_options_parse(&b, again, NULL, 0, NULL, 0), 0);
    ck_assert_mem_eq(a, &b, sizeof b);
    free(s);
}

START_TEST(test_gpu_budget_none_turns_it_off_and_prints_back)
{
    sw_options_t a;
    expect_prints_back("SPILLWAY_GPU_BUDGET=none", "SPILLWAY_GPU_BUDGET=none\n", &a);
    ck_assert(a.gpu_budget_off);
    ck_assert(!a.gpu_budget.set);
    /* an amount leaves it on */
    char *amount[] = {"SPILLWAY_GPU_BUDGET=4GiB", NULL};
    ck_assert_int_eq(sw_options_parse(&a, amount, NULL, 0, NULL, 0), 0);
    ck_assert(!a.gpu_budget_off && a.gpu_budget.set);
}
END_TEST

START_TEST(test_percentages_accept_decimals_up_to_100)
{
    static const struct {
        const char *s;
        double p;
    } forms[] = {
        {"SPILLWAY_HOST_BUDGET=12.5%", 12.5}, {"SPILLWAY_HOST_BUDGET=100%", 100},
        {"SPILLWAY_HOST_BUDGET=0.5%", 0.5},   {"SPILLWAY_HOST_BUDGET=100.0%", 100},
        {"SPILLWAY_HOST_BUDGET=007%", 7},     {"SPILLWAY_HOST_BUDGET=99.999%", 99.999},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        sw_options_t o;
        parse_ok(&o, forms[i].s);
        ck_assert(o.host_budget.set && o.host_budget.is_percent);
        ck_assert_double_eq_tol(o.host_budget.percent, forms[i].p, 1e-9);
    }
}
END_TEST

START_TEST(test_percentages_outside_0_to_100_or_malformed_are_refused)
{
    static const char *const junk[] = {
        "0%", "0.0%", "100.1%", "101%", "-5%", "%", "5.%", ".5%", "5%%", "1e2%", "40 %",
        " 40%", "40%x", "inf%", "nan%", "1000000000000000000000%",
    };
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        char entry[64], msg[256];
        snprintf(entry, sizeof entry, "SPILLWAY_HOST_BUDGET=%s", junk[i]);
        snprintf(msg, sizeof msg,
                 "spillway: bad value SPILLWAY_HOST_BUDGET=\"%s\": expected a size such as "
                 "20GiB or 512MiB, or a percentage such as 40%%", junk[i]);
        expect_bad(entry, msg);
    }
}
END_TEST

#define GPU_BUDGET_FORMS                                                                    \
    "expected a size such as 20GiB, a percentage such as 40%, a list of device:amount "      \
    "such as 0:20GiB,1:30GiB (devices 0 to 7), or none"

START_TEST(test_bad_gpu_budget_message_names_variable_value_and_forms)
{
    expect_bad("SPILLWAY_GPU_BUDGET=12XB",
               "spillway: bad value SPILLWAY_GPU_BUDGET=\"12XB\": " GPU_BUDGET_FORMS);
}
END_TEST

START_TEST(test_gpu_budget_takes_a_per_device_list)
{
    sw_options_t o;
    parse_ok(&o, "SPILLWAY_GPU_BUDGET=0:20GiB,1:30GiB");
    ck_assert(!o.gpu_budget.set); /* devices the list does not name: none */
    ck_assert(o.gpu_budget_dev[0].set && o.gpu_budget_dev[1].set);
    ck_assert_uint_eq(o.gpu_budget_dev[0].bytes, 20 * GiB);
    ck_assert_uint_eq(o.gpu_budget_dev[1].bytes, 30 * GiB);
    for (int d = 2; d < SW_MAX_DEVICES; d++)
        ck_assert(!o.gpu_budget_dev[d].set);
    ck_assert_uint_eq(sw_gpu_budget_of(&o, 1)->bytes, 30 * GiB);
    ck_assert(!sw_gpu_budget_of(&o, 2)->set);
}
END_TEST

START_TEST(test_gpu_budget_list_may_give_every_other_device_an_amount)
{
    sw_options_t o;
    parse_ok(&o, "SPILLWAY_GPU_BUDGET=7:40%,10GiB");
    ck_assert(o.gpu_budget.set);
    ck_assert_uint_eq(o.gpu_budget.bytes, 10 * GiB);
    ck_assert(o.gpu_budget_dev[7].set && o.gpu_budget_dev[7].is_percent);
    ck_assert_double_eq(o.gpu_budget_dev[7].percent, 40.0);
    ck_assert_uint_eq(sw_gpu_budget_of(&o, 3)->bytes, 10 * GiB);
    ck_assert(sw_gpu_budget_of(&o, 7)->is_percent);
    /* A plain amount means every device, as it always did. */
    parse_ok(&o, "SPILLWAY_GPU_BUDGET=3GiB");
    for (int d = 0; d < SW_MAX_DEVICES; d++)
        ck_assert_uint_eq(sw_gpu_budget_of(&o, d)->bytes, 3 * GiB);
}
END_TEST

START_TEST(test_bad_gpu_budget_lists_are_refused_with_the_forms)
{
    static const char *const junk[] = {
        "0:20GiB,", ",0:20GiB", "0:20GiB,,1:1GiB", "8:1GiB", "-1:1GiB", "a:1GiB", "01:1GiB",
        "0:", ":1GiB", "0:1GiB,0:2GiB", "1GiB,2GiB", "0:1GiB:2", "0:150%", "0 :1GiB", "0:1QB",
    };
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        char entry[64], msg[512];
        snprintf(entry, sizeof entry, "SPILLWAY_GPU_BUDGET=%s", junk[i]);
        snprintf(msg, sizeof msg, "spillway: bad value SPILLWAY_GPU_BUDGET=\"%s\": %s", junk[i],
                 GPU_BUDGET_FORMS);
        expect_bad(entry, msg);
    }
}
END_TEST

START_TEST(test_gpu_budget_list_prints_back_to_the_same_options)
{
    sw_options_t a;
    expect_prints_back("SPILLWAY_GPU_BUDGET=1:12.5%,5GiB,0:3MiB",
                       "SPILLWAY_GPU_BUDGET=5GiB,0:3MiB,1:12.5%\n", &a);
}
END_TEST

/* Found by tests/fuzz: the message quoted the value's bytes as they
 * were, so a newline in a value made err two lines (and a terminal
 * escape reached the log). */
START_TEST(test_bad_value_message_escapes_what_is_not_printable)
{
    expect_bad("SPILLWAY_DISABLE=a\n\x1b[2J\"\\",
               "spillway: bad value SPILLWAY_DISABLE=\"a\\x0a\\x1b[2J\\x22\\x5c\": expected "
               "1/0, on/off, yes/no or true/false");
}
END_TEST

/* Found by tests/fuzz: a percentage was summed digit by digit in floating
 * point and printed with 10 digits, so "0.00001%" printed as "1e-05%" and
 * longer ones lost digits; neither parsed back to the same value. */
START_TEST(test_percentages_are_kept_to_a_millionth_and_print_back)
{
    static const struct {
        const char *in, *printed;
    } forms[] = {
        {"SPILLWAY_HOST_BUDGET=0.00001%", "SPILLWAY_HOST_BUDGET=0.00001%\n"},
        {"SPILLWAY_HOST_BUDGET=12.34567890123%", "SPILLWAY_HOST_BUDGET=12.345679%\n"},
        {"SPILLWAY_HOST_BUDGET=0.0000005%", "SPILLWAY_HOST_BUDGET=0.000001%\n"},
        {"SPILLWAY_HOST_BUDGET=100.000000%", "SPILLWAY_HOST_BUDGET=100%\n"},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        sw_options_t o;
        parse_ok(&o, forms[i].in);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        sw_options_print(&o, f);
        fclose(f);
        ck_assert_msg(strstr(buf, forms[i].printed), "%s printed as\n%s", forms[i].in, buf);
        free(buf);
    }
    /* Below half a millionth it is 0, and refused as 0% is. */
    sw_options_t o;
    char *env[] = {"SPILLWAY_HOST_BUDGET=0.0000004%", NULL};
    ck_assert_int_eq(sw_options_parse(&o, env, NULL, 0, NULL, 0), -1);
}
END_TEST

START_TEST(test_host_budget_empty_is_refused)
{
    expect_bad("SPILLWAY_HOST_BUDGET=",
               "spillway: bad value SPILLWAY_HOST_BUDGET=\"\": expected a size such as 20GiB "
               "or 512MiB, or a percentage such as 40%");
}
END_TEST

START_TEST(test_min_alloc_takes_a_size_including_zero)
{
    sw_options_t o;
    parse_ok(&o, "SPILLWAY_MIN_ALLOC=64KiB");
    ck_assert_uint_eq(o.min_alloc, 64 * KiB);
    parse_ok(&o, "SPILLWAY_MIN_ALLOC=0");
    ck_assert_uint_eq(o.min_alloc, 0);
}
END_TEST

START_TEST(test_min_alloc_refuses_a_percentage)
{
    expect_bad("SPILLWAY_MIN_ALLOC=10%",
               "spillway: bad value SPILLWAY_MIN_ALLOC=\"10%\": expected a size such as 2MiB, "
               "512KiB or 4096 (bytes)");
}
END_TEST

START_TEST(test_chunk_takes_a_size)
{
    sw_options_t o;
    parse_ok(&o, "SPILLWAY_CHUNK=64M");
    ck_assert_uint_eq(o.chunk, 64 * MiB);
    ck_assert(o.chunk_given);
    /* the default's own size, given, is given: never cut */
    parse_ok(&o, "SPILLWAY_CHUNK=32MiB");
    ck_assert_uint_eq(o.chunk, 32 * MiB);
    ck_assert(o.chunk_given);
}
END_TEST

START_TEST(test_chunk_takes_auto)
{
    sw_options_t o;
    parse_ok(&o, "SPILLWAY_CHUNK=AUTO");
    ck_assert_uint_eq(o.chunk, 32 * MiB);
    ck_assert(!o.chunk_given);
}
END_TEST

START_TEST(test_chunk_of_zero_is_refused)
{
    expect_bad("SPILLWAY_CHUNK=0",
               "spillway: bad value SPILLWAY_CHUNK=\"0\": expected auto or a size greater than "
               "zero such as 32MiB or 1GiB");
    expect_bad("SPILLWAY_CHUNK=0GiB",
               "spillway: bad value SPILLWAY_CHUNK=\"0GiB\": expected auto or a size greater "
               "than zero such as 32MiB or 1GiB");
}
END_TEST

START_TEST(test_size_overflow_is_refused_with_a_message)
{
    expect_bad("SPILLWAY_CHUNK=99999999999T",
               "spillway: bad value SPILLWAY_CHUNK=\"99999999999T\": expected auto or a size "
               "greater than zero such as 32MiB or 1GiB");
}
END_TEST

START_TEST(test_negative_size_is_refused_with_a_message)
{
    expect_bad("SPILLWAY_MIN_ALLOC=-1",
               "spillway: bad value SPILLWAY_MIN_ALLOC=\"-1\": expected a size such as 2MiB, "
               "512KiB or 4096 (bytes)");
}
END_TEST

START_TEST(test_disable_takes_a_boolean)
{
    sw_options_t o;
    parse_ok(&o, "SPILLWAY_DISABLE=yes");
    ck_assert(o.disable);
    parse_ok(&o, "SPILLWAY_DISABLE=off");
    ck_assert(!o.disable);
}
END_TEST

START_TEST(test_bad_boolean_message_lists_the_words)
{
    expect_bad("SPILLWAY_DISABLE=maybe",
               "spillway: bad value SPILLWAY_DISABLE=\"maybe\": expected 1/0, on/off, yes/no or "
               "true/false");
}
END_TEST

START_TEST(test_log_takes_each_level_in_any_case)
{
    static const struct {
        const char *s;
        int level;
    } forms[] = {
        {"SPILLWAY_LOG=error", SW_LOG_ERROR}, {"SPILLWAY_LOG=warn", SW_LOG_WARN},
        {"SPILLWAY_LOG=info", SW_LOG_INFO},   {"SPILLWAY_LOG=debug", SW_LOG_DEBUG},
        {"SPILLWAY_LOG=DEBUG", SW_LOG_DEBUG}, {"SPILLWAY_LOG=Error", SW_LOG_ERROR},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        sw_options_t o;
        parse_ok(&o, forms[i].s);
        ck_assert_int_eq(o.log_level, forms[i].level);
    }
}
END_TEST

START_TEST(test_bad_log_level_message_lists_the_levels)
{
    expect_bad("SPILLWAY_LOG=verbose",
               "spillway: bad value SPILLWAY_LOG=\"verbose\": expected one of error, warn, info "
               "or debug");
    expect_bad("SPILLWAY_LOG=",
               "spillway: bad value SPILLWAY_LOG=\"\": expected one of error, warn, info or "
               "debug");
}
END_TEST

START_TEST(test_meminfo_takes_physical_or_virtual)
{
    sw_options_t o;
    parse_ok(&o, "SPILLWAY_MEMINFO=virtual");
    ck_assert_int_eq(o.meminfo, SW_MEMINFO_VIRTUAL);
    parse_ok(&o, "SPILLWAY_MEMINFO=physical");
    ck_assert_int_eq(o.meminfo, SW_MEMINFO_PHYSICAL);
    expect_bad("SPILLWAY_MEMINFO=both",
               "spillway: bad value SPILLWAY_MEMINFO=\"both\": expected one of physical or "
               "virtual");
}
END_TEST

START_TEST(test_paths_are_copied)
{
    sw_options_t o;
    char *env[] = {"SPILLWAY_LOG_FILE=/var/log/sw.log", "SPILLWAY_REPORT=out/report.json",
                   "SPILLWAY_STATS_DIR=/run/user/1000/spillway", NULL};
    ck_assert_int_eq(sw_options_parse(&o, env, NULL, 0, NULL, 0), 0);
    ck_assert_str_eq(o.log_file, "/var/log/sw.log");
    ck_assert_str_eq(o.report, "out/report.json");
    ck_assert_str_eq(o.stats_dir, "/run/user/1000/spillway");
}
END_TEST

START_TEST(test_path_of_1023_bytes_fits_and_1024_is_refused)
{
    static char entry[2100];
    const char *prefix = "SPILLWAY_REPORT=";
    strcpy(entry, prefix);
    memset(entry + strlen(prefix), 'a', 1023);
    sw_options_t o;
    parse_ok(&o, entry);
    ck_assert_uint_eq(strlen(o.report), 1023);

    strcat(entry, "a");
    char err[4096];
    ck_assert_int_eq(parse1(&o, entry, err, sizeof err, NULL, 0), -1);
    ck_assert(strstr(err, "spillway: bad value SPILLWAY_REPORT=\"aaaa") == err);
    ck_assert(strstr(err, "\": expected a path shorter than 1024 bytes") != NULL);
    ck_assert_str_eq(o.report, "");
}
END_TEST

START_TEST(test_first_bad_value_is_reported_and_valid_ones_still_apply)
{
    sw_options_t o;
    char err[512], warn[512];
    char *env[] = {"SPILLWAY_CHUNK=64MiB", "SPILLWAY_LOG=loud", "SPILLWAY_DISABLE=2",
                   "SPILLWAY_MIN_ALLOC=1MiB", NULL};
    ck_assert_int_eq(sw_options_parse(&o, env, err, sizeof err, warn, sizeof warn), -1);
    ck_assert_str_eq(err, "spillway: bad value SPILLWAY_LOG=\"loud\": expected one of error, "
                          "warn, info or debug");
    ck_assert_uint_eq(o.chunk, 64 * MiB);
    ck_assert_uint_eq(o.min_alloc, 1 * MiB);
    ck_assert_int_eq(o.log_level, SW_LOG_WARN);
    ck_assert(!o.disable);
}
END_TEST

START_TEST(test_later_duplicate_wins)
{
    sw_options_t o;
    char *env[] = {"SPILLWAY_CHUNK=64MiB", "SPILLWAY_CHUNK=4MiB", NULL};
    ck_assert_int_eq(sw_options_parse(&o, env, NULL, 0, NULL, 0), 0);
    ck_assert_uint_eq(o.chunk, 4 * MiB);
}
END_TEST

START_TEST(test_small_message_buffers_are_not_overrun)
{
    sw_options_t o;
    char err[16 + 8], warn[16 + 8];
    memset(err, '#', sizeof err);
    memset(warn, '#', sizeof warn);
    char *env[] = {"SPILLWAY_GPU_BUDGTE=1", "SPILLWAY_CHUNK=bad", "SPILLWAY_XYZZY=2", NULL};
    ck_assert_int_eq(sw_options_parse(&o, env, err, 16, warn, 16), -1);
    ck_assert_uint_eq(strlen(err), 15);
    ck_assert_uint_eq(strlen(warn), 15);
    for (int i = 16; i < 24; i++) {
        ck_assert_int_eq(err[i], '#');
        ck_assert_int_eq(warn[i], '#');
    }
}
END_TEST

/* ---- unknown names ---- */

START_TEST(test_unknown_variable_suggests_the_closest_name)
{
    sw_options_t o;
    char err[256], warn[256];
    ck_assert_int_eq(parse1(&o, "SPILLWAY_GPU_BUDGTE=20GiB", err, sizeof err, warn, sizeof warn),
                     0);
    ck_assert_str_eq(warn, "spillway: unknown variable SPILLWAY_GPU_BUDGTE (did you mean "
                           "SPILLWAY_GPU_BUDGET?)\n");
    ck_assert(!o.gpu_budget.set);
}
END_TEST

START_TEST(test_unknown_variable_far_from_every_name_gets_no_suggestion)
{
    sw_options_t o;
    char warn[256];
    ck_assert_int_eq(parse1(&o, "SPILLWAY_XYZZY=1", NULL, 0, warn, sizeof warn), 0);
    ck_assert_str_eq(warn, "spillway: unknown variable SPILLWAY_XYZZY\n");
    ck_assert_int_eq(parse1(&o, "SPILLWAY_FOO=1", NULL, 0, warn, sizeof warn), 0);
    ck_assert_str_eq(warn, "spillway: unknown variable SPILLWAY_FOO\n");
}
END_TEST

START_TEST(test_unknown_variable_suggestions_cover_other_typos)
{
    static const struct {
        const char *entry, *warn;
    } cases[] = {
        {"SPILLWAY_CHUNKS=1", "spillway: unknown variable SPILLWAY_CHUNKS (did you mean "
                              "SPILLWAY_CHUNK?)\n"},
        {"SPILLWAY_LOGFILE=x", "spillway: unknown variable SPILLWAY_LOGFILE (did you mean "
                               "SPILLWAY_LOG_FILE?)\n"},
        {"SPILLWAY_LGO=x", "spillway: unknown variable SPILLWAY_LGO (did you mean "
                           "SPILLWAY_LOG?)\n"},
        {"SPILLWAY_HOST_BUDGE=x", "spillway: unknown variable SPILLWAY_HOST_BUDGE (did you mean "
                                  "SPILLWAY_HOST_BUDGET?)\n"},
        {"SPILLWAY_STAT_DIR=x", "spillway: unknown variable SPILLWAY_STAT_DIR (did you mean "
                                "SPILLWAY_STATS_DIR?)\n"},
        /* Names are case-sensitive, but a wrong case is the likeliest typo. */
        {"SPILLWAY_chunk=1", "spillway: unknown variable SPILLWAY_chunk (did you mean "
                             "SPILLWAY_CHUNK?)\n"},
        /* A name shortened to one end of a known one: the first such. */
        {"SPILLWAY_BUDGET=8GiB", "spillway: unknown variable SPILLWAY_BUDGET (did you mean "
                                 "SPILLWAY_GPU_BUDGET?)\n"},
        {"SPILLWAY_PREFETCH=0", "spillway: unknown variable SPILLWAY_PREFETCH (did you mean "
                                "SPILLWAY_PREFETCH_BYTES?)\n"},
        {"SPILLWAY_gpu=1", "spillway: unknown variable SPILLWAY_gpu (did you mean "
                           "SPILLWAY_GPU_BUDGET?)\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sw_options_t o;
        char warn[256];
        ck_assert_int_eq(parse1(&o, cases[i].entry, NULL, 0, warn, sizeof warn), 0);
        ck_assert_str_eq(warn, cases[i].warn);
    }
}
END_TEST

START_TEST(test_unknown_variable_does_not_stop_known_ones)
{
    sw_options_t o;
    char warn[512];
    char *env[] = {"SPILLWAY_GPU_BUDGTE=20GiB", "SPILLWAY_GPU_BUDGET=10GiB", "SPILLWAY_XYZZY=1",
                   NULL};
    ck_assert_int_eq(sw_options_parse(&o, env, NULL, 0, warn, sizeof warn), 0);
    ck_assert_uint_eq(o.gpu_budget.bytes, 10 * GiB);
    ck_assert_str_eq(warn, "spillway: unknown variable SPILLWAY_GPU_BUDGTE (did you mean "
                           "SPILLWAY_GPU_BUDGET?)\n"
                           "spillway: unknown variable SPILLWAY_XYZZY\n");
}
END_TEST

/* ---- resolving amounts ---- */

START_TEST(test_size_amount_resolves_to_its_bytes)
{
    sw_amount_t a = {.bytes = 20 * GiB, .set = true};
    ck_assert_uint_eq(sw_amount_resolve(&a, 80 * GiB), 20 * GiB);
    ck_assert_uint_eq(sw_amount_resolve(&a, 0), 20 * GiB);
}
END_TEST

START_TEST(test_percent_amount_resolves_against_the_total)
{
    sw_options_t o;
    parse_ok(&o, "SPILLWAY_GPU_BUDGET=40%");
    ck_assert_uint_eq(sw_amount_resolve(&o.gpu_budget, 100 * GiB), 40 * GiB);
    parse_ok(&o, "SPILLWAY_GPU_BUDGET=12.5%");
    ck_assert_uint_eq(sw_amount_resolve(&o.gpu_budget, 80 * GiB), 10 * GiB);
    ck_assert_uint_eq(sw_amount_resolve(&o.gpu_budget, 8), 1);
    ck_assert_uint_eq(sw_amount_resolve(&o.gpu_budget, 7), 0); /* truncates */
}
END_TEST

START_TEST(test_percent_of_huge_totals_does_not_overflow)
{
    sw_amount_t all = {.percent = 100, .is_percent = true, .set = true};
    sw_amount_t half = {.percent = 50, .is_percent = true, .set = true};
    ck_assert_uint_eq(sw_amount_resolve(&all, UINT64_MAX), UINT64_MAX);
    ck_assert_uint_eq(sw_amount_resolve(&half, UINT64_MAX), UINT64_MAX / 2);
    ck_assert_uint_eq(sw_amount_resolve(&half, 0), 0);
}
END_TEST

/* ---- printing ---- */

static char *print_to_string(const sw_options_t *o)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    sw_options_print(o, f);
    fclose(f);
    return buf;
}

START_TEST(test_print_shows_every_default)
{
    sw_options_t o;
    defaults(&o);
    char *s = print_to_string(&o);
    ck_assert_str_eq(s, "SPILLWAY_GPU_BUDGET=\n"
                        "SPILLWAY_HOST_BUDGET=6.25%\n"
                        "SPILLWAY_MIN_ALLOC=2MiB\n"
                        "SPILLWAY_CHUNK=auto\n"
                        "SPILLWAY_DISABLE=0\n"
                        "SPILLWAY_LOG=warn\n"
                        "SPILLWAY_LOG_FILE=\n"
                        "SPILLWAY_REPORT=\n"
                        "SPILLWAY_MEMINFO=physical\n"
                        "SPILLWAY_POLICY=learned\n"
                        "SPILLWAY_PREFETCH_BYTES=25%\n"
                        "SPILLWAY_REWRITE=1\n"
                        "SPILLWAY_STATS_DIR=\n");
    free(s);
}
END_TEST

START_TEST(test_print_output_parses_back_to_the_same_options)
{
    char *env[] = {"SPILLWAY_GPU_BUDGET=12.5%", "SPILLWAY_HOST_BUDGET=3000000",
                   "SPILLWAY_MIN_ALLOC=1536KiB", "SPILLWAY_CHUNK=3GiB", "SPILLWAY_DISABLE=true",
                   "SPILLWAY_LOG=DEBUG", "SPILLWAY_LOG_FILE=/tmp/l", "SPILLWAY_REPORT=r.json",
                   "SPILLWAY_MEMINFO=virtual", "SPILLWAY_POLICY=lru", "SPILLWAY_PREFETCH_BYTES=1GiB",
                   "SPILLWAY_REWRITE=off", "SPILLWAY_STATS_DIR=/tmp/s", NULL};
    sw_options_t a, b;
    ck_assert_int_eq(sw_options_parse(&a, env, NULL, 0, NULL, 0), 0);
    char *s = print_to_string(&a);
    ck_assert(strstr(s, "SPILLWAY_MIN_ALLOC=1536KiB\n") != NULL);
    ck_assert(strstr(s, "SPILLWAY_HOST_BUDGET=3000000\n") != NULL);
    ck_assert(strstr(s, "SPILLWAY_GPU_BUDGET=12.5%\n") != NULL);

    char *lines[16] = {0};
    int n = 0;
    char *save = NULL;
    for (char *l = strtok_r(s, "\n", &save); l && n < 15; l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    ck_assert_int_eq(n, 13); /* one line per option */
    ck_assert_int_eq(sw_options_parse(&b, lines, NULL, 0, NULL, 0), 0);
    /* parse starts from a zeroed struct, so padding compares equal too */
    ck_assert_mem_eq(&a, &b, sizeof a);
    free(s);
}
END_TEST

START_TEST(test_help_describes_every_option)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sw_options_help(f);
    fclose(f);
    static const char *const names[] = {"GPU_BUDGET", "HOST_BUDGET", "MIN_ALLOC", "CHUNK",
                                        "DISABLE", "LOG ", "LOG_FILE", "REPORT", "MEMINFO",
                                        "STATS_DIR"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "SPILLWAY_%s", names[i]);
        ck_assert_msg(strstr(buf, want), "%s missing from help", want);
    }
    ck_assert(strstr(buf, "(default: 6.25%)"));
    ck_assert(strstr(buf, "(default: none)"));
    free(buf);
}
END_TEST

/* The launcher and spillway(7) are made from sw_option_info: it must give
 * every entry of the table, in the order sw_options_print shows them, each
 * with a default the parser takes and the forms a bad value's message
 * names. */
START_TEST(test_option_info_walks_the_whole_table)
{
    char *printed = print_to_string(&(sw_options_t){0});
    sw_option_info_t o;
    size_t i = 0;
    const char *at = printed;
    for (; sw_option_info(i, &o); i++) {
        char line[80], env_entry[160], err[512];
        snprintf(line, sizeof line, "SPILLWAY_%s=", o.name);
        at = strstr(at, line);
        ck_assert_msg(at, "%s not printed, or out of order", line);
        ck_assert(o.help[0] && o.forms[0]);
        snprintf(env_entry, sizeof env_entry, "SPILLWAY_%s=%s", o.name, o.dflt);
        char *env[] = {env_entry, NULL};
        sw_options_t parsed;
        ck_assert_int_eq(sw_options_parse(&parsed, env, err, sizeof err, NULL, 0), 0);
        snprintf(env_entry, sizeof env_entry, "SPILLWAY_%s=\x01", o.name);
        ck_assert_int_eq(sw_options_parse(&parsed, env, err, sizeof err, NULL, 0),
                         strcmp(o.forms, "a path shorter than 1024 bytes") == 0 ? 0 : -1);
        if (err[0])
            ck_assert_msg(strstr(err, o.forms), "message of %s lacks its forms", o.name);
    }
    ck_assert_uint_gt(i, 0);
    ck_assert(!sw_option_info(i, &o)); /* and stays past the end */
    free(printed);
}
END_TEST

Suite *options_suite(void)
{
    Suite *s = suite_create("options");
    TCase *tc = tcase_create("defaults");
    tcase_add_test(tc, test_default_gpu_budget_is_unset);
    tcase_add_test(tc, test_default_host_budget_lets_eight_processes_pin_half_of_ram);
    tcase_add_test(tc, test_default_min_alloc_is_2mib);
    tcase_add_test(tc, test_default_chunk_is_32mib);
    tcase_add_test(tc, test_default_disable_is_off);
    tcase_add_test(tc, test_default_log_is_warn);
    tcase_add_test(tc, test_default_paths_are_empty);
    tcase_add_test(tc, test_default_meminfo_is_physical);
    tcase_add_test(tc, test_null_environment_gives_defaults);
    tcase_add_test(tc, test_other_variables_are_ignored);
    suite_add_tcase(s, tc);

    tc = tcase_create("values");
    tcase_add_test(tc, test_size_plain_integer_is_bytes);
    tcase_add_test(tc, test_size_accepts_every_multiplier_spelling);
    tcase_add_test(tc, test_size_largest_values_fit);
    tcase_add_test(tc, test_size_rejects_overflow);
    tcase_add_test(tc, test_size_rejects_malformed_values);
    tcase_add_test(tc, test_bool_accepts_every_word_in_any_case);
    tcase_add_test(tc, test_bool_rejects_other_words);
    suite_add_tcase(s, tc);

    tc = tcase_create("options");
    tcase_add_test(tc, test_gpu_budget_takes_a_size);
    tcase_add_test(tc, test_gpu_budget_takes_a_percentage);
    tcase_add_test(tc, test_gpu_budget_empty_means_picked);
    tcase_add_test(tc, test_gpu_budget_none_turns_it_off_and_prints_back);
    tcase_add_test(tc, test_percentages_accept_decimals_up_to_100);
    tcase_add_test(tc, test_percentages_outside_0_to_100_or_malformed_are_refused);
    tcase_add_test(tc, test_bad_gpu_budget_message_names_variable_value_and_forms);
    tcase_add_test(tc, test_gpu_budget_takes_a_per_device_list);
    tcase_add_test(tc, test_gpu_budget_list_may_give_every_other_device_an_amount);
    tcase_add_test(tc, test_bad_gpu_budget_lists_are_refused_with_the_forms);
    tcase_add_test(tc, test_gpu_budget_list_prints_back_to_the_same_options);
    tcase_add_test(tc, test_host_budget_empty_is_refused);
    tcase_add_test(tc, test_bad_value_message_escapes_what_is_not_printable);
    tcase_add_test(tc, test_percentages_are_kept_to_a_millionth_and_print_back);
    tcase_add_test(tc, test_min_alloc_takes_a_size_including_zero);
    tcase_add_test(tc, test_min_alloc_refuses_a_percentage);
    tcase_add_test(tc, test_chunk_takes_a_size);
    tcase_add_test(tc, test_chunk_takes_auto);
    tcase_add_test(tc, test_chunk_of_zero_is_refused);
    tcase_add_test(tc, test_size_overflow_is_refused_with_a_message);
    tcase_add_test(tc, test_negative_size_is_refused_with_a_message);
    tcase_add_test(tc, test_disable_takes_a_boolean);
    tcase_add_test(tc, test_bad_boolean_message_lists_the_words);
    tcase_add_test(tc, test_log_takes_each_level_in_any_case);
    tcase_add_test(tc, test_bad_log_level_message_lists_the_levels);
    tcase_add_test(tc, test_meminfo_takes_physical_or_virtual);
    tcase_add_test(tc, test_paths_are_copied);
    tcase_add_test(tc, test_path_of_1023_bytes_fits_and_1024_is_refused);
    tcase_add_test(tc, test_first_bad_value_is_reported_and_valid_ones_still_apply);
    tcase_add_test(tc, test_later_duplicate_wins);
    tcase_add_test(tc, test_small_message_buffers_are_not_overrun);
    suite_add_tcase(s, tc);

    tc = tcase_create("unknown");
    tcase_add_test(tc, test_unknown_variable_suggests_the_closest_name);
    tcase_add_test(tc, test_unknown_variable_far_from_every_name_gets_no_suggestion);
    tcase_add_test(tc, test_unknown_variable_suggestions_cover_other_typos);
    tcase_add_test(tc, test_unknown_variable_does_not_stop_known_ones);
    suite_add_tcase(s, tc);

    tc = tcase_create("resolve");
    tcase_add_test(tc, test_size_amount_resolves_to_its_bytes);
    tcase_add_test(tc, test_percent_amount_resolves_against_the_total);
    tcase_add_test(tc, test_percent_of_huge_totals_does_not_overflow);
    suite_add_tcase(s, tc);

    tc = tcase_create("print");
    tcase_add_test(tc, test_print_shows_every_default);
    tcase_add_test(tc, test_print_output_parses_back_to_the_same_options);
    tcase_add_test(tc, test_help_describes_every_option);
    tcase_add_test(tc, test_option_info_walks_the_whole_table);
    suite_add_tcase(s, tc);
    return s;
}

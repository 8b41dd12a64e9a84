/*
 * gen-format: writes spillway/_format.py, the Python module's view of the
 * public headers: the stats file's layout (spillway/stats.h) and the
 * control API's codes, flags and spillway_info_t (spillway.h). Generated
 * from the headers, with the compiler's own offsets, so the Python reader
 * cannot fall behind a new field or a new version of the format.
 */
#include <spillway.h>
#include <spillway/stats.h>

#include <stddef.h>
#include <stdio.h>

#define HDR(field) offsetof(spillway_stats_header_t, field)
#define INFO(field) {#field, offsetof(spillway_info_t, field), sizeof(((spillway_info_t *)0)->field)}

#define PEAK_GAUGE(name) offsetof(spillway_stats_file_t, name##_peak)
#define PEAK_COUNTER(name) 0
#define FIELD(kind, name, unit, help)                                                       \
    printf("    (\"%s\", \"%s\", %s, %zu, %zu),\n", #name, unit,                            \
           PEAK_##kind(name) ? "True" : "False", offsetof(spillway_stats_file_t, name),    \
           (size_t)PEAK_##kind(name));

int main(void)
{
    printf("# Written by python/gen-format.c from include/spillway.h and\n"
           "# include/spillway/stats.h at build time: do not edit.\n\n");
    printf("STATS_MAGIC = b\"%s\"\n", SPILLWAY_STATS_MAGIC);
    printf("STATS_VERSION = %d\nSTATS_SIZE = %zu\nSTATS_NFIELDS = %d\n", SPILLWAY_STATS_VERSION,
           sizeof(spillway_stats_file_t), SPILLWAY_STATS_NFIELDS);
    printf("STATS_HEADER_SIZE = %zu\n", sizeof(spillway_stats_header_t));
    printf("STATS_OFF_VERSION = %zu\nSTATS_OFF_SIZE = %zu\nSTATS_OFF_NFIELDS = %zu\n",
           HDR(version), HDR(size), HDR(nfields));
    printf("STATS_OFF_PID = %zu\nSTATS_OFF_START_TIME = %zu\nSTATS_OFF_COMM = %zu\n", HDR(pid),
           HDR(start_time), HDR(comm));
    printf("STATS_COMM_LEN = %d\nSTATS_OFF_SEQ = %zu\n", SPILLWAY_STATS_COMM_LEN, HDR(seq));
    printf("# (name, unit, gauge, offset of the value, offset of the peak or 0)\n"
           "STATS_FIELDS = (\n");
    SW_STATS_FIELDS(FIELD)
    printf(")\n\n");

    printf("API_VERSION = %d\n", SPILLWAY_API_VERSION);
    static const struct {
        const char *name;
        long long value;
    } codes[] = {
        {"OK", SPILLWAY_OK},
        {"ENOTLOADED", SPILLWAY_ENOTLOADED},
        {"EINVAL", SPILLWAY_EINVAL},
        {"ENOTTRACKED", SPILLWAY_ENOTTRACKED},
        {"EOVERLAP", SPILLWAY_EOVERLAP},
        {"ENOTSUP", SPILLWAY_ENOTSUP},
        {"EBUSY", SPILLWAY_EBUSY},
        {"EPARTIAL", SPILLWAY_EPARTIAL},
        {"HINT_NONE", SPILLWAY_HINT_NONE},
        {"HINT_KEEP_RESIDENT", SPILLWAY_HINT_KEEP_RESIDENT},
        {"HINT_NEVER_STREAM", SPILLWAY_HINT_NEVER_STREAM},
        {"HINT_STREAM", SPILLWAY_HINT_STREAM},
        {"HINT_READ_ONLY", SPILLWAY_HINT_READ_ONLY},
        {"INFO_DISABLED", SPILLWAY_INFO_DISABLED},
        {"INFO_TRACKING", SPILLWAY_INFO_TRACKING},
        {"INFO_LEARNED", SPILLWAY_INFO_LEARNED},
        {"INFO_REWRITE", SPILLWAY_INFO_REWRITE},
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        printf("%s = %lld\n", codes[i].name, codes[i].value);
    printf("BUDGET_KEEP = %llu\nBUDGET_NONE = %llu\nBUDGET_UNKNOWN = %llu\n",
           (unsigned long long)SPILLWAY_BUDGET_KEEP, (unsigned long long)SPILLWAY_BUDGET_NONE,
           (unsigned long long)SPILLWAY_BUDGET_UNKNOWN);

    static const struct {
        const char *name;
        size_t off, size;
    } info[] = {INFO(size),       INFO(api_version), INFO(stats_version), INFO(flags),
                INFO(gpu_budget), INFO(host_budget), INFO(min_alloc),     INFO(chunk)};
    printf("INFO_SIZE = %zu\n# spillway_info_t: (name, offset, bytes)\nINFO_FIELDS = (\n",
           sizeof(spillway_info_t));
    for (size_t i = 0; i < sizeof info / sizeof info[0]; i++)
        printf("    (\"%s\", %zu, %zu),\n", info[i].name, info[i].off, info[i].size);
    printf(")\n");
    return 0;
}

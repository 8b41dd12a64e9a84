/*
 * SIMGPU_REPORT: one JSON object written at exit (README.md lists the
 * fields). Written to a temporary file and renamed, so a reader never sees
 * half a report.
 */
#include "sg.h"

#include <stdio.h>
#include <string.h>

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

void sg_report_write(void)
{
    const char *path = SG->cfg.report;
    if (!*path)
        return;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        perror("simgpu: SIMGPU_REPORT");
        return;
    }
    sg_lock();
    sg_stats_t st = SG->st;
    sg_mem_stats(&st);
    uint64_t vt = SG->host_ns > SG->last_end_ns ? SG->host_ns : SG->last_end_ns;
    fprintf(f, "{\n");
#define F(name, v) fprintf(f, "  \"%s\": %llu,\n", name, (unsigned long long)(v))
    F("virtual_time_ns", vt);
    F("kernels", st.kernels);
    F("kernel_bytes_device", st.kernel_bytes_device);
    F("kernel_bytes_host", st.kernel_bytes_host);
    F("dma_h2d_bytes", st.dma_h2d_bytes);
    F("dma_d2h_bytes", st.dma_d2h_bytes);
    F("dma_d2d_bytes", st.dma_d2d_bytes);
    F("device_bytes", st.device_bytes);
    F("device_bytes_peak", st.device_bytes_peak);
    F("host_vmm_bytes_peak", st.host_vmm_bytes_peak);
    F("pinned_bytes_peak", st.pinned_bytes_peak);
    F("graph_launches", st.graph_launches);
    F("faults", st.faults);
    F("hazards", st.hazards);
#undef F
    fprintf(f, "  \"device_bytes_peak_by_device\": [");
    for (uint64_t d = 0; d < SG->cfg.devices; d++) {
        uint64_t bytes, peak;
        sg_mem_device_stats((int)d, &bytes, &peak);
        fprintf(f, "%s%llu", d ? ", " : "", (unsigned long long)peak);
    }
    fprintf(f, "],\n");
    fprintf(f, "  \"hazard_list\": [");
    for (uint64_t i = 0; i < st.hazards && i < SG_MAX_HAZARD_TEXT; i++) {
        fprintf(f, "%s\n    ", i ? "," : "");
        json_string(f, SG->hazard_text[i] ? SG->hazard_text[i] : "?");
    }
    fprintf(f, "],\n  \"calls\": {");
    bool first = true;
    for (int i = 0; i < SG_FN_COUNT; i++)
        if (st.calls[i]) {
            fprintf(f, "%s\n    \"%s\": %llu", first ? "" : ",", sg_fn_name((sg_fn_t)i),
                    (unsigned long long)st.calls[i]);
            first = false;
        }
    fprintf(f, "\n  }\n}\n");
    sg_unlock();
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        perror("simgpu: SIMGPU_REPORT");
}

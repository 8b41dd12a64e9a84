/*
 * test_report.c: the JSON report written at exit (SIMGPU_REPORT) has every
 * documented field, and its counts match a workload whose every byte is
 * known.
 */
#include "sgt.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#define MIB SGT_MIB

static CUdeviceptr vmm_range(CUmemLocationType type, size_t size,
                             CUmemGenericAllocationHandle *h)
{
    CUdeviceptr p = 0;
    SGT_OK(cuMemAddressReserve(&p, size, 0, 0, 0));
    CUmemAllocationProp prop = sgt_prop(type);
    SGT_OK(cuMemCreate(h, size, &prop, 0));
    SGT_OK(cuMemMap(p, size, 0, *h, 0));
    SGT_OK(sgt_set_access(p, size));
    return p;
}

/* Known workload:
 *   device: a, b (cuMemAlloc 2 MiB each) + a 2 MiB device handle: peak 6 MiB,
 *           at exit only a (b freed, handle unmapped and released);
 *   host VMM: one 2 MiB handle; pinned: 3 MiB;
 *   H2D 2 MiB + 4096; D2H 4096; D2D 2 MiB;
 *   kernels: fill a (2 MiB device), fill the host range (2 MiB host), and a
 *   captured fill of b (2 MiB device) replayed by one cuGraphLaunch. */
static void workload_child(void *arg)
{
    sgt_init();
    CUdeviceptr a, b;
    SGT_OK(cuMemAlloc(&a, 2 * MIB));
    SGT_OK(cuMemAlloc(&b, 2 * MIB));
    void *h = calloc(1, 2 * MIB);
    SGT_OK(cuMemcpyHtoD(a, h, 2 * MIB));
    SGT_OK(cuMemcpyHtoD(b, h, 4096));
    void *pinned = NULL;
    SGT_OK(cuMemAllocHost(&pinned, 3 * MIB));
    CUmemGenericAllocationHandle hdev, hhost;
    CUdeviceptr dr = vmm_range(CU_MEM_LOCATION_TYPE_DEVICE, 2 * MIB, &hdev);
    CUdeviceptr hr = vmm_range(CU_MEM_LOCATION_TYPE_HOST, 2 * MIB, &hhost);

    sgt_fill_u32(NULL, a, 1, 2 * MIB / 4);
    sgt_fill_u32(NULL, hr, 2, 2 * MIB / 4);

    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    SGT_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    sgt_fill_u32(s, b, 3, 2 * MIB / 4);
    CUgraph g;
    SGT_OK(cuStreamEndCapture(s, &g));
    CUgraphExec ge;
    SGT_OK(cuGraphInstantiateWithFlags(&ge, g, 0));
    SGT_OK(cuGraphLaunch(ge, s));
    SGT_OK(cuStreamSynchronize(s));

    SGT_OK(cuMemcpyDtoD(dr, a, 2 * MIB));
    SGT_OK(cuMemcpyDtoH(pinned, b, 4096));
    SGT_OK(cuCtxSynchronize());
    ck_assert_uint_eq(((uint32_t *)pinned)[1023], 3);

    SGT_OK(cuMemUnmap(dr, 2 * MIB));
    SGT_OK(cuMemRelease(hdev));
    SGT_OK(cuMemFree(b));
    free(h);
}

static char *run_workload(void)
{
    char path[256];
    sgt_report_env(path, sizeof path, "report");
    sgt_child_ok(workload_child, NULL);
    return sgt_report_read(path);
}

static const char *const fields[] = {
    "virtual_time_ns", "kernels",           "kernel_bytes_device",
    "kernel_bytes_host", "dma_h2d_bytes",   "dma_d2h_bytes",
    "dma_d2d_bytes",   "device_bytes",      "device_bytes_peak",
    "host_vmm_bytes_peak", "pinned_bytes_peak", "graph_launches",
    "hazards",         "faults"};

START_TEST(report_has_every_field)
{
    char *json = run_workload();
    const char *p = json;
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
        p++;
    ck_assert_msg(*p == '{', "report is not a JSON object");
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        double v;
        ck_assert_msg(sgt_json_num(json, fields[i], &v),
                      "report lacks numeric \"%s\"", fields[i]);
    }
    char *list = sgt_json_array(json, "hazard_list");
    ck_assert_msg(list != NULL, "report lacks the hazard_list array");
    free(list);
    ck_assert_msg(sgt_json_has(json, "calls"), "report lacks \"calls\"");
    ck_assert_msg(strstr(json, "\"calls\"") != NULL &&
                      strchr(strstr(json, "\"calls\""), '{') != NULL,
                  "\"calls\" is not an object");
    free(json);
}
END_TEST

START_TEST(report_counts_match_workload)
{
    char *json = run_workload();
    ck_assert_uint_gt(sgt_json_u64(json, "virtual_time_ns"), 0);
    ck_assert_uint_eq(sgt_json_u64(json, "kernels"), 3);
    ck_assert_uint_eq(sgt_json_u64(json, "graph_launches"), 1);
    ck_assert_uint_eq(sgt_json_u64(json, "dma_h2d_bytes"), 2 * MIB + 4096);
    ck_assert_uint_eq(sgt_json_u64(json, "dma_d2h_bytes"), 4096);
    ck_assert_uint_eq(sgt_json_u64(json, "dma_d2d_bytes"), 2 * MIB);
    ck_assert_uint_eq(sgt_json_u64(json, "hazards"), 0);
    ck_assert_uint_eq(sgt_json_u64(json, "faults"), 0);
    free(json);
}
END_TEST

START_TEST(report_kernel_bytes_by_backing)
{
    char *json = run_workload();
    ck_assert_uint_eq(sgt_json_u64(json, "kernel_bytes_device"), 4 * MIB);
    ck_assert_uint_eq(sgt_json_u64(json, "kernel_bytes_host"), 2 * MIB);
    free(json);
}
END_TEST

START_TEST(report_memory_use_and_peaks)
{
    char *json = run_workload();
    ck_assert_uint_eq(sgt_json_u64(json, "device_bytes"), 2 * MIB);
    ck_assert_uint_eq(sgt_json_u64(json, "device_bytes_peak"), 6 * MIB);
    ck_assert_uint_eq(sgt_json_u64(json, "host_vmm_bytes_peak"), 2 * MIB);
    ck_assert_uint_eq(sgt_json_u64(json, "pinned_bytes_peak"), 3 * MIB);
    free(json);
}
END_TEST

START_TEST(report_counts_calls_by_base_name)
{
    char *json = run_workload();
    char *calls = strstr(json, "\"calls\"");
    ck_assert_ptr_nonnull(calls);
    /* cuMemAlloc_v2 counts as cuMemAlloc; the captured launch is a call. */
    ck_assert_uint_eq(sgt_json_u64(calls, "cuMemAlloc"), 2);
    ck_assert_uint_eq(sgt_json_u64(calls, "cuMemcpyHtoD"), 2);
    ck_assert_uint_eq(sgt_json_u64(calls, "cuLaunchKernel"), 3);
    ck_assert_uint_eq(sgt_json_u64(calls, "cuGraphLaunch"), 1);
    ck_assert_uint_eq(sgt_json_u64(calls, "cuMemFree"), 1);
    ck_assert_msg(!sgt_json_has(calls, "cuMemAlloc_v2"),
                  "calls are not keyed by base name");
    ck_assert_msg(!sgt_json_has(calls, "cuLaunchKernelEx"),
                  "calls lists a function that was never called");
    free(json);
}
END_TEST

static void idle_child(void *arg)
{
    sgt_init();
}

START_TEST(report_written_for_idle_program)
{
    char path[256];
    sgt_report_env(path, sizeof path, "idle");
    sgt_child_ok(idle_child, NULL);
    char *json = sgt_report_read(path);
    ck_assert_uint_eq(sgt_json_u64(json, "kernels"), 0);
    ck_assert_uint_eq(sgt_json_u64(json, "device_bytes_peak"), 0);
    ck_assert_uint_eq(sgt_json_u64(json, "graph_launches"), 0);
    free(json);
}
END_TEST

static void host_copy_child(void *arg)
{
    sgt_init();
    CUmemGenericAllocationHandle h1, h2;
    CUdeviceptr a = vmm_range(CU_MEM_LOCATION_TYPE_HOST, 2 * MIB, &h1);
    CUdeviceptr b = vmm_range(CU_MEM_LOCATION_TYPE_HOST, 2 * MIB, &h2);
    SGT_OK(cuMemcpyDtoD(b, a, 2 * MIB));
    SGT_OK(cuCtxSynchronize());
}

START_TEST(report_host_to_host_copy_counts_as_d2h)
{
    char path[256];
    sgt_report_env(path, sizeof path, "h2h");
    sgt_child_ok(host_copy_child, NULL);
    char *json = sgt_report_read(path);
    ck_assert_uint_eq(sgt_json_u64(json, "dma_d2h_bytes"), 2 * MIB);
    ck_assert_uint_eq(sgt_json_u64(json, "dma_d2d_bytes"), 0);
    ck_assert_uint_eq(sgt_json_u64(json, "dma_h2d_bytes"), 0);
    free(json);
}
END_TEST

typedef CUresult (*launch_fn_t)(CUfunction, unsigned, unsigned, unsigned,
                                unsigned, unsigned, unsigned, unsigned,
                                CUstream, void **, void **);

static void ptsz_child(void *arg)
{
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, 4096));
    sgt_fill_u32(NULL, d, 1, 1024);
    launch_fn_t ptsz = (launch_fn_t)dlsym(RTLD_DEFAULT, "cuLaunchKernel_ptsz");
    ck_assert_ptr_nonnull((void *)ptsz);
    uint32_t v = 2;
    uint64_t n = 1024;
    void *params[] = {&d, &v, &n};
    SGT_OK(ptsz(sgt_func("sg_fill_u32"), 1, 1, 1, 1, 1, 1, 0, NULL, params,
                NULL));
    SGT_OK(cuCtxSynchronize());
}

START_TEST(report_counts_ptsz_calls_under_base_name)
{
    char path[256];
    sgt_report_env(path, sizeof path, "ptsz");
    sgt_child_ok(ptsz_child, NULL);
    char *json = sgt_report_read(path);
    char *calls = strstr(json, "\"calls\"");
    ck_assert_ptr_nonnull(calls);
    ck_assert_uint_eq(sgt_json_u64(calls, "cuLaunchKernel"), 2);
    ck_assert_msg(!sgt_json_has(calls, "cuLaunchKernel_ptsz"),
                  "calls has a _ptsz key");
    ck_assert_uint_eq(sgt_json_u64(json, "kernels"), 2);
    free(json);
}
END_TEST

Suite *report_suite(void)
{
    Suite *s = suite_create("report");
    sgt_case(s, report_has_every_field);
    sgt_case(s, report_counts_match_workload);
    sgt_case(s, report_kernel_bytes_by_backing);
    sgt_case(s, report_memory_use_and_peaks);
    sgt_case(s, report_counts_calls_by_base_name);
    sgt_case(s, report_written_for_idle_program);
    sgt_case(s, report_host_to_host_copy_counts_as_d2h);
    sgt_case(s, report_counts_ptsz_calls_under_base_name);
    return s;
}

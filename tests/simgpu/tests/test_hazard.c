/*
 * test_hazard.c: unmapping or freeing memory that queued work still uses is
 * recorded as a hazard naming the call and the operation; doing the same
 * after a synchronize, or through cuMemFree (which synchronizes), is not.
 * Two streams reaching the same bytes, one writing, with no order between
 * them, are a hazard too (a race); ordered by an event or by the host, or
 * both only reading, or writing different bytes, they are not. Freeing
 * memory exported as a dma-buf whose descriptor is still open is one.
 */
#include "sgt.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define G (2 * SGT_MIB)

static atomic_int gate; /* 1: the blocking host function may return */
static atomic_int host_fn_done;

/* Blocks its stream until the test opens the gate (or 5 s pass, so that a
 * simgpu that serialises host functions with API calls cannot hang us). */
static void CUDA_CB wait_gate(void *arg)
{
    for (int i = 0; i < 5000 && !atomic_load(&gate); i++)
        sgt_sleep_ms(1);
}

static void CUDA_CB sleep_200ms(void *arg)
{
    sgt_sleep_ms(200);
    atomic_store(&host_fn_done, 1);
}

static CUdeviceptr mapped(size_t size)
{
    CUdeviceptr p = 0;
    SGT_OK(cuMemAddressReserve(&p, size, 0, 0, 0));
    CUmemAllocationProp prop = sgt_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    CUmemGenericAllocationHandle h;
    SGT_OK(cuMemCreate(&h, size, &prop, 0));
    SGT_OK(cuMemMap(p, size, 0, h, 0));
    SGT_OK(sgt_set_access(p, size));
    return p;
}

static void unmap_queued_child(void *arg)
{
    sgt_init();
    CUdeviceptr p = mapped(G);
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    atomic_store(&gate, 0);
    SGT_OK(cuLaunchHostFunc(s, wait_gate, NULL));
    sgt_fill_u32(s, p, 5, G / 4);
    /* The kernel is queued behind the host function: it still uses p. */
    SGT_OK(cuMemUnmap(p, G));
    atomic_store(&gate, 1);
    (void)cuStreamSynchronize(s); /* the kernel now faults; not our point */
}

START_TEST(hazard_unmap_under_queued_kernel_is_recorded)
{
    char path[256];
    sgt_report_env(path, sizeof path, "hazard");
    sgt_child_ok(unmap_queued_child, NULL);
    char *json = sgt_report_read(path);
    ck_assert_uint_ge(sgt_json_u64(json, "hazards"), 1);
    char *list = sgt_json_array(json, "hazard_list");
    ck_assert_msg(list != NULL, "no hazard_list array in %s", json);
    ck_assert_msg(strstr(list, "cuMemUnmap") != NULL,
                  "hazard_list does not name cuMemUnmap: %s", list);
    ck_assert_msg(strstr(list, "sg_fill_u32") != NULL,
                  "hazard_list does not name the kernel: %s", list);
    free(list);
    free(json);
}
END_TEST

static void unmap_after_sync_child(void *arg)
{
    sgt_init();
    CUdeviceptr p = mapped(G);
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    atomic_store(&gate, 1);
    SGT_OK(cuLaunchHostFunc(s, wait_gate, NULL));
    sgt_fill_u32(s, p, 5, G / 4);
    SGT_OK(cuStreamSynchronize(s));
    SGT_OK(cuMemUnmap(p, G));
    SGT_OK(cuCtxSynchronize());
}

START_TEST(hazard_none_when_synced_before_unmap)
{
    char path[256];
    sgt_report_env(path, sizeof path, "clean");
    sgt_child_ok(unmap_after_sync_child, NULL);
    char *json = sgt_report_read(path);
    ck_assert_uint_eq(sgt_json_u64(json, "hazards"), 0);
    ck_assert_uint_eq(sgt_json_u64(json, "faults"), 0);
    char *list = sgt_json_array(json, "hazard_list");
    ck_assert_msg(list != NULL, "no hazard_list array in %s", json);
    ck_assert_msg(strstr(list, "\"") == NULL, "hazard_list not empty: %s",
                  list);
    free(list);
    free(json);
}
END_TEST

static void free_queued_child(void *arg)
{
    sgt_init();
    CUdeviceptr d;
    SGT_OK(cuMemAlloc(&d, SGT_MIB));
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    atomic_store(&host_fn_done, 0);
    SGT_OK(cuLaunchHostFunc(s, sleep_200ms, NULL));
    sgt_fill_u32(s, d, 5, SGT_MIB / 4);
    /* cuMemFree synchronizes the device first, as the real one does. */
    SGT_OK(cuMemFree(d));
    ck_assert_int_eq(atomic_load(&host_fn_done), 1);
}

START_TEST(hazard_none_for_free_of_busy_memory)
{
    char path[256];
    sgt_report_env(path, sizeof path, "free");
    sgt_child_ok(free_queued_child, NULL);
    char *json = sgt_report_read(path);
    ck_assert_uint_eq(sgt_json_u64(json, "hazards"), 0);
    ck_assert_uint_eq(sgt_json_u64(json, "faults"), 0);
    free(json);
}
END_TEST

/* Unmap p (itself a hazard) under a queued kernel, then make `call` on the
 * now unmapped handle or reservation while the kernel is still queued. */
static void after_unmap_child(void *arg)
{
    const char *call = arg;
    sgt_init();
    CUdeviceptr p = 0;
    SGT_OK(cuMemAddressReserve(&p, G, 0, 0, 0));
    CUmemAllocationProp prop = sgt_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    CUmemGenericAllocationHandle h;
    SGT_OK(cuMemCreate(&h, G, &prop, 0));
    SGT_OK(cuMemMap(p, G, 0, h, 0));
    SGT_OK(sgt_set_access(p, G));
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    atomic_store(&gate, 0);
    SGT_OK(cuLaunchHostFunc(s, wait_gate, NULL));
    sgt_fill_u32(s, p, 5, G / 4);
    SGT_OK(cuMemUnmap(p, G));
    if (strcmp(call, "cuMemRelease") == 0)
        SGT_OK(cuMemRelease(h));
    else
        SGT_OK(cuMemAddressFree(p, G));
    atomic_store(&gate, 1);
    (void)cuStreamSynchronize(s);
}

static void expect_hazard_named(const char *call)
{
    char path[256];
    sgt_report_env(path, sizeof path, call);
    sgt_child_ok(after_unmap_child, (void *)call);
    char *json = sgt_report_read(path);
    ck_assert_uint_ge(sgt_json_u64(json, "hazards"), 2);
    char *list = sgt_json_array(json, "hazard_list");
    ck_assert_msg(list != NULL, "no hazard_list array");
    ck_assert_msg(strstr(list, call) != NULL, "hazard_list does not name %s: %s",
                  call, list);
    free(list);
    free(json);
}

START_TEST(hazard_address_free_under_queued_kernel_is_recorded)
{
    expect_hazard_named("cuMemAddressFree");
}
END_TEST

START_TEST(hazard_release_under_queued_kernel_is_recorded)
{
    /* README: "cuMemRelease of an unmapped handle ... that a queued or
     * running operation still references" is a hazard. */
    expect_hazard_named("cuMemRelease");
}
END_TEST

#define MANY 70

static void many_hazards_child(void *arg)
{
    sgt_init();
    CUdeviceptr p = 0;
    SGT_OK(cuMemAddressReserve(&p, MANY * G, 0, 0, 0));
    CUmemAllocationProp prop = sgt_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    for (int i = 0; i < MANY; i++) {
        CUmemGenericAllocationHandle h;
        SGT_OK(cuMemCreate(&h, G, &prop, 0));
        SGT_OK(cuMemMap(p + (size_t)i * G, G, 0, h, 0));
    }
    SGT_OK(sgt_set_access(p, MANY * G));
    CUstream s;
    SGT_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    atomic_store(&gate, 0);
    SGT_OK(cuLaunchHostFunc(s, wait_gate, NULL));
    sgt_fill_u32(s, p, 5, MANY * G / 4);
    for (int i = 0; i < MANY; i++)
        SGT_OK(cuMemUnmap(p + (size_t)i * G, G));
    atomic_store(&gate, 1);
    (void)cuStreamSynchronize(s);
}

static int count_strings(const char *array)
{
    int n = 0;
    bool in = false;
    for (const char *p = array; *p; p++) {
        if (in && *p == '\\' && p[1]) {
            p++;
        } else if (*p == '"') {
            in = !in;
            n += in;
        }
    }
    return n;
}

START_TEST(hazard_list_keeps_the_first_64)
{
    char path[256];
    sgt_report_env(path, sizeof path, "many");
    sgt_child_ok(many_hazards_child, NULL);
    char *json = sgt_report_read(path);
    ck_assert_uint_eq(sgt_json_u64(json, "hazards"), MANY);
    char *list = sgt_json_array(json, "hazard_list");
    ck_assert_ptr_nonnull(list);
    ck_assert_int_eq(count_strings(list), 64);
    free(list);
    free(json);
}
END_TEST

/* ---- races: two streams reaching the same bytes, one writing ---- */

enum { RACE_UNORDERED, RACE_EVENT, RACE_HOST_SYNC, RACE_READ_READ, RACE_DISJOINT, RACE_CASES };
static const char *const race_case_name[RACE_CASES] = {
    "unordered copy then read", "ordered by an event", "ordered by a host sync",
    "two reads", "writes to disjoint halves"};

/* One handle mapped at two addresses, so that only its physical bytes
 * can tell that a copy through p and a kernel through q meet. */
static void race_child(void *arg)
{
    int which = (int)(intptr_t)arg;
    sgt_init();
    CUdeviceptr p = 0, q = 0, out;
    SGT_OK(cuMemAddressReserve(&p, G, 0, 0, 0));
    SGT_OK(cuMemAddressReserve(&q, G, 0, 0, 0));
    CUmemAllocationProp prop = sgt_prop(CU_MEM_LOCATION_TYPE_DEVICE);
    CUmemGenericAllocationHandle h;
    SGT_OK(cuMemCreate(&h, G, &prop, 0));
    SGT_OK(cuMemMap(p, G, 0, h, 0));
    SGT_OK(cuMemMap(q, G, 0, h, 0));
    SGT_OK(sgt_set_access(p, G));
    SGT_OK(sgt_set_access(q, G));
    SGT_OK(cuMemAlloc(&out, 16));
    void *pin;
    SGT_OK(cuMemAllocHost(&pin, G));
    memset(pin, 7, G);
    CUstream a, b;
    CUevent e;
    SGT_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    SGT_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    SGT_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    switch (which) {
    case RACE_UNORDERED:
    case RACE_EVENT:
    case RACE_HOST_SYNC:
        SGT_OK(cuMemcpyHtoDAsync(p, pin, G, a));
        if (which == RACE_EVENT) {
            SGT_OK(cuEventRecord(e, a));
            SGT_OK(cuStreamWaitEvent(b, e, 0));
        } else if (which == RACE_HOST_SYNC) {
            SGT_OK(cuStreamSynchronize(a));
        }
        sgt_checksum(b, q, G, out);
        break;
    case RACE_READ_READ:
        sgt_checksum(a, p, G, out);
        sgt_checksum(b, q, G, out + 8);
        break;
    case RACE_DISJOINT:
        SGT_OK(cuMemcpyHtoDAsync(p, pin, G / 2, a));
        SGT_OK(cuMemcpyHtoDAsync(q + G / 2, pin, G / 2, b));
        break;
    }
    SGT_OK(cuCtxSynchronize());
}

START_TEST(hazard_race_only_when_unordered)
{
    char path[256];
    sgt_report_env(path, sizeof path, "race");
    sgt_child_ok(race_child, (void *)(intptr_t)_i);
    char *json = sgt_report_read(path);
    uint64_t n = sgt_json_u64(json, "hazards");
    if (_i == RACE_UNORDERED) {
        ck_assert_msg(n == 1, "%s: %llu hazards, want 1", race_case_name[_i],
                      (unsigned long long)n);
        char *list = sgt_json_array(json, "hazard_list");
        ck_assert_msg(list && strstr(list, "race") && strstr(list, "sg_checksum_u64") &&
                          strstr(list, "cuMemcpyHtoDAsync"),
                      "the hazard does not name the race and both ops: %s", list ? list : json);
        free(list);
    } else {
        ck_assert_msg(n == 0, "%s: %llu hazards, want none: %s", race_case_name[_i],
                      (unsigned long long)n, json);
    }
    free(json);
}
END_TEST

/* Frees memory exported as a dma-buf, its descriptor closed first when
 * arg says so. */
static void free_dmabuf_child(void *arg)
{
    sgt_init();
    CUdeviceptr p;
    int fd = -1;
    SGT_OK(cuMemAlloc(&p, G));
    SGT_OK(cuMemGetHandleForAddressRange(&fd, p, G, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
    ck_assert_int_ge(fd, 0);
    if (*(const bool *)arg)
        close(fd);
    SGT_OK(cuMemFree(p));
}

START_TEST(hazard_free_of_an_open_dmabuf_only)
{
    for (int closed = 0; closed < 2; closed++) {
        char path[256];
        bool arg = closed;
        sgt_report_env(path, sizeof path, closed ? "dmabuf-closed" : "dmabuf-open");
        sgt_child_ok(free_dmabuf_child, &arg);
        char *json = sgt_report_read(path);
        ck_assert_uint_eq(sgt_json_u64(json, "hazards"), closed ? 0 : 1);
        char *list = sgt_json_array(json, "hazard_list");
        ck_assert_msg(list != NULL, "no hazard_list array in %s", json);
        ck_assert_msg(closed || strstr(list, "dma-buf") != NULL, "hazard_list: %s", list);
        free(list);
        free(json);
    }
}
END_TEST

Suite *hazard_suite(void)
{
    Suite *s = suite_create("hazard");
    sgt_case(s, hazard_unmap_under_queued_kernel_is_recorded);
    sgt_case(s, hazard_none_when_synced_before_unmap);
    sgt_case(s, hazard_none_for_free_of_busy_memory);
    sgt_case(s, hazard_address_free_under_queued_kernel_is_recorded);
    sgt_case(s, hazard_release_under_queued_kernel_is_recorded);
    sgt_case(s, hazard_list_keeps_the_first_64);
    sgt_case(s, hazard_free_of_an_open_dmabuf_only);
    sgt_loop_case(s, hazard_race_only_when_unordered, 0, RACE_CASES);
    return s;
}

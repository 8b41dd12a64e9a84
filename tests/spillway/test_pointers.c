/*
 * test_pointers.c: pointer queries on tracked memory (swt-ptrs, ptrs.c).
 * simgpu answers cuMemGetAddressRange for a VMM mapping with the mapping,
 * which under spillway is one chunk; the application asked for one block
 * and must keep seeing that block, wherever its chunks are, and of the
 * size it asked for, even one no page divides. The runs use
 * 2 MiB chunks and a 4 MiB GPU budget, so that one of the two allocations
 * is on the host (demotions > 0, no promotion) when the queries run.
 */
#include "swt.h"

static void ptrs(bool preload, const char *what)
{
    const char *argv[] = {swt_path("SWT_PTRS"), what, NULL};
    const char *env[] = {"SIMGPU_MEM=1GiB", "SPILLWAY_CHUNK=2MiB", "SPILLWAY_GPU_BUDGET=4MiB",
                         NULL};
    swt_run_t r;
    swt_run(&r, preload, env, argv);
    swt_assert_status(&r, 0);
    ck_assert_msg(swt_file_has(r.out, "ptrs: ok"), "%s", swt_describe(&r));
    swt_assert_clean(&r);
    if (!preload)
        return;
    /* The queries met a chunk on the host: one was demoted, none came
     * back before the queries (nothing promotes after the last launch). */
    ck_assert_msg(swt_sw(&r, "demotions") > 0, "nothing demoted: %s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "promotions") == 0, "%s", swt_describe(&r));
    ck_assert_msg(swt_sw(&r, "tracked_allocs_peak") == 3, "%s", swt_describe(&r));
}

START_TEST(address_range_of_interior_pointer_is_the_allocation)
{
    ptrs(true, "range");
}
END_TEST

START_TEST(memory_type_of_demoted_chunk_is_device)
{
    ptrs(true, "type");
}
END_TEST

START_TEST(range_attributes_of_interior_pointer_are_the_allocation)
{
    ptrs(true, "attr-range");
}
END_TEST

/* The reference: the program's expectations are the plain driver's. */
START_TEST(plain_driver_gives_the_same_answers)
{
    ptrs(false, "range");
    ptrs(false, "type");
    ptrs(false, "attr-range");
}
END_TEST

Suite *pointers_suite(void)
{
    Suite *s = suite_create("pointers");
    TCase *tc = tcase_create("queries");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, address_range_of_interior_pointer_is_the_allocation);
    tcase_add_test(tc, memory_type_of_demoted_chunk_is_device);
    tcase_add_test(tc, range_attributes_of_interior_pointer_are_the_allocation);
    tcase_add_test(tc, plain_driver_gives_the_same_answers);
    suite_add_tcase(s, tc);
    return s;
}

/* Graph recordings (src/replay.c): which capture's launches are kept,
 * which graphs and executable graphs share them, and what a launch keeps.
 * No driver: the CUDA handles are only keys. */
#include "residency.h"
#include "unit.h"

#define GRAPH(n) ((CUgraph)(uintptr_t)(0x1000 + (n)))
#define EXEC(n) ((CUgraphExec)(uintptr_t)(0x2000 + (n)))

static bool keep_all(uint64_t word, void *arg)
{
    (void)word;
    (void)arg;
    return true;
}

/* Keeps the words below *arg. */
static bool keep_below(uint64_t word, void *arg)
{
    return word < *(const uint64_t *)arg;
}

/* One launch of the capture in progress, with the words given. */
static void launch(const uint64_t *words, int n)
{
    for (int i = 0; i < n; i++)
        sw_record_word(words[i]);
    sw_record_launch(keep_all, NULL);
}

/* Captures two launches (words 10, 11; then 20) into graph g. */
static void capture_two(CUgraph g)
{
    const uint64_t a[] = {10, 11}, b[] = {20};
    sw_record_begun(CUDA_SUCCESS);
    ck_assert(sw_recording_on());
    launch(a, 2);
    launch(b, 1);
    sw_record_over(g);
    ck_assert(!sw_recording_on());
}

/* The recording an executable graph made from graph n (instantiated with
 * the driver's answer res) replays, held; NULL if none. */
static sw_recording_t *instantiate(int n, CUresult res)
{
    CUgraphExec e = EXEC(n);
    sw_graph_instantiated(res, &e, GRAPH(n));
    return sw_recording_of(e);
}

START_TEST(replay_an_executable_graph_replays_its_capture)
{
    capture_two(GRAPH(1));
    CUgraphExec e = EXEC(1);
    ck_assert_int_eq(sw_graph_instantiated(CUDA_SUCCESS, &e, GRAPH(1)), CUDA_SUCCESS);
    sw_recording_t *r = sw_recording_of(e);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(sw_recording_launches(r), 2);
    uint32_t n;
    const uint64_t *w = sw_recording_words(r, 0, &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(w[0], 10);
    ck_assert_uint_eq(w[1], 11);
    w = sw_recording_words(r, 1, &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(w[0], 20);
    sw_recording_put(r);
    /* An executable graph of another graph, or none, has no recording. */
    ck_assert_ptr_null(sw_recording_of(EXEC(2)));
}
END_TEST

START_TEST(replay_outlives_its_graph_until_the_last_holder)
{
    capture_two(GRAPH(1));
    CUgraphExec e = EXEC(1);
    sw_graph_instantiated(CUDA_SUCCESS, &e, GRAPH(1));
    sw_recording_t *held = sw_recording_of(e);
    /* The graph goes: its executable graph still replays the capture. */
    ck_assert_int_eq(sw_graph_gone(CUDA_SUCCESS, GRAPH(1)), CUDA_SUCCESS);
    sw_recording_t *r = sw_recording_of(e);
    ck_assert_ptr_eq(r, held);
    sw_recording_put(r);
    /* A failed destroy forgets nothing. */
    ck_assert_int_eq(sw_exec_gone(CUDA_ERROR_INVALID_VALUE, e), CUDA_ERROR_INVALID_VALUE);
    r = sw_recording_of(e);
    ck_assert_ptr_eq(r, held);
    sw_recording_put(r);
    sw_exec_gone(CUDA_SUCCESS, e);
    ck_assert_ptr_null(sw_recording_of(e));
    /* A replay learning from it still reads it (ASan would see a free). */
    ck_assert_uint_eq(sw_recording_launches(held), 2);
    sw_recording_put(held);
}
END_TEST

START_TEST(replay_two_captures_at_once_keep_nothing)
{
    const uint64_t a[] = {10};
    sw_record_begun(CUDA_SUCCESS);
    launch(a, 1);
    sw_record_begun(CUDA_SUCCESS); /* a second capture begins */
    launch(a, 1);
    sw_record_over(GRAPH(2));
    sw_record_over(GRAPH(1));
    ck_assert_ptr_null(instantiate(1, CUDA_SUCCESS));
    /* The next capture alone is kept again. */
    capture_two(GRAPH(3));
    sw_recording_t *r = instantiate(3, CUDA_SUCCESS);
    ck_assert_ptr_nonnull(r);
    sw_recording_put(r);
}
END_TEST

START_TEST(replay_keeps_only_what_a_launch_says)
{
    const uint64_t words[] = {5, 50, 6};
    uint64_t below = 10;
    sw_record_begun(CUDA_SUCCESS);
    for (int i = 0; i < 3; i++)
        sw_record_word(words[i]);
    sw_record_launch(keep_below, &below);
    sw_record_over(GRAPH(1));
    sw_recording_t *r = instantiate(1, CUDA_SUCCESS);
    ck_assert_ptr_nonnull(r);
    uint32_t n;
    const uint64_t *w = sw_recording_words(r, 0, &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(w[0], 5);
    ck_assert_uint_eq(w[1], 6);
    sw_recording_put(r);
}
END_TEST

START_TEST(replay_a_failed_or_empty_capture_keeps_nothing)
{
    sw_record_begun(CUDA_ERROR_INVALID_VALUE); /* never began */
    ck_assert(!sw_recording_on());
    /* A capture that failed at its end (no graph), and one that pointed
     * at nothing tracked, leave no recording. */
    const uint64_t a[] = {10};
    sw_record_begun(CUDA_SUCCESS);
    launch(a, 1);
    sw_record_over(NULL);
    sw_record_begun(CUDA_SUCCESS);
    launch(NULL, 0);
    sw_record_over(GRAPH(1));
    ck_assert_ptr_null(instantiate(1, CUDA_SUCCESS));
    /* A failed instantiation binds nothing. */
    capture_two(GRAPH(2));
    ck_assert_ptr_null(instantiate(2, CUDA_ERROR_OUT_OF_MEMORY));
}
END_TEST

Suite *replay_suite(void)
{
    Suite *s = suite_create("replay");
    TCase *tc = tcase_create("replay");
    tcase_add_test(tc, replay_an_executable_graph_replays_its_capture);
    tcase_add_test(tc, replay_outlives_its_graph_until_the_last_holder);
    tcase_add_test(tc, replay_two_captures_at_once_keep_nothing);
    tcase_add_test(tc, replay_keeps_only_what_a_launch_says);
    tcase_add_test(tc, replay_a_failed_or_empty_capture_keeps_nothing);
    suite_add_tcase(s, tc);
    return s;
}

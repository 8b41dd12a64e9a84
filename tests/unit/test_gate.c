/*
 * The gate (core/gate.c): exclusion, reentrancy on one thread, and
 * waiters that sleep instead of polling. Threads stand for hooks on
 * different application threads. A deadlock shows as a thread that does
 * not finish within 10 s (pthread_timedjoin_np), never as a hung test.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "unit.h"

static void pause_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Joins t, failing the test if it has not finished within 10 s. */
static void join_or_fail(pthread_t t, const char *what)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 10;
    ck_assert_msg(pthread_timedjoin_np(t, NULL, &dl) == 0, "%s did not finish: deadlock", what);
}

static long thread_switches(void)
{
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_nvcsw;
}

static volatile int writer_in, reader_in;

static void *writer(void *arg)
{
    (void)arg;
    sw_gate_wr();
    __atomic_store_n(&writer_in, 1, __ATOMIC_SEQ_CST);
    sw_gate_unwr();
    return NULL;
}

/* A hook that holds the gate shared calls another hook that takes it
 * shared, while a writer waits for the first to let go: the inner one
 * must not queue behind the writer. */
static void *nested_reader(void *arg)
{
    (void)arg;
    sw_gate_rd_always();
    pthread_t w;
    pthread_create(&w, NULL, writer, NULL);
    pause_ms(50); /* the writer is now waiting for this thread */
    sw_gate_rd_always();
    ck_assert(sw_gate_held());
    __atomic_store_n(&reader_in, 1, __ATOMIC_SEQ_CST);
    sw_gate_unrd();
    ck_assert_int_eq(__atomic_load_n(&writer_in, __ATOMIC_SEQ_CST), 0); /* still held once */
    sw_gate_unrd();
    ck_assert(!sw_gate_held());
    pthread_join(w, NULL);
    return NULL;
}

START_TEST(nested_shared_hold_passes_a_waiting_writer)
{
    writer_in = reader_in = 0;
    pthread_t t;
    pthread_create(&t, NULL, nested_reader, NULL);
    join_or_fail(t, "the nested reader");
    ck_assert_int_eq(reader_in, 1);
    ck_assert_int_eq(writer_in, 1);
}
END_TEST

/* Shared then exclusive on one thread: the shared hold is let go for the
 * exclusive one and taken back after, so another writer still waits. */
static void *upgrader(void *arg)
{
    (void)arg;
    sw_gate_rd_always();
    sw_gate_wr();
    ck_assert(sw_gate_held_wr());
    sw_gate_wr(); /* nested exclusive */
    sw_gate_rd_always(); /* shared inside exclusive */
    sw_gate_unrd();
    sw_gate_unwr();
    ck_assert(sw_gate_held_wr());
    sw_gate_unwr();
    ck_assert(!sw_gate_held_wr());
    ck_assert(sw_gate_held()); /* the shared hold is back */
    pthread_t w;
    pthread_create(&w, NULL, writer, NULL);
    pause_ms(50);
    ck_assert_int_eq(__atomic_load_n(&writer_in, __ATOMIC_SEQ_CST), 0);
    sw_gate_unrd();
    pthread_join(w, NULL);
    ck_assert_int_eq(__atomic_load_n(&writer_in, __ATOMIC_SEQ_CST), 1);
    return NULL;
}

START_TEST(upgrade_keeps_the_shared_hold)
{
    writer_in = 0;
    pthread_t t;
    pthread_create(&t, NULL, upgrader, NULL);
    join_or_fail(t, "the upgrading thread");
}
END_TEST

/* A reader that meets a writer holding the gate for 200 ms sleeps until
 * it opens: a handful of context switches, where polling every 20 us
 * made thousands. */
static long waited_switches;

static void *blocked_reader(void *arg)
{
    (void)arg;
    long before = thread_switches();
    sw_gate_rd_always();
    waited_switches = thread_switches() - before;
    sw_gate_unrd();
    return NULL;
}

START_TEST(a_reader_waits_without_polling)
{
    sw_gate_wr();
    pthread_t t;
    pthread_create(&t, NULL, blocked_reader, NULL);
    pause_ms(200);
    sw_gate_unwr();
    join_or_fail(t, "the blocked reader");
    ck_assert_msg(waited_switches < 20, "the reader woke %ld times while it waited",
                  waited_switches);
}
END_TEST

static void *blocked_writer(void *arg)
{
    (void)arg;
    long before = thread_switches();
    sw_gate_wr();
    waited_switches = thread_switches() - before;
    sw_gate_unwr();
    return NULL;
}

START_TEST(a_writer_waits_without_polling)
{
    sw_gate_rd_always();
    pthread_t t;
    pthread_create(&t, NULL, blocked_writer, NULL);
    pause_ms(200);
    sw_gate_unrd();
    join_or_fail(t, "the blocked writer");
    ck_assert_msg(waited_switches < 20, "the writer woke %ld times while it waited",
                  waited_switches);
}
END_TEST

/* Excluding writers only: readers still get in, a writer waits. */
static void *plain_reader(void *arg)
{
    (void)arg;
    sw_gate_rd_always();
    __atomic_store_n(&reader_in, 1, __ATOMIC_SEQ_CST);
    sw_gate_unrd();
    return NULL;
}

START_TEST(excluding_writers_lets_readers_in)
{
    writer_in = reader_in = 0;
    sw_gate_lock_writers();
    sw_gate_lock_writers(); /* nested */
    pthread_t r, w;
    pthread_create(&r, NULL, plain_reader, NULL);
    join_or_fail(r, "a reader while writers are excluded");
    ck_assert_int_eq(reader_in, 1);
    pthread_create(&w, NULL, writer, NULL);
    pause_ms(50);
    ck_assert_int_eq(__atomic_load_n(&writer_in, __ATOMIC_SEQ_CST), 0);
    sw_gate_wr(); /* this thread may still write */
    sw_gate_unwr();
    sw_gate_unlock_writers();
    ck_assert_int_eq(__atomic_load_n(&writer_in, __ATOMIC_SEQ_CST), 0);
    sw_gate_unlock_writers();
    join_or_fail(w, "the writer after writers were let in");
    ck_assert_int_eq(writer_in, 1);
}
END_TEST

/* Many threads: a writer is alone, readers never see a writer inside. */
static int inside_wr, inside_rd, broken;

static void *mixed(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (int i = 0; i < 20000; i++) {
        if (rand_r(&seed) % 16 == 0) {
            sw_gate_wr();
            if (__atomic_add_fetch(&inside_wr, 1, __ATOMIC_SEQ_CST) != 1 ||
                __atomic_load_n(&inside_rd, __ATOMIC_SEQ_CST) != 0)
                __atomic_store_n(&broken, 1, __ATOMIC_SEQ_CST);
            __atomic_sub_fetch(&inside_wr, 1, __ATOMIC_SEQ_CST);
            sw_gate_unwr();
        } else {
            sw_gate_rd_always();
            __atomic_add_fetch(&inside_rd, 1, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(&inside_wr, __ATOMIC_SEQ_CST) != 0)
                __atomic_store_n(&broken, 1, __ATOMIC_SEQ_CST);
            __atomic_sub_fetch(&inside_rd, 1, __ATOMIC_SEQ_CST);
            sw_gate_unrd();
        }
    }
    return NULL;
}

START_TEST(writers_exclude_everyone)
{
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, mixed, (void *)(i + 1));
    for (int i = 0; i < 4; i++)
        join_or_fail(t[i], "a mixed thread");
    ck_assert_int_eq(broken, 0);
}
END_TEST

Suite *gate_suite(void)
{
    Suite *s = suite_create("gate");
    TCase *tc = tcase_create("gate");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, nested_shared_hold_passes_a_waiting_writer);
    tcase_add_test(tc, upgrade_keeps_the_shared_hold);
    tcase_add_test(tc, a_reader_waits_without_polling);
    tcase_add_test(tc, a_writer_waits_without_polling);
    tcase_add_test(tc, excluding_writers_lets_readers_in);
    tcase_add_test(tc, writers_exclude_everyone);
    suite_add_tcase(s, tc);
    return s;
}

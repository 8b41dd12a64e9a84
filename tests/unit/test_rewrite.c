/*
 * test_rewrite.c: argument rewriting for the streaming window
 * (core/scan.c, sw_rewrite_params and sw_rewrite_buffer), black-box from
 * the contract in sw.h: every scanned word the map accepts is replaced in
 * a copy, the caller's parameters are never written, and parameters with
 * no such word are passed as they are.
 */
#include <check.h>
#include <string.h>

#include "sw.h"
#include "unit.h"

#define OLD 0x7f0000200000ull
#define NEW 0x7e0000000000ull

static bool map_old(uint64_t w, uint64_t *to, void *arg)
{
    (void)arg;
    if (w < OLD || w >= OLD + 4096)
        return false;
    *to = NEW + (w - OLD);
    return true;
}

/* Parameters: a pointer, an int, a struct of two pointers and a size. */
struct two { uint64_t a, b, n; };
static uint32_t off[] = {0, 8, 16}, size[] = {8, 4, 24};
static const sw_layout_t layout = {.nparams = 3, .total = 40, .offset = off, .size = size};

START_TEST(params_rewritten_in_a_copy)
{
    uint64_t p0 = OLD;
    uint32_t p1 = 7;
    struct two p2 = {OLD + 64, 0x1234, 99};
    void *params[] = {&p0, &p1, &p2}, *out[3];
    unsigned char store[64];
    size_t n = sw_rewrite_params(&layout, params, out, store, sizeof store, map_old, NULL);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(p0, OLD); /* the caller's are untouched */
    ck_assert_uint_eq(p2.a, OLD + 64);
    ck_assert_ptr_ne(out[0], &p0);
    ck_assert_ptr_eq(out[1], &p1); /* nothing to rewrite: as it was */
    uint64_t w;
    memcpy(&w, out[0], 8);
    ck_assert_uint_eq(w, NEW);
    struct two got;
    memcpy(&got, out[2], sizeof got);
    ck_assert_uint_eq(got.a, NEW + 64);
    ck_assert_uint_eq(got.b, 0x1234);
    ck_assert_uint_eq(got.n, 99);
    ck_assert_ptr_eq(out[2], store + 16); /* at its own offset */
}
END_TEST

START_TEST(params_without_room_stay_as_they_were)
{
    uint64_t p0 = OLD;
    uint32_t p1 = 7;
    struct two p2 = {OLD, 0, 0};
    void *params[] = {&p0, &p1, &p2}, *out[3];
    unsigned char store[16]; /* room for parameter 0 only */
    size_t n = sw_rewrite_params(&layout, params, out, store, sizeof store, map_old, NULL);
    ck_assert_uint_eq(n, 1);
    ck_assert_ptr_eq(out[2], &p2);
}
END_TEST

START_TEST(buffer_patched_in_a_copy)
{
    unsigned char buf[40] = {0}, out[40];
    uint64_t p = OLD + 8, keep = 5;
    memcpy(buf, &p, 8);
    memcpy(buf + 8, &keep, 8);
    size_t n = sw_rewrite_buffer(&layout, buf, sizeof buf, out, map_old, NULL);
    ck_assert_uint_eq(n, 1);
    uint64_t w;
    memcpy(&w, buf, 8);
    ck_assert_uint_eq(w, OLD + 8);
    memcpy(&w, out, 8);
    ck_assert_uint_eq(w, NEW + 8);
    memcpy(&w, out + 8, 8);
    ck_assert_uint_eq(w, 5);
}
END_TEST

START_TEST(nothing_mapped_nothing_changed)
{
    uint64_t p0 = 0x1000;
    uint32_t p1 = 0;
    struct two p2 = {0, 0, 0};
    void *params[] = {&p0, &p1, &p2}, *out[3];
    unsigned char store[64];
    ck_assert_uint_eq(sw_rewrite_params(&layout, params, out, store, sizeof store, map_old, NULL), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_ptr_eq(out[i], params[i]);
}
END_TEST

Suite *rewrite_suite(void)
{
    Suite *s = suite_create("rewrite");
    TCase *tc = tcase_create("rewrite");
    tcase_add_test(tc, params_rewritten_in_a_copy);
    tcase_add_test(tc, params_without_room_stay_as_they_were);
    tcase_add_test(tc, buffer_patched_in_a_copy);
    tcase_add_test(tc, nothing_mapped_nothing_changed);
    suite_add_tcase(s, tc);
    return s;
}

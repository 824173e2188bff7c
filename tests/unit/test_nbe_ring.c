/*
 * Check unit tests of nbe_ring, the shared-memory MPSC queue of osc/nbe
 * control messages: zeroed memory is an empty ring, FIFO order, "full" at
 * capacity without losing or overwriting anything, wrap-around over many
 * laps, and several producer threads against one consumer with every
 * message delivered once and each producer's messages in order.
 */
#include <check.h>

#include "check_run.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nbe_ring.h"

static nbe_ctrl_t msg_of(int src, uint64_t a)
{
    nbe_ctrl_t m;
    memset(&m, 0, sizeof(m));
    m.type = NBE_CTRL_GRANT;
    m.src = src;
    m.a = a;
    m.b = ~a;
    return m;
}

static nbe_ring_t *zeroed_ring(void)
{
    nbe_ring_t *r = calloc(1, sizeof(*r));
    ck_assert_ptr_nonnull(r);
    return r;
}

START_TEST(zeroed_memory_is_empty)
{
    nbe_ring_t *r = zeroed_ring();
    uint64_t head = 0;
    nbe_ctrl_t out;
    ck_assert_int_eq(nbe_ring_ready(r, head), 0);
    ck_assert_int_eq(nbe_ring_pop(r, &head, &out), 0);
    ck_assert_uint_eq(head, 0);
    free(r);
}
END_TEST

START_TEST(fifo_and_full)
{
    nbe_ring_t *r = zeroed_ring();
    uint64_t head = 0;
    nbe_ctrl_t m, out;
    for (int i = 0; i < NBE_RING_SLOTS; ++i) {
        m = msg_of(3, (uint64_t) i);
        ck_assert_int_eq(nbe_ring_push(r, &m), 0);
    }
    /* full: refused, nothing overwritten */
    m = msg_of(3, 999);
    ck_assert_int_eq(nbe_ring_push(r, &m), -1);
    for (int i = 0; i < NBE_RING_SLOTS; ++i) {
        ck_assert_int_eq(nbe_ring_ready(r, head), 1);
        ck_assert_int_eq(nbe_ring_pop(r, &head, &out), 1);
        ck_assert_uint_eq(out.a, (uint64_t) i);
        ck_assert_uint_eq(out.b, ~(uint64_t) i);
        ck_assert_int_eq(out.src, 3);
    }
    ck_assert_int_eq(nbe_ring_pop(r, &head, &out), 0);
    /* one slot freed is one push accepted */
    m = msg_of(3, 1000);
    ck_assert_int_eq(nbe_ring_push(r, &m), 0);
    ck_assert_int_eq(nbe_ring_pop(r, &head, &out), 1);
    ck_assert_uint_eq(out.a, 1000);
    free(r);
}
END_TEST

START_TEST(wraps_over_many_laps)
{
    nbe_ring_t *r = zeroed_ring();
    uint64_t head = 0, next = 0, expect = 0;
    nbe_ctrl_t m, out;
    /* a varying fill level, 10^5 messages through 16 slots */
    while (expect < 100000) {
        int burst = (int) ((next * 7) % NBE_RING_SLOTS) + 1;
        for (int i = 0; i < burst; ++i) {
            m = msg_of(0, next);
            if (0 != nbe_ring_push(r, &m)) break;
            next++;
        }
        int drain = (int) ((next * 5) % NBE_RING_SLOTS) + 1;
        for (int i = 0; i < drain && nbe_ring_pop(r, &head, &out); ++i) {
            ck_assert_uint_eq(out.a, expect);
            expect++;
        }
    }
    ck_assert_uint_eq(head, expect);
    free(r);
}
END_TEST

#define PRODUCERS 3
#define PER_PRODUCER 200000

typedef struct {
    nbe_ring_t *r;
    int id;
} producer_arg_t;

static void *producer(void *p)
{
    producer_arg_t *a = p;
    for (uint64_t i = 0; i < PER_PRODUCER; ++i) {
        nbe_ctrl_t m = msg_of(a->id, i);
        while (0 != nbe_ring_push(a->r, &m)) {
            /* full: the consumer catches up */
        }
    }
    return NULL;
}

START_TEST(producers_against_one_consumer)
{
    nbe_ring_t *r = zeroed_ring();
    pthread_t th[PRODUCERS];
    producer_arg_t args[PRODUCERS];
    uint64_t next[PRODUCERS] = { 0 };
    uint64_t head = 0, got = 0;
    for (int i = 0; i < PRODUCERS; ++i) {
        args[i].r = r;
        args[i].id = i;
        ck_assert_int_eq(pthread_create(&th[i], NULL, producer, &args[i]), 0);
    }
    while (got < (uint64_t) PRODUCERS * PER_PRODUCER) {
        nbe_ctrl_t out;
        if (!nbe_ring_pop(r, &head, &out)) continue;
        ck_assert_int_ge(out.src, 0);
        ck_assert_int_lt(out.src, PRODUCERS);
        /* each producer's messages arrive once, in its order, intact */
        ck_assert_uint_eq(out.a, next[out.src]);
        ck_assert_uint_eq(out.b, ~out.a);
        next[out.src]++;
        got++;
    }
    for (int i = 0; i < PRODUCERS; ++i) pthread_join(th[i], NULL);
    nbe_ctrl_t out;
    ck_assert_int_eq(nbe_ring_pop(r, &head, &out), 0);
    free(r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nbe_ring");
    TCase *tc = tcase_create("ring");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, zeroed_memory_is_empty);
    tcase_add_test(tc, fifo_and_full);
    tcase_add_test(tc, wraps_over_many_laps);
    tcase_add_test(tc, producers_against_one_consumer);
    suite_add_tcase(s, tc);
    return check_run(s);
}

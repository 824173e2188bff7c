/*
 * Check unit tests of nbe_rwlock, the fair reader-writer lock that osc/nbe
 * keeps per rank in a node's shared segment: zeroed memory is free, readers
 * share, a writer excludes everybody, grants follow ticket order (a writer
 * waiting behind readers is not overtaken by later readers), the gate holds
 * grants back without losing the place in line, a passed ticket lets the
 * next locker in, and threads hammering one lock keep a shared counter
 * exact with readers never seeing a writer's half-done update.
 */
#include <check.h>

#include "check_run.h"
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "nbe_rwlock.h"

START_TEST(zeroed_memory_is_free)
{
    nbe_rwlock_t l = { 0 };
    uint32_t t = nbe_rwlock_ticket(&l);
    ck_assert_int_eq(nbe_rwlock_try_exclusive(&l, t, NULL), 1);
    nbe_rwlock_release_exclusive(&l);
    t = nbe_rwlock_ticket(&l);
    ck_assert_int_eq(nbe_rwlock_try_shared(&l, t, NULL), 1);
    nbe_rwlock_release_shared(&l);
    ck_assert_uint_eq(l.readers, 0);
    ck_assert_uint_eq(l.next, l.serving);
}
END_TEST

START_TEST(readers_share_writer_excludes)
{
    nbe_rwlock_t l = { 0 };
    uint32_t r1 = nbe_rwlock_ticket(&l), r2 = nbe_rwlock_ticket(&l);
    ck_assert_int_eq(nbe_rwlock_try_shared(&l, r1, NULL), 1);
    ck_assert_int_eq(nbe_rwlock_try_shared(&l, r2, NULL), 1);
    uint32_t w = nbe_rwlock_ticket(&l);
    ck_assert_int_eq(nbe_rwlock_try_exclusive(&l, w, NULL), 0);   /* two readers in */
    nbe_rwlock_release_shared(&l);
    ck_assert_int_eq(nbe_rwlock_try_exclusive(&l, w, NULL), 0);   /* one left */
    nbe_rwlock_release_shared(&l);
    ck_assert_int_eq(nbe_rwlock_try_exclusive(&l, w, NULL), 1);
    uint32_t r3 = nbe_rwlock_ticket(&l), w2 = nbe_rwlock_ticket(&l);
    ck_assert_int_eq(nbe_rwlock_try_shared(&l, r3, NULL), 0);     /* writer holds it */
    ck_assert_int_eq(nbe_rwlock_try_exclusive(&l, w2, NULL), 0);
    nbe_rwlock_release_exclusive(&l);
    ck_assert_int_eq(nbe_rwlock_try_exclusive(&l, w2, NULL), 0);  /* r3 first */
    ck_assert_int_eq(nbe_rwlock_try_shared(&l, r3, NULL), 1);
    ck_assert_int_eq(nbe_rwlock_try_exclusive(&l, w2, NULL), 0);
    nbe_rwlock_release_shared(&l);
    ck_assert_int_eq(nbe_rwlock_try_exclusive(&l, w2, NULL), 1);
    nbe_rwlock_release_exclusive(&l);
}
END_TEST

/* the point of tickets: readers arriving after a waiting writer wait too */
START_TEST(writer_not_starved_by_later_readers)
{
    nbe_rwlock_t l = { 0 };
    uint32_t r1 = nbe_rwlock_ticket(&l);
    ck_assert_int_eq(nbe_rwlock_try_shared(&l, r1, NULL), 1);
    uint32_t w = nbe_rwlock_ticket(&l);
    uint32_t late = nbe_rwlock_ticket(&l);
    ck_assert_int_eq(nbe_rwlock_try_shared(&l, late, NULL), 0);
    ck_assert_int_eq(nbe_rwlock_try_exclusive(&l, w, NULL), 0);
    nbe_rwlock_release_shared(&l);
    ck_assert_int_eq(nbe_rwlock_try_shared(&l, late, NULL), 0);
    ck_assert_int_eq(nbe_rwlock_try_exclusive(&l, w, NULL), 1);
    ck_assert_int_eq(nbe_rwlock_try_shared(&l, late, NULL), 0);
    nbe_rwlock_release_exclusive(&l);
    ck_assert_int_eq(nbe_rwlock_try_shared(&l, late, NULL), 1);
    nbe_rwlock_release_shared(&l);
}
END_TEST

START_TEST(gate_holds_grants_keeping_the_place)
{
    nbe_rwlock_t l = { 0 };
    int64_t gate = 1;
    uint32_t r = nbe_rwlock_ticket(&l), w = nbe_rwlock_ticket(&l);
    ck_assert_int_eq(nbe_rwlock_try_shared(&l, r, &gate), 0);
    ck_assert_uint_eq(l.readers, 0);                              /* not joined */
    ck_assert_int_eq(nbe_rwlock_try_exclusive(&l, w, &gate), 0);  /* not its turn */
    gate = 0;
    ck_assert_int_eq(nbe_rwlock_try_shared(&l, r, &gate), 1);
    gate = 2;   /* closing after the grant does not take it back */
    nbe_rwlock_release_shared(&l);
    ck_assert_int_eq(nbe_rwlock_try_exclusive(&l, w, &gate), 0);
    gate = 0;
    ck_assert_int_eq(nbe_rwlock_try_exclusive(&l, w, &gate), 1);
    nbe_rwlock_release_exclusive(&l);
}
END_TEST

START_TEST(passed_ticket_lets_the_next_in)
{
    nbe_rwlock_t l = { 0 };
    uint32_t a = nbe_rwlock_ticket(&l), b = nbe_rwlock_ticket(&l);
    ck_assert_int_eq(nbe_rwlock_turn(&l, a), 1);
    ck_assert_int_eq(nbe_rwlock_turn(&l, b), 0);
    nbe_rwlock_pass(&l, a);
    ck_assert_int_eq(nbe_rwlock_try_exclusive(&l, b, NULL), 1);
    nbe_rwlock_release_exclusive(&l);
    ck_assert_uint_eq(l.next, l.serving);
}
END_TEST

START_TEST(tickets_wrap_around)
{
    nbe_rwlock_t l = { UINT32_MAX - 1, UINT32_MAX - 1, 0, 0 };
    for (int i = 0; i < 4; ++i) {
        uint32_t t = nbe_rwlock_ticket(&l);
        ck_assert_int_eq(nbe_rwlock_try_exclusive(&l, t, NULL), 1);
        nbe_rwlock_release_exclusive(&l);
        t = nbe_rwlock_ticket(&l);
        ck_assert_int_eq(nbe_rwlock_try_shared(&l, t, NULL), 1);
        nbe_rwlock_release_shared(&l);
    }
    ck_assert_uint_eq(l.serving, 6);
}
END_TEST

/* Threads take the lock in both modes. Writers increment two counters
 * non-atomically with a yield between; a reader must always see them
 * equal; the total must be exact. */
enum { THREADS = 4, ROUNDS = 5000 };
static nbe_rwlock_t shared_lock;
static volatile long c1, c2;
static volatile int torn;

static void *hammer(void *arg)
{
    long id = (long) arg;
    for (int i = 0; i < ROUNDS; ++i) {
        uint32_t t = nbe_rwlock_ticket(&shared_lock);
        if ((i + id) % 3 == 0) {
            while (!nbe_rwlock_try_exclusive(&shared_lock, t, NULL)) sched_yield();
            long v = c1;
            c1 = v + 1;
            if (0 == (i & 255)) sched_yield();
            c2 = c2 + 1;
            nbe_rwlock_release_exclusive(&shared_lock);
        } else {
            while (!nbe_rwlock_try_shared(&shared_lock, t, NULL)) sched_yield();
            if (c1 != c2) torn = 1;
            nbe_rwlock_release_shared(&shared_lock);
        }
    }
    return NULL;
}

START_TEST(threads_keep_counters_exact)
{
    pthread_t th[THREADS];
    long writes = 0;
    for (long i = 0; i < THREADS; ++i) {
        ck_assert_int_eq(pthread_create(&th[i], NULL, hammer, (void *) i), 0);
        for (int r = 0; r < ROUNDS; ++r) writes += ((r + i) % 3 == 0);
    }
    for (int i = 0; i < THREADS; ++i) pthread_join(th[i], NULL);
    ck_assert_int_eq(torn, 0);
    ck_assert_int_eq(c1, writes);
    ck_assert_int_eq(c2, writes);
    ck_assert_uint_eq(shared_lock.readers, 0);
    ck_assert_uint_eq(shared_lock.next, shared_lock.serving);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nbe_rwlock");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, zeroed_memory_is_free);
    tcase_add_test(tc, readers_share_writer_excludes);
    tcase_add_test(tc, writer_not_starved_by_later_readers);
    tcase_add_test(tc, gate_holds_grants_keeping_the_place);
    tcase_add_test(tc, passed_ticket_lets_the_next_in);
    tcase_add_test(tc, tickets_wrap_around);
    tcase_add_test(tc, threads_keep_counters_exact);
    suite_add_tcase(s, tc);
    return check_run(s);
}

/* Adaptive COPY/RDMA choice (ompi_scale_adapt; pml/mdq, osc/nbe): size classes, warm-up,
 * following the faster protocol, probing the other one, noticing a change,
 * and the cost of timing COPY messages. */
#include "ompi_scale_adapt.h"

#include "check_run.h"

static ompi_scale_adapt_t a;

/* drive n messages of size through the chooser, completing each one at
 * once with the given cost per protocol; counts the choices */
static void run(size_t size, int n, uint64_t copy_ns, uint64_t rget_ns, int *copies, int *timed_copies)
{
    *copies = 0;
    if (NULL != timed_copies) {
        *timed_copies = 0;
    }
    for (int i = 0; i < n; ++i) {
        bool timed = false;
        int p = ompi_scale_adapt_choose(&a, size, &timed);
        if (OMPI_SCALE_ADAPT_COPY == p) {
            (*copies)++;
            if (timed && NULL != timed_copies) {
                (*timed_copies)++;
            }
        }
        if (timed) {
            ompi_scale_adapt_record(&a, size, p, OMPI_SCALE_ADAPT_COPY == p ? copy_ns : rget_ns);
        }
    }
}

/* a fresh chooser (probe interval probe, every copy timed) after n
 * messages of 50000 bytes at the given costs: the protocol it favours */
static int settled(uint32_t probe, int n, uint64_t copy_ns, uint64_t rget_ns)
{
    int copies;
    ompi_scale_adapt_init(&a, probe, 1);
    run(50000, n, copy_ns, rget_ns, &copies, NULL);
    return ompi_scale_adapt_preferred(&a, 50000);
}

START_TEST(classes_are_powers_of_two)
{
    ck_assert_int_eq(ompi_scale_adapt_class_of(1), 0);
    ck_assert_int_eq(ompi_scale_adapt_class_of(32767), 14);
    ck_assert_int_eq(ompi_scale_adapt_class_of(32768), 15);
    ck_assert_int_eq(ompi_scale_adapt_class_of(65535), 15);
    ck_assert_int_eq(ompi_scale_adapt_class_of(65536), 16);
    ck_assert_int_eq(ompi_scale_adapt_class_of((size_t) 1 << 40), 40);
    ck_assert_int_eq(ompi_scale_adapt_class_of(SIZE_MAX), OMPI_SCALE_ADAPT_CLASSES - 1);
}
END_TEST

START_TEST(warmup_alternates_and_times_everything)
{
    ompi_scale_adapt_init(&a, 64, 8);
    for (int i = 0; i < OMPI_SCALE_ADAPT_WARMUP; ++i) {
        bool timed = false;
        int p = ompi_scale_adapt_choose(&a, 40000, &timed);
        ck_assert(timed);
        ck_assert_int_eq(p, (i & 1) ? OMPI_SCALE_ADAPT_RDMA : OMPI_SCALE_ADAPT_COPY);
    }
    /* nothing measured yet: the rendezvous default */
    ck_assert_int_eq(ompi_scale_adapt_preferred(&a, 40000), OMPI_SCALE_ADAPT_RDMA);
}
END_TEST

START_TEST(follows_the_faster_protocol_per_class)
{
    int copies;
    ompi_scale_adapt_init(&a, 64, 8);
    run(40000, 640, 1700, 4800, &copies, NULL); /* copying is cheap */
    run(200000, 640, 26000, 21000, &copies, NULL); /* the get is cheap */
    ck_assert_int_eq(ompi_scale_adapt_preferred(&a, 40000), OMPI_SCALE_ADAPT_COPY);
    ck_assert_int_eq(ompi_scale_adapt_preferred(&a, 200000), OMPI_SCALE_ADAPT_RDMA);
    ck_assert_uint_eq(ompi_scale_adapt_typical(&a, 40000, OMPI_SCALE_ADAPT_COPY), 1700);
    ck_assert_uint_eq(ompi_scale_adapt_typical(&a, 40000, OMPI_SCALE_ADAPT_RDMA), 4800);
    /* 640 messages: 5 warm-up copies, then RGET except the early probe at
     * message 32 and the probes at 64, 128, ..., 576 */
    ck_assert_int_eq(copies, 5 + 1 + 9);
    /* a class never used is untouched */
    ck_assert_uint_eq(ompi_scale_adapt_typical(&a, 1 << 20, OMPI_SCALE_ADAPT_COPY), UINT64_MAX);
}
END_TEST

START_TEST(probes_the_other_protocol_every_interval)
{
    int copies;
    ompi_scale_adapt_init(&a, 16, 1);
    run(50000, OMPI_SCALE_ADAPT_WARMUP, 1000, 3000, &copies, NULL);
    /* after warm-up COPY is faster: 4 more RGETs re-time the protocol in
     * use (messages 10-13), then COPY, except one probe of RGET per 16 */
    run(50000, 160, 1000, 3000, &copies, NULL);
    ck_assert_int_eq(copies, 160 - 4 - 10);
    /* probing off: never leaves the preferred protocol once switched */
    ompi_scale_adapt_init(&a, 0, 1);
    run(50000, OMPI_SCALE_ADAPT_WARMUP, 1000, 3000, &copies, NULL);
    run(50000, 1000, 1000, 3000, &copies, NULL);
    ck_assert_int_eq(copies, 1000 - 4);
}
END_TEST

/* one message of the class with the given cost per protocol */
static int one(size_t size, uint64_t copy_ns, uint64_t rget_ns)
{
    bool timed = false;
    int p = ompi_scale_adapt_choose(&a, size, &timed);
    if (timed) {
        ompi_scale_adapt_record(&a, size, p, OMPI_SCALE_ADAPT_COPY == p ? copy_ns : rget_ns);
    }
    return p;
}

START_TEST(cold_first_completions_are_dropped)
{
    int copies;
    /* as measured on vader at 256 KiB (pml/mdq): the first COPYs took 464
     * and 279 us, the first RGETs 94 and 40 us, while copying costs 20 us
     * from then on */
    static const uint64_t copy_us[5] = {464, 279, 20, 20, 20};
    static const uint64_t rget_us[5] = {94, 40, 40, 40, 40};
    ompi_scale_adapt_init(&a, 128, 1);
    for (int i = 0; i < OMPI_SCALE_ADAPT_WARMUP; ++i) {
        ck_assert_int_eq(one(262144, copy_us[i / 2] * 1000, rget_us[i / 2] * 1000),
                         (i & 1) ? OMPI_SCALE_ADAPT_RDMA : OMPI_SCALE_ADAPT_COPY);
    }
    ck_assert_uint_eq(ompi_scale_adapt_typical(&a, 262144, OMPI_SCALE_ADAPT_COPY), 20000);
    ck_assert_uint_eq(ompi_scale_adapt_typical(&a, 262144, OMPI_SCALE_ADAPT_RDMA), 40000);
    /* messages 10-13 re-time RGET, COPY from 14 on */
    run(262144, 10, 20000, 40000, &copies, NULL);
    ck_assert_int_eq(copies, 6);
    ck_assert_int_eq(ompi_scale_adapt_preferred(&a, 262144), OMPI_SCALE_ADAPT_COPY);

    /* osc/nbe's fence/PSCW gets of 1 MiB on vader: by active messages (COPY)
     * 1.0 ms, 0.5 ms, then 100, 250 (still cold) and 80 us; by CMA 180,
     * 200, then 130, 130, 125 us. The median of the three kept samples
     * picks active messages. */
    static const uint64_t am_us[5] = {1000, 500, 100, 250, 80};
    static const uint64_t cma_us[5] = {180, 200, 130, 130, 125};
    ompi_scale_adapt_init(&a, 128, 1);
    for (int i = 0; i < OMPI_SCALE_ADAPT_WARMUP; ++i) {
        one(1 << 20, am_us[i / 2] * 1000, cma_us[i / 2] * 1000);
    }
    ck_assert_uint_eq(ompi_scale_adapt_typical(&a, 1 << 20, OMPI_SCALE_ADAPT_COPY), 100000);
    ck_assert_int_eq(ompi_scale_adapt_preferred(&a, 1 << 20), OMPI_SCALE_ADAPT_COPY);

    /* each protocol's first two completions only: nothing measured yet */
    ompi_scale_adapt_init(&a, 128, 1);
    for (int i = 0; i < 2 * OMPI_SCALE_ADAPT_COLD; ++i) {
        one(50000, 1000, 3000);
    }
    ck_assert_uint_eq(ompi_scale_adapt_typical(&a, 50000, OMPI_SCALE_ADAPT_COPY), UINT64_MAX);
    ck_assert_uint_eq(ompi_scale_adapt_typical(&a, 50000, OMPI_SCALE_ADAPT_RDMA), UINT64_MAX);
}
END_TEST

START_TEST(early_probes_settle_a_class)
{
    int copies;
    /* RGET looked faster in the warm-up, then copying gets cheap: the early
     * probes at messages 32 and 64 move the class to COPY long before the
     * probe at 128 */
    ompi_scale_adapt_init(&a, 128, 1);
    run(262144, OMPI_SCALE_ADAPT_WARMUP, 45000, 40000, &copies, NULL);
    ck_assert_int_eq(ompi_scale_adapt_preferred(&a, 262144), OMPI_SCALE_ADAPT_RDMA);
    /* messages 10-69: RGET; 32 probes COPY (median of 45, 45, 45, 20: 45);
     * 64 probes again (45, 45, 20, 20: 32.5), 65-68 re-time RGET, COPY at 69 */
    run(262144, 60, 20000, 40000, &copies, NULL);
    ck_assert_int_eq(copies, 3);
    ck_assert_int_eq(ompi_scale_adapt_preferred(&a, 262144), OMPI_SCALE_ADAPT_COPY);
}
END_TEST

START_TEST(notices_a_change_after_rechecking)
{
    int copies;
    ck_assert_int_eq(settled(8, 200, 1000, 3000), OMPI_SCALE_ADAPT_COPY);
    /* copying becomes slow (messages 200-219): 200 probes RGET; after 201
     * and 202 the COPY median is slow; 203-206 re-time COPY; from 207 on
     * RGET, except the probes of COPY at 208 and 216 */
    run(50000, 20, 9000, 3000, &copies, NULL);
    ck_assert_int_eq(copies, 2 + 4 + 2);
    ck_assert_int_eq(ompi_scale_adapt_preferred(&a, 50000), OMPI_SCALE_ADAPT_RDMA);
    /* and back (220-249): only probes time COPY (224, 232, 240); the
     * median moves with the third, 241-244 re-time RGET, then COPY except
     * the probe at 248 */
    run(50000, 30, 1000, 3000, &copies, NULL);
    ck_assert_int_eq(copies, 3 + 4);
    ck_assert_int_eq(ompi_scale_adapt_preferred(&a, 50000), OMPI_SCALE_ADAPT_COPY);
}
END_TEST

START_TEST(a_burst_of_slow_completions_washes_out)
{
    int copies;
    ck_assert_int_eq(settled(64, 100, 4400, 4000), OMPI_SCALE_ADAPT_RDMA); /* a little faster */
    /* the VM pauses: two RGETs take 25 us and the median jumps */
    ompi_scale_adapt_record(&a, 50000, OMPI_SCALE_ADAPT_RDMA, 25000);
    ompi_scale_adapt_record(&a, 50000, OMPI_SCALE_ADAPT_RDMA, 26000);
    ck_assert_int_eq(ompi_scale_adapt_preferred(&a, 50000), OMPI_SCALE_ADAPT_COPY);
    /* re-timing RGET refills its window: no switch, no COPY */
    run(50000, 20, 4400, 4000, &copies, NULL);
    ck_assert_int_eq(copies, 0);
    ck_assert_int_eq(ompi_scale_adapt_preferred(&a, 50000), OMPI_SCALE_ADAPT_RDMA);
}
END_TEST

START_TEST(one_outlier_does_not_flip_the_choice)
{
    ck_assert_int_eq(settled(64, 100, 1000, 3000), OMPI_SCALE_ADAPT_COPY);
    /* a copy that waited for a late receive */
    ompi_scale_adapt_record(&a, 50000, OMPI_SCALE_ADAPT_COPY, 500000);
    ck_assert_int_eq(ompi_scale_adapt_preferred(&a, 50000), OMPI_SCALE_ADAPT_COPY);
    /* a lucky one on the other side */
    ck_assert_int_eq(settled(64, 100, 5000, 3000), OMPI_SCALE_ADAPT_RDMA);
    ompi_scale_adapt_record(&a, 50000, OMPI_SCALE_ADAPT_COPY, 100);
    ck_assert_int_eq(ompi_scale_adapt_preferred(&a, 50000), OMPI_SCALE_ADAPT_RDMA);
    ck_assert_uint_eq(ompi_scale_adapt_typical(&a, 50000, OMPI_SCALE_ADAPT_COPY), 5000);
}
END_TEST

START_TEST(copies_are_timed_one_in_copy_sample)
{
    int copies, timed;
    ompi_scale_adapt_init(&a, 0, 8);
    run(50000, OMPI_SCALE_ADAPT_WARMUP, 1000, 3000, &copies, &timed);
    run(50000, 800, 1000, 3000, &copies, &timed);
    ck_assert_int_eq(copies, 800 - 4); /* messages 10-13 re-time RGET */
    ck_assert_int_eq(timed, 100);
}
END_TEST

START_TEST(rdma_is_timed_one_in_rdma_sample)
{
    /* osc/nbe gathers the CMA transfers it does not time */
    ompi_scale_adapt_init(&a, 0, 1);
    ompi_scale_adapt_set_rdma_sample(&a, 8);
    int timed_rdma = 0;
    for (int i = 0; i < 810; ++i) {
        bool timed = false;
        int p = ompi_scale_adapt_choose(&a, 50000, &timed);
        if (timed) {
            ompi_scale_adapt_record(&a, 50000, p, OMPI_SCALE_ADAPT_COPY == p ? 3000 : 1000);
            if (OMPI_SCALE_ADAPT_RDMA == p) timed_rdma++;
        }
    }
    /* the 5 warm-up RDMA messages, then every 8th of 10..809 (16, 24, ..., 808) */
    ck_assert_int_eq(timed_rdma, 5 + 100);
    ck_assert_int_eq(ompi_scale_adapt_preferred(&a, 50000), OMPI_SCALE_ADAPT_RDMA);
}
END_TEST

START_TEST(unmeasured_rget_loses_to_measured_copy)
{
    /* every RGET was turned into another protocol by the receiver (no
     * sample ever comes back): COPY, which is measured, is preferred */
    ompi_scale_adapt_init(&a, 64, 1);
    for (int i = 0; i < 10; ++i) {
        bool timed;
        int p = ompi_scale_adapt_choose(&a, 50000, &timed);
        if (OMPI_SCALE_ADAPT_COPY == p) {
            ompi_scale_adapt_record(&a, 50000, p, 5000);
        }
    }
    ck_assert_int_eq(ompi_scale_adapt_preferred(&a, 50000), OMPI_SCALE_ADAPT_COPY);
    /* a bad protocol number is ignored */
    ompi_scale_adapt_record(&a, 50000, 7, 1);
    ck_assert_uint_eq(ompi_scale_adapt_typical(&a, 50000, OMPI_SCALE_ADAPT_COPY), 5000);
}
END_TEST

START_TEST(copy_must_win_by_a_margin)
{
    /* 5 % faster is within the noise: stay with RGET; 10 % faster: COPY */
    ck_assert_int_eq(settled(64, 100, 3800, 4000), OMPI_SCALE_ADAPT_RDMA);
    ck_assert_int_eq(settled(64, 100, 3600, 4000), OMPI_SCALE_ADAPT_COPY);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ompi_scale_adapt");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, classes_are_powers_of_two);
    tcase_add_test(tc, warmup_alternates_and_times_everything);
    tcase_add_test(tc, follows_the_faster_protocol_per_class);
    tcase_add_test(tc, probes_the_other_protocol_every_interval);
    tcase_add_test(tc, cold_first_completions_are_dropped);
    tcase_add_test(tc, early_probes_settle_a_class);
    tcase_add_test(tc, notices_a_change_after_rechecking);
    tcase_add_test(tc, a_burst_of_slow_completions_washes_out);
    tcase_add_test(tc, one_outlier_does_not_flip_the_choice);
    tcase_add_test(tc, copies_are_timed_one_in_copy_sample);
    tcase_add_test(tc, rdma_is_timed_one_in_rdma_sample);
    tcase_add_test(tc, unmeasured_rget_loses_to_measured_copy);
    tcase_add_test(tc, copy_must_win_by_a_margin);
    suite_add_tcase(s, tc);
    return check_run(s);
}

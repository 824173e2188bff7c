/* What the tests where a target stays out of MPI for a while (osc/nbe's
 * presence stamps) share: seconds of CLOCK_MONOTONIC, a busy wait outside
 * MPI, and the counter of transfers that did without the target. */
#ifndef AWAY_COMMON_H
#define AWAY_COMMON_H
#include <time.h>

#include "mdq_pvar.h"

static inline double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + 1e-9 * (double) t.tv_nsec;
}

/* compute, outside MPI, for ms milliseconds */
static inline void stay_away_ms(double ms)
{
    double end = now() + 1e-3 * ms;
    while (now() < end) {
    }
}

/* errors of win return; h: pvar osc_nbe_rdma_target_away. -1 (an error
 * counted, win freed) when the pvar is missing. */
static inline int away_counter_open(MPI_Win *win, MPI_T_pvar_handle *h)
{
    MPI_Win_set_errhandler(*win, MPI_ERRORS_RETURN);
    mdq_pvar_init();
    if (0 != mdq_pvar_find("osc_nbe_rdma_target_away", h)) {
        mdq_pvar_fini();
        MPI_Win_free(win);
        return -1;
    }
    return 0;
}

/* the take-over tests' counters: cma as above, osc_nbe_frames_taken_over and
 * osc_nbe_frames_skipped; -1 (an error counted, win freed) when one is
 * missing */
typedef struct {
    MPI_T_pvar_handle cma, taken, skipped;
} take_over_counters_t;

static inline int take_over_counters_open(MPI_Win *win, take_over_counters_t *c)
{
    if (0 != away_counter_open(win, &c->cma)) return -1;
    if (0 != mdq_pvar_find("osc_nbe_frames_taken_over", &c->taken) ||
        0 != mdq_pvar_find("osc_nbe_frames_skipped", &c->skipped)) {
        mdq_pvar_fini();
        MPI_Win_free(win);
        return -1;
    }
    return 0;
}

static inline void take_over_counters_close(take_over_counters_t *c)
{
    MPI_T_pvar_handle_free(mdq_pvar_session, &c->cma);
    MPI_T_pvar_handle_free(mdq_pvar_session, &c->taken);
    MPI_T_pvar_handle_free(mdq_pvar_session, &c->skipped);
    mdq_pvar_fini();
}
#endif

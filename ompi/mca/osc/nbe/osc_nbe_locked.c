/*
 * The window functions under MPI_THREAD_MULTIPLE: each runs inside the
 * component lock (osc_nbe_lock.h). Windows created without threads use
 * the functions directly (module_template in osc_nbe_component.c).
 */
#include "osc_nbe.h"
#include "osc_nbe_lock.h"

#define NBE_LOCKED(fn, params, args)             \
    static int locked_##fn params                 \
    {                                             \
        ompi_osc_nbe_enter();                     \
        int rc = ompi_osc_nbe_##fn args;          \
        ompi_osc_nbe_leave();                     \
        return rc;                                \
    }

typedef struct ompi_datatype_t dt_t;
typedef struct ompi_win_t win_t;

NBE_LOCKED(shared_query, (win_t *w, int r, size_t *s, int *du, void *b), (w, r, s, du, b))
NBE_LOCKED(attach, (win_t *w, void *b, size_t l), (w, b, l))
NBE_LOCKED(detach, (win_t *w, const void *b), (w, b))
NBE_LOCKED(free, (win_t *w), (w))

NBE_LOCKED(put, (const void *o, int oc, dt_t *odt, int t, ptrdiff_t d, int tc, dt_t *tdt, win_t *w),
           (o, oc, odt, t, d, tc, tdt, w))
NBE_LOCKED(get, (void *o, int oc, dt_t *odt, int t, ptrdiff_t d, int tc, dt_t *tdt, win_t *w),
           (o, oc, odt, t, d, tc, tdt, w))
NBE_LOCKED(accumulate, (const void *o, int oc, dt_t *odt, int t, ptrdiff_t d, int tc, dt_t *tdt,
                        struct ompi_op_t *op, win_t *w),
           (o, oc, odt, t, d, tc, tdt, op, w))
NBE_LOCKED(compare_and_swap, (const void *o, const void *c, void *r, dt_t *dt, int t, ptrdiff_t d,
                              win_t *w),
           (o, c, r, dt, t, d, w))
NBE_LOCKED(fetch_and_op, (const void *o, void *r, dt_t *dt, int t, ptrdiff_t d,
                          struct ompi_op_t *op, win_t *w),
           (o, r, dt, t, d, op, w))
NBE_LOCKED(get_accumulate, (const void *o, int oc, dt_t *odt, void *r, int rc_, dt_t *rdt, int t,
                            ptrdiff_t d, int tc, dt_t *tdt, struct ompi_op_t *op, win_t *w),
           (o, oc, odt, r, rc_, rdt, t, d, tc, tdt, op, w))

NBE_LOCKED(rput, (const void *o, int oc, dt_t *odt, int t, ptrdiff_t d, int tc, dt_t *tdt,
                  win_t *w, struct ompi_request_t **q),
           (o, oc, odt, t, d, tc, tdt, w, q))
NBE_LOCKED(rget, (void *o, int oc, dt_t *odt, int t, ptrdiff_t d, int tc, dt_t *tdt, win_t *w,
                  struct ompi_request_t **q),
           (o, oc, odt, t, d, tc, tdt, w, q))
NBE_LOCKED(raccumulate, (const void *o, int oc, dt_t *odt, int t, ptrdiff_t d, int tc, dt_t *tdt,
                         struct ompi_op_t *op, win_t *w, struct ompi_request_t **q),
           (o, oc, odt, t, d, tc, tdt, op, w, q))
NBE_LOCKED(rget_accumulate, (const void *o, int oc, dt_t *odt, void *r, int rc_, dt_t *rdt, int t,
                             ptrdiff_t d, int tc, dt_t *tdt, struct ompi_op_t *op, win_t *w,
                             struct ompi_request_t **q),
           (o, oc, odt, r, rc_, rdt, t, d, tc, tdt, op, w, q))

NBE_LOCKED(fence, (int a, win_t *w), (a, w))
NBE_LOCKED(start, (struct ompi_group_t *g, int a, win_t *w), (g, a, w))
NBE_LOCKED(complete, (win_t *w), (w))
NBE_LOCKED(post, (struct ompi_group_t *g, int a, win_t *w), (g, a, w))
NBE_LOCKED(wait, (win_t *w), (w))
NBE_LOCKED(test, (win_t *w, int *f), (w, f))
NBE_LOCKED(lock, (int lt, int t, int a, win_t *w), (lt, t, a, w))
NBE_LOCKED(unlock, (int t, win_t *w), (t, w))
NBE_LOCKED(lock_all, (int a, win_t *w), (a, w))
NBE_LOCKED(unlock_all, (win_t *w), (w))
NBE_LOCKED(sync, (win_t *w), (w))
NBE_LOCKED(flush, (int t, win_t *w), (t, w))
NBE_LOCKED(flush_all, (win_t *w), (w))
NBE_LOCKED(flush_local, (int t, win_t *w), (t, w))
NBE_LOCKED(flush_local_all, (win_t *w), (w))

const ompi_osc_base_module_t ompi_osc_nbe_locked_template = {
    .osc_win_shared_query = locked_shared_query,
    .osc_win_attach = locked_attach,
    .osc_win_detach = locked_detach,
    .osc_free = locked_free,

    .osc_put = locked_put,
    .osc_get = locked_get,
    .osc_accumulate = locked_accumulate,
    .osc_compare_and_swap = locked_compare_and_swap,
    .osc_fetch_and_op = locked_fetch_and_op,
    .osc_get_accumulate = locked_get_accumulate,

    .osc_rput = locked_rput,
    .osc_rget = locked_rget,
    .osc_raccumulate = locked_raccumulate,
    .osc_rget_accumulate = locked_rget_accumulate,

    .osc_fence = locked_fence,

    .osc_start = locked_start,
    .osc_complete = locked_complete,
    .osc_post = locked_post,
    .osc_wait = locked_wait,
    .osc_test = locked_test,

    .osc_lock = locked_lock,
    .osc_unlock = locked_unlock,
    .osc_lock_all = locked_lock_all,
    .osc_unlock_all = locked_unlock_all,

    .osc_sync = locked_sync,
    .osc_flush = locked_flush,
    .osc_flush_all = locked_flush_all,
    .osc_flush_local = locked_flush_local,
    .osc_flush_local_all = locked_flush_local_all,
};

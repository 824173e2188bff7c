/* Reading MPI_T performance variables (pml/mdq, osc/nbe) from the integration tests. */
#ifndef MDQ_PVAR_H
#define MDQ_PVAR_H
#include "pt2pt_common.h"

static MPI_T_pvar_session mdq_pvar_session;

static inline void mdq_pvar_init(void)
{
    int provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_pvar_session_create(&mdq_pvar_session);
}

/* 0 and a handle for the pvar called name bound to obj (NULL: not bound;
 * &win for a window's); -1 (and an error counted) when absent */
static inline int mdq_pvar_find_bound(const char *name, void *obj, MPI_T_pvar_handle *h)
{
    int num, idx = -1, count;
    MPI_T_pvar_get_num(&num);
    for (int i = 0; i < num && idx < 0; i++) {
        char n[256], desc[1024];
        int nl = sizeof(n), dl = sizeof(desc), verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        MPI_T_pvar_get_info(i, n, &nl, &verb, &cls, &dt, &en, desc, &dl, &bind, &ro, &cont, &atomic);
        if (0 == strcmp(n, name)) idx = i;
    }
    if (idx < 0) {
        CHECK(0, "pvar %s not found", name);
        return -1;
    }
    MPI_T_pvar_handle_alloc(mdq_pvar_session, idx, obj, h, &count);
    return 0;
}

static inline int mdq_pvar_find(const char *name, MPI_T_pvar_handle *h)
{
    return mdq_pvar_find_bound(name, NULL, h);
}

static inline unsigned long long mdq_pvar_read(MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    MPI_T_pvar_read(mdq_pvar_session, h, &v);
    return v;
}

static inline void mdq_pvar_fini(void)
{
    MPI_T_pvar_session_free(&mdq_pvar_session);
    MPI_T_finalize();
}
#endif

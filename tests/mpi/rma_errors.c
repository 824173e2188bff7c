/*
 * Erroneous RMA usage is reported through the window's error handler with
 * the right error class, and the window stays usable afterwards:
 * MPI_ERR_RMA_SYNC, MPI_ERR_RMA_RANGE, MPI_ERR_RMA_ATTACH, MPI_ERR_RMA_FLAVOR.
 */
#include "pt2pt_common.h"

/* a user-defined op: RMA takes predefined ones only */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) dt;
    for (int i = 0; i < *len; i++) ((int *) inout)[i] += ((int *) in)[i];
}

static int handler_calls;
static void count_handler(MPI_Win *win, int *code, ...)
{
    (void) win;
    (void) code;
    handler_calls++;
}

int main(int argc, char **argv)
{
    int buf[8] = { 0 }, *mem;
    MPI_Win win, dwin;
    MPI_Errhandler eh;

    test_init(&argc, &argv);
    int right = (rank + 1) % nprocs;

    MPI_Win_allocate(8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);

    /* synchronization misuse */
    expect_class(MPI_Put(buf, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC, "put outside epoch");
    expect_class(MPI_Get(buf, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC, "get outside epoch");
    expect_class(MPI_Accumulate(buf, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_SUM, win), MPI_ERR_RMA_SYNC, "acc outside epoch");
    expect_class(MPI_Win_complete(win), MPI_ERR_RMA_SYNC, "complete without start");
    expect_class(MPI_Win_wait(win), MPI_ERR_RMA_SYNC, "wait without post");
    expect_class(MPI_Win_unlock(right, win), MPI_ERR_RMA_SYNC, "unlock without lock");
    expect_class(MPI_Win_unlock_all(win), MPI_ERR_RMA_SYNC, "unlock_all without lock_all");
    expect_class(MPI_Win_flush(right, win), MPI_ERR_RMA_SYNC, "flush without lock");
    expect_class(MPI_Win_flush_all(win), MPI_ERR_RMA_SYNC, "flush_all without lock");
    expect_class(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_SUCCESS, "lock");
    expect_class(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_ERR_RMA_SYNC, "lock twice");
    expect_class(MPI_Win_lock_all(0, win), MPI_ERR_RMA_SYNC, "lock_all inside lock");
    expect_class(MPI_Win_fence(0, win), MPI_ERR_RMA_SYNC, "fence inside lock");
    /* range */
    expect_class(MPI_Put(buf, 2, MPI_INT, right, 7, 2, MPI_INT, win), MPI_ERR_RMA_RANGE, "put past the end");
    /* (a negative displacement is MPI_ERR_DISP, checked by the MPI layer) */
    expect_class(MPI_Get(buf, 1, MPI_INT, right, 8, 1, MPI_INT, win), MPI_ERR_RMA_RANGE, "get just past the end");
    expect_class(MPI_Accumulate(buf, 9, MPI_INT, right, 0, 9, MPI_INT, MPI_SUM, win), MPI_ERR_RMA_RANGE, "acc past the end");
    /* 2^62 ints are 2^64 bytes: wrapped to 0, the put once landed at the base */
    expect_class(MPI_Put(buf, 1, MPI_INT, right, (MPI_Aint) 1 << 62, 1, MPI_INT, win), MPI_ERR_RMA_RANGE,
                 "put at a displacement whose byte offset overflows");
    expect_class(MPI_Put(buf, 1, MPI_INT, right, 7, 1, MPI_INT, win), MPI_SUCCESS, "put at the last element");
    /* MPI_PROC_NULL targets are no-ops */
    expect_class(MPI_Put(buf, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win), MPI_SUCCESS, "put to PROC_NULL");
    expect_class(MPI_Get(buf, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win), MPI_SUCCESS, "get from PROC_NULL");
    expect_class(MPI_Accumulate(buf, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, MPI_SUM, win), MPI_SUCCESS, "acc to PROC_NULL");
    {
        MPI_Request r;
        expect_class(MPI_Rput(buf, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win, &r), MPI_SUCCESS, "rput to PROC_NULL");
        expect_class(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_SUCCESS, "wait rput to PROC_NULL");
    }
    {
        /* Open MPI's MPI_Fetch_and_op passes any op and type on: a user
         * op's index named another op, or none (SIGSEGV), at the target */
        int one = 1, old = 0, cmp = 0;
        MPI_Op uop;
        MPI_Datatype dup;
        MPI_Op_create(user_sum, 1, &uop);
        MPI_Type_contiguous(1, MPI_INT, &dup);
        MPI_Type_commit(&dup);
        expect_class(MPI_Fetch_and_op(&one, &old, MPI_INT, right, 0, uop, win), MPI_ERR_OP,
                     "fetch_and_op with a user op");
        expect_class(MPI_Fetch_and_op(&one, &old, MPI_INT, right, 0, MPI_OP_NULL, win), MPI_ERR_OP,
                     "fetch_and_op with MPI_OP_NULL");
        expect_class(MPI_Fetch_and_op(&one, &old, dup, right, 0, MPI_SUM, win), MPI_ERR_TYPE,
                     "fetch_and_op with a derived type");
        expect_class(MPI_Compare_and_swap(&one, &cmp, &old, dup, right, 0, win), MPI_ERR_TYPE,
                     "compare_and_swap with a derived type");
        MPI_Type_free(&dup);
        MPI_Op_free(&uop);
    }
    expect_class(MPI_Win_unlock(right, win), MPI_SUCCESS, "unlock");

    /* the window still works */
    MPI_Win_fence(0, win);
    buf[0] = 40 + rank;
    expect_class(MPI_Put(buf, 1, MPI_INT, right, 3, 1, MPI_INT, win), MPI_SUCCESS, "put in fence");
    MPI_Win_fence(0, win);
    if (mem[3] != 40 + (rank + nprocs - 1) % nprocs) {
        fprintf(stderr, "[%d] window unusable after errors: %d\n", rank, mem[3]);
        errs++;
    }
    /* a fence epoch with RMA calls cannot be left for a lock epoch */
    expect_class(MPI_Put(buf, 1, MPI_INT, right, 2, 1, MPI_INT, win), MPI_SUCCESS, "put");
    expect_class(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_ERR_RMA_SYNC, "lock in an active fence epoch");
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);

    /* flavour errors */
    expect_class(MPI_Win_attach(win, buf, sizeof(buf)), MPI_ERR_RMA_FLAVOR, "attach to an allocated window");
    {
        MPI_Aint sz;
        int du;
        void *p;
        expect_class(MPI_Win_shared_query(win, 0, &sz, &du, &p), MPI_ERR_RMA_FLAVOR, "shared_query on non-shared");
    }

    /* dynamic windows: attach errors */
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dwin);
    MPI_Win_set_errhandler(dwin, MPI_ERRORS_RETURN);
    static int region[16];
    expect_class(MPI_Win_attach(dwin, region, sizeof(region)), MPI_SUCCESS, "attach");
    expect_class(MPI_Win_attach(dwin, region + 4, 4 * sizeof(int)), MPI_ERR_RMA_ATTACH, "overlapping attach");
    expect_class(MPI_Win_detach(dwin, buf), MPI_ERR_RMA_ATTACH, "detach of a region never attached");
    expect_class(MPI_Win_detach(dwin, region), MPI_SUCCESS, "detach");
    MPI_Win_free(&dwin);

    /* a user error handler is called, not an abort */
    MPI_Win_create_errhandler(count_handler, &eh);
    MPI_Win_set_errhandler(win, eh);
    MPI_Put(buf, 1, MPI_INT, right, 0, 1, MPI_INT, win);
    if (1 != handler_calls) {
        fprintf(stderr, "[%d] error handler called %d times\n", rank, handler_calls);
        errs++;
    }
    MPI_Errhandler_free(&eh);
    MPI_Win_free(&win);

    return test_finish();
}

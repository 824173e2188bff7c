/*
 * Dynamic processes over pml/mdq (and osc/nbe): the job spawns two
 * children, which Open MPI reaches by tcp (vader does not join jobs).
 *  - the intercommunicator: eager, medium and rendezvous messages both ways,
 *    the first of them over a tcp connection not yet up, and an
 *    intercommunicator allreduce;
 *  - the merged intracommunicator: a ring exchange, an allreduce, and a
 *    window (fence puts, lock/unlock accumulates) across both jobs;
 *  - MPI_Comm_disconnect right after a send: its fence does not progress
 *    MPI, so the send must have left by the time MPI_Send returned. A
 *    first, short spawn does only that, over tcp connections not yet up
 *    (mdq until session 26 completed the send while tcp still held it,
 *    and the job hung).
 * Errors of the children reach the parents' rank 0 by a reduction.
 */
#include "pt2pt_common.h"

#define NCHILD 2
static const size_t sizes[] = {0, 4, 5000, 70000, 3u << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* parents' rank 0 sends every size to each child, which echoes it back */
static void echo_over_intercomm(MPI_Comm ic, int parent)
{
    int rsize;
    MPI_Comm_remote_size(ic, &rsize);
    for (size_t k = 0; k < NSIZES; ++k) {
        size_t n = sizes[k];
        unsigned char *b = malloc(n + 1);
        MPI_Status st;
        int cnt;
        if (parent && 0 == rank) {
            for (int c = 0; c < rsize; ++c) {
                fill(b, n, (int) k + 10 * c);
                MPI_Send(b, (int) n, MPI_BYTE, c, (int) k, ic);
            }
            for (int c = 0; c < rsize; ++c) {
                memset(b, 0, n);
                MPI_Recv(b, (int) n, MPI_BYTE, MPI_ANY_SOURCE, (int) k, ic, &st);
                MPI_Get_count(&st, MPI_BYTE, &cnt);
                CHECK((size_t) cnt == n && 0 == verify(b, n, (int) k + 10 * st.MPI_SOURCE + 1),
                      "echo of %zu bytes from child %d", n, st.MPI_SOURCE);
            }
        } else if (!parent) {
            MPI_Recv(b, (int) n, MPI_BYTE, 0, (int) k, ic, &st);
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            CHECK((size_t) cnt == n && 0 == verify(b, n, (int) k + 10 * rank),
                  "%zu bytes from the parent", n);
            fill(b, n, (int) k + 10 * rank + 1);
            MPI_Send(b, (int) n, MPI_BYTE, 0, (int) k, ic);
        }
        free(b);
    }
}

/* every rank of the merged communicator sends to the next, receives from the previous */
static void ring(MPI_Comm m)
{
    int me, n;
    MPI_Comm_rank(m, &me);
    MPI_Comm_size(m, &n);
    for (size_t k = 0; k < NSIZES; ++k) {
        size_t len = sizes[k];
        unsigned char *sb = malloc(len + 1), *rb = malloc(len + 1);
        int prev = (me + n - 1) % n, cnt;
        MPI_Status st;
        fill(sb, len, me + (int) k);
        MPI_Sendrecv(sb, (int) len, MPI_BYTE, (me + 1) % n, 5, rb, (int) len, MPI_BYTE, prev, 5, m,
                     &st);
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        CHECK((size_t) cnt == len && 0 == verify(rb, len, prev + (int) k),
              "ring: %zu bytes from %d", len, prev);
        free(sb);
        free(rb);
    }
}

static void window_across_jobs(MPI_Comm m)
{
    int me, n, *buf, one = 1;
    MPI_Win win;
    MPI_Comm_rank(m, &me);
    MPI_Comm_size(m, &n);
    MPI_Alloc_mem((MPI_Aint) sizeof(int) * (n + 1), MPI_INFO_NULL, &buf);
    for (int i = 0; i <= n; ++i) buf[i] = -1;
    MPI_Win_create(buf, (MPI_Aint) sizeof(int) * (n + 1), sizeof(int), MPI_INFO_NULL, m, &win);
    MPI_Win_fence(0, win);
    for (int t = 0; t < n; ++t) {
        MPI_Put(&me, 1, MPI_INT, t, me, 1, MPI_INT, win);
    }
    MPI_Win_fence(0, win);
    for (int i = 0; i < n; ++i) {
        CHECK(buf[i] == i, "fence put: slot %d holds %d", i, buf[i]);
    }
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win);
    buf[n] = 0;
    MPI_Win_unlock(me, win);
    MPI_Barrier(m);
    for (int t = 0; t < n; ++t) {
        MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
        MPI_Accumulate(&one, 1, MPI_INT, t, n, 1, MPI_INT, MPI_SUM, win);
        MPI_Win_unlock(t, win);
    }
    MPI_Barrier(m);
    MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win);
    CHECK(buf[n] == n, "accumulated %d, expected %d", buf[n], n);
    MPI_Win_unlock(me, win);
    MPI_Win_free(&win);
    MPI_Free_mem(buf);
}

static MPI_Comm spawn_children(char *prog, char *mode)
{
    char *args[] = {mode, NULL};
    int codes[NCHILD];
    MPI_Comm ic;
    MPI_Comm_spawn(prog, args, NCHILD, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic, codes);
    for (int i = 0; i < NCHILD; ++i) {
        CHECK(MPI_SUCCESS == codes[i], "spawn error code %d", codes[i]);
    }
    return ic;
}

/* the last message before the disconnect: nothing progresses it afterwards */
static void send_then_disconnect(MPI_Comm *ic, int parent)
{
    if (parent && 0 == rank) {
        int done = 42, rsize;
        MPI_Comm_remote_size(*ic, &rsize);
        for (int c = 0; c < rsize; ++c) {
            MPI_Send(&done, 1, MPI_INT, c, 77, *ic);
        }
    } else if (!parent) {
        int done = 0;
        MPI_Recv(&done, 1, MPI_INT, 0, 77, *ic, MPI_STATUS_IGNORE);
        CHECK(42 == done, "last message %d", done);
    }
    MPI_Comm_disconnect(ic);
}

static int child_exit(void)
{
    /* a child's errors: reported here, and by its exit code */
    if (errs) {
        fprintf(stderr, "child %d: %d errors\n", rank, errs);
    }
    MPI_Finalize();
    return errs ? 1 : 0;
}

int main(int argc, char **argv)
{
    MPI_Comm parent_comm, ic, merged;
    int parent, sum = 0, remote_sum = -1, total = 0, mrank, msize;

    test_init(&argc, &argv);
    MPI_Comm_get_parent(&parent_comm);
    parent = MPI_COMM_NULL == parent_comm;
    if (parent) {
        ic = spawn_children(argv[0], "quick");
        send_then_disconnect(&ic, parent);
        ic = spawn_children(argv[0], "full");
    } else {
        ic = parent_comm;
        if (argc > 1 && 0 == strcmp(argv[1], "quick")) {
            send_then_disconnect(&ic, parent);
            return child_exit();
        }
    }

    echo_over_intercomm(ic, parent);

    /* each group gets the other's sum of (rank + 1) */
    sum = rank + 1;
    MPI_Allreduce(&sum, &remote_sum, 1, MPI_INT, MPI_SUM, ic);
    {
        int rsize;
        MPI_Comm_remote_size(ic, &rsize);
        CHECK(remote_sum == rsize * (rsize + 1) / 2, "intercomm allreduce %d", remote_sum);
    }

    MPI_Intercomm_merge(ic, parent ? 0 : 1, &merged);
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    {
        int rsize;
        MPI_Comm_remote_size(ic, &rsize);
        CHECK(msize == nprocs + rsize, "merged size %d", msize);
        CHECK(mrank == (parent ? rank : rsize + rank), "merged rank %d", mrank);
    }
    ring(merged);
    {
        int v = mrank, all = 0;
        MPI_Allreduce(&v, &all, 1, MPI_INT, MPI_SUM, merged);
        CHECK(all == msize * (msize - 1) / 2, "merged allreduce %d", all);
    }
    window_across_jobs(merged);

    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, merged);
    MPI_Comm_free(&merged);

    send_then_disconnect(&ic, parent);
    if (!parent) {
        return child_exit();
    }
    errs = 0 == rank ? total : errs;
    return test_finish();
}

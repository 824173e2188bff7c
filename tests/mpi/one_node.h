/*
 * Tests that use MPI_Win_allocate_shared on a whole communicator need its
 * processes on one node; across nodes (tests/multihost) the call must fail
 * with MPI_ERR_RMA_SHARED through the communicator's error handler.
 */
#ifndef ONE_NODE_H
#define ONE_NODE_H

#include <mpi.h>
#include <stdio.h>

/* 1 if every process of comm can share memory with every other */
static inline int comm_on_one_node(MPI_Comm comm)
{
    MPI_Comm node;
    int size, nsize;
    MPI_Comm_size(comm, &size);
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nsize);
    MPI_Comm_free(&node);
    int all, mine = nsize == size;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
}

/* comm spans nodes: a shared window on it is refused with
 * MPI_ERR_RMA_SHARED and no window. Returns the number of errors (0 or 1). */
static inline int shared_window_refused(MPI_Comm comm)
{
    MPI_Errhandler old;
    MPI_Win win = MPI_WIN_NULL;
    int *mem = NULL, cls = MPI_SUCCESS, rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_get_errhandler(comm, &old);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int rc = MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, comm, &mem, &win);
    MPI_Comm_set_errhandler(comm, old);
    MPI_Errhandler_free(&old);
    if (MPI_SUCCESS != rc) MPI_Error_class(rc, &cls);
    if (MPI_ERR_RMA_SHARED == cls && MPI_WIN_NULL == win) return 0;
    fprintf(stderr, "[%d] MPI_Win_allocate_shared across nodes: error class %d (want "
                    "MPI_ERR_RMA_SHARED %d), window %s\n", rank, cls, MPI_ERR_RMA_SHARED,
            MPI_WIN_NULL == win ? "null" : "created");
    if (MPI_WIN_NULL != win) MPI_Win_free(&win);
    return 1;
}

#endif

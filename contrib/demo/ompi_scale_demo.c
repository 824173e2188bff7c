/*
 * ompi-scale demo: point-to-point and one-sided traffic between two ranks,
 * then a report of which pml and osc Open MPI really ran: the shared object
 * that holds the selected module's code (dladdr), not what was requested.
 *
 *   mpirun -np 2 --mca pml mdq --mca osc nbe ./ompi_scale_demo
 */
#define _GNU_SOURCE
#include "ompi_config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/win/win.h"

/* "…/mca_pml_mdq.so" -> "mdq (…/mca_pml_mdq.so)" */
static void describe(const char *what, const void *code, char *out, size_t len)
{
    Dl_info info;
    const char *file = "?", *base, *name;

    if (code && dladdr(code, &info) && info.dli_fname) {
        file = info.dli_fname;
    }
    base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    name = base;
    if (0 == strncmp(base, "mca_", 4) && strlen(base) > 4 + strlen(what) + 1) {
        name = base + 4 + strlen(what) + 1; /* skip "mca_<what>_" */
    }
    snprintf(out, len, "%.*s (%s)", (int) strcspn(name, "."), name, file);
}

static int exchange(int rank, int count)
{
    int *buf = malloc(sizeof(int) * (size_t) count), errors = 0;

    for (int i = 0; i < count; i++) {
        buf[i] = rank == 0 ? i * 7 + 1 : -1;
    }
    if (0 == rank) {
        MPI_Send(buf, count, MPI_INT, 1, 42, MPI_COMM_WORLD);
    } else if (1 == rank) {
        MPI_Recv(buf, count, MPI_INT, 0, 42, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < count; i++) {
            errors += buf[i] != i * 7 + 1;
        }
    }
    free(buf);
    return errors;
}

int main(int argc, char **argv)
{
    int rank, size, errors = 0, total = 0, sum = 0;
    int counts[] = {0, 1, 1000, 1 << 18}; /* empty, eager, medium, rendezvous */
    int *base;
    MPI_Win win;
    char pml[512], osc[512];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "run with at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        errors += exchange(rank, counts[i]);
    }
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    errors += sum != size * (size - 1) / 2;

    /* one-sided: every rank puts its rank into slot [rank] of rank 0 */
    MPI_Win_allocate(sizeof(int) * size, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    for (int i = 0; i < size; i++) {
        base[i] = -1;
    }
    MPI_Win_fence(0, win);
    MPI_Put(&rank, 1, MPI_INT, 0, rank, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    if (0 == rank) {
        for (int i = 0; i < size; i++) {
            errors += base[i] != i;
        }
    }
    describe("pml", (const void *) mca_pml.pml_send, pml, sizeof(pml));
    describe("osc", (const void *) win->w_osc_module->osc_put, osc, sizeof(osc));
    MPI_Win_free(&win);

    MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("ompi-scale demo on %d ranks: point-to-point (0 B to 1 MiB), allreduce, put+fence: %s\n", size,
               total ? "ERRORS" : "all data correct");
        printf("selected pml: %s\nselected osc: %s\n", pml, osc);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}

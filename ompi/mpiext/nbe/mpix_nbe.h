/*
 * mpix_nbe.h: the application interface of ompi-scale's nonblocking
 * one-sided synchronizations (osc/nbe).
 *
 * Link with -lmpix_nbe. The nonblocking epoch calls (MPIX_Win_ifence,
 * MPIX_Win_istart, ...) are added by the nonblocking-epoch API work; this
 * release provides the version query so applications can test for the
 * library at build and run time.
 */
#ifndef MPIX_NBE_H
#define MPIX_NBE_H

#include <mpi.h>

#define MPIX_NBE_VERSION_MAJOR 0
#define MPIX_NBE_VERSION_MINOR 1
#define MPIX_NBE_VERSION_RELEASE 0

#if defined(c_plusplus) || defined(__cplusplus)
extern "C" {
#endif

/* Version of the libmpix_nbe the program runs with. Returns MPI_SUCCESS, or
 * MPI_ERR_ARG when an argument is NULL. */
int MPIX_Nbe_get_version(int *major, int *minor, int *release);

#if defined(c_plusplus) || defined(__cplusplus)
}
#endif
#endif /* MPIX_NBE_H */

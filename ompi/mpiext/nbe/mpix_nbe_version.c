/*
 * libmpix_nbe version query.
 */
#include "mpix_nbe.h"

int MPIX_Nbe_get_version(int *major, int *minor, int *release)
{
    if (NULL == major || NULL == minor || NULL == release) {
        return MPI_ERR_ARG;
    }
    *major = MPIX_NBE_VERSION_MAJOR;
    *minor = MPIX_NBE_VERSION_MINOR;
    *release = MPIX_NBE_VERSION_RELEASE;
    return MPI_SUCCESS;
}

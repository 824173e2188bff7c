/*
 * Build-version check for the ompi-scale components.
 */
#include "ompi_config.h"

#include <stdio.h>
#include <string.h>

#include "mpi.h"
#include "opal/constants.h"
#include "opal/util/show_help.h"

#include "ompi_scale_common.h"

#define OMPI_SCALE_STR_(x) #x
#define OMPI_SCALE_STR(x) OMPI_SCALE_STR_(x)

/*
 * The version comes from the headers the component was compiled with. It is
 * kept as one marker string in the binary so that tests (and a curious
 * administrator: `strings mca_pml_mdq.so | grep OMPI_SCALE`) can read it.
 */
#define BUILT_MARKER_PREFIX "OMPI_SCALE_BUILT_AGAINST_OMPI="
static const char built_marker[] = BUILT_MARKER_PREFIX OMPI_SCALE_STR(OMPI_MAJOR_VERSION) "." OMPI_SCALE_STR(
    OMPI_MINOR_VERSION) "." OMPI_SCALE_STR(OMPI_RELEASE_VERSION);

const char *ompi_scale_built_ompi_version(void)
{
    /* read through a volatile pointer so the comparison below is made
     * against the bytes in the binary, never a folded constant */
    const char *volatile marker = built_marker;
    return marker + sizeof(BUILT_MARKER_PREFIX) - 1;
}

/* "Open MPI v4.1.4, package: ..." -> "4.1.4" */
static void running_ompi_version(char *out, size_t len)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    const char *p;
    size_t i = 0;

    out[0] = '\0';
    if (MPI_SUCCESS != MPI_Get_library_version(lib, &n)) {
        return;
    }
    p = strstr(lib, "Open MPI v");
    if (NULL == p) {
        return;
    }
    p += strlen("Open MPI v");
    while (i + 1 < len && p[i] && (('0' <= p[i] && p[i] <= '9') || '.' == p[i])) {
        out[i] = p[i];
        i++;
    }
    out[i] = '\0';
}

int ompi_scale_check_ompi_version(const char *framework, const char *component)
{
    char running[64];
    const char *built = ompi_scale_built_ompi_version();

    running_ompi_version(running, sizeof(running));
    if (0 == strcmp(running, built)) {
        return OPAL_SUCCESS;
    }
    ompi_scale_help_init();
    opal_show_help("help-ompi-scale.txt", "version mismatch", true, framework, component, built,
                   running[0] ? running : "(unknown)", framework, component);
    return OPAL_ERR_NOT_SUPPORTED;
}

/*
 * Helpers shared by the ompi-scale components (linked privately into each).
 */
#ifndef OMPI_SCALE_COMMON_H
#define OMPI_SCALE_COMMON_H

#include "opal/mca/base/base.h"
#include "opal/mca/base/mca_base_var_enum.h"

/*
 * Refuse to run inside an Open MPI other than the one the component was
 * compiled against: the component uses Open MPI's internal structures, whose
 * layout changes between releases. Call it first in the component's register
 * function and return its result:
 *
 *   int rc = ompi_scale_check_ompi_version("pml", "mdq");
 *   if (OPAL_SUCCESS != rc) return rc;
 *
 * Returns OPAL_SUCCESS, or OPAL_ERR_NOT_SUPPORTED after printing a help
 * message that names both versions.
 */
int ompi_scale_check_ompi_version(const char *framework, const char *component);

/* The Open MPI version this component was built against ("4.1.4"). */
const char *ompi_scale_built_ompi_version(void);

/*
 * Adds the directories holding our help files to opal_show_help's search
 * path: the installed $(pkgdatadir) and, for uninstalled runs, the source
 * directories. Idempotent; call before the first opal_show_help.
 */
void ompi_scale_help_init(void);

/*
 * Registers an int MCA variable of component c whose values have names
 * (values ends with a NULL name; its enumerator is called
 * <framework>_<component>_<name>), read-only after MPI_Init, with the
 * current *storage as default.
 */
void ompi_scale_register_enum(const mca_base_component_t *c, const char *name, const char *desc,
                              int level, const mca_base_var_enum_value_t *values, int *storage);

#endif /* OMPI_SCALE_COMMON_H */

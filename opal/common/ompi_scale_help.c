/*
 * Where opal_show_help finds the ompi-scale help files.
 */
#include "ompi_config.h"

#include <stdbool.h>

#include "opal/util/show_help.h"

#include "ompi_scale_common.h"

void ompi_scale_help_init(void)
{
    /* one flag per component: each links its own copy of this file */
    static bool added = false;

    if (added) {
        return;
    }
    added = true;
    opal_show_help_add_dir(OMPI_SCALE_HELPDIR);
    /* uninstalled runs (make check) read the files from the source tree */
    opal_show_help_add_dir(OMPI_SCALE_ABS_SRCDIR "/opal/common");
    opal_show_help_add_dir(OMPI_SCALE_ABS_SRCDIR "/ompi/mca/pml/mdq");
    opal_show_help_add_dir(OMPI_SCALE_ABS_SRCDIR "/ompi/mca/osc/nbe");
}

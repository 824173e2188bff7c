/*
 * MCA variable helpers shared by the ompi-scale components.
 */
#include "ompi_config.h"

#include <stdio.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"

#include "ompi_scale_common.h"

void ompi_scale_register_enum(const mca_base_component_t *c, const char *name, const char *desc,
                              int level, const mca_base_var_enum_value_t *values, int *storage)
{
    char enum_name[128];
    mca_base_var_enum_t *e = NULL;
    snprintf(enum_name, sizeof(enum_name), "%s_%s_%s", c->mca_type_name, c->mca_component_name,
             name);
    (void) mca_base_var_enum_create(enum_name, values, &e);
    (void) mca_base_component_var_register(c, name, desc, MCA_BASE_VAR_TYPE_INT, e, 0, 0,
                                           (mca_base_var_info_lvl_t) level,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
    if (NULL != e) OBJ_RELEASE(e);
}

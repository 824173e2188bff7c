/*
 * osc/nbe: datatype and reduction helpers shared by the origin side
 * (osc_nbe_comm.c) and the target side (osc_nbe_apply.c).
 */
#ifndef OSC_NBE_DT_H
#define OSC_NBE_DT_H

#include "osc_nbe.h"

#include "ompi_scale_copy.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"

static inline bool dt_contig(ompi_datatype_t *dt, int count)
{
    return ompi_datatype_is_contiguous_memory_layout(dt, count);
}

static inline size_t dt_bytes(ompi_datatype_t *dt, int count)
{
    size_t s;
    ompi_datatype_type_size(dt, &s);
    return s * (size_t) count;
}

static inline ompi_datatype_t *dt_from_idx(int idx)
{
    return (ompi_datatype_t *) opal_pointer_array_get_item(&ompi_datatype_f_to_c_table, idx);
}

static inline ompi_op_t *op_from_idx(int idx)
{
    return (ompi_op_t *) opal_pointer_array_get_item(ompi_op_f_to_c_table, idx);
}

/* no padding in an element of dt (pair types such as MPI_DOUBLE_INT have
 * some: their extent exceeds their size) */
static inline bool dt_dense(ompi_datatype_t *dt)
{
    size_t size;
    ptrdiff_t lb, ext;
    ompi_datatype_type_size(dt, &size);
    ompi_datatype_get_extent(dt, &lb, &ext);
    return (ptrdiff_t) size == ext;
}

/* a copy of count elements of the predefined type dt (MPI_REPLACE, fetched
 * values): their data, not the padding of pair types */
static inline void copy_elems(ompi_datatype_t *dt, size_t count, void *dst, const void *src)
{
    if (OPAL_LIKELY(dt_dense(dt))) {
        ompi_scale_copy(dst, src, dt_bytes(dt, (int) count));
    } else {
        ompi_datatype_copy_content_same_ddt(dt, count, (char *) dst, (char *) src);
    }
}

/* the memory n consecutive elements of the predefined type dt occupy: the
 * padding after the last one (pair types such as MPI_DOUBLE_INT, 12 bytes
 * of data in an extent of 16) is not theirs and may lie past the end of a
 * window, so accesses stop at the last element's data */
static inline size_t elems_span(ompi_datatype_t *dt, size_t n)
{
    ptrdiff_t lb, ext, tlb, text;
    if (0 == n) return 0;
    ompi_datatype_get_extent(dt, &lb, &ext);
    ompi_datatype_get_true_extent(dt, &tlb, &text);
    return (size_t) ext * (n - 1) + (size_t) (tlb - lb + text);
}

/* len: the memory of whole elements of dt (elems_span), the last one's
 * trailing padding left out */
static inline void apply_acc(ompi_op_t *op, ompi_datatype_t *dt, const void *src, void *dst, size_t len)
{
    ptrdiff_t lb, ext;
    ompi_datatype_get_extent(dt, &lb, &ext);
    int count = (int) ((len + (size_t) ext - 1) / (size_t) ext);
    if (&ompi_mpi_op_no_op.op == op) return;
    if (&ompi_mpi_op_replace.op == op) {
        copy_elems(dt, (size_t) count, dst, src);
        return;
    }
    ompi_op_reduce(op, (void *) src, dst, count, dt);
}

#endif /* OSC_NBE_DT_H */

# -*- autoconf -*-
# Locating the Open MPI installation that the components are built for.

# OMPI_SCALE_FIND_OMPI
# --------------------
# Uses the mpicc on PATH (or under --with-ompi=PREFIX) to learn the include
# and library flags, and ompi_info for the exact version and pkglibdir.
# Sets and substitutes OMPI_SCALE_MPICC, OMPI_SCALE_MPIRUN, OMPI_SCALE_OMPI_INFO,
# OMPI_SCALE_OMPI_VERSION, OMPI_SCALE_OMPI_PKGLIBDIR, OMPI_SCALE_CPPFLAGS,
# OMPI_SCALE_LIBS.
AC_DEFUN([OMPI_SCALE_FIND_OMPI], [
    AC_ARG_WITH([ompi],
        [AS_HELP_STRING([--with-ompi=PREFIX],
            [Open MPI installation to build against (default: the mpicc found on PATH)])])
    ompi_scale_path=$PATH
    AS_IF([test -n "$with_ompi" && test "x$with_ompi" != "xyes" && test "x$with_ompi" != "xno"],
          [ompi_scale_path="$with_ompi/bin"])
    AC_PATH_PROG([OMPI_SCALE_MPICC], [mpicc], [], [$ompi_scale_path])
    AC_PATH_PROG([OMPI_SCALE_MPIRUN], [mpirun], [], [$ompi_scale_path])
    AC_PATH_PROG([OMPI_SCALE_OMPI_INFO], [ompi_info], [], [$ompi_scale_path])
    AS_IF([test -z "$OMPI_SCALE_MPICC" || test -z "$OMPI_SCALE_OMPI_INFO" || test -z "$OMPI_SCALE_MPIRUN"],
          [AC_MSG_ERROR([Open MPI (mpicc, mpirun, ompi_info) not found. Install it
(Debian/Ubuntu: apt-get install libopenmpi-dev openmpi-bin) or pass --with-ompi=PREFIX.])])

    AC_MSG_CHECKING([the Open MPI version])
    OMPI_SCALE_OMPI_VERSION=`$OMPI_SCALE_OMPI_INFO --parsable 2>/dev/null | sed -n 's/^ompi:version:full://p'`
    AS_IF([test -z "$OMPI_SCALE_OMPI_VERSION"], [AC_MSG_ERROR([could not read the version from $OMPI_SCALE_OMPI_INFO])])
    AC_MSG_RESULT([$OMPI_SCALE_OMPI_VERSION])
    AS_CASE([$OMPI_SCALE_OMPI_VERSION],
        [4.1.*], [],
        [AC_MSG_ERROR([ompi-scale supports Open MPI 4.1.x; found $OMPI_SCALE_OMPI_VERSION])])

    AC_MSG_CHECKING([the Open MPI component directory])
    OMPI_SCALE_OMPI_PKGLIBDIR=`$OMPI_SCALE_OMPI_INFO --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p'`
    AC_MSG_RESULT([$OMPI_SCALE_OMPI_PKGLIBDIR])

    ompi_scale_incdirs=`$OMPI_SCALE_MPICC --showme:incdirs`
    OMPI_SCALE_CPPFLAGS="-DHAVE_CONFIG_H"
    for d in $ompi_scale_incdirs; do
        OMPI_SCALE_CPPFLAGS="$OMPI_SCALE_CPPFLAGS -I$d"
    done
    # The internal headers live in <incdir>/openmpi on packaged installs
    # and in <incdir>/openmpi as well for --with-devel-headers builds.
    for d in $ompi_scale_incdirs; do
        AS_IF([test -f "$d/openmpi/opal_config.h"], [OMPI_SCALE_OMPI_INTERNAL_INC="$d/openmpi"])
        AS_IF([test -f "$d/opal_config.h"], [OMPI_SCALE_OMPI_INTERNAL_INC="$d"])
    done
    AS_IF([test -z "$OMPI_SCALE_OMPI_INTERNAL_INC"],
          [AC_MSG_ERROR([Open MPI's internal (devel) headers were not found under: $ompi_scale_incdirs
Install the development package (Debian/Ubuntu: libopenmpi-dev) or an Open MPI built --with-devel-headers.])])
    AS_CASE([" $OMPI_SCALE_CPPFLAGS "], [*" -I$OMPI_SCALE_OMPI_INTERNAL_INC "*], [],
            [OMPI_SCALE_CPPFLAGS="$OMPI_SCALE_CPPFLAGS -I$OMPI_SCALE_OMPI_INTERNAL_INC"])

    OMPI_SCALE_LIBS=""
    for d in `$OMPI_SCALE_MPICC --showme:libdirs`; do
        OMPI_SCALE_LIBS="$OMPI_SCALE_LIBS -L$d"
    done
    OMPI_SCALE_LIBS="$OMPI_SCALE_LIBS -lmpi -lopen-rte -lopen-pal"

    AC_SUBST([OMPI_SCALE_OMPI_VERSION])
    AC_SUBST([OMPI_SCALE_OMPI_PKGLIBDIR])
    AC_SUBST([OMPI_SCALE_CPPFLAGS])
    AC_SUBST([OMPI_SCALE_LIBS])
    AC_DEFINE_UNQUOTED([OMPI_SCALE_CONFIGURED_OMPI_VERSION], ["$OMPI_SCALE_OMPI_VERSION"],
                       [Open MPI version reported by ompi_info at configure time])
])

# OMPI_SCALE_CHECK_INTERNAL_HEADERS
# ---------------------------------
# Packaged Open MPI installs ship internal headers that include a few others
# the package lacks (ompi/peruse/peruse.h, opal/mca/timer/linux/timer_linux.h,
# ompi/mpi/fortran/base/fint_2_int.h, opal/include/opal_stdint.h, ...). They
# are taken from the matching Open MPI source tree (--with-ompi-source), added
# with -idirafter so the installed headers always win.
AC_DEFUN([OMPI_SCALE_CHECK_INTERNAL_HEADERS], [
    AC_ARG_WITH([ompi-source],
        [AS_HELP_STRING([--with-ompi-source=DIR],
            [unpacked Open MPI source tree of the same version, used as a fallback for internal
             headers the installed Open MPI lacks (contrib/fetch-debian-source openmpi DIR gets it)])])

    AC_LANG_PUSH([C])
    ompi_scale_save_CPPFLAGS=$CPPFLAGS
    m4_define([ompi_scale_header_probe], [AC_LANG_PROGRAM([[
#include "ompi_config.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/mca/pml/base/base.h"
#include "ompi/mca/pml/base/pml_base_bsend.h"
#include "ompi/mca/pml/base/pml_base_sendreq.h"
#include "ompi/mca/pml/base/pml_base_recvreq.h"
#include "ompi/mca/bml/bml.h"
#include "ompi/mca/bml/base/base.h"
#include "ompi/mca/osc/osc.h"
#include "ompi/mca/osc/base/base.h"
#include "ompi/op/op.h"
#include "ompi/win/win.h"
#include "ompi/message/message.h"
#include "opal/mca/btl/btl.h"
#if OMPI_MAJOR_VERSION != 4 || OMPI_MINOR_VERSION != 1
#error "headers are not Open MPI 4.1"
#endif
]], [[return 0;]])])

    AC_MSG_CHECKING([whether the installed Open MPI internal headers are complete])
    CPPFLAGS="$ompi_scale_save_CPPFLAGS $OMPI_SCALE_CPPFLAGS"
    AC_COMPILE_IFELSE([ompi_scale_header_probe], [ompi_scale_headers_ok=yes], [ompi_scale_headers_ok=no])
    AC_MSG_RESULT([$ompi_scale_headers_ok])

    OMPI_SCALE_OMPI_SOURCE=
    AS_IF([test "x$ompi_scale_headers_ok" = "xno"], [
        AS_IF([test -z "$with_ompi_source" || test "x$with_ompi_source" = "xno" || test "x$with_ompi_source" = "xyes"], [
            AC_MSG_ERROR([the installed Open MPI $OMPI_SCALE_OMPI_VERSION lacks internal headers that its own headers include
(see config.log). Get the matching source tree and point configure at it:
    contrib/fetch-debian-source openmpi \$HOME/.cache/ompi-scale/src
    ./configure --with-ompi-source=\$HOME/.cache/ompi-scale/src/openmpi-$OMPI_SCALE_OMPI_VERSION
(contrib/quickstart does this for you). Nothing from it is copied; it is only an include path.])])
        AS_IF([test ! -f "$with_ompi_source/ompi/include/mpi.h.in"],
              [AC_MSG_ERROR([--with-ompi-source=$with_ompi_source is not an Open MPI source tree])])
        ompi_scale_src_version=`sed -n 's/^major=\(.*\)/\1/p;s/^minor=\(.*\)/\1/p;s/^release=\(.*\)/\1/p' "$with_ompi_source/VERSION" | tr '\n' '.' | sed 's/\.$//'`
        AS_IF([test "x$ompi_scale_src_version" != "x$OMPI_SCALE_OMPI_VERSION"],
              [AC_MSG_ERROR([--with-ompi-source is Open MPI $ompi_scale_src_version but the installed Open MPI is $OMPI_SCALE_OMPI_VERSION])])
        OMPI_SCALE_OMPI_SOURCE=`cd "$with_ompi_source" && pwd`
        AC_MSG_CHECKING([whether $OMPI_SCALE_OMPI_SOURCE supplies the missing headers])
        CPPFLAGS="$ompi_scale_save_CPPFLAGS $OMPI_SCALE_CPPFLAGS -idirafter $OMPI_SCALE_OMPI_SOURCE"
        AC_COMPILE_IFELSE([ompi_scale_header_probe], [AC_MSG_RESULT([yes])],
            [AC_MSG_RESULT([no])
             AC_MSG_ERROR([the Open MPI headers still do not compile with $OMPI_SCALE_OMPI_SOURCE as fallback; see config.log])])
        OMPI_SCALE_CPPFLAGS="$OMPI_SCALE_CPPFLAGS -idirafter $OMPI_SCALE_OMPI_SOURCE"
    ])
    CPPFLAGS=$ompi_scale_save_CPPFLAGS
    AC_LANG_POP([C])
    AC_SUBST([OMPI_SCALE_OMPI_SOURCE])
])

# OMPI_SCALE_COMPONENT_DIR
# ------------------------
# Components go into Open MPI's own component directory when it is writable,
# otherwise (or with --with-component-dir=DIR) wherever the user says.
# Open MPI also searches ~/.openmpi/components by default; `make install-user`
# installs there.
AC_DEFUN([OMPI_SCALE_COMPONENT_DIR], [
    AC_ARG_WITH([component-dir],
        [AS_HELP_STRING([--with-component-dir=DIR],
            [where to install the MCA components (default: Open MPI's pkglibdir if writable,
             else ~/.openmpi/components)])])
    AC_MSG_CHECKING([where to install the components])
    AS_IF([test -n "$with_component_dir" && test "x$with_component_dir" != "xyes" && test "x$with_component_dir" != "xno"],
          [componentdir=$with_component_dir],
          [test -w "$OMPI_SCALE_OMPI_PKGLIBDIR"],
          [componentdir=$OMPI_SCALE_OMPI_PKGLIBDIR],
          [componentdir='${HOME}/.openmpi/components'
           AC_MSG_WARN([$OMPI_SCALE_OMPI_PKGLIBDIR is not writable: components will go to ~/.openmpi/components])])
    AC_MSG_RESULT([$componentdir])
    AC_SUBST([componentdir])
])

# OMPI_SCALE_MPI_PROGRAM_FLAGS
# ----------------------------
# Flags to build ordinary MPI programs (tests, benchmarks) with the plain C
# compiler: exactly what mpicc would add.
AC_DEFUN([OMPI_SCALE_MPI_PROGRAM_FLAGS], [
    OMPI_SCALE_MPI_CFLAGS=`$OMPI_SCALE_MPICC --showme:compile`
    OMPI_SCALE_MPI_LIBS=`$OMPI_SCALE_MPICC --showme:link`
    AC_SUBST([OMPI_SCALE_MPI_CFLAGS])
    AC_SUBST([OMPI_SCALE_MPI_LIBS])
])

# OMPI_SCALE_CHECK_CX16
# ---------------------
# Adds -mcx16 to OMPI_SCALE_COMPONENT_CFLAGS when the Open MPI headers use
# the 16-byte compare-and-swap (OPAL_HAVE_CMPXCHG16B) and the compiler takes
# the flag, as Open MPI's own build does.
AC_DEFUN([OMPI_SCALE_CHECK_CX16], [
    AC_MSG_CHECKING([whether components need -mcx16])
    ompi_scale_save_CPPFLAGS=$CPPFLAGS
    ompi_scale_save_CFLAGS=$CFLAGS
    CPPFLAGS="$CPPFLAGS $OMPI_SCALE_CPPFLAGS"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include "opal_config.h"
#if !defined(OPAL_HAVE_CMPXCHG16B) || !OPAL_HAVE_CMPXCHG16B
#error no cmpxchg16b
#endif]], [[return 0;]])], [ompi_scale_want_cx16=yes], [ompi_scale_want_cx16=no])
    AS_IF([test "x$ompi_scale_want_cx16" = "xyes"], [
        CFLAGS="$CFLAGS -mcx16"
        AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [[return 0;]])],
            [OMPI_SCALE_COMPONENT_CFLAGS="$OMPI_SCALE_COMPONENT_CFLAGS -mcx16"],
            [ompi_scale_want_cx16="no (compiler refuses -mcx16)"])])
    CPPFLAGS=$ompi_scale_save_CPPFLAGS
    CFLAGS=$ompi_scale_save_CFLAGS
    AC_MSG_RESULT([$ompi_scale_want_cx16])
])

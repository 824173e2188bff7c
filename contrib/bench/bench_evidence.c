/*
 * Which PML / OSC component really runs in this process.
 *
 * Asking for "--mca pml ucx" does not prove that ucx ran: a misspelt option or a
 * params file could leave a different component selected and the comparison
 * would silently be a lie.  We therefore look at the live module: Open MPI's
 * global `mca_pml` module and a window's osc module are tables of function
 * pointers into the component's shared object (mca_pml_ob1.so, ...), so
 * dladdr() on those pointers names the component that actually serves the
 * calls.  This uses no Open MPI header; the osc module is found by scanning
 * the window object for a pointer to a table of such functions, reading memory
 * only through a pipe so that a stray value can never fault.
 */
#define _GNU_SOURCE
#include "bench_common.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SCAN_WORDS_OBJECT 128 /* words of the window object inspected */
#define SCAN_WORDS_MODULE 12  /* leading function pointers of a module */

static int probe_pipe[2] = { -1, -1 };

/* Copies one word from addr if it is readable; 0 on success. */
static int safe_read_word(const void *addr, void **out)
{
    if (probe_pipe[0] < 0 && 0 != pipe(probe_pipe)) {
        return -1;
    }
    if ((ssize_t) sizeof(void *) != write(probe_pipe[1], addr, sizeof(void *))) {
        return -1;          /* EFAULT: not mapped */
    }
    if ((ssize_t) sizeof(void *) != read(probe_pipe[0], out, sizeof(void *))) {
        return -1;
    }
    return 0;
}

/* If fn lies in a shared object called mca_<fw>_<name>.so, copies <name>. */
static int component_of(const void *fn, const char *framework, char *name, size_t len)
{
    Dl_info info;
    char prefix[32];
    const char *base, *dot;

    if (NULL == fn || 0 == dladdr(fn, &info) || NULL == info.dli_fname) {
        return -1;
    }
    base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    snprintf(prefix, sizeof(prefix), "mca_%s_", framework);
    if (0 != strncmp(base, prefix, strlen(prefix))) {
        return -1;
    }
    base += strlen(prefix);
    dot = strchr(base, '.');
    snprintf(name, len, "%.*s", (int) (dot ? (size_t) (dot - base) : strlen(base)), base);
    return 0;
}

/* Looks for a function pointer into mca_<fw>_*.so among the first words at table. */
static int component_of_table(const void *table, const char *framework, char *name,
                              size_t len)
{
    for (int i = 0; i < SCAN_WORDS_MODULE; i++) {
        void *fn;
        if (0 != safe_read_word((void * const *) table + i, &fn)) {
            return -1;
        }
        if (0 == component_of(fn, framework, name, len)) {
            return 0;
        }
    }
    return -1;
}

void bench_selected_pml(char *name, size_t len)
{
    void *module = dlsym(RTLD_DEFAULT, "mca_pml");
    if (NULL == module || 0 != component_of_table(module, "pml", name, len)) {
        snprintf(name, len, "unknown");
    }
}

void bench_selected_osc(MPI_Win win, char *name, size_t len)
{
#ifdef OPEN_MPI
    /* In Open MPI an MPI_Win is a pointer to the window object, which holds a
     * pointer to the selected osc module. */
    const void *object = (const void *) win;
    for (int i = 0; i < SCAN_WORDS_OBJECT; i++) {
        void *candidate;
        if (0 != safe_read_word((void * const *) object + i, &candidate)) {
            break;
        }
        if (NULL != candidate && 0 == ((uintptr_t) candidate & (sizeof(void *) - 1)) &&
            0 == component_of_table(candidate, "osc", name, len)) {
            return;
        }
    }
#endif
    snprintf(name, len, "unknown");
}

/* demangle.h — the one place gt-analyze turns C++ names (native symbols, CUDA kernel names
 * as CUPTI reports them) into the names people read; every report section, export and view
 * shows a kernel through ana_kernel_name. Return rule: analyze/'s (model.h); these return names
 * (NULL or the name itself where there is nothing to demangle), stated per function. */
#ifndef ANA_DEMANGLE_H
#define ANA_DEMANGLE_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

/* Demangle an Itanium C++ name ("_Z..."): a malloc'd string, or NULL when name is not
 * mangled or does not demangle (use it as is). */
char *ana_demangle(const char *name);
/* The name to show for name: demangled when it is a C++ name, else name itself. Cached in the
 * model (each distinct name is demangled once); the result lives as long as m. Never NULL for
 * a non-NULL name (name itself when memory runs out). */
const char *ana_display_name(const ana_model *m, const char *name);
/* The display name of a CUDA kernel record's name string (pid, name_id). */
const char *ana_kernel_name(const ana_model *m, uint32_t pid, uint32_t name_id);
/* Length of the part of a display name before its parameter list ("ns::k<int>(float*, int)"
 * -> "ns::k<int>"): the matching '(' of a final ')', not the first '(' ("(anonymous
 * namespace)::f()"). strlen(name) when there is none. */
size_t ana_name_without_params(const char *name);

#endif

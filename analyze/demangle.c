/* demangle.c — C++ and CUDA kernel names for display (see demangle.h): libstdc++'s
 * __cxa_demangle (elfutils' libdw exports no demangler) behind a per-model cache. */
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "model_priv.h"

/* From libstdc++ (gt-analyze and gt-render link -lstdc++); declared here to keep this a C file. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *ana_demangle(const char *name)
{
	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	int status = -1;
	char *d = __cxa_demangle(name, NULL, NULL, &status);
	if (status != 0) {
		free(d);
		return NULL;
	}
	return d;
}

static int dem_eq(uint32_t id, const void *key, void *ctx)
{
	return strcmp(((const ana_priv *)ctx)->dems.v[id].from, key) == 0;
}

const char *ana_display_name(const ana_model *cm, const char *name)
{
	if (!name || name[0] != '_' || name[1] != 'Z')
		return name;
	/* the cache changes nothing the model says: a const model may fill it */
	ana_model *m = (ana_model *)cm;
	ana_priv *p = ana_priv_get(m);
	if (!p)
		return name;
	uint32_t *slot = ana_idtable_slot(&p->dem_table, ana_hash_bytes(name, strlen(name), 0x9e37), dem_eq, name, p);
	if (!slot)
		return name;
	if (*slot)
		return p->dems.v[*slot - 1].to;
	char *d = ana_demangle(name);
	const char *to = ana_intern_str(m, d ? d : name), *from = ana_intern_str(m, name);
	free(d);
	ana_dem *e = to && from ? ana_vec_push(p->dems) : NULL;
	if (!e)
		return to ? to : name;
	e->from = from;
	e->to = to;
	*slot = (uint32_t)p->dems.n;
	p->dem_table.n++;
	return to;
}

const char *ana_kernel_name(const ana_model *m, uint32_t pid, uint32_t name_id)
{
	return ana_display_name(m, ana_string_get(m, pid, name_id));
}

size_t ana_name_without_params(const char *name)
{
	size_t len = strlen(name), end = len;
	/* "f(int) const", "f(int) &&": qualifiers after the list */
	while (end > 0 && name[end - 1] != ')') {
		char c = name[end - 1];
		if (c != ' ' && c != '&' && !(c >= 'a' && c <= 'z'))
			return len;
		end--;
	}
	if (end == 0)
		return len;
	int depth = 0;
	for (size_t i = end; i-- > 0;) {
		if (name[i] == ')')
			depth++;
		else if (name[i] == '(' && --depth == 0)
			return i > 0 ? i : len;
	}
	return len;
}

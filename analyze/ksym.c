/* ksym.c — kernel symbol lookup over /proc/kallsyms, valid only for traces of this boot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_util.h"
#include "ksym.h"

struct ksym_ent {
	uint64_t addr;
	const char *name;
	const char *module;
};

struct ana_ksym {
	struct ksym_ent *v;
	size_t n;
	char *names;        /* all names and modules, NUL separated */
	size_t names_len, names_cap;
};

static int read_boot_id(char *buf, size_t cap)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (!f)
		return -1;
	int ok = fgets(buf, (int)cap, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct ksym_ent *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Append s to the name pool; returns its offset or (size_t)-1. */
static size_t pool_add(ana_ksym *k, const char *s)
{
	size_t len = strlen(s) + 1;
	if (GT_GROW(k->names, k->names_cap, k->names_len + len) < 0)
		return (size_t)-1;
	memcpy(k->names + k->names_len, s, len);
	k->names_len += len;
	return k->names_len - len;
}

ana_ksym *ana_ksym_load(const char *boot_id)
{
	char now[64];
	if (!boot_id || read_boot_id(now, sizeof(now)) < 0 || strcmp(now, boot_id) != 0)
		return NULL;
	FILE *f = fopen("/proc/kallsyms", "r");
	if (!f)
		return NULL;
	ana_ksym *k = calloc(1, sizeof(*k));
	size_t cap = 0, cap_no = 0, cap_mo = 0;
	/* names are stored as pool offsets first: the pool moves while it grows */
	size_t *name_off = NULL, *mod_off = NULL;
	char line[512];
	if (!k)
		goto fail;
	size_t kernel_mod = pool_add(k, "[kernel.kallsyms]");
	if (kernel_mod == (size_t)-1)
		goto fail;
	while (fgets(line, sizeof(line), f)) {
		char type, name[256], mod[128] = "";
		unsigned long long addr;
		int nf = sscanf(line, "%llx %c %255s %127s", &addr, &type, name, mod);
		if (nf < 3 || addr == 0)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (GT_GROW(k->v, cap, k->n + 1) < 0 || GT_GROW(name_off, cap_no, k->n + 1) < 0 ||
		    GT_GROW(mod_off, cap_mo, k->n + 1) < 0)
			goto fail;
		size_t off = pool_add(k, name);
		size_t moff = kernel_mod;
		if (nf == 4) {
			char buf[132];
			size_t len = strlen(mod);
			/* kallsyms writes "[module]" already */
			snprintf(buf, sizeof(buf), "%s", mod);
			if (len == 0 || mod[0] != '[')
				snprintf(buf, sizeof(buf), "[%s]", mod);
			moff = pool_add(k, buf);
		}
		if (off == (size_t)-1 || moff == (size_t)-1)
			goto fail;
		k->v[k->n].addr = addr;
		name_off[k->n] = off;
		mod_off[k->n] = moff;
		k->n++;
	}
	fclose(f);
	f = NULL;
	if (k->n == 0)
		goto fail; /* addresses hidden (kptr_restrict): nothing usable */
	for (size_t i = 0; i < k->n; i++) {
		k->v[i].name = k->names + name_off[i];
		k->v[i].module = k->names + mod_off[i];
	}
	free(name_off);
	free(mod_off);
	qsort(k->v, k->n, sizeof(*k->v), ent_cmp);
	return k;
fail:
	if (f)
		fclose(f);
	free(name_off);
	free(mod_off);
	ana_ksym_free(k);
	return NULL;
}

int ana_ksym_lookup(const ana_ksym *k, uint64_t addr, const char **name, const char **module)
{
	if (!k || k->n == 0 || addr < k->v[0].addr)
		return -1;
	size_t lo = 0, hi = k->n;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (k->v[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	/* kallsyms has no sizes: beyond the last symbol of a region we cannot tell; allow 1 MiB */
	if (addr - k->v[lo].addr > (1u << 20))
		return -1;
	*name = k->v[lo].name;
	*module = k->v[lo].module;
	return 0;
}

void ana_ksym_free(ana_ksym *k)
{
	if (!k)
		return;
	free(k->v);
	free(k->names);
	free(k);
}

/* addrspace.c — a process's executable mappings, their binaries opened on demand, the native
 * unwinder's driver (CFI, frame pointers as a fallback) and on-the-spot symbolization. */
#include "addrspace.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "elf.h"
#include "gt_util.h"
#include "procfs.h"
#include "elfimg.h"
#include "symtab.h"

#define MAX_VDSO_BYTES (1u << 20)
#define FP_MAX_FRAME_BYTES (16u << 20) /* a frame-pointer step larger than this is garbage */

typedef struct module {
	char *path;              /* as in the maps ("/usr/lib/.../libc.so.6", "[vdso]") */
	const char *base;        /* its file name */
	int loaded;              /* tried to open */
	rec_elf *file, *dbgfile;
	uint8_t *copy;           /* the vdso, read out of the process */
	rec_elfimg img, dbgimg;
	int have_img, have_dbg;
	rec_unw_tab *unw;
	rec_symtab *syms;
	int syms_tried;
} module;

typedef struct mapping {
	uint64_t start, end, pgoff;
	uint32_t mod;            /* index in mods, UINT32_MAX for anonymous code (JIT) */
	int bias_known;
	uint64_t bias;           /* runtime minus link-time address */
} mapping;

struct rec_as {
	pid_t pid;
	rec_procmem *mem;
	mapping *maps;           /* sorted by start (as /proc lists them) */
	size_t n_maps;
	module *mods;
	size_t n_mods, cap_mods;
};

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

static uint32_t mod_index(rec_as *as, const char *path)
{
	size_t i;

	for (i = 0; i < as->n_mods; i++)
		if (strcmp(as->mods[i].path, path) == 0)
			return (uint32_t)i;
	if (GT_GROW(as->mods, as->cap_mods, as->n_mods + 1) < 0)
		return UINT32_MAX - 1;
	memset(&as->mods[as->n_mods], 0, sizeof(module));
	as->mods[as->n_mods].path = strdup(path);
	if (!as->mods[as->n_mods].path)
		return UINT32_MAX - 1;
	as->mods[as->n_mods].base = base_name(as->mods[as->n_mods].path);
	return (uint32_t)as->n_mods++;
}

/* The executable mappings being gathered by read_maps. */
typedef struct {
	rec_as *as;
	mapping *maps;
	size_t n, cap;
} maps_acc;

static int take_map(void *ctx, const rec_procfs_map *pm)
{
	maps_acc *acc = ctx;
	char path[PATH_MAX + 16];
	uint32_t mi = UINT32_MAX;
	size_t plen;

	if (!(pm->prot & PROT_EXEC) || strcmp(pm->path, "[vsyscall]") == 0)
		return 0;
	snprintf(path, sizeof(path), "%s", pm->path);
	plen = strlen(path);
	if (plen > 10 && strcmp(path + plen - 10, " (deleted)") == 0)
		path[plen - 10] = 0;
	if (path[0] == '/' || strcmp(path, "[vdso]") == 0) {
		mi = mod_index(acc->as, path);
		if (mi == UINT32_MAX - 1)
			return -ENOMEM;
	}
	if (GT_GROW(acc->maps, acc->cap, acc->n + 1) < 0)
		return -ENOMEM;
	acc->maps[acc->n++] = (mapping){ pm->start, pm->end, pm->offset, mi, 0, 0 };
	return 0;
}

/* Read /proc/PID/maps into as->maps (replacing them), modules found by path. 0 or an errno. */
static int read_maps(rec_as *as)
{
	maps_acc acc = { .as = as };
	int rc = rec_procfs_maps(as->pid, take_map, &acc);

	if (rc < 0) {
		free(acc.maps);
		return -rc;
	}
	free(as->maps);
	as->maps = acc.maps;
	as->n_maps = acc.n;
	return 0;
}

rec_as *rec_as_open(pid_t pid, rec_procmem *mem, int *err)
{
	rec_as *as = calloc(1, sizeof(*as));

	*err = 0;
	if (!as) {
		*err = ENOMEM;
		return NULL;
	}
	as->pid = pid;
	as->mem = mem;
	if ((*err = read_maps(as)) != 0) {
		rec_as_close(as);
		return NULL;
	}
	return as;
}

int rec_as_refresh(rec_as *as)
{
	return -read_maps(as);
}

void rec_as_close(rec_as *as)
{
	size_t i;

	if (!as)
		return;
	for (i = 0; i < as->n_mods; i++) {
		module *m = &as->mods[i];
		rec_unw_tab_destroy(m->unw);
		rec_symtab_destroy(m->syms);
		rec_elf_close(m->file);
		rec_elf_close(m->dbgfile);
		free(m->copy);
		free(m->path);
	}
	free(as->mods);
	free(as->maps);
	free(as);
}

size_t rec_as_mappings(const rec_as *as)
{
	return as ? as->n_maps : 0;
}

/* ---- opening binaries ---- */

/* The separate debug file of a build-id (Debian's *-dbg/-dbgsym packages install them there). */
static rec_elf *open_debug_file(const uint8_t *id, size_t n)
{
	char fn[256];
	size_t i, k;

	if (n < 2)
		return NULL;
	k = (size_t)snprintf(fn, sizeof(fn), "/usr/lib/debug/.build-id/%02x/", id[0]);
	for (i = 1; i < n && k + 3 < sizeof(fn); i++)
		k += (size_t)snprintf(fn + k, sizeof(fn) - k, "%02x", id[i]);
	snprintf(fn + k, sizeof(fn) - k, ".debug");
	return rec_elf_open(fn);
}

static void mod_load(rec_as *as, module *m, const mapping *mp)
{
	const uint8_t *data = NULL;
	size_t len = 0;
	uint8_t id[64];
	size_t idn;

	m->loaded = 1;
	if (strcmp(m->path, "[vdso]") == 0) {
		size_t n = mp->end - mp->start;
		if (n > MAX_VDSO_BYTES || !(m->copy = malloc(n)) || rec_procmem_read(as->mem, mp->start, m->copy, n) < 0)
			return;
		data = m->copy;
		len = n;
	} else {
		/* map_files: the very file mapped (deleted, or in another mount namespace);
		 * then the path as the target sees it, then as we do */
		char fn[PATH_MAX + 64];
		rec_procfs_map_file(as->pid, mp->start, mp->end, fn, sizeof(fn));
		m->file = rec_elf_open(fn);
		if (!m->file) {
			rec_procfs_root_path(as->pid, m->path, fn, sizeof(fn));
			m->file = rec_elf_open(fn);
		}
		if (!m->file)
			m->file = rec_elf_open(m->path);
		if (!m->file)
			return;
		data = rec_elf_data(m->file, &len);
	}
	if (rec_elfimg_init(&m->img, data, len) < 0)
		return;
	m->have_img = 1;
	idn = rec_elfimg_build_id(&m->img, id, sizeof(id));
	if (idn && (m->dbgfile = open_debug_file(id, idn)) != NULL) {
		const uint8_t *d;
		size_t dlen;
		uint8_t id2[64];
		d = rec_elf_data(m->dbgfile, &dlen);
		/* only a debug file of the very same build */
		if (rec_elfimg_init(&m->dbgimg, d, dlen) == 0 && rec_elfimg_build_id(&m->dbgimg, id2, sizeof(id2)) == idn &&
		    memcmp(id, id2, idn) == 0)
			m->have_dbg = 1;
	}
	m->unw = rec_unw_tab_create(&m->img, m->have_dbg ? &m->dbgimg : NULL);
	/* the symbol table is sorted at the first name asked for: not while a thread is stopped */
}

/* The mapping holding addr, its module loaded and bias computed. NULL when unmapped. */
static mapping *map_of(rec_as *as, uint64_t addr, module **mod)
{
	size_t lo = 0, hi = as->n_maps;
	mapping *mp;

	*mod = NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (as->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= as->maps[lo - 1].end)
		return NULL;
	mp = &as->maps[lo - 1];
	if (mp->mod == UINT32_MAX)
		return mp;
	*mod = &as->mods[mp->mod];
	if (!(*mod)->loaded)
		mod_load(as, *mod, mp);
	if (!mp->bias_known && (*mod)->have_img) {
		uint64_t v;
		mp->bias = rec_elfimg_offset_to_vaddr(&(*mod)->img, mp->pgoff, &v) == 0 ? mp->start - v
		                                                                       : mp->start - mp->pgoff;
		mp->bias_known = 1;
	}
	return mp;
}

int rec_as_find_module(const rec_as *as, const char *prefix, uint64_t *start, const char **path)
{
	size_t i, n = strlen(prefix);

	for (i = 0; as && i < as->n_maps; i++) {
		const module *m;
		if (as->maps[i].mod == UINT32_MAX)
			continue;
		m = &as->mods[as->maps[i].mod];
		if (strncmp(m->base, prefix, n) == 0) {
			*start = as->maps[i].start;
			*path = m->path;
			return 1;
		}
	}
	return 0;
}

int rec_as_symbol_addr(rec_as *as, const char *path, const char *name, uint64_t *addr)
{
	size_t i;

	for (i = 0; as && i < as->n_maps; i++) {
		module *m;
		mapping *mp;
		uint64_t v;

		if (as->maps[i].mod == UINT32_MAX || strcmp(as->mods[as->maps[i].mod].path, path) != 0)
			continue;
		mp = map_of(as, as->maps[i].start, &m);
		if (!mp || !m || !m->file || !mp->bias_known || rec_elf_symbol(m->file, name, &v, NULL) < 0)
			return -1;
		*addr = v + mp->bias;
		return 0;
	}
	return -1;
}

static void load_syms(module *m)
{
	if (!m->syms_tried && m->have_img) {
		m->syms_tried = 1;
		m->syms = rec_symtab_create(&m->img, m->have_dbg ? &m->dbgimg : NULL);
	}
}

int rec_as_has_function(rec_as *as, const char *path, const char *name)
{
	size_t i;

	for (i = 0; as && i < as->n_maps; i++) {
		module *m;
		if (as->maps[i].mod == UINT32_MAX || strcmp(as->mods[as->maps[i].mod].path, path) != 0)
			continue;
		if (!map_of(as, as->maps[i].start, &m) || !m)
			return 0;
		load_syms(m);
		return rec_symtab_has(m->syms, name);
	}
	return 0;
}

/* ---- unwinding ---- */

/* One frame-pointer step: the caller's rbp at [rbp], the return address at [rbp+8]. */
static int fp_step(rec_unw_regs *r, rec_unw_read_fn rd, void *ctx)
{
	uint64_t bp = r->r[REC_UNW_BP], sp = r->r[REC_UNW_SP], nbp, ra;

	if (!(r->valid >> REC_UNW_BP & 1) || bp < sp || bp - sp > FP_MAX_FRAME_BYTES || (bp & 7))
		return -1;
	if (rd(ctx, bp, &nbp) < 0 || rd(ctx, bp + 8, &ra) < 0 || ra == 0)
		return -1;
	r->r[REC_UNW_BP] = nbp;
	r->r[REC_UNW_IP] = ra;
	r->r[REC_UNW_SP] = bp + 16;
	return 0;
}

size_t rec_as_unwind(rec_as *as, const rec_unw_regs *regs, rec_unw_read_fn rd, void *ctx,
                     rec_as_frame *out, size_t cap, int *end)
{
	rec_unw_regs r = *regs;
	uint32_t how = REC_AS_FRAME_CFI;
	uint16_t exact = 1;
	size_t n = 0;

	*end = REC_AS_END_CAP;
	if (!(r.valid >> REC_UNW_IP & 1) || !(r.valid >> REC_UNW_SP & 1)) {
		*end = REC_AS_END_NOINFO;
		return 0;
	}
	while (n < cap) {
		uint64_t pc = r.r[REC_UNW_IP], sp = r.r[REC_UNW_SP];
		module *m;
		mapping *mp;
		int rc, sig = 0;

		out[n++] = (rec_as_frame){ pc, sp, how, exact, 0 };
		mp = map_of(as, exact ? pc : pc - 1, &m);
		if (!mp) {
			*end = REC_AS_END_NOMAP;
			break;
		}
		rc = m && m->unw && mp->bias_known ? rec_unw_step(m->unw, mp->bias, &r, !exact, &sig, rd, ctx)
		                                   : REC_UNW_ENOINFO;
		if (rc == REC_UNW_EEND) {
			*end = REC_AS_END_ROOT;
			break;
		}
		how = REC_AS_FRAME_CFI;
		if (rc == REC_UNW_ENOINFO) {
			/* code without CFI (JIT, hand-written assembly): frame pointers, if any */
			if (fp_step(&r, rd, ctx) < 0) {
				*end = REC_AS_END_NOINFO;
				break;
			}
			how = REC_AS_FRAME_FP;
		} else if (rc < 0) {
			*end = rc == REC_UNW_EMEM ? REC_AS_END_MEM : REC_AS_END_BADCFI;
			break;
		}
		if (sig) {
			how = REC_AS_FRAME_SIGNAL;
			out[n - 1].trampoline = 1;
		}
		/* the stack grows down: a caller's frame lies above; a signal frame may switch
		 * to the thread's normal stack from an alternate one */
		if (!sig && r.r[REC_UNW_SP] <= sp) {
			*end = REC_AS_END_LOOP;
			break;
		}
		if (r.r[REC_UNW_IP] == 0) {
			*end = REC_AS_END_ROOT;
			break;
		}
		exact = (uint16_t)sig;
	}
	return n;
}

const char *rec_as_end_name(int end)
{
	switch (end) {
	case REC_AS_END_ROOT: return "complete";
	case REC_AS_END_NOINFO: return "no unwind information";
	case REC_AS_END_NOMAP: return "address outside any mapping";
	case REC_AS_END_MEM: return "stack unreadable";
	case REC_AS_END_BADCFI: return "unusable unwind information";
	case REC_AS_END_LOOP: return "stack pointer did not grow";
	case REC_AS_END_CAP: return "too many frames";
	default: return "?";
	}
}

/* ---- symbolization ---- */

int rec_as_symbolize(rec_as *as, uint64_t pc, int exact, rec_as_sym *out, char *name_buf, size_t cap)
{
	uint64_t addr = exact ? pc : pc - 1, off;
	module *m;
	mapping *mp = map_of(as, addr, &m);
	const char *name;

	memset(out, 0, sizeof(*out));
	if (!mp)
		return -1;
	if (!m) {
		out->module = "[anon]";
		out->path = "";
		out->offset = addr - mp->start;
		return 0;
	}
	out->module = m->base;
	out->path = m->path;
	out->offset = mp->bias_known ? addr - mp->bias : addr - mp->start + mp->pgoff;
	load_syms(m);
	if (!mp->bias_known || !(name = rec_symtab_lookup(m->syms, addr - mp->bias, &off)))
		return 0;
	out->name = rec_sym_display(name, name_buf, cap);
	out->offset = off;
	return 0;
}
